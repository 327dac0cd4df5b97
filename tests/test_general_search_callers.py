"""The searches built on break-evens (the low-level crossing search, elasticities, uncertain
inputs) take a scenario's stragglers and failures as bandjax.break_even does.

Reference: bandjax.break_even, which asks bandjax.breakeven.needs_general_search of the scenario
and then re-evaluates the sweep's own times (c' with a straggler tail, time / ETTR with failures)
at every trial bandwidth. Before, these callers searched the simple form n (c + max(0, Q + V/B)),
which leaves both out: with a lognormal tail of sigma 0.5 the AdamW / E' all-reduce crossing was
6.58 GB/s there against 3.50 GB/s from break_even.
"""

import numpy as np
import pytest

import bandjax
from bandjax import breakeven as be
from bandjax import sensitivity as sens
from bandjax import uncertainty as U

REF = bandjax.reference()
STRAGGLING = REF.replace(straggler=2.0, straggler_s=0.5)  # lognormal, sigma 0.5
PAIR = ("adamw", "band_gpu_allreduce")


def _steps(sc, a, b):
    return tuple(sc.steps_of(v, float(sc.enob), "hypothesis") for v in (a, b))


@pytest.mark.parametrize("sc", [STRAGGLING, REF.replace(failure_rate_per_hour=0.5)],
                         ids=["stragglers", "failures"])
def test_the_crossing_search_takes_the_scenarios_own_times(sc):
    a, b = PAIR
    x = float(np.ravel(bandjax.break_even(sc, a, b).x)[0])
    c = be.bandwidth_crossings(sc, sc.ids.index(a), sc.ids.index(b), *_steps(sc, a, b), 0.1e9, 1000e9)
    assert float(np.ravel(c.x)[0]) == pytest.approx(x, rel=1e-9)


def test_a_straggler_tail_moves_the_crossing():
    """The case above is not vacuous: the tail moves this crossing by far more than the tolerance."""
    a, b = PAIR
    with_tail = float(np.ravel(bandjax.break_even(STRAGGLING, a, b).x)[0])
    without = float(np.ravel(bandjax.break_even(REF, a, b).x)[0])
    assert abs(with_tail / without - 1) > 0.2


def test_elasticities_with_stragglers_are_those_of_break_even():
    """d log x* / d log p against a central difference of bandjax.break_even itself (rel 1e-4)."""
    a, b = PAIR
    _, e = sens.elasticities(STRAGGLING, a, b, parameters=("gpu_peak_FLOPs", "qsfp_port_Bps"))
    h = 1e-5
    for name in ("gpu_peak_FLOPs", "qsfp_port_Bps"):
        p = float(getattr(STRAGGLING, name))
        xs = [float(np.ravel(bandjax.break_even(STRAGGLING.replace(**{name: p * f}), a, b).x)[0])
              for f in (1 + h, 1 - h)]
        fd = (np.log(xs[0]) - np.log(xs[1])) / (np.log1p(h) - np.log1p(-h))
        assert float(np.ravel(e[name])[0]) == pytest.approx(fd, rel=1e-4, abs=1e-7), name


def test_uncertain_inputs_with_stragglers_centre_on_break_even():
    """A near-point distribution: every sample's root and the delta method's centre are
    break_even's crossing at the scenario (rel 1e-6)."""
    a, b = PAIR
    d = STRAGGLING.fixed_s[b]
    r = U.propagate_break_even(STRAGGLING, a, b, {f"d.{b}": U.Normal(d, 1e-9 * d)}, samples=64)
    x0 = float(np.ravel(bandjax.break_even(STRAGGLING, a, b).x)[0]) / 1e9
    assert r.nominal_GBps == pytest.approx(x0, rel=1e-6)
    np.testing.assert_allclose(r.quantiles_GBps, x0, rtol=1e-6)
