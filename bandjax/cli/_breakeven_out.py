"""What ``bandjax breakeven`` prints: break-evens over bandwidth, budget or ENOB, elasticities and
the smallest change that makes A win. Loaded by the command once its arguments are checked."""

from __future__ import annotations

from .. import breakeven as be
from .. import inverse as inv
from .. import sensitivity as sens
from .. import variants as _v
from ..links import scaling_note
import numpy as np

from ..report.sections.breakeven import BASIS_NOTE, ENOB_GRID_GBps, _budget_label
from ..report.sections.common import fmt_value
from ..units import describe, significant
from ._setup import SIG, sig


def print_bandwidth(sc, a, b, basis, lo, hi) -> None:
    r = be.break_even(sc, a, b, basis=basis, lo=lo, hi=hi)
    _header(sc, r, basis)
    print(f"  WAN searched {sig(r.lo / 1e9)} to {sig(r.hi / 1e9)} GB/s")
    if r.links_scaling:
        print(f"  {r.links_scaling}")
    _print_crossings(sc, r, lambda x: f"{describe(x, 'byte_rate', SIG)} = {sig(8 * x / 1e9)} Gb/s")


def print_budget(sc, a, b, basis, lo, hi) -> None:
    r = be.break_even(sc, a, b, over="budget", basis=basis, lo=lo, hi=hi)
    _header(sc, r, basis)
    print(f"  module budget searched {sig(r.lo / 1e9)} to {sig(r.hi / 1e9)} GFLOP/s at "
          f"{describe(float(sc.wan_Bps), 'byte_rate', SIG)} WAN")
    _print_crossings(sc, r, lambda x: describe(x, "flop_rate", SIG))
    budget = be.budget_break_even(sc)
    print(f"  (the module's compute stops binding above "
          f"{describe(budget['numeric_GFLOPs'] * 1e9, 'flop_rate', SIG)})")


def print_enob(sc, a, b, basis, lo, hi) -> None:
    lo = lo or be.BANDWIDTH_RANGE_GBps[0] * 1e9
    hi = hi or be.BANDWIDTH_RANGE_GBps[1] * 1e9
    grid = sorted({*(g for g in ENOB_GRID_GBps if lo / 1e9 <= g <= hi / 1e9)})
    lowest = be.enob_break_even(sc, a, b, grid, basis=basis)
    dependent = set(_v.basis_dependent(sc.variants)) & {a, b}
    note = f"{basis} basis: {BASIS_NOTE[basis]}" if dependent else BASIS_NOTE[None]
    print(f"{sc.variant(a).short} ({a}) vs {sc.variant(b).short} ({b}), {note}")
    measured = sc.steps.measured_enobs(a, sc.variants)
    print(f"  lowest measured ENOB at which it still wins (measured: {', '.join(map(str, measured))}):")
    if scaling_note(sc, ["bandwidth"]):
        print(f"  {scaling_note(sc, ['bandwidth'])}")
    for g, e in zip(grid, lowest):
        print(f"  {sig(g):>8} GB/s = {sig(8 * g):>6} Gb/s: "
              + ("none" if np.isnan(e) else f"ENOB {sig(e)}"))


def _header(sc, r: be.BreakEven, basis) -> None:
    dependent = set(_v.basis_dependent(sc.variants)) & {r.a, r.b}
    note = f"{basis} basis: {BASIS_NOTE[basis]}" if dependent else BASIS_NOTE[None]
    steps = f"steps to target {sig(r.steps_a)} vs {sig(r.steps_b)}"
    print(f"{sc.variant(r.a).short} ({r.a}) vs {sc.variant(r.b).short} ({r.b}), {note}; {steps}; "
          f"module budget [{_budget_label(sc)}]; d calibrated; target loss "
          f"{sig(sc.steps.target_loss)}")


def _print_crossings(sc, r: be.BreakEven, fmt) -> None:
    at = r.at()
    if not at["x"] and not at["ties"]:
        if at["status"] in ("a_wins_throughout", "b_wins_throughout"):
            w = at["winners"][0]
            print(f"  no break-even in range: {sc.variant(w).short} ({w}) is faster throughout")
        else:
            print(f"  no break-even: {at['status'].replace('_', ' ')}")
        return
    # the pieces of the range, in order: (from, to, who is faster or a tie)
    pieces = list(zip([r.lo, *at["cuts"]], [*at["cuts"], r.hi], at["winners"]))
    said = lambda w: "equal" if w == be.TIED else f"{sc.variant(w).short} faster"  # noqa: E731
    k = 0
    for j, (x0, x1, w) in enumerate(pieces):
        before = pieces[j - 1][2] if j else None
        after = pieces[j + 1][2] if j + 1 < len(pieces) else None
        if w == be.TIED:
            print(f"  tie from {fmt(x0)} to {fmt(x1)}: equal times to target (relative difference "
                  f"<= {sig(be.TIE_RTOL)}); below: {said(before) if before else 'none (range start)'}; "
                  f"above: {said(after) if after else 'none (range end)'}")
        elif after is not None and after != be.TIED:
            k += 1
            print(f"  break-even {k}: {fmt(x1)}  (below: {said(w)}; above: {said(after)})")


def print_elasticities(sc, a, b, over, basis, lo, hi) -> None:
    r, elast = sens.elasticities(sc, a, b, over=over, basis=basis, lo=lo, hi=hi)
    for k in range(int(r.count)):
        print(f"  elasticities of break-even {k + 1} (% per %), largest first:")
        for n, v in sorted(elast.items(), key=lambda kv: -abs(float(kv[1][k])))[:8]:
            print(f"    {n:<28} {float(v[k]):+.4g}")


def print_achieve(sc, a, b, parameter, basis) -> None:
    c = inv.smallest_change(sc, a, b, parameter, basis=basis)
    if c.status == "already":
        print(f"  {sc.variant(a).short} already beats {sc.variant(b).short}; nothing to change")
    elif c.status == "found":
        side = "below" if c.ratio < 1 else "above"
        print(f"  {sc.variant(a).short} beats {sc.variant(b).short} with {parameter} {side} "
              f"{fmt_value(c.required, c.units)} (now {fmt_value(c.current, c.units)}; "
              f"x {significant(c.ratio, 4)} is the smallest change)")
    else:
        print(f"  no {parameter} in {fmt_value(c.lo, c.units)} to "
              f"{fmt_value(c.hi, c.units)} makes {sc.variant(a).short} beat {sc.variant(b).short}")
