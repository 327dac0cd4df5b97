"""The benchmark baselines compute what bandjax computes, and the quick run writes every figure.

No timing is asserted: shared machines are noisy. What is asserted is that the comparison is
honest (the baselines agree with bandjax to 1e-12 relative) and that the results file is complete.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bandjax
from bandjax import variants as _v
from benchmarks import __main__ as bench_main
from benchmarks import common, numpy_baseline, scalar_baseline
from benchmarks import sweep as sweep_bench

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-12
BW = np.geomspace(0.1, 1000.0, 23)
BUDGET = np.array([1.0, 10.0, 99.0, 140.0, 500.0, np.inf])

SCENARIOS = {
    "reference": bandjax.reference(),
    "H=4, n=1": bandjax.reference().replace(sync_every_H=4.0, workers_per_dc=1.0),
    "llama3-8b": bandjax.reference().at_model_size(bandjax.PRESETS["llama3-8b"]),
    "enob 6 (never)": bandjax.reference().replace(enob=6.0),
    "other hardware": bandjax.reference().replace(qsfp_port_Bps=50e9, optics_Sps=1e9, fpga_Bps=5e9,
                                                  module_W=20.0, workers_per_dc=16.0),
}


def _bandjax(sc, basis="hypothesis"):
    ds = bandjax.sweep(sc, bandwidth=BW, budget=BUDGET, basis=basis,
                       quantities=numpy_baseline.QUANTITIES)
    return {q: ds[q].values for q in numpy_baseline.QUANTITIES}


def _assert_close(actual, expected, what):
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    assert actual.shape == expected.shape, what
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=what)
    ok = ~np.isnan(expected)
    np.testing.assert_allclose(actual[ok], expected[ok], rtol=RTOL, atol=0, err_msg=what)


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("basis", bandjax.BASES)
def test_numpy_baseline_agrees_with_bandjax(name, basis):
    sc = SCENARIOS[name]
    expected = _bandjax(sc, basis)
    got = numpy_baseline.sweep(sc, BW, BUDGET, basis)
    for q in numpy_baseline.QUANTITIES:
        _assert_close(got[q], expected[q], f"{name} {basis} {q}")


@pytest.mark.parametrize("name", SCENARIOS)
def test_scalar_baseline_agrees_with_bandjax(name):
    sc = SCENARIOS[name]
    expected = _bandjax(sc)
    cells = [(i, j, v) for i in range(0, len(BW), 5) for j in range(len(BUDGET))
             for v in range(len(_v.IDS))]
    got = np.array(scalar_baseline.sweep_cells(sc, BW, BUDGET, cells))
    for k, q in enumerate(numpy_baseline.QUANTITIES):
        want = np.array([expected[q][i, j, v] for i, j, v in cells])
        _assert_close(got[:, k], want, f"{name} {q}")


def test_reference_figures_through_the_baseline():
    # docs/model.md section 12: AdamW step 4.075 ms and C 1.443 ms at 100 GbE (12.5 GB/s), [free].
    out = numpy_baseline.sweep(bandjax.reference(), [12.5], [np.inf])
    assert out["step_s"][0, 0, _v.IDS.index("adamw")] == pytest.approx(4.075e-3, abs=0.5e-6)
    assert out["step_s"][0, 0, _v.IDS.index("band_gpu")] == pytest.approx(1.443e-3, abs=0.5e-6)
    assert out["time_to_target_s"][0, 0, _v.IDS.index("adamw")] == pytest.approx(1.63, abs=0.005)


def test_dense_grid_sizes():
    for cells in (1e4, 1e5, 1e6, 1e7, 1e8, 1e9):
        bw, bud = sweep_bench.grid_for(cells)
        assert sweep_bench.cells_of(bw, bud) == pytest.approx(cells, rel=0.01)


def test_measure_needs_five_runs_and_reports_spread():
    with pytest.raises(ValueError, match="repeat = 3"):
        common.measure(lambda: None, repeat=3)
    t = common.measure(lambda: sum(range(1000)), repeat=5)
    assert t["n"] == 5 and len(t["runs_s"]) == 5
    assert t["min_s"] <= t["median_s"] <= t["max_s"]
    assert t["median_s"] == pytest.approx(float(np.median(t["runs_s"])), rel=0, abs=0)


def test_fit_exponent_recovers_a_power_law():
    cells = np.array([1e5, 1e6, 1e7, 1e8])
    assert common.fit_exponent(cells, 3e-9 * cells) == pytest.approx(1.0, abs=1e-12)
    assert common.fit_exponent(cells, 1e-12 * cells**1.5) == pytest.approx(1.5, abs=1e-12)
    assert math.isnan(common.fit_exponent([1e5], [1.0]))


def test_peak_rss_sees_a_new_allocation():
    before = common.peak_rss_B()
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    block = np.ones((before - rss + 192 * 2**20) // 8)  # touched: 192 MiB above the old peak
    assert common.peak_rss_B() - before >= 128 * 2**20
    del block


def test_fraction_of_bandwidth_is_copy_time_over_sweep_time():
    # 1e6 cells write 24 MB; a copy at 48 GB/s (read + write) of 24 MB takes 1 ms.
    membw = {"warm": {"Bps": 48e9}}
    assert sweep_bench.fraction_of_bw(1_000_000, 4e-3, membw) == pytest.approx(0.25, rel=1e-12)


def test_wrapper_cost_is_the_sweep_less_its_core_paired(monkeypatch):
    # each run times the sweep and then its core; the wrapper is the median of the differences
    ticks = iter(np.arange(0, 1000, 1.0))  # a clock advancing 1 s per reading
    monkeypatch.setattr(sweep_bench.time, "perf_counter", lambda: float(next(ticks)))
    w = sweep_bench.wrapper_cost(cells=1200, budgets=(10, 100), repeat=5)
    assert list(w) == ["10", "100"]
    for n_budget, x in w.items():
        assert x["budgets"] == int(n_budget)
        assert x["cells"] == x["budgets"] * x["bandwidths"] * len(_v.IDS)
        assert x["sweep"]["n"] == x["core"]["n"] == x["wrapper_s"]["n"] == 5
        # every timed call reads the clock twice: 1 s each, so sweep - core = 0 exactly
        assert x["wrapper_s"]["median_s"] == 0.0 and x["fraction_of_core"] == 1.0
        new = x["new_axes"]
        assert new["sweep"]["n"] == new["wrapper_s"]["n"] == 5
        assert new["wrapper_s"]["median_s"] == 0.0 and new["fraction_of_core"] == 1.0
    assert w["10"]["bandwidths"] == 20 and w["100"]["bandwidths"] == 2


def test_table_shows_floor_and_wrapper():
    size = {"cells": 1e6, **{who: {"cells_per_s": r, "ratio_numpy": 2.0, "ratio_python": 300.0,
                                   "compile_s": 0.3}
                             for who, r in (("sweep", 6e7), ("core", 8e7), ("floor", 1e8),
                                            ("numpy", 3e7), ("python", 2e5))}}
    bw = {"Bps": 4e10}
    sweep = {"sizes": [size], "memory_bw": {"warm": bw, "fresh": bw}, "fit_from_cells": 1e4,
             "headline_cells": 1e6, "scaling_exponent": 1.0, "fraction_of_memory_bw": 0.3,
             "fraction_of_floor": 0.6, "core": {"scaling_exponent": 1.0, "fraction_of_memory_bw": 0.4,
                                                "fraction_of_floor": 0.8},
             "floor": {"fraction_of_memory_bw": 0.5},
             "wrapper": {"10": {"cells": 1e5, "wrapper_s": {"median_s": 2e-4}, "fraction_of_core": 0.9}}}
    results = {"sweep": sweep, **{k: {"available": False, "reason": "x"} for k in bench_main.KEYS
                                  if k != "sweep"}}
    text = bench_main.table(results)
    assert "60% of the floor's cells/s, core 80%" in text
    assert "10 budgets 0.20 ms (core/sweep 0.90)" in text


def test_missing_section_is_recorded_not_faked(monkeypatch):
    monkeypatch.setitem(bench_main.EXTERNAL, "break_even", ("benchmarks.no_such_module",
                                                            ("roots_per_s", "ratio_brentq")))
    out = bench_main.external("break_even", quick=True)
    assert out["available"] is False
    assert "benchmarks.no_such_module is not present" in out["reason"]
    assert out["roots_per_s"] is None and out["ratio_brentq"] is None


def test_present_section_is_nested(monkeypatch, tmp_path):
    (tmp_path / "fake_section_ok.py").write_text(
        "def run(quick):\n    return {'roots_per_s': 123.0, 'ratio_brentq': 4.5, 'extra': quick}\n")
    (tmp_path / "fake_section_bad.py").write_text(
        "def run(quick):\n    raise RuntimeError('solver diverged')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(bench_main.EXTERNAL, "break_even",
                        ("fake_section_ok", ("roots_per_s", "ratio_brentq")))
    out = bench_main.external("break_even", quick=True)
    assert out["available"] is True
    assert out["roots_per_s"] == 123.0 and out["ratio_brentq"] == 4.5 and out["extra"] is True
    monkeypatch.setitem(bench_main.EXTERNAL, "events",
                        ("fake_section_bad", ("events_per_s", "ratio_bare_simpy")))
    out = bench_main.external("events", quick=True)
    assert out["available"] is False and "solver diverged" in out["reason"]
    assert out["events_per_s"] is None


def test_finite_makes_valid_json():
    out = bench_main.finite({"a": [1.0, math.nan], "b": {"c": math.inf}, "d": "x"})
    assert out == {"a": [1.0, None], "b": {"c": None}, "d": "x"}


@pytest.mark.slow
def test_quick_run_writes_every_key(tmp_path):
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)  # a hang guard only
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())  # strict JSON: no NaN or Infinity tokens
    sweep = results["sweep"]
    for key in ("cells_per_s", "ratio_numpy", "ratio_python", "compile_s"):
        assert isinstance(sweep[key], float) and sweep[key] > 0, key
    assert isinstance(sweep["scaling_exponent"], float) and math.isfinite(sweep["scaling_exponent"])
    assert isinstance(sweep["fraction_of_memory_bw"], float) and sweep["fraction_of_memory_bw"] > 0
    assert sweep["headline_cells"] >= 0.99e6  # the quick headline is past the fixed costs too
    assert isinstance(sweep["fraction_of_floor"], float) and sweep["fraction_of_floor"] > 0
    assert sorted(sweep["wrapper_s"], key=int) == ["10", "100", "10000"]
    assert all(isinstance(v, float) for v in sweep["wrapper_s"].values())
    for size in sweep["sizes"]:
        for who in ("sweep", "core", "floor", "numpy", "python"):
            t = size[who]
            assert t["n"] >= 5 and t["min_s"] <= t["median_s"] <= t["max_s"], who
    for section, keys in (("break_even", ("roots_per_s", "ratio_brentq")),
                          ("events", ("events_per_s", "ratio_bare_simpy")),
                          ("compile", ("break_even_budget_s", "elasticities_s")),
                          ("store", ("distributed_speedup",)),
                          ("winner", ("points_per_s", "ratio_sweep_argmin", "core_scaling")),
                          ("float32", ("speedup", "max_rel_err")),
                          ("uncertainty", ("roots_per_s", "ratio_brentq")),
                          ("stragglers", ("cells_per_s", "cells_per_s_no_straggler",
                                          "time_over_no_straggler"))):
        sec = results[section]
        assert isinstance(sec["available"], bool)
        if section in ("break_even", "events", "uncertainty"):  # nothing optional: unavailable = crashed
            assert sec["available"] is True, (section, sec.get("reason"))
        for key in keys:
            assert key in sec
            if sec["available"]:
                assert isinstance(sec[key], (int, float)) and sec[key] > 0, (section, key)
            else:
                assert sec[key] is None and isinstance(sec["reason"], str) and sec["reason"]
    assert isinstance(sweep["core_scaling"], float) and sweep["core_scaling"] > 0
    assert sweep["core_scaling_detail"]["1 core"]["cpus"] == 1
    assert results["disk"]["available"] is False
    assert "Dense sweep" in proc.stdout


def test_winner_baseline_answers_the_same_question():
    # the baseline of winner.ratio_sweep_argmin: the sweep reduced in xarray gives the same
    # winners, times, runners-up and margins (exactly) wherever some variant reaches the target
    from benchmarks import winner_bench
    args = winner_bench.grid_for(2000)
    first, best, runner, ratio = winner_bench.through_sweep(**args)
    m = bandjax.winner(**args)
    some = np.isfinite(best.values)
    assert some.any() and (m["runner_up"].values >= 0).any()
    np.testing.assert_array_equal(first.values[some], m["winner"].values[some])
    np.testing.assert_array_equal(best.values[some], m["time_to_target_s"].values[some])
    two = np.isfinite(ratio.values)
    np.testing.assert_array_equal(runner.values[two], m["runner_up"].values[two])
    np.testing.assert_array_equal(ratio.values[two], m["margin"].values[two])
    np.testing.assert_array_equal(m["winner"].values[~some], -1)
    assert winner_bench.same_answer(m, (first, best, runner, ratio))
    # a wrong runner-up is noticed
    assert not winner_bench.same_answer(m, (first, best, first, ratio))
    assert winner_bench.points_of(args) == pytest.approx(2000, rel=0.01)


def test_float32_figures_are_measured_against_float64():
    from benchmarks import winner_bench
    grid = {k: (v[:20] if k == "bandwidth" else v) for k, v in winner_bench.REFERENCE_GRID.items()}
    f = winner_bench.float32_figures(grid, repeat=5)
    # float32 rounds at 6e-8 relative; a handful of operations: well under 1e-6, never 0
    assert 0 < f["max_rel_err"] < 1e-6
    assert f["points"] == 20 * 20 * 2 * 2 * 3 * 2
