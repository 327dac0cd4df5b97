"""Report section and ``bandjax wan``: the step on a WAN shared with other jobs (docs/model.md sections
11 and 13).

The event engine (:mod:`events`) runs every variant at loads 0, 0.5 and 0.9 for several seeds, on
the scenario's K DCs and WAN topology (every directed link in use shared with other jobs);
the section gives the step at seed 0, the mean over seeds with a 95% interval (Student t), how
much the step grows against load 0, the queueing approximation (:mod:`bandjax.queueing`) beside
it, a trace of the first steps for the explorer page, and load-0 engine runs over a range of
bandwidths that must sit on the closed-form curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ... import links as _links
from ... import variants as _v
from ...scenario import Scenario
from .common import (HEIGHT, PADDING_PX, WIDTH, Results, Section, View, _finish, _num,
                     _variant_color, short)


@dataclass(frozen=True)
class SharedWan(Section):
    """The step on a WAN shared with other jobs, from the event engine (docs/model.md sections 11
    and 13): per variant, lists along ``loads`` (ms; growth against load 0; utilisation shares),
    the queueing approximation beside them, load-0 runs that must sit on the closed forms, and a
    trace of the first steps."""

    KEY: ClassVar[str] = "shared_wan"

    seed: int
    loads: list
    steps: int
    seeds: int
    bandwidth_GBps: float
    dcs: int
    topology: str
    links: int
    step_ms: dict  # [variant] along loads, seed 0
    mean_step_ms: dict | None  # [variant] along loads, mean over seeds
    ci95_ms: dict  # [variant] [lo, hi] along loads
    growth: dict | None  # [variant] mean step / the load-0 closed-form step
    approx_step_ms: dict | None
    p95_ms: dict
    wan_utilisation: dict
    wan_utilisation_max: dict
    approx_accuracy: float | None
    approx_accuracy_basis: str | None
    approx_accuracy_by_cluster: list
    approx_max_rel_err: float | None
    load0_points: list  # {variant, GBps, step_ms, time_to_target_s, basis}
    load0_max_rel_err: float | None
    trace: dict
    approx_left_out: str | None = None  # why the approximation is left out (links that differ)


KEY = SharedWan.KEY

LOADS = (0.0, 0.5, 0.9)


SEEDS = 8  # seeds 0 .. SEEDS-1


STEPS = 400  # steps per run


LOAD0_GBPS = (0.5, 2.0, 12.5, 100.0, 500.0)


TRACE_LOAD = 0.9


BASIS = "hypothesis"


SCHEDULER = None  # None: a LocalCluster for the report's runs; "inline": this process


def _options(ctx: dict) -> dict:
    """Run sizes, overridable through ``ctx["shared_wan"]`` (loads, seeds, steps, scheduler, and
    ``dcs`` / ``topology`` to run the section on another cluster than the scenario's)."""
    opts = {"loads": LOADS, "seeds": SEEDS, "steps": STEPS, "scheduler": SCHEDULER, "n_workers": 2,
            "progress": True, "dcs": None, "topology": None}
    opts.update(ctx.get(KEY, {}))
    return opts


LINKS_DIFFER = ("The queueing approximation is left out: the scenario's WAN links differ, and it "
                "takes the links in use as identical; the event engine gives each link its own "
                "capacity and latency.")


def with_cluster(sc: Scenario, dcs=None, topology=None) -> Scenario:
    """``sc`` on ``dcs`` data centres joined as ``topology`` ("ring" or "mesh"); None keeps the
    scenario's. With per-link values K comes from the links table: ``dcs`` must then be that K."""
    changes = {}
    if dcs is not None and sc.links is not None:
        if int(dcs) != sc.links.K:
            raise ValueError(f"dcs = {dcs!r}: this scenario has per-link values for "
                             f"{sc.links.K} DCs ({', '.join(sc.links.names)}), so K comes from its "
                             "links table; leave dcs out or give that table another size")
    elif dcs is not None:
        changes["dcs"] = dcs
    if topology is not None:
        if topology not in _v.TOPOLOGIES:
            raise ValueError(f"topology = {topology!r}: must be one of "
                             f"{', '.join(map(repr, _v.TOPOLOGIES))}")
        changes["topology"] = float(_v.TOPOLOGIES.index(topology))
    return sc.replace(**changes) if changes else sc


def cluster_text(sc: Scenario) -> str:
    """"K DCs, ring: L directed WAN links" for a header."""
    K = int(float(sc.dcs))
    topology = _v.TOPOLOGIES[int(float(sc.topology))]
    links = K * (K - 1) if topology == "mesh" else K
    return f"{K} DCs, {topology}: {links} directed WAN links"


def ci95(samples) -> tuple[float, float]:
    """Student-t 95% interval of the mean: mean -/+ t(0.975, n-1) s / sqrt(n); NaN for one
    sample, which has no interval."""
    from scipy.stats import t

    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return math.nan, math.nan
    half = float(t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return float(x.mean() - half), float(x.mean() + half)


def build(scenario: Scenario, ctx: dict) -> SharedWan:
    """Engine runs and the approximation for ``scenario``; see the module docstring."""
    import events
    import jax.numpy as jnp
    from events.engine import TRACE_STEPS
    from events.plan import sync_every

    from ...queueing import ACCURACY_BY_CLUSTER, accuracy, shared_wan_step_s
    from ...step import step_s

    o = _options(ctx)
    scenario = with_cluster(scenario, o["dcs"], o["topology"])
    loads = [float(x) for x in o["loads"]]
    seeds = list(range(int(o["seeds"])))
    H = sync_every(scenario)
    with events.client(o["scheduler"], o["n_workers"]) as where:
        runs = events.sweep(scenario, load=loads, seed=seeds, steps=int(o["steps"]),
                            scheduler=where, progress=o["progress"])
        load0 = events.sweep(scenario, load=0.0, seed=0, bandwidth=list(LOAD0_GBPS),
                             steps=2 * H, scheduler=where, progress=o["progress"])
    ids = list(runs.variant.values)
    step_ms = runs.step_s * 1e3
    left_out = LINKS_DIFFER if _links.differ(scenario) else None
    approx = (None if left_out else
              np.asarray(shared_wan_step_s(scenario, jnp.asarray(loads))) * 1e3)
    mean = step_ms.mean("seed")
    closed_ms = np.asarray(step_s(scenario)) * 1e3  # the load-0 step: the engine equals it there
    stated = {"accuracy": None, "basis": None} if left_out else accuracy(scenario)
    out = {"seed": 0, "loads": loads, "steps": int(o["steps"]), "seeds": len(seeds),
           "bandwidth_GBps": float(scenario.wan_Bps) / 1e9,
           "dcs": int(float(scenario.dcs)),
           "topology": _v.TOPOLOGIES[int(float(scenario.topology))],
           "links": int(float(np.max(traffic_links(scenario)))),
           "step_ms": {}, "mean_step_ms": {}, "ci95_ms": {}, "growth": {}, "approx_step_ms": {},
           "p95_ms": {}, "wan_utilisation": {}, "wan_utilisation_max": {},
           "approx_accuracy": stated["accuracy"], "approx_accuracy_basis": stated["basis"],
           "approx_accuracy_by_cluster": [{"dcs": k, "topology": t, "accuracy": v}
                                          for (k, t), v in ACCURACY_BY_CLUSTER.items()]}
    worst = 0.0
    for i, vid in enumerate(ids):
        at = scenario.ids.index(vid)
        s = step_ms.sel(variant=vid)
        m = mean.sel(variant=vid).values
        out["step_ms"][vid] = [float(x) for x in s.sel(seed=0).values]
        out["mean_step_ms"][vid] = [float(x) for x in m]
        out["ci95_ms"][vid] = [list(ci95(s.sel(load=x).values)) for x in loads]
        out["growth"][vid] = [float(x / closed_ms[at]) for x in m]
        out["p95_ms"][vid] = [float(x) for x in (runs.step_p95_s.sel(variant=vid, seed=0) * 1e3).values]
        out["wan_utilisation"][vid] = [float(x) for x in runs.wan_utilisation.sel(variant=vid, seed=0).values]
        out["wan_utilisation_max"][vid] = [
            float(x) for x in runs.wan_utilisation_max.sel(variant=vid, seed=0).values]
        if approx is not None:
            a = approx[:, at]
            out["approx_step_ms"][vid] = [float(x) for x in a]
            worst = max(worst, float(np.max(np.abs(a / m - 1))))
    out["approx_max_rel_err"] = None if left_out else worst
    if left_out:
        out["approx_step_ms"], out["approx_left_out"] = None, left_out

    # load 0 over bandwidths: the engine against the closed form, and dots for the page
    points, err = [], 0.0
    for g in LOAD0_GBPS:
        sc_g = scenario.replace(wan_Bps=g * 1e9)
        closed = np.asarray(step_s(sc_g))
        for vid in ids:
            eng = float(load0.step_s.sel(bandwidth=g, variant=vid))
            err = max(err, abs(eng / closed[scenario.ids.index(vid)] - 1))
            steps = scenario.steps.lookup(vid, float(scenario.enob), BASIS, scenario.variants)
            ttt = steps * eng if math.isfinite(steps) else None
            points.append({"variant": vid, "GBps": g, "step_ms": eng * 1e3,
                           "time_to_target_s": ttt, "basis": BASIS})
    out["load0_points"] = points
    out["load0_max_rel_err"] = err

    # the trace follows the registry's first variant (the study's dense AdamW baseline)
    trace_variant = scenario.ids[0]
    run = events.run(scenario, trace_variant, TRACE_LOAD, seed=0, steps=TRACE_STEPS)
    out["trace"] = {"variant": trace_variant, "load": TRACE_LOAD,
                    "bandwidth_GBps": float(scenario.wan_Bps) / 1e9, **run.trace}
    return SharedWan(**out)


def traffic_links(sc: Scenario):
    """Directed WAN links in use: K on a ring, K(K-1) on a mesh."""
    K, mesh = float(sc.dcs), float(sc.topology) == 1
    return np.asarray(K * (K - 1) if mesh else K)


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.shared_wan
    if r is None:
        return ""
    loads = r.loads
    approx = r.approx_step_ms is not None
    cols = "seed 0 / mean [95% CI] / growth" + (" / approx." if approx else "")
    head = " | ".join(f"load {x:g}: {cols}" for x in loads)
    K, topology = r.dcs, r.topology
    lines = [
        "## Shared WAN (event engine)",
        "",
        f"{K} DCs joined as a {topology}: each of the {r.links} directed WAN links in "
        f"use ({r.bandwidth_GBps:g} GB/s " + ("the slowest; each at its own" if r.approx_left_out
                                             else "each") + ") is a first-come-first-served link "
        "shared with other jobs' Poisson 1 MB transfers at load x capacity; the sync's bytes on "
        "each link go as 1 MB messages one after another, and the step ends when every link is "
        "done. Step times in ms: one run of "
        f"{r.steps} steps at seed {r.seed}, the mean over {r.seeds} seeds with its 95% "
        "interval (Student t), its growth against the load-0 step (the closed form, which the "
        "engine equals at load 0)"
        + (", and the queueing approximation "
           f"(stated accuracy {r.approx_accuracy:.0%} {r.approx_accuracy_basis or ''}; "
           f"largest deviation here {r.approx_max_rel_err:.1%})" if approx else "")
        + ". Budget [free] unless the scenario sets one; d calibrated to the study's step times."
        + (f" {r.approx_left_out}" if r.approx_left_out else ""),
        "",
        f"| variant | {head} |",
        "|---|" + "---|" * len(loads),
    ]
    # the scenario's own variants (a user's included), as the report's setup lists them
    shorts = results.names()
    for vid, s in r.step_ms.items():
        cells = []
        for j in range(len(loads)):
            lo, hi = r.ci95_ms[vid][j]
            interval = "[n/a: one seed]" if lo is None else f"[{lo:.3f}, {hi:.3f}]"
            cells.append(f"{s[j]:.3f} / {r.mean_step_ms[vid][j]:.3f} {interval} / "
                         f"x{r.growth[vid][j]:.2f}"
                         + (f" / {r.approx_step_ms[vid][j]:.3f}" if approx else ""))
        lines.append(f"| {shorts.get(vid, vid)} | " + " | ".join(cells) + " |")
    measured = r.approx_accuracy_by_cluster
    if approx and measured and all(m["accuracy"] is not None for m in measured):
        lines += ["", "The approximation's worst error against the engine's mean (every variant, "
                  "12.5 GB/s per link, loads 0.5 to 0.95): "
                  + ", ".join(f"K = {m['dcs']} {m['topology'] if m['dcs'] > 2 else ''}"
                              .rstrip() + f" {m['accuracy']:.0%}" for m in measured) + "."]
    lines += [
        "",
        f"At load 0 the engine matches the closed-form step to {r.load0_max_rel_err:.1e} "
        f"(largest relative difference over every variant at "
        f"{', '.join(f'{p:g}' for p in sorted({p['GBps'] for p in r.load0_points}))} GB/s).",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ page view and chart


def shared_wan_view(sc: Scenario, results: Results | dict | None) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    view = View("shared_wan", "Shared WAN: the event engine with other jobs' traffic")
    sw = results.shared_wan
    if sw is None or not sw.loads:
        view.lacks("The shared-WAN engine's results", "shared_wan")
        return view
    loads = list(sw.loads)
    # the 95% intervals belong to the mean over seeds, so show that mean beside them
    over_seeds = bool(sw.mean_step_ms)
    step = sw.mean_step_ms or sw.step_ms or {}
    ci = sw.ci95_ms or {}
    approx = sw.approx_step_ms or {}
    rows, table = [], []
    for vid in [v for v in sc.ids if v in step]:
        for j, load in enumerate(loads):
            lo_hi = ci.get(vid, [None] * len(loads))[j] if vid in ci else None
            if lo_hi is not None and lo_hi[0] is None:  # one seed: no interval
                lo_hi = None
            r = {"variant": vid, "short": short(vid), "load": _num(load),
                 "step_ms": _num(step[vid][j]) if step[vid][j] is not None else None,
                 "lo_ms": _num(lo_hi[0]) if lo_hi else None, "hi_ms": _num(lo_hi[1]) if lo_hi else None}
            if vid in approx and approx[vid][j] is not None:
                r["approx_ms"] = _num(approx[vid][j])
            rows.append(r)
    # A 95% interval over few seeds can reach below zero; the log axis cannot draw that, so such
    # a bar is drawn from the smallest step on the chart (the tooltip and table keep the bound).
    floor = min((r[k] for r in rows for k in ("step_ms", "lo_ms", "approx_ms")
                 if r.get(k) is not None and r[k] > 0), default=None)
    for r in rows:
        r["lo_drawn_ms"] = r["lo_ms"] if r["lo_ms"] is None or r["lo_ms"] > 0 else floor
    for j, load in enumerate(loads):
        cells = [f"{float(load):g}"]
        for vid in [v for v in sc.ids if v in step]:
            s = step[vid][j]
            cell = "n/a" if s is None else f"{float(s):.4g}"
            if vid in ci and ci[vid][j] and ci[vid][j][0] is not None:
                lo, hi = ci[vid][j]
                cell += f" [{float(lo):.4g}, {float(hi):.4g}]"
            cells.append(cell)
        table.append(cells)
    view.table = {"columns": ["load"] + [f"{short(v)} (ms)" for v in sc.ids if v in step],
                  "rows": table,
                  "caption": (f"Mean step time by load of other jobs' traffic over "
                              f"{sw.seeds} seeds, with 95% intervals; "
                              f"{sw.steps} steps per run." if over_seeds else
                              f"Mean step time by load of other jobs' traffic; "
                              f"{sw.steps} steps, seed {sw.seed}.")}
    view.data = {"steps": rows}
    tr = sw.trace
    if isinstance(tr, dict) and tr.get("t_ms"):
        trows = []
        for j, t in enumerate(tr["t_ms"]):
            # queues are counted in transfers (messages of up to 1 MB); bytes left in MB
            for key, label, scale, unit in (
                    ("queue_out", "transfers queued, outbound", 1.0, "transfers"),
                    ("queue_in", "transfers queued, inbound", 1.0, "transfers"),
                    ("sync_bytes_left", "sync bytes left (MB)", 1e-6, "MB")):
                if key in tr and tr[key][j] is not None:
                    trows.append({"j": j, "t_ms": _num(t), "series": label, "unit": unit,
                                  "value": _num(float(tr[key][j]) * scale)})
        view.data["trace"] = trows
        view.data["trace_meta"] = {"variant": tr.get("variant"), "load": tr.get("load"),
                                   "GBps": tr.get("bandwidth_GBps"), "n": len(tr["t_ms"])}
    else:
        view.lacks("The engine's trace (queues and the sync's progress)", "shared_wan.trace")
    if loads and step:
        top = max(range(len(loads)), key=lambda j: loads[j])
        parts = []
        for vid in [v for v in sc.ids if v in step]:
            s0, s1 = step[vid][0], step[vid][top]
            if s0 and s1:
                parts.append(f"{short(vid)} {float(s1):.4g} ms ({float(s1) / float(s0):.3g}x load "
                             f"{float(loads[0]):g})")
        if parts:
            view.conclusion.append(f"At load {float(loads[top]):g} the mean steps take " +
                                   ", ".join(parts) + ".")
        best0 = min((v for v in step if step[v][0] is not None), key=lambda v: step[v][0], default=None)
        best1 = min((v for v in step if step[v][top] is not None), key=lambda v: step[v][top], default=None)
        if best0 and best1:
            view.conclusion.append(
                f"Fastest mean step at load {float(loads[0]):g}: {short(best0)}; at load "
                f"{float(loads[top]):g}: {short(best1)}.")
    view.assumptions = [
        "Each WAN direction is one first-come-first-served link; other jobs send 1 MB transfers as "
        "a Poisson process at load x bandwidth.",
        "The sync's WAN bytes go as 1 MB messages, one after another; a run is seeded.",
        "Queues are counted in transfers waiting on the link (other jobs' and the sync's, up to "
        "1 MB each); the sync's bytes left (both directions) in MB (1e6 bytes).",
    ]
    if approx:
        acc = sw.approx_accuracy
        view.assumptions.append(
            "Dashed lines: the queueing approximation of the mean step"
            + (f" (stated accuracy {float(acc):.0%})" if isinstance(acc, (int, float)) else "")
            + "; solid lines with points: the engine's mean, error bars its 95% interval (one that "
            "reaches below zero is drawn from the chart's smallest step).")
    if sw.approx_left_out:
        view.assumptions.append(sw.approx_left_out)
    return view


ENGINE_LEGEND = "event engine, with its 95% interval"


APPROX_LEGEND = "queueing approximation"


def shared_wan_charts(view: View, sc: Scenario, interactive: bool = False):
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
        title = (f"trace: {short(meta['variant']) if meta.get('variant') in sc.ids else meta.get('variant')}"
                 f", load {meta.get('load')}, {meta.get('GBps')} GB/s")
        chart = alt.layer(*layers).properties(width="container" if interactive else WIDTH,
                                              height=HEIGHT - 60, title=title)
        if params:
            chart = chart.add_params(*params)
        out["trace"] = (_finish(chart), {"trace": d["trace"]})
    return out


def view(sc: Scenario, results: Results, sw, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return shared_wan_view(sc, results)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets): ``shared_wan_steps`` and, with a trace, ``_trace``."""
    return {f"{KEY}_{name}": drawn for name, drawn in shared_wan_charts(view, sc, interactive).items()}


def page_html(view: View, specs: dict, page: dict) -> dict[str, str]:
    """The trace's play button above the charts (the page's data learns the trace's length)."""
    if "shared_wan_trace" not in specs:
        return {}
    page["trace_n"] = view.data["trace_meta"]["n"]
    return {"top": '<div class="player"><button id="play-trace" type="button">&#9654; Play'
                   '</button><span id="readout-trace" class="readout"></span></div>'}
