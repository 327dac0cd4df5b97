"""A sweep over one link's bandwidth or latency (``bandjax.sweep(sc, link="a -> b",
link_bandwidth=[...])``, docs/model.md section 15): each point is the scenario with that link
changed and every other link kept, in one compiled call, and bad input is refused naming the
argument, the link and what is allowed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import bandjax
from bandjax import ScenarioError
from bandjax._limits import MAX_LINK_BANDWIDTH_RATIO, MAX_LINK_SWEEP_VALUES
from benchmarks.links_bench import count_compiles

NAMES = ["us-east", "eu", "asia", "sa"]
RTOL = 1e-12  # the same closed forms, the table made per point here or by with_links: rounding apart
QUANTITIES = ["step_s", "time_to_target_s", "compute_utilisation", "hot_spot",
              "energy_per_step_J", "wan_B", "throughput_tokens_per_s"]
GBPS = np.array([0.3, 2.0, 9.0, 45.0, 300.0])  # below, among and above the other links (GB/s)
LATENCY_S = np.array([0.0, 2e-5, 3e-3])


def table(seed, K=4):
    rng = np.random.default_rng(seed)
    return rng.uniform(2e9, 30e9, (K, K)), rng.uniform(1e-6, 50e-6, (K, K))


def scenario(B, L, topology="mesh", **fields):
    return bandjax.reference().replace(topology=topology, **fields).with_links(B, L, NAMES)


def changed(B, L, pairs, bandwidth_Bps=None, latency_s=None):
    """The absolute tables with the links ``pairs`` set, every other link as it was."""
    B, L = B.copy(), L.copy()
    for i, j in pairs:
        if bandwidth_Bps is not None:
            B[i, j] = bandwidth_Bps
        if latency_s is not None:
            L[i, j] = latency_s
    return B, L


@pytest.mark.parametrize("topology", ["mesh", "ring"])
@pytest.mark.parametrize("link, pairs", [("us-east -> eu", [(0, 1)]),
                                         ("eu <-> asia", [(1, 2), (2, 1)])])
def test_each_point_is_the_scenario_with_that_link_changed(topology, link, pairs):
    """The reference: a Python loop of with_links tables (every other link as given), each swept
    at one point."""
    B, L = table(seed=1)
    sc = scenario(B, L, topology, overlap_fraction=0.3)
    got = bandjax.sweep(sc, link=link, link_bandwidth=GBPS, link_latency_s=LATENCY_S,
                        quantities=QUANTITIES)
    assert got["step_s"].dims == ("link_bandwidth", "link_latency_s", "variant")
    for k, gbps in enumerate(GBPS):
        for m, lat in enumerate(LATENCY_S):
            want = bandjax.sweep(scenario(*changed(B, L, pairs, gbps * 1e9, lat), topology,
                                          overlap_fraction=0.3), quantities=QUANTITIES)
            for q in QUANTITIES:
                np.testing.assert_allclose(got[q].isel(link_bandwidth=k, link_latency_s=m).values,
                                           want[q].values, rtol=RTOL, err_msg=q)


@pytest.mark.parametrize("topology", ["mesh", "ring"])
def test_restores_and_sites_follow_the_link(topology):
    """On sites that differ with failures (each DC restores over its slowest incoming link), a
    link's bandwidth sweep against the loop of with_links tables."""
    B, L = table(seed=2)
    quantities = ["step_s", "ettr", "goodput", "throughput_tokens_per_s", "time_to_target_s"]

    def build(B, L):
        sc = scenario(B, L, topology, failure_rate_per_hour=1e-4, workers_per_dc=64.0,
                      sync_every_H=20.0)
        c = float(sc.gpu_compute_s)
        return sc.with_sites(workers=[64, 32, 64, 16], gpu_compute_s=[c, 1.3 * c, c, 0.9 * c])

    got = bandjax.sweep(build(B, L), link="sa -> us-east", link_bandwidth=GBPS,
                        quantities=quantities)
    for k, gbps in enumerate(GBPS):
        want = bandjax.sweep(build(*changed(B, L, [(3, 0)], gbps * 1e9)), quantities=quantities)
        for q in quantities:
            np.testing.assert_allclose(got[q].isel(link_bandwidth=k).values, want[q].values,
                                       rtol=RTOL, err_msg=q)


def test_the_mesh_term_is_section_15s_closed_form():
    """AdamW's WAN term on a 3-DC mesh, computed here from docs/model.md section 15's formula
    (the largest over links of bytes per link / B_ij + hops x l_ij, with section 13's bytes per
    link 2G/K and 2 hops for an all-reduce on a mesh), against the sweep's step time times its
    WAN and WAN-latency shares (H = 1, no overlap: each share is its term / the step). The swept
    link paces at its lowest values and another link above."""
    names = ["a", "b", "c"]
    B = np.array([[0, 8e9, 6e9], [7e9, 0, 9e9], [5e9, 4e9, 0]])
    L = np.array([[0, 30e-3, 10e-3], [20e-3, 0, 5e-3], [15e-3, 40e-3, 0]])
    sc = bandjax.reference().replace(topology="mesh").with_links(B, L, names)
    gbps = np.array([0.5, 2.0, 50.0])
    ds = bandjax.sweep(sc, link="a -> b", link_bandwidth=gbps, variant="adamw",
                       quantities=["step_s", "hot_spot"])
    shares = ds["hot_spot"].sel(component=["wan", "wan_latency"]).sum("component")
    got = (ds["step_s"] * shares).values
    G = 4 * float(sc.params)  # the dense delta, fp32
    K, hops = 3, 2
    pacing = []
    for v in gbps:
        Bv = B.copy()
        Bv[0, 1] = v * 1e9
        terms = {(i, j): (2 * G / K) / Bv[i, j] + hops * L[i, j]
                 for i in range(K) for j in range(K) if i != j}
        pacing.append(max(terms, key=terms.get))
        np.testing.assert_allclose(got[list(gbps).index(v)], max(terms.values()), rtol=RTOL)
    assert pacing[0] == (0, 1) and pacing[-1] != (0, 1)


def test_one_compile_for_the_whole_axis():
    """The first sweep of an axis compiles one program; another table of the same K, another
    link and other values of the same number run it without compiling."""
    gbps = np.geomspace(0.5, 200.0, 37)
    first = scenario(*table(seed=3))
    bandjax.sweep(first, quantities=["step_s"])  # a first program of its own (and the options')
    _, compiles = count_compiles(lambda: bandjax.sweep(first, link="us-east -> eu",
                                                       link_bandwidth=gbps, quantities=["step_s"]))
    assert compiles == 1
    other = scenario(*table(seed=4))
    answers, compiles = count_compiles(lambda: [
        bandjax.sweep(other, link=link, link_bandwidth=gbps * f, quantities=["step_s"])
        ["step_s"].values for link, f in (("asia <-> sa", 1.0), ("eu -> us-east", 1.5))])
    assert compiles == 0
    assert not np.array_equal(*answers)


def test_attrs_and_a_scalar_value():
    B, L = table(seed=5)
    sc = scenario(B, L)
    ds = bandjax.sweep(sc, link="eu <-> sa", link_bandwidth=[1.0, 2.0], link_latency_s=1e-3,
                       quantities=["step_s"])
    assert ds["step_s"].dims == ("link_bandwidth", "variant")
    assert ds["link_bandwidth"].attrs["units"] == "GB/s"
    assert ds["link_bandwidth"].attrs["link"] == "eu -> sa and sa -> eu"
    assert ds["link_latency_s"].attrs["units"] == "s" and float(ds["link_latency_s"]) == 1e-3
    assert "links_scaling" not in ds.attrs  # no link scales with another
    want = bandjax.sweep(scenario(*changed(B, L, [(1, 3), (3, 1)], 2e9, 1e-3)),
                         quantities=["step_s"])
    np.testing.assert_allclose(ds["step_s"].isel(link_bandwidth=1).values, want["step_s"].values,
                               rtol=RTOL)


def test_the_other_questions_take_a_link_axis():
    """The winner map (whole and in chunks), the bandwidth a target needs (over a link's
    latency) and the tolerated tail, each against the loop of with_links tables."""
    B, L = table(seed=6)
    sc = scenario(B, L, overlap_fraction=0.5)
    w = bandjax.winner(sc, link="us-east -> asia", link_bandwidth=GBPS)
    chunks = bandjax.winner(sc, link="us-east -> asia", link_bandwidth=GBPS, chunk=2)
    need = bandjax.required_bandwidth(sc, [0.3, 0.7], link="us-east -> asia",
                                      link_latency_s=LATENCY_S)
    tail_sc = sc.replace(straggler="exponential", straggler_s=0.05)
    tail = bandjax.tolerated_tail(tail_sc, [0.2, 0.5], link="us-east -> asia",
                                  link_latency_s=LATENCY_S)
    for q in ("winner", "time_to_target_s", "runner_up", "margin"):
        np.testing.assert_array_equal(chunks[q].values, w[q].values)
    for k, gbps in enumerate(GBPS):
        want = bandjax.winner(scenario(*changed(B, L, [(0, 2)], gbps * 1e9), overlap_fraction=0.5))
        assert int(w["winner"][k]) == int(want["winner"])
        np.testing.assert_allclose(float(w["time_to_target_s"][k]), float(want["time_to_target_s"]),
                                   rtol=RTOL)
    for m, lat in enumerate(LATENCY_S):
        B_, L_ = changed(B, L, [(0, 2)], latency_s=lat)
        want = bandjax.required_bandwidth(scenario(B_, L_, overlap_fraction=0.5), [0.3, 0.7])
        np.testing.assert_allclose(need["required_bandwidth_GBps"].isel(link_latency_s=m).values,
                                   want["required_bandwidth_GBps"].values, rtol=RTOL)
        want = bandjax.tolerated_tail(scenario(B_, L_, overlap_fraction=0.5).replace(
            straggler="exponential", straggler_s=0.05), [0.2, 0.5])
        np.testing.assert_allclose(tail["tolerated_tail"].isel(link_latency_s=m).values,
                                   want["tolerated_tail"].values, rtol=RTOL, equal_nan=True)
    with pytest.raises(ValueError, match="link_bandwidth: required_bandwidth solves for the WAN"):
        bandjax.required_bandwidth(sc, 0.5, link="us-east -> asia", link_bandwidth=[1.0])


@pytest.mark.parametrize("args, message", [
    (dict(link="us-east -> europe", link_bandwidth=1.0),
     "link = 'us-east -> europe': 'europe' is not a DC of the links table; DCs: us-east, eu, "
     "asia, sa"),
    (dict(link="mars <-> venus", link_bandwidth=1.0),
     "'mars' and 'venus' are not DCs of the links table; DCs: us-east, eu, asia, sa"),
    (dict(link="us-east", link_bandwidth=1.0),
     "link = 'us-east': expected 'source -> target' (one direction) or 'a <-> b'"),
    (dict(link=("us-east", "eu"), link_bandwidth=1.0), "expected one link as text"),
    (dict(link="eu -> eu", link_bandwidth=1.0), "a link joins two different DCs"),
    (dict(link="eu -> sa"), "link = 'eu -> sa': give the values it takes, link_bandwidth (GB/s) "
                            "or link_latency_s (s)"),
    (dict(link_bandwidth=[1.0]), "link_bandwidth: name the link it sets with link="),
    (dict(link="eu -> sa", link_bandwidth=[1.0], bandwidth=[2.0]),
     "link_bandwidth and bandwidth: bandwidth scales every link in proportion"),
    (dict(link="eu -> sa", link_bandwidth=[1.0], wan_Bps=2e9), "link_bandwidth and wan_Bps"),
    (dict(link="eu -> sa", link_latency_s=[0.0], wan_latency_s=[1e-3]),
     "link_latency_s and wan_latency_s"),
    (dict(link="eu -> sa", link_bandwidth=[1.0, -2.0]),
     "link_bandwidth [eu -> sa] = -2.0: must be a finite number > 0 GB/s"),
    (dict(link="eu -> sa", link_bandwidth=0), "link_bandwidth [eu -> sa] = 0: must be"),
    (dict(link="eu -> sa", link_bandwidth=np.array([1.0, np.nan])),
     "link_bandwidth [eu -> sa] = nan: must be a finite number > 0 GB/s"),
    (dict(link="eu -> sa", link_bandwidth=[True]),
     "link_bandwidth [eu -> sa] = True: expected a finite number > 0 GB/s"),
    (dict(link="eu -> sa", link_bandwidth=["fast"]), "link_bandwidth [eu -> sa] = 'fast'"),
    (dict(link="eu -> sa", link_bandwidth=[10**400]), "(401 digits): must be a finite number"),
    # the magnitudes window, 1e-30 to 1e30 in SI, in the argument's units
    (dict(link="eu -> sa", link_bandwidth=[1e-40]),
     "link_bandwidth [eu -> sa] = 1e-40 GB/s: outside the magnitudes bandjax computes with, "
     "1e-39 to 1e+21 GB/s"),
    (dict(link="eu -> sa", link_bandwidth=[1e300]), "= 1e+300 GB/s: outside the magnitudes"),
    (dict(link="eu -> sa", link_latency_s=[-1e-3]),
     "link_latency_s [eu -> sa] = -0.001: must be a finite number >= 0 s"),
    (dict(link="eu -> sa", link_latency_s=[1e-35]),
     "link_latency_s [eu -> sa] = 1e-35 s: outside the magnitudes bandjax computes with, 1e-30 "
     "to 1e+30 s (or 0)"),
    (dict(link="eu -> sa", link_latency_s=[float("inf")]), "= inf: must be a finite number >= 0"),
    # the table's fastest link at most MAX_LINK_BANDWIDTH_RATIO times its slowest
    (dict(link="eu -> sa", link_bandwidth=[1.0, 1e-12]),
     "link_bandwidth [eu -> sa] = 1e-12 GB/s: the fastest other link ['us-east' -> 'eu'] = "
     "30 GB/s is 3e+13 times it"),
    (dict(link="eu -> sa", link_bandwidth=[1e13]),
     "link_bandwidth [eu -> sa] = 10000000000000.0 GB/s: 5e+12 times the slowest other link "
     "['us-east' -> 'asia'] = 2 GB/s; at most 1e+12 times"),
    (dict(link="eu -> sa", link_bandwidth=[1.0, 1.0]), "1.0 given more than once"),
    (dict(link="eu -> sa", link_bandwidth=[]), "link_bandwidth = []: give at least one value"),
])
def test_bad_input_is_refused_naming_it(args, message):
    B = np.full((4, 4), 2e9)
    B[0, 1] = 30e9
    sc = scenario(B, np.zeros((4, 4)))
    with pytest.raises(ValueError, match=re.escape(message)):
        bandjax.sweep(sc, quantities=["step_s"], **args)


def test_the_ratio_bound_is_the_tables():
    """The sweep's bound on the fastest link over the slowest is the one a table is held to."""
    sc = scenario(np.full((4, 4), 1e9), np.zeros((4, 4)))
    assert MAX_LINK_BANDWIDTH_RATIO == 1e12  # 1 GB/s beside 1e12 GB/s: at the bound
    bandjax.sweep(sc, link="eu -> sa", link_bandwidth=[1e12], quantities=["step_s"])
    with pytest.raises(ScenarioError, match="MAX_LINK_BANDWIDTH_RATIO"):
        bandjax.sweep(sc, link="eu -> sa", link_bandwidth=[1.01e12], quantities=["step_s"])
    B = np.full((4, 4), 1e9)
    B[1, 3] = 1.01e21
    with pytest.raises(ScenarioError, match="MAX_LINK_BANDWIDTH_RATIO"):
        sc.with_links(B, None, NAMES)


def test_without_links_and_too_many_values():
    with pytest.raises(ScenarioError, match="link = 'dc0 -> dc1': this scenario's links are "
                                            "equal \\(it has no links table\\); give one with "
                                            "Scenario.with_links"):
        bandjax.sweep(bandjax.reference(), link="dc0 -> dc1", link_bandwidth=[1.0])
    sc = scenario(*table(seed=7))
    n = MAX_LINK_SWEEP_VALUES // 16 + 1  # K = 4: 16 values a table
    with pytest.raises(ValueError, match=f"link_bandwidth: {n:,} values make {n:,} tables of 4 x 4 "
                                         ".*MAX_LINK_SWEEP_VALUES"):
        bandjax.sweep(sc, link="eu -> sa", link_bandwidth=np.geomspace(1.0, 10.0, n))
