"""A results.json whose strings hold HTML ("<!--<script>", "</script>") must not stop the explorer
page from loading: the data embedded in the page escapes every "<"."""

from __future__ import annotations

import os
from pathlib import Path

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


# ------------------------------------------------------------------ DC names from a scenario

# The names a review found running script from results.md, each a DC of a three-region table.
EVIL_DCS = ["<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>",
            "<svg onload=alert(1)>"]


def _evil_links_toml() -> dict:
    a, b, c = EVIL_DCS
    pairs = [(a, b, "10 GB/s", "5 ms"), (b, c, "12.5 GB/s", "2 ms"), (c, a, "8 GB/s", "20 ms")]
    return {"links": {"names": EVIL_DCS, "pairs": [
        {"from": f, "to": t, "wan": w, "latency": l, "symmetric": True} for f, t, w, l in pairs]}}


@pytest.fixture(scope="module")
def evil_dc_report(tmp_path_factory):
    """`bandjax report --sections core cluster` (the setup and the links table, its pacing
    sentences) and `bandjax explore --results` for a scenario whose DC names are markup."""
    from bandjax import cli

    root = tmp_path_factory.mktemp("evildc")
    scenario = root / "evil.toml"
    scenario.write_text(tomli_w.dumps(_evil_links_toml()))
    assert bj.load(scenario).links.names == tuple(EVIL_DCS)  # read as typed
    assert cli.main(["report", "--quiet", "--scenario", str(scenario), "--out", str(root / "rep"),
                     "--sections", "core", "cluster", "figures"]) == 0
    assert cli.main(["explore", "--scenario", str(scenario), "--results",
                     str(root / "rep" / "results.json"), "--out", str(root / "page")]) == 0
    return root


def _docs_markdown(text: str) -> str:
    """``text`` rendered as the docs render markdown: Python-Markdown with mkdocs.yml's
    extensions and their settings."""
    import markdown
    import yaml

    class Loose(yaml.SafeLoader):  # mkdocs.yml may hold !!python/name tags: read them as text
        pass

    Loose.add_multi_constructor("", lambda loader, suffix, node: None)
    config = yaml.load((Path(__file__).resolve().parents[1] / "mkdocs.yml").read_text(), Loose)
    names, settings = [], {}
    for ext in config["markdown_extensions"]:
        name, conf = next(iter(ext.items())) if isinstance(ext, dict) else (ext, None)
        names.append(name)
        if conf:
            settings[name] = conf
    return markdown.markdown(text, extensions=names, extension_configs=settings)


def test_results_md_escapes_dc_names(evil_dc_report):
    """No DC name reaches results.md as markup (they went in raw: an <img onerror>, a
    </script><script> and an <svg onload>); rendered, each shows as typed."""
    md = (evil_dc_report / "rep" / "results.md").read_text()
    assert "<" not in md, [line for line in md.splitlines() if "<" in line][:3]
    rendered = _docs_markdown(md)
    import html as _html

    text = _html.unescape(rendered)
    for name in EVIL_DCS:
        assert name in text  # shown as typed in the links table and the pacing sentences
        assert name not in rendered  # but never as markup
    svgs = list((evil_dc_report / "rep" / "figures").glob("*.svg"))
    assert svgs and not any(n in f.read_text() for f in svgs for n in EVIL_DCS)
    page = (evil_dc_report / "page" / "explorer.html").read_text()
    assert not any(n in page for n in EVIL_DCS)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent")
def test_dc_names_run_no_script_in_a_browser(evil_dc_report, tmp_path):
    """results.md rendered with the docs' markdown, and the explorer page, opened in Chromium:
    no alert fires (a dialog handler counts them), no element carries an onerror or onload
    handler, and the names show as typed."""
    from playwright.sync_api import sync_playwright

    md_page = tmp_path / "results.html"
    md_page.write_text("<!doctype html><meta charset=utf-8><body>"
                       + _docs_markdown((evil_dc_report / "rep" / "results.md").read_text())
                       + "</body>")
    dialogs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for path in (md_page, evil_dc_report / "page" / "explorer.html"):
                page = browser.new_page()
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(300)
                assert page.evaluate(
                    "() => document.querySelectorAll('[onerror],[onload],script:not([src])')"
                    ".length") == (0 if path == md_page else page.evaluate(
                        "() => document.querySelectorAll('script:not([src])').length"))
                assert page.evaluate("() => document.querySelectorAll('[onerror],[onload]').length") == 0
                if path == md_page:
                    shown = page.inner_text("body")
                    assert all(n in shown for n in EVIL_DCS)
                page.close()
        finally:
            browser.close()
    assert dialogs == []
