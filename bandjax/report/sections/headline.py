"""The report's headline: who wins at the scenario, where the winner changes over bandwidth, and the
smallest change that would make the in-transit band win, each with its steps basis.

Read from the other sections' results and the report's one pass; nothing is computed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...scenario import BASES, Scenario
from .. import passes
from .breakeven import BreakEvens
from .common import Results, Section


@dataclass(frozen=True)
class Headline(Section):
    """Who wins at the scenario (s), where the winner changes over bandwidth (GB/s), and the
    smallest change that would make the in-transit band win, per basis."""

    KEY: ClassVar[str] = "headline"

    wan_GBps: float
    winner: dict  # [basis] {variant, time_to_target_s}
    changes: dict  # [basis] [{from, to, GBps}]
    smallest_change: dict  # [basis] {a, b, parameter, current, required, ratio, units, status}


KEY = Headline.KEY
LEAD = True  # results.md shows it right after the title


def _segments(sw: passes.Sweeps, basis: str, own: str) -> list[tuple[str, float, float]]:
    """(winner id, from GB/s, to GB/s) along the curves' grid at the scenario's setting."""
    import numpy as np

    ds = sw.at(sw.bandwidth, own).sel(basis=basis).transpose("bandwidth", "variant")
    t = np.where(np.isnan(ds.time_to_target_s.values), np.inf, ds.time_to_target_s.values)
    grid, ids = ds.bandwidth.values, list(ds.variant.values)
    segs: list[list] = []
    for i, g in enumerate(grid):
        w = ids[int(np.argmin(t[i]))] if np.isfinite(t[i]).any() else None
        if segs and segs[-1][0] == w:
            segs[-1][2] = float(g)
        else:
            segs.append([w, float(g), float(g)])
    return [tuple(s) for s in segs]


def build(sc: Scenario, ctx: dict) -> Headline:
    """The headline from the core and break-even sections built before it (``ctx["sections"]``)
    and the report's one pass."""
    done = ctx["sections"]
    if done.core is None:
        raise ValueError("the headline reads the core section; build it first")
    sw = passes.of(sc, ctx)
    own = passes.scenario_budget(sc)
    wan = float(sc.wan_Bps) / 1e9
    winners, changes = {}, {}
    for basis in BASES:
        times = {v: t for v, t in done.core.time_to_target_s[basis].items() if t == t and t is not None}
        best = min(times, key=times.get) if times else None
        winners[basis] = {"variant": best, "time_to_target_s": times.get(best)}
        segs = _segments(sw, basis, own)
        # a change of winner lies between two grid points: its root-finder value where a
        # break-even of the two is known, else the midpoint (log) of the two grid points
        changes[basis] = [{"from": a[0], "to": b[0],
                           "GBps": _crossing(done.breakeven, a[0], b[0], basis, a[2], b[1])}
                          for a, b in zip(segs, segs[1:])]
    transit = {v.id for v in sc.variants if v.in_transit}
    inverse = done.breakeven.inverse if done.breakeven else []
    change = [c for c in inverse if c["a"] in transit and c["status"] in ("found", "already")]
    smallest = {}
    for basis in BASES:
        ok = [c for c in change if c["basis"] == basis and c.get("ratio") is not None]
        if ok:
            c = min(ok, key=lambda c: abs(_log(c["ratio"])))
            smallest[basis] = {k: c[k] for k in ("a", "b", "parameter", "current", "required",
                                                 "ratio", "units", "status")}
    return Headline(wan_GBps=wan, winner=winners, changes=changes, smallest_change=smallest)


def _log(x):
    import math

    return math.log(x) if x and x > 0 else float("inf")


def _crossing(r: BreakEvens | None, a, b, basis, lo, hi) -> float:
    for e in (r.break_even_GBps if r else []):
        if {e["a"], e["b"]} == {a, b} and e["basis"] in (basis, None):
            inside = [x for x in e["GBps"] if lo <= x <= hi]
            if inside:
                return inside[0]
    return (lo * hi) ** 0.5


def _fmt_value(x, units):
    scale = {"B/s": (1e9, "GB/s"), "FLOP/s": (1e9, "GFLOP/s"), "S/s": (1e9, "GS/s"), "s": (1e-3, "ms")}
    if not isinstance(x, (int, float)):
        return str(x)
    f, u = scale.get(units, (1.0, units))
    return f"{x / f:.4g} {u}".rstrip()


def lines(results: Results | dict) -> list[str]:
    """The headline as sentences (for results.md, the page and ``bandjax report``)."""
    results = Results.of(results)
    h = results.headline
    if h is None or results.core is None:
        return []
    names = results.names()
    n = lambda v: names.get(v, v) if v else "none"  # noqa: E731
    out = []
    for basis in BASES:
        w = h.winner[basis]
        t = w["time_to_target_s"]
        out.append(f"At {h.wan_GBps:g} GB/s ({8 * h.wan_GBps:g} Gb/s), {n(w['variant'])} "
                   f"reaches the target first" + (f" in {t:.3g} s" if t is not None else "")
                   + f" ({basis} basis).")
    for basis in BASES:
        ch = h.changes[basis]
        if ch:
            out.append("Over bandwidth the winner changes " + "; ".join(
                f"from {n(c['from'])} to {n(c['to'])} at {c['GBps']:.3g} GB/s "
                f"({8 * c['GBps']:.3g} Gb/s)" for c in ch) + f" ({basis} basis).")
        else:
            out.append(f"The winner is the same across 0.1 to 1,000 GB/s ({basis} basis).")
    for basis, c in h.smallest_change.items():
        if c["status"] == "already":
            out.append(f"{n(c['a'])} already beats {n(c['b'])} ({basis} basis).")
        else:
            # display names (names.py); the pair's steps are named after the variant
            what = (f"steps to target of {n(c['a'])}" if c["parameter"] == "steps_a" else
                    f"steps to target of {n(c['b'])}" if c["parameter"] == "steps_b" else
                    _display_name(c["parameter"]))
            out.append(f"Smallest change for {n(c['a'])} to beat {n(c['b'])}: {what} from "
                       f"{_fmt_value(c['current'], c['units'])} to {_fmt_value(c['required'], c['units'])} "
                       f"(x {c['ratio']:.3g}; {basis} basis).")
    return out


def _display_name(parameter: str) -> str:
    from ...names import NAMES

    entry = NAMES.get(parameter)
    return entry.name if entry is not None else parameter


def markdown(results: Results | dict) -> str:
    ls = lines(results)
    return "\n".join(["**Headline.**", "", *(f"- {s}" for s in ls)]) if ls else ""
