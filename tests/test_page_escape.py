"""A results.json whose strings hold HTML ("<!--<script>", "</script>") must not stop the explorer
page from loading: the data embedded in the page escapes every "<"."""

from __future__ import annotations

import os

import pytest
import tomli_w

import bandjax as bj
from bandjax.report import explorer
from test_explorer import CHROMIUM, CHROMIUM_ARGS, _open, fake_results

HOSTILE = "<!--<script></script>"


def hostile_results(sc, reference_report):
    res = fake_results(sc, reference_report[1])
    res["shared_wan"]["trace"]["variant"] = HOSTILE  # embedded in a chart's data
    return res


def test_embedded_json_holds_no_angle_bracket(tmp_path, reference_report):
    sc = bj.reference()
    text = explorer.page(sc, hostile_results(sc, reference_report), reference_report[3])
    lines = [line for line in text.splitlines()
             if line.startswith(("const SPECS = ", "const SIGNALS_OF = ", "const PAGE = "))]
    assert len(lines) == 3
    assert not any("<" in line for line in lines)
    assert any(HOSTILE.replace("<", "\\u003c").replace(">", "\\u003e") in line for line in lines)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent")
def test_hostile_page_loads_in_browser(tmp_path, reference_report):
    from playwright.sync_api import sync_playwright

    sc = bj.reference()
    path = explorer.write(tmp_path, sc, results=hostile_results(sc, reference_report),
                          sweeps=reference_report[3])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page, log = _open(browser, path)  # waits for body[data-ready=true]
            assert page.evaluate("() => JSON.stringify(SPECS).includes('<!--<script>')")
            assert log["errors"] == [] and log["requests"] == []
        finally:
            browser.close()


# ------------------------------------------------------------------ names from a scenario

# A variant whose names carry markup: an image whose onerror sets a flag, the end of a script
# element, a comment opener, quotes, backticks and markdown characters. The variant is a valid
# one (a payload, a collective and measured steps), so it reaches every table and readout.
EVIL_SHORT = "<img src=x onerror=\"window.__pwned=1\">`q'|*b*"
EVIL_LABEL = "</script><!-- <img src=y onerror='window.__pwned=2'> & \"quoted\" `tick`"
EVIL_TOML = {"variants": {"evil": {"short": EVIL_SHORT, "label": EVIL_LABEL, "payload": "dense",
                                   "collective": "ring_allreduce"}},
             "steps": {"evil": 40000}}


@pytest.fixture(scope="module")
def evil_report(tmp_path_factory):
    """`bandjax report` and `bandjax explore --results` (in this process, small shared-WAN runs)
    for a scenario with the hostile variant."""
    from bandjax import cli

    root = tmp_path_factory.mktemp("evil")
    scenario = root / "evil.toml"
    scenario.write_text(tomli_w.dumps(EVIL_TOML))
    assert bj.load(scenario).variant("evil").short == EVIL_SHORT  # read as typed
    assert cli.main(["report", "--quiet", "--scenario", str(scenario), "--out", str(root / "rep")]) == 0
    assert cli.main(["explore", "--scenario", str(scenario), "--results",
                     str(root / "rep" / "results.json"), "--out", str(root / "page")]) == 0
    return root


def test_results_md_shows_names_as_typed(evil_report):
    """results.md holds no tag, comment or raw markup from the names; each shows, rendered, as
    typed (entities for & < >, backslashes for markdown characters)."""
    md = (evil_report / "rep" / "results.md").read_text()
    assert "<" not in md and "</script" not in md and "<!--" not in md
    escaped = ("&lt;img src=x onerror=\"window.\\_\\_pwned=1\"&gt;\\`q'\\|\\*b\\*")
    assert md.count(escaped) >= 10  # in the setup, the tables and the break-even pairs
    svgs = list((evil_report / "rep" / "figures").glob("*.svg"))
    assert svgs and not any("<img" in f.read_text() or "<!--" in f.read_text() for f in svgs)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent")
def test_hostile_names_run_no_script(evil_report):
    """In Chromium no handler of the names runs (the flag stays unset) while the readout is drawn
    at every bandwidth, and the names show as typed in the readout, the key and the tables."""
    from playwright.sync_api import sync_playwright

    path = evil_report / "page" / "explorer.html"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page, log = _open(browser, path)
            n = page.evaluate("() => PAGE.grid_GBps.length")
            for i in range(0, n, max(1, n // 12)):  # the readout redrawn along the slider
                page.evaluate(f"() => setSignal('bwi', {i}).then(updateBandwidth)")
            page.wait_for_timeout(300)
            assert page.evaluate("() => window.__pwned") is None
            assert page.evaluate("() => document.querySelectorAll('img').length") == 0
            readout = page.inner_text("#readout-bandwidth")
            assert EVIL_SHORT in readout
            assert EVIL_LABEL in page.inner_text("p.key")
            assert log["requests"] == []  # nothing fetched (an <img src=x> would be)
        finally:
            browser.close()


# ------------------------------------------------------------------ what the page states

def test_page_states_the_message_size_the_runs_used(reference_report):
    """The shared-WAN assumptions name the sync's message size the section ran (its sizing may
    make them larger than the scenario's 1 MB, as results.md says), and the other jobs' transfer
    size of the scenario, not a fixed "1 MB"."""
    import copy
    import html

    from bandjax.report.sections import shared_wan

    sc = bj.reference()
    res = copy.deepcopy(reference_report[1])
    res["shared_wan"]["sizing"]["message_B"] = 4.25e6
    said = " ".join(shared_wan.shared_wan_view(sc, res).assumptions)
    assert "as 4.25 MB messages" in said and "1 MB messages" not in said, said
    assert "other jobs send 1 MB transfers" in said  # the scenario's background_B, 1e6 B
    page = explorer.page(sc, res, reference_report[3])
    assert html.escape("The sync's WAN bytes go as 4.25 MB messages") in page
    # and the same size as results.md's sentence for the same results
    from bandjax import report

    assert "go as 4.25 MB messages" in report.markdown(res)
    # a scenario with other transfer sizes: both follow it
    sc2 = sc.replace(background_B=2e5, wan_message_B=3e5)
    res["shared_wan"]["sizing"]["message_B"] = 3e5
    said = " ".join(shared_wan.shared_wan_view(sc2, res).assumptions)
    assert "other jobs send 0.2 MB transfers" in said and "as 0.3 MB messages" in said, said
