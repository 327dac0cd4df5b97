"""No number a reader sees carries more than 6 significant figures: results.md, the figures' text,
the page's visible text (tests/test_explorer.py) and the scenario's error messages, on the
reference report and on a scenario whose links differ; every command's --help, and the one-line
error of each bad number given to each numeric option of each command. A reader's number goes
through one formatter (bandjax.units.significant / describe); a float's repr is a defect."""

from __future__ import annotations

import argparse
import os
import re
import xml.etree.ElementTree as ET

import pytest

import bandjax as bj
from bandjax import cli, report
from bandjax.scenario import ScenarioError, load
from bandjax.units import describe, describe_si, duration, plain, shown, significant
from test_hostile import bounded  # a hang guard, not a speed check

MOST = 6  # significant figures a reader is shown, at most

# a decimal (1,612.854; 0.0665; 6.1e-05) or an exponent form (6e-05); not one part of a dotted
# run (a version 5.20.1, an address)
NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.]*\d)")


def figures(number: str) -> int:
    """Significant figures of a number as printed (leading zeros do not count, trailing do)."""
    mantissa = re.split("[eE]", number)[0]
    return len(mantissa.replace(",", "").replace(".", "").lstrip("0"))


def long_floats(text: str) -> list[str]:
    """Every number in ``text`` printed with more than :data:`MOST` significant figures."""
    return [m.group(1) for m in NUMBER.finditer(text) if figures(m.group(1)) > MOST]


def svg_text(svg: str) -> str:
    """The text an SVG shows (its elements' text, not their coordinates)."""
    return "\n".join(ET.fromstring(svg).itertext())


def test_the_pattern_finds_reprs_and_passes_what_a_person_writes():
    assert long_floats("took 7797.171553758004 ms") == ["7797.171553758004"]
    assert long_floats("disagrees (6.147677702730031e-05 s).") == ["6.147677702730031e-05"]
    assert long_floats("1,612.854 s and 1.2345678e9 B") == ["1,612.854", "1.2345678e9"]
    assert figures("0.0006646") == 4 and figures("1.500") == 4 and figures("6.1e-05") == 2
    # at most 6 figures, whole numbers, versions and names pass
    assert long_floats("1,613 s; 0.925 s; 3.12 GB/s; 123.456 ms; 7,916,736 P; vega 5.20.1; "
                       "E' at 1e-05; llama3-8b; 0.0614768 ms") == []


def test_one_formatter_figures_and_units():
    assert significant(7797.171553758004, 4) == "7,797" and significant(0.06646138, 4) == "0.06646"
    assert significant(999.96, 3) == "1,000" and significant(float("inf")) == "inf"
    assert describe(6.147677702730031e-05, "time") == "0.06148 ms"
    assert describe(6.147677702730031e-08, "time") == "61.48 ns"  # an exponent in ms: ns
    assert describe(1612.854, "time") == "1,613 s"  # five whole digits in ms: s
    assert describe(3.125e9, "byte_rate") == "3.125 GB/s"
    # a message shows a value as a file writes it, unless that takes more than 6 figures
    assert shown(0.0227e-3, "time") == "0.0227 ms" and shown(1e14, "flop_rate") == "100 TFLOP/s"
    # a number as given or a setting: at most 6 figures
    assert plain(0.123456789) == "0.123457" and plain(1e-9) == "1e-09" and plain(12.5) == "12.5"
    # a value labelled with its SI unit (attrs["units"]), or with a unit of no dimension
    assert describe_si(12.5e9, "B/s") == "12.5 GB/s" and describe_si(2667, "steps") == "2,667 steps"
    assert describe(1_223_210.3, "token_rate") == "1.223 Mtokens/s"  # not 7 figures written out
    # a duration in the largest unit that keeps it at or above 1
    assert [duration(x) for x in (9000, 40, 0.06646138, 6.1e-8, 0)] == [
        "2.5 h", "40 s", "66.46 ms", "61 ns", "0 s"]


def test_the_reference_report_prints_no_long_float(reference_report):
    folder, _, md, _ = reference_report
    assert long_floats(md) == []
    svgs = sorted((folder / "figures").glob("*.svg"))
    assert svgs
    for path in svgs:
        assert long_floats(svg_text(path.read_text())) == [], path.name
    # a table cell is 4 significant figures (reference: core.markdown; the AdamW step, docs/model.md s12)
    assert "| AdamW (adamw) | 4.075 |" in md


GB = 1e9
DCS = ("us-east", "eu-west", "ap-south")


def three_dcs() -> bj.Scenario:
    """A ring whose three links are 3.125, 3.125 and 20 GB/s (from row to column): two links
    equally slow, latencies and a GPU compute time that are not round in ms."""
    B = [[1, 3.125 * GB, 20 * GB], [20 * GB, 1, 3.125 * GB], [20 * GB, 20 * GB, 1]]
    L = [[0, 0.0401, 0.07], [0.0401, 0, 0.09], [0.07, 0.09, 0]]
    return bj.reference().with_links(B, latency=L, names=DCS).with_gpu("h100", utilisation=0.37)


@pytest.fixture(scope="module")
def three_dcs_report():
    """(scenario, results, results.md) of the sections the links shape, alone (a few seconds)."""
    sc = three_dcs()
    results = report.build(sc, {"only": ["core", "cluster", "need", "headline"]})
    return sc, results, report.markdown(results)


def test_a_scenario_with_unequal_links_prints_no_long_float(three_dcs_report):
    sc, _, md = three_dcs_report
    assert long_floats(md) == []
    # the GPU compute per step, c = 6 P T / (peak x utilisation), in ms to 4 figures
    assert f"| GPU compute per step | {describe(float(sc.gpu_compute_s), 'time')} |" in md
    assert describe(float(sc.gpu_compute_s), "time").endswith(" ms")


def test_advice_never_asks_for_the_bandwidth_a_link_has(three_dcs_report):
    """Two of the ring's links are 3.125 GB/s: raising one alone gains nothing, and no sentence
    offers to raise it "up to" the 3.12 GB/s it has."""
    _, _, md = three_dcs_report
    assert "only up to 3.12 GB/s" not in md and "up to 3.12 GB/s" not in md
    ring = next(line for line in md.splitlines() if line.startswith("Ring: the us-east to eu-west"))
    assert ring.endswith("A faster us-east to eu-west link alone does not shorten the ring's WAN "
                         "time: the eu-west to ap-south link is as slow (3.12 GB/s); raise both "
                         "together."), ring


def test_the_ring_upgrade_goes_up_to_the_next_slower_link_only():
    from bandjax.report.sections.cluster import _ring_upgrade

    def link(a, b, GBps):
        return {"from": a, "to": b, "bandwidth_GBps": GBps, "latency_ms": 1.0, "ring": True}
    slow, mid, fast = link("a", "b", 3.125), link("b", "c", 6.0), link("c", "a", 20.0)
    assert _ring_upgrade(slow, [slow, mid, fast]) == (
        " A faster a to b link shortens the ring's WAN time only up to 6 GB/s (48 Gbit/s), where "
        "the b to c link paces instead.")
    # 3.125 is written 3.12, as a pacing link at 3.1249 is: as slow, never "up to 3.12 GB/s"
    slower, tie = link("a", "b", 3.1249), link("b", "c", 3.125)
    assert _ring_upgrade(slower, [slower, tie, fast]) == (
        " A faster a to b link alone does not shorten the ring's WAN time: the b to c link is as "
        "slow (3.12 GB/s); raise both together.")
    assert _ring_upgrade(mid, [slow, mid, fast]) == ""  # not the slowest: nothing to say


@pytest.mark.parametrize("toml, words", [
    # the GPU preset's compute per step, 6 P T / (peak x utilisation), computed: 6 figures
    ('[model]\ngpu = "h100"\ngpu_compute = "1 ms"\n', "(0.0614768 ms)"),
])
def test_scenario_errors_print_no_long_float(tmp_path, toml, words):
    path = tmp_path / "s.toml"
    path.write_text(toml)
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert words in str(e.value) and long_floats(str(e.value)) == [], str(e.value)


def test_computed_values_in_field_errors_are_rounded():
    with pytest.raises(ScenarioError) as e:
        bj.reference().replace(wan_latency_s=-1 / 3)
    assert "'-333.333 ms'" in str(e.value) and long_floats(str(e.value)) == []
    with pytest.raises(ScenarioError) as e:
        bj.reference().replace(budget_low_FLOPs=2e11 / 3, budget_high_FLOPs=1e10 / 3)
    assert "'66.6667 GFLOP/s'" in str(e.value) and long_floats(str(e.value)) == []
    # a value as typed reads back as typed
    with pytest.raises(ScenarioError) as e:
        bj.reference().replace(wan_latency_s=-0.0227e-3)
    assert "'-0.0227 ms'" in str(e.value)


@pytest.mark.parametrize("bandwidth, latency, words", [
    # a link computed as a third of 1 GB/s, negative: its value to 6 figures, in GB/s
    ([[0, -1e9 / 3], [1e9, 0]], None, "['dc0' -> 'dc1'] = -0.333333 GB/s: must be"),
    ([[0, 1e9], [1e9, 0]], [[0, -1 / 3], [0, 0]], "['dc0' -> 'dc1'] = -333.333 ms: must be"),
    # past the largest ratio: both links named with their values
    ([[0, 1e-3], [1e15 / 3, 0]], None, "['dc1' -> 'dc0'] = 333.333 TB/s is 3.33e+17 times"),
])
def test_link_errors_print_no_long_float(bandwidth, latency, words):
    with pytest.raises(ScenarioError) as e:
        bj.reference().with_links(bandwidth, latency=latency)
    assert words in str(e.value) and long_floats(str(e.value)) == [], str(e.value)


def test_coinciding_curves_are_found_from_the_numbers():
    from bandjax.report.sections.common import coinciding, coinciding_note

    rows = [{"short": s, "GBps": g, "cu": u} for s, us in
            (("DiLoCo", (0.5, 0.9)), ("S-DiLoCo", (0.5, 0.9 * (1 + 1e-13))), ("E", (0.5, 0.91)))
            for g, u in zip((1.0, 10.0), us)]
    assert coinciding(rows, "GBps", "cu") == [["DiLoCo", "S-DiLoCo"]]
    # apart by more than 1e-12 relative at one point: two curves
    rows[3]["cu"] = 0.9 * (1 + 1e-9)
    assert coinciding(rows, "GBps", "cu") == []
    assert coinciding_note([["A", "B", "C"]], "bandwidth") == [
        "A, B and C coincide (equal at every bandwidth drawn): one line shows all of them."]


# ------------------------------------------------------------------------------ the command line


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Every ``bandjax`` subcommand's parser, by name, as the command line builds them."""
    (sub,) = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("argv", [["--help"]] + [[name, "--help"] for name in subcommands()])
def test_help_prints_no_long_float(argv, capsys):
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: bandjax") and long_floats(out) == [], out


# the positional arguments a subcommand needs before its options are read: valid ones
POSITIONALS = {"breakeven": ["adamw", "topk"], "store": ["out.zarr"],
               "calibrate": ["rows.csv", "--fit", "d.adamw"]}
# a value no numeric option takes: below every range, not a number, past the largest float, words
BAD_FLOATS = ("-1", "nan", "1e999", "twelve")
BAD_INTS = ("-1", "1.5", "1e999", "twelve")
# options that take numbers as text (a preset's name or a number): each with its bad values
TEXT_NUMBERS = [["goodput", "--rate", "-1"], ["goodput", "--rate", "nan"],
                ["goodput", "--rate", "1e999"], ["store", "out.zarr", "--budget", "-1"],
                ["store", "out.zarr", "--budget", "nan"], ["winner", "--over", "dcs", "-1"],
                ["winner", "--over", "budget", "nan"], ["winner", "--over", "H", "1e999"]]


def bad_invocations() -> list[list[str]]:
    """For each numeric option of each subcommand (read from its parser), each bad value; the
    subcommand's positional arguments given valid. A subcommand that needs positionals and has
    none in :data:`POSITIONALS` fails here, so a new one is not left out."""
    cases = []
    for name, parser in subcommands().items():
        needs = [a for a in parser._actions if not a.option_strings and a.required]
        assert not needs or name in POSITIONALS, f"bandjax {name}: give its positionals"
        for action in parser._actions:
            if action.type not in (float, int) or not action.option_strings:
                continue
            count = action.nargs if isinstance(action.nargs, int) else 1
            for value in BAD_FLOATS if action.type is float else BAD_INTS:
                cases.append([name, *POSITIONALS.get(name, []), action.option_strings[0],
                              *[value] * count])
    return cases + TEXT_NUMBERS


def test_the_catalogue_holds_every_numeric_option():
    """Every option typed as a number appears (the catalogue is read from the parsers)."""
    cases = bad_invocations()
    for name, parser in subcommands().items():
        for action in parser._actions:
            if action.type in (float, int) and action.option_strings:
                assert any(c[0] == name and action.option_strings[0] in c for c in cases)
    assert ["wan", "--max-sim-s", "nan"] in cases and ["winner", "--points", "1.5"] in cases


@pytest.mark.parametrize("argv", bad_invocations(), ids=" ".join)
def test_a_bad_number_is_one_line_with_no_long_float(argv, capsys, tmp_path, monkeypatch):
    """Exit 2, one line ``bandjax ...: error: ...``, no traceback and no number printed with more
    than 6 significant figures; refused before any work (under the hostile tests' hang guard)."""
    monkeypatch.chdir(tmp_path)  # a relative output path lands here
    (tmp_path / "rows.csv").write_text("variant,bandwidth,step_ms\nadamw,12.5,4.075\n")
    with bounded():
        rc = cli.main(argv)
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("bandjax"), (rc, err)
    assert "Traceback" not in err and long_floats(err) == [], err


# ------------------------------------------------------------------------------ the page at 1,400 px

WIDE = 1400  # px: a laptop's window


@pytest.fixture(scope="module")
def wide_pages(tmp_path_factory, reference_report, three_dcs_report):
    """The page of the reference report (its own results) and of the three DCs', each open in
    Chromium at 1,400 px: {name: (page, log, results)}."""
    from test_explorer import CHROMIUM, CHROMIUM_ARGS, _open

    from bandjax.report import explorer

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent")
    from playwright.sync_api import sync_playwright

    out = tmp_path_factory.mktemp("wide")
    _, ref_results, _, sweeps = reference_report
    sc3, results3, _ = three_dcs_report
    paths = {"reference": (explorer.write(out / "ref", bj.reference(), results=ref_results,
                                          sweeps=sweeps), ref_results),
             "three_dcs": (explorer.write(out / "three", sc3, results=results3), results3)}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield {name: (*_open(browser, path, width=WIDE), res)
                   for name, (path, res) in paths.items()}
        finally:
            browser.close()


@pytest.mark.slow  # two reports' pages in a browser
@pytest.mark.parametrize("name", ["reference", "three_dcs"])
def test_the_page_at_1400_px(wide_pages, name):
    from bandjax.report.sections import need
    from bandjax.report.sections.common import Results, coinciding, coinciding_note

    page, log, results = wide_pages[name]
    # no long float in the visible text or the charts' text
    text = page.evaluate("() => document.body.innerText + '\\n' + [...document.querySelectorAll("
                         "'svg text')].map(t => t.textContent).join('\\n')")
    assert long_floats(text) == []
    # the page does not scroll sideways; every table's cells lie inside its box, or the box
    # scrolls and lies inside the window
    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= WIDE
    tables = page.evaluate("""() => [...document.querySelectorAll('table.data')].map(t => {
        const box = t.parentElement, b = box.getBoundingClientRect();
        const right = Math.max(...[...t.querySelectorAll('th, td')].map(c => c.getBoundingClientRect().right));
        return {id: t.closest('section').id, right, box: b.right, left: b.left,
                scrolls: ['auto', 'scroll'].includes(getComputedStyle(box).overflowX)}; })""")
    assert tables
    for t in tables:
        assert t["left"] >= 0 and t["box"] <= WIDE, t
        assert t["right"] <= t["box"] + 1 or t["scrolls"], t
    # the need table: every target's column and the scenario's are in the window, unscrolled
    need_right = [t["right"] for t in tables if t["id"] == "need"]
    assert need_right and max(need_right) <= WIDE, need_right
    head = page.evaluate("() => [...document.querySelectorAll('#need table.data thead th')]"
                         ".map(c => c.textContent)")
    r = Results.of(results).need
    assert head[4:] == [f"for {need.pct(u)}" for u in r.utilisation] + [
        f"utilisation at {significant(r.wan_GBps, 3)} GB/s"]
    # no legend label is cut short
    cut = page.evaluate("""() => [...document.querySelectorAll('div.chart g.role-legend text')]
        .map(t => t.textContent).filter(s => s.includes('\u2026'))""")
    assert cut == []
    # no chart is drawn against K with a single K; that K's numbers are in the tables
    ks = page.evaluate("""() => Object.entries(SPECS).flatMap(([id, s]) => Object.values(s.datasets || {})
        .filter(rows => Array.isArray(rows) && rows.length && 'K' in rows[0])
        .map(rows => [id, new Set(rows.map(r => r.K)).size]))""")
    assert all(n >= 2 for _, n in ks), ks
    cl = Results.of(results).cluster
    if len(cl.dcs) == 1:
        assert ks == [] and page.locator("#cluster div.chart").count() == 0
        be = page.evaluate("""() => { const h = [...document.querySelectorAll('#cluster h3')]
            .find(h => h.textContent.startsWith('Break-evens at K'));
            return h ? [h.textContent, [...h.nextElementSibling.querySelectorAll('tbody tr')]
                .map(tr => [...tr.children].map(c => c.textContent))] : null; }""")
        assert be is not None and be[0] == f"Break-evens at K = {cl.dcs[0]}"
        shown = {(row[0], row[1], row[2]): row[3] for row in be[1]}
        for e in cl.break_even_GBps:
            for j, topo in enumerate(cl.topologies):
                roots = e["GBps"][0][j]
                key = next((k for k in shown if k[2] == topo and k[1] in (e["basis"], "both")
                            and k[0].startswith(f"{_short(results, e['a'])} / ")), None)
                if roots:
                    assert key is not None and shown[key].startswith(
                        f"{significant(roots[0], 3)} GB/s"), (e, topo, shown)
    # curves that coincide are named under the chart, as the data drawn says
    curves = page.evaluate("() => SPECS.need.datasets.curves")
    want = coinciding_note(coinciding(curves, "GBps", "cu"), "bandwidth")
    notes = page.evaluate("() => [...document.querySelectorAll('#need p.note')].map(p => p.textContent)")
    assert notes == want
    if name == "reference":  # DiLoCo and S-DiLoCo at overlap 0: the same utilisation throughout
        u = r.compute_utilisation
        assert u["diloco"] == u["streaming_diloco"]
        assert any("DiLoCo and S-DiLoCo coincide" in n for n in notes), notes
    assert log["errors"] == [] and log["requests"] == []


def _short(results, vid):
    return results["setup"]["variants"][vid]["short"]


def test_the_headline_says_an_answer_once(three_dcs_report):
    """Over 40 to 90 ms links no variant reaches 90% or 95% compute utilisation: one sentence
    for both targets, not the same sentence twice."""
    from bandjax.report.sections import headline
    from bandjax.report.sections.common import Results

    _, results, md = three_dcs_report
    lines = headline.lines(results)
    h = Results.of(results).headline
    assert h.need_targets == [0.9, 0.95]
    assert all(x["status"] == ["not_reachable"] * 2 for x in h.utilisation.values())
    need = [s for s in lines if s.startswith("WAN bandwidth per directed link")]
    assert len(need) == 1 and "for 90% and 95% compute utilisation: not reachable" in need[0]
    assert len(lines) == len(set(lines)) and all(f"- {s}" in md for s in lines)
