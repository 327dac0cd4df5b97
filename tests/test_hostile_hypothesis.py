"""Values of every type through every public argument of bandjax.sweep, required_bandwidth,
winner and break_even, and through every scenario field of Scenario.replace: each call either
refuses the value with a ValueError (ScenarioError is one) or answers with numbers that are
finite, or NaN where NaN is documented (a variant never reaching the target, a target not
reachable). Never another exception, never an answer from a value that is not allowed.

Bounded: a fixed number of examples each, no deadline, so the module runs in minutes on a loaded
machine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bandjax as bj
from bandjax.scenario import FIELDS, LIMITS

SC = bj.reference()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
                database=None)

# Values of every type: booleans, complex, NaN and infinities, huge integers, text, lists of the
# wrong length, None, NumPy scalars, and some that are valid for some arguments.
ANY = st.one_of(
    st.booleans(), st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 0.5, 1.0, 2.0, 12.5, 1e300,
                     -1e-300]),
    st.integers(-2**1100, 2**1100), st.integers(-3, 70),
    st.text(max_size=6), st.sampled_from(["adamw", "ring", "free", "low", "hypothesis", "study"]),
    st.none(),
    st.lists(st.one_of(st.floats(allow_nan=True), st.integers(-3, 70), st.booleans(),
                       st.sampled_from(["adamw", "band_switch"])), max_size=3),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.integers(-10, 10).map(np.int64), st.booleans().map(np.bool_),
    st.just(np.array([])), st.just(np.ones((2, 2))))

SWEEP_ARGS = ["bandwidth", "enob", "budget", "variant", "model", "gpu", "dcs", "topology",
              "workers_per_dc", "H", "basis"]


def _finite_or_nan(values) -> None:
    """Numbers an accepted call returns: no infinity of the wrong sign, no complex, no object."""
    x = np.asarray(values)
    assert x.dtype.kind in "fiub", x.dtype
    if x.dtype.kind == "f":
        assert not np.any(np.isneginf(x)), values


def _answered_or_refused(call):
    try:
        return call()
    except ValueError:
        return None


@FAST
@given(name=st.sampled_from(SWEEP_ARGS), value=ANY)
def test_sweep_arguments(name, value):
    ds = _answered_or_refused(lambda: bj.sweep(SC, quantities=["step_s"], **{name: value}))
    if ds is not None:
        step = ds.step_s.values
        _finite_or_nan(step)
        assert np.all(np.isfinite(step) & (step > 0)), (name, value, step)


@FAST
@given(name=st.sampled_from(SWEEP_ARGS), value=ANY)
def test_winner_arguments(name, value):
    kwargs = {"bandwidth": [1.0, 10.0], name: value} if name != "bandwidth" else {name: value}
    ds = _answered_or_refused(lambda: bj.winner(SC, **kwargs))
    if ds is not None:
        for v in ds.data_vars.values():
            _finite_or_nan(v.values)


@FAST
@given(name=st.sampled_from(["utilisation", "variant", "range_GBps", "target", "H", "dcs",
                             "wan_latency_s"]), value=ANY)
def test_required_bandwidth_arguments(name, value):
    kwargs = {name: value}
    utilisation = kwargs.pop("utilisation", 0.9)
    ds = _answered_or_refused(lambda: bj.required_bandwidth(SC, utilisation, **kwargs))
    if ds is not None:
        need = ds.required_bandwidth_GBps.values
        _finite_or_nan(need)
        # NaN is documented where not reachable; a number lies where its status says: in the
        # range (0 reached), below it (2) or above it (3)
        from bandjax.need import ABOVE_RANGE, BELOW_RANGE, NOT_REACHABLE, REACHED

        status = ds.status.values
        lo, hi = ds.attrs["range_GBps"]
        assert np.all(np.isnan(need) == (status == NOT_REACHABLE))
        assert np.all((need[status == REACHED] > lo) & (need[status == REACHED] <= hi))
        assert np.all(need[status == BELOW_RANGE] <= lo)
        assert np.all(need[status == ABOVE_RANGE] > hi)


@FAST
@given(name=st.sampled_from(["a", "b", "over", "basis", "lo", "hi", "grid", "max_roots"]),
       value=ANY)
def test_break_even_arguments(name, value):
    kwargs = {"a": "adamw", "b": "band_switch", name: value}
    a, b = kwargs.pop("a"), kwargs.pop("b")
    if name == "grid" and isinstance(value, int) and not isinstance(value, bool) and value > 4096:
        return  # a valid grid that large is a slow answer, bounded elsewhere (MAX_ROOT_GRID)
    be = _answered_or_refused(lambda: bj.break_even(SC, a, b, **kwargs))
    if be is not None:
        _finite_or_nan(be.x)
        x = np.asarray(be.x)
        found = x[~np.isnan(x)]
        assert np.all((found >= be.lo) & (found <= be.hi)), (be.lo, be.hi, found)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(name=st.sampled_from(sorted(FIELDS)), value=ANY)
def test_replace_every_field(name, value):
    """An accepted field is within its limits (LIMITS, as a file would be read; a whole count may
    take any value in its range here, for derivatives), and the scenario gives a finite step time
    > 0 for every variant (an ENOB without measured steps is allowed: its steps are NaN, as a
    sweep over ENOB documents)."""
    sc = _answered_or_refused(lambda: SC.replace(**{name: value}))
    if sc is None:
        return
    x = np.asarray(getattr(sc, name), dtype=float)
    lo, lo_ok, hi, hi_ok, _, inf_ok = LIMITS[name]
    assert np.all((x >= lo) if lo_ok else (x > lo)), (name, value)
    assert np.all(np.isfinite(x) | ((x == math.inf) & inf_ok)), (name, value)
    step = np.asarray(bj.step_s(sc))
    assert np.all(np.isfinite(step) & (step > 0)), (name, value, step)


# ------------------------------------------------------------------ a law: targets and H

@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(targets=st.lists(st.sampled_from([0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0]), min_size=1,
                        max_size=4, unique=True),
       swept=st.sampled_from([{}, {"H": [1, 10, 100]}, {"H": [1, 4], "dcs": [2, 3]},
                              {"wan_latency_s": [0.0, 0.01]}, {"H": [2, 8], "workers_per_dc": [1, 4]}]),
       target=st.sampled_from(["utilisation", "goodput"]))
def test_several_targets_are_each_one_target(targets, swept, target):
    """required_bandwidth over several targets, with any dimensions swept, gives each target the
    answer of its own one-target call (several targets with H swept were a shape error)."""
    sc = SC.replace(failure_rate_per_hour=1e-5) if target == "goodput" else SC
    many = bj.required_bandwidth(sc, targets, target=target, **swept)
    for i, u in enumerate(targets):
        one = bj.required_bandwidth(sc, u, target=target, **swept)
        np.testing.assert_allclose(many.required_bandwidth_GBps.isel(utilisation=i),
                                   one.required_bandwidth_GBps.isel(utilisation=0), rtol=1e-12,
                                   equal_nan=True)
        assert np.array_equal(many.status.isel(utilisation=i), one.status.isel(utilisation=0))
