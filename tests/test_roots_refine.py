"""The refinement of a large batch of crossings (bandjax.roots): a first iterate given by the caller
and the unconverged elements finished apart from the batch change no answer beyond the
refinement's own tolerance (a few ulps of log x).

The problems are random instances of the bandwidth search's residual (bandjax.breakeven's
``_bandwidth_residual``): two times, each c + max(0, Q + V/B), and a ratio of step counts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bandjax import breakeven as be
from bandjax import roots

LO, HI = 1e8, 1e12  # B/s, the search's range
SIZE = 4 * roots.LARGE_BATCH  # a large batch: the refinement unrolls its first steps


def _theta(seed=0, size=SIZE):
    """Random residual parameters, about half of them with a crossing in range; Q may be negative
    (a window that hides part of the sync), so some times change slope in range."""
    rng = np.random.default_rng(seed)
    ratio = rng.uniform(0.5, 2.0, size)
    c = 10 ** rng.uniform(-4, 0, size)
    q_a, q_b = (rng.uniform(-0.2, 1.0, size) * c for _ in range(2))
    v_a, v_b = (10 ** rng.uniform(5, 9, size) * c for _ in range(2))
    return tuple(jnp.asarray(v) for v in (ratio, c, q_a, v_a, q_b, v_b))


def _search(theta, *, start=None, one_pass=True):
    # a new function each call, so each traces the module's constants as they are now
    fn = jax.jit(lambda th: roots.find_crossings(be._bandwidth_residual, th, LO, HI, grid=32,
                                                 max_roots=1, implicit=False, one_pass=one_pass,
                                                 start=start))
    return jax.tree.map(np.asarray, fn(theta))


def _refine(theta, a, b, ga, gb, active, x0):
    f = lambda u, th: be._bandwidth_residual(jnp.exp(u), th)  # noqa: E731
    return np.asarray(jax.jit(lambda *args: roots._refine(f, *args, unrolled=1, x0=x0))(
        theta, a, b, ga, gb, active))


def _brackets(theta):
    """Each element's bracket [a, b] in log B (one coarse cell holding a sign change, found
    here in NumPy), r at its ends, and whether there is one."""
    u = np.log(np.geomspace(LO, HI, 32))[:, None]
    r = np.asarray(be._bandwidth_residual(np.exp(u), tuple(np.asarray(t) for t in theta)))
    change = (r[:-1] >= 0) != (r[1:] >= 0)
    k = np.argmax(change, axis=0)
    active = change.any(axis=0)
    cols = np.arange(r.shape[1])
    a, b = u[k, 0], u[k + 1, 0]
    return (a[None], b[None], r[k, cols][None], r[k + 1, cols][None], active[None])


def test_stragglers_finished_apart_equal_the_whole_batch_loop(monkeypatch):
    theta = _theta()
    a, b, ga, gb, active = _brackets(theta)
    assert 0.1 < active.mean() < 0.9  # a batch with and without crossings
    x0 = jnp.log(be._bandwidth_start(jnp.exp(a), jnp.exp(b), theta))  # as the search starts
    apart = _refine(theta, a, b, ga, gb, active, x0)
    # after one step on the whole batch, some elements have not converged (the loop's share) ...
    monkeypatch.setattr(roots, "MAX_ITERATIONS", 1)
    one_step = _refine(theta, a, b, ga, gb, active, x0)
    monkeypatch.undo()
    stragglers = int(np.sum(one_step != apart))
    assert 0 < stragglers <= roots.STRAGGLERS
    # ... and finishing them apart gives each element the very steps the whole batch's loop does
    monkeypatch.setattr(roots, "STRAGGLERS", 10 * SIZE)  # the whole batch in the loop
    together = _refine(theta, a, b, ga, gb, active, x0)
    np.testing.assert_array_equal(apart, together)
    # more stragglers than the room apart: the loop runs on the whole batch, with the same answer
    monkeypatch.setattr(roots, "STRAGGLERS", max(1, stragglers // 2))
    np.testing.assert_array_equal(_refine(theta, a, b, ga, gb, active, x0), together)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_first_iterate_from_the_numerators_line_keeps_every_answer(seed):
    theta = _theta(seed)
    secant = _search(theta)  # the refinement's own start (regula falsi in log B)
    given = _search(theta, start=be._bandwidth_start)
    for field in ("count", "status", "a_wins_below", "tie_count"):
        np.testing.assert_array_equal(getattr(given, field), getattr(secant, field))
    assert np.sum(np.isfinite(secant.x)) > SIZE // 8
    # Each stops within the refinement's tolerance of log B (4 eps (1 + |log B|)), or where r is
    # within an ulp or two of 0: a root is only defined to about eps / |dr/dlog B| (flat residuals
    # have it far larger than the tolerance). The two may differ by both, twice.
    u = np.log(secant.x[:, 0])
    found = np.isfinite(u)
    _, slope = jax.jvp(lambda v: be._bandwidth_residual(jnp.exp(v), theta), (jnp.asarray(np.where(found, u, 20.0)),),
                       (jnp.ones(SIZE),))
    eps = np.finfo(float).eps
    allowed = 2 * (4 * eps * (1 + np.abs(u)) + 2 * eps / np.abs(np.asarray(slope)))
    diff = np.abs(np.log(given.x[:, 0]) - u)
    assert np.all(diff[found] <= allowed[found]), np.max(diff[found] / allowed[found])
    np.testing.assert_array_equal(np.isfinite(given.x), np.isfinite(secant.x))


def test_the_numerators_line_is_the_root_where_neither_time_changes_slope():
    # Q >= 0: each time is affine in 1/B, the numerator T_a - T_b (times B) linear in B; its line
    # through any two bandwidths is the exact crossing, checked against the closed form
    # B* = (V_b - ratio V_a) / (ratio (c + Q_a) - (c + Q_b)).
    ratio, c, q_a, v_a, q_b, v_b = (np.asarray(t) for t in _theta(2))
    q_a, q_b = np.abs(q_a), np.abs(q_b)
    theta = tuple(jnp.asarray(t) for t in (ratio, c, q_a, v_a, q_b, v_b))
    exact = (v_b - ratio * v_a) / (ratio * (c + q_a) - (c + q_b))
    got = np.asarray(be._bandwidth_start(jnp.full(SIZE, LO), jnp.full(SIZE, HI), theta))
    inside = (exact > LO) & (exact < HI)
    assert inside.sum() > SIZE // 10
    np.testing.assert_allclose(got[inside], exact[inside], rtol=1e-9)
