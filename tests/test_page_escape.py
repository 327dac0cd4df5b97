"""A results.json whose strings hold HTML ("<!--<script>", "</script>") must not stop the explorer
page from loading: the data embedded in the page escapes every "<"."""

from __future__ import annotations

import os

import pytest

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
