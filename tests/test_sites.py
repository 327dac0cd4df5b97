"""Sites that differ: each DC's own workers and GPU compute (docs/model.md section 16)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
import events
from bandjax import links as _links
from bandjax import metrics, scenario, step
from bandjax import sites as _sites
from bandjax.scenario import ScenarioError
from bandjax.sites import Sites

REGIONS = ("us-east", "eu-west", "us-west")
# Unequal links between the three regions (B/s, one-way latency s): a transatlantic pair slower
# and longer than the one inside a continent.
REGION_B = np.array([[0, 5e9, 12.5e9], [4e9, 0, 5e9], [12.5e9, 5e9, 0]], dtype=float)
REGION_L = np.array([[0, 40e-3, 30e-3], [40e-3, 0, 70e-3], [30e-3, 70e-3, 0]])


def with_rule(sc, rule):
    """Every variant of ``sc`` with the sites rule ``rule``."""
    return dataclasses.replace(sc, variants=tuple(dataclasses.replace(v, sites=rule)
                                                  for v in sc.variants))


def worked_pair(rule="wait", **changes):
    """Section 16's worked values: two DCs of 64 workers, c = 1.0 and 2.2 s, H = 100."""
    sc = bandjax.reference().replace(sync_every_H=100.0, **changes)
    return with_rule(sc.with_sites(workers=[64, 64], gpu_compute_s=[1.0, 2.2]), rule)


def regions():
    """Three regions: H100 / A100 / H100 sites of 8 / 4 / 8 nodes of 8 GPUs, unequal links."""
    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=100.0)
    sc = sc.with_links(REGION_B, REGION_L, REGIONS)
    return sc.with_sites(gpu=["h100", "a100", "h100"], workers=[64, 32, 64])


# ------------------------------------------------------------------------------ worked values


def test_worked_values_of_section_16():
    # docs/model.md section 16: "Two DCs of 64, c = 1.0 and 2.2 s, nothing straggling, H = 100,
    # 'wait': 2.2 s (the fast site idles 1.2 s an inner step); exponential 0.1: 3.023656 s"
    sc = worked_pair()
    assert sc.sites.compute_s(float(sc.gpu_compute_s)) == pytest.approx((1.0, 2.2), rel=1e-15)
    assert np.asarray(step.inner_compute_s(sc)) == pytest.approx(2.2, rel=1e-15, abs=0)
    terms = dict(zip(step.COMPONENTS, np.moveaxis(np.asarray(step.step_terms_s(sc)), -1, 0)))
    # useful compute (64 x 1.0 + 64 x 2.2) / 128 = 1.6 s; the fast site's 64 workers idle 1.2 s,
    # 0.6 s a worker on average
    assert terms["gpu_compute"] == pytest.approx(1.6, rel=1e-15)
    assert terms["site_wait"] == pytest.approx(0.6, rel=1e-14)
    assert terms["straggle"] == pytest.approx(0.0, abs=1e-15)
    tail = sc.replace(straggler="exponential", straggler_s=0.1)
    assert np.asarray(step.inner_compute_s(tail)) == pytest.approx(3.023656, rel=0, abs=5e-7)
    # under "scaled" nothing waits for a site: every DC computes H c_max a round
    scaled = worked_pair("scaled")
    terms = dict(zip(step.COMPONENTS, np.moveaxis(np.asarray(step.step_terms_s(scaled)), -1, 0)))
    assert terms["gpu_compute"] == pytest.approx(2.2, rel=1e-15)
    assert terms["site_wait"] == pytest.approx(0.0, abs=1e-15)


def test_hot_spots_still_sum_to_one_with_a_site_wait():
    ds = bandjax.sweep(worked_pair(), bandwidth=[0.01, 1.0, 100.0])
    np.testing.assert_allclose(ds.hot_spot.sum("component").values, 1.0, rtol=1e-14)
    assert float(ds.hot_spot.sel(component="site_wait").min()) > 0


# ---------------------------------------------------------------- equal sites: today, exactly

QUANTITIES = ("step_s", "compute_utilisation", "time_to_target_s", "wan_B", "bytes_per_worker_B",
              "energy_J", "energy_to_target_J", "terms_s", "ettr", "throughput_tokens_per_s")


def _evaluate(sc):
    steps = metrics.steps_to_target(sc)
    return {k: np.asarray(v) for k, v in metrics.evaluate(sc, steps).items()}


scenarios = st.fixed_dictionaries({
    "dcs": st.integers(2, 4), "workers_per_dc": st.integers(1, 64),
    "sync_every_H": st.sampled_from([1.0, 4.0, 100.0]), "topology": st.sampled_from([0.0, 1.0]),
    "overlap_fraction": st.floats(0.0, 1.0), "wan_Bps": st.floats(1e8, 1e11),
    "wan_latency_s": st.floats(0.0, 0.05), "straggler": st.sampled_from([0.0, 1.0]),
    "straggler_s": st.floats(0.0, 0.5), "failure_rate_per_hour": st.sampled_from([0.0, 1e-4]),
})


@settings(max_examples=12, deadline=None)
@given(scenarios)
def test_equal_sites_are_the_scenario_without_sites_bit_for_bit(fields):
    sc = bandjax.reference().replace(**{k: float(v) for k, v in fields.items()})
    K, n = int(fields["dcs"]), float(fields["workers_per_dc"])
    equal = sc.with_sites(workers=[n] * K)
    assert equal.sites.equal and not _sites.differ(equal)
    assert (equal.dcs, equal.workers_per_dc, equal.gpu_compute_s) == (sc.dcs, sc.workers_per_dc,
                                                                       sc.gpu_compute_s)
    a, b = _evaluate(sc), _evaluate(equal)
    for q in QUANTITIES:
        np.testing.assert_array_equal(a[q], b[q], err_msg=q)


@settings(max_examples=6, deadline=None)
@given(scenarios)
def test_the_per_site_formulas_at_equal_sites_meet_todays(fields):
    # the per-site path taken on equal sites (forced) agrees with today's to rounding
    sc = bandjax.reference().replace(**{k: float(v) for k, v in fields.items()})
    K, n = int(fields["dcs"]), float(fields["workers_per_dc"])
    a = _evaluate(sc)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_sites, "differ", lambda s: getattr(s, "sites", None) is not None)
        b = _evaluate(sc.with_sites(workers=[n] * K))
    # the per-DC straggler quadrature meets the equal-sites closed forms to 1e-10 relative
    # (bandjax/stragglers.py); a term near 0 (a wait of 1e-13 s) is held to that of the largest
    for q in QUANTITIES:
        scale = float(np.max(np.abs(a[q][np.isfinite(a[q])]), initial=0.0))
        np.testing.assert_allclose(b[q], a[q], rtol=1e-9, atol=1e-10 * scale, err_msg=q)


# ------------------------------------------------------------------------- bytes, by hand


@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_allgather_bytes_on_each_link_by_hand(topology):
    # workers 2, 6, 3 (N = 11): ring link i -> i+1 carries (N - n_(i+1)) p: 5p, 8p, 9p; mesh
    # link i -> j carries n_i p; the sum over the links in use is (K - 1) N p = 22 p either way
    sc = bandjax.reference().replace(dcs=3.0, topology=topology).with_sites(workers=[2, 6, 3])
    p = float(sc.topk_fraction * sc.params * sc.topk_bytes_per_value)
    k = sc.ids.index("topk")
    t = step.traffic_B(sc)
    pairs = _links.pairs_in_use(3, topology)
    per_link = np.asarray(step.link_bytes_B(sc, t, pairs))[k]
    hand = [5, 8, 9] if topology == "ring" else [2, 2, 6, 6, 3, 3]
    np.testing.assert_allclose(per_link, np.array(hand) * p, rtol=1e-15)
    assert float(np.asarray(t.links)[k] * np.asarray(t.wan_B)[k]) == pytest.approx(22 * p, rel=1e-15)
    # the worker's link carries every other worker's payload, (N - 1) p
    assert float(np.asarray(t.port_B)[k]) == pytest.approx(10 * p, rel=1e-15)
    # the WAN term is the busiest link's: 9 p / B (ring), 6 p / B (mesh); latency 0
    wan, _ = step.wan_terms_s(sc, t)
    assert float(np.asarray(wan)[k]) == pytest.approx(max(hand) * p / sc.wan_Bps, rel=1e-15)
    # an all-reduce's WAN bytes do not depend on n; its port term is the largest DC's, 2(6-1)/6 G
    a = sc.ids.index("adamw")
    G = float(sc.dense_bytes_per_param * sc.params)
    assert float(np.asarray(t.port_B)[a]) == pytest.approx(2 * 5 / 6 * G, rel=1e-15)
    ring = 2 * 2 / 3 * G if topology == "ring" else 2 * G / 3
    assert float(np.asarray(t.wan_B)[a]) == pytest.approx(ring, rel=1e-15)


def test_a_ring_paces_at_its_busiest_link_over_its_own_bandwidth():
    sc = bandjax.reference().replace(dcs=3.0).with_links(
        np.array([[0, 10e9, 1], [1, 0, 2e9], [4e9, 1, 0]]) + np.eye(3), None, ["a", "b", "c"])
    sc = sc.with_sites(workers=[2, 6, 3])
    k = sc.ids.index("topk")
    p = float(sc.topk_fraction * sc.params * sc.topk_bytes_per_value)
    wan, _ = step.wan_terms_s(sc, step.traffic_B(sc))
    # a -> b 5p / 10e9, b -> c 8p / 2e9, c -> a 9p / 4e9: b -> c binds
    assert float(np.asarray(wan)[k]) == pytest.approx(8 * p / 2e9, rel=1e-15)
    assert metrics.pacing_links(sc)["topk"] == ("b", "c")


# --------------------------------------------------------------- utilisation and throughput


@pytest.mark.parametrize("rule", ["wait", "scaled"])
def test_compute_utilisation_throughput_and_time_to_target_by_hand(rule):
    sc = worked_pair(rule)
    out = _evaluate(sc)
    step_s = out["step_s"]
    T = float(sc.tokens_per_worker)
    # H_i = H ("wait") or H c_max / c_i ("scaled": 220 and 100 inner steps a round)
    H_i = np.array([1.0, 1.0]) if rule == "wait" else np.array([2.2, 1.0])
    n, c = np.array([64.0, 64.0]), np.array([1.0, 2.2])
    cu = np.sum(n * H_i * c) / (128 * step_s)
    throughput = T * np.sum(n * H_i) / step_s
    np.testing.assert_allclose(out["compute_utilisation"], cu, rtol=1e-14)
    np.testing.assert_allclose(out["throughput_tokens_per_s"], throughput, rtol=1e-14)
    steps = metrics.steps_to_target(sc)
    ok = np.isfinite(steps)
    np.testing.assert_allclose(out["time_to_target_s"][ok], (steps * 128 * T / throughput)[ok],
                               rtol=1e-14)
    if rule == "wait":  # a round of H steps of every worker: the same steps as today
        np.testing.assert_allclose(out["time_to_target_s"][ok], (steps * step_s)[ok], rtol=1e-14)


def test_equal_sites_throughput_is_tokens_over_the_step():
    sc = bandjax.reference()
    out = _evaluate(sc)
    np.testing.assert_array_equal(out["throughput_tokens_per_s"],
                                  512.0 * 8.0 / out["step_s"])


def test_scaled_window_is_the_fastest_sites_step():
    # f = 1/2: the window is (f + tau) c_min = 0.5 s under "scaled", (f + tau) c_max = 1.1 s under
    # "wait"; a sync of 1 s (d) at H = 1 is then half exposed, or hidden
    sc = bandjax.reference().replace(overlap_fraction=0.5, fixed_s={
        v: 1.0 for v in bandjax.reference().ids}, wan_Bps=1e15, worker_port_Bps=1e15,
        qsfp_port_Bps=1e15, optics_Sps=1e18, fpga_Bps=1e18)
    sc = sc.with_sites(workers=[4, 4], gpu_compute_s=[1.0, 2.2])
    a = sc.ids.index("adamw")
    wait = float(np.asarray(step.step_s(sc))[a])
    scaled = float(np.asarray(step.step_s(with_rule(sc, "scaled")))[a])
    # the other terms at 1e15 B/s and the module's stages come to less than 1e-6 s
    assert wait == pytest.approx(2.2, rel=0, abs=1e-6)
    assert scaled == pytest.approx(2.2 + 0.5, rel=0, abs=1e-6)


# ------------------------------------------------------------------------------- failures


def test_ettr_of_replicas_on_sites_by_hand():
    # ETTR = 1 - sum_i (n_i / N) n_i r (u0 + restore + round), n = 64 / 32 / 64, equal links
    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=100.0, failure_rate_per_hour=1e-4,
                                     restart_s=600.0)
    sc = sc.with_sites(workers=[64, 32, 64], gpu_compute_s=[1.0, 2.0, 1.0])
    out = _evaluate(sc)
    r = 1e-4 / 3600.0
    restore = float(sc.params * sc.restore_bytes_per_param / sc.wan_Bps)
    n = np.array([64.0, 32.0, 64.0])
    round_s = 100.0 * out["step_s"]
    ettr = 1 - np.sum(n * n / n.sum()) * r * (600.0 + restore + round_s)
    np.testing.assert_allclose(out["ettr"], ettr, rtol=1e-14)
    # N = sum n_i in the cluster's rate
    assert float(np.asarray(out["mtbf_s"])) == pytest.approx(1 / (160 * r), rel=1e-14)


# ----------------------------------------------------------------- three regions: sweep, file


def test_three_regions_sweep_and_round_trip(tmp_path):
    sc = regions()
    # the A100 site is the slowest: c is its, the H100 sites' compute_rel 312 / 989
    assert sc.sites.names == REGIONS and sc.sites.workers == (64.0, 32.0, 64.0)
    assert sc.sites.compute_rel == pytest.approx((312 / 989, 1.0, 312 / 989), rel=1e-14)
    assert float(sc.gpu_peak_FLOPs) == 312e12 and float(sc.utilisation) == 0.4
    assert (sc.dcs, sc.workers_per_dc) == (3.0, 160.0 / 3.0)
    ds = bandjax.sweep(sc, bandwidth=[1.0, 4.0, 40.0], model=["study", "llama3-8b"])
    assert "sites_scaling" in ds.attrs and "tokens it saw" in ds.attrs["assumptions"]
    assert ds.throughput_tokens_per_s.attrs["units"] == "tokens/s"
    point = sc.replace(wan_Bps=4e9 * 1.0, params=scenario.PRESETS["llama3-8b"])
    np.testing.assert_allclose(ds.step_s.sel(bandwidth=4.0, model="llama3-8b").values,
                               np.asarray(step.step_s(point)), rtol=1e-13)
    # the step never falls as the bandwidth falls
    assert np.all(np.diff(ds.step_s.values, axis=0) <= 0)
    path = tmp_path / "regions.toml"
    scenario.save(sc, path)
    text = path.read_text()
    assert "[[sites]]" in text and 'name = "eu-west"' in text
    back = scenario.load(path)
    assert back.sites.names == sc.sites.names and back.sites.workers == sc.sites.workers
    np.testing.assert_allclose(back.sites.compute_rel, sc.sites.compute_rel, rtol=1e-15)
    assert back.links == sc.links
    np.testing.assert_allclose(np.asarray(step.step_s(back)), np.asarray(step.step_s(sc)),
                               rtol=1e-14)
    scenario.save(back, tmp_path / "again.toml")
    assert (tmp_path / "again.toml").read_text() == text


def test_a_file_with_gpus_per_site(tmp_path):
    path = tmp_path / "sites.toml"
    path.write_text('[cluster]\ndcs = 2\n\n[[sites]]\nname = "us-east"\ngpu = "h100"\n'
                    'utilisation = 0.5\nworkers = 64\n\n[[sites]]\nname = "eu-west"\n'
                    'gpu = "a100"\nworkers = 32\n\n[variants.adamw]\nsites = "scaled"\n')
    sc = scenario.load(path)
    assert sc.sites.workers == (64.0, 32.0)
    # c_i = 6 P T / (peak_i x utilisation_i): 989e12 x 0.5 against 312e12 x 0.4
    assert sc.sites.compute_rel == pytest.approx((312 * 0.4 / (989 * 0.5), 1.0), rel=1e-14)
    assert sc.variant("adamw").sites == "scaled"
    scenario.save(sc, tmp_path / "out.toml")
    assert scenario.load(tmp_path / "out.toml").variant("adamw").sites == "scaled"


def test_without_site_drops_its_row_and_column():
    sc = regions()
    less = sc.without_site("eu-west")
    assert less.sites.names == ("us-east", "us-west") and less.links.names == less.sites.names
    assert less.dcs == 2.0 and less.sites.workers == (64.0, 64.0)
    B, L, _ = less.link_values()
    assert B[0, 1] == 12.5e9 and L[0, 1] == 30e-3
    # the A100 site gone, both H100 sites run at 312 / 989 of the scenario's c: equal to each other
    assert _sites.differ(less)
    assert np.asarray(step.step_s(less)).min() > 0
    with pytest.raises(ScenarioError, match="at least 2 must remain"):
        less.without_site("us-east")
    with pytest.raises(ScenarioError, match="'mars' is not a site"):
        sc.without_site("mars")


# ----------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("rule", ["wait", "scaled"])
@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_engine_at_load_0_equals_the_closed_form_on_sites_that_differ(rule, topology):
    sc = bandjax.reference().replace(dcs=3.0, sync_every_H=4.0, overlap_fraction=0.5,
                                     wan_latency_s=1e-4, topology=topology)
    c = float(sc.gpu_compute_s)
    sc = with_rule(sc.with_sites(workers=[2, 6, 3], gpu_compute_s=[c, 2.5 * c, 1.7 * c]), rule)
    cf, cu = np.asarray(step.step_s(sc)), np.asarray(step.compute_utilisation(sc))
    for k, vid in enumerate(sc.ids):
        run = events.run(sc, vid, 0.0, steps=8)
        assert run.mean_s == pytest.approx(cf[k], rel=1e-12, abs=0), vid
        assert run.compute_utilisation == pytest.approx(cu[k], rel=1e-12, abs=0), vid


def test_engine_reads_two_sites_with_their_links():
    sc = bandjax.reference().replace(sync_every_H=2.0).with_links(
        np.array([[0, 5e9], [10e9, 0]]) + np.eye(2), None, ["a", "b"])
    c = float(sc.gpu_compute_s)
    sc = sc.with_sites(workers=[3, 5], gpu_compute_s=[2 * c, c])
    plan = events.build(sc, "topk")
    assert plan.dc_workers == (3, 5) and plan.dc_compute_s == pytest.approx((2 * c, c), rel=1e-15)
    p = float(sc.topk_fraction * sc.params * sc.topk_bytes_per_value)
    assert plan.link_B == pytest.approx((3 * p, 5 * p), rel=1e-15)
    run = events.run(sc, "topk", 0.0, steps=4)
    assert run.mean_s == pytest.approx(float(np.asarray(step.step_s(sc))[1]), rel=1e-12)


# ------------------------------------------------------------------------------ bad inputs

REF = bandjax.reference()


@pytest.mark.parametrize("call, match", [
    (lambda: REF.with_sites(workers=[4, 4, 4]), r"workers = \[4, 4, 4\]: 3 values for 2 DCs"),
    (lambda: REF.with_sites(workers=[0, 4]), r"\[\[sites\]\] 'dc0' workers = 0: must be a whole"),
    (lambda: REF.with_sites(workers=[4, 2.5]), r"'dc1' workers = 2.5: must be a whole"),
    (lambda: REF.with_sites(workers=[-1, 4]), r"'dc0' workers = -1"),
    (lambda: REF.with_sites(workers=[True, 4]), r"'dc0' workers = True"),
    (lambda: REF.with_sites(workers=["4", 4]), r"'dc0' workers = '4'"),
    (lambda: REF.with_sites(workers=[4, 1j]), r"'dc1' workers = 1j"),
    (lambda: REF.with_sites(gpu_compute_s=[0.0, 1.0]), r"'dc0' gpu_compute = 0.0: must be a finite"),
    (lambda: REF.with_sites(gpu_compute_s=[1.0, float("inf")]), r"'dc1' gpu_compute = inf"),
    (lambda: REF.with_sites(gpu_compute_s=[1.0, float("nan")]), r"'dc1' gpu_compute = nan"),
    (lambda: REF.with_sites(gpu_compute_s=[1.0, -2.0]), r"'dc1' gpu_compute = -2.0"),
    (lambda: REF.with_sites(gpu=["h100", "tpu"]), r"'dc1' gpu = 'tpu' is not a preset"),
    (lambda: REF.with_sites(gpu=["h100", -1.0]), r"'dc1' gpu = -1.0"),
    (lambda: REF.with_sites(gpu=["h100", False]), r"'dc1' gpu = False"),
    (lambda: REF.with_sites(utilisation=[0.5, 1.5]), r"'dc1' utilisation = 1.5: must be a number in \(0, 1\]"),
    (lambda: REF.with_sites(utilisation=[0.0, 0.5]), r"'dc0' utilisation = 0.0"),
    (lambda: REF.with_sites(utilisation=[0.5, True]), r"'dc1' utilisation = True"),
    (lambda: REF.with_sites(gpu=["h100", None], gpu_compute_s=[1.0, None]),
     r"'dc0': gpu_compute = 1.0 with gpu = 'h100'"),
    (lambda: REF.with_sites(names=["a", "a"]), r"'a' given twice"),
    (lambda: REF.with_sites(names="ab"), r"names = 'ab': expected a list"),
    (lambda: REF.with_sites(names=["a", ""]), r"'' is not a name"),
    (lambda: REF.with_sites(names=["a"]), r"1 DC; sites are K >= 2"),
    (lambda: REF.with_links(np.ones((2, 2)) * 1e9, None, ["x", "y"]).with_sites(names=["x", "z"]),
     r"'z' not in the links table"),
    (lambda: REF.with_links(np.ones((2, 2)) * 1e9, None, ["x", "y"]).with_sites(names=["y", "x"]),
     r"must be the links table's DCs in its order"),
    (lambda: REF.with_sites(workers=[2, 6]).replace(workers_per_dc=5.0),
     r"workers_per_dc = 5.0: this scenario has per-site values"),
    (lambda: REF.with_sites(workers=[2, 6]).replace(dcs=3.0), r"dcs = 3.0: this scenario has per-site"),
    (lambda: bandjax.sweep(REF.with_sites(workers=[2, 6]), workers_per_dc=[1, 2]),
     r"workers_per_dc = \[1, 2\]: .* cannot be swept"),
    (lambda: bandjax.sweep(REF.with_sites(workers=[2, 6]), dcs=[2, 3]), r"dcs = \[2, 3\]: .* cannot be swept"),
    (lambda: REF.with_sites(workers=[2, 6]).with_links(np.ones((2, 2)) * 1e9, None, ["x", "y"]),
     r"this scenario's sites are \['dc0', 'dc1'\]"),
    (lambda: Sites(("a", "b"), (1.0, 2.0), (1.0, 0.0)), r"'b' compute_rel = 0.0"),
    (lambda: Sites(("a", "b"), (1.0,), (1.0, 1.0)), r"workers = \(1.0,\): expected 2 values"),
    (lambda: REF.replace(sites="two"), r"sites = 'two': expected a bandjax.Sites"),
])
def test_bad_sites_give_a_clear_error(call, match):
    with pytest.raises(ScenarioError, match=match):
        call()


@pytest.mark.parametrize("rows, match", [
    ('[[sites]]\nname = "a"\nworkers = 0\n[[sites]]\nname = "b"\n', r"'a' workers = 0"),
    ('[[sites]]\nname = "a"\ncolour = 1\n[[sites]]\nname = "b"\n', r"colour is not a known key"),
    ('[[sites]]\nworkers = 2\n[[sites]]\nname = "b"\n', r"row 1: name = None"),
    ('[[sites]]\nname = "a"\ngpu_compute = 1.2\n[[sites]]\nname = "b"\n', r"1.2 has no unit"),
    ('[[sites]]\nname = "a"\ngpu = "tpu"\n[[sites]]\nname = "b"\n', r"'a' gpu"),
    ('[[sites]]\nname = "a"\n[[sites]]\nname = "a"\n', r"'a' given twice"),
    ('[cluster]\ndcs = 3\n[[sites]]\nname = "a"\n[[sites]]\nname = "b"\n', r"dcs = 3.0: .*per-site"),
    ('sites = 3\n', r"expected \[\[sites\]\] rows"),
    ('[variants.adamw]\nsites = "fast"\n', r"sites = 'fast' is not known; allowed: wait, scaled"),
])
def test_bad_site_rows_in_a_file_name_the_row(tmp_path, rows, match):
    path = tmp_path / "bad.toml"
    path.write_text(rows)
    with pytest.raises(ScenarioError, match=match):
        scenario.load(path)


def test_variant_sites_takes_only_the_two_words():
    v = bandjax.reference().variant("adamw")
    assert v.sites == "wait" and dataclasses.replace(v, sites="scaled").sites == "scaled"
    for bad in ("fast", None, 1):
        with pytest.raises(ValueError, match=r"sites = .* is not known; allowed: wait, scaled"):
            dataclasses.replace(v, sites=bad)
