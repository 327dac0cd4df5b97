"""bandjax.sweep: labelled dims exactly as asked, units, NaN with a status, no recompilation."""

import math

import numpy as np
import pytest
import xarray as xr

import bandjax
from bandjax import grid
from bandjax.metrics import NEVER, NOT_MEASURED, OK, steps_to_target, time_to_target_s
from bandjax.step import step_s

SC = bandjax.reference()


def test_dimensions_are_exactly_those_asked_for():
    ds = bandjax.sweep(SC, bandwidth=[1.0, 12.5], enob=[8, 6], basis=["hypothesis", "exact"])
    assert ds["step_s"].dims == ("bandwidth", "enob", "basis", "variant")
    assert ds["hot_spot"].dims == ("bandwidth", "enob", "basis", "variant", "component")
    assert ds["module_stage_s"].dims == ("bandwidth", "enob", "basis", "stage")
    ds = bandjax.sweep(SC, bandwidth=12.5, variant="adamw")
    assert ds["step_s"].dims == ()
    assert float(ds["bandwidth"]) == 12.5 and str(ds["variant"].values) == "adamw"
    ds = bandjax.sweep(SC, H=[1, 10], model=["study", 1e9], workers_per_dc=[2, 4, 8])
    assert ds["time_to_target_s"].dims == ("model", "workers_per_dc", "H", "variant")
    assert list(ds["model"].values) == ["study", "P=1e+09"]
    assert ds["params"].values.tolist() == [7_916_736.0, 1e9]


def test_every_variable_has_units():
    ds = bandjax.sweep(SC, bandwidth=[1.0, 10.0], budget=["free", 10])
    for name, var in ds.data_vars.items():
        assert "units" in var.attrs, name
    assert ds["bandwidth"].attrs["units"] == "GB/s"
    assert ds["budget"].attrs["units"] == "GFLOP/s"
    assert ds["budget"].values.tolist() == [math.inf, 10.0]


def test_values_agree_with_the_point_functions():
    ds = bandjax.sweep(SC, bandwidth=[0.5, 12.5, 400.0], budget=["free", "low", "high"],
                       enob=[8, 6], basis=["hypothesis", "exact"])
    for bw in (0.5, 12.5, 400.0):
        for budget, flops in (("free", math.inf), ("low", 10e9), ("high", 99e9)):
            for enob in (8, 6):
                sc = SC.replace(wan_Bps=bw * 1e9, budget_FLOPs=flops, enob=float(enob))
                g = float(flops / 1e9)
                np.testing.assert_allclose(
                    ds["step_s"].sel(bandwidth=bw, budget=g, enob=enob, basis="exact").values,
                    np.asarray(step_s(sc)), rtol=1e-14)
                for basis in ("hypothesis", "exact"):
                    steps = steps_to_target(sc, enob, basis)
                    expect = np.asarray(time_to_target_s(sc, steps))
                    got = ds["time_to_target_s"].sel(bandwidth=bw, budget=g, enob=enob, basis=basis).values
                    ok = np.isfinite(steps)
                    np.testing.assert_allclose(got[ok], expect[ok], rtol=1e-14)
                    assert np.all(np.isnan(got[~ok]))


def test_nan_with_status_where_no_time_exists():
    ds = bandjax.sweep(SC, enob=[8, 6, 7], basis=["hypothesis", "exact"], bandwidth=12.5)
    status = ds["status"]
    assert status.attrs["flag_meanings"] == "ok never_reaches_target not_measured"
    # ENOB 6 was measured and never trains (docs/model.md s6): E never, E' never on the hypothesis basis
    assert int(status.sel(enob=6, basis="hypothesis", variant="band_pluggable")) == NEVER
    assert int(status.sel(enob=6, basis="hypothesis", variant="band_switch")) == NEVER
    # on the exact basis E' takes max(E's, the exact band's) (amended docs/model.md s6): never at 6,
    # 2,667 at 8, not available at 7
    assert int(status.sel(enob=6, basis="exact", variant="band_switch")) == NEVER
    assert int(status.sel(enob=7, basis="exact", variant="band_switch")) == NOT_MEASURED
    assert float(ds["steps_to_target"].sel(enob=8, basis="exact", variant="band_switch")) == 2667
    # ENOB 7 was not measured: not available, never invented
    assert int(status.sel(enob=7, basis="hypothesis", variant="band_pluggable")) == NOT_MEASURED
    t = ds["time_to_target_s"]
    assert np.isnan(float(t.sel(enob=6, basis="hypothesis", variant="band_pluggable")))
    assert np.isnan(float(t.sel(enob=7, basis="exact", variant="band_pluggable")))
    assert np.isinf(float(ds["steps_to_target"].sel(enob=6, basis="exact", variant="band_pluggable")))
    # the step time exists at every ENOB
    assert np.all(np.isfinite(ds["step_s"].values))
    # variants with their own steps are unaffected by ENOB
    assert int((status.sel(variant=["adamw", "topk", "band_gpu"]) != OK).sum()) == 0


def test_new_coordinate_values_do_not_recompile():
    bandjax.sweep(SC, bandwidth=np.logspace(-1, 3, 17), budget=[10, 99, "free"], enob=[8, 6])
    before = grid._evaluate._cache_size()
    ds = bandjax.sweep(SC, bandwidth=np.logspace(-0.5, 2.5, 17), budget=[20, 50, 140], enob=[7, 5])
    assert grid._evaluate._cache_size() == before
    # and the new values really were used
    assert float(ds["bandwidth"][0]) == pytest.approx(10 ** -0.5)
    sc = SC.replace(wan_Bps=10 ** -0.5 * 1e9, budget_FLOPs=20e9, enob=7.0)
    np.testing.assert_allclose(ds["step_s"].isel(bandwidth=0, budget=0, enob=0).values,
                               np.asarray(step_s(sc)), rtol=1e-14)


def test_any_scenario_field_can_be_swept():
    ds = bandjax.sweep(SC, optics_Sps=[3.5e9, 7e9], variant="band_switch")
    assert ds["step_s"].dims == ("optics_Sps",)
    assert ds["optics_Sps"].attrs["units"] == "S/s"
    fast = float(step_s(SC.replace(optics_Sps=7e9))[5])
    assert float(ds["step_s"].sel(optics_Sps=7e9)) == pytest.approx(fast, rel=1e-14)


def test_aligns_with_other_labelled_results():
    a = bandjax.sweep(SC, bandwidth=[1.0, 12.5, 100.0], quantities=["step_s"])
    b = bandjax.sweep(SC, bandwidth=[12.5, 100.0], quantities=["step_s"])
    a2, b2 = xr.align(a, b, join="inner")
    assert a2["bandwidth"].values.tolist() == [12.5, 100.0]
    np.testing.assert_array_equal(a2["step_s"].values, b2["step_s"].values)


@pytest.mark.parametrize("kwargs, words", [
    (dict(bandwidth=[1, -2]), ["bandwidth = -2", "> 0", "GB/s"]),
    (dict(bandwidth=[]), ["bandwidth = []"]),
    (dict(enob=[40]), ["enob = 40", "[1, 32]"]),
    (dict(budget=["cheap"]), ["budget = 'cheap'", "'free'"]),
    (dict(budget=[0]), ["budget = 0", "> 0"]),
    (dict(variant=["adamx"]), ["variant = 'adamx'", "adamw"]),
    (dict(model=["gpt5"]), ["model = 'gpt5'", "llama3-8b"]),
    (dict(workers_per_dc=[2.5]), ["workers_per_dc = 2.5", "whole number"]),
    (dict(H=[0]), ["H = 0", "whole number >= 1"]),
    (dict(basis=["both"]), ["basis = 'both'", "hypothesis, exact"]),
    (dict(quantities=["speed"]), ["'speed'", "step_s"]),
    (dict(wan=[1.0]), ["wan is not a sweep argument", "wan_Bps"]),
])
def test_bad_input_is_a_clear_error(kwargs, words):
    with pytest.raises(ValueError) as e:
        bandjax.sweep(SC, **kwargs)
    for w in words:
        assert w in str(e.value)
