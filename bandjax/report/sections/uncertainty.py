"""Report section: how sure the answers are.

results.json gains ``uncertainty``:

- ``point_values``: true where the scenario has no uncertain inputs (``Scenario.uncertain``, a
  file's ``[uncertain]`` table): every answer of the report is then a point value.
- ``weakest_input``: the single-seed steps that rules take (E' takes E's on the hypothesis
  basis), with the compared pairs whose winner at the scenario's bandwidth they decide (the
  winner differs between the bases).
- with uncertain inputs: ``inputs`` (each with its distribution, in units), ``samples``, ``seed``
  and ``break_even_GBps``: per compared pair (:data:`bandjax.variants.DEFAULT_PAIRS`) and basis,
  the bandwidth break-even's 5%, 50% and 95% quantiles by Monte Carlo and by the delta method
  (GB/s; ``point``: the scenario's own, ``delta_method_centre``: at the inputs' means), the Monte
  Carlo quantiles' Bowley ``skewness`` and whether it is ``skewed`` (beyond
  :data:`bandjax.uncertainty.SKEWED` in size: the delta method's symmetric interval then
  misplaces the mass, and the Monte Carlo interval is shown first), the share of samples that
  cross in range, and ``p_a_wins``, the probability that a reaches the target first, aligned with
  ``bandwidth_GBps``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ... import distributions as _dist
from ...metrics import steps_to_target, time_to_target_once_s
from ...scenario import BASES, Scenario, field_table
from ...variants import DEFAULT_PAIRS
from .. import constants as C
from .common import (ANY, HEIGHT, WIDTH, Results, Section, View, _basis_filter, _conclude_by_basis,
                     _finish, _log_x, _num, _params, _sel, fmt_GBps, g3, g6, setting_text, short)


@dataclass(frozen=True)
class Uncertainty(Section):
    """How sure the answers are: the single-seed steps that rules take and the pairs they decide;
    with uncertain inputs, each compared pair's break-even intervals (GB/s) and the probability
    that its first variant wins along ``bandwidth_GBps``."""

    KEY: ClassVar[str] = "uncertainty"

    point_values: bool
    weakest_input: list
    wan_GBps: float
    short: dict  # variant id -> short label
    inputs: list | None = None  # only with uncertain inputs, as are the fields below
    samples: int | None = None
    seed: int | None = None
    bandwidth_GBps: list | None = None
    break_even_GBps: list | None = None


KEY = Uncertainty.KEY

SAMPLES = 2000  # Monte Carlo draws per pair; ctx["uncertainty_samples"] overrides


SEED = 0


# where the probability of winning is computed: 16 points a decade (3 significant digits) from
# 0.1 to 1,000 GB/s, the decades and 12.5 GB/s exactly; the scenario's own bandwidth is added
P_WINS_GRID_GBps = tuple(sorted({float(f"{x:.3g}") for x in np.geomspace(0.1, 1000.0, 65)}
                                | {0.1, 1.0, 10.0, 12.5, 100.0, 1000.0}))


def p_wins_grid(sc: Scenario) -> tuple[float, ...]:
    """:data:`P_WINS_GRID_GBps` with the scenario's WAN bandwidth, GB/s, ascending."""
    return tuple(sorted(set(P_WINS_GRID_GBps) | {float(sc.wan_Bps) / 1e9}))


def _pairs(sc: Scenario) -> list[tuple[str, str]]:
    return [(a, b) for a, b in DEFAULT_PAIRS if a in sc.ids and b in sc.ids]


def weakest_input(sc: Scenario) -> list[dict]:
    """The steps that rules take from a single measurement, and which compared pairs' winners
    they decide: the bandwidths of :data:`P_WINS_GRID_GBps` where the winner differs between the
    bases."""
    grid = np.asarray(P_WINS_GRID_GBps)
    at = sc.replace(wan_Bps=grid * 1e9)
    T = {basis: np.asarray(time_to_target_once_s(at, steps_to_target(sc, None, basis)))
         for basis in BASES}
    out = []
    for v in sc.variants:
        if v.rule is None:
            continue
        for src in v.rule.hypothesis:
            decides = []
            for a, b in _pairs(sc):
                ia, ib = sc.ids.index(a), sc.ids.index(b)
                wins = {basis: T[basis][:, ia] < T[basis][:, ib] for basis in BASES}
                differ = wins[BASES[0]] != wins[BASES[1]]
                if v.id in (a, b) and differ.any():
                    decides.append({"a": a, "b": b, "bandwidth_GBps": [float(x) for x in grid[differ]],
                                    **{f"a_wins_{basis}": [bool(x) for x in wins[basis][differ]]
                                       for basis in BASES}})
            out.append({"variant": src, "follower": v.id, "steps": sc.steps_of(src),
                        "enob_bits": float(sc.enob), "decides": decides})
    return out


def build(sc: Scenario, ctx: dict) -> Uncertainty:
    result: dict = {"point_values": not sc.uncertain, "weakest_input": weakest_input(sc),
                    "wan_GBps": float(sc.wan_Bps) / 1e9,
                    "short": {v.id: v.short for v in sc.variants}}
    if sc.uncertain:
        from ...breakeven import break_even
        from ...uncertainty import propagate_break_even

        samples = int(ctx.get("uncertainty_samples", SAMPLES))
        grid = p_wins_grid(sc)
        result.update(inputs=[_dist.describe(n, d, field_table()) for n, d in sc.uncertain], samples=samples,
                      seed=SEED, bandwidth_GBps=list(grid), break_even_GBps=[])
        for a, b in _pairs(sc):
            basis_dependent = sc.variant(a).basis_dependent or sc.variant(b).basis_dependent
            for basis in BASES if basis_dependent else BASES[:1]:
                r = propagate_break_even(sc, a, b, None, samples, SEED, basis=basis,
                                         bandwidth=grid)
                result["break_even_GBps"].append({
                    "a": a, "b": b, "basis": basis if basis_dependent else None,
                    "point": float(break_even(sc, a, b, basis=basis).x[..., 0]) / 1e9,
                    "delta_method_centre": r.nominal_GBps,
                    "monte_carlo_5_50_95": [float(x) for x in r.quantiles_GBps],
                    "skewness": r.skewness, "skewed": r.skewed,
                    "delta_method_5_50_95": [float(x) for x in r.delta_GBps],
                    "crossing_share": r.crossing_share,
                    "p_a_wins": [float(x) for x in r.p_a_wins]})
    return Uncertainty(**result)


def _interval(q) -> str:
    return "-" if q[0] is None else f"{g3(q[0])} to {g3(q[2])} GB/s"


def _mc_first(e: dict) -> bool:
    """Whether a pair's Monte Carlo interval is the one to show first: where its quantiles are
    skewed (the delta method's symmetric interval misplaces them) or the delta method has none."""
    return bool(e.get("skewed")) or None in e["delta_method_5_50_95"]


def intervals_in_order(e: dict, interval=_interval) -> tuple[str, str]:
    """A pair's two 5% to 95% break-even intervals as (first, second), each labelled with its
    method: the Monte Carlo's first where :func:`_mc_first`, else the delta method's; a skewed
    pair's delta interval is marked symmetric and its Monte Carlo one carries the skewness."""
    mc, dm = e["monte_carlo_5_50_95"], e["delta_method_5_50_95"]
    if None in mc and None in dm:
        return "-", "-"  # no sample crosses in the searched range
    if e.get("skewed"):
        mc_words = f"Monte Carlo: {interval(mc)} (skewed, {e['skewness']:+.2f})"
        dm_words = f"delta method, symmetric: {interval(dm)}"
    else:
        mc_words, dm_words = f"Monte Carlo: {interval(mc)}", f"delta method: {interval(dm)}"
    return (mc_words, dm_words) if _mc_first(e) else (dm_words, mc_words)


def _range(bw) -> str:
    return f"{g6(bw[0])} GB/s" if len(bw) == 1 else f"{g6(bw[0])} to {g6(bw[-1])} GB/s"


def _g(x, unit: str = "GB/s") -> str:
    """``x`` with its unit; "-" for no value (no crossing in the searched range)."""
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{g3(x)} {unit}"


def weakest_words(r: Uncertainty) -> list[str]:
    """The single-seed steps of ``r`` (the section) and what they decide, in words."""
    short = r.short
    weak = []
    for w in r.weakest_input:
        line = (f"{short[w['variant']]}'s steps to target ({w['steps']:,.0f} steps at ENOB "
                f"{g6(w['enob_bits'])} bits, one seed), which {short[w['follower']]} takes")
        if w["decides"]:
            line += (": they decide whether " + ", ".join(
                f"{short[d['a']]} beats {short[d['b']]} (at {_range(d['bandwidth_GBps'])})"
                for d in w["decides"]) + "; there (of the bandwidths in results.json) the winner differs "
                "between the bases")
        weak.append(line)
    return weak


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.uncertainty
    if r is None:
        return ""
    short = r.short
    out = ["## Uncertainty", ""]
    weak = weakest_words(r)
    if r.point_values:
        out.append("Every answer of this report is a point value: the scenario has no uncertain "
                   "inputs (add an `[uncertain]` table to its file, e.g. "
                   "`wan = { normal = [\"12.5 GB/s\", \"1 GB/s\"] }`).")
        if weak:
            out += ["", "The weakest input is " + "; ".join(weak) + "."]
        return "\n".join(out)
    out += [f"Uncertain inputs ({r.samples} Monte Carlo samples, seed {r.seed}): "
            + "; ".join(f"`{i}`" for i in r.inputs) + ".", ""]
    if weak:
        out += ["Single-seed steps: " + "; ".join(weak) + ".", ""]
    out += ["Bandwidth break-evens, GB/s per WAN direction: the 5% to 95% interval by the delta "
            "method and by Monte Carlo. Where the Monte Carlo quantiles are skewed, the delta "
            "method's symmetric interval misplaces them, so the Monte Carlo interval comes first.", "",
            "| pair | basis | point | MC median | 5% to 95% | the other method's 5% to 95% | "
            "samples crossing |",
            "|---|---|---|---|---|---|---|"]
    for e in r.break_even_GBps:
        first, second = intervals_in_order(e)
        out.append(f"| {short[e['a']]} vs {short[e['b']]} | {e['basis'] or 'either'} | "
                   f"{_g(e['point'])} | {_g(e['monte_carlo_5_50_95'][1])} | {first} | {second} | "
                   f"{100 * e['crossing_share']:.0f}% |")
    bw = r.bandwidth_GBps
    picks = [i for i, b in enumerate(bw) if b in (0.1, 1.0, 12.5, 100.0, 1000.0)]
    out += ["", "Probability that the first of the pair reaches the target first "
            "(results.json: `p_a_wins`, aligned with `bandwidth_GBps`):", "",
            "| pair | basis | " + " | ".join(f"{g6(bw[i])} GB/s" for i in picks) + " |",
            "|---|---|" + "---|" * len(picks)]
    for e in r.break_even_GBps:
        out.append(f"| {short[e['a']]} vs {short[e['b']]} | {e['basis'] or 'either'} | "
                   + " | ".join(f"{100 * e['p_a_wins'][i]:.0f}%" for i in picks) + " |")
    return "\n".join(out)


# ------------------------------------------------------------------------------ page view and chart


def _pair(e: dict) -> str:
    return f"{short(e['a'])} vs {short(e['b'])}"


def _mc(e: dict):
    """(5%, 50%, 95%) of a pair's Monte Carlo break-evens, GB/s, or None where no sample crossed."""
    q = e["monte_carlo_5_50_95"]
    return None if any(x is None for x in q) else tuple(float(x) for x in q)


def _page_interval(q) -> str:
    return "-" if None in q else f"{g3(q[0])} to {g3(q[2])} GB/s"


def _uncertainty_words(u: Uncertainty, basis: str) -> list[str]:
    bw = list(u.bandwidth_GBps)
    i0 = int(np.argmin([abs(math.log(b / u.wan_GBps)) for b in bw]))
    words = []
    for e in u.break_even_GBps:
        if e["basis"] not in (None, basis):
            continue
        p = float(e["p_a_wins"][i0])
        s = (f"{_pair(e)}: {short(e['a'])} reaches the target first in {100 * p:.0f}% of samples "
             f"at the scenario's {fmt_GBps(bw[i0])}")
        q = _mc(e)
        if q is None:
            s += "; no sample has a break-even in the searched range"
        else:
            share = e["crossing_share"]
            s += (f"; 90% of the break-evens lie between {g3(q[0])} and {g3(q[2])} GB/s, median "
                  f"{g3(q[1])} GB/s ({'every sample crosses' if share == 1 else f'{100 * share:.0f}% of samples cross'})")
        words.append(s + ".")
    return words


def uncertainty_view(sc: Scenario, results: Results | dict | None) -> View:
    """How firm the answers are: with uncertain inputs, each compared pair's probability of
    winning against bandwidth and its break-even's 90% interval; without, a note that every answer
    is a point value and which input is weakest."""
    results = Results.of(results)  # typed sections, or a results dict read into them

    view = View("uncertainty", "How sure: uncertain inputs and the chance of winning")
    u = results.uncertainty
    if u is None:
        view.lacks("The uncertainty section's results (break-even intervals and the probability of "
                   "winning)", "uncertainty")
        return view
    weak = weakest_words(u)
    if u.point_values:
        view.say("Every answer on this page is a point value: the scenario has no uncertain inputs "
                 "(an [uncertain] table in its file, or Scenario.uncertain, adds them; then this "
                 "section draws each pair's probability of winning against bandwidth).")
        if weak:
            view.say("The weakest input is " + "; ".join(weak) + ".")
        return view
    rows, intervals = [], []
    for e in u.break_even_GBps:
        b = e["basis"] or ANY
        rows += [{"pair": _pair(e), "basis": b, "GBps": _num(g), "p": _num(p)}
                 for g, p in zip(u.bandwidth_GBps, e["p_a_wins"])]
        q = _mc(e)
        if q is not None:
            intervals.append({"pair": _pair(e), "basis": b, "lo": _num(q[0]), "mid": _num(q[1]),
                              "hi": _num(q[2]), "p": 0.5})
    view.data = {"p_wins": rows, "intervals": intervals, "wan_GBps": _num(u.wan_GBps),
                 "pairs": list(dict.fromkeys(r["pair"] for r in rows))}
    view.table = {"columns": ["pair", "basis", "break-even (point)", "5% to 95%",
                              "the other method's 5% to 95%", "samples crossing"],
                  "rows": [[_pair(e), e["basis"] or "either",
                            "-" if e["point"] is None else fmt_GBps(e["point"]),
                            *intervals_in_order(e, _page_interval),
                            f"{100 * e['crossing_share']:.0f}%"] for e in u.break_even_GBps],
                  "nowrap": [2, 3, 4],
                  "caption": (f"Bandwidth break-evens per WAN direction under the uncertain inputs "
                              f"({u.samples} samples, seed {u.seed}).")}
    _conclude_by_basis(view, sc, {b: _uncertainty_words(u, b) for b in BASES})
    view.assumptions = [
        f"Monte Carlo over {u.samples} samples (seed {u.seed}) of the uncertain inputs: "
        + "; ".join(u.inputs) + ". Every other input is the scenario's value.",
        "The probability is the share of samples in which the first of the pair reaches the "
        "target loss first at that WAN bandwidth; the bar at 50% spans the samples' break-evens "
        "from 5% to 95%, with a diamond at the median.",
        *(["Single-seed steps: " + "; ".join(weak) + "."] if weak else []),
        f"At {setting_text(sc)}: the ENOB and budget controls do not move this section, the "
        "basis control does.",
    ]
    return view


INTERVAL_LEGEND = "break-even, 5% to 95% of samples (diamond: median)"


def uncertainty_chart(view: View, sc: Scenario, interactive: bool = False):
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
            "scenario": [{"GBps": d["wan_GBps"], "label": f"scenario: {g3(d['wan_GBps'])} GB/s"}]}
    return _finish(chart, legend="bottom" if interactive else "right"), data


def view(sc: Scenario, results: Results, sw, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return uncertainty_view(sc, results)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets): the break-even intervals, when there are any."""
    drawn = uncertainty_chart(view, sc, interactive)
    return {} if drawn is None else {KEY: drawn}
