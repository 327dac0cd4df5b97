"""Report section "When things fail": goodput (compute utilisation x ETTR, docs/model.md section
17) of the scenario's variants and the field's ways of syncing in rounds, at the scenario and
against the cluster's size, and where replicas that meet once a round overtake a job that stops on
any failure.

Present only where the scenario's workers fail (``failure_rate_per_hour`` > 0): a scenario where
nothing fails gets no section, so its report is what it was. results.json gains ``failures``: the
failure settings, the cluster's MTBF (h), each variant's recovery rule, checkpoint interval (s),
ETTR, compute utilisation and goodput (unit 1) at the scenario, goodput against the GPUs in all
(the workers per DC scaled, the DCs as they are), the crossover (GPUs) and the words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ...failures import BEYOND_FIRST_ORDER, FIRST_ORDER_LIMIT
from ...grid import sweep
from ...scenario import Scenario
from ...units import duration
from ..passes import Sweeps
from .common import HEIGHT, WIDTH, Results, Section, View, _finish, _num, g3, g4, g6, variant_colors
from .need import pack

KEY = "failures"
TITLE = "When things fail"
SIZES = 13  # points of the goodput-against-size curve
SPAN = 64.0  # the curve reaches this many times the scenario's workers per DC


@dataclass(frozen=True)
class Failures(Section):
    """Goodput where workers fail.

    ``variants[id]``: short, label, sync_every (H), ``rule`` ("restart": the whole job stops and
    goes back to its checkpoint; "replica": only the failed DC's replica stops), pack (added
    from bandjax.METHODS). At the scenario, per variant: ``ettr``, ``compute_utilisation``,
    ``goodput`` (unit 1), ``checkpoint_s`` (s; None for a replica), ``beyond_first_order``.
    ``gpus`` (count) and ``goodput_by_size[id]`` (unit 1 at each): the curve against the GPUs in
    all. ``crossover_gpus``: the fewest GPUs on the curve at which the best replica-recovering
    variant's goodput passes the best restarting one's (None: not on the curve)."""

    KEY: ClassVar[str] = "failures"

    rate_per_hour: float
    restart_s: float
    checkpoint_write_s: float
    checkpoint_every_s: float | None
    gpus_at_scenario: int
    mtbf_h: float | None
    variants: dict
    ettr: dict
    compute_utilisation: dict
    goodput: dict
    checkpoint_s: dict
    beyond_first_order: dict
    gpus: list[int]
    goodput_by_size: dict
    crossover_gpus: int | None
    assumptions: list[str]
    conclusions: list[str]


def applies(sc: Scenario) -> bool:
    """Whether the scenario's workers fail (the section is built and drawn only then)."""
    return bool(np.any(np.asarray(sc.failure_rate_per_hour, dtype=float) > 0))


def build(sc: Scenario, ctx: dict) -> Failures:
    """Two sweeps over the scenario's variants and the methods pack: at the scenario, and over
    the workers per DC for the curve."""
    full = sc.with_variants(pack(sc))
    K, n = int(float(sc.dcs)), float(sc.workers_per_dc)
    quantities = ("compute_utilisation", "ettr", "goodput", "mtbf_s", "checkpoint_interval_s",
                  "failure_status")
    at = sweep(full, quantities=quantities)
    sizes = np.unique(np.round(np.geomspace(1.0, max(SPAN * n, 2.0), SIZES)))
    curve = sweep(full, workers_per_dc=list(sizes), quantities=("goodput",)).transpose(
        "workers_per_dc", "variant")
    H = float(sc.sync_every_H)
    variants, ettr, cu, good, ckpt, beyond, by_size = {}, {}, {}, {}, {}, {}, {}
    for k, v in enumerate(full.variants):
        h = v.sync_every if v.sync_every is not None else H
        variants[v.id] = {"short": v.short, "label": v.label, "sync_every": float(h),
                          "rule": "replica" if h > 1 else "restart", "pack": v.id not in sc.ids}
        pick = {q: float(at[q].isel(variant=k)) for q in quantities if q != "mtbf_s"}
        ettr[v.id] = _num(pick["ettr"], 10)
        cu[v.id] = _num(pick["compute_utilisation"], 10)
        good[v.id] = _num(pick["goodput"], 10)
        ckpt[v.id] = _num(pick["checkpoint_interval_s"], 10)
        beyond[v.id] = int(pick["failure_status"]) == BEYOND_FIRST_ORDER
        by_size[v.id] = [_num(x) for x in np.asarray(curve["goodput"])[:, k]]
    gpus = [int(K * s) for s in sizes]
    part = dict(
        rate_per_hour=float(sc.failure_rate_per_hour), restart_s=float(sc.restart_s),
        checkpoint_write_s=float(sc.checkpoint_write_s),
        checkpoint_every_s=None if sc.checkpoint_every_s is None else float(sc.checkpoint_every_s),
        gpus_at_scenario=int(round(K * n)), mtbf_h=_num(float(at["mtbf_s"]) / 3600, 10),
        variants=variants, ettr=ettr, compute_utilisation=cu, goodput=good, checkpoint_s=ckpt,
        beyond_first_order=beyond, gpus=gpus, goodput_by_size=by_size,
        crossover_gpus=crossover(variants, gpus, by_size))
    return Failures(**part, assumptions=assumptions(part), conclusions=conclusions(part))


def crossover(variants: dict, gpus: list[int], by_size: dict) -> int | None:
    """The fewest GPUs at which the best 'replica' variant's goodput passes the best 'restart'
    one's, where the restarting ones led at the smallest size (None otherwise)."""
    def best(rule, i):
        values = [by_size[v][i] for v, d in variants.items() if d["rule"] == rule
                  and by_size[v][i] is not None]
        return max(values) if values else None

    led = None
    for i, g in enumerate(gpus):
        r, s = best("replica", i), best("restart", i)
        if r is None or s is None:
            return None
        if led is None:
            led = s >= r
            if not led:
                return None
        elif r > s:
            return g
    return None


def _leader(r: dict) -> str | None:
    """Which recovery rule's best variant leads at every size of the curve, in words."""
    def best(rule, i):
        values = [r["goodput_by_size"][v][i] for v, d in r["variants"].items()
                  if d["rule"] == rule and r["goodput_by_size"][v][i] is not None]
        return max(values) if values else None

    pairs = [(best("replica", i), best("restart", i)) for i in range(len(r["gpus"]))]
    if any(a is None or b is None for a, b in pairs):
        return None
    if all(a > b for a, b in pairs):
        return "syncs in rounds (a failed DC's replica alone restarts)"
    if all(b > a for a, b in pairs):
        return "syncs every step (the whole job restarts from its checkpoint)"
    return None


def _pct(x) -> str:
    return "-" if x is None else f"{g3(100 * x)}%"


def _time(seconds) -> str:
    return "-" if seconds is None or not math.isfinite(seconds) else duration(seconds, 3)


def assumptions(r: dict) -> list[str]:
    every = ("Young's interval sqrt(2 w / lambda)" if r["checkpoint_every_s"] is None
             else _time(r["checkpoint_every_s"]))
    return [
        f"Each worker fails as a Poisson process at {g4(r['rate_per_hour'])} a worker-hour; "
        f"restart u0 = {_time(r['restart_s'])}, checkpoint write w = "
        f"{_time(r['checkpoint_write_s'])}, checkpoint interval {every}.",
        "A variant syncing every step (H = 1) stops the whole job on any failure and goes back "
        "to its last checkpoint; one syncing in rounds (H > 1) loses only the failed DC's "
        "replica, which copies the model from a peer over its slowest incoming WAN link and "
        "rejoins at the next round (docs/model.md section 17).",
        f"ETTR to first order in the failure rate: a product above {g6(FIRST_ORDER_LIMIT)} is "
        "marked beyond first order, where the numbers are rough.",
        "Syncing every H steps is assumed not to change steps to target.",
        "The curve scales the workers per DC, the DCs as they are; compute utilisation changes "
        "with the workers too (the all-gathers' bytes).",
    ]


def conclusions(r: dict) -> list[str]:
    out = []
    if r["mtbf_h"] is not None:
        out.append(f"At {r['gpus_at_scenario']:,} GPUs the cluster fails every "
                   f"{g3(r['mtbf_h'])} h on average.")
    good = {v: x for v, x in r["goodput"].items() if x is not None}
    if good:
        best = max(good, key=good.get)
        d = r["variants"][best]
        out.append(f"{d['short']} keeps the most: goodput {_pct(good[best])} (ETTR "
                   f"{_pct(r['ettr'][best])} of compute utilisation {_pct(r['compute_utilisation'][best])}).")
    if r["crossover_gpus"] is not None:
        out.append(f"Replicas that meet once a round overtake a job that restarts from its "
                   f"checkpoint from about {r['crossover_gpus']:,} GPUs.")
    else:
        lead = _leader(r)
        if lead is not None:
            out.append(f"A variant that {lead} keeps more goodput than the best of the others at "
                       f"every size from {r['gpus'][0]:,} to {r['gpus'][-1]:,} GPUs.")
    beyond = [r["variants"][v]["short"] for v, b in r["beyond_first_order"].items() if b]
    if beyond:
        out.append(f"Beyond first order at the scenario (rough): {', '.join(beyond)}.")
    return out


def _table(r: Failures) -> tuple[list[str], list[list[str]]]:
    cols = ["variant", "H", "recovery", "checkpoint", "ETTR", "CU", "goodput"]
    rows = []
    for vid, d in r.variants.items():
        rows.append([d["short"], g6(d['sync_every']), d["rule"], _time(r.checkpoint_s[vid]),
                     _pct(r.ettr[vid]), _pct(r.compute_utilisation[vid]),
                     _pct(r.goodput[vid]) + (" (rough)" if r.beyond_first_order[vid] else "")])
    return cols, rows


def markdown(results: Results | dict) -> str:
    r = Results.of(results).failures
    if r is None:
        return ""
    cols, rows = _table(r)
    out = [f"## {TITLE}", "", *r.conclusions, "",
           "Goodput (compute utilisation x ETTR: the share of wall time the GPUs spend on work "
           "that is kept) at the scenario, docs/model.md section 17:", "",
           "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out += ["", *(f"- {a}" for a in r.assumptions)]
    return "\n".join(out)


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    r = Results.of(results).failures
    v = View(KEY, TITLE)
    if r is None:
        v.lacks("Goodput where workers fail", KEY)
        return v
    v.data = {"curves": [{"variant": vid, "short": r.variants[vid]["short"], "gpus": g, "goodput": x}
                         for vid, xs in r.goodput_by_size.items()
                         for g, x in zip(r.gpus, xs) if x is not None],
              "scenario": [{"gpus": r.gpus_at_scenario, "label": f"scenario: {r.gpus_at_scenario:,} GPUs"}]}
    cols, rows = _table(r)
    v.table = {"columns": cols, "rows": rows, "caption": "Goodput at the scenario"}
    for sentence in r.conclusions:
        v.say(sentence)
    v.assumptions = list(r.assumptions)
    return v


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets): goodput against the GPUs in all."""
    if not view.data:
        return {}
    colors = variant_colors(sc.with_variants(pack(sc)).variants)
    names = sorted({row["short"] for row in view.data["curves"]})
    lines = alt.Chart(alt.NamedData(name="curves")).mark_line(point=alt.OverlayMarkDef(size=20)).encode(
        x=alt.X("gpus:Q", title="GPUs in all (log)", scale=alt.Scale(type="log"),
                axis=alt.Axis(format="~s")),
        y=alt.Y("goodput:Q", title="goodput (CU x ETTR, unit 1)", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("short:N", title="variant",
                        scale=alt.Scale(domain=names, range=[colors.get(s, "#888") for s in names]),
                        legend=alt.Legend(labelLimit=0)),
        tooltip=[alt.Tooltip("short:N", title="variant"), alt.Tooltip("gpus:Q", format=",", title="GPUs"),
                 alt.Tooltip("goodput:Q", format=".3g")])
    rule = alt.Chart(alt.NamedData(name="scenario")).mark_rule(strokeDash=[4, 4]).encode(
        x="gpus:Q", tooltip=["label:N"])
    chart = (lines + rule).properties(width="container" if interactive else WIDTH - 140,
                                      height=HEIGHT)
    return {KEY: (_finish(chart), {"curves": view.data["curves"], "scenario": view.data["scenario"]})}
