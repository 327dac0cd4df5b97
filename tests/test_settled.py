"""Programs built without the stragglers' quadrature where nothing straggles
(bandjax.stragglers.settled): the sweeps, the one-off step and time evaluations and the searches
over a field give what the general program gives, whose c' is c x M with M = 1 exactly where the
family is "none" (docs/model.md section 16).

The general program is the one a traced scenario gets (a user's own jit): here it is forced by
telling the callers that workers may straggle. On the reference scenario and with failures the
two agree bit for bit. Elsewhere the two programs, compiled apart, may order or fuse a sum
differently: they agree to 2 ulps (4.4e-16 relative; measured), and a share that is exactly 0 in
the lean program (the wait for the slowest worker, where nothing straggles) may be 2e-16 in the
general one."""

import jax
import numpy as np
import pytest
import xarray as xr

import bandjax
from bandjax import breakeven as be
from bandjax import grid, metrics

BW = [0.1, 1.0, 12.5, 400.0]  # GB/s
BUDGET = ["free", 40.0, 400.0]  # GFLOP/s


def _cases():
    ref = bandjax.reference()
    yield "reference", ref
    yield "mesh, rounds, overlap", ref.replace(
        dcs=4.0, topology="mesh", sync_every_H=16.0, overlap_fraction=0.5)
    yield "failures", ref.replace(failure_rate_per_hour=1e-3, sync_every_H=8.0)
    B = np.array([[0, 12.5, 1.25], [12.5, 0, 2.5], [1.25, 2.5, 0]]) * 1e9
    L = np.array([[0, 10, 40], [10, 0, 50], [40, 50, 0]]) * 1e-3
    yield "links", ref.with_links(bandwidth=B, latency=L)
    yield "sites", ref.replace(dcs=3.0, sync_every_H=100.0).with_sites(
        gpu=["h100", "a100", "h100"], workers=[64, 32, 64])


CASES = dict(_cases())


def _general(monkeypatch, *modules):
    for module in modules:
        monkeypatch.setattr(module, "may_straggle", lambda sc: True)


@pytest.mark.parametrize("name", list(CASES))
def test_a_sweep_without_the_quadrature_is_the_general_sweep_bit_for_bit(name, monkeypatch):
    sc = CASES[name]
    assert not bandjax.stragglers.may_straggle(sc)
    kw = dict(bandwidth=BW, budget=BUDGET, basis=list(bandjax.BASES))
    lean = bandjax.sweep(sc, **kw)
    _general(monkeypatch, grid)
    jax.clear_caches()
    full = bandjax.sweep(sc.replace(), **kw)  # a new scenario: nothing of the first is kept
    assert set(lean.data_vars) == set(full.data_vars) and len(lean.data_vars) >= 15
    if name in ("reference", "failures"):
        xr.testing.assert_identical(lean, full)
        return
    for var in lean.data_vars:
        a, b = lean[var].values, full[var].values
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-15, atol=1e-15 if var == "hot_spot" else 0,
                                       err_msg=var)
        else:
            np.testing.assert_array_equal(a, b, err_msg=var)


@pytest.mark.parametrize("name", ["reference", "mesh, rounds, overlap", "sites"])
def test_the_one_off_step_and_time_are_the_general_ones_bit_for_bit(name, monkeypatch):
    sc = CASES[name]
    lean = np.asarray(metrics.step_once_s(sc)), np.asarray(metrics.time_to_target_once_s(sc, 1.0))
    _general(monkeypatch, metrics)
    jax.clear_caches()
    full = np.asarray(metrics.step_once_s(sc)), np.asarray(metrics.time_to_target_once_s(sc, 1.0))
    np.testing.assert_allclose(lean[0], full[0], rtol=1e-15)
    np.testing.assert_allclose(lean[1], full[1], rtol=1e-15)
    # and both are the eager closed form's
    np.testing.assert_allclose(lean[0], np.asarray(bandjax.step_s(sc)), rtol=1e-15)


@pytest.mark.parametrize("a, b, over", [("C'", "E'", "budget"), ("AdamW", "top-k", "params"),
                                        ("AdamW", "C'", "gpu_peak_FLOPs")])
def test_a_search_over_a_field_is_the_general_search(a, b, over, monkeypatch):
    sc = CASES["mesh, rounds, overlap"]
    lean = be.break_even(sc, a, b, over=over)
    _general(monkeypatch, be)
    jax.clear_caches()
    full = be.break_even(sc, a, b, over=over)
    assert np.isfinite(np.asarray(lean.x)).any()  # a crossing, compared
    # a root moves by the residual's ulps over its slope in log x: a few ulps here
    np.testing.assert_allclose(np.asarray(lean.x), np.asarray(full.x), rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(lean.status), np.asarray(full.status))


def test_a_straggling_scenario_keeps_the_quadrature():
    # the lean program would give c' = c: the sweep must not take it where workers straggle
    sc = bandjax.reference().replace(straggler="lognormal", straggler_s=0.5)
    calm = bandjax.reference()
    a = bandjax.sweep(sc, bandwidth=BW, quantities=("step_s",)).step_s
    b = bandjax.sweep(calm, bandwidth=BW, quantities=("step_s",)).step_s
    assert np.all(a.values > b.values)
    np.testing.assert_allclose(a.values, np.asarray(
        [bandjax.step_s(sc.replace(wan_Bps=w * 1e9)) for w in BW]), rtol=1e-12)
