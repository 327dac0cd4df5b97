"""The documentation site builds strictly, documents the whole public API, and every section of the
model that the code cites exists in docs/model.md."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODEL_SECTIONS = range(1, 18)  # docs/model.md keeps the section numbering 1 to 17

# "model.md section 5", "model.md sections 4, 5 and 9", "model.md sections 6 to 9",
# "model.md (section 12)", "model.md s12"
_CITATION = re.compile(
    r"model\.md,?\s+\(?(?:sections?\s+|s(?=\d))"
    r"(\d+(?:(?:\s*,\s*|\s+and\s+|\s+to\s+|\s*-\s*)\d{1,2}\b(?![.,]\d))*)")


def _sections(listed: str) -> list[int]:
    """The section numbers of one citation, ranges ("6 to 9") expanded."""
    out: list[int] = []
    for part in re.split(r"\s*,\s*|\s+and\s+", listed):
        ends = [int(x) for x in re.split(r"\s+to\s+|\s*-\s*", part)]
        out.extend(range(ends[0], ends[-1] + 1))
    return out


def _citations() -> list[tuple[str, int]]:
    """(file:line, section) for every citation of the model in the code, tests and notebooks."""
    found = []
    for folder in ("bandjax", "events", "notebooks", "benchmarks", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".ipynb", ".md") or path.name == "test_docs.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in _CITATION.finditer(line):
                    found.extend((f"{path.relative_to(ROOT)}:{number}", n) for n in _sections(m[1]))
    return found


def _model_headings() -> list[int]:
    text = (DOCS / "model.md").read_text(encoding="utf-8")
    return [int(n) for n in re.findall(r"^## (\d+)\. \S", text, flags=re.MULTILINE)]


def test_model_page_has_sections_1_to_14_in_order():
    assert _model_headings() == list(MODEL_SECTIONS)


def test_every_cited_model_section_has_a_heading():
    citations = _citations()
    # The code cites the model throughout (sections 2, 4, 5, 6, 10, 11, 12 at least); finding none
    # would mean the pattern no longer matches how the code cites it.
    assert {n for _, n in citations} >= {2, 4, 5, 6, 10, 11, 12}
    headings = set(_model_headings())
    missing = [f"{where}: section {n}" for where, n in citations if n not in headings]
    assert missing == [], "cited sections with no '## N.' heading in docs/model.md"


def test_citation_pattern_reads_lists_and_ranges():
    cited = [_sections(m[1]) for m in _CITATION.finditer(
        "model.md sections 4, 5 and 9; model.md sections 6 to 9; model.md s12: AdamW 4.075 ms; "
        "(model.md section 14); model.md section 12, 400 steps")]
    assert cited == [[4, 5, 9], [6, 7, 8, 9], [12], [14], [12]]


# ------------------------------------------------------------------------------- the site

PAGES = ("index", "model", "tutorial", "cli", "calibration", "results", "assumptions", "architecture",
         "api")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            pytest.skip(f"{module} is not installed; the docs extra installs it: pip install '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_every_page_is_built(site):
    assert sorted(p.stem for p in DOCS.glob("*.md")) == sorted(PAGES)
    for page in PAGES:
        html = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert html.is_file(), f"{page}.md was not built"


def test_api_page_lists_every_public_name(site):
    import bandjax

    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    # each name is documented where it is defined (the package's exports load lazily, so a
    # static reader finds them in their modules)
    where = {n: f"bandjax.{bandjax._EXPORTS[n]}.{n}" if n in bandjax._EXPORTS else f"bandjax.{n}"
             for n in bandjax.__all__}
    missing = [n for n in bandjax.__all__ if f'id="{where[n]}"' not in html]
    assert missing == []
    for name in ("plan.build", "plan.run", "engine.simulate", "runner.sweep", "runner.client"):
        assert f'id="events.{name}"' in html


def test_model_page_math_is_left_for_mathjax(site):
    html = (site / "model" / "index.html").read_text(encoding="utf-8")
    assert html.count('class="arithmatex"') >= 20  # the formulas of sections 4 to 13
    assert "$$" not in html.replace("\\$", "")  # no display formula left unconverted


def test_the_index_lists_every_command_of_the_cli_page():
    """docs/index.md's command-line row names every command docs/cli.md has a section for."""
    commands = re.findall(r"^## (\w+)$", (DOCS / "cli.md").read_text(encoding="utf-8"), re.M)
    row = next(line for line in (DOCS / "index.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| [Command line](cli.md)"))
    assert len(commands) >= 7
    assert [c for c in commands if f"`{c}`" not in row and f"`bandjax {c}`" not in row] == []


def test_the_index_names_every_model_section_and_command():
    # docs/index.md says which sections the model page has and which commands there are: both
    # are read from the code and the page, so the index cannot go stale
    from bandjax.cli import build_parser

    index = (DOCS / "index.md").read_text(encoding="utf-8")
    first, last = (int(x) for x in re.search(r"sections (\d+) to (\d+)", index).groups())
    assert (first, last) == (min(_model_headings()), max(_model_headings()))
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    row = next(line for line in index.splitlines() if line.startswith("| [Command line]"))
    listed = {a or b for a, b in re.findall(r"`bandjax (\w+)`|`(\w+)`", row)}
    assert listed == commands


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_the_pages_list_every_model_preset(page):
    """The scenario file's `[model] model` key, with the presets it takes: bandjax.PRESETS's."""
    from bandjax.scenario import PRESETS

    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    listed = re.search(r"`\[model\]\s+model = \"llama3-8b\"`[^:]*:\s*([^.]+)\.", text)
    assert listed is not None
    assert [x.strip() for x in listed.group(1).split(",")] == list(PRESETS)


# the names a code block uses a model preset by (a sweep's model=, at_preset, PRESETS[...])
_PRESET_USE = re.compile(r"at_preset\(|PRESETS\[|model=\[?[^\]\n]*\"(?!study\")[\w.-]+\"")
_KEEPS_512 = re.compile(r"512 tokens|tokens_per_worker[^.]{0,40}\b512\b|reference's 512\b")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_an_example_with_a_model_preset_says_its_tokens():
    """A model preset sets the parameters only; the tokens a worker a step stay the scenario's
    (512 in the reference), which sets c. Each code block that uses a preset sets
    tokens_per_worker, or the prose beside it (1,200 characters either side) says the 512."""
    used = 0
    for path in _pages():
        text = path.read_text(encoding="utf-8")
        for block in re.finditer(r"```python\n(.*?)```", text, re.S):
            if not _PRESET_USE.search(block.group(1)):
                continue
            used += 1
            near = text[max(block.start() - 1200, 0):block.end() + 1200]
            assert ("tokens_per_worker=" in block.group(1)
                    or _KEEPS_512.search(" ".join(near.split()))), (path.name, block.group(1))
    assert used >= 6  # README's sweep, worked example and regions; the tutorial's four


def _c(preset: str, gpu: str | None = None):
    import bandjax

    sc = bandjax.reference() if gpu is None else bandjax.reference().with_gpu(gpu, utilisation=0.4)
    return float(sc.at_preset(preset).gpu_compute_s)


@pytest.mark.parametrize("page, words, preset, gpu, digits", [
    ("README.md", "Llama-3-8B's c is {} on the study's GPU", "llama3-8b", None, 4),
    ("README.md", "and {} on an H100 at 40%", "llama3-8b", "h100", 4),
    ("README.md", "c = {} on the study's GPU.", "deepseek-v3", None, 4),
    ("README.md", "(989e12 x 0.4) = {} here", "llama3-8b", "h100", 3),
    ("README.md", "(c = {}, as in the worked example)", "llama3-8b", "h100", 3),
    ("docs/tutorial.md", "c = {} on the study's GPU (`tokens_per_worker`", "llama3-8b", None, 4),
    ("docs/tutorial.md", "Llama-3-8B's c is {} on an H100 at 40%", "llama3-8b", "h100", 4),
    ("docs/tutorial.md", "c = {} on the H100s at 40%", "llama3-8b", "h100", 4),
    ("docs/model.md", "size $c$ = {} on the study's GPU", "llama3-8b", None, 4),
    ("docs/calibration.md", "gpt2-124m's c is {} on the study's GPU", "gpt2-124m", None, 3),
    ("docs/cli.md", "Llama-3-8B's c is {};", "llama3-8b", "h100", 3),
])
def test_the_c_a_page_gives_a_preset_is_the_models(page, words, preset, gpu, digits):
    """c = 6 P 512 / (peak x utilisation) as each page writes it, computed (the study's GPU, or a
    GPU preset at 40%), to the figures the page prints."""
    from bandjax.units import duration

    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    assert words.format(duration(_c(preset, gpu), digits)) in text
