"""The report's core section: setup, step times and stages, times to target, hot spots, energy,
model size and syncing every H steps (docs/model.md sections 2 to 9)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...scenario import BASES, PRESETS, Scenario, to_toml_dict
from ...step import COMPONENT_LABELS, COMPONENTS, STAGES, budget_break_even_FLOPs
from .. import passes
from ..constants import BUDGETS, ENERGY_PARTS, STATUS
from . import frame
from ...units import describe, parse, significant
from .common import Results, Section, count, g6, list_lengths


@dataclass(frozen=True)
class Core(Section):
    """Setup, step times and stages, times to target, hot spots, energy, model size and syncing
    every H steps (docs/model.md sections 2 to 9). Dicts are keyed by variant id, then budget
    ("free", "low", "high") or basis ("hypothesis", "exact"); units are in ``units``."""

    KEY: ClassVar[str] = "core"
    FLAT: ClassVar[bool] = True

    target_loss: float
    setup: dict  # the scenario (as its TOML), workers, WAN in GB/s and Gb/s, budgets, variants
    units: dict
    assumptions: dict
    step_ms: dict  # [variant][budget] ms
    stages_ms: dict  # [stage] ms at [free]; compute [budget] ms; binding [budget] stage
    budget_break_even_GFLOPs: float
    bytes_per_worker: dict  # [variant] B per step
    wan_bytes_per_step: dict  # [variant] B per step
    compute_share: dict  # [variant] share of the step at [free]
    time_to_target_s: dict  # [basis][variant] s (None: none)
    steps_to_target: dict  # [basis][variant] steps ("never", None)
    hot_spots: dict  # [variant][budget][component] share of the step
    energy: dict  # per_step_J [variant][budget][part]; to_target_kJ [basis][variant][budget]
    model_size: dict  # [preset] params, step_ms, time_to_target_s
    sync_every_H: dict  # H, assumption, step_ms, time_to_target_s along H
    by_enob: dict  # enob, step_ms, time_to_target_s, status along the measured ENOBs

    def names(self) -> dict[str, str]:
        """Variant id -> short label, as the report names variants."""
        return {vid: v["short"] for vid, v in self.setup["variants"].items()}

    @classmethod
    def inconsistent(cls, src: dict):
        yield from list_lengths(src, "sync_every_H.H",
                                ("sync_every_H.step_ms", "sync_every_H.time_to_target_s"))
        yield from list_lengths(src, "by_enob.enob", ("by_enob.step_ms", "by_enob.time_to_target_s",
                                                      "by_enob.status"))


KEY = Core.KEY

UNITS = {
    "step_ms": "ms", "stages_ms": "ms", "budget_break_even_GFLOPs": "GFLOP/s",
    "bytes_per_worker": "B per step", "compute_share": "1 (share of the step at [free])",
    "time_to_target_s": "s", "steps_to_target": "steps", "hot_spots": "1 (share of the step)",
    "energy.per_step_J": "J", "energy.to_target_kJ": "kJ",
    "model_size.*.time_to_target_s": "s", "model_size.*.step_ms": "ms",
    "sync_every_H.time_to_target_s": "s", "sync_every_H.step_ms": "ms",
    "cluster.time_to_target_s": "s", "cluster.break_even_GBps": "GB/s",
}


ASSUMPTIONS = {
    "hypothesis": "a basis-dependent variant (E') takes the steps of its hypothesis rule (E's "
                  "measured steps): the hypothesis that the optics' noise helps, from a single seed",
    "exact": "a basis-dependent variant takes its exact rule's steps (E': the exact band's, 2,667 "
             "in the reference): the conservative basis",
    "fixed_time": "d per variant is calibrated to the study's recorded step times; it does not "
                  "scale with model size",
    "steps": "steps to the target loss are single-seed measurements at one rung of the loss ladder",
    "sync_every_H": "syncing every H steps divides communication by H and assumes the steps to "
                    "target are unchanged, which is the larger assumption",
    "budget": "results are at [free] (module compute not charged) unless a budget is named",
}


def _steps_json(x):
    x = float(x)
    if math.isnan(x):
        return None
    return "never" if math.isinf(x) else x


def build(sc: Scenario, ctx: dict) -> Core:
    """The core tables, read from the report's one pass (:mod:`bandjax.report.passes`)."""
    sw = passes.of(sc, ctx)
    ids = list(sc.ids)
    wan_GBps = float(sc.wan_Bps) / 1e9
    own = passes.scenario_budget(sc)
    # the basis changes only steps; step-level quantities are read on one basis
    at = {b: sw.at(sw.point, b) for b in BUDGETS}
    step_level = {b: at[b].sel(basis="hypothesis") for b in BUDGETS}
    free = step_level["free"]

    def per_budget(var, vid, scale=1.0):
        return {b: float(step_level[b][var].sel(variant=vid)) * scale for b in BUDGETS}

    stage_at = {b: step_level[b]["module_stage_s"] for b in BUDGETS}
    binding = {b: STAGES[int(np.argmax(stage_at[b].values))] for b in BUDGETS}
    parts = (*ENERGY_PARTS, "total")
    steps = at["free"]["steps_to_target"]

    results: dict = {
        "target_loss": float(sc.steps.target_loss),
        "setup": {
            "scenario": to_toml_dict(sc),
            "workers": int(sc.dcs) * int(sc.workers_per_dc), "workers_per_dc": int(sc.workers_per_dc),
            "dcs": int(sc.dcs), "wan_GBps": wan_GBps, "wan_Gbps": 8 * wan_GBps,
            "budgets_GFLOPs": {"free": None, "low": float(sc.budget_low_FLOPs) / 1e9,
                               "high": float(sc.budget_high_FLOPs) / 1e9},
            "variants": {v.id: {"label": v.label, "short": v.short, "colour": v.colour,
                                "in_transit": v.in_transit, "module": v.module,
                                "basis_dependent": v.basis_dependent} for v in sc.variants},
        },
        "units": UNITS,
        "assumptions": ASSUMPTIONS,
        "step_ms": {vid: per_budget("step_s", vid, 1e3) for vid in ids},
        "stages_ms": {
            **{s: float(stage_at["free"].sel(stage=s)) * 1e3 for s in STAGES if s != "compute"},
            "compute": {b: float(stage_at[b].sel(stage="compute")) * 1e3 for b in BUDGETS},
            "binding": binding,
        },
        "budget_break_even_GFLOPs": float(budget_break_even_FLOPs(sc)) / 1e9,
        "bytes_per_worker": {vid: float(free["bytes_per_worker_B"].sel(variant=vid)) for vid in ids},
        "wan_bytes_per_step": {vid: float(free["wan_B"].sel(variant=vid)) for vid in ids},
        "compute_share": {vid: float(free["gpu_s"].sel(variant=vid) / free["step_s"].sel(variant=vid))
                          for vid in ids},
        "time_to_target_s": {
            basis: {vid: float(at["free"]["time_to_target_s"].sel(basis=basis, variant=vid))
                    for vid in ids} for basis in BASES},
        "steps_to_target": {
            basis: {vid: _steps_json(steps.sel(basis=basis, variant=vid)) for vid in ids}
            for basis in BASES},
        "hot_spots": {vid: {b: {c: float(step_level[b]["hot_spot"].sel(variant=vid, component=c))
                                for c in COMPONENTS} for b in BUDGETS} for vid in ids},
        "energy": {
            "per_step_J": {vid: {b: {part: float(step_level[b]["energy_per_step_J"].sel(variant=vid, energy=part))
                                     for part in parts} for b in BUDGETS} for vid in ids},
            "to_target_kJ": {basis: {vid: {b: float(at[b]["energy_to_target_J"].sel(basis=basis, variant=vid)) / 1e3
                                           for b in BUDGETS} for vid in ids} for basis in BASES},
        },
    }

    by_model = sw.at(sw.model, own)
    results["model_size"] = {
        m: {"params": PRESETS[m],
            "step_ms": {vid: float(by_model["step_s"].sel(model=m, basis="hypothesis", variant=vid)) * 1e3
                        for vid in ids},
            "time_to_target_s": {basis: {vid: _float(by_model["time_to_target_s"].sel(model=m, basis=basis, variant=vid))
                                         for vid in ids} for basis in BASES}}
        for m in PRESETS}

    by_H = sw.at(sw.H, own)
    results["sync_every_H"] = {
        "H": [int(h) for h in by_H["H"].values],
        "assumption": ASSUMPTIONS["sync_every_H"],
        "step_ms": {vid: [float(x) * 1e3 for x in by_H["step_s"].sel(basis="hypothesis", variant=vid).values]
                    for vid in ids},
        "time_to_target_s": {basis: {vid: [_float(x) for x in by_H["time_to_target_s"].sel(basis=basis, variant=vid).values]
                                     for vid in ids} for basis in BASES},
    }

    measured = [passes.enob_label(e) for e in sc.steps.measured_enobs(registry=sc.variants)]
    transit = [v.id for v in sc.variants if v.in_transit]
    by_enob = sw.point.isel(budget=sw.budgets.index(own),
                            enob=[sw.enobs.index(e) for e in measured]).sel(variant=transit)
    results["by_enob"] = {
        "enob": [float(e) for e in measured],
        "step_ms": {vid: [float(x) * 1e3 for x in by_enob["step_s"].sel(basis="hypothesis", variant=vid).values]
                    for vid in transit},
        "time_to_target_s": {basis: {vid: [_float(x) for x in by_enob["time_to_target_s"].sel(basis=basis, variant=vid).values]
                                     for vid in transit} for basis in BASES},
        "status": {basis: {vid: [STATUS[int(x)] for x in by_enob["status"].sel(basis=basis, variant=vid).values]
                           for vid in transit} for basis in BASES},
    }
    return Core(**results)


def _float(x):
    """A time as JSON: None where there is none (never reaches the target, or not measured)."""
    x = float(x)
    return None if math.isnan(x) else x


TABLE_DIGITS = 4  # significant figures of results.md's tables


def _num(x, digits=TABLE_DIGITS) -> str:
    """A table's number to ``digits`` significant figures (0: a whole count, written out)."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if math.isnan(x):
        return "n/a"
    if x == 0:
        return "0"
    return f"{x:,.0f}" if digits == 0 else significant(x, digits)


def _quantity(text: str, dimension: str) -> str:
    """A scenario value as the file writes it (exact, any number of digits) as a reader sees it."""
    return describe(parse("", text, dimension), dimension, TABLE_DIGITS)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _name(r: Core, vid) -> str:
    v = r.setup["variants"][vid]
    return f"{v['short']} ({vid})" if v["short"] not in (vid,) else vid


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.core
    if r is None:
        return ""
    s = r.setup
    ids = list(r.step_ms)
    low, high = s["budgets_GFLOPs"]["low"], s["budgets_GFLOPs"]["high"]
    sc = s["scenario"]
    fr = frame.of_results(results)
    if fr is None or fr.reference:
        title, whose = frame.STUDY_TITLE, "the study's scenario"
    else:
        title, whose = fr.title, f"this scenario: {fr.setup}"
    out = [
        f"# {title}",
        "",
        f"Closed-form results of the reference model for {whose}, computed by bandjax. "
        f"Target loss {r.target_loss}. Budgets: [free] = module compute not charged, "
        f"[low] = {g6(low)} GFLOP/s, [high] = {g6(high)} GFLOP/s.",
        "",
        "## Setup",
        "",
        _table(["parameter", "value"], [
            ["parameters P", f"{sc['model']['params']:,}"],
            ["cluster", f"{s['dcs']} DCs x {s['workers_per_dc']} workers (N = {s['workers']})"],
            ["worker port", _quantity(sc["links"]["worker_port"], "byte_rate")],
            ["pluggable module port", _quantity(sc["links"]["qsfp_port"], "byte_rate")],
            ["WAN (per direction)", f"{g6(s['wan_GBps'])} GB/s = {g6(s['wan_Gbps'])} Gb/s"],
            ["GPU compute per step", _quantity(sc["model"]["gpu_compute"], "time")],
            ["ENOB (in-transit band bits)", str(sc["band"]["enob"])],
            ["module optics / FPGA", f"{sc['module']['optics']} / {sc['module']['fpga']}"],
        ]),
        "",
        "Assumptions used below: " + "; ".join(f"**{k}**: {v}" for k, v in r.assumptions.items()) + ".",
        "",
        "## Step time",
        "",
        f"Step time per variant at the scenario's WAN ({g6(s['wan_GBps'])} GB/s), by module budget. "
        "The fixed time d in each is calibrated (see assumptions).",
        "",
        _table(["variant", "[free] (ms)", "[low] (ms)", "[high] (ms)", "GPU compute share [free]",
                "bytes per worker (B)"],
               [[_name(r, v), *(_num(r.step_ms[v][b]) for b in BUDGETS), _pct(r.compute_share[v]),
                 f"{r.bytes_per_worker[v]:,.0f}"] for v in ids]),
        "",
        "### Module stages",
        "",
        "One worker's dense delta streams through four pipelined stages; the slowest sets the time.",
        "",
        _table(["stage", "[free] (ms)", "[low] (ms)", "[high] (ms)"],
               [[st, *([_num(r.stages_ms[st])] * 3 if st != "compute"
                       else [_num(r.stages_ms["compute"][b]) for b in BUDGETS])] for st in STAGES]
               + [["binding", *(r.stages_ms["binding"][b] for b in BUDGETS)]]),
        "",
        f"The budget stops binding at {r.budget_break_even_GFLOPs:.1f} GFLOP/s "
        "(transform FLOPs per parameter x optics rate, independent of P).",
        "",
        "## Time to target",
        "",
        "Steps x step time at [free]. n/a: no steps (never reaches the target, or not measured).",
        "",
        _table(["variant", "steps (hypothesis)", "time (s), hypothesis", "steps (exact)", "time (s), exact"],
               [[_name(r, v), _num(r.steps_to_target["hypothesis"][v], 0),
                 _num(r.time_to_target_s["hypothesis"][v]),
                 _num(r.steps_to_target["exact"][v], 0), _num(r.time_to_target_s["exact"][v])]
                for v in ids]),
        "",
        f"Hypothesis: {r.assumptions['hypothesis']}. Exact: {r.assumptions['exact']}.",
    ]
    fastest = {b: min((t, v) for v, t in r.time_to_target_s[b].items() if t is not None) for b in BASES}
    out += ["", "Fastest to target at this WAN: " + "; ".join(
        f"{b} basis: {_name(r, fastest[b][1])} at {_num(fastest[b][0])} s" for b in BASES) + "."]

    be = r.by_enob
    out += ["", "### By ENOB", "",
            "In-transit variants at each measured ENOB ([free], times in s; `never` = measured, never "
            "reaches the target).", "",
            _table(["variant", "basis", *(f"ENOB {e}" for e in be["enob"])],
                   [[_name(r, v), b, *(_num(t) if st == "ok" else st for t, st in
                                       zip(be["time_to_target_s"][b][v], be["status"][b][v]))]
                    for v in be["status"][BASES[0]] for b in BASES])]

    comps = list(next(iter(next(iter(r.hot_spots.values())).values())))
    # the waits for the slowest worker and site have a column only where some variant waits
    # (section 16)
    comps = [c for c in comps if c not in ("straggle", "site_wait")
             or any(h.get(c) for by_budget in r.hot_spots.values() for h in by_budget.values())]
    out += ["", "## Hot spots", "",
            "Share of the step held by each term; only the module's binding stage holds module time.",
            ""]
    rows = []
    for v in ids:
        for b in BUDGETS:
            if b != "free" and not any(r.hot_spots[v][b][c] for c in comps if c.startswith("module")):
                continue
            h = r.hot_spots[v][b]
            top = max(comps, key=lambda c: h[c])
            rows.append([_name(r, v), b, *(_pct(h[c]) if h[c] else "" for c in comps),
                         COMPONENT_LABELS[top]])
    out.append(_table(["variant", "budget", *(COMPONENT_LABELS[c] for c in comps), "hot spot"], rows))

    e = r.energy
    out += ["", "## Energy", "",
            "Per step (J) at [free] in three columns, and to target (kJ) on both bases. GPUs draw "
            "static power for the whole step; the module's FLOPs are covered by its power.", "",
            _table(["variant", "compute (J)", "network (J)", "modules (J)", "total (J)",
                    "to target, hypothesis (kJ)", "to target, exact (kJ)"],
                   [[_name(r, v), *(_num(e["per_step_J"][v]["free"][p]) for p in
                                    ("compute", "network", "modules", "total")),
                     _num(e["to_target_kJ"]["hypothesis"][v]["free"]),
                     _num(e["to_target_kJ"]["exact"][v]["free"])] for v in ids])]

    ms = r.model_size
    out += ["", "## Model size", "",
            "Bytes and GPU compute scale with P; the calibrated d does not, so the order of the "
            "variants changes only through d. Times to target (s), [free].", "",
            _table(["variant", *(f"{m} (P = {count(ms[m]['params'])}), {b} (s)" for m in ms for b in BASES)],
                   [[_name(r, v), *(_num(ms[m]["time_to_target_s"][b][v]) for m in ms for b in BASES)]
                    for v in ids])]

    h = r.sync_every_H
    out += ["", "## Syncing every H steps", "",
            f"**Assumption**: {h['assumption']}. Times to target (s), hypothesis basis, [free].", "",
            _table(["H", *(f"{_name(r, v)} (s)" for v in ids)],
                   [[str(x), *(_num(h["time_to_target_s"]["hypothesis"][v][k]) for v in ids)]
                    for k, x in enumerate(h["H"])])]
    return "\n".join(out)
