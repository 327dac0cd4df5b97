"""bandjax's own bandwidth searches of the simple form run on one flat, padded batch
(bandjax.breakeven._quick_bandwidth): grids of any shape up to QUICK_BATCH points call the
compiled search with the same arguments' shapes (one program for all of them), and each point's
answer is the one the search on the grid itself gives."""

import jax
import numpy as np
import pytest

import bandjax
from bandjax import breakeven as be
from bandjax import variants as V

LO, HI = (g * 1e9 for g in be.BANDWIDTH_RANGE_GBps)
PAIRS = [(a, b) for i, a in enumerate(V.IDS) for b in V.IDS[i + 1:]]


def _problem(shape_of):
    sc = bandjax.reference()
    ia = np.array([V.IDS.index(a) for a, _ in PAIRS])
    ib = np.array([V.IDS.index(b) for _, b in PAIRS])
    na = np.array([sc.steps_of(a, float(sc.enob), "hypothesis") for a, _ in PAIRS])
    nb = np.array([sc.steps_of(b, float(sc.enob), "hypothesis") for _, b in PAIRS])
    return shape_of(sc), ia, ib, na, nb


GRIDS = {
    "budgets": lambda sc: sc.replace(budget_FLOPs=np.array([np.inf, 10e9, 40e9, 400e9])[:, None]),
    "K x topology": lambda sc: sc.replace(dcs=np.array([2.0, 4.0, 8.0])[:, None, None],
                                          topology=np.array([0.0, 1.0])[None, :, None]),
    "one point": lambda sc: sc,
}


@pytest.mark.parametrize("name", list(GRIDS))
def test_each_point_is_the_grids_own_search(name):
    sc, ia, ib, na, nb = _problem(GRIDS[name])
    flat = be.all_bandwidth_crossings(sc, ia, ib, na, nb, LO, HI)
    own = jax.tree.map(np.asarray, be.bandwidth_crossings(sc, ia, ib, na, nb, LO, HI,
                                                          implicit=False))
    assert flat.x.shape == own.x.shape and flat.status.shape == own.status.shape
    assert np.isfinite(own.x).any()
    for field in ("count", "status", "a_wins_below", "tie_count", "tie_below", "tie_above"):
        np.testing.assert_array_equal(getattr(flat, field), getattr(own, field), err_msg=field)
    # the two programs may order a sum differently: roots agree to a few ulps of log B
    np.testing.assert_allclose(flat.x, own.x, rtol=1e-14)
    np.testing.assert_allclose(flat.tie_lo, own.tie_lo, rtol=1e-14)


def test_grids_of_different_shapes_call_one_program(monkeypatch):
    seen = []
    core = be._quick_core

    def spy(*args, **kwargs):
        seen.append((tuple(np.shape(v) for v in jax.tree.leaves(args)), tuple(sorted(kwargs.items()))))
        return core(*args, **kwargs)

    monkeypatch.setattr(be, "_quick_core", spy)
    for shape_of in GRIDS.values():
        be.all_bandwidth_crossings(*_problem(shape_of), LO, HI)
    assert len(seen) == len(GRIDS)
    assert len(set(seen)) == 1, seen  # the same shapes and static facts: one compiled program
    assert seen[0][0][0] == (be.QUICK_BATCH,)


def test_a_grid_above_the_batch_pads_to_a_power_of_two(monkeypatch):
    seen = []
    core = be._quick_core
    monkeypatch.setattr(be, "_quick_core", lambda *a, **k: seen.append(np.shape(a[1])) or core(*a, **k))
    grid = lambda sc: sc.replace(params=np.geomspace(1e6, 1e11, 20)[:, None])  # noqa: E731
    sc, ia, ib, na, nb = _problem(grid)  # 20 x 15 = 300 points
    c = be.all_bandwidth_crossings(sc, ia, ib, na, nb, LO, HI)
    assert seen == [(512,)] and c.x.shape == (20, len(PAIRS), 1)
