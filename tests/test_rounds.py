"""Syncs in rounds, compute utilisation and the bandwidth a target needs (docs/model.md section 14)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.test_util import check_grads
from scipy.optimize import brentq

import bandjax
from bandjax import variants as V
from bandjax.need import ABOVE_RANGE, BELOW_RANGE, CAPS, NOT_REACHABLE, REACHED, needed_Bps
from bandjax.scenario import ScenarioError, from_toml_dict, to_toml_dict
from bandjax.step import comm_parts_s, step_terms_s, sum_parts

SETTINGS = settings(max_examples=30, deadline=None)
METHOD_IDS = [v.id for v in V.METHODS]
TARGETS = [0.5, 0.8, 0.9, 0.95, 0.99]

# docs/model.md section 14, worked values: Gbit/s for CU 50 / 80 / 90 / 95 / 99 %, printed to
# the digits below (2 DCs of one worker, d = 0, latency 0, f = 2/3, a 10B model at c = 0.8 s)
WORKED_Gbitps = {
    "dp_bf16": [120.0, 218.18, 257.14, 278.05, 295.52],
    "diloco": [1.987, 7.792, 16.981, 33.728, 119.28],
    "streaming_diloco": [1.807, 5.607, 9.184, 12.555, 17.128],
    "streaming_diloco_fp4": [0.395, 0.968, 1.324, 1.566, 1.807],
}


def worked_scenario():
    """Section 14's worked example: the method pack on 2 DCs of one worker each (no intra-DC
    terms), d = 0 (the pack's default), latency 0, f = 2/3, P = 10e9 at c = 0.8 s."""
    sc = bandjax.reference().replace(dcs=2.0, workers_per_dc=1.0, params=10e9,
                                     overlap_fraction=2 / 3, wan_latency_s=0.0)
    return sc.replace(gpu_compute_s=0.8).with_variants(bandjax.METHODS)


def test_worked_values_of_section_14():
    sc = worked_scenario()
    assert float(sc.gpu_compute_s) == pytest.approx(0.8, rel=1e-15)
    # the FP4 sync's 50 % needs 0.395 Gbit/s, below the default range's 0.1 GB/s bottom
    ds = bandjax.required_bandwidth(sc, TARGETS, variant=list(WORKED_Gbitps), range_GBps=(1e-3, 1e3))
    for vid, printed in WORKED_Gbitps.items():
        got = ds["required_bandwidth_Gbitps"].sel(variant=vid).values
        # each printed value to half a unit of its last printed digit
        digits = [len(str(p).split(".")[1]) for p in printed]
        np.testing.assert_array_less(np.abs(got - printed), [0.5 * 10.0 ** -d + 1e-12 for d in digits])
        assert (ds["status"].sel(variant=vid).values == REACHED).all()
    assert ds["required_bandwidth_GBps"].attrs["units"] == "GB/s"


def test_worked_values_agree_with_brentq_on_the_sweeps_own_utilisation():
    sc = worked_scenario()
    ds = bandjax.required_bandwidth(sc, TARGETS, variant=METHOD_IDS, range_GBps=(1e-3, 1e3))
    for vid in METHOD_IDS:
        for u in TARGETS:
            def gap(log_GBps):
                cu = bandjax.sweep(sc, bandwidth=float(np.exp(log_GBps)), variant=vid,
                                   quantities=("compute_utilisation",))["compute_utilisation"]
                return float(cu) - u
            root = np.exp(brentq(gap, np.log(1e-3), np.log(1e3), xtol=1e-14, rtol=1e-15))
            got = float(ds["required_bandwidth_GBps"].sel(variant=vid, utilisation=u))
            assert got == pytest.approx(root, rel=1e-9), (vid, u)


def test_default_range_puts_the_fp4_half_below_it():
    # below the range's bottom (0.1 GB/s), the closed form's own value all the same: the worked
    # value 0.395 Gbit/s (docs/model.md section 14, printed to 3 decimals)
    ds = bandjax.required_bandwidth(worked_scenario(), 0.5, variant="streaming_diloco_fp4")
    assert int(ds["status"].item()) == BELOW_RANGE
    assert 8 * float(ds["required_bandwidth_GBps"].item()) == pytest.approx(0.395, abs=5e-4)


def test_not_reachable_names_its_cap():
    sc = worked_scenario()
    # latency of 1 s a hop: DP's 99 % needs the step within c / 0.99, latency alone exceeds it
    ds = bandjax.required_bandwidth(sc.replace(wan_latency_s=1.0), 0.99, variant="dp_bf16")
    assert int(ds["status"].item()) == NOT_REACHABLE
    assert CAPS[int(ds["cap"].item())] == "latency"
    assert np.isnan(float(ds["required_bandwidth_GBps"].item()))
    # d dominates
    ds = bandjax.required_bandwidth(sc.with_variant(V.get("dp_bf16", V.METHODS), d_s=5.0), 0.9,
                                    variant="dp_bf16")
    assert CAPS[int(ds["cap"].item())] == "d"
    # DP's 99 % lies above a range that stops at 10 GB/s: its value all the same (295.52 Gbit/s,
    # the worked value), the range named as its cap
    ds = bandjax.required_bandwidth(sc, 0.99, variant="dp_bf16", range_GBps=(0.1, 10.0))
    assert int(ds["status"].item()) == ABOVE_RANGE and CAPS[int(ds["cap"].item())] == "range"
    assert 8 * float(ds["required_bandwidth_GBps"].item()) == pytest.approx(295.52, abs=5e-3)
    # u = 1 with nothing to hide behind (f = 0, tau = 0): the compute itself caps it
    ds = bandjax.required_bandwidth(sc.replace(overlap_fraction=0.0), 1.0, variant="diloco")
    assert CAPS[int(ds["cap"].item())] == "compute"


def test_swept_dimensions_and_errors():
    sc = worked_scenario()
    ds = bandjax.required_bandwidth(sc, [0.9], variant=["diloco", "dp_bf16"], H=[10, 100],
                                    wan_latency_s=[0.0, 0.01])
    assert ds["required_bandwidth_GBps"].dims == ("utilisation", "H", "wan_latency_s", "variant")
    # DiLoCo keeps its own H: the H axis does not move it
    d = ds["required_bandwidth_GBps"].sel(variant="diloco")
    np.testing.assert_array_equal(d.sel(H=10).values, d.sel(H=100).values)
    with pytest.raises(ValueError, match="utilisation = 1.5"):
        bandjax.required_bandwidth(sc, [1.5])
    with pytest.raises(ValueError, match="bandwidth"):
        bandjax.required_bandwidth(sc, 0.9, bandwidth=[1.0])


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(["diloco", "streaming_diloco", "streaming_diloco_fp4", "intellect1_int8"]),
       st.floats(1.0, 100.0), st.floats(0.2, 2.0), st.floats(0.05, 0.9), st.floats(1e-4, 0.05))
def test_gradients_of_the_needed_bandwidth_match_finite_differences(vid, P_G, c0, f0, l0):
    sc = worked_scenario()
    idx = sc.ids.index(vid)

    def need(x):
        params, c, f, latency = x[0] * 1e9, x[1], x[2], x[3]
        s = sc.replace(params=params, gpu_compute_s=c, overlap_fraction=f, wan_latency_s=latency)
        return needed_Bps(s, 0.9, 1e6, 1e13)[0][idx] / 1e9

    x = jnp.array([P_G, c0, f0, l0])
    if not np.isfinite(float(need(x))):
        return  # not reachable here: no bandwidth, no derivative
    check_grads(need, (x,), order=1, modes=["fwd", "rev"], atol=0.0, rtol=1e-5, eps=1e-6)


@st.composite
def rounds_scenarios(draw):
    sc = bandjax.reference().replace(
        dcs=float(draw(st.integers(2, 6))), workers_per_dc=float(draw(st.integers(1, 8))),
        topology=draw(st.sampled_from(["ring", "mesh"])),
        params=draw(st.floats(1e6, 1e11)), overlap_fraction=draw(st.floats(0.0, 1.0)),
        wan_latency_s=draw(st.sampled_from([0.0, 1e-3, 0.05])))
    H = draw(st.sampled_from([1, 2, 10, 100]))
    F = draw(st.integers(1, H))
    tau = draw(st.integers(0, H - 1))
    v = dataclasses.replace(V.get("diloco", V.METHODS), id="drawn", sync_every=H, fragments=F,
                            delay=tau, bytes_per_param=draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])))
    return sc.with_variant(v, d_s=draw(st.sampled_from([0.0, 1e-4, 0.01])))


@SETTINGS
@given(rounds_scenarios(), st.floats(0.1, 1000.0), st.floats(1.0, 10.0))
def test_compute_utilisation_in_0_1_and_never_falls_with_bandwidth(sc, GBps, factor):
    cu = bandjax.compute_utilisation
    low = np.asarray(cu(sc.replace(wan_Bps=GBps * 1e9)))
    high = np.asarray(cu(sc.replace(wan_Bps=GBps * factor * 1e9)))
    assert np.all((low > 0) & (low <= 1)) and np.all((high > 0) & (high <= 1))
    assert np.all(high >= low * (1 - 1e-15))


@SETTINGS
@given(rounds_scenarios())
def test_one_step_rounds_are_section_13(sc):
    # H = F = 1, tau = 0 (the scenario's H 1): c + max(0, comm - f c), as before rounds, to 1e-12
    sc = sc.replace(sync_every_H=1.0)
    plain = dataclasses.replace(V.get("dp_bf16", V.METHODS), id="plain", sync_every=None)
    own = dataclasses.replace(plain, id="own", short="own", sync_every=1)
    sc = sc.with_variant(plain).with_variant(own)
    c = float(sc.gpu_compute_s)
    old = c + np.maximum(0.0, np.asarray(sum_parts(comm_parts_s(sc))) - float(sc.overlap_fraction) * c)
    new = np.asarray(bandjax.step_s(sc))
    one = [k for k, v in enumerate(sc.variants) if v.id != "drawn"]  # "drawn" has its own rounds
    np.testing.assert_allclose(new[one], old[one], rtol=1e-12)
    i, j = sc.ids.index("plain"), sc.ids.index("own")
    assert new[i] == new[j]


@SETTINGS
@given(rounds_scenarios(), st.sampled_from([1.0, 3.0, 100.0]))
def test_no_overlap_one_fragment_is_section_9(sc, H):
    # f = 0, F = 1, tau = 0: c + comm_sync / H
    sc = sc.replace(overlap_fraction=0.0, sync_every_H=H)
    sc = sc.with_variants([dataclasses.replace(v, sync_every=None, fragments=1, delay=0)
                           for v in sc.variants if v.id == "drawn"])
    c = float(sc.gpu_compute_s)
    comm_sync = np.asarray(sum_parts(comm_parts_s(sc)))
    np.testing.assert_allclose(np.asarray(bandjax.step_s(sc)), c + comm_sync / H, rtol=1e-13)


@SETTINGS
@given(rounds_scenarios(), st.sampled_from(TARGETS))
def test_more_fragments_never_raise_the_need_without_latency_or_d(sc, u):
    sc = sc.replace(wan_latency_s=0.0)
    sc = sc.with_variant(sc.variant("drawn"), d_s=0.0)
    v = sc.variant("drawn")
    H = int(v.sync_every)
    needs = []
    for F in sorted({1, max(1, H // 4), max(1, H // 2), H}):
        s = sc.with_variant(dataclasses.replace(v, fragments=F), d_s=0.0)
        ds = bandjax.required_bandwidth(s, u, variant="drawn", range_GBps=(1e-9, 1e12))
        needs.append(float(ds["required_bandwidth_GBps"].item()))
    needs = np.asarray(needs)
    assert np.all(np.isnan(needs) | (needs >= 0))
    finite = needs[np.isfinite(needs)]
    assert np.all(np.diff(finite) <= np.abs(finite[:-1]) * 1e-12)


@SETTINGS
@given(rounds_scenarios(), st.floats(0.1, 1000.0))
def test_hot_spots_sum_to_one_and_terms_to_the_step(sc, GBps):
    sc = sc.replace(wan_Bps=GBps * 1e9)
    terms = np.asarray(step_terms_s(sc))
    np.testing.assert_allclose(terms.sum(-1), np.asarray(bandjax.step_s(sc)), rtol=1e-13)


def test_variant_fields_are_checked_and_round_trip(tmp_path):
    with pytest.raises(ValueError, match=r"'x': delay = 1\.5"):
        bandjax.Variant("x", "x", "x", "dense", "ring_allreduce", delay=1.5)
    with pytest.raises(ValueError, match=r"'x': fragments = 0"):
        bandjax.Variant("x", "x", "x", "dense", "ring_allreduce", fragments=0)
    with pytest.raises(ValueError, match=r"'x': delay = 10 with H = 10"):
        bandjax.Variant("x", "x", "x", "dense", "ring_allreduce", sync_every=10, delay=10)
    with pytest.raises(ValueError, match=r"'x': fragments = 11 with H = 10"):
        bandjax.Variant("x", "x", "x", "dense", "ring_allreduce", sync_every=10, fragments=11)
    # a variant without its own H is checked against the scenario's
    lazy = bandjax.Variant("lazy", "lazy", "lazy", "dense", "ring_allreduce", delay=2)
    with pytest.raises(ScenarioError, match=r"lazy.*delay = 2 with H = 1.*every_H"):
        bandjax.reference().with_variant(lazy)
    sc = bandjax.reference().replace(sync_every_H=4.0).with_variant(lazy)
    with pytest.raises(ScenarioError, match=r"lazy.*delay = 2 with H = 2"):
        bandjax.sweep(sc, H=[2, 8])
    sc = sc.with_variants(bandjax.METHODS, steps={"diloco": 500})
    path = tmp_path / "s.toml"
    bandjax.save(sc, path)
    back = bandjax.load(path)
    assert back.variants == sc.variants
    assert back.steps_of("diloco") == 500 and np.isnan(back.steps_of("streaming_diloco"))
    data = to_toml_dict(sc)
    assert data["variants"]["streaming_diloco_fp4"]["delay"] == 1
    data["variants"]["streaming_diloco"]["fragments"] = 1000
    with pytest.raises(ScenarioError, match=r"streaming_diloco.*fragments = 1000 with H = 100"):
        from_toml_dict(data)
    data["variants"]["streaming_diloco"]["fragments"] = 2.5
    with pytest.raises(ScenarioError, match=r"\[variants.streaming_diloco\] fragments = 2.5: must be "
                                            r"a whole number, 1 to H"):
        from_toml_dict(data)


def test_the_pack_moves_no_study_figure_and_is_not_measured():
    ref = bandjax.reference()
    sc = ref.with_variants(bandjax.METHODS)
    np.testing.assert_array_equal(np.asarray(bandjax.step_s(sc))[:len(ref.ids)],
                                  np.asarray(bandjax.step_s(ref)))
    ds = bandjax.sweep(sc, bandwidth=12.5, variant=METHOD_IDS)
    assert np.isnan(ds["time_to_target_s"].values).all()
    assert np.isfinite(ds["compute_utilisation"].values).all()
    assert ds["compute_utilisation"].attrs["units"] == "1"


def test_the_scenario_H_moves_only_variants_without_their_own():
    sc = worked_scenario()
    ds = bandjax.sweep(sc, bandwidth=1.0, H=[1, 10], variant=["adamw", "diloco"])
    step = ds["step_s"]
    assert step.sel(variant="diloco", H=1).item() == step.sel(variant="diloco", H=10).item()
    assert step.sel(variant="adamw", H=1).item() > step.sel(variant="adamw", H=10).item()
    assert "diloco" in ds.attrs["own_H_variants"]


def test_energy_and_bytes_per_step_are_a_syncs_over_each_variants_H():
    sc = worked_scenario()
    ds = bandjax.sweep(sc, bandwidth=1.0, variant=["dp_bf16", "diloco"])
    w = ds["wan_B"]
    # DP and DiLoCo send the same bf16 sync: DiLoCo's per step is DP's / 100
    assert w.sel(variant="diloco").item() == pytest.approx(w.sel(variant="dp_bf16").item() / 100, rel=1e-15)


def test_active_parameters_set_compute_and_params_set_bytes():
    ref = bandjax.reference()
    dense = ref.replace(params=671e9)
    assert dense.active_params is None
    moe = ref.at_preset("deepseek-v3")
    assert float(moe.params) == 671e9 and float(moe.active_params) == 37e9
    assert float(moe.gpu_compute_s) == pytest.approx(float(dense.gpu_compute_s) * 37 / 671, rel=1e-14)
    a = bandjax.sweep(dense, bandwidth=12.5, quantities=("wan_B", "energy_per_step_J", "gpu_s"))
    b = bandjax.sweep(moe, bandwidth=12.5, quantities=("wan_B", "energy_per_step_J", "gpu_s"))
    np.testing.assert_array_equal(a["wan_B"].values, b["wan_B"].values)
    assert float(ref.at_preset("llama3-405b").params) == 405e9
    assert ref.at_preset("llama3-405b").active_params is None
    # replacing only params keeps the MoE's active count; the file keeps it too
    assert float(moe.replace(params=700e9).active_params) == 37e9
    back = from_toml_dict(to_toml_dict(moe))
    assert float(back.active_params) == 37e9 and float(back.params) == 671e9
    with pytest.raises(ScenarioError, match=r"active_params = -1.0: must be > 0"):
        ref.replace(active_params=-1.0)
    # differentiable through c
    g = jax.grad(lambda a: bandjax.step_s(ref.replace(active_params=a))[0])(1e9)
    assert float(g) > 0


@pytest.mark.parametrize("H", [1, 10, 100])
@pytest.mark.parametrize("F", [1, 4])
@pytest.mark.parametrize("tau", [0, 1])
@pytest.mark.parametrize("f", [0.0, 2 / 3])
def test_engine_at_load_0_equals_the_closed_form(H, F, tau, f):
    # docs/model.md section 14, "In the event engine": exact while f + tau <= H / F
    import events

    if F > H or tau > H - 1 or f + tau > H / F:
        pytest.skip("not a method of section 14 (F <= H, tau <= H - 1), or windows that overlap")
    for K in (2, 4):
        for topology in ("ring", "mesh"):
            sc = bandjax.reference().replace(dcs=float(K), topology=topology, overlap_fraction=f,
                                             wan_latency_s=0.2e-3, wan_Bps=2e9)
            v = dataclasses.replace(V.get("diloco", V.METHODS), id="m", sync_every=H, fragments=F,
                                    delay=tau)
            sc = sc.with_variant(v, d_s=0.05e-3)
            for vid in ("m", "adamw", "band_switch"):
                closed = float(bandjax.step_s(sc)[sc.ids.index(vid)])
                H_v = H if vid == "m" else 1
                run = events.run(sc, vid, 0.0, steps=2 * H_v, trace_steps=0)
                assert run.mean_s == pytest.approx(closed, rel=1e-12, abs=0), (vid, K, topology)


def test_store_writes_compute_utilisation(tmp_path):
    import xarray as xr

    sc = worked_scenario()
    path = tmp_path / "cu.zarr"
    bandjax.store.write(path, sc, bandwidth=[0.1, 1.0, 10.0], variant=METHOD_IDS,
                        quantities=["compute_utilisation"], progress=False)
    stored = xr.open_zarr(path)["compute_utilisation"]
    direct = bandjax.sweep(sc, bandwidth=[0.1, 1.0, 10.0], variant=METHOD_IDS,
                           quantities=["compute_utilisation"])["compute_utilisation"]
    np.testing.assert_array_equal(stored.values, direct.values)
    assert stored.attrs["units"] == "1"


def test_break_even_between_data_parallel_and_diloco_is_a_tie_of_their_rounds():
    # the closed-form kinks carry each variant's own H, F and tau: at the returned bandwidth the
    # two times to target (steps x step) are equal
    sc = worked_scenario().replace(wan_latency_s=1e-3)
    sc = sc.with_variants([V.get(v, V.METHODS) for v in ("dp_bf16", "diloco")],
                          steps={"dp_bf16": 1000, "diloco": 1300})
    be = bandjax.break_even(sc, "dp_bf16", "diloco")
    assert int(be.count) == 1
    step = np.asarray(bandjax.step_s(sc.replace(wan_Bps=float(be.x[0]))))
    t_dp, t_diloco = 1000 * step[sc.ids.index("dp_bf16")], 1300 * step[sc.ids.index("diloco")]
    assert t_dp == pytest.approx(t_diloco, rel=1e-9)


def test_shared_wan_approximation_at_load_0_is_the_rounds_closed_form():
    from bandjax.queueing import shared_wan_step_s

    sc = worked_scenario().replace(wan_Bps=1e9, wan_latency_s=1e-3)
    np.testing.assert_allclose(np.asarray(shared_wan_step_s(sc, 0.0)), np.asarray(bandjax.step_s(sc)),
                               rtol=1e-11)


def test_a_sweep_over_model_presets_computes_a_mixture_of_experts_with_its_active_parameters():
    ref = bandjax.reference()
    ds = bandjax.sweep(ref, model=["llama3-405b", "deepseek-v3"], bandwidth=12.5, variant="adamw",
                       quantities=["gpu_s", "wan_B"])
    gpu = ds["gpu_s"].values
    assert gpu[1] == pytest.approx(float(ref.at_preset("deepseek-v3").gpu_compute_s), rel=1e-14)
    assert gpu[0] == pytest.approx(float(ref.at_preset("llama3-405b").gpu_compute_s), rel=1e-14)
    assert ds["wan_B"].values[1] / ds["wan_B"].values[0] == pytest.approx(671 / 405, rel=1e-14)


def test_needed_H_is_the_fewest_whole_H_that_reaches_the_target():
    from bandjax.need import needed_H

    sc = worked_scenario().replace(wan_Bps=1e9)  # 8 Gbit/s
    H = np.asarray(needed_H(sc, jnp.asarray([0.5, 0.9, 0.99])))
    for k, v in enumerate(sc.variants):
        for row, u in enumerate([0.5, 0.9, 0.99]):
            h = H[row, k]
            at = dataclasses.replace(v, sync_every=float(h))
            cu = float(bandjax.compute_utilisation(sc.with_variant(at))[k])
            assert cu >= u * (1 - 1e-12), (v.id, u)
            if h > max(v.fragments, v.delay + 1):  # one fewer misses the target
                fewer = dataclasses.replace(v, sync_every=float(h - 1))
                assert float(bandjax.compute_utilisation(sc.with_variant(fewer))[k]) < u, (v.id, u)
