"""Page section "Syncing every H steps": time to target along H. Drawn from the core section and the
report's one pass."""

from __future__ import annotations

import altair as alt

from ...scenario import Scenario
from .. import constants as C
from ..constants import H_VALUES
from ..passes import Sweeps
from .common import (HEIGHT, WIDTH, Results, View, _conclude, _filter, _finish, _fitted,
                     _hconcat_bases, _params, _sel, _variant_color, _winner, baseline, fmt_GBps,
                     fmt_s, pick, short, tidy)

KEY = "sync_h"


def _h_words(rows, at) -> list[str]:
    """The winner at the smallest and largest H, and how far the baseline falls."""
    at_rows = pick(rows, **at)
    w1 = _winner([r for r in at_rows if r["H"] == H_VALUES[0]])
    wn = _winner([r for r in at_rows if r["H"] == H_VALUES[-1]])
    if not (w1 and wn):
        return []
    base = {r["H"]: r["t_s"] for r in at_rows if r["variant"] == baseline()}
    words = [f"{w1[0]} wins at H = {H_VALUES[0]} ({fmt_s(w1[1])}).",
             f"{wn[0]} wins at H = {H_VALUES[-1]} ({fmt_s(wn[1])})."]
    first, last = base.get(float(H_VALUES[0])), base.get(float(H_VALUES[-1]))
    if first and last:
        words.append(f"{short(baseline())} falls from {fmt_s(first)} to {fmt_s(last)}.")
    return words


def h_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    ds = sw.H
    rows = tidy(sc, ds, ("H",), {"t_s": lambda d: d.time_to_target_s, "status": lambda d: d.status})
    view = View("sync_h", "Syncing every H steps")
    view.data = {"curves": rows}
    _conclude(view, sc, lambda at: _h_words(rows, at))
    view.assumptions = [
        "Syncing every H steps divides each step's communication (ports, module, WAN and d) by H.",
        "Steps to target are assumed unchanged by H: the largest assumption on this page.",
        f"WAN at the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}.",
    ]
    return view


def h_chart(view: View, sc: Scenario, interactive: bool = False):
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


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return h_view(sc, results, sw)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets)."""
    return {KEY: h_chart(view, sc, interactive)}
