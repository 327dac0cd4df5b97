"""The report's layout: a section is one module and one entry of the list; a rebuild is the same
report byte for byte; the old catch-all modules' names still work and warn once."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import warnings
from pathlib import Path

import pytest

import bandjax as bj
from bandjax import report
from bandjax.report import explorer, sections
from bandjax.report.sections import common



@pytest.fixture
def fixture_section(monkeypatch):
    """tests/fixture_section.py, a section made for the tests, loaded afresh: its typed result is
    known to Results during the test only."""
    monkeypatch.setattr(common, "_TYPES", dict(common._TYPES))
    spec = importlib.util.spec_from_file_location("fixture_section",
                                                  Path(__file__).parent / "fixture_section.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fixture_section", module)
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_section_is_one_module_and_one_list_entry(fixture_section, monkeypatch, tmp_path,
                                                     reference_report):
    """Appending the fixture module to SECTIONS puts its typed result in results.json, its
    markdown in results.md, its chart in figures/ and a table and a chart on the page."""
    monkeypatch.setattr(sections, "SECTIONS", (*sections.SECTIONS, fixture_section))
    sc = bj.reference()
    sweeps = reference_report[3]
    report.write(tmp_path / "rep", sc, ctx={"sweeps": sweeps})
    results = json.loads((tmp_path / "rep" / "results.json").read_text())
    core = results["step_ms"]
    assert results["fixture_steps"]["step_ms"] == {vid: core[vid]["free"] for vid in core}
    md = (tmp_path / "rep" / "results.md").read_text()
    assert "## Fixture steps" in md and f"| topk | {core['topk']['free']:.6g} |" in md
    assert (tmp_path / "rep" / "figures" / "fixture_steps.svg").stat().st_size > 1000
    typed = common.Results.of(results)
    assert typed.fixture_steps.step_ms == results["fixture_steps"]["step_ms"]
    page = explorer.page(sc, typed, sweeps)
    section = page.split('<section id="fixture_steps">')[1].split("</section>")[0]
    assert "<h2>11. Fixture steps</h2>" in section  # after the report's ten sections
    assert '<div id="chart-fixture_steps" class="chart"></div>' in section
    assert "<th>step (ms)</th>" in section and f"<td>{core['adamw']['free']:.6g}</td>" in section
    specs = json.loads(page.split("const SPECS = ")[1].split(";\nconst SIGNALS_OF")[0])
    assert specs["fixture_steps"]["datasets"]["steps"][0]["ms"] == core["adamw"]["free"]


@pytest.mark.slow
def test_a_rebuild_is_the_same_report_and_page_byte_for_byte(tmp_path, reference_report,
                                                             monkeypatch):
    """results.json, results.md, every figure (SVG and PNG) and the page built again from the same
    code and scenario are the same bytes (nothing in them depends on the time or the machine's
    state). The figures are drawn again, not read from the figure cache."""
    folder, results, _, sweeps = reference_report
    sc = bj.reference()
    monkeypatch.setenv("BANDJAX_NO_CACHE", "1")
    report.write(tmp_path / "rep", sc)
    before, after = _files(folder), _files(tmp_path / "rep")
    assert sorted(before) == sorted(after)
    assert [name for name in before if before[name] != after[name]] == []
    page_a = explorer.page(sc, explorer.read_results(folder / "results.json", sc), sweeps)
    page_b = explorer.page(sc, explorer.read_results(tmp_path / "rep" / "results.json", sc),
                           sweeps)
    assert page_a == page_b


@pytest.mark.parametrize("old, name, home", [
    ("views", "bandwidth_view", "bandjax.report.sections.bandwidth"),
    ("views", "fmt_s", "bandjax.report.sections.common"),
    ("views", "collect", "bandjax.report.render"),
    ("figures", "bandwidth_chart", "bandjax.report.sections.bandwidth"),
    ("figures", "to_spec", "bandjax.report.sections.common"),
    ("figures", "render", "bandjax.report.render"),
])
def test_the_old_catch_all_paths_warn_once_and_name_the_new_one(monkeypatch, old, name, home):
    from bandjax.report import _moved

    monkeypatch.setattr(_moved, "_warned", set())
    module = importlib.import_module(f"bandjax.report.{old}")
    with pytest.warns(DeprecationWarning, match=f"{home}.{name}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(home), name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(module, name) is value  # once
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(module, "no_such_name")


def test_every_section_module_keeps_the_interface():
    """What bandjax/report/sections/__init__.py says a section module defines."""
    for m in sections.SECTIONS:
        assert isinstance(m.KEY, str), m.__name__
        assert hasattr(m, "build") == hasattr(m, "markdown"), m.__name__
        assert hasattr(m, "view") == hasattr(m, "charts"), m.__name__
        assert hasattr(m, "build") or hasattr(m, "view"), m.__name__
    keys = [m.KEY for m in sections.SECTIONS]
    assert len(set(keys)) == len(keys)
    assert [m.KEY for m in sections.page_order()] == [
        "bandwidth", "stages", "breakeven", "shared_wan", "model", "sync_h", "energy", "cluster",
        "uncertainty", "need", "failures", "sites"]


def test_a_test_section_leaves_no_trace(fixture_section, reference_report):
    """The fixture's typed result is known while it is loaded; the study's results still read."""
    assert "fixture_steps" in common._TYPES
    typed = common.Results.of(reference_report[1])
    assert typed.fixture_steps is None and typed.to_json() == reference_report[1]


def test_the_picker_finds_the_first_row_pick_finds():
    import itertools

    from bandjax.report.sections.common import ANY, Picker, pick

    # rows hold a control's value or "*" (any value); the picker's index must give pick's first
    rows = [{"enob": ANY, "budget": "free", "basis": "exact", "n": 0},
            {"enob": "6", "budget": ANY, "basis": ANY, "n": 1},
            {"enob": "6", "budget": "free", "basis": "exact", "n": 2},
            {"enob": "7", "budget": "low", "basis": ANY, "n": 3}]
    picker = Picker(rows)
    seen = set()
    for e, b, s in itertools.product(("6", "7", "8"), ("free", "low"), ("exact", "hypothesis")):
        found = pick(rows, enob=e, budget=b, basis=s)
        first = picker.first(enob=e, budget=b, basis=s)
        assert first is (found[0] if found else None)
        seen.add(None if first is None else first["n"])
    assert seen == {None, 0, 1, 3}
    assert picker.first(enob="7") is pick(rows, enob="7")[0] is rows[0]  # the plain scan
