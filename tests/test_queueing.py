"""The queueing approximation of the shared-WAN step: exact at load 0, rising with load, within
its stated accuracy of the event engine."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bandjax
import events
from bandjax import variants
from bandjax.queueing import (ACCURACY_BY_CLUSTER, ACCURACY_UP_TO_SPLIT_BY_CLUSTER, SPLIT_LOAD,
                               accuracy, expected_max_s, idle_s, shared_wan_step_s)


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


def test_the_fixed_point_solver_reaches_a_slow_maps_point():
    # a map that contracts by 0.999 a step: 40 plain steps from 0 get 3.9% of the way to its
    # point 2; Steffensen's steps get there (to the solver's relative 1e-10)
    from bandjax.queueing import _fixed_point

    v = _fixed_point(lambda x: 0.999 * x + 2e-3, jnp.zeros(3), jnp.full(3, 1e-6))
    np.testing.assert_allclose(np.asarray(v), 2.0, rtol=1e-9)


def test_the_backlog_is_at_its_fixed_point_near_load_one(monkeypatch):
    # 16 MB messages on two DCs at loads 0.95 and 0.98, where plain iteration contracts slowly:
    # the answer is the one 4,000 plain steps of the same map give (a slow, independent route
    # to the same fixed point; 40 plain steps fell 3.6% and 26% short of it)
    from bandjax import queueing

    sc = bandjax.reference().replace(wan_message_B=16e6)
    loads = jnp.asarray([0.95, 0.98])
    solved = np.asarray(shared_wan_step_s(sc, loads))

    def plain(drain, v, scale):
        return jax.lax.fori_loop(0, 4000, lambda _, x: drain(x), v)

    monkeypatch.setattr(queueing, "_fixed_point", plain)
    # a new function, traced anew (jit keeps traces by function: the solver's would be reused)
    slow = np.asarray(jax.jit(lambda s, x: shared_wan_step_s.__wrapped__(s, x))(sc, loads))
    np.testing.assert_allclose(solved, slow, rtol=1e-8)


def test_idle_brownian_limits():
    # no backlog, a long gap: idle ~ (1 - rho) G + v / (2 mu) - 0 (the running max's overshoot)
    G, rho, s_bg = 1.0, 0.5, 1e-4
    assert float(idle_s(G, 0.0, rho, s_bg)) == pytest.approx((1 - rho) * G + rho * s_bg / (2 * (1 - rho)), rel=1e-6)
    # a backlog far above what the gap can drain: no idle
    assert float(idle_s(1e-3, 1.0, rho, s_bg)) == pytest.approx(0.0, abs=1e-12)
    # load 0: the whole gap beyond the backlog
    assert float(idle_s(2e-3, 5e-4, 0.0, s_bg)) == pytest.approx(1.5e-3, rel=1e-12)


# Cells of every cluster the table states (K, topology, variant, load): a variant with many
# messages a sync and one with a single message, loads on both sides of SPLIT_LOAD
STEADY_STATE_CELLS = [
    (2, "ring", "adamw", 0.9), (2, "ring", "band_switch", 0.5),
    (3, "ring", "band_switch", 0.9), (3, "mesh", "adamw", 0.7),
    (4, "ring", "topk", 0.7), (4, "mesh", "adamw", 0.9),
    (8, "ring", "band_gpu", 0.9), (8, "mesh", "band_switch", 0.9), (8, "mesh", "adamw", 0.5),
    (3, "ring", "band_gpu_allreduce", 0.95),
]


@pytest.mark.slow
@pytest.mark.parametrize("dcs,topology,vid,load", STEADY_STATE_CELLS)
def test_within_the_stated_bound_of_the_engines_steady_state(dcs, topology, vid, load):
    # the reference: the engine's steady-state mean step (benchmarks.events_bench.
    # steady_state_mean: each run drops its first 5 relaxation times, keeps 15 or at least 100
    # steps, 4 or more seeds until the standard error is under 0.9%), every variant at 12.5 GB/s
    # per link; the stated bound (ACCURACY_UP_TO_SPLIT_BY_CLUSTER up to SPLIT_LOAD, else
    # ACCURACY_BY_CLUSTER) must hold within 3 standard errors
    from benchmarks.events_bench import _cluster, steady_state_mean

    sc = _cluster(dcs, topology, gbps=12.5)
    engine = steady_state_mean(events.build(sc, vid), load)
    approx = float(np.asarray(shared_wan_step_s(sc, load))[..., sc.ids.index(vid)].squeeze())
    key = (dcs, topology)
    bound = (ACCURACY_UP_TO_SPLIT_BY_CLUSTER if load <= SPLIT_LOAD else ACCURACY_BY_CLUSTER)[key]
    err = approx / engine["mean_s"] - 1
    assert abs(err) <= bound + 3 * engine["se_s"] / engine["mean_s"], (err, engine)


@pytest.mark.parametrize("dcs,topology", [(3, 0.0), (4, 1.0), (8, 0.0), (8, 1.0)])
def test_load0_is_the_closed_form_on_k_dcs(dcs, topology):
    sc = bandjax.reference().replace(dcs=float(dcs), topology=topology, wan_latency_s=1e-3,
                                     overlap_fraction=jnp.asarray([0.0, 0.5, 1.0]),
                                     sync_every_H=2.0)
    np.testing.assert_allclose(shared_wan_step_s(sc, 0.0), bandjax.step_s(sc), rtol=1e-12)


def test_expected_max_limits():
    one = jnp.asarray(1.0)
    # a first passage with a tiny spread is a normal: E[max of 2] - E[X] = sigma / sqrt(pi); of 3:
    # 3 sigma / (2 sqrt(pi)) (its skew moves these by about sigma^2 / base, 1e-12 here)
    for L, e in [(1.0, 0.0), (2.0, 1 / np.sqrt(np.pi)), (3.0, 1.5 / np.sqrt(np.pi))]:
        got = float(expected_max_s(one, jnp.asarray(1e-6), jnp.asarray(1e-12), jnp.asarray(0.0),
                                   jnp.asarray(L)))
        # the quadrature (Simpson's rule, 400 intervals over the span) is good to about 1e-5 of
        # the spread
        assert got == pytest.approx(e * 1e-6, rel=0, abs=1e-5 * 1e-6), L
    # exponential only (a link always busy): E[max of L] = theta (1 + 1/2 + ... + 1/L)
    for L in (2.0, 56.0):
        harmonic = sum(1 / k for k in range(1, int(L) + 1))
        got = float(expected_max_s(one, jnp.asarray(0.0), jnp.asarray(1.0), jnp.asarray(2e-3),
                                   jnp.asarray(L)))
        assert got == pytest.approx(2e-3 * (harmonic - 1), rel=1e-5), L


def _expected_max_by_quadrature(base, noise, busy, tail, L, spread):
    """The same E[max] - E[X] by adaptive quadrature (scipy), from the law it is defined by:
    X | E an inverse Gaussian of mean base + E and variance noise^2 + spread E, E = 0 with
    probability 1 - busy, else exponential of mean tail; E[max] = int_0^inf 1 - F(x)^L dx."""
    from scipy import integrate, stats

    def passage(x, m, sd):  # scipy's invgauss(mu, scale): mean mu scale, variance mu^3 scale^2
        lam = m ** 3 / sd ** 2
        return stats.invgauss.cdf(x, m / lam, scale=lam)

    def F(x):
        given = integrate.quad(lambda e: np.exp(-e / tail) / tail
                               * passage(x, base + e, np.sqrt(noise ** 2 + spread * e)),
                               0, 60 * tail, limit=200, epsabs=1e-13)[0]
        return (1 - busy) * passage(x, base, noise) + busy * given

    top = base + 10 * np.sqrt(noise ** 2 + spread * 40 * tail) + 40 * tail
    total = integrate.quad(lambda x: 1 - F(x) ** L, 0, top, limit=400, epsabs=1e-12)[0]
    return total - base - busy * tail


@pytest.mark.parametrize("L", [3.0, 56.0])
def test_expected_max_of_first_passages_with_a_growing_spread(L):
    # skewed (noise / base 0.5) and a backlog that widens the spread, as on an 8-DC mesh at
    # load 0.95: the closed-form pieces against the law's own double integral
    base, noise, busy, tail, spread = 2e-3, 1e-3, 0.9, 4e-3, 1e-3
    got = float(expected_max_s(jnp.asarray(base), jnp.asarray(noise), jnp.asarray(busy),
                               jnp.asarray(tail), jnp.asarray(L), spread))
    want = _expected_max_by_quadrature(base, noise, busy, tail, L, spread)
    # the skew is taken at each of the 16 pieces' middle: good to a few 1e-3 of the result
    assert got == pytest.approx(want, rel=5e-3), L
    # the spread that grows with the backlog, and the skew, both lengthen the slowest link
    flat = float(expected_max_s(jnp.asarray(base), jnp.asarray(noise), jnp.asarray(busy),
                                jnp.asarray(tail), jnp.asarray(L)))
    assert got > flat


def test_accuracy_is_stated_per_cluster():
    clusters = {(2, "ring"), (3, "ring"), (3, "mesh"), (4, "ring"), (4, "mesh"), (8, "ring"),
                (8, "mesh")}
    assert set(ACCURACY_BY_CLUSTER) == set(ACCURACY_UP_TO_SPLIT_BY_CLUSTER) == clusters
    assert {(k, t) for k, t, _, _ in STEADY_STATE_CELLS} == clusters  # the slow test samples each
    assert all(0 < v < 0.5 for v in ACCURACY_BY_CLUSTER.values())
    assert all(ACCURACY_UP_TO_SPLIT_BY_CLUSTER[k] <= ACCURACY_BY_CLUSTER[k] for k in clusters)
    sc = bandjax.reference()
    two = accuracy(sc)
    assert two["accuracy"] == ACCURACY_BY_CLUSTER[(2, "ring")]
    assert two["accuracy_up_to_split"] == ACCURACY_UP_TO_SPLIT_BY_CLUSTER[(2, "ring")]
    assert f"{ACCURACY_UP_TO_SPLIT_BY_CLUSTER[(2, 'ring')]:.0%} up to load 0.9" in two["basis"]
    assert accuracy(sc.replace(topology=1.0))["accuracy"] == ACCURACY_BY_CLUSTER[(2, "ring")]
    assert accuracy(sc.replace(dcs=8.0, topology=1.0))["accuracy"] == ACCURACY_BY_CLUSTER[(8, "mesh")]
    other = accuracy(sc.replace(dcs=5.0))
    assert other["accuracy"] == max(v for (k, t), v in ACCURACY_BY_CLUSTER.items() if t == "ring")
    assert "K = 5 not measured" in other["basis"]
