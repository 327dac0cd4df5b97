"""Report section "What bandwidth each method needs": compute utilisation against the WAN bandwidth
for the scenario's variants and the field's ways of syncing in rounds (:data:`bandjax.METHODS`),
and the bandwidth each needs to keep its GPUs computing 50 to 99% of the time (docs/model.md
section 14), at the scenario's ENOB and module budget.

results.json gains ``need``: the targets, the range searched (GB/s), the scenario's bandwidth
(GB/s), each variant's way of syncing (H, fragments F, delay tau), the needed bandwidth per target
(GB/s; null where not reachable) with its status and what caps it, the utilisation curves (unit 1
over a GB/s grid), the utilisation at the scenario's bandwidth, the assumptions and the
conclusions written from those numbers.

Built in one sweep (the curves) and one :func:`bandjax.required_bandwidth` call; the page and
results.md read the typed result only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ...grid import sweep
from ...links import differ
from ...need import CAP_WORDS, CAPS, STATUS_MEANINGS, required_bandwidth
from ...scenario import Scenario
from ...variants import METHODS, Variant
from .. import constants as C
from ..passes import budget_options, enob_label, scenario_budget
from .common import (HEIGHT, WIDTH, Results, Section, View, _and, _finish, _num, close_ahead,
                     coinciding, coinciding_note, g3, g6, legend_name, list_lengths, start_ahead,
                     take_ahead, variant_colors)

KEY = "need"
TITLE = "What bandwidth each method needs"
TARGETS = (0.5, 0.8, 0.9, 0.95, 0.99)  # compute-utilisation targets of the table
WORDS_AT = 0.9  # the target the conclusions speak of
POINTS_PER_DECADE = 20  # the curves' grid


@dataclass(frozen=True)
class Need(Section):
    """The WAN bandwidth each variant needs for each compute-utilisation target.

    ``variants[id]``: short, label, sync_every (H), fragments (F), delay (tau, steps) and
    ``pack`` (added from bandjax.METHODS, not one of the scenario's). ``required_GBps[id]``:
    one per target in GB/s per directed link (None: not reachable; the range's bottom where the
    target is met there already); ``status[id]``: reached, not_reachable, below_range or
    above_range (the closed form's value in ``required_GBps`` all the same);
    ``cap[id]``: what caps a target that is not reachable (none where reachable).
    ``compute_utilisation[id]``: unit 1 at each of ``bandwidth_GBps``; ``utilisation_at_wan[id]``
    at the scenario's ``wan_GBps``."""

    KEY: ClassVar[str] = "need"

    utilisation: list[float]
    range_GBps: list[float]
    wan_GBps: float
    setting: str
    variants: dict
    required_GBps: dict
    status: dict
    cap: dict
    bandwidth_GBps: list[float]
    compute_utilisation: dict
    utilisation_at_wan: dict
    assumptions: list[str]
    conclusions: list[str]

    @classmethod
    def inconsistent(cls, src: dict):
        yield from list_lengths(src, "utilisation", ("required_GBps", "status", "cap"), "need.")
        yield from list_lengths(src, "bandwidth_GBps", ("compute_utilisation",), "need.")


def pack(sc: Scenario) -> tuple[Variant, ...]:
    """The methods of :data:`bandjax.METHODS` the scenario does not hold."""
    return tuple(m for m in METHODS if m.id not in sc.ids)


def registry(sc: Scenario) -> tuple[Variant, ...]:
    """The scenario's variants, then the methods it does not hold."""
    return (*sc.variants, *pack(sc))


def _setting(sc: Scenario) -> str:
    budget = dict((lab, disp) for lab, _, disp in budget_options(sc))[scenario_budget(sc)]
    return (f"ENOB {enob_label(sc.enob)} bits, module budget {budget}, overlap f = "
            f"{g3(float(sc.overlap_fraction))}")


def start(sc: Scenario, ctx: dict) -> None:
    """Begin the section, which reads the scenario alone (:func:`.common.start_ahead`)."""
    start_ahead(ctx, KEY, _build, sc)


def close(ctx: dict) -> None:
    close_ahead(ctx, KEY)


def build(sc: Scenario, ctx: dict) -> Need:
    """One sweep of compute utilisation over the bandwidth grid (with the scenario's bandwidth in
    it) and one :func:`bandjax.required_bandwidth` call, over the scenario's variants and the
    methods pack (begun by :func:`start`, where the report called it)."""
    started, built = take_ahead(ctx, KEY)
    return built if started else _build(sc)


def _build(sc: Scenario) -> Need:
    full = sc.with_variants(pack(sc))
    lo, hi = C.BANDWIDTH_RANGE_GBps
    decades = math.log10(hi / lo)
    grid = np.logspace(math.log10(lo), math.log10(hi), int(round(decades * POINTS_PER_DECADE)) + 1)
    wan = float(sc.wan_Bps) / 1e9
    grid = np.unique(np.append(grid, wan))
    curves = sweep(full, bandwidth=list(grid), quantities=["compute_utilisation"]).transpose(
        "bandwidth", "variant")
    at_wan = int(np.flatnonzero(grid == wan)[0])
    need = required_bandwidth(full, list(TARGETS), range_GBps=(lo, hi)).transpose(
        "utilisation", "variant")
    GBps, status, cap = (np.asarray(need[k]) for k in ("required_bandwidth_GBps", "status", "cap"))
    cu = np.asarray(curves.compute_utilisation)
    statuses, caps = STATUS_MEANINGS.split(), CAPS
    H = float(sc.sync_every_H)
    variants, required, stat, capped, curve, at = {}, {}, {}, {}, {}, {}
    for k, v in enumerate(full.variants):
        variants[v.id] = {"short": v.short, "label": v.label,
                          "sync_every": _whole(v.sync_every if v.sync_every is not None else H),
                          "fragments": int(v.fragments), "delay": int(v.delay),
                          "pack": v.id not in sc.ids}
        required[v.id] = [_num(x, 10) for x in GBps[:, k]]
        stat[v.id] = [statuses[int(s)] for s in status[:, k]]
        capped[v.id] = [caps[int(c)] for c in cap[:, k]]
        curve[v.id] = [_num(x) for x in cu[:, k]]
        at[v.id] = _num(cu[at_wan, k], 10)
    part = dict(utilisation=list(TARGETS), range_GBps=[lo, hi], wan_GBps=wan, setting=_setting(sc),
                variants=variants, required_GBps=required, status=stat, cap=capped,
                bandwidth_GBps=[_num(g) for g in grid], compute_utilisation=curve,
                utilisation_at_wan=at)
    return Need(**part, assumptions=assumptions(part, links_differ=differ(sc)),
                conclusions=conclusions(part))


def _whole(x: float):
    return int(x) if float(x).is_integer() else float(x)


# ------------------------------------------------------------------------------ words


def Gbps_text(GBps: float) -> str:
    """A bandwidth in GB/s and Gbit/s, three significant digits."""
    return f"{g3(GBps)} GB/s ({g3(8 * GBps)} Gbit/s)"


def pct(u: float) -> str:
    return f"{g3(100 * u)}%"


def cell(r, vid: str, i: int) -> str:
    """The needed bandwidth of variant ``vid`` for target ``i`` of a :class:`Need` (or its
    fields as a dict), with its unit and, outside the range asked, where it lies; or what stops
    it."""
    r = r if isinstance(r, dict) else r.__dict__
    status, GBps = r["status"][vid][i], r["required_GBps"][vid][i]
    if status == "reached":
        return Gbps_text(GBps)
    if status == "below_range":
        return f"{Gbps_text(GBps)}, below the range"
    if status == "above_range":
        return f"{Gbps_text(GBps)}, over the range" if GBps is not None else \
            f"over {Gbps_text(r['range_GBps'][1])}"
    cap = r["cap"][vid][i]
    return f"not reachable: {CAP_WORDS.get(cap, cap)}"


def _index(r: dict, u: float) -> int | None:
    return next((i for i, x in enumerate(r["utilisation"]) if abs(x - u) < 1e-12), None)


def conclusions(r: dict) -> list[str]:
    """At 90% compute utilisation: who needs the least and the most bandwidth, who cannot reach it
    and what caps them, and who reaches it at the scenario's bandwidth."""
    i = _index(r, WORDS_AT)
    if i is None:
        return []
    name = {vid: v["short"] for vid, v in r["variants"].items()}
    u = pct(WORDS_AT)
    ok = {vid: r["required_GBps"][vid][i] for vid, s in r["status"].items()
          if s[i] in ("reached", "below_range")}
    words = []
    if ok:
        lo, hi = min(ok.values()), max(ok.values())
        least = [vid for vid, x in ok.items() if x <= lo * (1 + 1e-9)]
        most = [vid for vid, x in ok.items() if x >= hi * (1 - 1e-9)]
        words.append(f"For {u} compute utilisation {_and([name[v] for v in least])} "
                     f"need{'s' if len(least) == 1 else ''} the least WAN bandwidth: "
                     f"{cell(r, least[0], i)}.")
        if hi > lo * (1 + 1e-9):
            words.append(f"Of those that reach {u}, {_and([name[v] for v in most])} "
                         f"need{'s' if len(most) == 1 else ''} the most: {cell(r, most[0], i)}.")
    by_cap: dict[str, list[str]] = {}
    for vid, s in r["status"].items():
        if s[i] == "not_reachable":
            by_cap.setdefault(r["cap"][vid][i], []).append(name[vid])
        elif s[i] == "above_range":
            by_cap.setdefault("range", []).append(name[vid])
    top = Gbps_text(r["range_GBps"][1])
    for cap, names in by_cap.items():
        if cap == "range":
            words.append(f"{_and(names)} need{'s' if len(names) == 1 else ''} more than {top} "
                         f"for {u}.")
        else:
            verb = "cap" if cap in ("ports", "module") else "caps"
            words.append(f"{_and(names)} cannot reach {u} at any bandwidth: the "
                         f"{CAP_WORDS.get(cap, cap)} {verb} {'it' if len(names) == 1 else 'them'}.")
    wan = Gbps_text(r["wan_GBps"])
    at = r["utilisation_at_wan"]
    reach = [vid for vid in r["variants"] if at[vid] is not None and at[vid] >= WORDS_AT - 1e-12]
    if reach:
        words.append(f"At the scenario's {wan}, {_and([name[v] for v in reach])} reach {u}.")
    else:
        words.append(f"At the scenario's {wan} no variant reaches {u}.")
    rest = [vid for vid in r["variants"] if vid not in reach and at[vid] is not None]
    if rest:
        best = max(rest, key=lambda v: at[v])
        words.append(f"The best of the rest there is {name[best]} at {pct(at[best])} compute "
                     "utilisation.")
    return words


def assumptions(r: dict, links_differ: bool = False) -> list[str]:
    """The section's assumptions; ``links_differ``: the scenario's WAN links differ (the bandwidth
    is then the slowest link's, every link scaled in proportion: docs/model.md section 15)."""
    links = ("the slowest link's, every link scaled in proportion (the scenario's links differ)"
             if links_differ else "equal links")
    v = r["variants"]
    delayed = [f"{x['short']} (tau = {x['delay']} step{'s' if x['delay'] > 1 else ''})"
               for x in v.values() if x["delay"] > 0]
    out = [
        f"Bandwidth per directed WAN link, searched in {Gbps_text(r['range_GBps'][0])} to "
        f"{Gbps_text(r['range_GBps'][1])}, {links}; at the scenario's {r['setting']} (the "
        "page's controls do not move this section).",
        "Compute utilisation = GPU compute / step time, with each sync every H steps, split "
        "into F fragments and hidden behind (f + tau) steps of compute (docs/model.md section 14).",
        "Syncing every H steps is assumed not to change steps to target; utilisation and the "
        "bandwidth it needs use no steps to target.",
    ]
    if delayed:
        out.append(f"A sync applied late, {_and(delayed)}, is assumed not to change steps to "
                   "target.")
    pack = [x["short"] for x in v.values() if x["pack"]]
    if pack:
        out.append(f"Added from the field's methods (bandjax.METHODS): {_and(pack)}; their steps "
                   "to target are not measured.")
    return out


# ------------------------------------------------------------------------------ results.md


def _table(r: Need) -> tuple[list[str], list[list[str]]]:
    """The table of results.md and the page: one row per variant, a cell per target."""
    cols = ["variant", "H", "F", "tau (steps)",
            *(f"for {pct(u)}" for u in r.utilisation), f"utilisation at {g3(r.wan_GBps)} GB/s"]
    rows = []
    for vid, v in r.variants.items():
        at = r.utilisation_at_wan[vid]
        rows.append([v["short"], g6(v['sync_every']), str(v["fragments"]), str(v["delay"]),
                     *(cell(r, vid, i) for i in range(len(r.utilisation))),
                     "not available" if at is None else pct(at)])
    return cols, rows


def markdown(results: Results | dict) -> str:
    r = Results.of(results).need
    if r is None:
        return ""
    cols, rows = _table(r)
    out = [f"## {TITLE}", "",
           "The WAN bandwidth per directed link each variant needs to keep its GPUs computing a "
           "share of the time (compute utilisation, docs/model.md section 14): the scenario's "
           "variants and the field's methods.", "",
           "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out += ["", *r.conclusions, "", *(f"- {a}" for a in r.assumptions)]
    return "\n".join(out)


# ------------------------------------------------------------------------------ page view and chart


def need_view(sc: Scenario, results: Results | dict | None) -> View:
    r = Results.of(results).need
    view = View(KEY, TITLE)
    if r is None:
        view.lacks("The bandwidth each method needs (compute utilisation against the WAN "
                   "bandwidth, and the bandwidth for 50 to 99%)", KEY)
        return view
    names = {vid: v["short"] for vid, v in r.variants.items()}
    view.data = {
        "curves": [{"variant": vid, "short": names[vid], "GBps": g, "cu": u}
                   for vid, us in r.compute_utilisation.items()
                   for g, u in zip(r.bandwidth_GBps, us) if u is not None],
        "needs": [{"variant": vid, "short": names[vid], "GBps": r.required_GBps[vid][i],
                   "cu": r.utilisation[i], "text": cell(r, vid, i)}
                  for vid in r.variants for i in range(len(r.utilisation))
                  if r.status[vid][i] == "reached"],
        "scenario": [{"GBps": r.wan_GBps, "label": f"scenario: {Gbps_text(r.wan_GBps)}"}],
        "target": [{"cu": WORDS_AT, "label": f"{pct(WORDS_AT)} target"}],
        "range_GBps": list(r.range_GBps),
    }
    # a curve drawn under another's says so (DiLoCo and S-DiLoCo at overlap 0)
    view.notes = coinciding_note(coinciding(view.data["curves"], "GBps", "cu"), "bandwidth")
    cols, rows = _table(r)
    view.table = {"columns": cols, "rows": rows, "nowrap": [0], "phrases": list(range(4, len(cols))),
                  "caption": "WAN bandwidth per directed link each variant needs for each compute-"
                             "utilisation target, GB/s (Gbit/s); the last column is the "
                             "utilisation at the scenario's bandwidth."}
    for sentence in r.conclusions:
        view.say(sentence)
    view.assumptions = list(r.assumptions)
    return view


def need_chart(view: View, sc: Scenario, interactive: bool = False):
    d = view.data
    reg = registry(sc)
    shown = {row["short"] for row in d["curves"]}
    colors = {k: c for k, c in variant_colors(reg).items() if k in shown}
    legend = {v.short: legend_name(v) for v in reg}
    color = alt.Color("short:N", title="variant", scale=alt.Scale(
        domain=list(colors), range=list(colors.values())), legend=alt.Legend(
        labelExpr=f"{json.dumps(legend)}[datum.label] || datum.label", labelLimit=0))
    x = alt.X("GBps:Q", title="WAN bandwidth per directed link (GB/s, log)",
              scale=alt.Scale(type="log", domain=d["range_GBps"], nice=False),
              axis=alt.Axis(format="~g", grid=True))
    y = alt.Y("cu:Q", title="compute utilisation (GPU compute / step, %)",
              scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"))
    lines = alt.Chart(alt.NamedData(name="curves")).mark_line(strokeWidth=2).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("short:N", title="variant"),
                 alt.Tooltip("GBps:Q", title="WAN (GB/s)", format=".3g"),
                 alt.Tooltip("cu:Q", title="compute utilisation", format=".1%")])
    needs = alt.Chart(alt.NamedData(name="needs")).transform_filter(
        f"abs(datum.cu - {WORDS_AT}) < 1e-9").mark_point(size=60, filled=True).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("short:N", title="variant"),
                 alt.Tooltip("text:N", title=f"needs for {pct(WORDS_AT)}")])
    wan = alt.Chart(alt.NamedData(name="scenario"))
    target = alt.Chart(alt.NamedData(name="target"))
    layers = [
        wan.mark_rule(strokeDash=[4, 4], color="#666").encode(x=alt.X("GBps:Q")),
        wan.mark_text(align="left", dx=4, dy=-4, baseline="bottom", color="#444",
                      fontSize=11).encode(x=alt.X("GBps:Q"), y=alt.value(HEIGHT), text="label:N"),
        target.mark_rule(strokeDash=[2, 3], color="#999").encode(y=alt.Y("cu:Q")),
        target.mark_text(align="left", dx=4, dy=-3, baseline="bottom", color="#444",
                         fontSize=11).encode(y=alt.Y("cu:Q"), x=alt.value(0), text="label:N"),
        lines, needs]
    chart = alt.layer(*layers).properties(
        width="container" if interactive else WIDTH, height=HEIGHT,
        title=f"Compute utilisation against WAN bandwidth; dots: the bandwidth for {pct(WORDS_AT)}")
    datasets = {k: d[k] for k in ("curves", "needs", "scenario", "target")}
    # on the page the legend goes below the chart, which takes the section's width
    return _finish(chart, legend="bottom" if interactive else "right"), datasets


def view(sc: Scenario, results: Results, sw, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return need_view(sc, results)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets); none where the results lack the section."""
    if not view.data.get("curves"):
        return {}
    return {KEY: need_chart(view, sc, interactive)}
