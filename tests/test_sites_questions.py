"""The questions on sites that differ (docs/model.md section 16), with stragglers (section 16)
and failures (section 17): who wins, the bandwidth a target needs, where two variants tie.

Reference for every value here: :func:`bandjax.sweep` of the same scenario, the closed forms'
own evaluation (its ``time_to_target_s`` and ``compute_utilisation``), reduced or substituted
back afterwards. Equal sites are compared with the scenario without a sites table, which takes
the equal-sites paths unchanged (``bandjax.sites.differ`` is False there).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import bandjax
from bandjax import sites as _sites
from bandjax import winmap
from bandjax.grid import scenario_arrays
from bandjax.step import unit_rounds
from bandjax.sweepargs import parse

REGIONS = ("us-east", "eu-west", "us-west")
# Unequal links between the three regions (B/s, one-way latency s), as in tests/test_sites.py.
REGION_B = np.array([[0, 5e9, 12.5e9], [4e9, 0, 5e9], [12.5e9, 5e9, 0]], dtype=float)
REGION_L = np.array([[0, 40e-3, 30e-3], [40e-3, 0, 70e-3], [30e-3, 70e-3, 0]])
# Steps to target of the methods, relative to AdamW's (not measured: chosen so that the winner
# changes over the bandwidth range; the questions must hold whatever the steps are).
STEPS_REL = {"dp_bf16": 1.0, "diloco": 1.3, "streaming_diloco": 1.3, "streaming_diloco_fp4": 1.4,
             "intellect1_int8": 1.35}
SCALED = ("diloco", "streaming_diloco_fp4")  # these run sites = "scaled", the rest "wait"
BANDWIDTH_GBps = np.geomspace(0.1, 1000.0, 25)
# what comes on top of the sites: nothing, a straggler tail, failures (per worker-hour; high
# enough that ETTR moves the times by a few per cent)
CASES = {
    "sites": {},
    "stragglers": {"straggler": "exponential", "straggler_s": 0.1},
    "failures": {"failure_rate_per_hour": 2e-4},
}


def methods(sc):
    """``sc`` with :data:`bandjax.METHODS` added (steps :data:`STEPS_REL` x AdamW's), DiLoCo and
    Streaming DiLoCo FP4 under sites = "scaled"."""
    n = sc.steps_of("adamw", 8.0, "hypothesis")
    ms = [dataclasses.replace(v, sites="scaled") if v.id in SCALED else v for v in bandjax.METHODS]
    return sc.with_variants(ms, steps={k: n * r for k, r in STEPS_REL.items()})


def regions(**extra):
    """Three regions: H100 / A100 / H100 sites of 8 / 4 / 8 nodes of 8 GPUs, unequal links, an
    8B model (so that the WAN matters), H = 100, the methods added; ``extra`` on top."""
    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=100.0, params=8.03e9,
                                     active_params=8.03e9, **extra)
    sc = sc.with_links(REGION_B, REGION_L, REGIONS)
    return methods(sc.with_sites(gpu=["h100", "a100", "h100"], workers=[64, 32, 64]))


def equal_sites(**extra):
    """The same three regions with equal sites (64 H100 workers each): (with a sites table, the
    same scenario without one). ``sites.differ`` is False for both."""
    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=100.0, params=8.03e9,
                                     active_params=8.03e9, **extra)
    sc = methods(sc.with_links(REGION_B, REGION_L, REGIONS))
    with_table = sc.with_sites(gpu=["h100"] * 3, workers=[64, 64, 64])
    return with_table, dataclasses.replace(with_table, sites=None)


def test_the_scenarios_are_what_they_say():
    sc = regions()
    assert _sites.differ(sc)
    assert sc.sites.workers == (64.0, 32.0, 64.0)
    # the A100 site is the slowest: its compute_rel is 1, the H100 sites' below
    rel = sc.sites.compute_rel
    assert rel[1] == pytest.approx(1.0, rel=0, abs=0) and rel[0] == rel[2] < 1.0
    with_table, without = equal_sites()
    assert not _sites.differ(with_table) and not _sites.differ(without)


# ------------------------------------------------------------------------------ winner


def _sweep_argmin(sc, **grid):
    """(winner, its time) from the sweep: ``time_to_target_s.fillna(inf).argmin("variant")``."""
    t = bandjax.sweep(sc, quantities=("time_to_target_s",), **grid)["time_to_target_s"]
    t = t.transpose(..., "variant").fillna(np.inf)
    return t.argmin("variant").values, t.min("variant").values


@pytest.mark.parametrize("case", CASES)
def test_winner_is_the_argmin_of_the_sweeps_times(case):
    """Reference: ``sweep(...)["time_to_target_s"].fillna(inf).argmin("variant")`` (the winner
    map's own definition, bandjax/winmap.py), at every point of a bandwidth x ENOB grid."""
    sc = regions(**CASES[case])
    grid = dict(bandwidth=BANDWIDTH_GBps, enob=[8, 6])
    m = bandjax.winner(sc, **grid)
    who, best = _sweep_argmin(sc, **grid)
    np.testing.assert_array_equal(m["winner"].transpose("bandwidth", "enob").values, who)
    np.testing.assert_allclose(m["time_to_target_s"].transpose("bandwidth", "enob").values, best,
                               rtol=1e-12, atol=0)
    # more than one variant wins somewhere, so the comparison sees a change of winner
    assert len(np.unique(who)) >= 2


def test_winner_on_sites_is_not_the_fused_equal_sites_pass():
    """The fused pass's step (c, no tokens share) is not the sweep's on these sites: the test
    above would fail were the map left to it."""
    sc = regions()
    g = parse(sc, bandwidth=BANDWIDTH_GBps)
    arrays = scenario_arrays(sc, g)
    index = tuple(g.index)
    fused = winmap._unpack(*winmap._fused(arrays, g.steps, index, False, unit_rounds(arrays, index),
                                          False))
    who, _ = _sweep_argmin(sc, bandwidth=BANDWIDTH_GBps)
    assert np.any(fused[0] != who)


@pytest.mark.parametrize("case", CASES)
def test_winner_on_equal_sites_is_todays_bit_for_bit(case):
    """Equal sites take the fused pass unchanged: the map is the one without a sites table, and
    the fused pass's own output, exactly."""
    with_table, without = equal_sites(**CASES[case])
    grid = dict(bandwidth=BANDWIDTH_GBps)
    a, b = bandjax.winner(with_table, **grid), bandjax.winner(without, **grid)
    for k in winmap.OUTPUTS:
        np.testing.assert_array_equal(a[k].values, b[k].values)
    g = parse(without, **grid)
    arrays = scenario_arrays(without, g)
    index = tuple(g.index)
    from bandjax import failures, stragglers
    fused = winmap._unpack(*winmap._fused(arrays, g.steps, index, failures.may_fail(arrays),
                                          unit_rounds(arrays, index),
                                          stragglers.may_straggle(arrays)))
    for k, x in zip(winmap.OUTPUTS, fused):
        np.testing.assert_array_equal(a[k].values, np.broadcast_to(x, a[k].shape))


def test_winner_on_sites_in_chunks_is_the_whole_map():
    """Chunks of the sweep's times (each chunk its own call) give the map of one call, exactly."""
    sc = regions(**CASES["stragglers"])
    whole = bandjax.winner(sc, bandwidth=BANDWIDTH_GBps, enob=[8, 6])
    parts = bandjax.winner(sc, bandwidth=BANDWIDTH_GBps, enob=[8, 6], chunk=7, threads=2)
    for k in winmap.OUTPUTS:
        np.testing.assert_array_equal(parts[k].values, whole[k].values)


# ------------------------------------------------------------------------------ required_bandwidth

TARGETS = [0.3, 0.45, 0.8, 0.9]  # compute utilisation (or goodput): some reached, some not
QUANTITY = {"utilisation": "compute_utilisation", "goodput": "goodput"}


@pytest.mark.parametrize("target", QUANTITY)
@pytest.mark.parametrize("case", CASES)
def test_required_bandwidth_gives_the_target_back_in_the_sweep(case, target):
    """Reference: ``bandjax.sweep(sc, bandwidth=answer)``'s own compute utilisation (compute-
    weighted, docs/model.md section 16) or goodput (section 17) at the answer: the target, within
    1e-6 relative, wherever the target is reached (in the range or above it); met at the range's
    bottom already where BELOW_RANGE; short of it at 1e9 GB/s where NOT_REACHABLE."""
    from bandjax.need import ABOVE_RANGE, BELOW_RANGE, NOT_REACHABLE, REACHED

    sc = regions(**CASES[case])
    ds = bandjax.required_bandwidth(sc, TARGETS, target=target)
    q = QUANTITY[target]
    B = ds["required_bandwidth_GBps"].transpose("utilisation", "variant").values
    status = ds["status"].transpose("utilisation", "variant").values
    lo = ds.attrs["range_GBps"][0]
    ids = list(ds["variant"].values)
    seen = set()
    for i, u in enumerate(TARGETS):
        for j, v in enumerate(ids):
            s = int(status[i, j])
            seen.add(s)
            if s in (REACHED, ABOVE_RANGE):
                got = float(bandjax.sweep(sc, bandwidth=float(B[i, j]), variant=v)[q])
                assert got == pytest.approx(u, rel=1e-6, abs=0), (v, u)
                # and the least such bandwidth: 1e-6 below it the target is missed
                less = float(bandjax.sweep(sc, bandwidth=float(B[i, j]) * (1 - 1e-6), variant=v)[q])
                assert less < u, (v, u)
            elif s == BELOW_RANGE:
                assert float(bandjax.sweep(sc, bandwidth=lo, variant=v)[q]) >= u, (v, u)
            else:
                assert s == NOT_REACHABLE and np.isnan(B[i, j])
                assert float(bandjax.sweep(sc, bandwidth=1e9, variant=v)[q]) < u, (v, u)
    assert {REACHED, NOT_REACHABLE} <= seen


def test_required_bandwidth_names_the_wait_for_the_slowest_site():
    """A "wait" variant's compute utilisation is at most (sum_i n_i c_i) / (N c_max) (docs/model.md
    section 16): above that no bandwidth helps, and the cap says ``sites``; a "scaled" variant
    computes the whole round at every site, so it is not capped by the sites."""
    from bandjax.need import cap_names

    sc = regions()
    rel = np.asarray(sc.sites.compute_rel)
    n = np.asarray(sc.sites.workers)
    most = float(np.sum(n * rel) / np.sum(n))  # the A100 site is the slowest: c_max = c
    ds = bandjax.required_bandwidth(sc, [most * 1.001], variant=["dp_bf16", "diloco"])
    caps = cap_names(ds["cap"]).values.ravel().tolist()
    assert caps[0] == "sites"
    assert caps[1] == "none"  # diloco runs "scaled"


@pytest.mark.parametrize("target", QUANTITY)
@pytest.mark.parametrize("case", CASES)
def test_required_bandwidth_on_equal_sites_is_todays_bit_for_bit(case, target):
    """Equal sites take the closed form (utilisation) or the goodput bisection unchanged: the
    scenario without a sites table gives the same numbers exactly."""
    with_table, without = equal_sites(**CASES[case])
    a = bandjax.required_bandwidth(with_table, TARGETS, target=target)
    b = bandjax.required_bandwidth(without, TARGETS, target=target)
    for k in ("required_bandwidth_GBps", "status", "cap"):
        np.testing.assert_array_equal(a[k].values, b[k].values)


# ------------------------------------------------------------------------------ break_even


def sites_without_links(**extra):
    """:func:`regions`' sites over equal links (no links table): before the general search took
    sites, stragglers and failures, only a links table sent a pair there."""
    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=100.0, params=8.03e9,
                                     active_params=8.03e9, **extra)
    return methods(sc.with_sites(gpu=["h100", "a100", "h100"], workers=[64, 32, 64]))


SCENARIOS = {"regions": regions, "equal_links": sites_without_links}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("where", SCENARIOS)
def test_break_even_is_where_the_sweeps_times_are_equal(where, case):
    """Reference: ``bandjax.sweep(sc, bandwidth=x)["time_to_target_s"]`` of the pair at each
    crossing x that :func:`bandjax.break_even` returns over bandwidth: equal within 1e-6
    relative, for every pair of variants (the study's six and the methods) that crosses in the
    default range; and a pair that does not cross keeps one order at both ends of the range."""
    from bandjax.breakeven import break_even, needs_general_search

    sc = SCENARIOS[where](**CASES[case])
    assert needs_general_search(sc)
    found, apart = [], []
    ids = list(sc.ids)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            xs = np.asarray(break_even(sc, a, b).x).ravel()
            xs = xs[np.isfinite(xs)]
            found += [(a, b, x) for x in xs]
            if xs.size == 0:
                apart.append((a, b))
    assert len(found) >= 5
    # one sweep at every crossing, one at the range's ends
    at = bandjax.sweep(sc, bandwidth=[x / 1e9 for _, _, x in found])["time_to_target_s"]
    for k, (a, b, x) in enumerate(found):
        ta, tb = (float(at.isel(bandwidth=k).sel(variant=v)) for v in (a, b))
        assert ta == pytest.approx(tb, rel=1e-6, abs=0), (a, b, x)
    ends = bandjax.sweep(sc, bandwidth=[0.1, 1000.0])["time_to_target_s"]
    for a, b in apart:
        ta, tb = ends.sel(variant=a).values, ends.sel(variant=b).values
        if np.all(np.isfinite(ta)) and np.all(np.isfinite(tb)):
            assert np.sign(ta[0] - tb[0]) == np.sign(ta[1] - tb[1]), (a, b)


@pytest.mark.parametrize("case", CASES)
def test_break_even_on_equal_sites_is_todays_bit_for_bit(case):
    """Equal sites (no links table) take the search they take without a sites table: the fast
    residual where nothing fails or straggles, the general one otherwise; the same numbers
    exactly."""
    from bandjax.breakeven import break_even, needs_general_search

    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=100.0, params=8.03e9,
                                     active_params=8.03e9, **CASES[case])
    with_table = methods(sc.with_sites(gpu=["h100"] * 3, workers=[64, 64, 64]))
    without = dataclasses.replace(with_table, sites=None)
    assert needs_general_search(without) == (case != "sites")
    assert needs_general_search(with_table) == needs_general_search(without)
    found = 0
    for a, b in [("adamw", "streaming_diloco"), ("diloco", "streaming_diloco_fp4"),
                 ("band_switch", "dp_bf16")]:
        x, y = break_even(with_table, a, b), break_even(without, a, b)
        for k in ("x", "count", "status", "a_wins_below", "tie_lo", "tie_hi"):
            np.testing.assert_array_equal(getattr(x, k), getattr(y, k))
        found += int(np.isfinite(x.x).sum())
    assert found >= 1
