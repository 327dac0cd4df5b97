"""Page section "Energy": energy per step by part, and to the target. Drawn from the core section
and the report's one pass."""

from __future__ import annotations

import json

import altair as alt
import numpy as np

from ...scenario import Scenario
from ..constants import ENERGY_PARTS
from ..passes import Sweeps
from .common import (HEIGHT, Results, View, _bar_rows, _conclude, _filter, _finish, _params, _sel,
                     bar_order, baseline, fmt_GBps, g3, g6, pick, short, tidy, variant_colors)

KEY = "energy"


def _energy_words(per_step, to_target, at) -> list[str]:
    """The variant that uses the least energy per step and to the target, against the baseline."""
    step_tot: dict[str, float] = {}
    for r in pick(per_step, **at):
        step_tot[r["short"]] = step_tot.get(r["short"], 0.0) + (r["J"] or 0.0)
    tgt: dict[str, float] = {}
    for r in pick(to_target, **at):
        if r["kJ"] is not None:
            tgt[r["bar"]] = tgt.get(r["bar"], 0.0) + r["kJ"]
    base = short(baseline())
    words = []
    if step_tot:
        lo = min(step_tot, key=step_tot.get)
        words.append(f"Per step {lo} uses the least energy: {g3(step_tot[lo])} J, against "
                     f"{g3(step_tot[base])} J for {base}.")
    if tgt:
        lo = min(tgt, key=tgt.get)
        words.append(f"To the target {lo} uses the least: {g3(tgt[lo])} kJ"
                     + (f", against {g3(tgt[base])} kJ for {base}." if base in tgt else "."))
    return words


def energy_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    ds = sw.point[["energy_per_step_J", "steps_to_target", "status"]]
    parts = list(ENERGY_PARTS)
    idx = [list(ds.energy.values).index(p) for p in parts]
    per_step = tidy(sc, ds, (), {"J": lambda d: d.energy_per_step_J.isel(energy=idx)},
                    extra=("part", parts))
    to_target = tidy(sc, ds, (), {"kJ": lambda d: (d.energy_per_step_J.isel(energy=idx)
                                                   * d.steps_to_target.where(np.isfinite(d.steps_to_target))) / 1e3},
                     extra=("part", parts))
    _bar_rows(to_target)
    view = View("energy", "Energy per step and to target")
    view.data = {"per_step": per_step, "to_target": to_target}
    _conclude(view, sc, lambda at: _energy_words(per_step, to_target, at))
    view.assumptions = [
        f"Compute = GPU static power x step time + energy per FLOP x 6 P tokens, for N workers; "
        f"network = {g6(float(sc.link_J_per_bit) * 1e12)} pJ/bit on ports and module ports, "
        f"{g6(float(sc.wan_J_per_bit) * 1e12)} pJ/bit on the WAN (both directions); modules = "
        f"{g6(float(sc.module_W))} W each for E and E'.",
        f"At the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}; energy to target = measured steps "
        "x energy per step.",
    ]
    return view


PART_COLORS = {"compute": "#4c78a8", "network": "#f58518", "modules": "#54a24b"}


def energy_chart(view: View, sc: Scenario, interactive: bool = False):
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
        x=alt.X("bar:N", title=None, sort=bar_order(sc), axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("kJ:Q", title="energy to target (kJ)"), color=color, order=order,
        tooltip=[alt.Tooltip("bar:N", title="variant"), "part:N",
                 alt.Tooltip("kJ:Q", format=".4g", title="kJ")],
    ).properties(width=290, height=HEIGHT - 20, title="to target")
    chart = alt.hconcat(per_step, to_target, spacing=40)
    if interactive:
        chart = chart.add_params(*_params(True, sc))
    return _finish(chart), {"per_step": view.data["per_step"], "to_target": view.data["to_target"]}


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return energy_view(sc, results, sw)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets)."""
    return {KEY: energy_chart(view, sc, interactive)}
