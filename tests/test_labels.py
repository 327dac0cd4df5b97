"""Budget labels built with array operations are the labels of the per-value definition.

The oracle below is the definition the sweep's ``budget_label`` coordinate had when it was built
one value at a time (a Python function per budget, ``np.vectorize``): the scenario's name of a
budget when it equals the named one exactly or to 1e-12 relative, else ``f"{x:g} GFLOP/s"``.
"""

import math

import numpy as np
import pytest

import bandjax
from bandjax.labels import budget_labels, format_g
from bandjax.scenario import resolve_budget


def _oracle_label(sc, GFLOPs):
    for name in ("free", "low", "high"):
        named = resolve_budget(sc, name) / 1e9
        if GFLOPs == named or np.isclose(GFLOPs, named, rtol=1e-12, atol=0.0):
            return name
    return f"{GFLOPs:g} GFLOP/s"


def _oracle(sc, values):
    return np.vectorize(lambda x: _oracle_label(sc, x), otypes=[str])(values)


def _hard_values(sc) -> np.ndarray:
    """Values where a fast formatter or a name test could go wrong, and many ordinary ones."""
    rng = np.random.default_rng(22)
    low, high = float(sc.budget_low_FLOPs) / 1e9, float(sc.budget_high_FLOPs) / 1e9
    near = [v * (1 + d) for v in (low, high) for d in (0.0, 1e-13, -1e-13, 9e-13, -9e-13, 2e-12,
                                                       -2e-12, 1e-9, -1e-6)]
    near += [np.nextafter(v, s) for v in (low, high) for s in (0.0, math.inf)]
    powers = 10.0 ** np.arange(-20, 31)
    return np.concatenate([
        [math.inf, 1.0, 1.5, 25.0, 140.0, 999999.5, 999999.4999, 9.999995, 1.0000005, 0.5, 2.5,
         12.5, 1e-4, 1e-5, 123456.0, 1234567.0, 1e27, 1e28, 1e-17, 1e-18, 1e100, 5e-324],
        near, powers, np.nextafter(powers, 0.0), np.nextafter(powers, math.inf),
        np.geomspace(1e-6, 1e30, 20_001), 10 ** rng.uniform(-22, 32, 20_000),
        np.round(rng.uniform(0, 1000, 5_000), 3), np.round(rng.uniform(0, 10, 5_000), 6) + 5e-7,
    ])


@pytest.mark.parametrize("scenario", ["reference", "other budgets"])
def test_budget_labels_equal_the_per_value_definition(scenario):
    sc = bandjax.reference()
    if scenario == "other budgets":
        sc = sc.replace(budget_low_FLOPs=33.3e9, budget_high_FLOPs=1.23456789e12)
    values = _hard_values(sc)
    got, want = budget_labels(sc, values), _oracle(sc, values)
    assert got.dtype == want.dtype  # as wide as the longest label, as before
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(values[i], got[i], want[i]) for i in bad[:5]]
    assert {"free", "low", "high"} <= set(got.tolist())


def test_budget_labels_keep_the_shape():
    sc = bandjax.reference()
    low = float(sc.budget_low_FLOPs) / 1e9
    assert budget_labels(sc, np.float64(low)).shape == ()
    assert str(budget_labels(sc, np.float64(low))) == "low"
    grid = np.array([[math.inf, 42.0], [low, 0.125]])
    np.testing.assert_array_equal(budget_labels(sc, grid), _oracle(sc, grid))


def test_format_g_is_pythons_g_for_any_float():
    # zeros, negatives, NaN, infinities, subnormals: formatted by Python, the rest by arrays
    x = np.array([0.0, -0.0, -1.5, math.nan, math.inf, -math.inf, 5e-324, 2.2e-308, 1.7976931348623157e308,
                  3.0, 1e-5, 7.77e22])
    assert format_g(x).tolist() == [f"{v:g}" for v in x.tolist()]
    assert format_g(x, " s").tolist() == [f"{v:g} s" for v in x.tolist()]
    assert format_g(np.array([])).shape == (0,)


def test_sweep_budget_label_is_the_definition():
    sc = bandjax.reference()
    budgets = ["free", "low", "high", 42.0, 0.1, 1e7, 123.4567]
    ds = bandjax.sweep(sc, bandwidth=[1.0, 10.0], budget=budgets, quantities=("step_s",))
    np.testing.assert_array_equal(ds.budget_label.values, _oracle(sc, ds.budget.values))
    assert ds.budget_label.values.tolist() == ["free", "low", "high", "42 GFLOP/s", "0.1 GFLOP/s",
                                               "1e+07 GFLOP/s", "123.457 GFLOP/s"]
    assert float(ds.sel(budget="low").budget) == float(sc.budget_low_FLOPs) / 1e9
    one = bandjax.sweep(sc, bandwidth=1.0, budget="high", quantities=("step_s",))
    assert str(one.budget_label.values) == "high"
