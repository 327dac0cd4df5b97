"""How bandjax.sweep builds its result fast, and that the fast paths change nothing: small terms
computed once on their own shapes, the Dataset built directly with its indexes, float-array axes
kept as arrays, and what is kept between sweeps (a scenario's accepted overrides, a budget axis's
labels, a memory reading) never standing in for a check it must make."""

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import bandjax
from bandjax import _limits, grid, scenario
from bandjax._budget_index import budget_indexed
from bandjax.scenario import ScenarioError
from bandjax.step import computed_once, sum_parts
from bandjax.sweepargs import parse

SC = bandjax.reference()


def test_computed_once_hands_the_values_back_bit_for_bit():
    # a NaN first value sends the conditional down its other branch (x * 1): exact too
    a = np.array([np.nan, -0.0, np.inf, -np.inf, 5e-324, 1.7976931348623157e308, 1.0 / 3.0])
    b = np.array([[0.1], [-0.0]])
    for got, want in ((jax.jit(computed_once)(a, b), (a, b)), (computed_once(a[1:], b), (a[1:], b))):
        for g, w in zip(got, want):
            g = np.asarray(g)
            assert g.dtype == w.dtype and g.shape == w.shape
            assert np.array_equal(g.view(np.int64), w.view(np.int64))  # signs of zero, NaN bits
    assert computed_once() == ()
    # under transformations it is the identity
    x = jnp.array([1.5, 2.0])
    np.testing.assert_array_equal(jax.grad(lambda v: jnp.sum(computed_once(v * v)[0]))(x), 2 * x)
    np.testing.assert_array_equal(jax.vmap(lambda v: computed_once(v + 1.0)[0])(x), x + 1.0)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the conditional is the CPU's barrier")
def test_sum_parts_leaves_no_small_work_in_the_full_size_loop():
    # On an outer-product grid the parts depend on one axis each: their products and sums must be
    # computed on their own shapes, so the full-size loop holds only the adds of the sum.
    def f(bw, budget, v):
        return sum_parts([bw * 3.0 + v, budget * 2.0 - v, v * 5.0, bw * budget * 0.0 + 1.0])

    args = np.ones((50, 1, 1)), np.ones((1, 40, 1)), np.ones(6)
    hlo = jax.jit(f).lower(*args).compile().as_text()
    # the work of a loop fusion is done at every element of its output, whatever the shapes
    # written inside it: the fusions that write the full grid may only add
    called = re.findall(r"= f64\[50,40,6\]\S* fusion\(.*calls=%([\w.-]+)", hlo)
    assert called
    for name in called:
        body = re.search(rf"^%{re.escape(name)} .*?^}}", hlo, flags=re.S | re.M).group(0)
        ops = set(re.findall(r"= \S+ ([\w-]+)\(", body))
        assert "add" in ops and not {"multiply", "subtract", "divide"} & ops, (name, ops)
    np.testing.assert_array_equal(jax.jit(f)(*args), f(*args))


def _general(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` rebuilt by xarray's general constructor, its budget index set as a store sets it."""
    data = {k: xr.Variable(v.dims, v.values, dict(v.attrs)) for k, v in ds.data_vars.items()}
    coords = {k: xr.Variable(v.dims, v.values, dict(v.attrs)) for k, v in ds.coords.items()}
    return budget_indexed(xr.Dataset(data, coords=coords, attrs=dict(ds.attrs)))


@pytest.mark.parametrize("kwargs", [
    dict(bandwidth=np.geomspace(0.1, 1000, 7), budget=np.geomspace(1, 1000, 5)),
    dict(bandwidth=[1.0, 2.0], budget=[10, "low", "free", "high"]),
    dict(bandwidth=3.0, budget="low", variant="adamw"),
    dict(bandwidth=[1.0, 5.0], variant=["adamw", "band_switch"], enob=[8, 6],
         basis=["hypothesis", "exact"], model=["study", "llama3-8b"]),
    dict(budget=np.array([1e3, np.inf]), workers_per_dc=[1, 8], topology=["ring", "mesh"],
         wan_latency_s=np.array([0.0, 1e-3])),
])
def test_the_dataset_is_what_the_general_constructor_builds(kwargs):
    ds = bandjax.sweep(SC, **kwargs)
    ref = _general(ds)
    xr.testing.assert_identical(ds, ref)
    assert list(ds.variables) == list(ref.variables) and dict(ds.sizes) == dict(ref.sizes)
    assert repr(ds) == repr(ref)
    for name, index in ref.xindexes.items():
        got = ds.xindexes[name]
        assert type(got) is type(index) and got.coord_dtype == index.coord_dtype
        assert got.index.equals(index.index) and got.index.dtype == index.index.dtype
        assert getattr(got, "names", None) == getattr(index, "names", None)
    if "budget" in ds.dims:
        for label in [*ref.xindexes["budget"].names, str(ds.budget_label.values[0])]:
            if label == "free" and np.inf not in ref.budget.values:
                continue
            xr.testing.assert_identical(ds.sel(budget=label), ref.sel(budget=label))


def test_the_dataset_owns_its_attrs():
    ds = bandjax.sweep(SC, bandwidth=[1.0, 2.0], budget=[10.0, 20.0])
    ds["step_s"].attrs["units"] = "changed"
    ds["bandwidth"].attrs["units"] = "changed"
    ds["budget"].attrs["units"] = "changed"
    again = bandjax.sweep(SC, bandwidth=[1.0, 2.0], budget=[10.0, 20.0])
    assert again["step_s"].attrs["units"] == "s"
    assert again["bandwidth"].attrs["units"] == "GB/s" and again["budget"].attrs["units"] == "GFLOP/s"


def test_budget_labels_kept_are_the_datasets_own():
    for _ in range(3):  # made, then kept, then handed out from what is kept
        ds = bandjax.sweep(SC, budget=[10.0, 99.0])
        assert ds.budget_label.values.tolist() == ["low", "high"]
        with pytest.raises(ValueError, match="read-only"):  # the labels are shared, so read-only
            ds.budget_label.values[0] = "x"
        ds.variables["budget_label"].values = np.array(["x", "y"])  # this Dataset's own Variable
        assert ds.budget_label.values.tolist() == ["x", "y"]
    assert bandjax.sweep(SC, budget=[10.0, 99.0]).budget_label.values.tolist() == ["low", "high"]


def test_a_float_array_axis_parses_as_its_list():
    bw, bud = np.geomspace(0.1, 1000, 9), np.array([1.0, 10.0, np.inf])
    lat = np.array([0.0, 2e-3])
    a = parse(SC, bandwidth=bw, budget=bud, wan_latency_s=lat)
    b = parse(SC, bandwidth=bw.tolist(), budget=bud.tolist(), wan_latency_s=lat.tolist())
    assert [x.name for x in a.axes] == [x.name for x in b.axes]
    for x, y in zip(a.axes, b.axes):
        assert np.array_equal(np.asarray(x.coords), np.asarray(y.coords))
        assert x.fields.keys() == y.fields.keys() and x.attrs == y.attrs
    for k in b.leaves:
        assert np.array_equal(a.leaves[k], b.leaves[k]) and a.leaves[k].shape == b.leaves[k].shape
    assert np.array_equal(a.steps, b.steps)
    bw[0] = 123.0  # the grid keeps its own copy
    assert a.axes[0].coords[0] == pytest.approx(0.1)


@pytest.mark.parametrize("name, bad", [
    ("bandwidth", [1.0, -2.0]), ("bandwidth", [1.0, np.nan]), ("bandwidth", [1.0, np.inf]),
    ("bandwidth", [1.0, 1e300]), ("budget", [1.0, -5.0]), ("budget", [np.nan]),
    ("wan_latency_s", [0.0, -1.0]), ("overlap_fraction", [0.5, 2.0]),
])
def test_a_float_array_is_refused_as_its_list(name, bad):
    with pytest.raises(ValueError) as as_list:
        bandjax.sweep(SC, **{name: list(bad)})
    with pytest.raises(ValueError) as as_array:
        bandjax.sweep(SC, **{name: np.array(bad)})
    assert type(as_array.value) is type(as_list.value)
    assert str(as_array.value) == str(as_list.value)


def test_overrides_accepted_by_one_scenario_are_checked_for_another():
    low = 50e9  # above the second scenario's high budget: a relation its replace refuses
    assert bandjax.sweep(SC, budget_low_FLOPs=[low, 60e9]).step_s.size
    assert bandjax.sweep(SC, budget_low_FLOPs=[low, 60e9]).step_s.size  # accepted, kept
    tight = SC.replace(budget_low_FLOPs=1e9, budget_high_FLOPs=40e9)
    with pytest.raises(ScenarioError, match="budget_low"):
        bandjax.sweep(tight, budget_low_FLOPs=[low, 60e9])
    with pytest.raises(ScenarioError, match="budget_low"):
        bandjax.sweep(tight, budget_low_FLOPs=[low, 60e9])  # refused again, not remembered


def test_a_new_scenario_is_evaluated_with_its_own_values():
    first = bandjax.sweep(SC, bandwidth=[1.0, 2.0])
    other = SC.replace(wan_latency_s=0.05)
    second = bandjax.sweep(other, bandwidth=[1.0, 2.0])
    assert np.all(second.step_s.values > first.step_s.values)
    np.testing.assert_array_equal(bandjax.sweep(SC, bandwidth=[1.0, 2.0]).step_s, first.step_s)


def test_the_memory_reading_is_reused_only_far_below_it(monkeypatch):
    reads = []

    def available():
        reads.append(1)
        return 1e12

    monkeypatch.setattr(_limits, "available_memory_bytes", available)
    monkeypatch.setattr(grid, "_memory_reading", [None, -np.inf, np.inf])
    bandjax.sweep(SC, bandwidth=[1.0, 2.0])
    bandjax.sweep(SC, bandwidth=[1.0, 2.0, 3.0])
    assert len(reads) == 1
    # a sweep within MEMORY_MARGIN of the reading reads again
    least = 1e12 / grid.MEMORY_MARGIN * 1.01
    assert grid._available_memory_bytes(least) == 1e12 and len(reads) == 2
    # a stale reading is read again
    monkeypatch.setattr(grid, "MEMORY_READING_S", 0.0)
    bandjax.sweep(SC, bandwidth=[1.0, 2.0])
    assert len(reads) == 3


def _bits_identical(a: xr.Dataset, b: xr.Dataset) -> None:
    xr.testing.assert_identical(a, b)
    assert list(a.sizes.items()) == list(b.sizes.items())  # the dimensions, in their order
    for name in a.variables:
        x, y = a[name].values, b[name].values
        assert x.dtype == y.dtype and x.shape == y.shape, name
        if x.dtype.kind == "f":  # signs of zero and NaN bits too, at each value's own width
            bits = f"i{x.itemsize}"
            assert np.array_equal(np.ascontiguousarray(x).view(bits),
                                  np.ascontiguousarray(y).view(bits)), name


def _one_bit_apart(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    b.view(np.int64)[len(b) // 2] ^= 1
    return b


@pytest.mark.parametrize("first, again", [
    (dict(wan_latency_s=np.array([0.0, 1e-3])), dict(wan_latency_s=np.array([-0.0, 1e-3]))),
    (dict(wan_latency_s=[0.0, 1e-3]), dict(wan_latency_s=[-0.0, 1e-3])),
    (dict(budget=[10, 20]), dict(budget=[10.0, 20.0])),
    (dict(bandwidth=np.geomspace(1, 10, 4)), dict(bandwidth=np.geomspace(1, 10, 4)[::-1].copy())),
    (dict(model=["study"]), dict(model="study")),
    # alike in their first and last 64 bytes (what a key's hash reads), apart in one middle bit
    (dict(bandwidth=np.geomspace(1, 10, 50)), dict(bandwidth=_one_bit_apart(np.geomspace(1, 10, 50)))),
    (dict(bandwidth=np.geomspace(1, 10, 100)[::2]), dict(bandwidth=np.geomspace(1, 10, 100)[1::2])),
])
def test_arguments_that_differ_in_any_bit_are_not_one_kept_grid(first, again):
    sc = SC.replace(wan_latency_s=0.01)  # a scenario of its own: nothing kept from other tests
    for kwargs in (first, again, first, again):
        ds = bandjax.sweep(sc, **kwargs)
        _bits_identical(ds, _general(ds))
        # as a fresh parse of these arguments: another scenario object keeps nothing of sc's
        _bits_identical(ds, bandjax.sweep(sc.replace(), **kwargs))


def test_a_kept_grid_gives_what_a_fresh_parse_gives():
    sc = SC.replace(wan_latency_s=0.02)
    kwargs = dict(bandwidth=np.geomspace(0.1, 1000, 50), budget=[10, "low", "free"],
                  model=["study", "llama3-8b"])
    for quantities in (("step_s", "status", "hot_spot"), None, ("module_stage_s",),
                       ("step_s", "status", "hot_spot")):
        first = bandjax.sweep(sc, **kwargs, quantities=quantities)
        # each Dataset owns its coordinates: what the grid kept with sc holds is not touched
        # (their arrays are read-only; a Dataset's Variables are its own)
        for name, value in (("params", -1.0), ("budget_label", "x"), ("label", "x")):
            with pytest.raises(ValueError, match="read-only"):
                first[name].values[0] = value
            first.variables[name].values = np.full(first[name].shape, value)
        first["budget"].attrs["units"] = "x"
        first["model"].attrs["long_name"] = "x"
        first.attrs["title"] = "x"
        again = bandjax.sweep(sc, **kwargs, quantities=quantities)
        fresh = bandjax.sweep(sc.replace(), **kwargs, quantities=quantities)
        _bits_identical(again, fresh)
        _bits_identical(again, _general(again))
        assert again.params.values[0] == fresh.params.values[0] != -1.0
        assert again.budget_label.values[0] == "low" and again.label.values[0] != "x"
        assert again["budget"].attrs["units"] == "GFLOP/s" and again.attrs["title"] != "x"


def test_the_outputs_are_read_only():
    for kwargs in (dict(bandwidth=[1.0, 2.0], budget=[10.0, 20.0]),
                   dict(bandwidth=[1.0, 2.0], variant="adamw")):
        ds = bandjax.sweep(SC, **kwargs)
        for name, var in ds.data_vars.items():
            assert not var.values.flags.writeable, name
            with pytest.raises(ValueError):
                var.values.flat[0] = 0.0


def test_a_kept_grid_keeps_each_precision_its_own():
    # the kept scenario on the device is float64's: a float32 pass of the same grid is float32's
    sc = SC.replace(wan_latency_s=0.03)
    kwargs = dict(bandwidth=np.geomspace(0.1, 1000, 30), budget=[1.0, 10.0, 100.0])
    for dtype in ("float64", "float32", "float64", "float32", "float32"):
        ds = bandjax.sweep(sc, **kwargs, dtype=dtype)
        _bits_identical(ds, bandjax.sweep(sc.replace(), **kwargs, dtype=dtype))
    with pytest.raises(ValueError, match="dtype = 'float16'"):
        bandjax.sweep(sc, **kwargs, dtype="float16")


def test_a_shallow_copy_is_xarrays():
    # grid._shallow_copy makes directly what Variable.copy(deep=False) makes: the same type,
    # dims, data and encoding, and its own attrs and encoding dicts
    ds = bandjax.sweep(SC, bandwidth=[1.0, 2.0], budget=[10.0, "free"], H=4)
    for name, var in ds.variables.items():
        var.encoding["dtype"] = "float64"
        ours, theirs = grid._shallow_copy(var), var.copy(deep=False)
        assert type(ours) is type(theirs) is type(var), name
        assert ours.identical(theirs) and ours.encoding == theirs.encoding, name
        assert ours._data is var._data and theirs._data is var._data, name  # the same data
        ours.attrs["units"] = "changed"
        ours.encoding["dtype"] = "float32"
        assert var.attrs.get("units") != "changed" and var.encoding["dtype"] == "float64", name


def test_a_replayed_sweep_is_checked_for_memory_again(monkeypatch):
    # from the third time the same arguments and quantities come, the sweep is made from what
    # its grid kept (grid._replay); the memory it needs is still checked every time
    sc = SC.replace(wan_latency_s=0.04)
    kwargs = dict(bandwidth=np.geomspace(0.1, 1000, 40), budget=[1.0, 10.0])
    for _ in range(3):
        bandjax.sweep(sc, **kwargs)
    kept = grid._Kept.of(sc).grid(grid._args_key({**kwargs}))
    assert list(kept.plans) == [(tuple(grid.QUANTITIES), "float64")]
    need = grid._need_bytes(sc, kept.grid, tuple(grid.QUANTITIES), "float64")[0]
    monkeypatch.setattr(_limits, "available_memory_bytes", lambda: need)  # share < 100%: short
    monkeypatch.setattr(grid, "_memory_reading", [None, -np.inf, np.inf])
    with pytest.raises(ValueError, match=r"sweep of bandwidth 40 x budget 2 x 6 variants"):
        bandjax.sweep(sc, **kwargs)


def test_a_direct_variable_is_xarrays():
    # grid._variable makes directly what xr.Variable(dims, data, attrs, fastpath=True) makes
    for dims, data, attrs in ((("a", "b"), np.arange(6.0).reshape(2, 3), {"units": "s"}),
                              (("a",), np.arange(3, dtype=np.int8), {}),
                              ((), np.float64(2.0), None)):
        ours = grid._variable(list(dims), data, attrs)
        theirs = xr.Variable(dims, data, attrs, fastpath=True)
        assert type(ours) is type(theirs) and ours.identical(theirs)
        assert ours.encoding == theirs.encoding and ours._attrs == theirs._attrs
        if attrs:
            assert ours.attrs is not attrs  # its own dict


def test_a_new_axis_beside_kept_ones_builds_only_its_own():
    # each dimension's coordinates and index are kept with the scenario (grid._Kept.piece): a
    # sweep over a new bandwidth axis takes the budget's and the variants' and builds its own
    sc = SC.replace(wan_latency_s=0.05)
    budgets = [1.0, "low", 100.0]
    first = bandjax.sweep(sc, bandwidth=[1.0, 2.0], budget=budgets)
    first["budget"].attrs["units"] = "x"
    first["label"].attrs["long_name"] = "x"
    first.variables["budget_label"].values = np.array(["a", "b", "c"])
    for bandwidth in ([3.0, 4.0, 5.0], np.geomspace(1, 10, 7)):
        ds = bandjax.sweep(sc, bandwidth=bandwidth, budget=budgets)
        assert ds.xindexes["budget"] is first.xindexes["budget"]  # kept, not built again
        assert ds.xindexes["variant"] is first.xindexes["variant"]
        assert ds.xindexes["bandwidth"] is not first.xindexes["bandwidth"]
        assert ds["budget"].attrs["units"] == "GFLOP/s" and "long_name" not in ds["label"].attrs
        assert ds.budget_label.values.tolist() == ["1 GFLOP/s", "low", "100 GFLOP/s"]
        _bits_identical(ds, _general(ds))
        _bits_identical(ds, bandjax.sweep(sc.replace(), bandwidth=bandwidth, budget=budgets))


def test_the_relations_read_only_the_fields_a_sweep_checks_them_for():
    # scenario.check_overrides checks the relations on the scenario with a sweep's overrides
    # only where they touch RELATED_FIELDS: every field _check_relations reads must be there
    class Reads:
        def __init__(self, sc):
            self.sc, self.read = sc, set()

        def __getattr__(self, name):
            self.read.add(name)
            return getattr(self.sc, name)

    # a variant that takes the scenario's H and is streamed over it: H is read only then
    fp4 = next(v for v in bandjax.variants.METHODS if v.id == "streaming_diloco_fp4")
    tied = dataclasses.replace(fp4, id="tied",
                               short="tied", label="tied to H", sync_every=None)
    reads = Reads(SC.replace(sync_every_H=100.0).with_variant(tied))
    scenario._check_relations(reads)
    assert reads.read - {"variants"} == set(scenario.RELATED_FIELDS)


def test_a_scenario_that_breaks_a_relation_is_refused_by_any_sweep():
    # a Scenario made by its constructor is not checked; a sweep that overrides no related field
    # still checks the relations on the scenario itself
    bad = dataclasses.replace(SC, budget_low_FLOPs=2 * SC.budget_high_FLOPs)
    for kwargs in (dict(bandwidth=[1.0, 2.0]), dict(bandwidth=[1.0, 2.0]), dict()):
        with pytest.raises(ScenarioError, match="budget_low .* is above budget_high"):
            bandjax.sweep(bad, **kwargs)


@pytest.mark.parametrize("kwargs", [
    dict(bandwidth=[1.0, 2.0], variant="adamw"),
    dict(bandwidth=[1.0, 2.0], budget="low", quantities=("module_stage_s", "status")),
    dict(enob=[8, 6], basis=["hypothesis", "exact"], quantities=("steps_to_target", "step_s")),
    dict(bandwidth=np.geomspace(1, 10, 5), budget=[10.0, "free"], dtype="float32"),
    dict(model=["study", "llama3-8b"], H=[1, 4], quantities=("hot_spot", "energy_per_step_J")),
])
def test_a_replayed_sweep_is_what_a_fresh_sweep_gives(kwargs):
    # the first call parses, the second labels from the kept grid, the later ones replay its
    # plan (float64) or label again (float32): each the same, bit for bit, as a fresh scenario's
    sc = SC.replace(wan_latency_s=0.06)
    fresh = bandjax.sweep(sc.replace(), **kwargs)
    for _ in range(4):
        ds = bandjax.sweep(sc, **kwargs)
        _bits_identical(ds, fresh)
        _bits_identical(ds, _general(ds))
        for name, var in ds.data_vars.items():
            assert not var.values.flags.writeable, name


def test_a_scenario_keeps_a_bounded_number_of_dimensions():
    # every new axis is a new piece; a scenario keeps the last PIECES of them, and an axis too
    # long to key (more than ARGS_KEPT_UP_TO values) is built every time, never kept
    sc = SC.replace(wan_latency_s=0.07)
    for i in range(grid._Kept.PIECES + 8):
        bandjax.sweep(sc, bandwidth=[1.0 + i, 2.0 + i], quantities=("step_s",))
    kept = grid._Kept.of(sc)
    assert len(kept._pieces) == grid._Kept.PIECES
    long_axis = np.geomspace(0.1, 1000.0, grid.ARGS_KEPT_UP_TO + 1)
    before = dict(kept._pieces)
    ds = bandjax.sweep(sc, bandwidth=long_axis, quantities=("step_s",))
    assert ds.sizes["bandwidth"] == len(long_axis)
    assert set(kept._pieces) == set(before)  # nothing new kept, nothing dropped
