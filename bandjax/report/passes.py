"""The one pass of the model behind a report: every sweep the sections, the figures and the
explorer page read, computed once per scenario.

Each field is an ``xarray.Dataset`` from :func:`bandjax.sweep`. The grids over the page's controls
(ENOB, budget, basis) hold the report's tables as one selection of them, so results.md and the page
read the same numbers, never two computations of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..grid import sweep
from ..scenario import BASES, PRESETS, Scenario
from . import constants as C

POINT = ("step_s", "gpu_s", "time_to_target_s", "steps_to_target", "status", "hot_spot",
         "energy_per_step_J", "energy_to_target_J", "bytes_per_worker_B", "wan_B",
         "module_stage_s")
CURVE = ("time_to_target_s", "status", "step_s")


@dataclass(frozen=True)
class Sweeps:
    """The model evaluated once for a report.

    Attributes:
      point: at the scenario's WAN, over (enob, budget, basis, variant): every quantity.
      bandwidth: over (bandwidth, enob, budget, basis, variant), the curves' grid (GB/s).
      model: over (model, enob, budget, basis, variant), every preset of PRESETS.
      H: over (H, enob, budget, basis, variant), H in constants.H_VALUES.
      stages: module stage times over (budget, stage), the budget axis of the stages chart.
      cluster: over (dcs, topology, basis, variant) at the scenario's WAN, budget and ENOB
        (dcs: :func:`cluster_dcs`, the scenario's own K alone when it has per-link values).
      enobs, budgets: the control labels of the enob and budget axes (budgets: "free", "low",
        "high" and the scenario's own where it is none of them).
    """

    point: xr.Dataset
    bandwidth: xr.Dataset
    model: xr.Dataset
    H: xr.Dataset
    stages: xr.Dataset
    cluster: xr.Dataset
    enobs: tuple[str, ...]
    budgets: tuple[str, ...]
    enob: str  # the scenario's ENOB label

    def at(self, ds: xr.Dataset, budget: str = "free", enob: str | None = None) -> xr.Dataset:
        """``ds`` at one budget label and one ENOB label (the scenario's by default)."""
        return ds.isel(enob=self.enobs.index(self.enob if enob is None else enob),
                       budget=self.budgets.index(budget))


def enob_label(e) -> str:
    return f"{float(e):g}"


def budget_options(sc: Scenario) -> list[tuple[str, object, str]]:
    """(label, sweep argument, display) for each budget the report offers; the scenario's own
    budget is added when it is none of [free], [low], [high]."""
    opts = [("free", "free", "[free] not charged"),
            ("low", "low", f"[low] {float(sc.budget_low_FLOPs) / 1e9:g} GFLOP/s"),
            ("high", "high", f"[high] {float(sc.budget_high_FLOPs) / 1e9:g} GFLOP/s")]
    own = float(sc.budget_FLOPs)
    if math.isfinite(own) and own not in (float(sc.budget_low_FLOPs), float(sc.budget_high_FLOPs)):
        opts.append((f"{own / 1e9:g}", own / 1e9, f"{own / 1e9:g} GFLOP/s (the scenario's)"))
    return opts


def scenario_budget(sc: Scenario) -> str:
    """The label of the scenario's own budget among :func:`budget_options`."""
    own = float(sc.budget_FLOPs)
    if math.isinf(own):
        return "free"
    if own == float(sc.budget_low_FLOPs):
        return "low"
    if own == float(sc.budget_high_FLOPs):
        return "high"
    return f"{own / 1e9:g}"


def enob_options(sc: Scenario) -> list[str]:
    enobs = [enob_label(e) for e in sc.steps.measured_enobs(registry=sc.variants)]
    if enob_label(sc.enob) not in enobs:
        enobs.append(enob_label(sc.enob))
    return enobs


def bandwidth_grid_GBps(sc: Scenario) -> np.ndarray:
    """The curves' grid: POINTS_PER_DECADE a decade over the range (rounded to 12 decimals), and
    the scenario's WAN exactly (the report's values at the scenario's WAN are read off this grid),
    in place of a grid point within 1e-9 of it."""
    lo, hi = C.BANDWIDTH_RANGE_GBps
    n = int(round(C.POINTS_PER_DECADE * math.log10(hi / lo))) + 1
    wan = float(sc.wan_Bps) / 1e9
    grid = np.round(np.logspace(math.log10(lo), math.log10(hi), n), 12)
    return np.unique(np.concatenate([grid[np.abs(grid / wan - 1) > 1e-9], [wan]]))


def budget_grid_GFLOPs(sc: Scenario, break_even_GFLOPs: float) -> np.ndarray:
    lo, hi = C.BUDGET_RANGE_GFLOPs
    marks = [float(sc.budget_low_FLOPs) / 1e9, float(sc.budget_high_FLOPs) / 1e9]
    return np.unique(np.concatenate([np.logspace(math.log10(lo), math.log10(hi), 121),
                                     [break_even_GFLOPs, *marks]]))


def cluster_dcs(sc: Scenario) -> list[int]:
    """The K the cluster section sweeps: constants.DCS, or the scenario's own K alone where it has
    per-link values (K then comes from its links table and cannot be swept)."""
    return list(C.DCS) if sc.links is None else [int(float(sc.dcs))]


def compute(sc: Scenario) -> Sweeps:
    """The one pass: five sweeps, each one jitted call over its grid (the point at the
    scenario's WAN read off the curves' sweep)."""
    from ..step import budget_break_even_FLOPs

    enobs = enob_options(sc)
    opts = budget_options(sc)
    controls = dict(enob=[float(e) for e in enobs], budget=[arg for _, arg, _ in opts],
                    basis=list(BASES))
    wan = float(sc.wan_Bps) / 1e9
    # one sweep for the curves and the point: the scenario's WAN is on the curves' grid
    grid = bandwidth_grid_GBps(sc)
    both = sweep(sc, bandwidth=grid, **controls, quantities=POINT)
    point = both.isel(bandwidth=int(np.flatnonzero(grid == wan)[0]))
    bandwidth = both[list(CURVE)]
    model = sweep(sc, model=list(PRESETS), bandwidth=wan, **controls,
                  quantities=("time_to_target_s", "status", "step_s"))
    H = sweep(sc, H=list(C.H_VALUES), bandwidth=wan, **controls,
              quantities=("time_to_target_s", "status", "step_s"))
    be = float(budget_break_even_FLOPs(sc)) / 1e9
    stages = sweep(sc, budget=list(budget_grid_GFLOPs(sc, be)), quantities=("module_stage_s",))
    over_K = {} if sc.links is not None else {"dcs": cluster_dcs(sc)}  # links: K is the table's
    cluster = sweep(sc, **over_K, topology=list(C.TOPOLOGIES), bandwidth=wan,
                    basis=list(BASES), quantities=("time_to_target_s", "status", "step_s"))
    if "dcs" not in cluster.dims:
        cluster = cluster.expand_dims(dcs=cluster_dcs(sc))
    return Sweeps(point=point, bandwidth=bandwidth, model=model, H=H, stages=stages,
                  cluster=cluster, enobs=tuple(enobs), budgets=tuple(o[0] for o in opts),
                  enob=enob_label(sc.enob))


def of(sc: Scenario, ctx: dict) -> Sweeps:
    """The report's pass for ``sc``, computed on first use and kept in ``ctx``."""
    if ctx.get("sweeps") is None:
        ctx["sweeps"] = compute(sc)
    return ctx["sweeps"]
