"""Report section and ``bandjax wan``: the step on a WAN shared with other jobs (docs/model.md sections
11 and 13).

The event engine (:mod:`events`) runs every variant at loads 0, 0.5 and 0.9 for several seeds, on
the scenario's K DCs and WAN topology (every directed link in use shared with other jobs);
the section gives the step at seed 0, the mean over seeds with a 95% interval (Student t), how
much the step grows against load 0, the queueing approximation (:mod:`bandjax.queueing`) beside
it, a trace of the first steps for the explorer page, and load-0 engine runs over a range of
bandwidths that must sit on the closed-form curves.

Before any run starts the section sizes its work to a budget (:func:`size_runs`): the engine's
cost is estimated from the scenario (:func:`events.engine.estimate_events`, link arrivals at the
rates :data:`MESSAGES_PER_S` and :data:`BACKGROUND_PER_S` a worker) against ``budget_s`` seconds
on its workers (:data:`BUDGET_S` by default). The sync's messages are made larger where a sync
would be more than :data:`MAX_MESSAGES` of them a link; steps, then seeds, are lowered to fit;
a load that cannot fit even at the fewest steps and seeds is given by the queueing approximation
alone. What was chosen, and what it costs in accuracy, is kept in the section's ``sizing``.

Where the scenario's WAN links differ (:func:`bandjax.links.differ`) the approximation, which takes
the links in use as identical, is left out (``approx_left_out`` says so): the table, the sizing's
fallback and its message-size note then have no approximation, and a load the engine cannot fit
is not shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ... import links as _links
from ... import variants as _v
# the runs' sizing and start, apart so that the command line starts them before loading this
from ..._wan_runs import (BACKGROUND_PER_S, BUDGET_S, KEY, LOAD0_GBPS, MAX_MESSAGES,  # noqa: F401
                          MESSAGES_PER_S, STARTED, _cost_s, _mb, adopt, size_runs, start_runs,
                          stop)
from ...scenario import Scenario
from .common import (HEIGHT, PADDING_PX, WIDTH, Results, Section, View, _finish, _num,
                     _variant_color, close_ahead, g3, g4, g6, short, start_ahead, take_ahead)


@dataclass(frozen=True)
class SharedWan(Section):
    """The step on a WAN shared with other jobs, from the event engine (docs/model.md sections 11
    and 13): per variant, lists along ``loads`` (ms; growth against load 0; utilisation shares),
    the queueing approximation beside them, load-0 runs that must sit on the closed forms, and a
    trace of the first steps."""

    KEY: ClassVar[str] = KEY  # bandjax._wan_runs.KEY: the runs are started under it

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
    sizing: dict | None = None  # what the budget chose (see size_runs) and what it costs
    approx_left_out: str | None = None  # why the approximation is left out (links that differ)


TRACE_LOAD = 0.9


BASIS = "hypothesis"


LINKS_DIFFER = ("The queueing approximation is left out: the scenario's WAN links differ, and it "
                "takes the links in use as identical; the event engine gives each link its own "
                "capacity and latency.")


def cluster_text(sc: Scenario) -> str:
    """"K DCs, ring: L directed WAN links" for a header."""
    K = int(float(sc.dcs))
    topology = _v.TOPOLOGIES[int(float(sc.topology))]
    links = K * (K - 1) if topology == "mesh" else K
    return f"{K} DCs, {topology}: {links} directed WAN links"


def ci95(samples) -> tuple[float, float]:
    """Student-t 95% interval of the mean: mean -/+ t(0.975, n-1) s / sqrt(n); NaN for one
    sample, which has no interval."""
    from scipy.special import stdtrit  # the t quantile (scipy.stats.t.ppf), without scipy.stats

    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return math.nan, math.nan
    half = float(stdtrit(x.size - 1, 0.975) * x.std(ddof=1) / math.sqrt(x.size))
    return float(x.mean() - half), float(x.mean() + half)


def start(scenario: Scenario, ctx: dict) -> None:
    """Size the section's engine runs and start them in worker processes, returning at once: the
    report calls this before its first section, so that the runs go on while this process
    computes the sections before this one; :func:`build` then collects them (and :func:`close`
    stops them where the report ends first). Runs the command line started earlier for this
    scenario and these options (:func:`bandjax._wan_runs.start_early`) are taken as they are."""
    close_ahead(ctx, KEY)
    st = adopt(scenario, ctx)
    ctx[STARTED] = _start(scenario, ctx, st)


def close(ctx: dict) -> None:
    """Stop the runs :func:`start` began and their workers, if :func:`build` has not."""
    close_ahead(ctx, KEY)
    stop(ctx)


def _start(scenario: Scenario, ctx: dict, st: dict | None = None) -> dict:
    """The sized runs of :func:`build` (``st`` where they are started already), submitted, and the
    queueing approximation started in a thread (its first call is mostly compiling)."""
    st = start_runs(scenario, ctx) if st is None else st
    start_ahead(ctx, KEY, _approximations, st["scenario"], st["at_m"], st["loads"])
    return st


def _approximations(scenario: Scenario, at_m: Scenario, loads: list) -> tuple:
    """The queueing approximation's steps (ms, (load, variant)) for the scenario and for the one
    the engine runs (its message size); (None, None) where the links differ."""
    import jax.numpy as jnp

    from ...queueing import shared_wan_step_once_s as shared_wan_step_s

    if _links.differ(scenario):
        return None, None
    return (np.asarray(shared_wan_step_s(scenario, jnp.asarray(loads))) * 1e3,
            np.asarray(shared_wan_step_s(at_m, jnp.asarray(loads))) * 1e3)


def build(scenario: Scenario, ctx: dict) -> SharedWan:
    """Engine runs and the approximation for ``scenario``, sized to the budget first
    (:func:`size_runs`); see the module docstring. Runs that :func:`start` began are collected."""
    import events
    from events.engine import TRACE_STEPS, estimate_events
    from events.plan import build as plan_of

    from ...queueing import (ACCURACY_BY_CLUSTER, ACCURACY_UP_TO_SPLIT_BY_CLUSTER, SPLIT_LOAD,
                             accuracy)
    from ...metrics import step_once_s as step_s

    st = ctx.pop(STARTED, None) or _start(scenario, ctx)
    o, scenario, loads, ids = st["o"], st["scenario"], st["loads"], st["ids"]
    sized, at_m, run_loads, seeds = st["sized"], st["at_m"], st["run_loads"], st["seeds"]
    notes = list(sized["notes"])
    left_out = LINKS_DIFFER if _links.differ(scenario) else None
    runs = load0 = None
    try:
        with st["stack"]:
            if st["error"] is not None:
                raise st["error"]
            if st["runs"] is not None:
                runs = st["runs"].result(progress=o["progress"])
            load0 = st["load0"].result(progress=o["progress"])
    except (ValueError, RuntimeError) as e:  # a bound the estimate missed: the approximation
        notes.append(f"The engine's runs stopped ({e}); " + (
            "the queueing approximation assumes identical links, so no step is shown."
            if left_out else "the queueing approximation stands alone."))
        runs = None
        sized = {**sized, "approx_loads": [] if left_out else sorted(
            set(sized["approx_loads"]) | set(run_loads)), "loads": []}
        run_loads = []
    approx, approx_m = take_ahead(ctx, KEY)[1]
    closed_ms = np.asarray(step_s(scenario)) * 1e3  # the load-0 step: the engine equals it there
    if approx is not None and sized["message_B"] > sized["scenario_message_B"]:
        cost = float(np.max(np.abs(approx_m / approx - 1)))
        notes.append(f"By the queueing approximation that message size moves the mean step by "
                     f"at most {cost:.2%} (largest over variants and loads).")
    stated = {"accuracy": None, "basis": None} if left_out else accuracy(scenario)
    out = {"seed": 0, "loads": loads, "steps": sized["steps"], "seeds": len(seeds),
           "bandwidth_GBps": float(scenario.wan_Bps) / 1e9,
           "dcs": int(float(scenario.dcs)),
           "topology": _v.TOPOLOGIES[int(float(scenario.topology))],
           "links": int(float(np.max(traffic_links(scenario)))),
           "step_ms": {}, "mean_step_ms": {}, "ci95_ms": {}, "growth": {}, "approx_step_ms": {},
           "p95_ms": {}, "wan_utilisation": {}, "wan_utilisation_max": {},
           "approx_accuracy": stated["accuracy"], "approx_accuracy_basis": stated["basis"],
           "approx_accuracy_by_cluster": [
               {"dcs": k, "topology": t, "accuracy": v, "split_load": SPLIT_LOAD,
                "accuracy_up_to_split": ACCURACY_UP_TO_SPLIT_BY_CLUSTER[(k, t)]}
               for (k, t), v in ACCURACY_BY_CLUSTER.items()]}
    worst, widest = None, None
    none = [None] * len(loads)
    for vid in ids:
        at = ids.index(vid)
        if approx is not None:
            out["approx_step_ms"][vid] = [float(x) for x in approx[:, at]]
        for k in ("step_ms", "mean_step_ms", "growth", "p95_ms", "wan_utilisation",
                  "wan_utilisation_max"):
            out[k][vid] = list(none)
        out["ci95_ms"][vid] = [[None, None] for _ in loads]
        if runs is None:
            continue
        step_ms = runs.step_s.sel(variant=vid) * 1e3
        for j, x in enumerate(loads):
            if x not in run_loads:
                continue
            s = step_ms.sel(load=x)
            m = float(s.mean("seed"))
            lo, hi = ci95(s.values)
            out["step_ms"][vid][j] = float(s.sel(seed=0))
            out["mean_step_ms"][vid][j] = m
            out["ci95_ms"][vid][j] = [lo, hi]
            out["growth"][vid][j] = m / closed_ms[at]
            out["p95_ms"][vid][j] = float(runs.step_p95_s.sel(variant=vid, seed=0, load=x)) * 1e3
            out["wan_utilisation"][vid][j] = float(runs.wan_utilisation.sel(variant=vid, seed=0,
                                                                             load=x))
            out["wan_utilisation_max"][vid][j] = float(runs.wan_utilisation_max.sel(
                variant=vid, seed=0, load=x))
            if approx_m is not None:
                err = abs(approx_m[j, at] / m - 1)
                worst = err if worst is None else max(worst, err)
            if x > 0 and math.isfinite(lo) and m > 0:  # load 0 is deterministic
                widest = max(widest or 0.0, (hi - lo) / 2 / m)
    out["approx_max_rel_err"] = worst
    if left_out:
        out["approx_step_ms"], out["approx_left_out"] = None, left_out
    if widest is not None:
        notes.append(f"The 95% intervals' half-width is at most {widest:.2%} of the mean "
                     f"({sized['seeds']} seeds x {sized['steps']} steps a run).")

    # load 0 over bandwidths: the engine against the closed form, and dots for the page
    points, err = [], 0.0
    for g in LOAD0_GBPS if load0 is not None else ():
        sc_g = scenario.replace(wan_Bps=g * 1e9)
        closed = np.asarray(step_s(sc_g))
        for vid in ids:
            eng = float(load0.step_s.sel(bandwidth=g, variant=vid))
            err = max(err, abs(eng / closed[ids.index(vid)] - 1))
            steps = scenario.steps.lookup(vid, float(scenario.enob), BASIS, scenario.variants)
            ttt = steps * eng if math.isfinite(steps) else None
            points.append({"variant": vid, "GBps": g, "step_ms": eng * 1e3,
                           "time_to_target_s": ttt, "basis": BASIS})
    out["load0_points"] = points
    out["load0_max_rel_err"] = err if points else None

    # the trace follows the registry's first variant (the study's dense AdamW baseline), at the
    # highest load the engine ran, when its few steps fit in a fifth of the budget
    trace_variant = ids[0]
    out["trace"] = {}
    trace_load = TRACE_LOAD if TRACE_LOAD in run_loads else max(run_loads, default=None)
    if trace_load is not None:
        plan = plan_of(at_m, trace_variant)
        est = estimate_events(plan, trace_load, TRACE_STEPS, math.inf)
        if _cost_s(est) <= float(o["budget_s"]) / 5:
            try:
                run = events.run(at_m, trace_variant, trace_load, seed=0, steps=TRACE_STEPS,
                                 max_sim_s=max(events.MAX_SIM_S, 4 * est["sim_s"]))
                out["trace"] = {"variant": trace_variant, "load": trace_load,
                                "bandwidth_GBps": float(scenario.wan_Bps) / 1e9, **run.trace}
            except (ValueError, RuntimeError) as e:
                notes.append(f"No trace: {e}")
        else:
            notes.append(f"No trace of the first steps: {TRACE_STEPS} steps of "
                         f"{scenario.variant(trace_variant).short} at load {g6(trace_load)} would take about "
                         f"{g3(_cost_s(est))} s, over a fifth of the budget.")
    out["sizing"] = {k: v for k, v in sized.items()} | {"notes": notes}
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
    head = " | ".join(f"load {g6(x)}: {cols}" for x in loads)
    K, topology = r.dcs, r.topology
    lines = [
        "## Shared WAN (event engine)",
        "",
        f"{K} DCs joined as a {topology}: each of the {r.links} directed WAN links in "
        f"use ({g6(r.bandwidth_GBps)} GB/s " + ("the slowest; each at its own" if r.approx_left_out
                                             else "each") + ") is a first-come-first-served link "
        "shared with other jobs' Poisson transfers at load x capacity; the sync's bytes on "
        f"each link go as {_mb((r.sizing or {}).get('message_B', 1e6))} messages one after "
        "another, and the step ends when every link is done. Step times in ms: one run of "
        f"{r.steps} steps at seed {r.seed}, the mean over {r.seeds} seeds with its 95% "
        "interval (Student t), its growth against the load-0 step (the closed form, which the "
        "engine equals at load 0)"
        + (", and the queueing approximation "
           f"(stated accuracy {r.approx_accuracy:.0%} {r.approx_accuracy_basis or ''}"
           + (f"; largest deviation here {r.approx_max_rel_err:.1%}" if r.approx_max_rel_err
              is not None else "") + ")" if approx else "")
        + ". Budget [free] unless the scenario sets one; d calibrated to the study's step times."
        + (f" {r.approx_left_out}" if r.approx_left_out else ""),
        "",
        f"| variant | {head} |",
        "|---|" + "---|" * len(loads),
    ]
    # the scenario's own variants (a user's included), as the report's setup lists them
    shorts = results.names()
    sizing = r.sizing or {}
    for vid, s in r.step_ms.items():
        cells = []
        for j in range(len(loads)):
            lo, hi = r.ci95_ms[vid][j]
            a = r.approx_step_ms[vid][j] if approx else None
            a_cell = f" / {'n/a' if a is None else g4(a)}" if approx else ""
            if s[j] is None:
                cells.append(f"n/a (approximation only){a_cell}" if approx else
                             "n/a (over the engine's budget; no approximation: the links differ)")
                continue
            interval = "[n/a: one seed]" if lo is None else f"[{g4(lo)}, {g4(hi)}]"
            cells.append(f"{g4(s[j])} / {g4(r.mean_step_ms[vid][j])} {interval} / "
                         f"x{r.growth[vid][j]:.2f}{a_cell}")
        lines.append(f"| {shorts.get(vid, vid)} | " + " | ".join(cells) + " |")
    if sizing.get("notes"):
        lines += ["", "The engine's runs, sized to its budget: " + " ".join(sizing["notes"])]
    measured = r.approx_accuracy_by_cluster
    if approx and measured and all(m["accuracy"] is not None for m in measured):
        lines += ["", "The approximation's worst error against the engine's steady-state mean "
                  f"(every variant, 12.5 GB/s per link), loads 0.5 to {g6(measured[0]['split_load'])}"
                  " / to 0.95: "
                  + ", ".join(f"K = {m['dcs']} {m['topology'] if m['dcs'] > 2 else ''}"
                              .rstrip() + f" {m['accuracy_up_to_split']:.0%} / {m['accuracy']:.0%}"
                              for m in measured) + "."]
    if r.load0_points and r.load0_max_rel_err is not None:
        lines += [
            "",
            f"At load 0 the engine matches the closed-form step to {r.load0_max_rel_err:.1e} "
            f"(largest relative difference over every variant at "
            f"{', '.join(g6(p) for p in sorted({p['GBps'] for p in r.load0_points}))} GB/s).",
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
        cells = [g6(float(load))]
        for vid in [v for v in sc.ids if v in step]:
            s = step[vid][j]
            a = approx.get(vid, [None] * len(loads))[j]
            cell = g4(float(s)) if s is not None else (
                f"n/a (approximation {g4(float(a))})" if a is not None else
                "n/a (over the engine's budget; no approximation: the links differ)"
                if sw.approx_left_out else "n/a")
            if vid in ci and ci[vid][j] and ci[vid][j][0] is not None:
                lo, hi = ci[vid][j]
                cell += f" [{g4(float(lo))}, {g4(float(hi))}]"
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
                parts.append(f"{short(vid)} {g4(float(s1))} ms ({g3(float(s1) / float(s0))}x load "
                             f"{g6(float(loads[0]))})")
        if parts:
            view.conclusion.append(f"At load {g6(float(loads[top]))} the mean steps take " +
                                   ", ".join(parts) + ".")
        best0 = min((v for v in step if step[v][0] is not None), key=lambda v: step[v][0], default=None)
        best1 = min((v for v in step if step[v][top] is not None), key=lambda v: step[v][top], default=None)
        if best0 and best1:
            view.conclusion.append(
                f"Fastest mean step at load {g6(float(loads[0]))}: {short(best0)}; at load "
                f"{g6(float(loads[top]))}: {short(best1)}.")
    # the sizes the runs used: the sizing may have made the sync's messages larger
    msg = _mb(float((sw.sizing or {}).get("message_B", sc.wan_message_B)))
    bg = _mb(float(sc.background_B))
    view.assumptions = [
        f"Each WAN direction is one first-come-first-served link; other jobs send {bg} transfers "
        "as a Poisson process at load x bandwidth.",
        f"The sync's WAN bytes go as {msg} messages, one after another; a run is seeded.",
        f"Queues are counted in transfers waiting on the link (other jobs' of {bg}, the sync's of "
        f"up to {msg}); the sync's bytes left (both directions) in MB (1e6 bytes).",
    ]
    if sw.sizing and sw.sizing.get("notes"):
        view.assumptions.append("The engine's runs, sized to its budget: "
                                + " ".join(sw.sizing["notes"]))
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
