"""Laws of the closed forms, checked over random scenarios (hypothesis)."""

import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
from bandjax import variants
from bandjax.metrics import energy_per_step_J, hot_spots
from bandjax.step import COMPONENTS, step_s, step_terms_s

SETTINGS = settings(max_examples=40, deadline=None)
positive = st.floats(min_value=0.05, max_value=20.0)


@st.composite
def scenarios(draw):
    """The reference with every rate and size scaled by an independent random factor."""
    ref = bandjax.reference()
    scale = {name: draw(positive) for name in (
        "params", "gpu_compute_s", "worker_port_Bps", "qsfp_port_Bps", "wan_Bps", "optics_Sps",
        "fpga_Bps", "gpu_static_W", "module_W")}
    changes = {k: getattr(ref, k) * v for k, v in scale.items()}
    changes["workers_per_dc"] = float(draw(st.integers(1, 64)))
    changes["enob"] = float(draw(st.integers(1, 16)))
    changes["sync_every_H"] = float(draw(st.sampled_from([1, 3, 10, 100])))
    changes["budget_FLOPs"] = draw(st.sampled_from([np.inf, 1e9, 10e9, 99e9, 1e12]))
    changes["fixed_s"] = {v: d * draw(positive) for v, d in ref.fixed_s.items()}
    return ref.replace(**changes)


@SETTINGS
@given(scenarios(), st.floats(0.1e9, 1000e9), st.floats(1.0001, 100.0))
def test_step_never_rises_with_bandwidth(sc, wan, factor):
    slow = np.asarray(step_s(sc.replace(wan_Bps=wan)))
    fast = np.asarray(step_s(sc.replace(wan_Bps=wan * factor)))
    assert np.all(fast <= slow * (1 + 1e-15))
    # and every variant sends something over the WAN, so it strictly falls
    assert np.all(fast < slow)


@SETTINGS
@given(scenarios(), st.floats(1e9, 1e12), st.floats(1.0001, 100.0))
def test_step_never_rises_with_budget(sc, budget, factor):
    low = np.asarray(step_s(sc.replace(budget_FLOPs=budget)))
    high = np.asarray(step_s(sc.replace(budget_FLOPs=budget * factor)))
    free = np.asarray(step_s(sc.replace(budget_FLOPs=np.inf)))
    assert np.all(high <= low * (1 + 1e-15))
    assert np.all(free <= high * (1 + 1e-15))
    # variants without a module do not depend on the budget at all
    no_module = [i for i, v in enumerate(variants.VARIANTS) if not v.module]
    np.testing.assert_array_equal(low[no_module], free[no_module])


@SETTINGS
@given(scenarios(), st.floats(0.01, 100.0))
def test_everything_but_d_scales_linearly_with_P(sc, k):
    a = np.asarray(step_terms_s(sc))
    b = np.asarray(step_terms_s(sc.at_model_size(sc.params * k)))
    fixed = COMPONENTS.index("fixed")
    scaled = [i for i in range(len(COMPONENTS)) if i != fixed]
    np.testing.assert_allclose(b[:, scaled], k * a[:, scaled], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(b[:, fixed], a[:, fixed])


@SETTINGS
@given(scenarios())
def test_hot_spot_shares_sum_to_one(sc):
    shares = np.asarray(hot_spots(step_terms_s(sc)))
    np.testing.assert_allclose(shares.sum(-1), 1.0, rtol=1e-12)
    assert np.all(shares >= 0)
    # at most one module stage holds time per variant
    module = [COMPONENTS.index(c) for c in COMPONENTS if c.startswith("module_")]
    assert np.all((shares[:, module] > 0).sum(-1) <= 1)


@SETTINGS
@given(scenarios())
def test_energy_columns_non_negative_and_sum_to_total(sc):
    ds = bandjax.sweep(sc, quantities=["energy_per_step_J"])
    e = ds["energy_per_step_J"]
    assert float(e.min()) >= 0
    parts = e.sel(energy=["compute", "network", "modules"]).sum("energy")
    np.testing.assert_allclose(parts.values, e.sel(energy="total").values, rtol=1e-12)
    direct = np.asarray(energy_per_step_J(sc, step_s(sc)))
    np.testing.assert_allclose(e.sel(energy=["compute", "network", "modules"]).values, direct, rtol=1e-12)


def test_energy_by_hand_for_adamw():
    # docs/model.md s8 for AdamW at the reference, written out term by term
    sc = bandjax.reference()
    P, N, G = 7_916_736, 8, 4 * 7_916_736
    step = float(step_s(sc)[0])
    compute = N * (97.06 * step + 8.507e-12 * 6 * P * 512)
    network = 8 * N * (1.5 * G) * 10e-12 + 8 * 2 * G * 50e-12
    e = np.asarray(energy_per_step_J(sc, step_s(sc)))[0]
    np.testing.assert_allclose(e, [compute, network, 0.0], rtol=1e-12)


def test_H_divides_communication_only():
    sc = bandjax.reference()
    a = np.asarray(step_terms_s(sc))
    b = np.asarray(step_terms_s(sc.replace(sync_every_H=10.0)))
    np.testing.assert_allclose(b[:, 1:], a[:, 1:] / 10, rtol=1e-14)
    np.testing.assert_array_equal(b[:, 0], a[:, 0])
    assert jnp.allclose(b.sum(-1), a[:, 0] + (a.sum(-1) - a[:, 0]) / 10, rtol=1e-14)
