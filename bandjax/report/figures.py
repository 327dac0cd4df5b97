"""The report's figures (SVG and PNG) and the charts the explorer page draws.

Every chart is an Altair (Vega-Lite) spec built from a :class:`~bandjax.report.views.View`. The
same builder serves both uses: ``interactive=False`` fixes the page's controls at the scenario's
setting (and draws both steps bases side by side) for a static figure; ``interactive=True`` reads
them from Vega signals (``basis``, ``enob``, ``budget``, and the play position) that the page sets.

As a report section (listed last in :data:`bandjax.report.SECTIONS`, so it reads every earlier
section's results), it writes ``figures/<key>.svg`` and ``.png`` into the report's folder and
embeds them in results.md.
"""

from __future__ import annotations

import json

import altair as alt

from .. import variants as _v
from .._io import atomic_write_bytes
from ..scenario import BASES, Scenario
from . import constants as C
from . import passes
from . import views as _views
from .sections import Figures, Results

KEY = Figures.KEY
FIGURES_DIR = "figures"

WIDTH = 560  # one panel, px
HEIGHT = 300
# Variant colours, by position in the registry, the same on every chart: Tableau 10's, then
# Tableau 20's lighter ones, so twenty variants each get their own.
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b79a20", "#e45756", "#b279a2", "#72b7b2", "#ff9da6",
           "#9d755d", "#bab0ac", "#9ecae9", "#ffbf79", "#88d27a", "#f2cf5b", "#ff9d98", "#d6a5c9",
           "#83bcb6", "#fcbfd2", "#d8b5a5", "#79706e")
PADDING_PX = 10
ENGINE_LEGEND = "event engine, with its 95% interval"
APPROX_LEGEND = "queueing approximation"
DOTS_LEGEND = "shared-WAN engine at load 0 (hollow circles)"  # the y scales keep marks this far inside the plot, so none is cut at its edge


def variant_colors(registry: tuple[_v.Variant, ...] | None = None) -> dict[str, str]:
    """Short label -> colour, in the registry's order: each variant's own ``colour`` (a position in
    :data:`PALETTE`), or, where an earlier variant holds that one, the next one free."""
    taken, out = set(), {}
    for v in _views.variants() if registry is None else registry:
        k = v.colour % len(PALETTE)
        while k in taken and len(taken) < len(PALETTE):
            k = (k + 1) % len(PALETTE)
        taken.add(k)
        out[v.short] = PALETTE[k]
    return out
PART_COLORS = {"compute": "#4c78a8", "network": "#f58518", "modules": "#54a24b"}
STAGE_COLORS = {"port": "#4c78a8", "optics": "#54a24b", "compute": "#e45756", "fpga": "#b279a2",
                "module (slowest stage)": "#999999"}


def vl_version() -> str:
    """The Vega-Lite version Altair writes specs for, as vl-convert names it ("6.4")."""
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


# ------------------------------------------------------------------------------ helpers


def _sel(sc: Scenario, interactive: bool, basis: str | None = None) -> dict:
    """Control -> Vega expression: a signal name on the page, a literal in a static figure."""
    if interactive:
        return {c: c for c in _views.CONTROLS}
    at = _views._at(sc, basis or "hypothesis")
    return {c: json.dumps(at[c]) for c in _views.CONTROLS}


def _filter(sel: dict, controls=_views.CONTROLS) -> str:
    return " && ".join(f"(datum.{c} === '*' || datum.{c} === {sel[c]})" for c in controls)


def _params(interactive: bool, sc: Scenario, extra=()):
    if not interactive:
        return []
    ctl = _views.controls(sc)
    return [alt.param(name=c, value=ctl[c]["value"]) for c in _views.CONTROLS] + list(extra)


def _variant_color(field="short"):
    """Colour by variant; every layer carries the same legend definition, so Vega-Lite merges
    them into one legend."""
    colors = variant_colors()
    return alt.Color(f"{field}:N", title="variant",
                     scale=alt.Scale(domain=list(colors), range=list(colors.values())),
                     legend=alt.Legend(labelExpr=_label_expr(), labelLimit=360))


def _label_expr() -> str:
    """Legend labels: the short name expanded to what the variant does."""
    names = {v.short: _views.legend_name(v) for v in _views.variants()}
    return f"{json.dumps(names)}[datum.label] || datum.label"


def _fitted(rows, key, sc: Scenario, interactive: bool, basis: str | None = None,
            include=()) -> alt.Scale:
    """A log scale whose domain is [min, max] of ``key`` over the rows the controls select (and
    ``include``), padded so no mark sits on an edge. On the page the domain is looked up by the
    controls' signals from a table of every setting's, so a setting with nothing to draw (a variant
    that never reaches the target) gets the axes of [1/2, 2] x a lone value rather than an empty extent."""
    def domain(at):
        values = [r[key] for r in _views.pick(rows, **at) if r.get(key) is not None and r[key] > 0]
        values += list(include)
        lo, hi = (min(values), max(values)) if values else (1.0, 1.0)
        return [lo, hi] if hi > lo else [lo / 2, hi * 2]

    if interactive:
        table = {_views.setting_key(at): domain(at) for at in _views.settings(sc)}
        key = " + '|' + ".join(_views.CONTROLS)  # the signals, joined as setting_key does
        expr = f"{json.dumps(table)}[{key}]"
        return alt.Scale(type="log", domain=alt.ExprRef(expr=expr), nice=False, padding=PADDING_PX)
    return alt.Scale(type="log", domain=domain(_views._at(sc, basis or "hypothesis")), nice=False,
                     padding=PADDING_PX)


def _log_x(title, domain=None):
    return alt.X("GBps:Q", title=title,
                 scale=alt.Scale(type="log", domain=list(domain) if domain else alt.Undefined),
                 axis=alt.Axis(format="~g", grid=True))


def _finish(chart, title: str | None = None, legend: str = "right"):
    # legends' place is set here only, so the page can move them below a narrow chart
    chart = chart.configure_axis(labelFontSize=13, titleFontSize=14).configure_legend(
        labelFontSize=13, titleFontSize=13, orient=legend,
        **({"direction": "vertical"} if legend == "bottom" else {})).configure_header(labelFontSize=13).configure_title(fontSize=15, anchor="start")
    if title:
        chart = chart.properties(title=title)
    return chart


def _hconcat_bases(build) -> alt.HConcatChart:
    return alt.hconcat(*(build(b).properties(title=f"{b} basis") for b in BASES), spacing=30)


def to_spec(chart, datasets: dict) -> dict:
    """The Vega-Lite spec of ``chart`` with its named datasets filled in."""
    spec = chart.to_dict()
    spec["datasets"] = {k: v for k, v in datasets.items()}
    return spec


# ------------------------------------------------------------------------------ 1. bandwidth


def bandwidth_chart(view: _views.View, sc: Scenario, interactive: bool = False):
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
                                          "label": f"scenario: {_views.g3(d['scenario_GBps'])} GB/s"}]}


# ------------------------------------------------------------------------------ 2. stages


def stages_chart(view: _views.View, sc: Scenario, interactive: bool = False):
    d = view.data
    x = alt.X("GFLOPs:Q", title="module compute budget (GFLOP/s, log)",
              scale=alt.Scale(type="log", domain=list(C.BUDGET_RANGE_GFLOPs)),
              axis=alt.Axis(format="~g"))
    y = alt.Y("ms:Q", title="stage time per worker's delta (ms, log)", scale=alt.Scale(type="log"),
              axis=alt.Axis(format="~g"))
    color = alt.Color("stage:N", title="stage", scale=alt.Scale(
        domain=list(STAGE_COLORS), range=list(STAGE_COLORS.values())),
        legend=alt.Legend(symbolOpacity=1, symbolStrokeWidth=3, labelLimit=260))
    base = alt.Chart(alt.NamedData(name="stages"))
    module = base.transform_filter("datum.stage === 'module (slowest stage)'").mark_line(
        strokeWidth=9, opacity=0.35).encode(x=x, y=y, color=color)
    stages = base.transform_filter("datum.stage !== 'module (slowest stage)'").mark_line(
        strokeWidth=2).encode(x=x, y=y, color=color, tooltip=[
            "stage:N", alt.Tooltip("GFLOPs:Q", format=".3g", title="GFLOP/s"),
            alt.Tooltip("ms:Q", format=".4g", title="ms"), "binding:N"])
    marks = alt.Chart(alt.NamedData(name="marks"))
    rules = marks.mark_rule(strokeDash=[4, 4], color="#444").encode(x=alt.X("GFLOPs:Q"))
    top = marks.transform_filter("datum.where === 'top'").mark_text(
        align="left", dx=5, baseline="top", fontSize=11, color="#222", lineBreak="\n").encode(
        x="GFLOPs:Q", y=alt.value(4), text="label:N")
    bottom = marks.transform_filter("datum.where === 'bottom'").mark_text(
        align="right", dx=-4, baseline="bottom", fontSize=11, color="#222").encode(
        x="GFLOPs:Q", y=alt.value(HEIGHT - 4), text="label:N")
    chart = alt.layer(module, stages, rules, top, bottom).properties(
        width="container" if interactive else WIDTH, height=HEIGHT)
    be = d["break_even_GFLOPs"]
    mark_rows = [{"GFLOPs": be, "label": f"{be:.1f} GFLOP/s:\ncompute stops binding", "where": "top"}]
    mark_rows += [{"GFLOPs": v, "label": f"[{k}] {v:g}", "where": "bottom"} for k, v in d["marks"].items()]
    return _finish(chart), {"stages": d["stages"], "marks": mark_rows}


# ------------------------------------------------------------------------------ 3. break-even


def breakeven_chart(view: _views.View, sc: Scenario, interactive: bool = False):
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
                            "one": [{"ratio": 1.0}]}


# ------------------------------------------------------------------------------ 4. shared WAN


def shared_wan_charts(view: _views.View, sc: Scenario, interactive: bool = False):
    d = view.data
    out = {}
    if d.get("steps"):
        base = alt.Chart(alt.NamedData(name="steps"))
        x = alt.X("load:Q", title="load of other jobs' traffic (share of the WAN)")
        y = alt.Y("step_ms:Q", title="mean step time (ms, log)",
                  scale=alt.Scale(type="log", padding=PADDING_PX),
                  axis=alt.Axis(format="~g"))
        kinds = [ENGINE_LEGEND] + ([APPROX_LEGEND] if any("approx_ms" in r for r in d["steps"]) else [])
        dash = alt.StrokeDash("kind:N", title="mean step", scale=alt.Scale(
            domain=kinds, range=[[1, 0], [5, 3]][:len(kinds)]), legend=alt.Legend(
            symbolType="stroke", symbolStrokeColor="#333", symbolStrokeWidth=2.5, symbolSize=400,
            labelLimit=360))
        engine = base.transform_calculate(kind=f"'{ENGINE_LEGEND}'")
        layers = [engine.mark_line(point=alt.OverlayMarkDef(size=40), strokeWidth=2).encode(
            x=x, y=y, color=_variant_color(), strokeDash=dash, tooltip=[
                alt.Tooltip("short:N", title="variant"), "load:Q",
                alt.Tooltip("step_ms:Q", format=".4g", title="step (ms)"),
                alt.Tooltip("lo_ms:Q", format=".4g", title="95% low (ms)"),
                alt.Tooltip("hi_ms:Q", format=".4g", title="95% high (ms)")])]
        if any(r.get("lo_ms") is not None for r in d["steps"]):
            layers.append(base.mark_errorbar(ticks=alt.MarkConfig(size=10, strokeWidth=2),
                                             rule=alt.MarkConfig(strokeWidth=2.5)).encode(
                x=x, y=alt.Y("lo_drawn_ms:Q", title="mean step time (ms, log)"), y2="hi_ms:Q",
                color=_variant_color()))
        if len(kinds) > 1:
            approx = base.transform_calculate(kind=f"'{APPROX_LEGEND}'")
            layers.append(approx.mark_line(strokeWidth=2.5, opacity=1).encode(
                x=x, y="approx_ms:Q", color=_variant_color(), strokeDash=dash))
        out["steps"] = (_finish(alt.layer(*layers).properties(
            width="container" if interactive else WIDTH, height=HEIGHT)),
                        {"steps": d["steps"]})
    if d.get("trace"):
        meta = d["trace_meta"]
        base = alt.Chart(alt.NamedData(name="trace"))
        x = alt.X("t_ms:Q", title="time in the run (ms)")
        y = alt.Y("value:Q", title="transfers queued / sync MB left")
        layers = [base.mark_line(interpolate="step-after").encode(
            x=x, y=y, color=alt.Color("series:N", title="")), ]
        params = []
        if interactive:
            at = base.transform_filter("datum.j === tj")
            layers += [at.mark_rule(color="#222").encode(x=x),
                       at.mark_point(filled=True, size=80).encode(x=x, y=y, color="series:N")]
            params = [alt.param(name="tj", value=0)]
        title = (f"trace: {_views.short(meta['variant']) if meta.get('variant') in sc.ids else meta.get('variant')}"
                 f", load {meta.get('load')}, {meta.get('GBps')} GB/s")
        chart = alt.layer(*layers).properties(width="container" if interactive else WIDTH,
                                              height=HEIGHT - 60, title=title)
        if params:
            chart = chart.add_params(*params)
        out["trace"] = (_finish(chart), {"trace": d["trace"]})
    return out


# ------------------------------------------------------------------------------ 5. model size


def model_chart(view: _views.View, sc: Scenario, interactive: bool = False):
    sel = _sel(sc, interactive)
    chart = alt.Chart(alt.NamedData(name="bars")).transform_filter(
        _filter(sel, ("enob", "budget"))).mark_bar().encode(
        x=alt.X("bar:N", title=None, sort=_views.bar_order(sc), axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("t_s:Q", title="time to target (s, log)", scale=alt.Scale(type="log"),
                axis=alt.Axis(format="~g"), stack=None),
        color=_variant_color(),
        column=alt.Column("model_label:N", title="model preset, parameters", sort=view.data["models"],
                          header=alt.Header(labelLimit=0, titleFontSize=13)),
        tooltip=[alt.Tooltip("bar:N", title="variant"), "model:N",
                 alt.Tooltip("t_s:Q", format=".3g", title="time to target (s)"), "status:N"],
    ).properties(width=125, height=HEIGHT - 40)
    if interactive:
        chart = chart.add_params(*_params(True, sc))
    return _finish(chart), {"bars": view.data["bars"]}


# ------------------------------------------------------------------------------ 6. every H


def h_chart(view: _views.View, sc: Scenario, interactive: bool = False):
    def panel(basis):
        sel = _sel(sc, interactive, basis)
        return alt.Chart(alt.NamedData(name="curves")).transform_filter(_filter(sel)).mark_line(
            point=alt.OverlayMarkDef(size=25)).encode(
            x=alt.X("H:Q", title="sync every H steps (log)",
                    scale=alt.Scale(type="log", domain=[C.H_VALUES[0], C.H_VALUES[-1]], nice=False),
                    axis=alt.Axis(format="~g")),
            y=alt.Y("t_s:Q", title="time to target (s, log)",
                    scale=_fitted(view.data["curves"], "t_s", sc, interactive, basis),
                    axis=alt.Axis(format="~g")),
            color=_variant_color(),
            tooltip=[alt.Tooltip("short:N", title="variant"), "H:Q",
                     alt.Tooltip("t_s:Q", format=".3g", title="time to target (s)")],
        ).properties(width="container" if interactive else WIDTH - 140, height=HEIGHT)

    chart = panel(None).add_params(*_params(True, sc)) if interactive else _hconcat_bases(panel)
    return _finish(chart), {"curves": view.data["curves"]}


# ------------------------------------------------------------------------------ 7. energy


def energy_chart(view: _views.View, sc: Scenario, interactive: bool = False):
    sel = _sel(sc, interactive)
    color = alt.Color("part:N", title="energy", scale=alt.Scale(
        domain=list(PART_COLORS), range=list(PART_COLORS.values())))
    order = alt.Order("order:Q")
    per_step = alt.Chart(alt.NamedData(name="per_step")).transform_filter(
        _filter(sel, ("enob", "budget"))).transform_calculate(
        order=f"indexof({json.dumps(list(PART_COLORS))}, datum.part)").mark_bar().encode(
        x=alt.X("short:N", title=None, sort=list(variant_colors()), axis=alt.Axis(labelAngle=0)),
        y=alt.Y("J:Q", title="energy per step (J)"), color=color, order=order,
        tooltip=[alt.Tooltip("short:N", title="variant"), "part:N",
                 alt.Tooltip("J:Q", format=".4g", title="J")],
    ).properties(width=250, height=HEIGHT - 20, title="per step")
    to_target = alt.Chart(alt.NamedData(name="to_target")).transform_filter(
        _filter(sel, ("enob", "budget"))).transform_calculate(
        order=f"indexof({json.dumps(list(PART_COLORS))}, datum.part)").mark_bar().encode(
        x=alt.X("bar:N", title=None, sort=_views.bar_order(sc), axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("kJ:Q", title="energy to target (kJ)"), color=color, order=order,
        tooltip=[alt.Tooltip("bar:N", title="variant"), "part:N",
                 alt.Tooltip("kJ:Q", format=".4g", title="kJ")],
    ).properties(width=290, height=HEIGHT - 20, title="to target")
    chart = alt.hconcat(per_step, to_target, spacing=40)
    if interactive:
        chart = chart.add_params(*_params(True, sc))
    return _finish(chart), {"per_step": view.data["per_step"], "to_target": view.data["to_target"]}


# ------------------------------------------------------------------------------ 8. your cluster

WINNER_LEGEND = "fastest to target at this K"


def _basis_filter(sel: dict) -> str:
    return f"(datum.basis === '*' || datum.basis === {sel['basis']})"


def _k_axis(dcs):
    return alt.X("K:Q", title="data centres K", scale=alt.Scale(domain=[dcs[0], dcs[-1]], nice=False),
                 axis=alt.Axis(format="d", tickMinStep=1, grid=True))


def cluster_time_panel(view: _views.View, sc: Scenario, topology: str, interactive: bool = False):
    """Time to target of each variant against K on one WAN topology; the winner at each K ringed."""
    d = view.data
    sel = _sel(sc, interactive)
    where = f"datum.topology === {json.dumps(topology)} && {_basis_filter(sel)}"
    x = _k_axis(d["dcs"])
    y = alt.Y("t_s:Q", title="time to target (s, log)", axis=alt.Axis(format="~g"),
              scale=alt.Scale(type="log", padding=PADDING_PX, nice=False))
    tooltip = [alt.Tooltip("short:N", title="variant"), alt.Tooltip("K:Q", title="K"),
               alt.Tooltip("t_s:Q", title="time to target (s)", format=".3g")]
    lines = alt.Chart(alt.NamedData(name="times")).transform_filter(where).mark_line(
        strokeWidth=2, point=alt.OverlayMarkDef(size=18)).encode(
        x=x, y=y, color=_variant_color(), tooltip=tooltip)
    ring = alt.Chart(alt.NamedData(name="winners")).transform_filter(where).transform_calculate(
        mark=f"'{WINNER_LEGEND}'").mark_point(size=170, filled=False, strokeWidth=2.5, opacity=1).encode(
        x=x, y=y, color=alt.value("#222"),
        shape=alt.Shape("mark:N", title="winner", scale=alt.Scale(domain=[WINNER_LEGEND],
                                                                  range=["circle"]),
                        legend=alt.Legend(symbolFillColor="transparent", symbolStrokeColor="#222",
                                          symbolStrokeWidth=2, labelLimit=360)),
        tooltip=[alt.Tooltip("short:N", title="fastest"), alt.Tooltip("K:Q", title="K"),
                 alt.Tooltip("t_s:Q", title="time to target (s)", format=".3g")])
    return alt.layer(lines, ring).properties(
        width="container" if interactive else WIDTH - 160, height=HEIGHT - 40,
        title=f"{topology}: time to target against K")


def cluster_break_even_panel(view: _views.View, sc: Scenario, topology: str,
                             interactive: bool = False):
    """The compared pairs' bandwidth break-evens against K on one WAN topology, beside the
    scenario's WAN bandwidth."""
    d = view.data
    sel = _sel(sc, interactive)
    where = f"datum.topology === {json.dumps(topology)} && {_basis_filter(sel)}"
    x = _k_axis(d["dcs"])
    y = alt.Y("GBps:Q", title="break-even WAN bandwidth per link (GB/s, log)",
              axis=alt.Axis(format="~g"), scale=alt.Scale(type="log", padding=PADDING_PX, nice=False))
    colors = variant_colors()
    seconds = [v for v in colors if any(r["second"] == v for r in d["break_evens"])]
    firsts = list(dict.fromkeys(r["first"] for r in d["break_evens"]))
    color = alt.Color("second:N", title="second variant", scale=alt.Scale(
        domain=seconds, range=[colors[v] for v in seconds]),
        legend=alt.Legend(labelExpr=_label_expr(), labelLimit=360))
    dash = alt.StrokeDash("first:N", title="first variant", scale=alt.Scale(
        domain=firsts, range=[[1, 0], [6, 3], [2, 2], [8, 2, 2, 2]][:len(firsts)]),
        legend=alt.Legend(symbolStrokeColor="#333", labelExpr=_label_expr(), labelLimit=360))
    lines = alt.Chart(alt.NamedData(name="break_evens")).transform_filter(where).transform_calculate(
        line="datum.pair + ' ' + datum.root").mark_line(
        strokeWidth=2, point=alt.OverlayMarkDef(size=22)).encode(
        x=x, y=y, color=color, strokeDash=dash, detail="line:N",
        tooltip=["pair:N", alt.Tooltip("K:Q", title="K"),
                 alt.Tooltip("GBps:Q", title="break-even (GB/s)", format=".3g")])
    wan = alt.Chart(alt.NamedData(name="scenario"))
    layers = [wan.mark_rule(strokeDash=[4, 4], color="#666").encode(y=alt.Y("GBps:Q")),
              wan.mark_text(align="left", dx=4, dy=-3, baseline="bottom", color="#444",
                            fontSize=11).encode(y=alt.Y("GBps:Q"), x=alt.value(0), text="label:N"),
              lines]
    return alt.layer(*layers).properties(
        width="container" if interactive else WIDTH - 160, height=HEIGHT - 40,
        title=f"{topology}: break-evens against K")


def cluster_charts(view: _views.View, sc: Scenario, interactive: bool = False) -> dict:
    """On the page, one chart per topology and kind (they wrap on a narrow screen); as a figure,
    all four in one, on the hypothesis basis."""
    d = view.data
    if not d.get("times"):
        return {}
    data = {"times": d["times"], "winners": d["winners"], "break_evens": d["break_evens"],
            "scenario": [{"GBps": _views._num(d["wan_GBps"]),
                          "label": f"scenario: {_views.g3(d['wan_GBps'])} GB/s"}]}
    kinds = [("time", cluster_time_panel)]
    if d["break_evens"]:
        kinds.append(("break_even", cluster_break_even_panel))
    if interactive:
        # the basis only: the section is at the scenario's ENOB and budget
        params = [p for p in _params(True, sc) if p.name == "basis"]
        return {f"cluster_{kind}_{t}": (_finish(build(view, sc, t, True).add_params(*params),
                                                legend="bottom"), data)
                for kind, build in kinds for t in d["topologies"]}
    rows = [alt.hconcat(*(build(view, sc, t) for t in d["topologies"]), spacing=30)
            for _, build in kinds]
    # each row keeps its own colour legend: "variant" above, the break-evens' "second variant"
    # below (one shared legend would be titled with both)
    chart = alt.vconcat(*rows, spacing=24).resolve_scale(
        color="independent", strokeDash="independent").properties(
        title=f"Your cluster at {_views.fmt_GBps(d['wan_GBps'])}, {BASES[0]} basis")
    return {"cluster": (_finish(chart), data)}


# ------------------------------------------------------------------------------ 9. how sure

INTERVAL_LEGEND = "break-even, 5% to 95% of samples (diamond: median)"


def uncertainty_chart(view: _views.View, sc: Scenario, interactive: bool = False):
    """Each compared pair's probability that its first variant reaches the target first, against
    WAN bandwidth, with the 90% interval of its break-even drawn as a bar at 50%. None without
    uncertain inputs (nothing to draw)."""
    d = view.data
    if not d.get("p_wins"):
        return None
    sel = _sel(sc, interactive)
    where = _basis_filter(sel)
    x = _log_x("WAN bandwidth per direction (GB/s, log)", C.BANDWIDTH_RANGE_GBps)
    y = alt.Y("p:Q", title="probability the first of the pair wins",
              scale=alt.Scale(domain=[0, 1], nice=False), axis=alt.Axis(format="%"))
    color = alt.Color("pair:N", title="pair (first vs second)", scale=alt.Scale(domain=d["pairs"]),
                      legend=alt.Legend(labelLimit=360))
    curves = alt.Chart(alt.NamedData(name="p_wins")).transform_filter(where).mark_line(
        strokeWidth=2.5, point=alt.OverlayMarkDef(size=8)).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("pair:N"), alt.Tooltip("GBps:Q", title="GB/s", format=".3g"),
                 alt.Tooltip("p:Q", title="probability the first wins", format=".0%")])
    half = alt.Chart(alt.NamedData(name="half")).mark_rule(strokeDash=[2, 3], color="#888").encode(
        y=alt.Y("p:Q"))
    wan = alt.Chart(alt.NamedData(name="scenario")).encode(x=alt.X("GBps:Q"))
    layers = [half, wan.mark_rule(strokeDash=[4, 4], color="#666"),
              wan.mark_text(align="left", dx=4, dy=-4, baseline="bottom", color="#444",
                            fontSize=11).encode(text="label:N", y=alt.value(0)), curves]
    if d["intervals"]:
        bars = alt.Chart(alt.NamedData(name="intervals")).transform_filter(where).transform_calculate(
            what=f"'{INTERVAL_LEGEND}'")
        tip = [alt.Tooltip("pair:N"), alt.Tooltip("lo:Q", title="5% (GB/s)", format=".3g"),
               alt.Tooltip("mid:Q", title="median (GB/s)", format=".3g"),
               alt.Tooltip("hi:Q", title="95% (GB/s)", format=".3g")]
        layers += [bars.mark_rule(strokeWidth=7, opacity=0.4).encode(
                       x=alt.X("lo:Q"), x2="hi:Q", y=y, color=color, tooltip=tip),
                   bars.mark_point(shape="diamond", size=120, filled=True, opacity=1).encode(
                       x=alt.X("mid:Q"), y=y, color=color, tooltip=tip,
                       shape=alt.Shape("what:N", title="break-even", scale=alt.Scale(
                           domain=[INTERVAL_LEGEND], range=["diamond"]),
                           legend=alt.Legend(labelLimit=360, symbolFillColor="#555")))]
    chart = alt.layer(*layers).properties(width="container" if interactive else WIDTH,
                                          height=HEIGHT)
    if interactive:
        chart = chart.add_params(*[p for p in _params(True, sc) if p.name == "basis"])
    else:
        chart = chart.properties(title=f"Probability of winning, {BASES[0]} basis")
    data = {"p_wins": d["p_wins"], "intervals": d["intervals"], "half": [{"p": 0.5}],
            "scenario": [{"GBps": d["wan_GBps"], "label": f"scenario: {_views.g3(d['wan_GBps'])} GB/s"}]}
    return _finish(chart, legend="bottom" if interactive else "right"), data


# ------------------------------------------------------------------------------ all charts


def charts(views: list[_views.View], sc: Scenario, interactive: bool = False) -> dict:
    """chart id -> (section key, Altair chart, datasets), in the page's order."""
    with _views.registry(sc):
        return _charts(views, sc, interactive)


def _charts(views, sc, interactive):
    by = {v.key: v for v in views}
    out: dict = {}
    simple = {"bandwidth": bandwidth_chart, "stages": stages_chart, "breakeven": breakeven_chart,
              "model": model_chart, "sync_h": h_chart, "energy": energy_chart}
    for v in views:
        if v.key in simple:
            chart, data = simple[v.key](v, sc, interactive)
            out[v.key] = (v.key, chart, data)
        if v.key == "shared_wan":
            for name, (chart, data) in shared_wan_charts(by["shared_wan"], sc, interactive).items():
                out[f"shared_wan_{name}"] = (v.key, chart, data)
        if v.key == "cluster":
            for cid, (chart, data) in cluster_charts(v, sc, interactive).items():
                out[cid] = (v.key, chart, data)
        if v.key == "uncertainty":
            drawn = uncertainty_chart(v, sc, interactive)
            if drawn is not None:
                out[v.key] = (v.key, *drawn)
    return out


# ------------------------------------------------------------------------------ report section


def render(spec: dict) -> tuple[bytes, bytes]:
    """(SVG, PNG) of a Vega-Lite spec, rendered offline by vl-convert."""
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(spec, vl_version=vl_version())
    png = vlc.vegalite_to_png(spec, vl_version=vl_version(), scale=2)
    return svg.encode("utf-8"), png


def build(scenario: Scenario, ctx: dict) -> Figures:
    """Write every figure into ``ctx["out"]/figures`` (when there is an output folder), drawn from
    the sections built before (``ctx["sections"]``) as results.json holds them."""
    out = ctx.get("out")
    if out is None:
        return Figures(figures=[])
    from pathlib import Path

    from tqdm import tqdm

    from . import _json_ready

    done = ctx.get("sections") or Results()
    results = Results.of(_json_ready(done.to_json()))  # as a page read from results.json sees it
    views = _views.collect(scenario, results, passes.of(scenario, ctx))
    by = {v.key: v for v in views}
    folder = Path(out) / FIGURES_DIR
    entries = []
    items = list(charts(views, scenario).items())
    for fid, (key, chart, data) in tqdm(items, desc="figures", unit="figure", leave=False):
        svg, png = render(to_spec(chart, data))
        atomic_write_bytes(folder / f"{fid}.svg", svg)
        atomic_write_bytes(folder / f"{fid}.png", png)
        entries.append({"id": fid, "section": key, "title": by[key].title,
                        "svg": f"{FIGURES_DIR}/{fid}.svg", "png": f"{FIGURES_DIR}/{fid}.png"})
    sections = [{"section": v.key, "title": v.title, "conclusion": v.conclusion,
                 "assumptions": v.assumptions, "missing": v.missing} for v in views]
    return Figures(figures=entries, figure_sections=sections)


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    entries = results.figures.figures if results.figures else []
    if not entries:
        return ""
    parts = ["## Figures"]
    for s in results.figures.figure_sections or []:
        figs = [e for e in entries if e["section"] == s["section"]]
        parts.append(f"### {s['title']}")
        for e in figs:
            parts.append(f"![{s['title']}]({e['svg']})\n\n(PNG: [{e['png']}]({e['png']}))")
        parts += s["conclusion"]
        parts += [f"*Not available yet:* {m}" for m in s["missing"]]
        if s["assumptions"]:
            parts.append("Assumptions: " + " ".join(s["assumptions"]))
    return "\n\n".join(parts)

