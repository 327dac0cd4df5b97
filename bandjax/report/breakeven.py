"""Report section and ``bandjax breakeven``: where variants break even (docs/model.md section 10).

results.json gains

- ``break_even_GBps``: per pair (and basis, where E' is in the pair), the WAN crossings in GB/s and
  who wins below and above; at the scenario's own budget. ``break_even_GBps_by_budget``: the same
  for pairs with a module at [free], [low] and [high].
- ``enob_break_even``: per in-transit variant and rival, the lowest measured ENOB at which it still
  wins, over a bandwidth grid.
- ``budget_break_even``: where the module's compute stops binding (closed form and numeric).
- ``sensitivity``: elasticities of every break-even with respect to every parameter.
- ``inverse``: the smallest change of one parameter that makes E' win where it does not.
"""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np

from .. import breakeven as be
from .. import inverse as inv
from .. import sensitivity as sens
from .. import variants as _v
from ..scenario import BASES, Scenario, resolve_budget
from .sections import BreakEvens, Results

KEY = BreakEvens.KEY
ENOB_GRID_GBps = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 12.5, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
BUDGETS = ("free", "low", "high")
INVERSE_PARAMETERS = ("optics_Sps", "budget_FLOPs", "qsfp_port_Bps", "worker_port_Bps", "wan_Bps",
                      "steps_a")
BASIS_NOTE = {
    "hypothesis": "E' takes E's steps (the hypothesis that the optics' noise helps; a single seed)",
    "exact": "E' takes the exact band's steps (conservative)",
    None: "E' is not in the pair: the basis changes nothing",
}


def pairs(sc: Scenario | None = None) -> list[tuple[str, str, str | None]]:
    """(a, b, basis) for every pair of the scenario's variants, the later variant of the registry
    as a; both bases where a basis-dependent variant is in the pair, one entry (basis None)
    otherwise."""
    registry = _v.VARIANTS if sc is None else sc.variants
    ids, dependent = _v.ids(registry), _v.basis_dependent(registry)
    out = []
    for i, j in itertools.combinations(range(len(ids)), 2):
        a, b = ids[j], ids[i]
        for basis in (BASES if {a, b} & set(dependent) else (None,)):
            out.append((a, b, basis))
    return out


def compared_pairs(sc: Scenario) -> list[tuple[str, str, str]]:
    """(a, b, basis) of the pairs the report compares side by side (:data:`variants.DEFAULT_PAIRS`
    present in the scenario, else each in-transit variant against each that is not): on both
    bases where the pair's steps depend on the basis, on the hypothesis basis otherwise."""
    ids, dependent = set(sc.ids), set(_v.basis_dependent(sc.variants))
    chosen = [(a, b) for a, b in _v.DEFAULT_PAIRS if a in ids and b in ids] or [
        (a.id, b.id) for a in sc.variants if a.in_transit for b in sc.variants if not b.in_transit]
    return [(a, b, basis) for a, b in chosen
            for basis in (BASES if {a, b} & dependent else ("hypothesis",))]


def inverse_pairs(sc: Scenario, ctx: dict) -> list[tuple[str, str, str]]:
    """(a, b, basis): each in-transit variant of the compared pairs against the variant that
    reaches the target first at the scenario (on each basis where a's steps depend on it)."""
    from . import passes

    sw = passes.of(sc, ctx)
    t = sw.at(sw.point, passes.scenario_budget(sc))["time_to_target_s"]
    dependent = set(_v.basis_dependent(sc.variants))
    firsts = [a for a in dict.fromkeys(a for a, _, _ in compared_pairs(sc)) if sc.variant(a).in_transit]
    out = []
    for a in firsts:
        for basis in (BASES if a in dependent else ("hypothesis",)):
            at = t.sel(basis=basis).fillna(np.inf)
            winner = sc.ids[int(np.argmin(at.values))]
            if winner != a:
                out.append((a, winner, basis))
    return out


def _short(vid, names: dict | None = None):
    """A variant's short label: from ``names`` (id -> short, a report's setup) or the study's
    registry."""
    if not vid:
        return "-"
    if names and vid in names:
        return names[vid]
    return _v.BY_ID[vid].short if vid in _v.BY_ID else vid


def _budget_label(sc: Scenario) -> str:
    value = float(sc.budget_FLOPs)
    return "free" if math.isinf(value) else f"{value / 1e9:g} GFLOP/s"


def _all_pairs(sc: Scenario, budgets=None):
    """Crossings and elasticities of every pair at once (pairs on the last axis; budgets, when
    given as FLOP/s, on the axis before it)."""
    ps = pairs(sc)
    ia = np.array([sc.ids.index(a) for a, _, _ in ps])
    ib = np.array([sc.ids.index(b) for _, b, _ in ps])
    na = np.array([sc.steps_of(a, float(sc.enob), basis or "hypothesis") for a, _, basis in ps])
    nb = np.array([sc.steps_of(b, float(sc.enob), basis or "hypothesis") for _, b, basis in ps])
    if budgets is not None:
        sc = sc.replace(budget_FLOPs=np.asarray(budgets, dtype=float)[:, None])
    lo, hi = (g * 1e9 for g in be.BANDWIDTH_RANGE_GBps)
    c = be.all_bandwidth_crossings(sc, ia, ib, na, nb, lo, hi)
    jac = None
    if budgets is None:
        jac = np.asarray(sens.crossing_elasticities(sc, ia, ib, na, nb, lo, hi,
                                                    max_roots=c.x.shape[-1]))
    return ps, jax.tree.map(np.asarray, c), jac


def _entry(a, b, basis, c, index) -> dict:
    d = be.describe(a, b, c.x[index], c.a_wins_below[index], c.count[index], c.status[index])
    winners = d["winners"]
    return {"a": a, "b": b, "basis": basis, "GBps": [x / 1e9 for x in d["x"]],
            "winner_below": winners[0], "winner_above": winners[-1], "winners": winners,
            "status": d["status"]}


def build(scenario: Scenario, ctx: dict) -> BreakEvens:
    sc = scenario
    lo, hi = be.BANDWIDTH_RANGE_GBps
    ps, c, jac = _all_pairs(sc)
    energy = {n for n in be.PARAMETERS if sens._is_energy(n)}
    crossings, sensitivity = [], []
    for p, (a, b, basis) in enumerate(ps):
        entry = _entry(a, b, basis, c, p)
        entry["budget"] = _budget_label(sc)
        crossings.append(entry)
        names = [n for n in be.parameter_names(a, b)
                 if n != "wan_Bps" and n not in energy and n in be.PARAMETERS]
        for k, x in enumerate(entry["GBps"]):
            values = {n: float(jac[p, k, be.PARAMETERS.index(n)]) + 0.0 for n in names}
            sensitivity.append({
                "quantity": "bandwidth_break_even", "a": a, "b": b, "basis": basis, "GBps": x,
                "elasticity": dict(sorted(values.items(), key=lambda kv: -abs(kv[1])))})

    budgets = [resolve_budget(sc, label) for label in BUDGETS]
    _, cb, _ = _all_pairs(sc, budgets)
    by_budget = []
    for p, (a, b, basis) in enumerate(ps):
        if sc.variant(a).module or sc.variant(b).module:
            for i, label in enumerate(BUDGETS):
                by_budget.append({**_entry(a, b, basis, cb, (i, p)), "budget": label})

    enob = []
    dependent = _v.basis_dependent(sc.variants)
    for a in (v.id for v in sc.variants if v.in_transit):
        for b in (v.id for v in sc.variants if not v.in_transit):
            for basis in (BASES if a in dependent else (None,)):
                lowest = be.enob_break_even(sc, a, b, ENOB_GRID_GBps, basis=basis or "hypothesis")
                enob.append({"a": a, "b": b, "basis": basis, "GBps": list(ENOB_GRID_GBps),
                             "enob": [None if np.isnan(e) else float(e) for e in lowest]})

    budget = be.budget_break_even(sc)
    _, budget_elast = sens.budget_elasticities(sc)
    budget["elasticity"] = {n: v + 0.0 for n, v in sorted(budget_elast.items(), key=lambda kv: -abs(kv[1]))}
    sensitivity.append({"quantity": "budget_break_even", "GFLOPs": budget["numeric_GFLOPs"],
                        "elasticity": budget["elasticity"]})

    inverse = []
    for a, b, basis in inverse_pairs(sc, ctx):
        for p in INVERSE_PARAMETERS:
            c = inv.smallest_change(sc, a, b, p, basis=basis)
            inverse.append({**c.as_dict(), "target_GBps": float(sc.wan_Bps) / 1e9})

    return BreakEvens(break_even_range_GBps=[lo, hi], break_even_GBps=crossings,
                      break_even_GBps_by_budget=by_budget, enob_break_even=enob,
                      budget_break_even=budget, sensitivity=sensitivity, inverse=inverse)


# --------------------------------------------------------------------------- markdown


def _fmt_GBps(x: float) -> str:
    return f"{x:.4g} GB/s ({8 * x:.4g} Gb/s)"


def _pair_label(e: dict, names=None) -> str:
    return f"{_short(e['a'], names)} vs {_short(e['b'], names)}"


def _basis_label(basis) -> str:
    return basis if basis else "either"


def _crossing_cell(e: dict, names=None) -> str:
    if e["GBps"]:
        return ", ".join(_fmt_GBps(x) for x in e["GBps"])
    if e["status"] in ("a_wins_throughout", "b_wins_throughout"):
        return f"none in range ({_short(e['winners'][0], names)} wins throughout)"
    return f"none ({e['status'].replace('_', ' ')})"


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.breakeven
    if r is None:
        return ""
    lo, hi = r.break_even_range_GBps
    names = results.names()
    out = ["## Break-evens", "",
           f"Where two variants reach the target loss in the same time, searched over {lo:g} to "
           f"{hi:g} GB/s of WAN bandwidth per direction (closed forms, d calibrated to the study's "
           "step times, single-seed steps to target). Basis: hypothesis = E' takes E's steps "
           "(the optics' noise helps, a single seed); exact = the exact band's steps; either = E' "
           "is not in the pair.", "",
           "| pair | basis | budget | break-even | faster below | faster above |",
           "|---|---|---|---|---|---|"]
    for e in r.break_even_GBps:
        below = _short(e["winner_below"], names) if e["GBps"] else "-"
        above = _short(e["winner_above"], names) if e["GBps"] else "-"
        out.append(f"| {_pair_label(e, names)} | {_basis_label(e['basis'])} | {e['budget']} | "
                   f"{_crossing_cell(e, names)} | {below} | {above} |")

    if r.break_even_GBps_by_budget:
        out += ["", "### With the module's budget at [free], [low] and [high]", "",
                "| pair | basis | " + " | ".join(f"[{b}]" for b in BUDGETS) + " |",
                "|---|---|" + "---|" * len(BUDGETS)]
        rows: dict = {}
        for e in r.break_even_GBps_by_budget:
            rows.setdefault((e["a"], e["b"], e["basis"]), {})[e["budget"]] = e
        for (a, b, basis), cells in rows.items():
            out.append(f"| {_short(a, names)} vs {_short(b, names)} | {_basis_label(basis)} | "
                       + " | ".join(_crossing_cell(cells[k], names) for k in BUDGETS) + " |")

    budget = r.budget_break_even
    out += ["", "### Budget", "",
            f"The module's compute stops binding above {budget['numeric_GFLOPs']:.4g} GFLOP/s "
            f"(numeric search; closed form transform FLOPs x optics rate: "
            f"{budget['closed_form_GFLOPs']:.4g} GFLOP/s); above it the {budget['binding_above']} "
            "stage binds. It does not depend on the model size."]

    out += ["", "### Lowest ENOB that still wins", "",
            "The lowest measured ENOB at which the in-transit variant still beats its rival at each "
            "bandwidth; '-' where it wins at no measured ENOB (an ENOB that never reaches the "
            "target never wins).", ""]
    grid = r.enob_break_even[0]["GBps"] if r.enob_break_even else []
    out += ["| pair | basis | " + " | ".join(f"{g:g} GB/s" for g in grid) + " |",
            "|---|---|" + "---|" * len(grid)]
    for e in r.enob_break_even:
        out.append(f"| {_pair_label(e, names)} | {_basis_label(e['basis'])} | "
                   + " | ".join("-" if v is None else f"{v:g} bits" for v in e["enob"]) + " |")

    out += ["", "### Sensitivities", "",
            "Elasticity: % change of the break-even per % change of the parameter (implicit "
            "differentiation at the root); the three largest. ENOB here is bits per coefficient "
            "with the steps held; steps_a / steps_b are a's and b's steps to target.", "",
            "| break-even | at | largest elasticities (% per %) |", "|---|---|---|"]
    for s in r.sensitivity:
        # below 1e-9 % per % is rounding: a parameter the break-even does not depend on
        top = [f"{n} {v:+.3g}" for n, v in list(s["elasticity"].items())[:3] if abs(v) > 1e-9]
        if s["quantity"] == "budget_break_even":
            out.append(f"| budget | {s['GFLOPs']:.4g} GFLOP/s | {', '.join(top)} |")
        else:
            out.append(f"| {_short(s['a'], names)} vs {_short(s['b'], names)} ({_basis_label(s['basis'])}) | "
                       f"{_fmt_GBps(s['GBps'])} | {', '.join(top)} |")

    out += ["", "### What would it take?", "",
            "The smallest change of one parameter (the rest held, the WAN at the scenario's) that "
            "makes the first variant win; searched from / 100 to x 100 of the current value.", "",
            "| target | parameter | current | needed | change |", "|---|---|---|---|---|"]
    for c in r.inverse:
        target = f"{_short(c['a'], names)} beats {_short(c['b'], names)} ({c['basis']}) at {c['target_GBps']:g} GB/s"
        if c["status"] == "already":
            needed, change = "already wins", "-"
        elif c["status"] == "found":
            needed = _fmt_value(c["required"], c["units"])
            change = f"x {c['ratio']:.3g}" if c["ratio"] is not None else "-"
        else:
            needed, change = "none in range", "-"
        out.append(f"| {target} | {c['parameter']} | {_fmt_value(c['current'], c['units'])} | "
                   f"{needed} | {change} |")
    return "\n".join(out)


def _fmt_value(x, units: str) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return "[free]" if x == "inf" else x
    scale = {"B/s": (1e9, "GB/s"), "FLOP/s": (1e9, "GFLOP/s"), "S/s": (1e9, "GS/s"), "s": (1e-3, "ms")}
    factor, unit = scale.get(units, (1.0, units))
    return f"{x / factor:.4g} {unit}".rstrip()


# --------------------------------------------------------------------------- CLI (bandjax breakeven)
# The command and its argument checks are bandjax.breakeven_cli; these print its results.


def print_bandwidth(sc, a, b, basis, lo, hi) -> None:
    r = be.break_even(sc, a, b, basis=basis, lo=lo, hi=hi)
    _header(sc, r, basis)
    print(f"  WAN searched {r.lo / 1e9:g} to {r.hi / 1e9:g} GB/s")
    _print_crossings(sc, r, lambda x: f"{x / 1e9:.6g} GB/s = {8 * x / 1e9:.6g} Gb/s")


def print_budget(sc, a, b, basis, lo, hi) -> None:
    r = be.break_even(sc, a, b, over="budget", basis=basis, lo=lo, hi=hi)
    _header(sc, r, basis)
    print(f"  module budget searched {r.lo / 1e9:g} to {r.hi / 1e9:g} GFLOP/s at "
          f"{float(sc.wan_Bps) / 1e9:g} GB/s WAN")
    _print_crossings(sc, r, lambda x: f"{x / 1e9:.6g} GFLOP/s")
    budget = be.budget_break_even(sc)
    print(f"  (the module's compute stops binding above {budget['numeric_GFLOPs']:.6g} GFLOP/s)")


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
    for g, e in zip(grid, lowest):
        print(f"  {g:>8g} GB/s = {8 * g:>6g} Gb/s: " + ("none" if np.isnan(e) else f"ENOB {e:g}"))


def _header(sc, r: be.BreakEven, basis) -> None:
    dependent = set(_v.basis_dependent(sc.variants)) & {r.a, r.b}
    note = f"{basis} basis: {BASIS_NOTE[basis]}" if dependent else BASIS_NOTE[None]
    steps = f"steps to target {r.steps_a:g} vs {r.steps_b:g}"
    print(f"{sc.variant(r.a).short} ({r.a}) vs {sc.variant(r.b).short} ({r.b}), {note}; {steps}; "
          f"module budget [{_budget_label(sc)}]; d calibrated; target loss {sc.steps.target_loss:g}")


def _print_crossings(sc, r: be.BreakEven, fmt) -> None:
    at = r.at()
    if not at["x"]:
        if at["status"] in ("a_wins_throughout", "b_wins_throughout"):
            w = at["winners"][0]
            print(f"  no break-even in range: {sc.variant(w).short} ({w}) is faster throughout")
        else:
            print(f"  no break-even: {at['status'].replace('_', ' ')}")
        return
    for k, x in enumerate(at["x"]):
        below, above = at["winners"][k], at["winners"][k + 1]
        print(f"  break-even {k + 1}: {fmt(x)}  (below: {sc.variant(below).short} faster; above: "
              f"{sc.variant(above).short} faster)")


def print_elasticities(sc, a, b, over, basis, lo, hi) -> None:
    r, elast = sens.elasticities(sc, a, b, over=over, basis=basis, lo=lo, hi=hi)
    for k in range(int(r.count)):
        print(f"  elasticities of break-even {k + 1} (% per %), largest first:")
        for n, v in sorted(elast.items(), key=lambda kv: -abs(float(kv[1][k])))[:8]:
            print(f"    {n:<28} {float(v[k]):+.4f}")


def print_achieve(sc, a, b, parameter, basis) -> None:
    c = inv.smallest_change(sc, a, b, parameter, basis=basis)
    if c.status == "already":
        print(f"  {sc.variant(a).short} already beats {sc.variant(b).short}; nothing to change")
    elif c.status == "found":
        side = "below" if c.ratio < 1 else "above"
        print(f"  {sc.variant(a).short} beats {sc.variant(b).short} with {parameter} {side} "
              f"{_fmt_value(c.required, c.units)} (now {_fmt_value(c.current, c.units)}; "
              f"x {c.ratio:.4g} is the smallest change)")
    else:
        print(f"  no {parameter} in {_fmt_value(c.lo, c.units)} to "
              f"{_fmt_value(c.hi, c.units)} makes {sc.variant(a).short} beat {sc.variant(b).short}")
