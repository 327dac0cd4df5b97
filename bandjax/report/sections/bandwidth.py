"""Page section "Time to target against bandwidth": each variant's time to target along the WAN
bandwidth, who wins where, and the shared-WAN engine's load-0 runs on the curves. Drawn from the
core section and the report's one pass (no report section of its own)."""

from __future__ import annotations

import altair as alt
import numpy as np

from ...grid import sweep
from ...metrics import NEVER, NOT_MEASURED
from ...scenario import BASES, Scenario
from ...units import significant
from .. import passes
from .. import constants as C
from ..constants import POINTS_PER_DECADE, STATUS
from ..passes import Sweeps, bandwidth_grid_GBps
from .common import (ANY, CONTROLS, HEIGHT, STATUS_WORDS, WIDTH, Results, View, _and, _at,
                     _conclude, _filter, _finish, _fitted, _hconcat_bases, _log_x, _num, _params,
                     _sel, _variant_color, _winner, fmt_GBps, fmt_s, g3, is_band, pick,
                     setting_text, short, tidy)

KEY = "bandwidth"


def _segments(rows_at_setting, grid) -> list[tuple[str, float, float]]:
    """(winner, from GB/s, to GB/s) along the grid."""
    by_i: dict[int, list] = {}
    for r in rows_at_setting:
        by_i.setdefault(r["i"], []).append(r)
    segs: list[list] = []
    for i in range(len(grid)):
        w = _winner(by_i.get(i, []))
        w = w[0] if w else "none"
        if segs and segs[-1][0] == w:
            segs[-1][2] = grid[i]
        else:
            segs.append([w, grid[i], grid[i]])
    return [tuple(s) for s in segs]


def bandwidth_view(sc: Scenario, results: Results | dict | None, sw: Sweeps | None = None) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    sw = passes.compute(sc) if sw is None else sw
    grid = bandwidth_grid_GBps(sc)
    ds = sw.bandwidth
    rows = tidy(sc, ds, ("bandwidth",), {
        "t_s": lambda d: d.time_to_target_s, "status": lambda d: d.status,
        "step_ms": lambda d: d.step_s * 1e3})
    position = {float(g): i for i, g in enumerate(grid)}
    for r in rows:
        r["i"] = position[float(r["bandwidth"])]
        r["GBps"] = _num(r.pop("bandwidth"))
    wan = float(sc.wan_Bps) / 1e9
    i0 = int(np.argmin(np.abs(grid - wan)))
    view = View("bandwidth", "Time to target against WAN bandwidth")
    view.data = {"curves": rows, "grid_GBps": [_num(g) for g in grid], "start": i0,
                 "scenario_GBps": _num(wan), "dots": []}

    _conclude(view, sc, lambda at: _bandwidth_words(rows, grid, i0, at))
    points = results.shared_wan.load0_points if results.shared_wan else None
    if points:
        dots, dev = _load0_dots(sc, points, rows)
        view.data["dots"] = dots
        if dev is not None:
            view.say(
                f"The shared-WAN engine's {len(dots)} runs at load 0 (dots) sit on the curves: "
                f"their step times differ from the closed forms by at most {significant(dev, 2)} (relative).")
    else:
        view.lacks("The shared-WAN engine's runs at load 0 (the dots on the curves)",
                   "shared_wan.load0_points")
    view.assumptions = [
        "Time to target = measured steps to the target loss (single seed) x closed-form step time.",
        "E' takes E's steps on the hypothesis basis and the exact band's on the exact basis.",
        "The fixed time d per variant is calibrated to the study's recorded step times.",
        "The WAN carries only this job (the shared-WAN section drops this).",
        "The conclusions follow the controls; the report's are at the scenario's setting: "
        f"{setting_text(sc)}.",
    ]
    return view


def _bandwidth_words(rows, grid, i0, at) -> list[str]:
    """Who reaches the target first at the scenario's bandwidth, and where the winner changes."""
    ranked = sorted((r for r in pick([r for r in rows if r["i"] == i0], **at) if r["t_s"] is not None),
                    key=lambda r: r["t_s"])
    g = f"the scenario's {fmt_GBps(grid[i0])}"
    if not ranked:
        return [f"At {g} no variant reaches the target."]
    best = ranked[0]
    words = [f"At {g}, {best['short']} reaches the target first ({fmt_s(best['t_s'])})."]
    bands = [r for r in ranked if is_band(r["variant"])]
    if bands and bands[0] is not best:
        words.append(f"The fastest band variant, {bands[0]['short']}, takes {fmt_s(bands[0]['t_s'])} "
                     f"({bands[0]['t_s'] / best['t_s']:.2f}x).")
    for status in (STATUS[NEVER], STATUS[NOT_MEASURED]):
        names = [r["short"] for r in pick([r for r in rows if r["i"] == i0], **at) if r["status"] == status]
        if names:
            words.append(f"{_and(names)}: {STATUS_WORDS[status]} at this ENOB.")
    segs = _segments(pick(rows, **at), grid)
    if len(segs) > 1:
        words.append("Across 0.1 to 1,000 GB/s the winner changes: " + "; ".join(
            f"{w} from {g3(a)} to {g3(b)} GB/s" for w, a, b in segs)
            + f" (on the sweep's grid, {POINTS_PER_DECADE} points a decade).")
    else:
        words.append(f"{segs[0][0]} wins across the whole range, 0.1 to 1,000 GB/s.")
    return words


def _load0_dots(sc: Scenario, points: list[dict], curve_rows: list[dict]):
    """Dots of the engine's load-0 runs, tagged like the curves, and their largest relative
    step-time deviation from the closed form at the same bandwidth."""
    gbps = sorted({float(p["GBps"]) for p in points})
    ds = sweep(sc, bandwidth=gbps, basis=list(BASES), quantities=["step_s"])
    dep = {}
    for vid in sc.ids:
        rs = [r for r in curve_rows if r["variant"] == vid]
        dep[vid] = {c: any(r[c] != ANY for r in rs) for c in CONTROLS}
    at = _at(sc)
    dots, devs = [], []
    for p in points:
        vid, basis = p["variant"], p.get("basis", "hypothesis")
        t = p.get("time_to_target_s")
        t = None if t in (None, "inf") else float(t)
        row = {"variant": vid, "short": short(vid), "GBps": _num(p["GBps"]),
               "t_s": _num(t) if t is not None else None, "step_ms": _num(p["step_ms"])}
        row["basis"] = basis if dep[vid]["basis"] else ANY
        row["enob"] = at["enob"] if dep[vid]["enob"] else ANY
        row["budget"] = at["budget"] if dep[vid]["budget"] else ANY
        dots.append(row)
        closed = float(ds.step_s.sel(bandwidth=float(p["GBps"]), basis=basis, variant=vid)) * 1e3
        if p.get("step_ms") is not None:
            devs.append(abs(float(p["step_ms"]) - closed) / closed)
    return dots, (max(devs) if devs else None)


DOTS_LEGEND = "shared-WAN engine at load 0 (hollow circles)"  # the y scales keep marks this far inside the plot, so none is cut at its edge


def bandwidth_chart(view: View, sc: Scenario, interactive: bool = False):
    d = view.data

    def panel(basis):
        sel = _sel(sc, interactive, basis)
        x = _log_x("WAN bandwidth per direction (GB/s, log)", C.BANDWIDTH_RANGE_GBps)
        y = alt.Y("t_s:Q", title="time to target (s, log)",
                  scale=_fitted(d["curves"], "t_s", sc, interactive, basis),
                  axis=alt.Axis(format="~g"))
        tooltip = [alt.Tooltip("short:N", title="variant"), alt.Tooltip("GBps:Q", title="GB/s", format=".3g"),
                   alt.Tooltip("t_s:Q", title="time to target (s)", format=".3g"),
                   alt.Tooltip("step_ms:Q", title="step (ms)", format=".4g")]
        curves = alt.Chart(alt.NamedData(name="curves")).transform_filter(_filter(sel))
        layers = [curves.mark_line(strokeWidth=2).encode(x=x, y=y, color=_variant_color(),
                                                        tooltip=tooltip)]
        wan = alt.Chart(alt.NamedData(name="scenario")).encode(x=alt.X("GBps:Q"))
        layers += [wan.mark_rule(strokeDash=[4, 4], color="#666"),
                   wan.mark_text(align="left", dx=4, dy=-4, baseline="bottom", color="#444",
                                 fontSize=11).encode(text="label:N", y=alt.value(0))]
        if d["dots"]:
            dots = alt.Chart(alt.NamedData(name="dots")).transform_filter(_filter(sel))
            layers.append(dots.transform_calculate(run=f"'{DOTS_LEGEND}'").mark_point(
                size=90, filled=False, strokeWidth=2).encode(
                x=x, y=y, color=_variant_color(),
                shape=alt.Shape("run:N", title="load 0", scale=alt.Scale(
                    domain=[DOTS_LEGEND], range=["circle"]), legend=alt.Legend(
                    symbolFillColor="transparent", symbolStrokeColor="#333", symbolStrokeWidth=2,
                    labelLimit=360)),
                tooltip=[alt.Tooltip("short:N", title="variant (engine, load 0)"),
                         alt.Tooltip("step_ms:Q", title="step (ms)", format=".4g")]))
        if interactive:
            at = curves.transform_filter("datum.i === bwi")
            layers += [at.mark_rule(color="#222", strokeWidth=1.5).encode(x=x),
                       at.mark_point(size=110, filled=True, opacity=1).encode(
                           x=x, y=y, color=_variant_color())]
        return alt.layer(*layers).properties(width="container" if interactive else WIDTH, height=HEIGHT + 40)

    if interactive:
        chart = panel(None).add_params(*_params(True, sc, [alt.param(name="bwi", value=d["start"])]))
    else:
        chart = _hconcat_bases(panel)
    return _finish(chart), {"curves": d["curves"], "dots": d["dots"],
                            "scenario": [{"GBps": d["scenario_GBps"],
                                          "label": f"scenario: {g3(d['scenario_GBps'])} GB/s"}]}


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return bandwidth_view(sc, results, sw)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets)."""
    return {KEY: bandwidth_chart(view, sc, interactive)}


PLAYER = """<div class="player"><button id="play-bw" type="button">&#9654; Play</button>
<input id="bw-slider" type="range" min="0" max="{nmax}" value="{start}" aria-label="WAN bandwidth">
<span id="bw-value"></span></div>"""


def page_html(view: View, specs: dict, page: dict) -> dict[str, str]:
    """The bandwidth player above the chart and the readout below it."""
    return {"top": PLAYER.format(nmax=len(view.data["grid_GBps"]) - 1, start=view.data["start"]),
            "after_charts": '<div id="readout-bandwidth" class="readout"></div>'}
