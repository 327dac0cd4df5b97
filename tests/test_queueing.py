"""The queueing approximation of the shared-WAN step: exact at load 0, rising with load, within
its stated accuracy of the event engine."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bandjax
import events
from bandjax import variants
from bandjax.queueing import ACCURACY, idle_s, shared_wan_step_s


@pytest.mark.parametrize("gbps", [0.1, 0.5, 12.5, 1000.0])
@pytest.mark.parametrize("H", [1.0, 4.0])
def test_load0_is_the_closed_form(gbps, H):
    sc = bandjax.reference().replace(wan_Bps=gbps * 1e9, sync_every_H=H)
    np.testing.assert_allclose(shared_wan_step_s(sc, 0.0), bandjax.step_s(sc), rtol=1e-12)


def test_rises_with_load_and_broadcasts():
    sc = bandjax.reference()
    loads = jnp.linspace(0.0, 0.95, 20)
    steps = np.asarray(jax.jit(shared_wan_step_s)(sc, loads))
    assert steps.shape == (20, len(variants.IDS))
    assert np.all(np.diff(steps, axis=0) > 0)


def test_faster_wan_never_slower():
    gbps = jnp.geomspace(0.1, 1000.0, 30)
    sc = bandjax.reference().replace(wan_Bps=gbps * 1e9)
    steps = np.asarray(shared_wan_step_s(sc, 0.7))
    assert steps.shape == (30, len(variants.IDS))
    assert np.all(np.diff(steps, axis=0) < 0)


def test_idle_brownian_limits():
    # no backlog, a long gap: idle ~ (1 - rho) G + v / (2 mu) - 0 (the running max's overshoot)
    G, rho, s_bg = 1.0, 0.5, 1e-4
    assert float(idle_s(G, 0.0, rho, s_bg)) == pytest.approx((1 - rho) * G + rho * s_bg / (2 * (1 - rho)), rel=1e-6)
    # a backlog far above what the gap can drain: no idle
    assert float(idle_s(1e-3, 1.0, rho, s_bg)) == pytest.approx(0.0, abs=1e-12)
    # load 0: the whole gap beyond the backlog
    assert float(idle_s(2e-3, 5e-4, 0.0, s_bg)) == pytest.approx(1.5e-3, rel=1e-12)


@pytest.mark.parametrize("gbps,load", [(12.5, 0.5), (12.5, 0.9), (2.0, 0.9)])
def test_within_stated_accuracy_of_engine(gbps, load):
    sc = bandjax.reference().replace(wan_Bps=gbps * 1e9)
    approx = np.asarray(shared_wan_step_s(sc, load))
    for i, vid in enumerate(variants.IDS):
        engine = np.mean([events.run(sc, vid, load, seed=s, steps=300, trace_steps=0).mean_s
                          for s in (0, 1)])
        assert approx[i] == pytest.approx(engine, rel=ACCURACY), vid
