"""The inverse question: the smallest change of one parameter that makes a beat b.

Given a target ("E' beats C' on the exact basis at the scenario's bandwidth") and one parameter p
(the optics rate, the budget, the module port, the WAN, the steps), find the value nearest to the
current one, in ratio (|log p / p0|), at which a's and b's times to target are equal: beyond it a
wins. The search is the break-even search over p (:func:`bandjax.breakeven.break_even`: coarse
brackets, then Newton steps with derivatives from ``jax``), so every crossing in the allowed range
is seen, and the nearest one is the answer; where there is none, no value in the range achieves the
target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import breakeven as _be
from .metrics import time_to_target_once_s
from .scenario import Scenario

__all__ = ["Change", "smallest_change", "smallest_changes"]

ALREADY, FOUND, NONE_IN_RANGE = "already", "found", "none_in_range"


@dataclass(frozen=True)
class Change:
    """The answer to "what value of ``parameter`` makes a beat b?".

    ``status``: ``"already"`` (a already wins; ``required`` = ``current``), ``"found"`` (a wins
    beyond ``required``, in the direction of ``ratio``) or ``"none_in_range"`` (no value in
    [lo, hi] makes a win; ``required`` is NaN). Values in SI units (``units``).
    """

    a: str
    b: str
    basis: str
    parameter: str
    units: str
    current: float
    required: float
    ratio: float
    status: str
    lo: float
    hi: float
    time_a_s: float
    time_b_s: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def smallest_change(sc: Scenario, a: str, b: str, parameter: str, *, basis: str = "hypothesis",
                    lo=None, hi=None, grid: int = _be.GRID) -> Change:
    """The value of ``parameter`` nearest its current one (in ratio) at which a and b tie, beyond
    which a beats b; the rest of the scenario (its WAN bandwidth included) held.

    Args:
      sc: a scalar scenario.
      a, b: variant ids or short labels; the target is "a reaches the target loss sooner than b".
      parameter: a name of :func:`bandjax.breakeven.parameter_names` (``"steps_a"`` is a's steps).
      basis: which steps E' takes (``"hypothesis"`` or ``"exact"``).
      lo, hi: the allowed range of the parameter, SI units; default its value / 100 to x 100
        (1 to 10,000 GFLOP/s for the budget, 0.1 to 1,000 GB/s for the WAN).
    """
    return smallest_changes(sc, [(a, b, basis)], [parameter], lo=lo, hi=hi, grid=grid)[0]


def smallest_changes(sc: Scenario, targets, parameters, *, lo=None, hi=None,
                     grid: int = _be.GRID) -> list[Change]:
    """:func:`smallest_change` of every target (a, b, basis) for every one of ``parameters``, in
    that order (targets outer), with the same numbers; the searches run together
    (:func:`bandjax.breakeven.searches`: one compiled search over the WAN and one over the other
    parameters), not one compiled search a parameter. ``lo``/``hi``: as in
    :func:`smallest_change`, for every search."""
    asked = []
    for a, b, basis in targets:
        a, b = _be.resolve_variant(a, sc.variants), _be.resolve_variant(b, sc.variants)
        for parameter in parameters:
            _be._check_parameter(parameter, sc)
            steps = _be.pair_steps(sc, a, b, basis)
            if a == b:
                raise ValueError(f"a = b = {a!r}: a break-even needs two different variants")
            if parameter == "enob":
                raise ValueError("over = 'enob': ENOB is discrete (measured steps); use "
                                 "enob_break_even")
            over = {v: k for k, v in _be.OVER.items()}.get(parameter, parameter)
            rng = _be._default_range(over, parameter, sc, steps, lo, hi)
            asked.append((a, b, basis, parameter, steps, rng))
    if not asked:
        return []
    times = np.asarray(time_to_target_once_s(sc, 1.0))  # once for all the targets
    found = _be.searches(sc, [(a, b, basis) for a, b, basis, *_ in asked], [q[3] for q in asked],
                         [q[5][0] for q in asked], [q[5][1] for q in asked], grid=grid)
    return [_change(sc, times, *q, c) for q, c in zip(asked, found)]


def _change(sc, times, a, b, basis, parameter, steps, rng, c) -> Change:
    theta = (sc, float(steps[0]), float(steps[1]))
    current = float(np.asarray(_be.get_parameter(theta, parameter), dtype=float))
    t_a = float(steps[0]) * float(times[sc.ids.index(a)])
    t_b = float(steps[1]) * float(times[sc.ids.index(b)])
    lo, hi = rng
    common = dict(a=a, b=b, basis=basis, parameter=parameter, units=_be.parameter_units(parameter),
                  current=current, lo=lo, hi=hi, time_a_s=t_a, time_b_s=t_b)
    if t_a < t_b:
        return Change(required=current, ratio=1.0, status=ALREADY, **common)
    xs = np.asarray(c.x).reshape(-1)
    xs = xs[np.isfinite(xs)]
    if xs.size == 0:
        return Change(required=math.nan, ratio=math.nan, status=NONE_IN_RANGE, **common)
    # Nearest in ratio; a current value of 0 or inf (a [free] budget) is measured from the range's end.
    anchor = min(max(current, lo), hi) if math.isfinite(current) and current > 0 else (
        hi if current > 0 else lo)
    best = float(xs[np.argmin(np.abs(np.log(xs / anchor)))])
    ratio = best / current if math.isfinite(current) and current > 0 else math.nan
    return Change(required=best, ratio=ratio, status=FOUND, **common)
