"""Labelled sweeps: xarray in, xarray out; labels outside jit, raw arrays inside.

:func:`sweep` turns each swept parameter into a 1-D array placed on its own axis, so the closed
forms broadcast over the grid in one jitted call. Only array shapes reach the compiler: new
coordinate values of the same shape reuse the compiled function.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from . import metrics
from . import variants as _v
from .labels import COORD_ATTRS, as_list, budgets_FLOPs, models, positive
from .scenario import BASES, FIELDS, Scenario, reference
from .step import COMPONENTS, STAGES, module_stages_s
from .units import SI

QUANTITIES = ("step_s", "gpu_s", "comm_s", "time_to_target_s", "steps_to_target", "status",
              "hot_spot", "energy_per_step_J", "energy_to_target_J", "bytes_per_worker_B",
              "wan_B", "module_stage_s")
ENERGY_COLUMNS = (*metrics.ENERGY_PARTS, "total")

_ATTRS = {
    "step_s": {"units": "s", "long_name": "step time"},
    "gpu_s": {"units": "s", "long_name": "GPU compute per step"},
    "comm_s": {"units": "s", "long_name": "communication per step (everything but GPU compute, d included)"},
    "time_to_target_s": {"units": "s", "long_name": "time to the target loss (steps x step time)",
                         "note": "NaN where the variant never reaches the target or was not measured; see status"},
    "steps_to_target": {"units": "1", "long_name": "measured steps to the target loss",
                        "note": "inf = measured, never reaches it; NaN = not measured"},
    "status": {"units": "1", "long_name": "why time_to_target_s is or is not a number",
               "flag_values": [metrics.OK, metrics.NEVER, metrics.NOT_MEASURED],
               "flag_meanings": metrics.STATUS_MEANINGS},
    "hot_spot": {"units": "1", "long_name": "share of the step held by each component (sums to 1)"},
    "energy_per_step_J": {"units": "J", "long_name": "energy per step, by column"},
    "energy_to_target_J": {"units": "J", "long_name": "energy to the target loss (steps x energy per step)"},
    "bytes_per_worker_B": {"units": "B", "long_name": "bytes a worker sends per step"},
    "wan_B": {"units": "B", "long_name": "bytes crossing one direction of the WAN per step"},
    "module_stage_s": {"units": "s", "long_name": "module pipeline stage time, one worker's delta"},
}


@partial(jax.jit, static_argnames=("index", "names"))
def _evaluate(sc: Scenario, steps, index: tuple[int, ...], names: tuple[str, ...]):
    """The requested quantities on the grid, variants picked by ``index`` (positions in IDS).

    Times and energies to target are NaN where the steps are not a finite number (never reaches
    the target, or not measured), inside the one fused pass rather than as a copy afterwards.
    """
    out = metrics.evaluate(sc, steps)
    ok = jnp.isfinite(steps)
    for q in ("time_to_target_s", "energy_to_target_J"):
        out[q] = jnp.where(ok, out[q], jnp.nan)
    out["hot_spot"] = metrics.hot_spots(out["terms_s"])
    energy = out["energy_J"]
    out["energy_per_step_J"] = jnp.concatenate([energy, jnp.sum(energy, -1, keepdims=True)], -1)
    out["module_stage_s"] = module_stages_s(sc)
    picked = {k: out[k] for k in names}
    if index != tuple(range(len(_v.IDS))):  # a static choice: slices, not a gather per element
        for k in names:
            if k != "module_stage_s":
                axis = -2 if k in ("hot_spot", "energy_per_step_J") else -1
                picked[k] = jnp.take(out[k], np.asarray(index), axis=axis)
    return picked


def sweep(scenario: Scenario | None = None, *, bandwidth=None, enob=None, budget=None,
          variant=None, model=None, workers_per_dc=None, H=None, basis=None,
          quantities: Sequence[str] | None = None, **fields) -> xr.Dataset:
    """Evaluate every closed form over a labelled grid in one jitted call.

    Each argument is a scalar (a scalar coordinate, no dimension) or a sequence (a dimension).
    Dimensions appear in the order of the arguments below, then ``variant``, then the inner axes
    (``component`` for ``hot_spot``, ``energy`` for ``energy_per_step_J``, ``stage``).

    Args:
      scenario: the parameters; the reference scenario by default.
      bandwidth: WAN bandwidth per direction, GB/s.
      enob: bits per in-transit band coefficient; steps exist only for measured ENOB.
      budget: module compute budget, GFLOP/s, or ``"free"`` / ``"low"`` / ``"high"``.
      variant: variant ids; all six by default (as a dimension).
      model: preset names (:data:`bandjax.scenario.PRESETS`) or parameter counts.
      workers_per_dc: workers per DC (2 DCs).
      H: sync every H steps (steps to target are assumed unchanged).
      basis: ``"hypothesis"`` or ``"exact"``: which steps E' takes.
      quantities: which variables to return (default all of :data:`QUANTITIES`).
      **fields: any other numeric scenario field by name, in SI units (e.g. ``optics_Sps``).

    Returns:
      An ``xarray.Dataset``; every variable has ``attrs["units"]``. ``time_to_target_s`` is NaN
      where a variant never reaches the target or was not measured, and ``status`` says which.
      The arrays are read-only (the jitted outputs, and broadcast views for quantities that do
      not vary along every axis); ``ds.copy(deep=True)`` gives writable ones.
    """
    sc = reference() if scenario is None else scenario
    names = tuple(QUANTITIES if quantities is None else quantities)
    for q in names:
        if q not in QUANTITIES:
            raise ValueError(f"quantities: {q!r} is not known; allowed: {', '.join(QUANTITIES)}")

    axes: list[tuple[str, list, dict]] = []  # (dim name, coordinate values, scenario overrides)
    scalars: dict[str, object] = {}
    overrides: dict[str, np.ndarray | float] = {}

    def add(dim, given, coord_values, field_values: dict):
        values, is_dim = given
        if is_dim:
            axes.append((dim, coord_values, field_values))
        else:
            scalars[dim] = coord_values[0]
            overrides.update({k: v[0] for k, v in field_values.items()})

    if bandwidth is not None:
        vals, is_dim = as_list("bandwidth", bandwidth)
        gbps = positive("bandwidth", vals, "GB/s")
        add("bandwidth", (vals, is_dim), gbps, {"wan_Bps": np.asarray(gbps) * 1e9})
    enobs = [float(sc.enob)]
    if enob is not None:
        vals, is_dim = as_list("enob", enob)
        for e in vals:
            if isinstance(e, bool) or not isinstance(e, (int, float, np.number)) or not 1 <= e <= 32:
                raise ValueError(f"enob = {e!r}: must be a number of bits in [1, 32]")
        enobs = [float(e) for e in vals]
        add("enob", (vals, is_dim), enobs, {"enob": enobs})
    if budget is not None:
        vals, is_dim = as_list("budget", budget)
        flops = budgets_FLOPs(sc, vals)
        add("budget", (vals, is_dim), [f / 1e9 for f in flops], {"budget_FLOPs": flops})
    if model is not None:
        vals, is_dim = as_list("model", model)
        labels, params = models(vals)
        gpu = [float(sc.at_model_size(p).gpu_compute_s) for p in params]
        add("model", (vals, is_dim), labels, {"params": params, "gpu_compute_s": gpu})
        model_params = params
    if workers_per_dc is not None:
        vals, is_dim = as_list("workers_per_dc", workers_per_dc)
        for n in vals:
            if isinstance(n, bool) or not isinstance(n, (int, float, np.number)) or n < 1 or float(n) != int(n):
                raise ValueError(f"workers_per_dc = {n!r}: must be a whole number >= 1")
        add("workers_per_dc", (vals, is_dim), [int(n) for n in vals], {"workers_per_dc": [float(n) for n in vals]})
    if H is not None:
        vals, is_dim = as_list("H", H)
        hs = positive("H", vals, "steps")
        add("H", (vals, is_dim), hs, {"sync_every_H": hs})
    bases = ["hypothesis"]
    if basis is not None:
        vals, is_dim = as_list("basis", basis)
        for b in vals:
            if b not in BASES:
                raise ValueError(f"basis = {b!r} is not known; allowed: {', '.join(BASES)}")
        bases = list(vals)
        add("basis", (vals, is_dim), bases, {})
    for name, values in fields.items():
        if name not in FIELDS:
            raise ValueError(f"{name} is not a sweep argument or scenario field; allowed: bandwidth, "
                             f"enob, budget, variant, model, workers_per_dc, H, basis, "
                             f"{', '.join(FIELDS)}")
        vals, is_dim = as_list(name, values)
        floats = [float(x) for x in vals]
        for x in floats:
            if math.isnan(x) or (x < 0):
                raise ValueError(f"{name} = {x!r}: must be a number >= 0 ({FIELDS[name][2]} in SI units)")
        add(name, (vals, is_dim), floats, {name: floats})

    vids, variant_is_dim = as_list("variant", list(_v.IDS) if variant is None else variant)
    for vid in vids:
        _v.get(vid)
    index = np.array([_v.IDS.index(vid) for vid in vids])

    # Scenario leaves: each swept field is a 1-D array on its own axis (trailing variant axis is
    # appended by the closed forms), everything else a 0-d array.
    ndim = len(axes)
    leaves = {k: np.asarray(v, dtype=float) for k, v in overrides.items()}
    for i, (_, _, fvals) in enumerate(axes):
        shape = [1] * ndim
        shape[i] = -1
        for k, v in fvals.items():
            leaves[k] = np.reshape(np.asarray(v, dtype=float), shape)
    if model is not None and "gpu_compute_s" in fields:
        raise ValueError("gpu_compute_s cannot be swept together with model (model sets it)")
    # numpy leaves: jit takes them through its fast path (a jnp.asarray each costs a dispatch)
    sc = jax.tree.map(lambda x: np.asarray(x, dtype=float), sc.replace(**leaves))

    # Steps to target, resolved outside jit: table (enob, basis, variant) indexed onto the grid.
    steps = np.array([[[sc.steps.lookup(vid, e, b) for vid in _v.IDS] for b in bases] for e in enobs])
    dims = [a[0] for a in axes]

    def axis_index(dim, size):
        shape = [1] * (ndim + 1)
        if dim in dims:
            shape[dims.index(dim)] = size
            return np.arange(size).reshape(shape)
        return np.zeros(shape, dtype=int)

    steps_arr = steps[axis_index("enob", len(enobs)), axis_index("basis", len(bases)),
                      np.arange(len(_v.IDS))]

    jit_names = tuple(q for q in names if q not in ("steps_to_target", "status"))
    raw = _evaluate(sc, steps_arr, tuple(index.tolist()), jit_names)
    raw = {k: np.asarray(v) for k, v in raw.items()}  # zero-copy views of the jitted outputs

    grid_shape = tuple(len(a[1]) for a in axes)
    coords: dict[str, object] = {}
    for dim, cvals, _ in axes:
        coords[dim] = xr.Variable(dim, np.asarray(cvals), COORD_ATTRS.get(dim) or {"units": SI[FIELDS[dim][2]]})
    for dim, cval in scalars.items():
        coords[dim] = xr.Variable((), cval, COORD_ATTRS.get(dim, {}))
    if model is not None:
        coords["params"] = xr.Variable(("model",) if "model" in dims else (), np.asarray(model_params if "model" in dims else model_params[0]), COORD_ATTRS["params"])

    vdims = dims + (["variant"] if variant_is_dim else [])
    if variant_is_dim:
        coords["variant"] = xr.Variable("variant", np.asarray(vids), COORD_ATTRS["variant"])
        coords["label"] = xr.Variable("variant", np.asarray([_v.get(v).short for v in vids]))
    else:
        coords["variant"] = xr.Variable((), vids[0], COORD_ATTRS["variant"])

    # Quantities that do not vary along every axis come back small; broadcasting them is a view.
    def full(a, inner=()):
        a = np.broadcast_to(a, (*grid_shape, len(vids), *inner))
        return a if variant_is_dim else a[(..., 0, *(slice(None) for _ in inner))]

    steps_picked = np.take(steps_arr, index, axis=-1)
    data = {}
    for q in names:
        if q == "steps_to_target":
            data[q] = (vdims, full(steps_picked))
        elif q == "status":
            data[q] = (vdims, full(metrics.status_of(steps_picked)))
        elif q == "hot_spot":
            data[q] = (vdims + ["component"], full(raw[q], (len(COMPONENTS),)))
        elif q == "energy_per_step_J":
            data[q] = (vdims + ["energy"], full(raw[q], (len(ENERGY_COLUMNS),)))
        elif q == "module_stage_s":
            data[q] = (dims + ["stage"], np.broadcast_to(raw[q], (*grid_shape, len(STAGES))))
        else:
            data[q] = (vdims, full(raw[q]))
    if "hot_spot" in names:
        coords["component"] = list(COMPONENTS)
    if "energy_per_step_J" in names:
        coords["energy"] = list(ENERGY_COLUMNS)
    if "module_stage_s" in names:
        coords["stage"] = list(STAGES)
    ds = xr.Dataset({k: xr.Variable(d, v, _ATTRS[k]) for k, (d, v) in data.items()}, coords=coords)
    ds.attrs.update({
        "title": "bandjax closed-form sweep",
        "target_loss": float(sc.steps.target_loss),
        "assumptions": "d calibrated to the study's step times; steps to target are single-seed "
                       "measurements; E' takes E's steps on the hypothesis basis; syncing every H "
                       "steps assumes steps to target unchanged",
    })
    return ds
