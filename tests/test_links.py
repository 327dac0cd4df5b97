"""Links that differ (docs/model.md section 15): the table, the closed forms, the file's rows, the
event engine, sweeps and break-evens over a scaled table, and the laws the forms obey."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
import events
from bandjax import Links, ScenarioError
from bandjax.links import differ, mesh_pairs, ring_pairs, scaling_note, table
from bandjax.metrics import energy_per_step_J, pacing_links
from bandjax.scenario import from_toml_dict, load, save, to_toml_dict
from bandjax.step import COMPONENTS, step_s, step_terms_s, traffic_B

SETTINGS = settings(max_examples=30, deadline=None)
WAN, LAT = COMPONENTS.index("wan"), COMPONENTS.index("wan_latency")
Gb, ms = 1e9 / 8, 1e-3


def random_table(rng, K, latency=True):
    B = rng.uniform(0.5e9, 20e9, (K, K))
    L = rng.uniform(0.0, 50e-3, (K, K)) if latency else np.zeros((K, K))
    return B, L


def by_hand_wan_s(sc, B, L, topology):
    """Section 15's table, written out with loops over the absolute K x K tables (NumPy): per
    variant (bytes part, latency part) of one sync."""
    K = B.shape[0]
    t = traffic_B(sc.replace(topology=topology))
    wan_B, hops = np.asarray(t.wan_B), np.broadcast_to(np.asarray(t.hops), np.shape(t.wan_B))
    out = []
    for b, h in zip(wan_B, hops):
        if topology == "ring":
            ring = [(i, (i + 1) % K) for i in range(K)]
            out.append((b / min(B[i, j] for i, j in ring), h / K * sum(L[i, j] for i, j in ring)))
        else:
            pairs = [(i, j) for i in range(K) for j in range(K) if i != j]
            i, j = max(pairs, key=lambda p: b / B[p] + h * L[p])
            out.append((b / B[i, j], h * L[i, j]))
    return np.array(out)


# ------------------------------------------------------------------------------- the table


def test_from_absolute_is_relative_to_the_slowest_and_longest_link():
    B = np.array([[0, 4, 2], [8, 0, 2], [2, 2, 0]]) * 1e9
    L = np.array([[0, 1, 5], [1, 0, 2], [4, 3, 0]]) * 1e-3
    links, wan, lat = Links.from_absolute(B, L, ("a", "b", "c"))
    assert (wan, lat) == (2e9, 5e-3)
    np.testing.assert_allclose(links.bandwidth_Bps(wan), np.where(np.eye(3), np.nan, B), rtol=1e-15)
    np.testing.assert_allclose(links.latency_s(lat), np.where(np.eye(3), np.nan, L), rtol=1e-15)
    assert links.ring() == ((0, 1), (1, 2), (2, 0)) == ring_pairs(3)
    assert links.in_use("mesh") == mesh_pairs(3) and len(links.in_use(1)) == 6
    # equal tables compare and hash equal (static data under jit); the diagonal is ignored
    B2 = B.copy()
    np.fill_diagonal(B2, np.nan)
    again, _, _ = Links.from_absolute(B2, L, ("a", "b", "c"))
    assert again == links and hash(again) == hash(links)
    assert not links.equal and Links.from_absolute(np.ones((2, 2)))[0].equal
    # a pickled copy (dask workers, the report's passes) is equal, and as read-only
    copy = pickle.loads(pickle.dumps(links))
    assert copy == links and not copy.bandwidth_rel.flags.writeable
    with pytest.raises(ValueError):
        links.latency_rel[0, 1] = 0.5


def test_with_links_sets_K_and_the_leaves():
    B = np.array([[0, 12.5, 1.25], [12.5, 0, 2.5], [1.25, 2.5, 0]]) * 1e9
    L = np.array([[0, 10, 40], [10, 0, 50], [40, 50, 0]]) * ms
    sc = bandjax.reference().with_links(bandwidth=B, latency=L)
    assert sc.links.names == ("dc0", "dc1", "dc2")
    assert (float(sc.dcs), sc.wan_Bps, sc.wan_latency_s) == (3.0, 1.25e9, 50e-3)
    rows = table(sc)
    assert len(rows) == 6 and rows[0] == {"from": "dc0", "to": "dc1", "bandwidth_Bps": 12.5e9,
                                          "latency_s": pytest.approx(10e-3, rel=1e-15), "in_use": True}
    assert [r["in_use"] for r in rows] == [True, False, False, True, True, False]  # the ring
    # one link changed by name: B and the leaves follow
    up = sc.with_link("dc1", "dc2", bandwidth=20e9, symmetric=True)
    assert up.wan_Bps == 1.25e9 and up.link_values()[0][2, 1] == pytest.approx(20e9, rel=1e-15)
    assert sc.with_link("dc0", "dc2", bandwidth=30e9, symmetric=True).wan_Bps == pytest.approx(2.5e9)


@pytest.mark.parametrize("kwargs, says", [
    (dict(bandwidth=np.ones((1, 1))), "K >= 2"),
    (dict(bandwidth=np.ones((2, 3))), "not a square"),
    (dict(bandwidth=np.ones(3)), "not a square"),
    (dict(bandwidth="fast"), "K x K table of numbers"),
    (dict(bandwidth=[[1, 2], [1]]), "K x K table of numbers"),
    (dict(bandwidth=[[1, "x"], [1, 1]]), "K x K table of numbers"),
    (dict(bandwidth=np.ones((3, 3)), latency=np.zeros((2, 2))), "does not match"),
    (dict(bandwidth=np.ones((2, 2)), names=("a",)), "1 names for a 2 x 2"),
    (dict(bandwidth=np.ones((2, 2)), names=("a", "a")), "given twice"),
    (dict(bandwidth=np.ones((2, 2)), names=("a", "")), "non-empty string"),
    (dict(bandwidth=np.ones((2, 2)), names=("a", 3)), "non-empty string"),
    (dict(bandwidth=[[1, 0], [1, 1]], names=("a", "b")), "['a' -> 'b'] = 0.0"),
    (dict(bandwidth=[[1, -1], [1, 1]]), "> 0 B/s"),
    (dict(bandwidth=[[1, np.inf], [1, 1]]), "finite"),
    (dict(bandwidth=[[1, 1], [np.nan, 1]]), "['dc1' -> 'dc0'] = nan"),
    (dict(bandwidth=np.ones((2, 2)), latency=[[0, -1e-3], [0, 0]]), ">= 0 s"),
    (dict(bandwidth=np.ones((2, 2)), latency=[[0, np.nan], [0, 0]]), "latency"),
])
def test_malformed_tables_are_refused(kwargs, says):
    with pytest.raises(ScenarioError) as e:
        bandjax.reference().with_links(**kwargs)
    assert says in str(e.value)


def test_K_comes_from_the_table():
    sc = bandjax.reference().with_links(np.full((3, 3), 1e9))
    with pytest.raises(ScenarioError, match="K comes from its links table"):
        sc.replace(dcs=4)
    assert float(sc.replace(dcs=3).dcs) == 3.0  # the same K is no change
    with pytest.raises(ScenarioError, match="cannot be swept"):
        bandjax.sweep(sc, dcs=[2, 3])
    with pytest.raises(ScenarioError, match="cannot be swept"):
        bandjax.winner(sc, dcs=[3, 4])


# ------------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_wan_terms_are_section_15s_table(K, topology):
    rng = np.random.default_rng(K)
    B, L = random_table(rng, K)
    sc = bandjax.reference().replace(params=1e9, sync_every_H=4.0).with_links(B, L)
    sc = sc.replace(topology=topology)
    terms = np.asarray(step_terms_s(sc))
    expected = by_hand_wan_s(sc, B, L, topology) / 4.0  # one sync every H = 4 steps
    np.testing.assert_allclose(terms[:, WAN], expected[:, 0], rtol=1e-13)
    np.testing.assert_allclose(terms[:, LAT], expected[:, 1], rtol=1e-13)
    # the topology leaf swept in one call gives the same as each topology alone
    both = np.asarray(step_s(sc.replace(topology=np.array([0.0, 1.0]))))
    np.testing.assert_allclose(both[["ring", "mesh"].index(topology)], np.asarray(step_s(sc)),
                               rtol=1e-15, atol=0)


def test_links_none_is_todays_numbers_bit_for_bit():
    """links=None runs the same arithmetic as before per-link values existed: the WAN terms are
    bytes per link / B and hops x l (model.md section 13)."""
    for sc in (bandjax.reference(), bandjax.reference().replace(dcs=5.0, topology="mesh",
                                                                wan_latency_s=3e-3)):
        terms = np.asarray(step_terms_s(sc))
        t = traffic_B(sc)
        assert np.array_equal(terms[:, WAN], np.asarray(t.wan_B / sc.wan_Bps))
        assert np.array_equal(terms[:, LAT], np.asarray(t.hops * sc.wan_latency_s))


@st.composite
def equal_grids(draw):
    K = draw(st.integers(2, 6))
    wan = draw(st.floats(0.1e9, 100e9))
    lat = draw(st.sampled_from([0.0, 1e-4, 5e-3, 0.2]))
    n = float(draw(st.integers(1, 16)))
    params = draw(st.sampled_from([7.9e6, 1.2e8, 8.03e9]))
    overlap = draw(st.floats(0.0, 1.0))
    return K, wan, lat, n, params, overlap


@SETTINGS
@given(equal_grids())
def test_equal_links_give_section_13(case):
    K, wan, lat, n, params, overlap = case
    base = bandjax.reference().replace(dcs=float(K), wan_Bps=wan, wan_latency_s=lat,
                                       workers_per_dc=n, params=params, overlap_fraction=overlap)
    table_sc = base.with_links(np.full((K, K), wan), np.full((K, K), lat))
    for topology in ("ring", "mesh"):
        a = np.asarray(step_terms_s(base.replace(topology=topology)))
        b = np.asarray(step_terms_s(table_sc.replace(topology=topology)))
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=0)
        ea = np.asarray(energy_per_step_J(base.replace(topology=topology), a.sum(-1)))
        eb = np.asarray(energy_per_step_J(table_sc.replace(topology=topology), b.sum(-1)))
        np.testing.assert_allclose(eb, ea, rtol=1e-12, atol=0)


@st.composite
def unequal(draw, latency=True):
    K = draw(st.integers(3, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    B, L = random_table(np.random.default_rng(seed), K, latency)
    return K, B, L


def _ring_min(B):
    K = B.shape[0]
    return min(range(K), key=lambda i: B[i, (i + 1) % K])


@SETTINGS
@given(unequal(), st.floats(1.0001, 10.0))
def test_ring_raising_the_slowest_link_never_slows_a_step(case, factor):
    K, B, L = case
    base = bandjax.reference().with_links(B, L)
    i = _ring_min(B)
    B2 = B.copy()
    B2[i, (i + 1) % K] *= factor
    slow, fast = np.asarray(step_s(base)), np.asarray(step_s(base.with_links(B2, L)))
    assert np.all(fast <= slow * (1 + 1e-15))
    # and the bytes term falls as the new slowest ring link says
    new_min = min(B2[j, (j + 1) % K] for j in range(K))
    old, new = np.asarray(step_terms_s(base))[:, WAN], np.asarray(step_terms_s(base.with_links(B2, L)))[:, WAN]
    np.testing.assert_allclose(new, old * B[i, (i + 1) % K] / new_min, rtol=1e-13)


@SETTINGS
@given(unequal(), st.floats(0.0, 1.0))
def test_ring_other_links_change_nothing_until_they_are_the_slowest(case, share):
    K, B, L = case
    base = bandjax.reference().with_links(B, L)
    i = _ring_min(B)
    slowest = B[i, (i + 1) % K]
    j = (i + 1) % K  # another ring link, j -> j+1
    B2 = B.copy()
    # anywhere between the slowest link's bandwidth and far above: never below the slowest
    B2[j, (j + 1) % K] = slowest * (1 + 100 * share)
    B2[1, 0] = B2[1, 0] * 7  # a link the ring does not use (1 -> 0 is never i -> i+1 for K >= 3)
    np.testing.assert_allclose(np.asarray(step_s(base.with_links(B2, L))), np.asarray(step_s(base)),
                               rtol=1e-13)
    # below the slowest, it paces the ring
    B2[j, (j + 1) % K] = slowest / 2
    terms = np.asarray(step_terms_s(base.with_links(B2, L)))[:, WAN]
    np.testing.assert_allclose(terms, np.asarray(step_terms_s(base))[:, WAN] * 2, rtol=1e-13)


@SETTINGS
@given(unequal(latency=False), st.floats(1.0001, 10.0))
def test_mesh_only_the_slowest_pair_matters(case, factor):
    K, B, L = case
    base = bandjax.reference().with_links(B, L).replace(topology="mesh")
    off = ~np.eye(K, dtype=bool)
    slowest = np.unravel_index(np.argmin(np.where(off, B, np.inf)), B.shape)
    second = np.sort(B[off])[1]
    others = B.copy()
    others[off & (B > B[slowest])] *= factor  # every pair but the slowest faster
    np.testing.assert_allclose(np.asarray(step_s(base.with_links(others, L))),
                               np.asarray(step_s(base)), rtol=1e-13)
    up = B.copy()
    up[slowest] = B[slowest] * factor  # the slowest faster: the mesh follows the next slowest
    terms = np.asarray(step_terms_s(base.with_links(up, L)))[:, WAN]
    expected = np.asarray(step_terms_s(base))[:, WAN] * B[slowest] / min(up[slowest], second)
    np.testing.assert_allclose(terms, expected, rtol=1e-13)
    assert {p for p in pacing_links(base).values()} == {(f"dc{slowest[0]}", f"dc{slowest[1]}")}


@SETTINGS
@given(unequal())
def test_latency_enters_as_the_table_says(case):
    K, B, L = case
    sc = bandjax.reference().with_links(B, L)
    t = traffic_B(sc)
    hops = np.asarray(t.hops)
    ring = np.asarray(step_terms_s(sc))[:, LAT]
    # ring: (hops / K) x the sum of the ring's latencies, whatever their bandwidths
    np.testing.assert_allclose(ring, hops / K * sum(L[i, (i + 1) % K] for i in range(K)), rtol=1e-13)
    # mesh at one link's bandwidth everywhere: the longest link paces, hops x its latency
    flat = sc.with_links(np.full((K, K), 1e9), L).replace(topology="mesh")
    hops_mesh = np.asarray(traffic_B(flat).hops)
    off = ~np.eye(K, dtype=bool)
    np.testing.assert_allclose(np.asarray(step_terms_s(flat))[:, LAT], hops_mesh * L[off].max(),
                               rtol=1e-13)
    # a sweep over wan_latency_s scales every latency in proportion
    np.testing.assert_allclose(np.asarray(step_terms_s(sc.replace(wan_latency_s=2 * sc.wan_latency_s)))[:, LAT],
                               2 * ring, rtol=1e-13)


def test_wan_energy_sums_bytes_over_the_links_in_use():
    """model.md section 8: 8 x (links in use) x bytes per link x 50 pJ/bit; a link's bandwidth
    changes no byte, so a table gives the same WAN energy as equal links at the same K."""
    rng = np.random.default_rng(3)
    B, L = random_table(rng, 4)
    for topology in ("ring", "mesh"):
        sc = bandjax.reference().with_links(B, L).replace(topology=topology)
        eq = bandjax.reference().replace(dcs=4.0, topology=topology)
        t = traffic_B(sc)
        links = 4 if topology == "ring" else 12
        step = np.zeros(len(sc.ids))
        net = np.asarray(energy_per_step_J(sc, step))[:, 1]
        port = 8 * 16 * (np.asarray(t.port_B) + np.asarray(t.qsfp_B)) * 10e-12
        np.testing.assert_allclose(net - port, 8 * links * np.asarray(t.wan_B) * 50e-12, rtol=1e-12)
        np.testing.assert_allclose(net, np.asarray(energy_per_step_J(eq, step))[:, 1], rtol=1e-12)


def test_pacing_links_name_the_ring_and_mesh_pacers():
    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * Gb
    L = np.array([[0, 10, 40], [10, 0, 50], [40, 50, 0]]) * ms
    sc = bandjax.reference().with_links(B, L, ("east", "central", "eu"))
    assert set(pacing_links(sc).values()) == {("central", "eu")}  # the ring's slowest link
    up = sc.with_link("central", "eu", bandwidth=100 * Gb, symmetric=True)
    assert set(pacing_links(up).values()) == {("eu", "east")}
    # mesh: per variant, the pair whose bytes / B + hops x l is largest (by hand)
    mesh = up.replace(topology="mesh")
    B2, L2, names = mesh.link_values()
    t = traffic_B(mesh)
    expected = {}
    for vid, b, h in zip(mesh.ids, np.asarray(t.wan_B), np.broadcast_to(np.asarray(t.hops), len(mesh.ids))):
        i, j = max(mesh_pairs(3), key=lambda p: b / B2[p] + h * L2[p])
        expected[vid] = (names[i], names[j])
    assert pacing_links(mesh) == expected
    # both kinds occur here: the large payloads are paced by east <-> eu's 10 Gb/s, the small
    # ones by central <-> eu's 50 ms
    assert {("east", "eu"), ("central", "eu")} <= set(expected.values())
    assert set(pacing_links(bandjax.reference()).values()) == {("dc0", "dc1")}
    with pytest.raises(ValueError, match="a scenario point"):
        pacing_links(sc.replace(wan_Bps=np.array([1e9, 2e9])))


# ------------------------------------------------------------------------- sweeps, break-evens


def test_sweep_over_bandwidth_scales_every_link_and_says_so():
    B, L = random_table(np.random.default_rng(5), 3)
    sc = bandjax.reference().with_links(B, L)
    ds = bandjax.sweep(sc, bandwidth=[1, 10], topology=["ring", "mesh"], quantities=["step_s"])
    assert "slowest link's" in ds.attrs["links_scaling"] and "in proportion" in ds.attrs["links_scaling"]
    np.testing.assert_allclose(ds.step_s.sel(bandwidth=10, topology="mesh").values,
                               np.asarray(step_s(sc.with_links(B * 10e9 / sc.wan_Bps, L)
                                                 .replace(topology="mesh"))), rtol=1e-12)
    lat = bandjax.sweep(sc, wan_latency_s=[0.01, 0.02], quantities=["step_s"])
    assert "longest link's" in lat.attrs["links_scaling"]
    assert "links_scaling" not in bandjax.sweep(sc, enob=8, quantities=["step_s"]).attrs
    assert "links_scaling" not in bandjax.sweep(bandjax.reference(), bandwidth=[1, 2],
                                                quantities=["step_s"]).attrs
    assert "links_scaling" in bandjax.winner(sc, bandwidth=[1, 10]).attrs
    assert scaling_note(bandjax.reference(), ["bandwidth"]) is None


@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_break_even_over_bandwidth_with_links(topology):
    """The crossing of two variants over the slowest link's bandwidth: each time to target at
    the returned bandwidth is equal (the residual), and between there and each end of the range
    the winner is the one the break-even names (checked on the closed forms at the ends)."""
    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * Gb
    L = np.array([[0, 1, 4], [1, 0, 5], [4, 5, 0]]) * ms
    sc = bandjax.reference().with_links(B, L).replace(topology=topology)
    be = bandjax.break_even(sc, "E'", "AdamW")
    assert "slowest link's" in be.links_scaling
    (x,) = be.x[: int(be.count)]
    T = lambda s: np.asarray(bandjax.time_to_target_s(s, bandjax.steps_to_target(s)))  # noqa: E731
    ia, ib = sc.ids.index("band_switch"), sc.ids.index("adamw")
    at = T(sc.replace(wan_Bps=x))
    assert at[ia] == pytest.approx(at[ib], rel=1e-9)
    below, above = T(sc.replace(wan_Bps=x / 2)), T(sc.replace(wan_Bps=x * 2))
    assert bool(be.a_wins_below[0]) == (below[ia] < below[ib]) != (above[ia] < above[ib])


def test_queueing_approximation_refuses_links_that_differ():
    from bandjax.queueing import shared_wan_step_s

    B, L = random_table(np.random.default_rng(2), 3)
    with pytest.raises(ValueError, match="assumes identical links"):
        shared_wan_step_s(bandjax.reference().with_links(B, L), 0.5)
    assert differ(bandjax.reference().with_links(B, L))
    assert not differ(bandjax.reference()) and not differ(bandjax.reference().with_links(np.ones((3, 3))))
    equal = bandjax.reference().replace(dcs=3.0)
    np.testing.assert_allclose(
        np.asarray(shared_wan_step_s(equal.with_links(np.full((3, 3), 12.5e9)), 0.5)),
        np.asarray(shared_wan_step_s(equal, 0.5)), rtol=1e-12)


# ------------------------------------------------------------------------------ the engine


@pytest.mark.parametrize("K", [3, 5])
@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_engine_at_load_0_equals_the_closed_form(K, topology):
    rng = np.random.default_rng(10 + K)
    B, L = random_table(rng, K)
    sc = bandjax.reference().with_links(B, L).replace(topology=topology)
    closed = np.asarray(step_s(sc))
    for i, v in enumerate(sc.ids):
        r = events.run(sc, v, load=0.0, steps=3)
        np.testing.assert_allclose(r.step_s, closed[i], rtol=1e-12, atol=0)
    plan = events.build(sc, "adamw")
    assert plan.links == (K if topology == "ring" else K * (K - 1)) == len(plan.link_Bps)
    assert plan.wan_Bps == min(plan.link_Bps)


def test_engine_background_is_load_times_each_links_own_bandwidth():
    """Each link's busy share is the load (its background at load x B_i) plus the sync's bytes /
    B_i over the run; 4 links from 1 to 8 GB/s, ten thousand background transfers or more each:
    within 0.03 (a few standard errors of a busy share over this many transfers)."""
    B = np.array([[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 4], [8, 0, 0, 0]], dtype=float) * 1e9
    B[B == 0] = 1e9  # links the ring does not use
    sc = bandjax.reference().replace(wan_message_B=1e6, background_B=1e5).with_links(B)
    plan = events.build(sc, "topk")
    r = events.simulate(plan, 0.5, seed=1, steps=200, trace_steps=0)
    duration = float(np.sum(r.step_s))
    expected = [0.5 + 200 * plan.wan_B / b / duration for b in plan.link_Bps]
    np.testing.assert_allclose(r.utilisation, expected, atol=0.03)
    assert sorted(plan.link_Bps) == [1e9, 2e9, 4e9, 8e9]


# ------------------------------------------------------------------------ the scenario file

ROWS = """
[links]
worker_port = "50 GB/s"
[[links.pairs]]
from = "us-east"
to = "us-central"
wan = "100 Gb/s"
latency = "10 ms"
symmetric = true
[[links.pairs]]
from = "us-east"
to = "eu"
wan = "10 Gb/s"
latency = "40 ms"
symmetric = true
[[links.pairs]]
from = "us-central"
to = "eu"
wan = "5 Gb/s"
latency = "50 ms"
[[links.pairs]]
from = "eu"
to = "us-central"
wan = "2.5 Gb/s"
latency = "55 ms"
"""


def _load_text(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load(path)


def test_file_rows_give_the_table_and_round_trip(tmp_path):
    sc = _load_text(tmp_path, ROWS)
    assert sc.links.names == ("us-east", "us-central", "eu") and float(sc.dcs) == 3
    B, L, _ = sc.link_values()
    assert (B[1, 2], B[2, 1], B[0, 2], B[2, 0]) == (5 * Gb, 2.5 * Gb, 10 * Gb, 10 * Gb)
    assert (L[2, 1], L[1, 0]) == (pytest.approx(55 * ms, rel=1e-15), pytest.approx(10 * ms, rel=1e-15))
    assert (sc.wan_Bps, sc.wan_latency_s) == (2.5 * Gb, pytest.approx(55 * ms, rel=1e-15))
    save(sc, tmp_path / "out.toml")
    again = load(tmp_path / "out.toml")
    assert again.links.names == sc.links.names
    np.testing.assert_allclose(again.links.bandwidth_rel, sc.links.bandwidth_rel, rtol=1e-15)
    np.testing.assert_allclose(again.links.latency_rel, sc.links.latency_rel, rtol=1e-15)
    assert (again.wan_Bps, again.wan_latency_s, again.dcs) == (sc.wan_Bps, sc.wan_latency_s, sc.dcs)
    np.testing.assert_allclose(np.asarray(step_s(again)), np.asarray(step_s(sc)), rtol=1e-15)
    text = (tmp_path / "out.toml").read_text()
    assert "symmetric = true" in text and "names = [" in text
    # wan / latency / dcs written beside the rows agree with them, so the file loads as saved
    data = to_toml_dict(sc)
    assert data["links"]["wan"] == "0.3125 GB/s" and data["cluster"]["dcs"] == 3
    # a names list sets the ring order
    named = _load_text(tmp_path, ROWS.replace("[links]\n", '[links]\nnames = ["eu", "us-east", "us-central"]\n'))
    assert named.links.names == ("eu", "us-east", "us-central")


@pytest.mark.parametrize("edit, says", [
    (lambda t: t.replace('[[links.pairs]]\nfrom = "eu"\nto = "us-central"\nwan = "2.5 Gb/s"\nlatency = "55 ms"\n', ""),
     "no row gives eu -> us-central"),
    (lambda t: t.replace('to = "eu"\nwan = "10 Gb/s"', 'to = "eu"\nwan = 10'),
     "row 2 (us-east -> eu): wan = 10 has no unit"),
    (lambda t: t.replace('latency = "40 ms"', 'latency = 0.04'), "row 2 (us-east -> eu): latency = 0.04 has no unit"),
    (lambda t: t.replace('wan = "5 Gb/s"', 'wan = "5 GHz"'), "row 3 (us-central -> eu) wan = '5 GHz'"),
    (lambda t: t.replace('wan = "5 Gb/s"', 'wan = "-5 Gb/s"'), "must be a finite number > 0"),
    (lambda t: t.replace('from = "eu"\nto = "us-central"', 'from = "us-central"\nto = "eu"'),
     "row 4: the link us-central -> eu is already given by row 3"),
    (lambda t: t.replace('to = "us-central"\nwan = "2.5', 'to = "us-east"\nwan = "2.5'),
     "row 4: the link eu -> us-east is already given by row 2"),
    (lambda t: t.replace("[links]\n", '[links]\nnames = ["us-east", "us-central"]\n'),
     "row 2: to = 'eu' is not a DC of [links] names"),
    (lambda t: t.replace('to = "us-central"\nwan = "100', 'to = "us-east"\nwan = "100'),
     "row 1: from = to = 'us-east'"),
    (lambda t: t.replace('symmetric = true\n[[links.pairs]]\nfrom = "us-east"\nto = "eu"',
                         'symmetric = "yes"\n[[links.pairs]]\nfrom = "us-east"\nto = "eu"'),
     "row 1 (us-east -> us-central): symmetric = 'yes'"),
    (lambda t: t.replace('latency = "50 ms"', 'latency = "50 ms"\nspeed = 1'), "row 3: speed is not a known key"),
    (lambda t: t.replace('from = "us-central"\nto = "eu"\n', 'to = "eu"\n'), "row 3: from is missing"),
    (lambda t: t.replace('from = "us-central"\nto = "eu"\n', 'from = ""\nto = "eu"\n'), "row 3: from = ''"),
    (lambda t: t + '[cluster]\ndcs = 4\n', "[cluster] dcs = 4"),
    (lambda t: t.replace('[links]\n', '[links]\nwan = "10 GB/s"\n'), "[links] wan = '10.0 GB/s' disagrees"),
    (lambda t: t.replace('[links]\n', '[links]\nlatency = "1 ms"\n'), "the longest link's latency"),
    (lambda t: t.replace('[links]\n', '[links]\nnames = "us-east"\n'), "[links] names = 'us-east'"),
    (lambda t: t.replace('[links]\n', '[links]\nnames = ["a", "a", "b"]\n'), "given twice"),
])
def test_malformed_file_rows_name_the_row(tmp_path, edit, says):
    with pytest.raises(ScenarioError) as e:
        _load_text(tmp_path, edit(ROWS))
    assert says in str(e.value)


@pytest.mark.parametrize("data, says", [
    ({"links": {"pairs": [1, 2]}}, "[[links.pairs]] row 1 = 1: expected a table"),
    ({"links": {"pairs": "us-east to eu"}}, "expected [[links.pairs]] rows"),
    ({"links": {"pairs": []}}, "expected [[links.pairs]] rows"),
    ({"links": {"names": ["a", "b"]}}, "names go with [[links.pairs]] rows"),
    ({"links": {"pairs": [{"from": "a", "to": "b", "wan": "1 GB/s"}]}}, "no row gives b -> a"),
])
def test_malformed_link_sections(data, says):
    with pytest.raises(ScenarioError) as e:
        from_toml_dict(data)
    assert says in str(e.value)


def test_the_files_existing_link_keys_keep_their_meaning(tmp_path):
    sc = _load_text(tmp_path, '[links]\nwan = "10 GB/s"\nlatency = "5 ms"\nqsfp_port = "50 GB/s"\n')
    assert sc.links is None and (sc.wan_Bps, sc.wan_latency_s, sc.qsfp_port_Bps) == (10e9, 5e-3, 50e9)
    # with rows, wan and latency that agree with them are accepted (what save writes)
    agree = ROWS.replace("[links]\n", '[links]\nwan = "2.5 Gb/s"\nlatency = "55 ms"\n')
    assert _load_text(tmp_path, agree).wan_Bps == 2.5 * Gb


# ---------------------------------------------------------------------- the worked example


def test_tutorial_worked_example_three_regions():
    """docs/tutorial.md section 6 and README.md: us-east and us-central close (100 Gb/s, 10 ms),
    eu far (10 Gb/s and 40 ms from us-east, 5 Gb/s and 50 ms from us-central), H100s at 40%,
    Llama-3-8B. The printed numbers are recomputed here from section 15's table by hand (NumPy)
    for C' (the winner: ring all-reduce of the band on the GPU) and checked against bandjax."""
    names = ("us-east", "us-central", "eu")
    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * Gb
    L = np.array([[0, 10, 40], [10, 0, 50], [40, 50, 0]]) * ms
    base = (bandjax.reference().with_gpu("h100", utilisation=0.4)
            .at_model_size(bandjax.PRESETS["llama3-8b"]))
    sc = base.with_links(bandwidth=B, latency=L, names=names)

    def c_prime_s(B, topology):
        """C' time to target by hand: 2,667 steps x (c + 2(n-1)/n p / port + WAN + d)."""
        P, n, K = 8.03e9, 4, 3
        c = 6 * P * 512 / (989e12 * 0.4)
        p = 0.25 * P * 8 / 8  # band share x P x GPU bits / 8
        port = 2 * (n - 1) / n * p / 50e9
        if topology == "ring":
            ring = [(0, 1), (1, 2), (2, 0)]
            wan = 2 * (K - 1) / K * p / min(B[i, j] for i, j in ring) \
                + 2 * (K - 1) / K * sum(L[i, j] for i, j in ring)
        else:
            wan = max(2 * p / K / B[i, j] + 2 * L[i, j] for i in range(K) for j in range(K) if i != j)
        return 2667 * (c + port + wan + 0.1009e-3)

    for s, table_B in ((sc, B), (sc.with_link("us-central", "eu", bandwidth=10 * Gb, symmetric=True),
                                  np.where(np.isin(B, [5 * Gb]), 10 * Gb, B))):
        w = bandjax.winner(s, topology=["ring", "mesh"], basis=["hypothesis", "exact"])
        ids = list(w["variant"].values)
        assert {ids[i] for i in w["winner"].values.ravel()} == {"band_gpu_allreduce"}
        t = w["time_to_target_s"].sel(basis="hypothesis").values
        np.testing.assert_allclose(t, [c_prime_s(table_B, "ring"), c_prime_s(table_B, "mesh")], rtol=1e-12)
    # the numbers the tutorial prints
    w0 = bandjax.winner(sc, topology=["ring", "mesh"]).time_to_target_s.values
    up = sc.with_link("us-central", "eu", bandwidth=10 * Gb, symmetric=True)
    w1 = bandjax.winner(up, topology=["ring", "mesh"]).time_to_target_s.values
    far = sc.with_link("us-central", "eu", bandwidth=100 * Gb, symmetric=True)
    w2 = bandjax.winner(far, topology=["ring", "mesh"]).time_to_target_s.values
    assert np.round(w0).tolist() == [12105.0, 6305.0]
    assert np.round(w1).tolist() == [6394.0, 3449.0]
    assert np.round(w2).tolist() == [6394.0, 3396.0]
    assert pacing_links(far)["band_gpu_allreduce"] == ("eu", "us-east")
    runner = bandjax.winner(sc, topology=["ring", "mesh"])
    second = np.asarray(runner["variant"].values)[runner["runner_up"].values]
    assert second.tolist() == ["band_switch", "band_switch"]  # E', hypothesis basis
    assert np.round(runner["margin"].values, 2).tolist() == [1.13, 1.54]


def test_break_even_elasticity_with_links_matches_finite_differences():
    """d log x* / d log l of the E'-vs-AdamW crossing on a mesh whose latencies differ: the
    implicit derivative (every parameter scaled at once, K included) against central
    differences of the crossing itself."""
    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * Gb
    L = np.array([[0, 1, 4], [1, 0, 5], [4, 5, 0]]) * ms
    sc = bandjax.reference().with_links(B, L).replace(topology="mesh")
    _, e = bandjax.elasticities(sc, "E'", "AdamW")
    h = 1e-5

    def log_x(s):
        return math.log(float(bandjax.break_even(s, "E'", "AdamW").x[0]))

    fd = (log_x(sc.replace(wan_latency_s=sc.wan_latency_s * math.exp(h)))
          - log_x(sc.replace(wan_latency_s=sc.wan_latency_s * math.exp(-h)))) / (2 * h)
    assert float(e["wan_latency_s"][0]) == pytest.approx(fd, rel=1e-5)


_junk = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
                  st.text(max_size=8), st.sampled_from(["a", "b", "c", "10 Gb/s", "5 ms", "-1 GB/s",
                                                        "inf GB/s", "nan ms", "1e400 GB/s"]),
                  st.lists(st.sampled_from(["a", "b", "c", ""]), max_size=4))
_row = st.one_of(_junk, st.dictionaries(st.sampled_from(list(("from", "to", "wan", "latency",
                                                              "symmetric", "x"))), _junk, max_size=6))


@settings(max_examples=150, deadline=None)
@given(st.lists(_row, max_size=7), st.one_of(st.none(), _junk))
def test_random_link_rows_give_a_table_or_one_scenario_error(rows, names):
    """Whatever the rows hold, loading gives a valid table or a ScenarioError (never another
    exception), and a table it gives satisfies the Links checks."""
    links = {"pairs": rows} if names is None else {"pairs": rows, "names": names}
    try:
        sc = from_toml_dict({"links": links})
    except ScenarioError:
        return
    K = sc.links.K
    off = ~np.eye(K, dtype=bool)
    assert K >= 2 and float(sc.dcs) == K and np.all(sc.links.bandwidth_rel[off] >= 1.0)
    assert np.isfinite(np.asarray(step_s(sc))).all()


# ------------------------------------------------------------- syncs in rounds on per-link values


def _method(H, F, tau):
    import dataclasses

    from bandjax import variants as V

    return dataclasses.replace(V.get("diloco", V.METHODS), id="m", sync_every=H, fragments=F,
                               delay=tau)


@pytest.mark.parametrize("topology", ["ring", "mesh"])
@pytest.mark.parametrize("H, F, tau, f", [(1, 1, 0, 0.0), (10, 4, 1, 2 / 3), (8, 8, 0, 0.5)])
def test_rounds_on_differing_links_equal_the_by_hand_rule(topology, H, F, tau, f):
    """Sections 14 and 15 together, written out with loops: a fragment sync's WAN part is a
    ring's bytes / (F x its slowest link) + (hops / K) x its latencies, or the mesh link whose
    bytes / (F B_ij) + hops x l_ij is largest (the pair that binds a fragment, not a whole
    sync: with F > 1 it can be another); step = c + F max(0, comm_frag - (f + tau) c) / H."""
    K = 3
    # a narrow pair (0, 2) and a long one (1, 2): a whole sync of the 1e9-parameter model waits on
    # the narrow pair's bytes, a quarter or an eighth of it on the long pair's latency
    B = np.full((K, K), 10e9)
    B[0, 2] = B[2, 0] = 1e9
    L = np.full((K, K), 1e-3)
    L[1, 2] = L[2, 1] = 0.5
    sc = (bandjax.reference().replace(overlap_fraction=f, params=1e9)
          .with_variant(_method(H, F, tau), d_s=1e-3).with_links(B, L).replace(topology=topology))
    if topology == "mesh":
        pace = bandjax.pacing_links(sc)["m"]
        assert pace == (("dc0", "dc2") if F == 1 else ("dc1", "dc2")), pace
    t = traffic_B(sc)
    wan_B = np.asarray(t.wan_B)
    hops = np.broadcast_to(np.asarray(t.hops), wan_B.shape)
    terms = np.asarray(step_terms_s(sc))
    c = float(sc.gpu_compute_s)
    for i, v in enumerate(sc.variants):
        Fv, Hv = v.fragments, (v.sync_every or float(sc.sync_every_H))
        if topology == "ring":
            ring = [(a, (a + 1) % K) for a in range(K)]
            wan = wan_B[i] / Fv / min(B[p] for p in ring) + hops[i] / K * sum(L[p] for p in ring)
        else:
            pairs = [(a, b) for a in range(K) for b in range(K) if a != b]
            wan = max(wan_B[i] / Fv / B[p] + hops[i] * L[p] for p in pairs)
        # the other terms of a fragment sync (module, ports / F; d in full)
        frag = bandjax.step.fragment_parts_s(sc)
        rest = sum(np.broadcast_to(np.asarray(frag[j - 1]), wan_B.shape)[i]
                   for j in range(1, len(frag) + 1) if j not in (WAN, LAT))
        step = c + Fv * max(0.0, rest + wan - (f + v.delay) * c) / Hv
        assert float(np.asarray(step_s(sc))[i]) == pytest.approx(step, rel=1e-12), v.id
        assert float(np.sum(terms[i])) == pytest.approx(step, rel=1e-12), v.id


@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_engine_at_load_0_equals_rounds_on_differing_links(topology):
    """The engine's per-link capacities and latencies with its fragment scheduling: at load 0,
    windows not overlapping (f + tau <= H / F), the closed form of sections 14 and 15."""
    K = 3
    B, L = random_table(np.random.default_rng(7), K)
    L *= 0.01  # latencies small enough for the windows of a short round
    sc = (bandjax.reference().replace(overlap_fraction=0.5, wan_latency_s=0.2e-3)
          .with_variant(_method(8, 4, 1), d_s=0.05e-3).with_links(B * 0.5, L)
          .replace(topology=topology))
    closed = np.asarray(step_s(sc))
    for vid in ("m", "adamw"):
        run = events.run(sc, vid, 0.0, steps=16 if vid == "m" else 2, trace_steps=0)
        assert run.mean_s == pytest.approx(float(closed[sc.ids.index(vid)]), rel=1e-12, abs=0)


@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_required_bandwidth_on_differing_links_agrees_with_brentq(topology):
    """required_bandwidth with per-link values: a ring's slowest link and a mesh's per-link
    closed forms (the largest over links) against brentq on the sweep's own compute utilisation
    (every link scaled in proportion, as a sweep over bandwidth does), to 1e-9 relative (model
    section 14's tolerance)."""
    from scipy.optimize import brentq

    from bandjax.need import REACHED

    regions = ("us-east", "us-central", "eu")
    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * Gb
    L = np.array([[0, 10, 80], [10, 0, 30], [80, 30, 0]]) * ms  # the longest link is not the slowest
    sc = (bandjax.reference().with_gpu("h100", utilisation=0.4).at_preset("llama3-8b")
          .replace(overlap_fraction=2 / 3, topology=topology)
          .with_variants(bandjax.METHODS).with_links(bandwidth=B, latency=L, names=regions))
    ids = ["diloco", "streaming_diloco", "streaming_diloco_fp4", "intellect1_int8"]
    targets = [0.5, 0.8]
    ds = bandjax.required_bandwidth(sc, targets, variant=ids, range_GBps=(1e-3, 1e4))
    checked = 0
    for vid in ids:
        for u in targets:
            if int(ds["status"].sel(variant=vid, utilisation=u)) != REACHED:
                continue

            def gap(log_GBps):
                cu = bandjax.sweep(sc, bandwidth=float(np.exp(log_GBps)), variant=vid,
                                   quantities=("compute_utilisation",))["compute_utilisation"]
                return float(cu) - u
            root = np.exp(brentq(gap, np.log(1e-3), np.log(1e4), xtol=1e-14, rtol=1e-15))
            got = float(ds["required_bandwidth_GBps"].sel(variant=vid, utilisation=u))
            assert got == pytest.approx(root, rel=1e-9), (vid, u)
            checked += 1
    assert checked >= 6
    assert "slowest link" in ds.attrs["links_scaling"]
    # not the equal-links answer at the slowest bandwidth and the longest latency: on the mesh the
    # 80 ms pair and the 5 Gb/s pair are different links, on the ring the latencies are summed
    equal = sc.replace(links=None, dcs=3.0, wan_latency_s=float(sc.wan_latency_s))
    plain = bandjax.required_bandwidth(equal, targets, variant=ids, range_GBps=(1e-3, 1e4))
    assert not np.allclose(plain["required_bandwidth_GBps"], ds["required_bandwidth_GBps"],
                           equal_nan=True)
