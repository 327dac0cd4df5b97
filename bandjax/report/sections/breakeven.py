"""Report section and ``bandjax breakeven``: where variants break even (docs/model.md section 10).

results.json gains

- ``break_even_GBps``: per pair (and basis, where E' is in the pair), the WAN crossings in GB/s,
  the intervals over which the two tie (``ties_GBps``, [from, to]) and who wins below and above
  (``winners``: each piece of the range in order, "tie" on a tie); at the scenario's own budget. ``break_even_GBps_by_budget``: the same
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
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import jax
import numpy as np

from ... import breakeven as be
from ... import inverse as inv
from ... import names as _names
from ... import sensitivity as sens
from ... import variants as _v
from ...scenario import BASES, Scenario, resolve_budget
from .. import constants as C
from ..passes import enob_label, scenario_budget
from .common import (ANY, CONTROLS, HEIGHT, WIDTH, Picker, Results, Section, View, _and, _conclude,
                     _filter, _finish, _fitted, _hconcat_bases, _label_expr, _log_x, _num, _params,
                     _sel, close_ahead, fmt_GBps, fmt_value, g3, g4, g6, pick, setting_key,
                     setting_text, settings, short, start_ahead, take_ahead, variant,
                     variant_colors, variants)


@dataclass(frozen=True)
class BreakEvens(Section):
    """Where variants break even (docs/model.md section 10): bandwidth crossings (GB/s) per pair
    and basis, the same at each budget, the lowest ENOB that still wins, the budget above which
    the module's compute stops binding, elasticities and the smallest change that makes a
    variant win."""

    KEY: ClassVar[str] = "breakeven"
    FLAT: ClassVar[bool] = True

    break_even_range_GBps: list  # [lo, hi]
    break_even_GBps: list  # {a, b, basis, GBps, ties_GBps, winner_below, winner_above, winners, status, budget}
    break_even_GBps_by_budget: list
    enob_break_even: list  # {a, b, basis, GBps, enob}
    budget_break_even: dict
    sensitivity: list
    inverse: list


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
    from .. import passes

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
    return "free" if math.isinf(value) else f"{g6(value / 1e9)} GFLOP/s"


def _all_pairs(sc: Scenario, budgets):
    """Crossings of every pair at the scenario's own budget and at each of ``budgets`` (FLOP/s),
    in one search (budgets on the axis before the pairs': the scenario's first), and the
    elasticities of the crossings at the scenario's budget."""
    ps = pairs(sc)
    ia = np.array([sc.ids.index(a) for a, _, _ in ps])
    ib = np.array([sc.ids.index(b) for _, b, _ in ps])
    na = np.array([sc.steps_of(a, float(sc.enob), basis or "hypothesis") for a, _, basis in ps])
    nb = np.array([sc.steps_of(b, float(sc.enob), basis or "hypothesis") for _, b, basis in ps])
    every = np.asarray([float(sc.budget_FLOPs), *budgets], dtype=float)[:, None]
    lo, hi = (g * 1e9 for g in be.BANDWIDTH_RANGE_GBps)
    c = jax.tree.map(np.asarray, be.all_bandwidth_crossings(sc.replace(budget_FLOPs=every), ia, ib,
                                                           na, nb, lo, hi))
    # at the crossings of the scenario's own budget (the first row): the search is not run again
    every_p = tuple(be.parameters(sc))
    jac = np.asarray(sens.quick_elasticities_at(be.table_as_data(sc), ia, ib, na, nb, c.x[0],
                                                k=every_p.index("wan_Bps"), names=every_p))
    return ps, c, jac


def _by_size(item) -> float:
    """The sort key of a (parameter, elasticity) pair, largest first: magnitudes equal to 12
    significant digits (a's and b's steps move a break-even equally and oppositely) keep the
    parameters' order, so a derivative's last bits do not reorder the table."""
    return -float(f"{abs(item[1]):.12g}")


def _entry(a, b, basis, c, index) -> dict:
    d = be.describe(a, b, c.x[index], c.a_wins_below[index], c.count[index], c.status[index],
                    c.tie_lo[index], c.tie_hi[index], c.tie_count[index], c.tie_below[index],
                    c.tie_above[index])
    winners = d["winners"]
    return {"a": a, "b": b, "basis": basis, "GBps": [x / 1e9 for x in d["x"]],
            "ties_GBps": [[t0 / 1e9, t1 / 1e9] for t0, t1 in d["ties"]],
            "winner_below": winners[0], "winner_above": winners[-1], "winners": winners,
            "status": d["status"]}


def start(scenario: Scenario, ctx: dict) -> None:
    """Begin the searches that need nothing from the sections before this one
    (:func:`.common.start_ahead`)."""
    start_ahead(ctx, KEY, _searches, scenario)


def close(ctx: dict) -> None:
    close_ahead(ctx, KEY)


def _searches(sc: Scenario) -> tuple:
    """The section's searches that read the scenario alone: every pair's crossings (at each
    budget) and their elasticities, the ENOB break-evens, the budget break-even."""
    budgets = [resolve_budget(sc, label) for label in BUDGETS]
    ps, cb, jac = _all_pairs(sc, budgets)
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
    return ps, cb, jac, enob, budget, budget_elast


def build(scenario: Scenario, ctx: dict) -> BreakEvens:
    sc = scenario
    lo, hi = be.BANDWIDTH_RANGE_GBps
    # the smallest changes first: they need nothing of the searches begun ahead, and run while
    # those finish in their thread
    inverse = [{**c.as_dict(), "target_GBps": float(sc.wan_Bps) / 1e9}
               for c in inv.smallest_changes(sc, inverse_pairs(sc, ctx), INVERSE_PARAMETERS)]
    started, found = take_ahead(ctx, KEY)
    ps, cb, jac, enob, budget, budget_elast = found if started else _searches(sc)
    c = jax.tree.map(lambda v: v[0], cb)  # at the scenario's budget
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
                "elasticity": dict(sorted(values.items(), key=_by_size))})

    by_budget = []
    for p, (a, b, basis) in enumerate(ps):
        if sc.variant(a).module or sc.variant(b).module:
            for i, label in enumerate(BUDGETS):
                by_budget.append({**_entry(a, b, basis, cb, (i + 1, p)), "budget": label})

    budget = dict(budget)
    budget["elasticity"] = {n: v + 0.0 for n, v in sorted(budget_elast.items(), key=_by_size)}
    sensitivity.append({"quantity": "budget_break_even", "GFLOPs": budget["numeric_GFLOPs"],
                        "elasticity": budget["elasticity"]})

    return BreakEvens(break_even_range_GBps=[lo, hi], break_even_GBps=crossings,
                      break_even_GBps_by_budget=by_budget, enob_break_even=enob,
                      budget_break_even=budget, sensitivity=sensitivity, inverse=inverse)


def _fmt_GBps(x: float) -> str:
    return f"{g4(x)} GB/s ({g4(8 * x)} Gb/s)"


def _pair_label(e: dict, names=None) -> str:
    return f"{_short(e['a'], names)} vs {_short(e['b'], names)}"


def _basis_label(basis) -> str:
    return basis if basis else "either"


def _tie_words(e: dict, fmt=None) -> list[str]:
    """"tie from X to Y GB/s" for each interval over which the pair takes equally long."""
    fmt = fmt or g4
    return [f"tie from {fmt(t0)} to {fmt(t1)} GB/s" for t0, t1 in e.get("ties_GBps") or []]


def _crossing_cell(e: dict, names=None) -> str:
    ties = _tie_words(e)
    if e["GBps"]:
        return ", ".join([_fmt_GBps(x) for x in e["GBps"]] + ties)
    if ties:
        return ", ".join(ties)
    if e["status"] in ("a_wins_throughout", "b_wins_throughout"):
        return f"none in range ({_short(e['winners'][0], names)} wins throughout)"
    return f"none ({e['status'].replace('_', ' ')})"


def _winner_cell(w, names=None) -> str:
    return "equal (tie)" if w == be.TIED else _short(w, names)


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.breakeven
    if r is None:
        return ""
    lo, hi = r.break_even_range_GBps
    names = results.names()
    out = ["## Break-evens", "",
           f"Where two variants reach the target loss in the same time, searched over {g6(lo)} to "
           f"{g6(hi)} GB/s of WAN bandwidth per direction (closed forms, d calibrated to the study's "
           "step times, single-seed steps to target). Basis: hypothesis = E' takes E's steps "
           "(the optics' noise helps, a single seed); exact = the exact band's steps; either = E' "
           "is not in the pair. A tie is a range of bandwidth over which both take equally long "
           f"(relative difference at most {g6(be.TIE_RTOL)}: both compute-bound with equal steps); "
           "it starts where the slower-to-hide variant's communication first fits its window.", "",
           "| pair | basis | budget | break-even | faster below | faster above |",
           "|---|---|---|---|---|---|"]
    for e in r.break_even_GBps:
        cut = e["GBps"] or e.get("ties_GBps")
        below = _winner_cell(e["winner_below"], names) if cut else "-"
        above = _winner_cell(e["winner_above"], names) if cut else "-"
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
            f"The module's compute stops binding above {g4(budget['numeric_GFLOPs'])} GFLOP/s "
            f"(numeric search; closed form transform FLOPs x optics rate: "
            f"{g4(budget['closed_form_GFLOPs'])} GFLOP/s); above it the {budget['binding_above']} "
            "stage binds. It does not depend on the model size."]

    out += ["", "### Lowest ENOB that still wins", "",
            "The lowest measured ENOB at which the in-transit variant still beats its rival at each "
            "bandwidth; '-' where it wins at no measured ENOB (an ENOB that never reaches the "
            "target never wins).", ""]
    grid = r.enob_break_even[0]["GBps"] if r.enob_break_even else []
    out += ["| pair | basis | " + " | ".join(f"{g6(g)} GB/s" for g in grid) + " |",
            "|---|---|" + "---|" * len(grid)]
    for e in r.enob_break_even:
        out.append(f"| {_pair_label(e, names)} | {_basis_label(e['basis'])} | "
                   + " | ".join("-" if v is None else f"{g6(v)} bits" for v in e["enob"]) + " |")

    out += ["", "### Sensitivities", "",
            "Elasticity: % change of the break-even per % change of the parameter (implicit "
            "differentiation at the root); the three largest. ENOB here is bits per coefficient "
            "with the steps held; steps_a / steps_b are a's and b's steps to target.", "",
            "| break-even | at | largest elasticities (% per %) |", "|---|---|---|"]
    for s in r.sensitivity:
        # below 1e-9 % per % is rounding: a parameter the break-even does not depend on
        top = [f"{n} {v:+.3g}" for n, v in list(s["elasticity"].items())[:3] if abs(v) > 1e-9]
        if s["quantity"] == "budget_break_even":
            out.append(f"| budget | {g4(s['GFLOPs'])} GFLOP/s | {', '.join(top)} |")
        else:
            out.append(f"| {_short(s['a'], names)} vs {_short(s['b'], names)} ({_basis_label(s['basis'])}) | "
                       f"{_fmt_GBps(s['GBps'])} | {', '.join(top)} |")

    out += ["", "### What would it take?", "",
            "The smallest change of one parameter (the rest held, the WAN at the scenario's) that "
            "makes the first variant win; searched from / 100 to x 100 of the current value.", "",
            "| target | parameter | current | needed | change |", "|---|---|---|---|---|"]
    for c in r.inverse:
        target = f"{_short(c['a'], names)} beats {_short(c['b'], names)} ({c['basis']}) at {g6(c['target_GBps'])} GB/s"
        if c["status"] == "already":
            needed, change = "already wins", "-"
        elif c["status"] == "found":
            needed = fmt_value(c["required"], c["units"])
            change = f"x {g3(c['ratio'])}" if c["ratio"] is not None else "-"
        else:
            needed, change = "none in range", "-"
        out.append(f"| {target} | {c['parameter']} | {fmt_value(c['current'], c['units'])} | "
                   f"{needed} | {change} |")
    return "\n".join(out)


# ------------------------------------------------------------------------------ page view and chart


def comparison_pairs() -> list[tuple[str, str]]:
    """Pairs the break-even view compares: each in-transit variant against each that is not."""
    vs = variants()
    return [(a.id, b.id) for a in vs if a.in_transit for b in vs if not b.in_transit]


def _drawn(a: str, b: str) -> bool:
    """Pairs the ratio chart draws: an in-transit variant against one that is not (E and E'
    against AdamW, top-k, C, C'); every pair stays in the conclusion and the tables."""
    return variant(a).in_transit and not variant(b).in_transit


def _ratio_rows(sc: Scenario, pairs, bandwidth: View) -> list[dict]:
    """Ratio of the first's time to target to the second's, at every bandwidth and setting."""
    index: dict = {}
    for r in bandwidth.data["curves"]:
        index.setdefault((r["variant"], r["i"]), []).append(r)
    index = {k: Picker(v) for k, v in index.items()}
    none = Picker([])
    every = settings(sc)
    rows = []
    for a, b in pairs:
        for i in range(len(bandwidth.data["grid_GBps"])):
            for sel in every:
                ra = index.get((a, i), none).first(**sel)
                rb = index.get((b, i), none).first(**sel)
                ta, tb = ra["t_s"], rb["t_s"]
                rows.append({"pair": f"{short(a)} / {short(b)}", "first": short(a), "second": short(b),
                             "i": i, "GBps": ra["GBps"],
                             "ratio": _num(ta / tb, 5) if ta and tb else None, **sel})
    # drop rows repeated across controls the pair does not depend on
    return _collapse(rows, key=("pair", "i"), value="ratio")


def _section_entries(sc: Scenario, results: Results, pairs):
    """The break-even section's entries of the compared ``pairs`` (those it ran per budget, and the
    others at the scenario's budget), each with its tag of the page's controls: (entry, tag)."""
    entries = results.breakeven.break_even_GBps if results.breakeven else []
    by_budget = results.breakeven.break_even_GBps_by_budget if results.breakeven else []
    per_budget = {(e["a"], e["b"], e["basis"]) for e in by_budget}
    own = scenario_budget(sc)
    for e in [e for e in entries if (e["a"], e["b"], e["basis"]) not in per_budget] + by_budget:
        if (e["a"], e["b"]) not in pairs:
            continue
        module = variant(e["a"]).module or variant(e["b"]).module
        in_transit = variant(e["a"]).in_transit or variant(e["b"]).in_transit
        yield e, {"enob": enob_label(sc.enob) if in_transit else ANY,
                  "budget": e.get("budget", own) if module else ANY,
                  "basis": e.get("basis") or ANY}


def _crossings(sc: Scenario, results: Results, pairs, rows, grid) -> list[dict]:
    """The diamonds: the root finder's crossings where the break-even section gives them (the
    scenario's ENOB, every budget it ran), and elsewhere the crossings of the ratio curves on the
    page, interpolated between grid points (log-log), so a setting of the controls the section did
    not run still shows where its curves cross."""
    out, covered = [], set()
    for e, tag in _section_entries(sc, results, pairs):
        pair = f"{short(e['a'])} / {short(e['b'])}"
        covered |= {(pair, setting_key(at)) for at in settings(sc)
                    if all(tag[c] in (ANY, at[c]) for c in CONTROLS)}
        for g in e.get("GBps") or []:
            if g is not None:
                out.append({"pair": pair, "first": short(e["a"]), "second": short(e["b"]),
                            "GBps": _num(g), "ratio": 1.0, "source": "root finder", **tag})
    by_pair: dict = {}
    for r in rows:
        by_pair.setdefault(r["pair"], []).append(r)
    for a, b in pairs:
        pair = f"{short(a)} / {short(b)}"
        for at in settings(sc):
            if (pair, setting_key(at)) in covered:
                continue
            line = sorted((r for r in pick(by_pair.get(pair, []), **at)), key=lambda r: r["i"])
            for r0, r1 in zip(line, line[1:]):
                q0, q1 = r0["ratio"], r1["ratio"]
                if q0 is None or q1 is None or not (q0 - 1) * (q1 - 1) < 0:
                    continue
                f = math.log(q0) / (math.log(q0) - math.log(q1))
                g = math.exp(math.log(grid[r0["i"]]) + f * (math.log(grid[r1["i"]]) - math.log(grid[r0["i"]])))
                out.append({"pair": pair, "first": short(a), "second": short(b), "GBps": _num(g, 4),
                            "ratio": 1.0, "source": "interpolated on the curves' grid", **at})
    return out


def _ties(sc: Scenario, results: Results, pairs) -> list[dict]:
    """The shaded bands: each interval over which a pair ties (the break-even section's, at the
    settings it ran), tagged like the crossings."""
    out = []
    for e, tag in _section_entries(sc, results, pairs):
        for t0, t1 in e.get("ties_GBps") or []:
            out.append({"pair": f"{short(e['a'])} / {short(e['b'])}", "first": short(e["a"]),
                        "second": short(e["b"]), "GBps": _num(t0), "GBps_to": _num(t1), **tag})
    return out


def _breakeven_words(rows, crossings, pairs, wan_i, grid, at, with_crossings, ties=()) -> list[str]:
    """Short sentences at one setting: how each in-transit variant fares at the scenario's
    bandwidth, then each crossing, then the pairs that do not cross."""
    words = []
    here = pick([r for r in rows if r["i"] == wan_i], **at)
    g = f"{g3(grid[wan_i])} GB/s"
    for first in dict.fromkeys(short(a) for a, _ in pairs):
        rs = [r for r in here if r["first"] == first]
        ok = sorted((r for r in rs if r["ratio"] is not None), key=lambda r: r["ratio"])
        if not ok:
            words.append(f"At {g}, {first} has no ratio: it does not reach the target at this setting.")
            continue
        wins = [r for r in ok if r["ratio"] < 1]
        loses = [r for r in ok if r["ratio"] >= 1]
        if wins:
            words.append(f"At {g}, {first} beats {_and([r['second'] for r in wins])} "
                         f"(ratio {_span(wins)}).")
        if loses:
            words.append(f"At {g}, {first} loses to {_and([r['second'] for r in loses])} "
                         f"(ratio {_span(loses)}).")
    if not with_crossings:
        return words
    at_cross = pick(crossings, **at)
    for a, b in pairs:
        pair = f"{short(a)} / {short(b)}"
        xs = sorted(c["GBps"] for c in at_cross if c["pair"] == pair)
        if not xs:
            continue
        below = [r for r in rows if r["pair"] == pair and r["GBps"] < xs[0] and r["ratio"] is not None]
        below = max(pick(below, **at), key=lambda r: r["GBps"], default=None)
        side = "" if below is None else (
            f"; {short(a) if below['ratio'] < 1 else short(b)} wins below")
        words.append(f"{short(a)} and {short(b)} break even at "
                     f"{_and([fmt_GBps(x) for x in xs])}{side}.")
    at_ties = pick(list(ties), **at)
    for a, b in pairs:
        pair = f"{short(a)} / {short(b)}"
        for t in sorted((t for t in at_ties if t["pair"] == pair), key=lambda t: t["GBps"]):
            words.append(f"{short(a)} and {short(b)} tie (equal times to target) from "
                         f"{fmt_GBps(t['GBps'])} to {fmt_GBps(t['GBps_to'])}.")
    flat = [f"{short(a)} / {short(b)}" for a, b in pairs
            if not any(c["pair"] == f"{short(a)} / {short(b)}" for c in [*at_cross, *at_ties])]
    if flat:
        words.append(f"No break-even in 0.1 to 1,000 GB/s: {_and(flat)}.")
    return words


def _page_winner(w) -> str:
    if not w:
        return "-"
    return "equal (tie)" if w == be.TIED else short(w)


def _span(rs) -> str:
    lo, hi = rs[0]["ratio"], rs[-1]["ratio"]
    return g3(lo) if len(rs) == 1 else f"{g3(lo)} to {g3(hi)}"


def _basis_words(basis) -> str:
    return f" ({basis} basis)" if basis else ""


def breakeven_view(sc: Scenario, results: Results | dict | None, bandwidth: View) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    view = View("breakeven", "Break-even: ratio of times to target against bandwidth")
    be = results.breakeven
    entries = be.break_even_GBps if be else None
    pairs = list(dict.fromkeys((e["a"], e["b"]) for e in entries)) if entries else comparison_pairs()
    pairs = [p for p in pairs if _drawn(*p)] or pairs
    rows = _ratio_rows(sc, pairs, bandwidth)
    view.data = {"ratios": rows, "crossings": [], "ties": []}
    if entries:
        view.data["crossings"] = _crossings(sc, results, pairs, rows, bandwidth.data["grid_GBps"])
        view.data["ties"] = _ties(sc, results, pairs)
        view.data["crossings_table"] = {
            "columns": ["pair (first vs second)", "basis", "break-even", "faster below",
                        "faster above"],
            "rows": [[f"{short(e['a'])} vs {short(e['b'])}", e.get("basis") or "either",
                      ", ".join([fmt_GBps(g) for g in e["GBps"] if g is not None]
                                + _tie_words(e, g3)) or "none in range",
                      _page_winner(e.get("winner_below")), _page_winner(e.get("winner_above"))]
                     for e in entries],
            "caption": (f"Every pair's WAN break-evens in 0.1 to 1,000 GB/s per direction, at "
                        f"{setting_text(sc)}; none in range: the variant faster below wins "
                        "throughout; a tie: equal times to target over a range (both "
                        "compute-bound with equal steps). Basis: which steps E' takes; either: "
                        "E' is not in the pair."),
            "nowrap": [2]}
    else:
        view.lacks("Crossings (bandwidth break-evens found by the root finder)", "break_even_GBps")
    wan_i = bandwidth.data["start"]
    _conclude(view, sc, lambda at: _breakeven_words(rows, view.data["crossings"], pairs, wan_i,
                                                    bandwidth.data["grid_GBps"], at, bool(entries),
                                                    view.data["ties"]))
    enob = be.enob_break_even if be else None
    if enob:
        erows, trows = [], []
        grid = sorted({float(g) for e in enob for g in (e.get("GBps") or [])})
        for e in enob:
            by_g = dict(zip((float(g) for g in e.get("GBps") or []), e.get("enob") or []))
            for g, n in by_g.items():
                if n is not None:
                    erows.append({"pair": f"{short(e['a'])} / {short(e['b'])}",
                                  "basis": e.get("basis") or "either", "GBps": _num(g), "enob": _num(n)})
            trows.append([f"{short(e['a'])} vs {short(e['b'])}", e.get("basis") or "either"] + [
                "-" if by_g.get(g) is None else f"{g6(float(by_g[g]))} bits" for g in grid])
        view.data["enob_break_even"] = erows
        view.data["enob_table"] = {
            "columns": ["pair", "basis"] + [f"{g3(g)} GB/s" for g in grid], "rows": trows,
            "caption": ("Lowest measured ENOB (bits per band coefficient) at which the in-transit "
                        "variant still reaches the target first, at each WAN bandwidth per direction; "
                        "'-': it wins at no measured ENOB. Basis: which steps E' takes; either: E' "
                        "is not in the pair.")}
    else:
        view.lacks("ENOB break-evens (the lowest ENOB at which an in-transit variant still wins)",
                   "enob_break_even")
    sens = be.sensitivity if be else None
    if sens:
        view.data["sensitivity"] = sens
        table = _sensitivity_table(sens)
        if table:
            view.data["sensitivity_table"] = table[0]
            for sentence in table[1]:
                view.say(sentence)
    else:
        view.lacks("Sensitivities of the break-evens", "sensitivity")
    view.assumptions = [
        "Ratio = time to target of the first variant / the second's; below 1 the first wins.",
        "The chart draws each in-transit variant (E, E') against each variant that is not; the "
        "table of every pair's break-evens lists the rest.",
        "Curves are from the same closed forms and steps as the bandwidth explorer; crossings "
        "(diamonds) are the break-even section's root finder's, at the chosen budget.",
    ]
    return view


HARDWARE_GROUPS = ("links", "module")


def _sensitivity_table(sens) -> tuple[dict, list[str]] | None:
    """The sensitivities as a table (largest elasticities of each break-even, and the hardware
    number that moves it most) and a conclusion from them; None for a shape it does not know."""
    from ...scenario import FIELDS

    if not all(isinstance(s, dict) and isinstance(s.get("elasticity"), dict) for s in sens):
        return None
    rows, top_hw, steps_first = [], {}, 0
    bandwidth = [s for s in sens if s.get("quantity") == "bandwidth_break_even"]
    for s in sens:
        # below 1e-9 % per % is rounding (a parameter the break-even does not depend on)
        el = {k: float(v) for k, v in s["elasticity"].items() if v is not None and abs(float(v)) > 1e-9}
        order = [k for k, _ in sorted(el.items(), key=_by_size)]
        hw = [k for k in order if k in FIELDS and FIELDS[k][0] in HARDWARE_GROUPS]
        if s.get("quantity") == "budget_break_even":
            what, at = "budget where compute stops binding", f"{g4(float(s['GFLOPs']))} GFLOP/s"
        else:
            what = f"{short(s['a'])} vs {short(s['b'])}{_basis_words(s.get('basis'))}"
            at = fmt_GBps(float(s["GBps"]))
            if hw:
                top_hw[hw[0]] = top_hw.get(hw[0], 0) + 1
            if order and order[0] in ("steps_a", "steps_b"):
                steps_first += 1
        rows.append([what, at, "; ".join(f"{_names.name(k).name} {el[k]:+.3g}" for k in order[:4]),
                     f"{_names.name(hw[0]).name} {el[hw[0]]:+.3g}" if hw else "none"])
    table = {"columns": ["break-even", "at", "largest elasticities (% per %)",
                         "hardware number that moves it most (% per %)"],
             "rows": rows,
             "caption": ("Elasticity: % change of the break-even per % change of the parameter "
                         "(implicit differentiation at the root); hardware: the links' and the "
                         "module's rates."),
             "nowrap": [1]}
    words = []
    if bandwidth:
        ranked = sorted(top_hw.items(), key=lambda kv: -kv[1])
        words.append(f"The steps to target move {steps_first} of the {len(bandwidth)} bandwidth "
                     "break-evens more than any other number.")
        if ranked:
            words.append("Of the hardware numbers, " + "; ".join(
                f"the {_names.name(k).name} moves {n} of them most" for k, n in ranked) + ".")
    return table, words


def _collapse(rows, key, value):
    """Replace a control by "*" where, for one ``key`` group, ``value`` does not depend on it."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in key), []).append(r)
    out = []
    for _, rs in groups.items():
        for c in CONTROLS:
            by = {}
            for r in rs:
                rest = tuple(r[o] for o in CONTROLS if o != c)
                by.setdefault(rest, set()).add(r[value])
            if all(len(v) == 1 for v in by.values()):
                seen, keep = set(), []
                for r in rs:
                    rest = tuple(r[o] for o in CONTROLS if o != c)
                    if rest not in seen:
                        seen.add(rest)
                        keep.append(dict(r, **{c: ANY}))
                rs = keep
        out.extend(rs)
    return out


def breakeven_chart(view: View, sc: Scenario, interactive: bool = False):
    d = view.data
    firsts = list(dict.fromkeys(r["first"] for r in d["ratios"] if "first" in r))
    dashes = [[1, 0], [6, 3], [2, 2], [8, 2, 2, 2]]

    def panel(basis):
        sel = _sel(sc, interactive, basis)
        x = _log_x("WAN bandwidth per direction (GB/s, log)", C.BANDWIDTH_RANGE_GBps)
        y = alt.Y("ratio:Q", title="time to target, first / second (log)",
                  scale=_fitted(d["ratios"], "ratio", sc, interactive, basis, include=[1.0]),
                  axis=alt.Axis(format="~g"))
        # colour: the second variant (its colour on every chart); dash: the in-transit first
        colors = variant_colors()
        seconds = [v for v in colors if any(r.get("second") == v for r in d["ratios"])]
        color = alt.Color("second:N", title="second variant", scale=alt.Scale(
            domain=seconds, range=[colors[v] for v in seconds]),
            legend=alt.Legend(labelExpr=_label_expr(), labelLimit=360))
        dash = alt.StrokeDash("first:N", title="first variant", scale=alt.Scale(
            domain=firsts, range=dashes[:len(firsts)]), legend=alt.Legend(symbolStrokeColor="#333",
                                                                          labelExpr=_label_expr(),
                                                                          labelLimit=360))
        tooltip = ["pair:N", alt.Tooltip("GBps:Q", format=".3g", title="GB/s"),
                   alt.Tooltip("ratio:Q", format=".3g")]
        lines = alt.Chart(alt.NamedData(name="ratios")).transform_filter(_filter(sel)).mark_line(
            strokeWidth=2).encode(x=x, y=y, color=color, strokeDash=dash, detail="pair:N",
                                  tooltip=tooltip)
        one = alt.Chart(alt.NamedData(name="one")).mark_rule(color="#444", strokeDash=[4, 4]).encode(
            y="ratio:Q")
        width = "container" if interactive else WIDTH - 140
        layers = [one, lines]
        if d.get("ties"):  # equal times over a range of bandwidth: a shaded band
            layers.insert(0, alt.Chart(alt.NamedData(name="ties")).transform_filter(_filter(sel))
                          .mark_rect(opacity=0.15).encode(
                x=x, x2="GBps_to:Q", color=color, tooltip=[
                    "pair:N", alt.Tooltip("GBps:Q", format=".4g", title="tie from (GB/s)"),
                    alt.Tooltip("GBps_to:Q", format=".4g", title="tie to (GB/s)")]))
        if d["crossings"]:
            cross = alt.Chart(alt.NamedData(name="crossings")).transform_filter(_filter(sel))
            # values in the tooltip and the table below: labels here would collide
            layers.append(cross.mark_point(shape="diamond", size=130, filled=True, stroke="#222",
                                           strokeWidth=1, opacity=1).encode(
                # every crossing is at ratio 1: a datum, so a setting without one adds no field
                # extent to the y scale (an empty one would be infinite)
                x=x, y=alt.YDatum(1.0), color=color, tooltip=[
                    "pair:N", alt.Tooltip("GBps:Q", format=".4g", title="break-even (GB/s)"),
                    alt.Tooltip("source:N", title="from")]))
        return alt.layer(*layers).properties(width=width, height=HEIGHT)

    chart = panel(None).add_params(*_params(True, sc)) if interactive else _hconcat_bases(panel)
    return _finish(chart), {"ratios": d["ratios"], "crossings": d["crossings"],
                            "ties": d.get("ties", []), "one": [{"ratio": 1.0}]}



def view(sc: Scenario, results: Results, sw, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`); reads the bandwidth section's rows."""
    return breakeven_view(sc, results, views["bandwidth"])


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets)."""
    return {KEY: breakeven_chart(view, sc, interactive)}


def extra_tables(view: View) -> list[tuple[str, object]]:
    """(heading, table) shown below the section's own table: every pair's break-evens, the lowest
    ENOB that still wins, the sensitivities (as reported, where no table was made of them)."""
    out = []
    if view.data.get("crossings_table"):
        out.append(("Break-evens of every pair", view.data["crossings_table"]))
    if view.data.get("enob_table"):
        out.append(("Lowest ENOB that still wins", view.data["enob_table"]))
    if view.data.get("sensitivity"):
        out.append(("Sensitivities", view.data.get("sensitivity_table") or view.data["sensitivity"]))
    return out
