"""The speed guard: a run's figures against a baseline run's, figure by figure.

``python -m benchmarks --compare`` runs the benchmarks and compares them with the committed
``benchmarks/results.json``; ``--compare NEW.json`` compares a results file already written.
Pure functions over the two results dicts; ``__main__`` reads the files and prints.

Every number in a results file is one of:

- a **figure** with a direction: a ratio of two figures of the same run (``ratio_*``,
  ``*speedup``, ``fraction_of_*``, ``core_scaling``: higher is better; ``grad_over_solve``,
  ``wrapper_growth``: lower is better), which holds from one machine to another, or an absolute
  rate (``*_per_s``, ``Bps``: higher is better) or time (``*_s``) or peak memory
  (``peak_rss_B``: lower is better), which holds on one machine only;
- **not a figure**: the spread beside a median (``min``, ``max``, ``runs``, ``*_min``, ...), a
  size of the work (``cells``, ``points``, ``steps``, a grid), an accuracy (checked by the tests,
  not timed), the machine and the run's own metadata. Counted in the report, not compared;
- a figure with **no better direction** (a cost curve's fitted exponent), or one that none of
  these names: listed as not compared, with the reason.

A figure is *worse* by ``1 - new/old`` where higher is better, ``new/old - 1`` where lower is.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from bandjax._io import read_bounded_text

THRESHOLD = 0.20  # a figure worse by more than this fraction of the baseline's is reported
MAX_RESULTS_B = 64 * 2**20  # a results file is about 0.1 MB; anything near this is not one


@dataclass(frozen=True)
class Kind:
    """Which way a figure is better, and whether it holds across machines (a ratio)."""

    higher_is_better: bool
    ratio: bool


RATIO_UP = Kind(higher_is_better=True, ratio=True)
RATIO_DOWN = Kind(higher_is_better=False, ratio=True)
RATE = Kind(higher_is_better=True, ratio=False)
COST = Kind(higher_is_better=False, ratio=False)


@dataclass(frozen=True)
class NotAFigure:
    """A number that describes the run (its spread, its size, its accuracy), not its speed."""

    why: str


@dataclass(frozen=True)
class Unordered:
    """A figure neither higher nor lower of which is better."""

    why: str


SPREAD = NotAFigure("spreads beside a median")
SIZE = NotAFigure("sizes of the work")
ACCURACY = NotAFigure("accuracies (the tests check them)")
METADATA = NotAFigure("the machine and the run")
SAME_RUNS = NotAFigure("times also given as a rate beside them")

# (pattern of a figure's name, what it is), first match wins: the name is the last key of its
# path that is not a label (a size "10", a list entry "[cells=1e4]", "1 core")
RULES: tuple[tuple[str, object], ...] = (
    (r"min|max|min_s|max_s|runs|runs_s|n|.*_min|.*_max|.*_min_s|.*_max_s|load_average.*", SPREAD),
    (r"cells|points|pairs|roots|targets|reached|steps|links|workers|chunks|samples?|.*_sample"
     r"|roots_found|.*messages_per_run|sweep_runs|sweep_steps|headline_cells|fit_from_cells"
     r"|ratio_points|budgets|bandwidths|cpus|threads|most_crossings_per_pair|nbytes|store_B"
     r"|bytes_on_disk|variants|tables|K", SIZE),
    (r"max_rel_.*|winners_differ", ACCURACY),
    (r"scaling_exponent.*", Unordered("a cost curve's fitted slope: 1 is linear cost, below it "
                                      "a fixed cost per call, so neither direction is better")),
    (r"ratio_.*|.*speedup|fraction_of_.*|.*core_scaling|scaling", RATIO_UP),
    (r".*_over_.*|wrapper_growth", RATIO_DOWN),
    (r".*_per_s|.*_per_s_.*|Bps", RATE),
    (r".*_s|peak_rss_B|.*_MB|compiles", COST),
)
METADATA_KEYS = {"machine", "quick", "note", "wall_s"}  # at the top: what ran where, for how long


def _name(path: tuple[str, ...]) -> str:
    """The key that says what a number is: the last one that is not a label."""
    for key in reversed(path):
        if not (key.startswith("[") or key.isdigit() or re.fullmatch(r"\d+ cores?(, .*)?", key)):
            return key.rpartition(".")[2]  # "uncertainty.call_s" is a key of its own
    return ""


def classify(path: tuple[str, ...]):
    """What the number at ``path`` (keys from the top of a results dict) is: a :class:`Kind`,
    :class:`NotAFigure`, :class:`Unordered`, or None where no rule names it."""
    if path[:1] and path[0] in METADATA_KEYS:
        return METADATA
    if any(key.endswith("_stats") for key in path):  # the median is the figure's own key
        return SPREAD
    if "grid" in path:
        return SIZE
    name = _name(path)
    for pattern, what in RULES:
        if re.fullmatch(pattern, name):
            return what
    return None


@dataclass(frozen=True)
class Number:
    path: tuple[str, ...]
    name: str  # as printed: sweep.sizes[cells=10020].core.cells_per_s
    value: object  # a float, None (not available) or a list of values
    what: object = None  # what it is, where its path alone does not say (else classify's)


def _label(item, i: int) -> str:
    """A list entry by what it measures where it says (so a run with other sizes lines up)."""
    if isinstance(item, dict):
        for key in ("cells", "points"):
            if isinstance(item.get(key), (int, float)) and not isinstance(item.get(key), bool):
                v = item[key]
                return f"[{key}={int(v) if float(v).is_integer() else v}]"
    return f"[{i}]"


def numbers(results: dict) -> list[Number]:
    """Every number in ``results`` (and every null where one could be), with its path.

    A figure reported with its spread (``{"median": ..., "min": ..., ...}``) is one number, its
    median. A ``median_s`` beside a rate (``cells_per_s``) is the same runs as that rate and is
    left out. Text and flags (``available``) are not numbers.
    """
    out: list[Number] = []

    def walk(x, path, name):
        if isinstance(x, dict):
            if "median" in x and (x["median"] is None or _is_number(x["median"])):
                out.append(Number(path, name, x["median"]))
                return
            rate_beside = any(str(k).endswith("_per_s") for k in x)
            for k, v in x.items():
                k = str(k)
                if k == "median_s" and rate_beside:
                    out.append(Number(path + (k,), f"{name}.{k}", v, SAME_RUNS))
                else:
                    walk(v, path + (k,), f"{name}.{k}" if name else k)
        elif isinstance(x, list):
            if all(x_ is None or _is_number(x_) for x_ in x):
                out.append(Number(path, name, list(x)))
            else:
                labels = [_label(item, i) for i, item in enumerate(x)]
                if len(set(labels)) < len(labels):  # two entries of one size: by position
                    labels = [f"[{i}]" for i in range(len(x))]
                for label, item in zip(labels, x):
                    walk(item, path + (label,), name + label)
        elif x is None or _is_number(x):
            out.append(Number(path, name, x))

    walk(results, (), "")
    return out


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass(frozen=True)
class Change:
    """One figure in both runs."""

    name: str
    kind: Kind
    old: float
    new: float

    @property
    def change(self) -> float:
        """new / old - 1: +0.3 is 30% higher."""
        return self.new / self.old - 1

    @property
    def worse_by(self) -> float:
        """The fraction by which the new run is worse (negative: better)."""
        return -self.change if self.kind.higher_is_better else self.change


@dataclass
class Comparison:
    threshold: float
    worse: list[Change]  # ratios first, then the absolute figures; each group worst first
    compared: int
    not_compared: list[tuple[str, str]]  # (figure, why)
    not_figures: Counter = field(default_factory=Counter)  # why -> how many numbers
    notes: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.worse)


def _section_reason(results: dict, path: tuple[str, ...]) -> str:
    section = results.get(path[0]) if path else None
    if isinstance(section, dict) and section.get("available") is False and section.get("reason"):
        return f" ({path[0]}: {section['reason']})"
    return ""


def _value_problem(results: dict, number: Number | None, path, side: str) -> str | None:
    """Why a figure of one run cannot be compared, or None."""
    if number is None:
        return f"absent from the {side}{_section_reason(results, path)}"
    v = number.value
    if v is None:
        return f"null in the {side}{_section_reason(results, path)}"
    if isinstance(v, list):
        return f"a list of values in the {side}, not one figure"
    if not math.isfinite(v):
        return f"{v} in the {side}"
    return None


def compare(old: dict, new: dict, threshold: float = THRESHOLD) -> Comparison:
    """Every figure of ``new`` against the same figure of ``old`` (the baseline).

    Returns the figures worse by more than ``threshold`` (a fraction of the baseline's value),
    what could not be compared and why, and how many numbers were not figures.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold = {threshold}: must be in (0, 1)")
    olds = {n.name: n for n in numbers(old)}
    news = {n.name: n for n in numbers(new)}
    result = Comparison(threshold, [], 0, [], Counter(), _notes(old, new))
    for name in [*news, *(k for k in olds if k not in news)]:  # the new run's order, then the rest
        o, n = olds.get(name), news.get(name)
        path = (n or o).path
        what = (n or o).what or classify(path)
        if isinstance(what, NotAFigure):
            result.not_figures[what.why] += 1
            continue
        if what is None:
            result.not_compared.append((name, "not classified: no rule says whether higher or "
                                              "lower is better (benchmarks/compare.py RULES)"))
            continue
        if isinstance(what, Unordered):
            result.not_compared.append((name, what.why))
            continue
        problem = (_value_problem(old, o, path, "baseline")
                   or _value_problem(new, n, path, "new run"))
        if problem is None and o.value <= 0:
            problem = f"the baseline's value is {o.value:g}: no change in percent from it"
        if problem:
            result.not_compared.append((name, problem))
            continue
        result.compared += 1
        change = Change(name, what, float(o.value), float(n.value))
        if change.worse_by > threshold:
            result.worse.append(change)
    result.worse.sort(key=lambda c: (not c.kind.ratio, -c.worse_by))
    return result


def _notes(old: dict, new: dict) -> list[str]:
    notes = []
    if bool(old.get("quick")) != bool(new.get("quick")):
        notes.append("one run is --quick and the other is not: the figures are at other sizes "
                     "and not like for like (compare a --quick run with a --quick baseline "
                     "of the old code: --baseline)")
    m_old, m_new = old.get("machine"), new.get("machine")
    if isinstance(m_old, dict) and isinstance(m_new, dict):
        # not memory_B: the memory the kernel reports moves by a few pages from boot to boot
        differ = [k for k in ("processor", "cpus", "jax_backend", "python", "jax", "numpy")
                  if m_old.get(k) != m_new.get(k)]
        if differ:
            notes.append("the runs differ in " + ", ".join(
                f"{k} ({m_old.get(k)} -> {m_new.get(k)})" for k in differ)
                + ": the absolute figures may differ for that alone")
    return notes


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def render(c: Comparison, old_name: str, new_name: str) -> str:
    """The comparison as text: worse figures (ratios, then absolute ones), then what was not
    compared, then a summary line."""
    lines = [f"{new_name} against the baseline {old_name}, threshold {c.threshold:.0%}"]
    lines += [f"note: {n}" for n in c.notes]
    ratios = [w for w in c.worse if w.kind.ratio]
    absolute = [w for w in c.worse if not w.kind.ratio]
    width = max((len(w.name) for w in c.worse), default=0)
    for title, group in (("ratios (of two figures of the same run: they hold across machines)",
                          ratios),
                         ("absolute figures (machine-dependent: they compare runs on the same "
                          "machine only)", absolute)):
        if group:
            lines += ["", f"worse by more than {c.threshold:.0%}, {title}:"]
            lines += [f"  {w.name:<{width}}  {_fmt(w.old):>10} -> {_fmt(w.new):<10} "
                      f"{w.change:+.1%} ({'higher' if w.kind.higher_is_better else 'lower'} "
                      "is better)" for w in group]
    if c.not_compared:
        lines += ["", f"not compared ({len(c.not_compared)}):"]
        lines += [f"  {name}: {why}" for name, why in c.not_compared]
    skipped = ", ".join(f"{why} {k}" for why, k in sorted(c.not_figures.items()))
    lines += ["", f"{c.compared} figures compared, {len(c.worse)} worse by more than "
                  f"{c.threshold:.0%} (ratios {len(ratios)}, absolute {len(absolute)})"
              + (f"; not figures, not compared: {skipped}" if skipped else "")]
    return "\n".join(lines)


class ResultsFileError(Exception):
    """A results file that cannot be compared: missing, unreadable, not JSON, not results."""


def load(path: str | os.PathLike, what: str) -> dict:
    """The results dict in ``path``; :class:`ResultsFileError` with one line naming ``what`` and
    the file if it cannot be read or holds no figures."""
    try:
        text = read_bounded_text(path, what, MAX_RESULTS_B)
    except (OSError, ValueError) as e:
        raise ResultsFileError(str(e)) from None
    name = os.fspath(path)
    try:
        results = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsFileError(f"{what} {name!r} is not JSON: {e.msg} at line {e.lineno} "
                               f"column {e.colno}") from None
    except RecursionError:
        raise ResultsFileError(f"{what} {name!r} is nested too deeply to be a results file") \
            from None
    if not isinstance(results, dict):
        raise ResultsFileError(f"{what} {name!r} is not a results file: its top level is "
                               f"{type(results).__name__}, not an object")
    if not any(isinstance(classify(n.path), Kind) for n in numbers(results)):
        raise ResultsFileError(f"{what} {name!r} is not a results file: it holds no benchmark "
                               "figure (no rate, time or ratio)")
    return results
