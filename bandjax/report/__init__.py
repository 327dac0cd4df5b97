"""The reference report: ``results.json``, ``results.md`` and ``figures/``.

A report is the list of sections :data:`bandjax.report.sections.SECTIONS` (what a section module
defines is told there). Each section that builds is built once into its typed result,
``build(scenario, ctx)``, and rendered into results.md by ``markdown(results)``; then the figures
(:mod:`.figure_files`) draw every section's charts.

results.json is the sections' JSON. ``ctx`` is a dict shared by the sections of one report: an
output folder for figures under ``ctx["out"]``, the report's one pass of the model, and under
``ctx["sections"]`` the sections built so far, which a later section reads (the headline).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
from pathlib import Path

from .._io import OURS, atomic_write_text, check_out
from .._wan_runs import small_for_tests
from ..scenario import Scenario, reference
from . import figure_files
from . import sections as _sections
from .sections.common import Results, Section, _json_ready, md_escaped, user_names

SECTIONS = None
"""The sections a report builds, in order; ``None``: every section of
:data:`bandjax.report.sections.SECTIONS` that builds, then the figures (tests may set a tuple)."""


def _current_sections() -> tuple:
    chosen = getattr(sys.modules[__name__], "SECTIONS")
    if chosen is not None:
        return tuple(chosen)
    return tuple(m for m in _sections.SECTIONS if hasattr(m, "build")) + (figure_files,)


SCHEMA_VERSION = 2


TITLES = {
    "core": "Step times and times to target", "breakeven": "Break-evens",
    "cluster": "More data centres", "shared_wan": "Shared WAN (event engine)",
    "uncertainty": "Uncertainty", "headline": "Headline", "figures": "Figures",
}
"""The heading results.md gives a section that is explained instead of computed."""


def section_keys() -> tuple[str, ...]:
    """The keys of the sections a report builds, in order (``--sections`` / ``--skip``)."""
    return tuple(m.KEY for m in _current_sections())


def check_section_keys(option: str, keys) -> list[str]:
    """``keys`` as a list, or ``ValueError`` naming ``option``, the key as typed and the keys
    allowed."""
    allowed = section_keys()
    keys = list(keys)
    for k in keys:
        if k not in allowed:
            raise ValueError(f"{option} {k!r}: not a report section; allowed: "
                             f"{', '.join(allowed)}")
    return keys


def build(scenario: Scenario | None = None, ctx: dict | None = None) -> dict:
    """Every section's results for ``scenario``, as one JSON-ready dict.

    ``ctx["only"]`` (section keys) builds those alone, ``ctx["skip"]`` leaves those out; a section
    left out, or one whose computation fails, is kept in results.json's ``explained`` with the
    reason ({"status": "skipped" | "failed", "why": sentence}) and the others are built."""
    sc = reference() if scenario is None else scenario
    ctx = {} if ctx is None else ctx
    only, skip = ctx.get("only"), set(ctx.get("skip") or ())
    results: dict = {"schema_version": SCHEMA_VERSION}
    ctx["sections"] = Results(schema_version=SCHEMA_VERSION)  # read by later sections
    chosen = [s for s in _current_sections()
              if (only is None or s.KEY in only) and s.KEY not in skip]
    ahead = [s for s in chosen if hasattr(s, "start")]
    try:
        for section in ahead:  # work in other processes, going on while the first sections build
            try:
                section.start(sc, ctx)
            except (OSError, MemoryError):
                raise
            except Exception:  # noqa: BLE001 - its build meets the failure again and says why
                pass
        _build_sections(sc, ctx, results, only, skip)
    finally:
        for section in ahead:
            section.close(ctx)
    if ctx["sections"].explained:
        results["explained"] = ctx["sections"].explained
    return _json_ready(results)


def _build_sections(sc: Scenario, ctx: dict, results: dict, only, skip) -> None:
    """Each section of the report built, or explained, in order, into ``results``."""
    for section in _current_sections():
        key = section.KEY
        if hasattr(section, "applies") and not section.applies(sc):
            continue  # not this scenario's: no part, no reason (the report is what it was)
        if (only is not None and key not in only) or key in skip:
            why = (f"Not computed: left out by --skip {key}." if key in skip else
                   f"Not computed: not among --sections {' '.join(only)}.")
            ctx["sections"] = ctx["sections"].with_explained(key, "skipped", why)
            continue
        if ctx.get("progress"):
            ctx["progress"](section.__name__.rsplit(".", 1)[-1])
        try:
            part = section.build(sc, ctx)
        except (OSError, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - the section says why in its place
            why = f"Could not be computed for this scenario: {type(e).__name__}: {e}"
            ctx["sections"] = ctx["sections"].with_explained(key, "failed", why)
            continue
        if isinstance(part, Section):
            ctx["sections"] = ctx["sections"].with_section(part)
            part = part.to_json()
        results.update(part)


def markdown(results: Results | dict) -> str:
    """results.md: the title and the headline, then every section in order, rendered from the
    typed sections (a results dict is read into them first, strictly); a section explained
    instead of computed gives its heading and the reason in its place. Names from the scenario
    (variant labels, DC names: :func:`sections.common.user_names`) are escaped once, here, so
    they show as typed (:func:`sections.common.md_escaped`)."""
    res = Results.of(results)
    escaped = md_escaped(res.to_json(), user_names(res.to_json()))
    if escaped is not None and escaped != res.to_json():
        res = Results.of(escaped)
    sections = _current_sections()

    def part(section) -> str:
        why = res.explained.get(section.KEY)
        if why is None:
            return section.markdown(res)
        title = TITLES.get(section.KEY, section.KEY)
        return f"## {title}\n\n{why['why']}"

    parts = [part(section) for section in sections if not getattr(section, "LEAD", False)]
    lead = [part(section) for section in sections if getattr(section, "LEAD", False)]
    if not parts or not parts[0].startswith("# "):  # no core section: no scenario to name
        parts.insert(0, "# Closed-form results of bandjax")
    title, _, rest = parts[0].partition("\n\n")
    parts = [title, *lead, rest, *parts[1:]]
    return "\n\n".join(p.strip() for p in parts if p.strip()) + "\n"


# The report folder is one unit. `write` builds the whole new report in a sibling folder
# ".<name>.bandjax-new-<pid>", then swaps it in with two renames: the old folder to
# ".<name>.bandjax-old-<pid>", the new one to <name>; then the old one is removed. A kill at any
# moment leaves <name> as the old complete report or the new complete one, plus at most a leftover
# sibling, except in the window between the two renames, where <name> is absent and the old
# complete report is the aside folder. `recover` (run first by every `write`, and by readers such
# as `bandjax explore --results`) renames that aside folder back, and removes leftover siblings.
_NEW = ".bandjax-new-"
_OLD = ".bandjax-old-"


def _siblings(out: Path, kind: str) -> list[Path]:
    """Leftover temporary (``kind`` = _NEW) or aside (_OLD) folders of ``out`` whose writer is no
    longer running (the suffix is its process id)."""
    found = []
    for p in sorted(out.parent.glob(f".{glob.escape(out.name)}{kind}*")):
        pid = p.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
            continue
        found.append(p)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(out: str | Path) -> None:
    """Make ``out`` a whole report again after a ``write`` that was killed: if ``out`` is absent
    and an aside folder of the old report is there, rename it back; remove every leftover
    temporary or aside folder."""
    out = Path(os.path.abspath(out))
    old = [p for p in _siblings(out, _OLD) if (p / OURS).is_file()]
    if not out.exists() and old:
        os.rename(old[-1], out)
    for p in _siblings(out, _NEW) + _siblings(out, _OLD):
        shutil.rmtree(p, ignore_errors=True)


def write(out: str | Path, scenario: Scenario | None = None, *,
          ctx: dict | None = None) -> dict[str, Path]:
    """Write the report (results.json, results.md and figures/) as the folder ``out``: the whole
    new report appears at once, replacing an old one, or the old one stays (see :func:`recover`).

    Entries of an old report folder that the report does not write (an explorer.html) are carried
    over. Raises ``OSError`` for an ``out`` that is not a folder or is a folder of other files.
    ``ctx`` starts the sections' shared dict: ``progress``, a callable given each section's name
    as it starts; ``shared_wan``, that section's run options (``{"progress": False}``: no bar).
    """
    recover(out)
    out = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    new = out.parent / f".{out.name}{_NEW}{os.getpid()}"
    aside = out.parent / f".{out.name}{_OLD}{os.getpid()}"
    try:
        new.mkdir()
        ctx = {**(ctx or {}), "out": new}
        small_for_tests(ctx)
        results = build(scenario, ctx)
        text = json.dumps(results, indent=1, allow_nan=False)
        md = markdown(results)
        atomic_write_text(new / "results.md", md)
        atomic_write_text(new / OURS, text + "\n")  # last: it marks the folder complete
        if out.exists():
            for entry in out.iterdir():
                if (new / entry.name).exists():
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.copytree(entry, new / entry.name, symlinks=True)
                else:
                    shutil.copy2(entry, new / entry.name, follow_symlinks=False)
            os.rename(out, aside)
        os.rename(new, out)
    except BaseException:
        if aside.exists() and not out.exists():  # interrupted between the two renames
            os.rename(aside, out)
        shutil.rmtree(new, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)
    return {"json": out / OURS, "md": out / "results.md"}
