"""The shared-WAN report section (the keys the explorer page reads) and ``bandjax wan``."""

import json

import numpy as np
import pytest

import bandjax
from bandjax import cli, variants
from bandjax.queueing import ACCURACY_BY_CLUSTER, ACCURACY_UP_TO_SPLIT_BY_CLUSTER, accuracy
from bandjax.report import _json_ready
from bandjax.report.sections import shared_wan
from bandjax.report.sections import Results

SMALL = {"shared_wan": {"steps": 20, "seeds": 2, "scheduler": "inline", "progress": False}}


@pytest.fixture(scope="module")
def results():
    return _json_ready(shared_wan.build(bandjax.reference(), dict(SMALL)).to_json())


def test_section_has_the_page_contract(results):
    r = results["shared_wan"]
    json.dumps(r, allow_nan=False)
    assert r["seed"] == 0 and r["loads"] == [0.0, 0.5, 0.9] and r["steps"] == 20 and r["seeds"] == 2
    for key in ("step_ms", "mean_step_ms", "ci95_ms", "growth", "approx_step_ms"):
        assert sorted(r[key]) == sorted(variants.IDS), key
        assert all(len(v) == 3 for v in r[key].values()), key
    assert r["approx_accuracy"] == accuracy(bandjax.reference())["accuracy"]
    assert (r["dcs"], r["topology"], r["links"]) == (2, "ring", 2)
    closed = np.asarray(bandjax.step_s(bandjax.reference())) * 1e3
    for i, vid in enumerate(variants.IDS):
        assert r["step_ms"][vid][0] == pytest.approx(closed[i], rel=1e-9)
        assert r["growth"][vid][0] == pytest.approx(1.0, rel=1e-12)
        assert r["growth"][vid][2] > r["growth"][vid][1] > 1.0
        lo, hi = r["ci95_ms"][vid][2]
        assert lo <= r["mean_step_ms"][vid][2] <= hi
    t = r["trace"]
    assert t["variant"] == "adamw" and t["load"] == 0.9 and t["bandwidth_GBps"] == 12.5
    n = len(t["t_ms"])
    assert n > 10 and len(t["queue_out"]) == len(t["queue_in"]) == len(t["sync_bytes_left"]) == n
    assert max(t["sync_bytes_left"]) <= 2 * 4 * 7_916_736 + 1e-6  # both directions' G
    points = r["load0_points"]
    assert len(points) == 5 * len(variants.IDS)
    assert {p["GBps"] for p in points} == {0.5, 2.0, 12.5, 100.0, 500.0}
    assert r["load0_max_rel_err"] < 1e-9
    adamw = next(p for p in points if p["variant"] == "adamw" and p["GBps"] == 12.5)
    # docs/model.md section 12: AdamW 1.63 s to target at 100 GbE (400 steps)
    assert adamw["time_to_target_s"] == pytest.approx(1.63, abs=0.005)
    assert adamw["basis"] == "hypothesis"


def test_markdown_names_assumptions_and_units(results):
    md = shared_wan.markdown(results)
    assert "## Shared WAN" in md and "95% interval" in md and "ms" in md
    assert "1 MB" in md and "d calibrated" in md
    assert md.count("\n| ") == 1 + len(variants.IDS)
    # the approximation's measured worst error per cluster, up to load 0.9 and to 0.95
    # (bandjax.queueing.ACCURACY_UP_TO_SPLIT_BY_CLUSTER, ACCURACY_BY_CLUSTER)
    for key, name in [((2, "ring"), "K = 2"), ((8, "mesh"), "K = 8 mesh")]:
        assert (f"{name} {ACCURACY_UP_TO_SPLIT_BY_CLUSTER[key]:.0%} / "
                f"{ACCURACY_BY_CLUSTER[key]:.0%}") in md
    assert "load-0 step" in md


def test_cli_wan_prints_a_row_per_variant_and_load(capsys):
    code = cli.main(["wan", "--load", "0", "0.5", "--steps", "5", "--seeds", "2",
                     "--variant", "adamw", "band_switch", "--scheduler", "inline"])
    out = capsys.readouterr().out
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith(("adamw", "band_switch"))]
    assert len(rows) == 4
    step0 = float(rows[0].split()[2])
    assert step0 == pytest.approx(4.075, abs=0.0005)  # docs/model.md section 12


@pytest.mark.parametrize("argv,match", [
    (["--load", "1.0"], "--load 1: must be in [0, 1)"),
    (["--steps", "0"], "--steps 0: must be a whole number of steps in 1 .."),
    (["--bandwidth", "0"], "--bandwidth 0 GB/s: must be a finite number of GB/s > 0"),
])
def test_cli_wan_bad_input(capsys, argv, match):
    code = cli.main(["wan", "--scheduler", "inline", *argv])
    assert code == 2
    assert match in capsys.readouterr().err


def test_one_seed_has_no_interval_and_says_so():
    assert all(np.isnan(shared_wan.ci95([4.0])))
    # three samples: mean -/+ t(0.975, 2) s / sqrt(3), t(0.975, 2) = 4.302653 (Student t table)
    lo, hi = shared_wan.ci95([1.0, 2.0, 3.0])
    assert (lo, hi) == pytest.approx((2 - 4.302653 / np.sqrt(3), 2 + 4.302653 / np.sqrt(3)), rel=1e-6)
    one = _json_ready(shared_wan.build(bandjax.reference(), {
        "shared_wan": {**SMALL["shared_wan"], "seeds": 1, "loads": [0.0, 0.9]}}).to_json())
    assert one["shared_wan"]["ci95_ms"]["adamw"] == [[None, None], [None, None]]
    assert "[n/a: one seed]" in shared_wan.markdown(one)

    view = shared_wan.shared_wan_view(bandjax.reference(), Results.of(one))
    assert all(r["lo_ms"] is None for r in view.data["steps"])


def test_cli_wan_growth_is_against_load0_and_takes_labels_dcs_topology(capsys):
    # loads without 0: growth is still the mean over the closed-form (load-0) step
    code = cli.main(["wan", "--load", "0.5", "--steps", "5", "--seeds", "2", "--variant", "E",
                     "AdamW", "--dcs", "3", "--topology", "mesh", "--scheduler", "inline"])
    out = capsys.readouterr().out
    assert code == 0
    assert "3 DCs, mesh: 6 directed WAN links" in out and "load-0 step" in out
    sc = bandjax.reference().replace(dcs=3.0, topology=1.0)
    closed = np.asarray(bandjax.step_s(sc)) * 1e3
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("adamw", "band_pluggable"))}
    assert sorted(rows) == ["adamw", "band_pluggable"]
    for vid, cells in rows.items():
        mean, growth = float(cells[4]), float(cells[-2])
        assert growth == pytest.approx(mean / closed[sc.ids.index(vid)], abs=0.006)
        assert growth > 1.0


@pytest.mark.parametrize("argv,match", [
    (["--dcs", "1"], "--dcs 1: must be a whole number of data centres in 2 .. 1000"),
    (["--variant", "Z"], "--variant Z: variant = 'Z' is not known; allowed: adamw (AdamW)"),
    (["--variant", "E", "band_pluggable"], "give each variant once"),
])
def test_cli_wan_bad_cluster_or_variant(capsys, argv, match):
    code = cli.main(["wan", "--scheduler", "inline", "--steps", "2", *argv])
    assert code == 2
    assert match in capsys.readouterr().err


def test_section_runs_on_the_scenarios_cluster():
    sc = bandjax.reference().replace(dcs=4.0, topology=1.0, wan_latency_s=1e-3)
    r = _json_ready(shared_wan.build(sc, {"shared_wan": {**SMALL["shared_wan"], "seeds": 2,
                                                          "loads": [0.0, 0.5]}}).to_json())["shared_wan"]
    assert (r["dcs"], r["topology"], r["links"]) == (4, "mesh", 12)
    closed = np.asarray(bandjax.step_s(sc)) * 1e3
    for i, vid in enumerate(sc.ids):
        # docs/model.md section 13: at load 0 the engine is the closed form, latency included
        assert r["step_ms"][vid][0] == pytest.approx(closed[i], rel=1e-12)
        assert r["growth"][vid][0] == pytest.approx(1.0, rel=1e-12)
    assert "4 DCs joined as a mesh: each of the 12 directed WAN links" in shared_wan.markdown(
        {"shared_wan": r})
    # the section's options choose another cluster than the scenario's
    r2 = shared_wan.build(sc, {"shared_wan": {**SMALL["shared_wan"], "seeds": 2, "loads": [0.0],
                                              "dcs": 2, "topology": "ring"}}).to_json()["shared_wan"]
    assert (r2["dcs"], r2["links"]) == (2, 2)


def test_runs_started_before_the_report_loads_are_taken_by_the_section(monkeypatch):
    """`bandjax report` starts the section's runs in worker processes before it loads jax and
    the report (bandjax._wan_runs.start_early); the section takes those runs (not started
    again) and gives what it gives when it starts them itself, bit for bit."""
    from bandjax import _wan_runs

    sc = bandjax.reference()
    opts = {"steps": 20, "seeds": 2, "progress": False}
    monkeypatch.setattr(_wan_runs, "SCHEDULER", None)  # the default: worker processes
    itself = _json_ready(shared_wan.build(sc, {"shared_wan": dict(opts)}).to_json())
    started = []
    real = _wan_runs.start_runs
    monkeypatch.setattr(_wan_runs, "start_runs", lambda *a: started.append(a) or real(*a))
    monkeypatch.setattr(shared_wan, "start_runs", _wan_runs.start_runs)
    ctx = {"shared_wan": dict(opts)}
    try:
        _wan_runs.start_early(sc, ctx)
        early = ctx[_wan_runs.STARTED]
        assert early["runs"] is not None and len(started) == 1
        shared_wan.start(sc, ctx)  # what the report does first
        assert ctx[_wan_runs.STARTED] is early and len(started) == 1  # taken, not started anew
        got = _json_ready(shared_wan.build(sc, ctx).to_json())
    finally:
        shared_wan.close(ctx)
    assert got == itself
    # runs started for another scenario, or with other options, are stopped and not taken
    for other, o in ((sc.replace(wan_Bps=1e9), opts), (sc, {**opts, "seeds": 3})):
        ctx = {"shared_wan": dict(opts)}
        _wan_runs.start_early(sc, ctx)
        stack = ctx[_wan_runs.STARTED]["stack"]
        closed = []
        stack.callback(closed.append, True)
        ctx["shared_wan"] = dict(o)
        assert _wan_runs.adopt(other, ctx) is None
        assert closed == [True] and _wan_runs.STARTED not in ctx
    # inline runs (the tests' small reports) are not started early: the section runs them
    ctx = {"shared_wan": {**opts, "scheduler": "inline"}}
    _wan_runs.start_early(sc, ctx)
    assert _wan_runs.STARTED not in ctx
