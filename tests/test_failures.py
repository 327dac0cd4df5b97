"""Runs that fail: MTBF, ETTR, goodput (docs/model.md section 17), in the closed forms, the sweeps
and the questions.

The worked values are the model page's (section 17, "Worked values (oracle)"): 16,384 GPUs at
Llama 3's rate, u0 = 600 s, w = 60 s: tau* = 1155.95 s, ETTR = 0.850086; the same GPUs as 4 DCs x
4,096 with H = 100 inner steps of 1.2 s (round 120 s), restore 3.2 s: ETTR = 0.983763; and the
presets' MTBF: 3.09 h (Llama 3, 16,384 GPUs), 1.80 h and 0.225 h (6.50 failures per 1,000
node-days at 16,384 and 131,072 GPUs). The page prints them rounded: each is compared at half a
unit of its last printed digit, and the forms against their own expression to 1e-9 relative.
"""

import dataclasses
import math

import jax
import numpy as np
from jax.test_util import check_grads
import pytest

import bandjax
from bandjax import failures as F
from bandjax.scenario import FAILURE_RATES, ScenarioError, from_toml_dict, to_toml_dict

LLAMA3 = FAILURE_RATES["llama3"]


def _gpus(n: int, dcs: int = 2, rate: float = LLAMA3, **changes):
    return bandjax.reference().replace(dcs=float(dcs), workers_per_dc=float(n // dcs),
                                       failure_rate_per_hour=rate, restart_s=600.0,
                                       checkpoint_write_s=60.0, **changes)


def test_preset_rates_and_mtbf():
    # the presets as the sources give them (419 in 54 days on 16,384 GPUs; 6.50 a 1,000 node-days
    # at 8 GPUs a node) and the MTBF the page prints
    assert LLAMA3 == pytest.approx(1.9733e-5, rel=5e-5)
    assert FAILURE_RATES["rsc1"] == pytest.approx(3.385e-5, rel=2e-4)
    assert float(F.mtbf_s(_gpus(16384))) / 3600 == pytest.approx(3.09, abs=0.005)
    assert float(F.mtbf_s(_gpus(16384, rate=FAILURE_RATES["rsc1"]))) / 3600 == pytest.approx(1.80, abs=0.005)
    assert float(F.mtbf_s(_gpus(131072, rate=FAILURE_RATES["rsc1"]))) / 3600 == pytest.approx(0.225, abs=0.0005)


def test_stop_rule_worked_values():
    sc = _gpus(16384)
    lam = 16384 * LLAMA3 / 3600
    tau = math.sqrt(2 * 60 / lam)
    assert float(F.young_interval_s(sc)) == pytest.approx(tau, rel=1e-12)
    assert tau == pytest.approx(1155.95, abs=0.005)  # the page's tau*
    ettr, product = F.stop_ettr(sc)
    expected = (1 - lam * (600 + tau / 2)) / (1 + 60 / tau)
    assert float(ettr) == pytest.approx(expected, rel=1e-9)
    assert float(ettr) == pytest.approx(0.850086, abs=5e-7)  # the page's ETTR
    assert float(product) == pytest.approx(lam * (600 + tau), rel=1e-9)


def test_rounds_worked_value():
    # restore 3.2 s at the reference WAN: b = 3.2 s x B / P bytes a parameter
    sc = _gpus(16384, dcs=4)
    sc = sc.replace(restore_bytes_per_param=3.2 * float(sc.wan_Bps) / float(sc.params))
    ettr, _ = F.rounds_ettr(sc, np.array([120.0]))
    r = LLAMA3 / 3600
    expected = 1 - 4 * (4096 / 16384) * 4096 * r * (600 + 3.2 + 120)
    assert float(ettr[0]) == pytest.approx(expected, rel=1e-9)
    assert float(ettr[0]) == pytest.approx(0.983763, abs=5e-7)  # the page's rounds ETTR


def test_checkpoint_interval_given_and_free_writes():
    sc = _gpus(16384).replace(checkpoint_every_s=1800.0)
    lam = 16384 * LLAMA3 / 3600
    assert float(F.stop_ettr(sc)[0]) == pytest.approx((1 - lam * 1500) / (1 + 60 / 1800), rel=1e-12)
    free = _gpus(16384).replace(checkpoint_write_s=0.0)  # Young's interval 0: ETTR = 1 - lambda u0
    assert float(F.stop_ettr(free)[0]) == pytest.approx(1 - lam * 600, rel=1e-12)


def test_young_is_the_first_order_optimum():
    # Young's interval maximises the stop rule's ETTR to first order: a nearby interval does worse
    sc = _gpus(16384)
    tau = float(F.young_interval_s(sc))
    best = float(F.stop_ettr(sc)[0])
    for factor in (0.8, 1.25):
        assert float(F.stop_ettr(sc.replace(checkpoint_every_s=tau * factor))[0]) < best


def test_no_failures_changes_nothing_bit_for_bit(monkeypatch):
    # a rate of 0 is ETTR 1 exactly: every time to target is the same, bit for bit, as the same
    # pass with the division by ETTR taken out (a grid above QUICK_CELLS: plain jit, whose
    # programs follow the traced code, so clearing the caches traces the patched code)
    sc = bandjax.reference().with_variants(bandjax.METHODS)
    grid = dict(bandwidth=list(np.geomspace(0.1, 1000, 1600)), H=[1, 10], basis=["hypothesis", "exact"],
                quantities=("time_to_target_s", "ettr", "goodput", "compute_utilisation",
                            "mtbf_s", "failure_status"))
    ds = bandjax.sweep(sc, **grid)
    monkeypatch.setattr(F, "time_to_target_s", lambda time_s, ettr: time_s)
    jax.clear_caches()
    before = bandjax.sweep(dataclasses.replace(sc), **grid)
    jax.clear_caches()
    np.testing.assert_array_equal(ds["time_to_target_s"].values, before["time_to_target_s"].values)
    assert np.isfinite(ds["time_to_target_s"].values).any()
    assert np.all(ds["ettr"].values == 1.0)
    np.testing.assert_array_equal(ds["goodput"].values, ds["compute_utilisation"].values)
    assert np.all(np.isinf(ds["mtbf_s"].values))
    assert np.all(ds["failure_status"].values == F.FIRST_ORDER)


def test_sweep_quantities_follow_the_rule_of_each_variant():
    sc = _gpus(8192).with_variants(bandjax.METHODS)
    ds = bandjax.sweep(sc, bandwidth=12.5, variant=["adamw", "diloco"])
    stop = float(F.stop_ettr(sc)[0])
    assert float(ds["ettr"].sel(variant="adamw")) == pytest.approx(stop, rel=1e-12)
    step = float(ds["step_s"].sel(variant="diloco"))
    H = sc.variant("diloco").sync_every
    r = LLAMA3 / 3600
    restore = float(sc.params) * 4.0 / float(sc.wan_Bps)
    assert float(ds["ettr"].sel(variant="diloco")) == pytest.approx(
        1 - 4096 * r * (600 + restore + H * step), rel=1e-9)
    # goodput = CU x ETTR; time to target divided by ETTR; the interval only where H = 1
    np.testing.assert_allclose(ds["goodput"].values,
                               (ds["compute_utilisation"] * ds["ettr"]).values, rtol=1e-15)
    assert float(ds["checkpoint_interval_s"].sel(variant="adamw")) == pytest.approx(
        float(F.young_interval_s(sc)), rel=1e-12)
    assert math.isnan(float(ds["checkpoint_interval_s"].sel(variant="diloco")))
    assert ds["mtbf_s"].dims == ()
    assert ds["ettr"].attrs["units"] == "1" and ds["mtbf_s"].attrs["units"] == "s"


def test_beyond_first_order_is_said():
    # 131,072 GPUs at the RSC-1 rate: lambda (u0 + tau*) is far above 0.1
    sc = _gpus(131072, rate=FAILURE_RATES["rsc1"])
    ds = bandjax.sweep(sc, bandwidth=12.5, variant="adamw")
    assert int(ds["failure_status"]) == F.BEYOND_FIRST_ORDER
    assert "beyond_first_order" in ds["failure_status"].attrs["flag_meanings"]
    # a first-order ETTR below 0: reported as 0, its time to target as inf, with the status
    worse = sc.replace(restart_s=3 * 3600.0)
    ds = bandjax.sweep(worse, bandwidth=12.5, variant="adamw")
    assert float(ds["ettr"]) == 0.0 and math.isinf(float(ds["time_to_target_s"]))
    assert int(ds["failure_status"]) == F.BEYOND_FIRST_ORDER


def test_gradients_against_finite_differences():
    sc = _gpus(16384)

    def ettr(rate, w):
        return F.stop_ettr(dataclasses.replace(sc, failure_rate_per_hour=rate, checkpoint_write_s=w))[0]

    check_grads(ettr, (LLAMA3, 60.0), order=1, modes=["rev"], eps=1e-9, rtol=1e-4)
    # a replica's ETTR is linear in the rate: its slope at 0 is the right one, -n (u0 + restore +
    # round) / 3600 an hour
    rounds = jax.grad(lambda r: F.rounds_ettr(dataclasses.replace(sc, failure_rate_per_hour=r),
                                              np.array([120.0]))[0][0])(0.0)
    restore = float(sc.params) * 4.0 / float(sc.wan_Bps)
    assert float(rounds) == pytest.approx(-8192 * (600 + restore + 120) / 3600, rel=1e-12)
    # and at a rate of 0 the stop rule's gradient is finite (the guarded branches)
    g = jax.grad(lambda r: F.stop_ettr(dataclasses.replace(sc, failure_rate_per_hour=r))[0])(0.0)
    assert np.isfinite(float(g))


def test_winner_and_break_even_over_the_failure_rate():
    # at 4 DCs x 2,048 workers, DiLoCo (H = 100, a replica's round lost) against data parallel in
    # bf16 (the whole job stops): equal steps given to both, so failures decide where one wins
    sc = (bandjax.reference().with_variants(bandjax.METHODS, steps={"dp_bf16": 400, "diloco": 400})
          .replace(dcs=4.0, workers_per_dc=2048.0, restart_s=600.0, checkpoint_write_s=60.0))
    rates = np.array([0.0, 1e-6, 1e-5, 1e-4])
    w = bandjax.winner(sc, bandwidth=400.0, failure_rate_per_hour=list(rates),
                       variant=["dp_bf16", "diloco"])
    ds = bandjax.sweep(sc, bandwidth=400.0, failure_rate_per_hour=list(rates),
                       variant=["dp_bf16", "diloco"], quantities=("time_to_target_s",))
    expected = ds["time_to_target_s"].argmin("variant").values
    np.testing.assert_array_equal(w["winner"].values, expected)
    be = bandjax.break_even(sc, "dp_bf16", "diloco", over="failure_rate_per_hour",
                            lo=1e-9, hi=1e-3)
    x = np.asarray(be.x)[np.isfinite(np.asarray(be.x))]
    for rate in x:  # at each crossing both take the same time
        t = bandjax.sweep(sc, bandwidth=400.0, failure_rate_per_hour=float(rate),
                          variant=["dp_bf16", "diloco"], quantities=("time_to_target_s",))
        a, b = t["time_to_target_s"].values
        assert a == pytest.approx(b, rel=1e-6)


def test_bandwidth_break_even_counts_failures():
    # a bandwidth break-even where workers fail equals the times' crossing with ETTR in them
    sc = (bandjax.reference().with_variants(bandjax.METHODS, steps={"dp_bf16": 400, "diloco": 1000})
          .replace(dcs=4.0, workers_per_dc=1024.0, failure_rate_per_hour=LLAMA3))
    be = bandjax.break_even(sc, "dp_bf16", "diloco")
    x = np.asarray(be.x)[np.isfinite(np.asarray(be.x))]
    assert x.size >= 1
    for B in x:
        t = bandjax.sweep(sc, bandwidth=B / 1e9, variant=["dp_bf16", "diloco"],
                          quantities=("time_to_target_s",))
        a, b = t["time_to_target_s"].values
        assert a == pytest.approx(b, rel=1e-6)


def test_required_bandwidth_for_goodput():
    sc = bandjax.reference().with_variants(bandjax.METHODS)
    # nothing fails: the goodput target is the utilisation target (closed form), to 1e-9
    cu = bandjax.required_bandwidth(sc, [0.5, 0.9])
    gp = bandjax.required_bandwidth(sc, [0.5, 0.9], target="goodput")
    np.testing.assert_allclose(gp["required_bandwidth_GBps"].values,
                               cu["required_bandwidth_GBps"].values, rtol=1e-9)
    np.testing.assert_array_equal(gp["status"].values, cu["status"].values)
    # failing workers: at the answer the goodput is the target (where reached)
    big = sc.replace(workers_per_dc=2048.0, failure_rate_per_hour=LLAMA3)
    gp = bandjax.required_bandwidth(big, 0.9, target="goodput", variant=["diloco", "intellect1_int8"])
    assert gp.attrs["target"] == "goodput"
    for v in ("diloco", "intellect1_int8"):
        B = float(gp["required_bandwidth_GBps"].sel(utilisation=0.9, variant=v))
        if int(gp["status"].sel(utilisation=0.9, variant=v)) == 0:
            g = float(bandjax.sweep(big, bandwidth=B, variant=v)["goodput"])
            assert g == pytest.approx(0.9, rel=1e-9)
    # data parallel at this size: capped by its ports (CU), not by the failures
    dp = bandjax.required_bandwidth(big, 0.5, target="goodput", variant="adamw")
    assert str(bandjax.need.cap_names(dp["cap"]).values.ravel()[0]) == "ports"
    with pytest.raises(ValueError, match="target = 'goodput!'"):
        bandjax.required_bandwidth(sc, 0.5, target="goodput!")


def test_scenario_file_round_trip_and_presets():
    sc = _gpus(16384).replace(checkpoint_every_s=1200.0)
    again = from_toml_dict(to_toml_dict(sc))
    assert float(again.failure_rate_per_hour) == LLAMA3
    assert float(again.checkpoint_every_s) == 1200.0
    data = {"failures": {"rate": "rsc1", "restart": "10 min", "checkpoint_write": "1 min",
                         "checkpoint_every": "young"}}
    sc = from_toml_dict(data)
    assert float(sc.failure_rate_per_hour) == FAILURE_RATES["rsc1"]
    assert float(sc.restart_s) == 600.0 and float(sc.checkpoint_write_s) == 60.0
    assert sc.checkpoint_every_s is None
    assert float(from_toml_dict({"failures": {"rate": "2e-5 /h"}}).failure_rate_per_hour) == 2e-5
    assert float(from_toml_dict({"failures": {"rate": "24e-5 /day"}}).failure_rate_per_hour) == pytest.approx(1e-5)


@pytest.mark.parametrize("change, match", [
    ({"failure_rate_per_hour": -1e-5}, r"\[failures\] rate = .*must be"),
    ({"failure_rate_per_hour": math.nan}, r"\[failures\] rate = 'nan'"),
    ({"failure_rate_per_hour": math.inf}, r"\[failures\] rate = 'inf'"),
    ({"failure_rate_per_hour": True}, r"\[failures\] rate = True: expected a number"),
    ({"restart_s": math.inf}, r"\[failures\] restart = 'inf'"),
    ({"restart_s": -1.0}, r"\[failures\] restart"),
    ({"checkpoint_write_s": math.nan}, r"\[failures\] checkpoint_write = 'nan'"),
    ({"checkpoint_every_s": 0.0}, r"\[failures\] checkpoint_every = '0.0 ms': must be a finite time > 0 s"),
    ({"checkpoint_every_s": -5.0}, r"\[failures\] checkpoint_every"),
    ({"checkpoint_every_s": math.inf}, r"\[failures\] checkpoint_every"),
    ({"restore_bytes_per_param": 0.0}, r"\[failures\] restore_bytes_per_param"),
])
def test_bad_values_are_refused(change, match):
    with pytest.raises(ScenarioError, match=match):
        bandjax.reference().replace(**change)


@pytest.mark.parametrize("table, match", [
    ({"rate": "often"}, r"\[failures\] rate = 'often'"),
    ({"rate": "-1 /h"}, r"\[failures\] rate"),
    ({"rate": "1 /s"}, r"unit '/s' is not a per hour unit"),
    ({"checkpoint_every": "0 s"}, r"\[failures\] checkpoint_every"),
    ({"restart": "nan s"}, r"\[failures\] restart"),
    ({"mtbf": "3 h"}, r"\[failures\] mtbf is not a known key"),
])
def test_bad_file_values_are_refused(table, match):
    with pytest.raises(ScenarioError, match=match):
        from_toml_dict({"failures": table})


def test_a_swept_bad_rate_is_refused():
    with pytest.raises(ScenarioError, match=r"\[failures\] rate"):
        bandjax.sweep(bandwidth=12.5, failure_rate_per_hour=[0.0, -1.0])


def test_cli_goodput_prints_the_typed_numbers(capsys, tmp_path):
    from bandjax.cli import main

    path = tmp_path / "s.toml"
    path.write_text('[cluster]\ndcs = 4\nworkers_per_dc = 4096\n[failures]\nrate = "llama3"\n')
    assert main(["goodput", "--scenario", str(path), "--variant", "adamw", "diloco",
                 "--target", "0.5"]) == 0
    out = capsys.readouterr().out
    sc = bandjax.load(path).with_variants(bandjax.METHODS)
    ds = bandjax.sweep(sc, variant=["adamw", "diloco"], quantities=("ettr", "goodput"))
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.split()[:1] in (["adamw"], ["diloco"]) and not line.startswith(" ")}
    # ETTR and goodput as the sweep gives them, to the 4 decimals printed (read from the right:
    # ... ETTR CU goodput needed-bandwidth)
    for vid in ("adamw", "diloco"):
        assert float(rows[vid][-4]) == pytest.approx(float(ds["ettr"].sel(variant=vid)), abs=5e-5)
        assert float(rows[vid][-2]) == pytest.approx(float(ds["goodput"].sel(variant=vid)), abs=5e-5)
    assert rows["adamw"][2] == "restart" and rows["diloco"][2] == "replica"
    assert "cluster MTBF: 3.093 h" in out
    assert "beyond first order" in out and "adamw" in out.splitlines()[-1]


@pytest.mark.parametrize("argv, fragment", [
    (["--rate", "often"], "[failures] rate = 'often' is not a preset"),
    (["--rate", "-1"], "[failures] rate = '-1.0 /h': must be"),
    (["--target", "1.5"], "--target 1.5: must be a goodput target in (0, 1)"),
    (["--checkpoint-every", "0"], "[failures] checkpoint_every = '0.0 ms'"),
    (["--bandwidth", "nan"], "--bandwidth nan: must be a finite bandwidth > 0 GB/s"),
    # past the magnitudes bandjax computes with: checked as typed (1e300 GB/s is inf B/s)
    (["--bandwidth", "1e300"], "--bandwidth 1e+300 GB/s: outside the magnitudes bandjax computes "
                               "with, 1e-39 to 1e+21 GB/s"),
    (["--bandwidth", "1e-300"], "--bandwidth 1e-300 GB/s: outside the magnitudes"),
    (["--checkpoint-every", "1e300"], "--checkpoint-every 1e+300 s: outside the magnitudes bandjax "
                                      "computes with, at most 1e+30 s"),
    (["--restart", "1e31"], "--restart 1e+31 s: outside the magnitudes"),
    (["--checkpoint-write", "1e40"], "--checkpoint-write 1e+40 s: outside the magnitudes"),
    (["--checkpoint-every", "1e-31"], "[failures] checkpoint_every = '1e-31 s': outside the "
                                      "magnitudes bandjax computes with, 1e-30 s to 1e+30 s"),
])
def test_cli_goodput_bad_input(capsys, argv, fragment):
    from bandjax.cli import EXIT_ERROR, main

    assert main(["goodput", *argv]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("variant, rule, rate", [("adamw", "stop", 2e-5), ("diloco", "rounds", 1e-4)])
def test_the_engine_agrees_with_the_closed_forms_at_a_scenario(variant, rule, rate):
    # The sweep's ETTR (bandjax.failures) against a long seeded run of the failure engine on the
    # same point: its restore (P b / B) and round (H x step) from the sweep. The bound is the one
    # events.failures states and measured: x^2 / 2 (x the failure-rate product, <= 0.1 here)
    # plus 4 standard errors of the run.
    from events.failures import simulate_failures

    sc = _gpus(4096, dcs=4, rate=rate).with_variants(bandjax.METHODS)
    ds = bandjax.sweep(sc, variant=variant, quantities=("ettr", "step_s", "checkpoint_interval_s"))
    lam = 4096 * rate / 3600
    step = float(ds["step_s"])
    H = sc.variant(variant).sync_every or 1
    restore = float(sc.params) * 4.0 / float(sc.wan_Bps)
    common = dict(workers=(1024,) * 4, failure_rate_per_hour=rate, restart_s=600.0,
                  duration_s=40_000 / lam, seed=1)
    if rule == "stop":
        x = lam * (600 + float(ds["checkpoint_interval_s"]))
        run = simulate_failures("stop", checkpoint_write_s=60.0, **common)
    else:
        x = 1024 * rate / 3600 * (600 + restore + H * step)
        run = simulate_failures("rounds", restore_s=restore, round_s=H * step, **common)
    assert x < 0.1
    assert run.ettr_first_order == pytest.approx(float(ds["ettr"]), rel=1e-9)
    assert abs(run.ettr - float(ds["ettr"])) <= x ** 2 / 2 + 4 * run.ettr_se
