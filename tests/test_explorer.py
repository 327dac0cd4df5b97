"""The explorer page: built from the closed forms and the report's results, self-contained, and
working in a headless browser with the network cut."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import bandjax as bj
from bandjax import cli
from bandjax.report import explorer, render
from bandjax.report.sections import bandwidth, breakeven, common
from bandjax.report.sections import Core, Results

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SECTIONS = ("bandwidth", "stages", "breakeven", "shared_wan", "model", "sync_h", "energy", "cluster",
            "uncertainty", "need")


def fake_results(sc, reference_results: dict) -> dict:
    """The break-even and shared-WAN sections with numbers of our choosing, for exercising the page
    on values the reference does not produce: every key of the reference report's two sections
    (each section is typed, so it has them all), the fields the page draws replaced. The load-0
    points are the closed form's own step times (the engine must equal it at load 0); every other
    replaced number is arbitrary."""
    gbps = [1.0, 12.5, 100.0]
    ds = bj.sweep(sc, bandwidth=gbps, basis=list(bj.BASES), quantities=["step_s", "time_to_target_s"])
    points = []
    for vid in ("adamw", "band_switch"):
        for basis in bj.BASES:
            for g in gbps:
                at = ds.sel(bandwidth=g, basis=basis, variant=vid)
                points.append({"variant": vid, "GBps": g, "basis": basis,
                               "step_ms": float(at.step_s) * 1e3,
                               "time_to_target_s": float(at.time_to_target_s)})
    n = 20
    ref = reference_results
    return {
        **{k: ref[k] for k in ("break_even_range_GBps", "budget_break_even", "inverse")},
        "break_even_GBps_by_budget": [],  # only the crossings below: no root finder's at [low]
        "break_even_GBps": [
            {"a": "band_switch", "b": "topk", "basis": "hypothesis", "GBps": [0.55],
             "winner_below": "band_switch", "winner_above": "topk",
             "winners": ["band_switch", "topk"], "status": "crosses"},
            {"a": "band_switch", "b": "adamw", "basis": "exact", "GBps": [], "winner_below": "adamw",
             "winner_above": "adamw", "winners": ["adamw"], "status": "b_wins_throughout"},
        ],
        "enob_break_even": [{"a": "band_pluggable", "b": "adamw", "basis": "hypothesis",
                             "GBps": [0.1, 1.0, 10.0], "enob": [4.0, 6.0, 9.0]}],
        "sensitivity": [{"parameter": "optics_Sps", "d_log_break_even_d_log_param": 0.25}],
        "shared_wan": {
            **ref["shared_wan"],
            "seed": 7, "loads": [0.0, 0.3, 0.6], "steps": 50,
            "step_ms": {"adamw": [4.075, 5.0, 7.5], "band_switch": [3.726, 4.1, 5.2]},
            "mean_step_ms": None,
            "ci95_ms": {"adamw": [[4.075, 4.075], [4.8, 5.2], [7.0, 8.0]],
                        "band_switch": [[3.726, 3.726], [4.0, 4.2], [5.0, 5.4]]},
            "growth": None, "approx_step_ms": None, "approx_accuracy": None,
            "trace": {"variant": "adamw", "load": 0.3, "bandwidth_GBps": 12.5,
                      "t_ms": [0.25 * j for j in range(n)],
                      "queue_out": [1e6 * (j % 4) for j in range(n)],
                      "queue_in": [1e6 * ((j + 2) % 3) for j in range(n)],
                      "sync_bytes_left": [31.7e6 * (1 - j / (n - 1)) for j in range(n)]},
            "load0_points": points,
        },
    }


# ------------------------------------------------------------------------------ the views


@pytest.fixture(scope="module")
def sweeps(reference_report):
    """The reference report's one pass of the model (tests/conftest.py), shared by every view."""
    return reference_report[3]


@pytest.fixture(scope="module")
def ref_views(sweeps):
    return {v.key: v for v in render.collect(bj.reference(), {}, sweeps)}


def full_results(sc, reference_results: dict) -> dict:
    """fake_results with the reference report's core, headline, cluster, uncertainty and need
    sections."""
    return {**fake_results(sc, reference_results), **{
        k: reference_results[k] for k in (*Core.keys(), "headline", "cluster", "uncertainty",
                                          "need")}}


def _at(rows, vid, i, **sel):
    rs = common.pick([r for r in rows if r["variant"] == vid and r["i"] == i], **sel)
    assert len(rs) == 1, (vid, i, sel, rs)
    return rs[0]


def test_bandwidth_curves_reproduce_the_reference_times(ref_views):
    v = ref_views["bandwidth"]
    i = v.data["start"]
    assert v.data["grid_GBps"][i] == pytest.approx(12.5, rel=1e-12)
    rows = v.data["curves"]
    at = {"enob": "8", "budget": "free", "basis": "hypothesis"}
    # docs/model.md section 12: top-k 0.93 s, AdamW 1.63 s, C 3.85 s at 100 GbE; E' step 3.726 ms
    assert _at(rows, "topk", i, **at)["t_s"] == pytest.approx(0.93, abs=0.005)
    assert _at(rows, "adamw", i, **at)["t_s"] == pytest.approx(1.63, abs=0.005)
    assert _at(rows, "band_gpu", i, **at)["t_s"] == pytest.approx(3.85, abs=0.005)
    assert _at(rows, "band_gpu", i, **at)["step_ms"] == pytest.approx(1.443, abs=5e-4)
    assert _at(rows, "band_switch", i, **at)["step_ms"] == pytest.approx(3.726, abs=5e-4)
    # docs/model.md section 12: E at [low] 33.348 ms a step
    assert _at(rows, "band_pluggable", i, enob="8", budget="low", basis="exact")["step_ms"] == \
        pytest.approx(33.348, abs=5e-4)


def test_rows_are_stored_once_per_control_a_variant_depends_on(ref_views):
    rows = ref_views["bandwidth"].data["curves"]
    n = len(ref_views["bandwidth"].data["grid_GBps"])
    by = {vid: [r for r in rows if r["variant"] == vid] for vid in bj.variants.IDS}
    assert all(r["basis"] == r["enob"] == r["budget"] == "*" for r in by["adamw"])
    assert len(by["adamw"]) == n
    # E: ENOB (2 measured) x budget (3); not the basis. E': also the basis.
    assert len(by["band_pluggable"]) == n * 2 * 3
    assert {r["basis"] for r in by["band_pluggable"]} == {"*"}
    assert len(by["band_switch"]) == n * 2 * 3 * 2


def test_never_and_not_measured_are_not_numbers(ref_views):
    rows = ref_views["bandwidth"].data["curves"]
    i = ref_views["bandwidth"].data["start"]
    e6 = _at(rows, "band_pluggable", i, enob="6", budget="free", basis="hypothesis")
    assert e6["t_s"] is None and e6["status"] == "never"
    assert e6["step_ms"] > 0


def test_exact_basis_changes_only_band_switch(ref_views):
    rows = ref_views["bandwidth"].data["curves"]
    i = ref_views["bandwidth"].data["start"]
    hyp = _at(rows, "band_switch", i, enob="8", budget="free", basis="hypothesis")
    exa = _at(rows, "band_switch", i, enob="8", budget="free", basis="exact")
    # E' takes E's 1,800 steps (hypothesis) or the exact band's 2,667 (docs/model.md section 6)
    assert exa["t_s"] / hyp["t_s"] == pytest.approx(2667 / 1800, rel=1e-6)


def test_stages_view(ref_views):
    v = ref_views["stages"]
    assert v.data["break_even_GFLOPs"] == pytest.approx(140.0, rel=1e-12)  # docs/model.md section 4
    text = " ".join(v.conclusion)
    assert "140.0 GFLOP/s" in text and "optics" in text and "31.667 ms" in text
    free = v.table["rows"][0]
    assert free[1:] == ["1.267", "2.262 (binds)", "0", "0.7917"]  # docs/model.md section 4
    binding = {r["GFLOPs"]: r["stage"] for r in v.data["stages"] if r["binding"] and r["stage"] in bj.STAGES}
    assert binding[10.0] == "compute" and binding[1000.0] == "optics"


def test_missing_sections_say_so_and_invent_nothing(ref_views):
    assert ref_views["bandwidth"].data["dots"] == []
    assert any("load0_points" in m for m in ref_views["bandwidth"].missing)
    assert ref_views["breakeven"].data["crossings"] == []
    assert len(ref_views["breakeven"].missing) == 3
    sw = ref_views["shared_wan"]
    assert sw.data == {} and sw.table is None and sw.conclusion == []
    assert "not available yet" in sw.missing[0]
    cl = ref_views["cluster"]
    assert cl.data == {} and cl.table is None and cl.conclusion == []
    assert "results key cluster" in cl.missing[0]
    for key in ("stages", "model", "sync_h", "energy"):
        assert ref_views[key].missing == [] and ref_views[key].conclusion


def test_model_and_h_views(ref_views):
    m = ref_views["model"]
    study = common.pick([r for r in m.data["bars"] if r["model"] == "study" and r["variant"] == "topk"],
                       enob="8", budget="free")
    assert study[0]["t_s"] == pytest.approx(0.93, abs=0.005)
    assert m.table["rows"][0][2] == "0.925 s"
    h = ref_views["sync_h"].data["curves"]
    adamw = sorted((r["H"], r["t_s"]) for r in h if r["variant"] == "adamw")
    assert adamw[0] == (1.0, pytest.approx(1.63, abs=0.005))
    assert all(b[1] < a[1] for a, b in zip(adamw, adamw[1:]))  # syncing less often never slows


def test_energy_view_sums_to_the_sweep(ref_views):
    e = ref_views["energy"]
    ds = bj.sweep(quantities=["energy_per_step_J", "steps_to_target"], budget="free")
    for vid in bj.variants.IDS:
        rows = common.pick([r for r in e.data["per_step"] if r["variant"] == vid],
                          enob="8", budget="free", basis="hypothesis")
        assert sum(r["J"] for r in rows) == pytest.approx(
            float(ds.energy_per_step_J.sel(variant=vid, energy="total")), rel=1e-6)
    hyp = [r for r in e.data["to_target"] if r["variant"] == "adamw"
           and r["budget"] in ("*", "free") and r["enob"] in ("*", "8")]
    total = float(ds.energy_per_step_J.sel(variant="adamw", energy="total")) * 400 / 1e3
    assert sum(r["kJ"] for r in hyp) == pytest.approx(total, rel=1e-6)


def test_cluster_view_draws_the_sections_numbers(reference_report, sweeps):
    sc = bj.reference()
    r = reference_report[1]
    v = {x.key: x for x in render.collect(sc, r, sweeps)}["cluster"]
    cl = r["cluster"]
    assert v.missing == []
    # K = 2 is the study's cluster on either topology (docs/model.md section 13): top-k 0.93 s at
    # 12.5 GB/s (docs/model.md section 12), stored once for both bases
    at2 = [row for row in v.data["times"] if row["K"] == 2 and row["variant"] == "topk"]
    assert [(row["topology"], row["basis"]) for row in at2] == [("ring", "*"), ("mesh", "*")]
    assert [row["t_s"] for row in at2] == [pytest.approx(0.93, abs=0.005)] * 2
    # only E' has times that depend on the basis (docs/model.md section 6)
    assert {row["variant"] for row in v.data["times"] if row["basis"] != "*"} == {"band_switch"}
    # every crossing the section found is a point, and a ring marks each (K, topology, basis)
    assert len(v.data["break_evens"]) == sum(len(cell) for e in cl["break_even_GBps"]
                                             for by_k in e["GBps"] for cell in by_k) > 0
    assert len(v.data["winners"]) == len(cl["dcs"]) * len(cl["topologies"]) * len(bj.BASES)
    # the conclusions follow the basis control, not ENOB or budget (the section is at the
    # scenario's), and every number in them has its unit
    assert v.by_setting["6|low|exact"] == v.by_setting["8|free|exact"] != v.by_setting["8|free|hypothesis"]
    for sentence in v.conclusion:
        assert len(sentence) < 200 and (" s at K = " in sentence or " GB/s (" in sentence), sentence
    # the table is the winners of results.md's, with the time in s
    w = cl["winner"]["exact"][-1][1]  # the largest K, mesh
    t = cl["time_to_target_s"]["exact"][w][-1][1]
    assert v.table["columns"][4] == "mesh, exact"
    assert v.table["rows"][-1][4] == f"{r['setup']['variants'][w]['short']} ({common.fmt_s(t)})"


def test_views_with_every_section_present(sweeps, reference_report):
    sc = bj.reference()
    vs = {v.key: v for v in render.collect(sc, fake_results(sc, reference_report[1]), sweeps)}
    bw = vs["bandwidth"]
    assert bw.missing == [] and len(bw.data["dots"]) == 12
    assert "differ from the closed forms by at most 0 " in bw.conclusion[-1]
    # a dot sits on its curve: same time to target at the same bandwidth and settings
    i = bw.data["start"]
    for dot in (d for d in bw.data["dots"] if d["GBps"] == 12.5):
        sel = {c: (dot[c] if dot[c] != "*" else {"basis": "hypothesis", "enob": "8", "budget": "free"}[c])
               for c in common.CONTROLS}
        assert dot["t_s"] == pytest.approx(_at(bw.data["curves"], dot["variant"], i, **sel)["t_s"], rel=1e-6)
    be = vs["breakeven"]
    assert be.missing == []
    assert [c["GBps"] for c in be.data["crossings"] if c["source"] == "root finder"] == [0.55]
    assert any(c.startswith("E' and top-k break even at 0.55 GB/s (4.4 Gb/s);") and
               c.endswith("(hypothesis basis).") for c in be.conclusion), be.conclusion
    # short sentences, one idea each
    assert all(len(c) < 200 and c.count(";") <= 1 for c in be.conclusion), be.conclusion
    assert be.data["enob_table"]["rows"] == [["E vs AdamW", "hypothesis", "4 bits", "6 bits", "9 bits"]]
    assert be.data["enob_table"]["columns"][2:] == ["0.1 GB/s", "1 GB/s", "10 GB/s"]
    sw = vs["shared_wan"]
    assert sw.missing == []
    assert sw.table["rows"][1][1] == "5 [4.8, 5.2]"
    assert len(sw.data["trace"]) == 3 * 20
    assert "At load 0.6 the mean steps take AdamW 7.5 ms (1.84x load 0)" in sw.conclusion[0]


def test_crossings_off_the_root_finders_settings_are_interpolated_on_the_curves(sweeps,
                                                                               reference_report):
    """Where the break-even section gave no crossing (another budget, another ENOB), the diamonds
    come from the ratio curves on the page; they agree with the root finder to the grid's
    interpolation error."""
    sc = bj.reference()
    vs = {v.key: v for v in render.collect(sc, fake_results(sc, reference_report[1]), sweeps)}
    cross = vs["breakeven"].data["crossings"]
    high = [c for c in cross if c["pair"] == "E' / AdamW" and c["enob"] == "8" and c["budget"] == "high"
            and c["basis"] == "hypothesis"]
    root = bj.break_even(sc.replace(budget_FLOPs=sc.budget_high_FLOPs), "E'", "AdamW").x[0] / 1e9
    # log-log interpolation between grid points 1/40 decade apart: well under 1e-3 relative
    assert [c["GBps"] for c in high] == [pytest.approx(root, rel=1e-3)]
    assert high[0]["source"].startswith("interpolated")
    # ENOB 6: E never reaches the target, and E' on either basis never takes fewer steps than E
    # (docs/model.md section 6, amended), so no in-transit pair crosses there
    six = [c for c in cross if c["enob"] == "6"]
    assert six == []
    assert vs["breakeven"].by_setting["6|free|exact"] != vs["breakeven"].by_setting["8|free|hypothesis"]


def test_conclusions_follow_the_controls(sweeps):
    sc = bj.reference()
    vs = {v.key: v for v in render.collect(sc, {}, sweeps)}
    bw = vs["bandwidth"]
    assert set(bw.by_setting) == {f"{e}|{b}|{s}" for e in ("8", "6") for b in ("free", "low", "high")
                                  for s in bj.BASES}
    # docs/model.md section 12: E' on the exact basis takes 2,667 x 3.726 ms = 9.94 s; at ENOB 6 the
    # hypothesis basis gives E' E's steps, which never reach the target
    assert "E and E': never reaches the target at this ENOB." in bw.by_setting["6|low|exact"] or \
        "E: never reaches the target at this ENOB." in bw.by_setting["6|low|exact"]
    assert "E and E': never reaches the target at this ENOB." in bw.by_setting["6|free|hypothesis"]
    assert bw.by_setting["8|free|hypothesis"][0] == bw.conclusion[0]
    h = vs["sync_h"].by_setting
    assert h["6|low|exact"] == h["8|free|hypothesis"]  # top-k and AdamW ignore the controls


def test_dot_deviation_is_measured_not_assumed(sweeps, reference_report):
    sc = bj.reference()
    res = fake_results(sc, reference_report[1])
    for p in res["shared_wan"]["load0_points"]:
        p["step_ms"] *= 1.01
    bw = bandwidth.bandwidth_view(sc, Results.of(res), sweeps)
    assert re.search(r"at most 0\.01 \(relative\)", bw.conclusion[-1])


# ------------------------------------------------------------------------------ the page


@pytest.fixture(scope="module")
def pages(tmp_path_factory, reference_report, sweeps):
    sc = bj.reference()
    out = tmp_path_factory.mktemp("explorer")
    empty = explorer.write(out / "empty", sc, results={}, sweeps=sweeps)
    full = explorer.write(out / "full", sc, results=full_results(sc, reference_report[1]),
                          sweeps=sweeps)
    return {"empty": empty, "full": full}


def test_page_is_self_contained_and_small(pages):
    for path in pages.values():
        text = path.read_text()
        assert path.stat().st_size < 5e6
        assert not re.search(r"<script[^>]*\bsrc=", text)
        assert "<link" not in text and "@import" not in text and "url(" not in text.split("<script>")[0]
        for sec in SECTIONS:
            assert f'<section id="{sec}">' in text


def test_cli_writes_the_page(tmp_path, monkeypatch, capsys, sweeps):
    # The page must build from whatever sections the report has; none here (the one pass of
    # the model is the session's: the page asks for it once)
    import bandjax.report as report
    from bandjax.report import passes

    monkeypatch.setattr(report, "SECTIONS", ())
    asked = []
    monkeypatch.setattr(passes, "compute", lambda sc: asked.append(sc) or sweeps)
    assert cli.main(["explore", "--out", str(tmp_path)]) == 0
    assert asked == [bj.reference()]
    page = tmp_path / "explorer.html"
    assert "wrote" in capsys.readouterr().out and page.stat().st_size > 1e5
    # break-evens (3 parts), shared WAN, load-0 dots, your cluster, the headline, how sure, what
    # bandwidth each method needs
    assert page.read_text().count("Not available yet.") == 9


def test_cli_rejects_a_bad_scenario(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[links]\nwan = "12.5 GHz"\n')
    assert cli.main(["explore", "--out", str(tmp_path), "--scenario", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "wan" in err and "GHz" in err
    assert not (tmp_path / "explorer.html").exists()


# ------------------------------------------------------------------------------ in a browser


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent: install it with `apt-get install -y chromium` to run "
                    "the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _open(browser, path, width=1300):
    page = browser.new_page(viewport={"width": width, "height": 900})
    log = {"errors": [], "requests": []}
    page.on("console", lambda m: log["errors"].append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: log["errors"].append(str(e)))

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            log["requests"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return page, log


def _charts_render(page) -> dict:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('div.chart')].map(d => {
        const svg = d.querySelector('svg');
        const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
        const marks = svg ? [...svg.querySelectorAll('g[class*="mark-"] path')]
            .filter(p => (p.getAttribute('d') || '').length > 10).length : 0;
        return [d.id, {w: box.width, h: box.height, marks}];
    }))""")


def _artifact(tmp_path, page, name):
    page.evaluate("() => window.scrollTo(0, 0)")  # the sticky header belongs at the top
    page.screenshot(path=str(tmp_path / name), full_page=True)
    out = os.environ.get("BANDJAX_ARTIFACTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / name, Path(out) / name)
    assert (tmp_path / name).stat().st_size > 50_000


def test_page_in_browser_offline(browser, pages, tmp_path):
    page, log = _open(browser, pages["empty"])
    try:
        charts = _charts_render(page)
        assert set(charts) == {f"chart-{k}" for k in ("bandwidth", "stages", "breakeven", "model",
                                                       "sync_h", "energy")}
        for cid, c in charts.items():
            assert c["w"] > 300 and c["h"] > 200 and c["marks"] >= 3, (cid, c)
        assert page.locator("p.missing").count() == 9  # as in test_cli_writes_the_page
        # pressing play sweeps the bandwidth: the readout and the marker move
        before = page.inner_text("#readout-bandwidth")
        assert "Winner at 12.5 GB/s: top-k (0.925 s" in before
        page.click("#play-bw")
        page.wait_for_function("() => !document.getElementById('bw-value').textContent.includes('12.5 GB/s')",
                               timeout=10_000)
        page.wait_for_timeout(300)
        page.click("#play-bw")
        assert page.inner_text("#readout-bandwidth") != before
        # the controls reach the readout: ENOB 6 never reaches the target, the exact basis is slower
        page.evaluate("() => { const s = document.getElementById('bw-slider'); s.value = PAGE.initial.bwi;"
                      " s.dispatchEvent(new Event('input')); }")
        page.select_option("#ctl-enob", "6")
        page.wait_for_function("() => document.getElementById('readout-bandwidth').textContent"
                               ".includes('never reaches the target')", timeout=5_000)
        # the conclusions follow the controls (ENOB 6: E never reaches the target) ...
        assert "E and E': never reaches the target at this ENOB." in page.inner_text("#bandwidth")
        page.select_option("#ctl-budget", "low")
        page.select_option("#ctl-basis", "exact")
        text = page.inner_text("#sync_h") + page.inner_text("#bandwidth")
        # exact basis: E' takes max(E's, C's) steps (docs/model.md s6, amended), so E' never with E
        assert "E and E': never reaches the target at this ENOB." in text
        # ... and the y axes fit what is drawn: the largest time the controls select, plus the
        # padding of 10 px (at most a factor 1.3 on these ~3 decades over 340 px)
        for chart, data, key in (("bandwidth", "curves", "t_s"), ("sync_h", "curves", "t_s"),
                                 ("breakeven", "ratios", "ratio")):
            top, most = page.evaluate(f"""() => [VIEWS.{chart}.scale('y').domain()[1], Math.max(
                ...SPECS.{chart}.datasets.{data}.filter(r => matches(r) && r.{key} !== null).map(r => r.{key}))]""")
            if most == -math.inf:  # nothing drawn at this setting (no ratio where E, E' never)
                assert math.isfinite(top), chart
                continue
            assert most <= top <= 1.3 * most, (chart, top, most)
        page.select_option("#ctl-budget", "free")
        page.select_option("#ctl-enob", "8")
        page.wait_for_function("() => document.getElementById('readout-bandwidth').textContent"
                               ".includes('9.94 s')", timeout=5_000)  # 2,667 x 3.726 ms
        page.select_option("#ctl-basis", "hypothesis")
        page.wait_for_timeout(200)
        _artifact(tmp_path, page, "explorer.png")
        assert log["errors"] == [] and log["requests"] == []
    finally:
        page.close()


def test_page_fits_a_narrow_window(browser, pages, tmp_path):
    page, log = _open(browser, pages["full"], width=800)
    try:
        assert page.evaluate("() => document.scrollingElement.scrollWidth <= window.innerWidth")
        # the cluster's charts stack, each as wide as the section allows, none cut
        for cid, c in _charts_render(page).items():
            if cid.startswith("chart-cluster"):
                assert 300 < c["w"] <= 800 and c["marks"] >= 15, (cid, c)
        _artifact(tmp_path, page, "explorer-800.png")
        # every legend is inside its chart's box, not cut off at its right edge
        cut = page.evaluate("""() => [...document.querySelectorAll('div.chart')].flatMap(d => {
            const box = d.getBoundingClientRect();
            return [...d.querySelectorAll('g.role-legend')].filter(
                g => g.getBoundingClientRect().right > box.right + 1).map(() => d.id); })""")
        assert cut == []
        assert log["errors"] == [] and log["requests"] == []
    finally:
        page.close()


def test_page_in_browser_with_every_section(browser, pages, tmp_path, reference_report):
    page, log = _open(browser, pages["full"])
    try:
        # the hollow load-0 circles have a legend
        assert "shared-WAN engine at load 0 (hollow circles)" in page.inner_text("#chart-bandwidth")
        diamonds = ("() => document.querySelectorAll('#chart-breakeven g.mark-symbol.role-mark path')"
                    ".length")
        shown = "() => SPECS.breakeven.datasets.crossings.filter(matches)"
        # ENOB 6: E never reaches the target, and E' never takes fewer steps than E on either
        # basis (docs/model.md section 6, amended: max(E's, the exact band's) on the exact basis), so
        # no in-transit variant has a ratio there and no diamond is drawn
        page.select_option("#ctl-enob", "6")
        page.select_option("#ctl-basis", "exact")
        page.wait_for_timeout(200)
        assert page.evaluate(diamonds) == page.evaluate(shown + ".length") == 0
        assert "No break-even in 0.1 to 1,000 GB/s" in page.inner_text("#breakeven .conclusions")
        # diamonds where the root finder did not run: the break-even section gives E' / top-k on
        # the hypothesis basis only, so on the exact basis its crossing comes from the curves
        page.select_option("#ctl-enob", "8")
        page.wait_for_timeout(200)
        assert page.evaluate(diamonds) == page.evaluate(shown + ".length") >= 1
        assert page.evaluate(shown + ".every(c => c.source.startsWith('interpolated'))")
        assert "E' and top-k break even at" in page.inner_text("#breakeven .conclusions")
        page.select_option("#ctl-basis", "hypothesis")
        page.wait_for_timeout(200)
        charts = _charts_render(page)
        for cid in ("chart-shared_wan_steps", "chart-shared_wan_trace"):
            assert charts[cid]["w"] > 300 and charts[cid]["marks"] >= 2, (cid, charts[cid])
        # the ENOB break-evens are a table with units; the crossing is a diamond on the ratios
        enob = page.inner_text("#breakeven")
        assert "Lowest ENOB that still wins" in enob and "6 bits" in enob and "10 GB/s" in enob
        # one diamond per crossing at the controls' setting (the root finder's and the curves')
        assert page.evaluate("() => document.querySelectorAll('#chart-breakeven g.mark-symbol.role-mark path')"
                             ".length") == page.evaluate(
            "() => SPECS.breakeven.datasets.crossings.filter(matches).length") >= 2
        assert page.locator("p.missing").count() == 0
        # the load-0 dots are drawn on the bandwidth chart
        dots = page.evaluate("() => document.querySelectorAll('#chart-bandwidth g.mark-symbol path').length")
        assert dots >= 4
        before = page.inner_text("#readout-trace")
        assert before.startswith("t = 0 ms")
        page.click("#play-trace")
        page.wait_for_function("() => !document.getElementById('readout-trace').textContent"
                               ".startsWith('t = 0 ms')", timeout=5_000)
        _check_headline_and_cluster(page, full_results(bj.reference(), reference_report[1]))
        _artifact(tmp_path, page, "explorer-all-sections.png")
        assert log["errors"] == [] and log["requests"] == []
    finally:
        page.close()


def test_page_draws_the_probability_of_winning(browser, pages, tmp_path, reference_report, sweeps,
                                               uncertain_section):
    # With uncertain inputs the section draws each compared pair's probability of winning against
    # bandwidth and its break-even interval, and its words follow the basis control. Reference:
    # the section's own results (bandjax.uncertainty on a fixed seed, tests/conftest.py).
    sc, u = uncertain_section
    u = u["uncertainty"]
    results = {**full_results(sc, reference_report[1]), "uncertainty": u}
    path = explorer.write(tmp_path / "sure", sc, results=results, sweeps=sweeps)
    # without uncertain inputs (the reference report's section): words, no chart
    plain, _ = _open(browser, pages["full"])
    try:
        assert "chart-uncertainty" not in _charts_render(plain)
        assert "point value" in plain.inner_text("#uncertainty")
    finally:
        plain.close()
    page, log = _open(browser, path)
    try:
        chart = _charts_render(page)["chart-uncertainty"]
        pairs = {(e["a"], e["b"]) for e in u["break_even_GBps"]}
        assert chart["w"] > 300 and chart["h"] > 200 and chart["marks"] >= len(pairs), chart
        svg = page.inner_text("#chart-uncertainty")
        for words in ("probability the first of the pair wins", "(GB/s, log)", "E' vs AdamW",
                      "scenario: 12.5 GB/s", "5% to 95% of samples"):
            assert words in svg, words
        # the curves are the section's numbers, on the basis the control selects
        for basis in bj.BASES:
            page.select_option("#ctl-basis", basis)
            page.wait_for_timeout(200)
            e = next(e for e in u["break_even_GBps"] if (e["a"], e["b"]) == ("band_switch", "adamw")
                     and e["basis"] == basis)
            drawn = page.evaluate("() => SPECS.uncertainty.datasets.p_wins.filter(r => r.pair === "
                                  "\"E' vs AdamW\" && (r.basis === '*' || r.basis === STATE.basis))"
                                  ".map(r => r.p)")
            assert drawn == pytest.approx(e["p_a_wins"], abs=1e-6)
            lo, _, hi = e["monte_carlo_5_50_95"]
            text = page.inner_text("#uncertainty .conclusions")
            assert f"between {common.g3(lo)} and {common.g3(hi)} GB/s" in text, (basis, text)
        # the interval bars sit across 50%: one per pair and basis that crosses in range
        bars = page.evaluate("() => SPECS.uncertainty.datasets.intervals.filter(r => r.p === 0.5).length")
        assert bars == sum(1 for e in u["break_even_GBps"] if e["monte_carlo_5_50_95"][0] is not None)
        _artifact(tmp_path, page, "explorer-uncertainty.png")
        assert log["errors"] == [] and log["requests"] == []
    finally:
        page.close()


def test_page_shows_what_bandwidth_each_method_needs(browser, pages, tmp_path, reference_report):
    """The section's chart renders with its units, its table holds the section's typed numbers and
    its words are on the page. Reference: the reference report's own section (results.json)."""
    from bandjax.report.sections import need

    r = Results.of(reference_report[1]).need
    page, log = _open(browser, pages["full"])
    try:
        chart = _charts_render(page)["chart-need"]
        # a line per variant, at least
        assert chart["w"] > 300 and chart["h"] > 200 and chart["marks"] >= len(r.variants), chart
        svg = page.inner_text("#chart-need")
        for words in ("WAN bandwidth per directed link (GB/s, log)",
                      "compute utilisation (GPU compute / step, %)", "90%", "100%",
                      "scenario: 12.5 GB/s (100 Gbit/s)", "90% target", "S-DiLoCo FP4", "DiLoCo"):
            assert words in svg, words
        # the curves and dots drawn are the section's numbers
        drawn = page.evaluate("() => SPECS.need.datasets.curves.filter(r => r.variant === 'diloco')"
                              ".map(r => r.cu)")
        assert drawn == pytest.approx([u for u in r.compute_utilisation["diloco"] if u is not None],
                                      abs=1e-12)
        dots = page.evaluate("() => document.querySelectorAll('#chart-need g.mark-symbol.role-mark path')"
                             ".length")
        i = r.utilisation.index(need.WORDS_AT)
        assert dots == sum(s[i] == "reached" for s in r.status.values()) >= 1
        # the table: a row per variant, a cell per target, equal to the typed result's
        cells = page.evaluate("""() => [...document.querySelectorAll('#need table.data tbody tr')]
            .map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))""")
        assert [row[0] for row in cells] == [v["short"] for v in r.variants.values()]
        for row, (vid, v) in zip(cells, r.variants.items()):
            assert row[1:4] == [f"{v['sync_every']:g}", str(v["fragments"]), str(v["delay"])]
            for j, u in enumerate(r.utilisation):
                text, GBps = row[4 + j], r.required_GBps[vid][j]
                if r.status[vid][j] == "not_reachable":
                    assert text.startswith("not reachable: ") and GBps is None, (vid, u, text)
                    continue
                shown = float(text.removeprefix("below ").split(" GB/s")[0].replace(",", ""))
                assert shown == pytest.approx(GBps, rel=5e-3), (vid, u, text)
                # an exact answer outside the range asked says where it lies (need.cell)
                where = {"below_range": ", below the range", "above_range": ", over the range"}
                assert text.endswith(f"({common.g3(8 * GBps)} Gbit/s){where.get(r.status[vid][j], '')}"), \
                    (vid, u, text)
        assert page.inner_text("#need table.data thead").split("\t")[4:9] == [
            "for 50%", "for 80%", "for 90%", "for 95%", "for 99%"]
        # the conclusions and the delay assumption are on the page
        text = page.inner_text("#need")
        assert r.conclusions and all(c in text for c in r.conclusions)
        assert "S-DiLoCo FP4 (tau = 1 step), is assumed not to change steps to target" in text
        _artifact(tmp_path, page, "explorer-need.png")
        assert log["errors"] == [] and log["requests"] == []
    finally:
        page.close()


def _check_headline_and_cluster(page, results):
    """The headline says what results.md says; the cluster section draws its four charts with
    units, rings each K's winner, and its conclusions follow the basis control."""
    from bandjax.report.sections import headline

    text = page.inner_text("#headline")
    lines = headline.lines(results)
    assert lines and all(line in text for line in lines)
    cl = results["cluster"]
    charts = _charts_render(page)
    ids = [f"chart-cluster_{kind}_{t}" for kind in ("time", "break_even") for t in cl["topologies"]]
    assert [c for c in charts if c.startswith("chart-cluster")] == ids
    n = len(cl["dcs"])
    for cid in ids:
        # a line per variant or pair with a point at each K: at least one K's worth of marks
        assert charts[cid]["w"] > 300 and charts[cid]["h"] > 200 and charts[cid]["marks"] >= n, (cid, charts[cid])
    svg = page.inner_text("#chart-cluster_time_ring") + page.inner_text("#chart-cluster_break_even_mesh")
    for words in ("data centres K", "time to target (s, log)", "(GB/s, log)",
                  "fastest to target at this K", "scenario: 12.5 GB/s"):
        assert words in svg, words
    # one ring per K and topology: the winners the section reports, on the basis shown
    basis = page.evaluate("() => STATE.basis")
    rings = page.evaluate("() => SPECS.cluster_time_ring.datasets.winners.filter("
                          "r => r.basis === STATE.basis && r.topology === 'ring').map(r => r.short)")
    assert rings == [_short(results, cl["winner"][basis][i][0]) for i in range(n)]
    # the conclusions follow the basis: E' vs AdamW's break-even at the smallest K on each basis
    for basis in bj.BASES:
        page.select_option("#ctl-basis", basis)
        page.wait_for_timeout(200)
        e = next(e for e in cl["break_even_GBps"] if (e["a"], e["b"], e["basis"]) ==
                 ("band_switch", "adamw", basis))
        assert common.fmt_GBps(e["GBps"][0][0][0]) in page.inner_text("#cluster .conclusions")
    page.select_option("#ctl-basis", "hypothesis")
    page.wait_for_timeout(200)


def _short(results, vid):
    return results["setup"]["variants"][vid]["short"]


def test_grid_and_formatting():
    g = bandwidth.bandwidth_grid_GBps(bj.reference())
    assert g[0] == pytest.approx(0.1) and g[-1] == pytest.approx(1000.0)
    assert np.all(np.diff(np.log10(g)) <= 1 / bandwidth.POINTS_PER_DECADE + 1e-9)
    assert common.fmt_s(1612.85) == "1,613 s" and common.fmt_s(0.9254) == "0.925 s"
    assert common.fmt_s(math.inf) == "never" and common.fmt_s(None) == "not available"
    assert common.count(8.03e9) == "8.03 B"


def test_the_point_is_read_off_the_curves_at_the_scenarios_own_wan():
    # the report's values at the scenario's WAN come from the curves' sweep: its grid holds that
    # WAN exactly (not rounded), and the point is what a sweep at that WAN alone gives
    from bandjax.report import passes

    sc = bj.reference().replace(wan_Bps=12.3456789012345e9, budget_FLOPs=77e9)
    g = passes.bandwidth_grid_GBps(sc)
    wan = float(sc.wan_Bps) / 1e9
    assert np.sum(g == wan) == 1 and np.all(np.abs(g[g != wan] / wan - 1) > 1e-9)
    sw = passes.compute(sc)
    assert float(sw.point.bandwidth) == wan and sw.budgets[-1] == "77"
    alone = bj.sweep(sc, bandwidth=wan, enob=[float(e) for e in sw.enobs],
                     budget=[arg for _, arg, _ in passes.budget_options(sc)],
                     basis=list(bj.BASES), quantities=passes.POINT)
    for q in passes.POINT:
        np.testing.assert_allclose(sw.point[q].values, alone[q].values, rtol=1e-15, atol=0,
                                   err_msg=q)
    assert set(sw.bandwidth.data_vars) == set(passes.CURVE)


def test_breakeven_view_with_the_sections_results(reference_report, sweeps):
    """Crossings, the ENOB table and the sensitivities from the break-even section's own output
    (in the session's reference report)."""
    sc = bj.reference()
    results = reference_report[1]
    bw = bandwidth.bandwidth_view(sc, Results(), sweeps)
    be = breakeven.breakeven_view(sc, Results.of(results), bw)
    # E' vs AdamW: the root finder's crossing on each basis, at [free], ENOB 8
    free = [c for c in be.data["crossings"] if c["pair"] == "E' / AdamW" and c["budget"] == "free"
            and c["enob"] == "8"]
    for basis in bj.BASES:
        x = bj.break_even(sc, "E'", "AdamW", basis=basis).x[0] / 1e9
        assert [c["GBps"] for c in free if c["basis"] == basis] == [pytest.approx(x, rel=1e-6)]
    assert all(c["enob"] == "8" for c in free)
    # a pair without E' holds "*" for the basis, so a chart's filter keeps it on both bases
    cp = [c for c in be.data["crossings"] if c["pair"] == "E / C"]
    assert cp and all(c["basis"] == "*" for c in cp)
    # only an in-transit variant against one that is not is drawn
    assert {r["pair"] for r in be.data["ratios"]} == {
        f"{a} / {b}" for a in ("E", "E'") for b in ("AdamW", "top-k", "C", "C'")}
    # every pair is in the table, with GB/s and Gb/s
    rows = {(r[0], r[1]): r for r in be.data["crossings_table"]["rows"]}
    assert len(rows) == len(results["break_even_GBps"])
    assert rows[("E' vs AdamW", "hypothesis")][2:] == ["1.57 GB/s (12.5 Gb/s)", "E'", "AdamW"]
    assert all("bits" in c or c == "-" for r in be.data["enob_table"]["rows"] for c in r[2:])
    # sensitivities: one row per break-even, the hardware number that moves it most, elasticities
    # recomputed by the library
    sens = {r[0]: r for r in be.data["sensitivity_table"]["rows"]}
    _, el = bj.elasticities(sc, "E'", "AdamW", basis="hypothesis")
    # parameters by their display names (bandjax.names), not their field names
    assert sens["E' vs AdamW (hypothesis basis)"][3] == f"optics sample rate {float(el['optics_Sps'][0]):+.3g}"
    assert sens["E' vs AdamW (hypothesis basis)"][2].startswith(
        f"steps to target of the first variant {float(el['steps_a'][0]):+.3g}; "
        f"steps to target of the second variant {float(el['steps_b'][0]):+.3g}")
    assert not any("_" in cell for row in be.data["sensitivity_table"]["rows"] for cell in row)
    assert "e-" not in sens["budget where compute stops binding"][2]  # rounding left out
    assert any("optics sample rate moves" in c and "of them most" in c for c in be.conclusion)


def test_explore_reuses_a_report_for_the_same_scenario_only(tmp_path, capsys, monkeypatch,
                                                          reference_report, sweeps):
    from bandjax.cli import main
    from bandjax.report import passes

    shutil.copytree(reference_report[0], tmp_path / "rep")  # a report as `bandjax report` writes it
    results = tmp_path / "rep" / "results.json"
    asked = []  # the page's one pass of the model: the session's, for the same scenario
    monkeypatch.setattr(passes, "compute", lambda sc: asked.append(sc) or sweeps)
    assert main(["explore", "--out", str(tmp_path / "x"), "--results", str(results)]) == 0
    assert asked == [bj.reference()]
    html = (tmp_path / "x" / "explorer.html").read_text()
    # the report's shared-WAN runs, break-evens, headline and cluster reached the page
    assert "The shared-WAN engine's results: not available yet" not in html
    assert "not available yet (results key break_even_GBps)" not in html
    assert "Not available yet." not in html and '<div id="headline" class="headline"><h2>' in html
    other = tmp_path / "other.toml"
    bj.save(bj.reference().replace(wan_Bps=50e9), other)
    assert main(["explore", "--out", str(tmp_path / "y"), "--results", str(results),
                 "--scenario", str(other)]) == 2
    assert "written for another scenario" in capsys.readouterr().err
    assert not (tmp_path / "y" / "explorer.html").exists()
    assert main(["explore", "--out", str(tmp_path / "z"), "--results", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    # a renamed key is one line naming it, never a page that calls the part "not available yet"
    written = json.loads(results.read_text())
    for change, says in [(lambda r: r.__setitem__("inverses", r.pop("inverse")),
                          ["BreakEvens section", "missing 'inverse'", "not known 'inverses'"]),
                         (lambda r: r["cluster"].__setitem__("K", r["cluster"].pop("dcs")),
                          ["results key 'cluster'", "missing 'dcs'", "not known 'K'"]),
                         (lambda r: r.__setitem__("shared_wan", [1, 2]),
                          ["results key 'shared_wan'", "expected an object, got list"])]:
        bad = json.loads(json.dumps(written))
        change(bad)
        renamed = tmp_path / "renamed.json"
        renamed.write_text(json.dumps(bad))
        assert main(["explore", "--out", str(tmp_path / "w"), "--results", str(renamed)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a bandjax report" in err, err
        assert all(s in err for s in says), err
        assert not (tmp_path / "w" / "explorer.html").exists()
