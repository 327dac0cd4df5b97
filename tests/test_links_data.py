"""Links tables as data under jit (bandjax.links.DataLinks): a new table of the same K gives the
answers a table held static gives (one program per table, the values constants of it), and runs the
program the first table compiled: in a sweep, the bandwidth a target needs, every break-even (with
its mesh's envelope as data), its elasticities, the answers under uncertain inputs, the tolerated
tail and the winner map."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import bandjax
from bandjax import breakeven as be
from bandjax import links as links_module
from bandjax import need
from bandjax.links import DataLinks, as_data
from bandjax.step import step_s
from bandjax.stragglers import may_straggle
from benchmarks.links_bench import count_compiles

K = 6
RTOL = 1e-12  # the same closed form, the table a leaf or a constant: rounding apart


def tables(n, seed):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(1e9, 30e9, (K, K)), rng.uniform(0.0, 50e-6, (K, K))) for _ in range(n)]


def scenario(B, L, topology="mesh", **fields):
    return bandjax.reference().replace(topology=topology, **fields).with_links(B, L)


def test_the_tables_are_leaves_and_the_names_structure():
    (B1, L1), (B2, L2) = tables(2, seed=1)
    a, b = as_data(scenario(B1, L1)), as_data(scenario(B2, L2))
    assert isinstance(a.links, DataLinks)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    shapes = [np.shape(x) for x in jax.tree.leaves(a)]
    assert shapes.count((K, K)) == 2
    # held static (the default), two tables are two structures: two programs
    assert jax.tree.structure(scenario(B1, L1)) != jax.tree.structure(scenario(B2, L2))
    # other names are another structure (the report labels links by them)
    c = as_data(scenario(B1, L1).with_links(B1, L1, [f"x{i}" for i in range(K)]))
    assert jax.tree.structure(c) != jax.tree.structure(a)


@pytest.mark.parametrize("topology", ["mesh", "ring"])
def test_required_bandwidth_is_the_static_tables_answer(topology):
    """Each table's answer through the data path against the same table held static (its own
    program), called one at a time."""
    u = np.array([0.1, 0.3, 0.5, 0.9])
    for B, L in tables(4, seed=2 if topology == "mesh" else 3):
        sc = scenario(B, L, topology, overlap_fraction=0.5)
        got = bandjax.required_bandwidth(sc, u)
        arrays = jax.tree.map(np.asarray, sc)  # links held static: not leaves
        want, status, cap = (np.asarray(x) for x in need.needed_Bps(arrays, u, 0.1e9, 1e12))
        np.testing.assert_allclose(got["required_bandwidth_GBps"].values, want / 1e9, rtol=RTOL)
        np.testing.assert_array_equal(got["status"].values, status)
        np.testing.assert_array_equal(got["cap"].values, cap)
        assert np.any(np.isfinite(want))


def test_goodput_target_is_the_static_tables_answer():
    """The goodput target evaluates the scenario with a trailing axis on every leaf (the tables
    included) and restores from each DC's slowest incoming link."""
    u = np.array([0.1, 0.5, 0.9])
    for B, L in tables(3, seed=4):
        sc = scenario(B, L, failure_rate_per_hour=2e-5, workers_per_dc=64.0)
        got = bandjax.required_bandwidth(sc, u, target="goodput")
        arrays = jax.tree.map(np.asarray, sc)
        want = np.asarray(need.needed_goodput_Bps(arrays, u, 0.1e9, 1e12)[0])
        np.testing.assert_allclose(got["required_bandwidth_GBps"].values, want / 1e9, rtol=1e-9)
        assert np.any(np.isfinite(want))


def test_sweep_is_each_tables_step_time():
    """A sweep's step time over the slowest link's bandwidth against the closed form evaluated
    eagerly at each point, the table a NumPy constant."""
    bw = np.array([1.0, 10.0, 100.0])
    for topology in ("mesh", "ring"):
        for B, L in tables(3, seed=5):
            sc = scenario(B, L, topology)
            got = bandjax.sweep(sc, bandwidth=bw, quantities=["step_s"])["step_s"]
            for k, b in enumerate(bw):
                want = np.asarray(step_s(sc.replace(wan_Bps=b * 1e9)))
                np.testing.assert_allclose(got.isel(bandwidth=k).values, want, rtol=RTOL)


def test_distinct_tables_compile_once():
    """100 distinct tables of the same K through required_bandwidth: the first may compile, the
    other 99 compile nothing. The counter sees compiles: two new tables held static compile two
    programs."""
    scs = [scenario(B, L) for B, L in tables(100, seed=6)]
    bandjax.required_bandwidth(scs[0], 0.3)
    answers, compiles = count_compiles(
        lambda: [bandjax.required_bandwidth(sc, 0.3)["required_bandwidth_GBps"].values
                 for sc in scs[1:]])
    assert compiles == 0
    assert len({a.tobytes() for a in answers}) == len(answers)  # distinct tables, distinct answers
    static = [jax.tree.map(np.asarray, sc) for sc in scenario_pair()]
    _, compiles = count_compiles(lambda: [np.asarray(need.needed_Bps(sc, 0.9, 0.1e9, 1e12)[0])
                                          for sc in static])
    assert compiles >= 2


def scenario_pair():
    return [scenario(B, L) for B, L in tables(2, seed=7)]


def test_a_grid_and_sites_that_differ_give_the_static_tables_answer():
    """Over a grid of H and latency, on sites that differ (all-gather bytes link by link, restores
    from each DC's slowest incoming link), ring and mesh: the data path against the static one."""
    u = np.array([0.1, 0.3])
    for topology in ("ring", "mesh"):
        for B, L in tables(2, seed=8):
            sc = scenario(B, L, topology, failure_rate_per_hour=1e-5)
            c = float(sc.gpu_compute_s)
            sc = sc.with_sites(workers=[1, 2, 4, 8, 2, 1],
                               gpu_compute_s=[c * f for f in (1.0, 1.2, 1.0, 0.8, 1.0, 1.5)])
            grid = {"H": [1, 4], "wan_latency_s": [1e-6, 2e-5]}
            got = bandjax.required_bandwidth(sc, u, **grid)["required_bandwidth_GBps"]
            g = need.parse(sc, **grid)
            arrays = need.scenario_arrays(sc, g)  # links held static
            want = np.take(np.asarray(need.needed_Bps(arrays, u, 0.1e9, 1e12,
                                                   straggles=may_straggle(arrays))[0]),
                           np.asarray(g.index), axis=-1)
            np.testing.assert_allclose(got.values, np.broadcast_to(want, got.shape) / 1e9, rtol=RTOL)
            assert np.any(np.isfinite(want))


# ------------------------------------------------------------------- the other questions


def be_tables(n, seed, K=K):
    """Tables whose break-evens cross in range: bandwidths over two decades, latencies to 5 ms."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(0.3e9, 40e9, (K, K)), rng.uniform(0.0, 5e-3, (K, K))) for _ in range(n)]


PAIRS = [("adamw", "band_switch"), ("band_pluggable", "adamw"), ("topk", "band_gpu")]
CROSSING_FIELDS = ("x", "count", "status", "a_wins_below", "tie_lo", "tie_hi", "tie_count",
                   "tie_below", "tie_above")


@pytest.mark.parametrize("topology", ["mesh", "ring"])
def test_break_even_is_the_static_tables_answer(topology):
    """The break-even over bandwidth through a table held as data (its mesh's envelope a leaf
    too) against the same search with the table static (its envelope found as the program
    traces), bit for bit: the same bracket points, and padding that brackets nothing."""
    found = 0
    for B, L in be_tables(4, seed=9 if topology == "mesh" else 10):
        sc = scenario(B, L, topology, overlap_fraction=0.6, params=1e8)
        for a, b in PAIRS:
            got = bandjax.break_even(sc, a, b)
            ia, ib = sc.ids.index(got.a), sc.ids.index(got.b)
            static = jax.tree.map(np.asarray, sc)  # links held static: not leaves
            want = be._quick_core(static, ia, ib, got.steps_a, got.steps_b, 0.1e9, 1000e9,
                                  grid=be.GRID, max_roots=got.x.shape[-1], implicit=False,
                                  general=True, kinks=True)
            for f in CROSSING_FIELDS:
                np.testing.assert_array_equal(getattr(got, f), np.asarray(getattr(want, f)),
                                              err_msg=f)
            found += int(got.count)
    assert found >= 4


def test_an_envelope_past_its_slots_takes_more(monkeypatch):
    """With one slot, an envelope of more breaks takes the next power of two: the same answers
    as with the default slots (tables of 4 DCs have up to 4 breaks)."""
    scs = [scenario(B, L, overlap_fraction=0.6, params=1e8) for B, L in be_tables(3, seed=11, K=4)]
    want = [bandjax.break_even(sc, "adamw", "band_switch").x for sc in scs]
    monkeypatch.setattr(links_module, "ENVELOPE_SLOTS", 1)
    sizes = {be.table_as_data(sc).links.envelope[0].size for sc in scs}
    assert sizes - {1} and all(s & (s - 1) == 0 for s in sizes)  # powers of two, not all 1
    for sc, x in zip(scs, want):
        np.testing.assert_array_equal(bandjax.break_even(sc, "adamw", "band_switch").x, x)


def _questions():
    from bandjax.uncertainty import LogNormal

    uncertain = {"utilisation": LogNormal(0.5, 0.1), "wan_latency_s": LogNormal(3e-3, 0.3)}
    return {
        "break_even": lambda sc: bandjax.break_even(sc, "adamw", "band_switch").x,
        "break_even over a field": lambda sc: bandjax.break_even(
            sc, "band_gpu", "band_switch", over="wan_latency_s").x,
        "elasticities": lambda sc: bandjax.elasticities(sc, "adamw", "band_switch")[1]["params"],
        "break_even with samples": lambda sc: bandjax.break_even(
            sc, "adamw", "band_switch", samples=100, uncertain=uncertain).roots_GBps,
        "sweep with samples": lambda sc: bandjax.sweep(
            sc, samples=100, uncertain=uncertain, bandwidth=[1.0, 10.0])["step_s"].values,
        "tolerated_tail": lambda sc: bandjax.tolerated_tail(
            sc.replace(straggler="exponential", straggler_s=0.05), [0.3, 0.6])["tolerated_tail"].values,
        "winner": lambda sc: bandjax.winner(sc, bandwidth=np.geomspace(0.1, 1000, 30))[
            "time_to_target_s"].values,
        "enob_break_even": lambda sc: bandjax.enob_break_even(sc, "E'", "AdamW",
                                                             [0.05, 0.5, 5.0, 50.0]),
    }


@pytest.mark.parametrize("question", list(_questions()))
def test_each_question_runs_a_new_table_without_compiling(question):
    """A first table may compile; two more of the same K compile nothing and get answers of
    their own. (Before, each new table compiled the question's programs anew: 1 for a
    break-even, 2 for its elasticities, 3 with samples.)"""
    ask = _questions()[question]
    first, *others = [scenario(B, L, overlap_fraction=0.6, params=1e8) for B, L in be_tables(3, seed=12)]
    ask(first)
    answers, compiles = count_compiles(lambda: [np.asarray(ask(sc)) for sc in others])
    assert compiles == 0
    assert not np.array_equal(*answers, equal_nan=True)
