"""The report, the page and the command line on a scenario whose WAN links differ (docs/model.md
section 15): three named regions, two close and one far (docs/tutorial.md part 7's links, on the
reference model so the shared-WAN runs stay small)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import bandjax as bj
from bandjax import cli
from bandjax import links as _links
from bandjax.report.sections import Results
from bandjax.scenario import save
from bandjax.variants import TOPOLOGIES

pytestmark = pytest.mark.slow  # a report and a page: about a minute

GB, MS = 1e9 / 8, 1e-3  # bytes/s per Gbit/s, seconds per ms
REGIONS = ("us-east", "us-central", "eu")
B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * GB
L = np.array([[0, 10, 40], [10, 0, 50], [40, 50, 0]]) * MS


def regions() -> bj.Scenario:
    return bj.reference().with_gpu("h100", utilisation=0.4).with_links(
        bandwidth=B, latency=L, names=REGIONS)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`bandjax report` then `bandjax explore` on the scenario file, in this process (the session's
    small shared-WAN runs); their exit statuses and outputs."""
    d = tmp_path_factory.mktemp("regions")
    save(regions(), d / "regions.toml")
    rc_report = cli.main(["report", "--scenario", str(d / "regions.toml"), "--out", str(d / "rep"),
                          "--quiet"])
    rc_explore = cli.main(["explore", "--scenario", str(d / "regions.toml"), "--out",
                           str(d / "page"), "--results", str(d / "rep" / "results.json")])
    return {"dir": d, "rc": (rc_report, rc_explore),
            "results": json.loads((d / "rep" / "results.json").read_text()),
            "md": (d / "rep" / "results.md").read_text(), "page": d / "page" / "explorer.html"}


def test_report_and_explore_exit_0_with_the_links(built):
    assert built["rc"] == (0, 0)
    sc = regions()
    cl = Results.of(built["results"]).cluster
    # K is the table's: the section varies the topology only
    assert cl.dcs == [3] and cl.links_differ
    # the links as the model holds them (bandjax.links.table), in GB/s and ms
    rows = _links.table(sc)
    assert [(r["from"], r["to"]) for r in cl.links] == [(r["from"], r["to"]) for r in rows]
    for got, want in zip(cl.links, rows):
        assert got["bandwidth_GBps"] == pytest.approx(want["bandwidth_Bps"] / 1e9, rel=1e-12)
        assert got["latency_ms"] == pytest.approx(want["latency_s"] * 1e3, rel=1e-12)
    # the ring uses us-east -> us-central -> eu -> us-east; a mesh every link
    assert [(r["from"], r["to"]) for r in cl.links if r["ring"]] == [
        ("us-east", "us-central"), ("us-central", "eu"), ("eu", "us-east")]
    assert all(r["mesh"] for r in cl.links)
    # the pacing links are bandjax.pacing_links' on each topology
    for j, topo in enumerate(TOPOLOGIES):
        want = bj.pacing_links(sc.replace(topology=float(j)))
        assert {v: tuple(p) for v, p in cl.pacing[topo].items()} == want
    # the 5 Gbit/s us-central -> eu link is the ring's slowest: it paces every variant there
    assert set(map(tuple, cl.pacing["ring"].values())) == {("us-central", "eu")}
    md = built["md"].split("## Your cluster")[1]
    assert "| us-central | eu | 0.625 | 5 | 50 | yes | yes |" in md
    # the queueing approximation takes identical links: left out, and said why
    sw = built["results"]["shared_wan"]
    assert sw["approx_step_ms"] is None and "links differ" in sw["approx_left_out"]
    assert "The queueing approximation is left out" in built["md"]
    # the bandwidth each method needs is the slowest link's
    need = built["results"]["need"]["assumptions"][0]
    assert "the slowest link's, every link scaled in proportion" in need


def test_results_with_links_follow_the_schema(built):
    import jsonschema
    from importlib import resources

    text = resources.files("bandjax.report").joinpath("results.schema.json").read_text()
    schema = json.loads(text)
    jsonschema.validate(built["results"], schema)


def test_breakeven_says_every_link_scales(built, capsys):
    f = str(built["dir"] / "regions.toml")
    assert cli.main(["breakeven", "--scenario", f, "band_switch", "band_gpu_allreduce"]) == 0
    out = capsys.readouterr().out
    assert "bandwidth is the slowest link's; every link's bandwidth scales in proportion" in out


CHROMIUM = "/usr/bin/chromium"


def test_page_shows_the_links(built):
    """The links table renders with its units and the section's numbers, the pacing links are
    named, and the page logs no error. Reference: the typed section from results.json."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent")
    from playwright.sync_api import sync_playwright

    from test_explorer import CHROMIUM_ARGS, _open

    cl = Results.of(built["results"]).cluster
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page, log = _open(browser, built["page"])
            tables = page.evaluate("""() => [...document.querySelectorAll('#cluster table')].map(t => ({
                head: [...t.querySelectorAll('thead th')].map(c => c.textContent),
                rows: [...t.querySelectorAll('tbody tr')].map(r => [...r.children].map(c => c.textContent)),
                caption: t.caption ? t.caption.textContent : ''}))""")
            text = page.inner_text("#cluster")
        finally:
            browser.close()
    links = next(t for t in tables if "bandwidth (GB/s)" in t["head"])
    assert links["head"][:5] == ["from", "to", "bandwidth (GB/s)", "bandwidth (Gbit/s)",
                                 "latency (ms)"]
    assert len(links["rows"]) == len(cl.links) == 6
    for row, want in zip(links["rows"], cl.links):
        assert (row[0], row[1]) == (want["from"], want["to"])
        # shown to 4 significant digits
        assert float(row[2]) == pytest.approx(want["bandwidth_GBps"], rel=5e-4)
        assert float(row[3]) == pytest.approx(8 * want["bandwidth_GBps"], rel=5e-4)
        assert float(row[4]) == pytest.approx(want["latency_ms"], rel=5e-4)
    pacing = next(t for t in tables if "pacing link, ring" in t["head"])
    assert [r[1] for r in pacing["rows"]] == [
        f"{a} to {b}" for a, b in cl.pacing["ring"].values()]
    assert "the us-central to eu link" in text and "paces" in text
    assert not log["errors"], log["errors"]
