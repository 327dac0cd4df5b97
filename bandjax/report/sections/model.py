"""Page section "Model size": time to target per preset model size. Drawn from the core section and
the report's one pass."""

from __future__ import annotations

import math

import altair as alt
import numpy as np

from ...scenario import BASES, PRESETS, Scenario
from ..passes import Sweeps, enob_label, scenario_budget
from .common import (HEIGHT, Results, View, _bar_rows, _conclude, _filter, _finish, _params, _sel,
                     _variant_color, _winner, bar_order, count, fmt_GBps, fmt_s, is_band, pick,
                     setting_text, short, tidy)

KEY = "model"


def _model_words(rows, models, params, at) -> list[str]:
    """Who reaches the target first at the smallest and the largest preset."""
    words = []
    for m in dict.fromkeys((models[0], models[-1])):
        sel = [r for r in pick([r for r in rows if r["model"] == m], **at) if r["t_s"] is not None]
        w = _winner(sel)
        if not w:
            continue
        words.append(f"At {m} ({count(params[m])} parameters) {w[0]} reaches the target first "
                     f"in {fmt_s(w[1])}.")
        band = _winner([r for r in sel if is_band(r["variant"])])
        if band and band[0] != w[0]:
            words.append(f"The fastest band variant there, {band[0]}, takes {fmt_s(band[1])} "
                         f"({band[1] / w[1]:.2f}x).")
    return words


def model_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    models = list(PRESETS)
    ds = sw.model
    rows = _bar_rows(tidy(sc, ds, ("model",), {"t_s": lambda d: d.time_to_target_s,
                                               "status": lambda d: d.status}))
    params = dict(zip(models, np.atleast_1d(ds.params.values)))
    for r in rows:
        r["params"] = float(params[r["model"]])
        r["model_label"] = f"{r['model']}, {count(params[r['model']])}"
    view = View("model", "Model size: time to target at each preset")
    view.data = {"bars": rows, "models": [f"{m}, {count(params[m])}" for m in models]}
    cols = bar_order(sc)
    trows = []
    for m in models:
        sel = pick([r for r in rows if r["model"] == m], enob=enob_label(sc.enob),
                   budget=scenario_budget(sc))
        by = {r["bar"]: r for r in sel}
        trows.append([f"{m} ({count(params[m])})"] + [
            fmt_s(by[c]["t_s"]) if c in by and by[c]["t_s"] is not None else by.get(c, {}).get("status", "n/a")
            for c in cols])
    view.table = {"columns": ["model (parameters)"] + cols, "rows": trows,
                  "caption": f"Time to target at {fmt_GBps(float(sc.wan_Bps) / 1e9)}, "
                             f"{setting_text(sc)}; hyp./exa.: E' on the hypothesis/exact basis."}
    _conclude(view, sc, lambda at: _model_words(rows, models, params, at))
    view.assumptions = [
        "Bytes and GPU compute scale linearly with the parameters; the calibrated d does not.",
        "Steps to target at every size are those measured at the study's size (the only ones "
        "measured).",
        f"WAN at the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}.",
    ]
    return view


def model_chart(view: View, sc: Scenario, interactive: bool = False):
    sel = _sel(sc, interactive)
    chart = alt.Chart(alt.NamedData(name="bars")).transform_filter(
        _filter(sel, ("enob", "budget"))).mark_bar().encode(
        x=alt.X("bar:N", title=None, sort=bar_order(sc), axis=alt.Axis(labelAngle=-40)),
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


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return model_view(sc, results, sw)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets)."""
    return {KEY: model_chart(view, sc, interactive)}
