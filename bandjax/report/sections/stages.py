"""Page section "Module stages": each stage's time per worker's delta against the module's compute
budget, and which stage binds. Drawn from the core section and the report's one pass."""

from __future__ import annotations

import altair as alt
import numpy as np

from ...scenario import Scenario
from ...step import STAGES, budget_break_even_FLOPs
from ...units import significant
from .. import constants as C
from ..passes import Sweeps
from .common import HEIGHT, WIDTH, Results, View, _finish, _num, g3, g4, g6

KEY = "stages"


def stages_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    be = float(budget_break_even_FLOPs(sc)) / 1e9
    marks = {"low": float(sc.budget_low_FLOPs) / 1e9, "high": float(sc.budget_high_FLOPs) / 1e9}
    grid = np.asarray(sw.stages.budget, dtype=float)  # GFLOP/s
    st = np.asarray(sw.stages.module_stage_s.transpose("budget", "stage"))
    rows = []
    for j, g in enumerate(grid):
        binding = STAGES[int(np.argmax(st[j]))]
        for k, s in enumerate(STAGES):
            rows.append({"GFLOPs": _num(g), "stage": s, "ms": _num(st[j, k] * 1e3),
                         "binding": s == binding})
        rows.append({"GFLOPs": _num(g), "stage": "module (slowest stage)",
                     "ms": _num(st[j].max() * 1e3), "binding": True})
    free = np.asarray(sw.at(sw.point).module_stage_s.isel(basis=0))
    table_rows = []
    for lab, stages in (("[free] not charged", free),
                        (f"[low] {g6(marks['low'])} GFLOP/s", st[list(grid).index(marks["low"])]),
                        (f"[high] {g6(marks['high'])} GFLOP/s", st[list(grid).index(marks["high"])])):
        b = int(np.argmax(stages))
        table_rows.append([lab] + [g4(stages[k] * 1e3) + (" (binds)" if k == b else "")
                                   for k in range(len(STAGES))])
    view = View("stages", "The module's four stages against its compute budget")
    view.data = {"stages": rows, "break_even_GFLOPs": _num(be), "marks": marks}
    view.table = {"columns": ["budget"] + [f"{s} (ms)" for s in STAGES], "rows": table_rows,
                  "caption": "Stage times for one worker's dense delta; the slowest binds."}
    low = st[list(grid).index(marks["low"])]
    high = st[list(grid).index(marks["high"])]
    others = [k for k in range(len(STAGES)) if STAGES[k] != "compute"]
    rest = max(others, key=lambda k: free[k])
    c = STAGES.index("compute")
    view.conclusion = [
        f"The module's compute binds below {be:.1f} GFLOP/s; above it the {STAGES[rest]} stage binds "
        f"at {g4(free[rest] * 1e3)} ms per worker's delta, whatever the budget.",
        f"At [low] ({g6(marks['low'])} GFLOP/s) compute takes {significant(low[c] * 1e3, 5)} ms, "
        f"{g3(low[c] / free[rest])}x the {STAGES[rest]}; at [high] ({g6(marks['high'])} GFLOP/s) "
        f"{g4(high[c] * 1e3)} ms, {g3(high[c] / free[rest])}x.",
    ]
    view.assumptions = [
        "The four stages are pipelined: the slowest sets the module's time.",
        f"The transform costs {g6(float(sc.transform_flops_per_param))} FLOP per parameter; "
        f"the optics run at {g6(float(sc.optics_Sps) / 1e9)} GS/s, one sample per parameter.",
    ]
    return view


STAGE_COLORS = {"port": "#4c78a8", "optics": "#54a24b", "compute": "#e45756", "fpga": "#b279a2",
                "module (slowest stage)": "#999999"}


def stages_chart(view: View, sc: Scenario, interactive: bool = False):
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
    mark_rows += [{"GFLOPs": v, "label": f"[{k}] {g6(v)}", "where": "bottom"} for k, v in d["marks"].items()]
    return _finish(chart), {"stages": d["stages"], "marks": mark_rows}


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return stages_view(sc, results, sw)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets)."""
    return {KEY: stages_chart(view, sc, interactive)}
