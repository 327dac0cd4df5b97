"""Labelled sweeps: xarray in, xarray out; labels outside jit, raw arrays inside.

:func:`sweep` turns each swept parameter into a 1-D array placed on its own axis, so the closed
forms broadcast over the grid in one jitted call. Only array shapes reach the compiler: new
coordinate values of the same shape reuse the compiled function.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import math
import threading
import time
import weakref
from functools import partial
from typing import NamedTuple, Sequence

from . import _jax  # noqa: F401  (64-bit floats, the Scenario PyTree)
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import xarray as xr
from xarray.indexes import PandasIndex

from . import _limits, failures, metrics
from ._budget_index import BudgetIndex, budget_names
from .labels import BUDGET_NAMES, COORD_ATTRS, budget_labels
from . import sites as _sites
from .links import as_data, scaling_note, unflatten
from .scenario import TOPOLOGIES, Scenario, reference, check_overrides
from .step import COMPONENTS, STAGES, module_stages_s
from .stragglers import may_straggle, settled
from .sweepargs import Grid, parse

QUANTITIES = ("step_s", "gpu_s", "comm_s", "compute_utilisation", "time_to_target_s",
              "steps_to_target", "status", "hot_spot", "energy_per_step_J", "energy_to_target_J", "bytes_per_worker_B",
              "wan_B", "module_stage_s", "ettr", "goodput", "mtbf_s", "checkpoint_interval_s",
              "failure_status", "throughput_tokens_per_s")
# quantities of the grid alone, without a variant axis
NO_VARIANT = ("module_stage_s", "mtbf_s")
ENERGY_COLUMNS = (*metrics.ENERGY_PARTS, "total")
DTYPES = ("float64", "float32")  # the precision of a sweep's or a winner map's jitted pass

_ATTRS = {
    "step_s": {"units": "s", "long_name": "step time"},
    "gpu_s": {"units": "s", "long_name": "useful GPU compute per step (on sites that differ "
                                         "(sum_i n_i H_i c_i) / (N H))"},
    "comm_s": {"units": "s", "long_name": "everything per step but the useful GPU compute: communication, d and the waits for the slowest worker and the slowest site"},
    "compute_utilisation": {"units": "1", "long_name": "compute utilisation: GPU compute per step / "
                                                       "step time (1: the network costs nothing)"},
    "throughput_tokens_per_s": {"units": "tokens/s", "long_name": "tokens trained a second: T N / "
                                "step (on sites that differ T sum_i n_i H_i / (H step))"},
    "time_to_target_s": {"units": "s", "long_name": "time to the target loss (steps x N T / "
                                                 "throughput: steps x step time but under sites 'scaled')",
                         "note": "NaN where the variant never reaches the target or was not measured; see status"},
    "steps_to_target": {"units": "1", "long_name": "measured steps to the target loss",
                        "note": "inf = measured, never reaches it; NaN = not measured"},
    "status": {"units": "1", "long_name": "why time_to_target_s is or is not a number",
               "flag_values": [metrics.OK, metrics.NEVER, metrics.NOT_MEASURED],
               "flag_meanings": metrics.STATUS_MEANINGS},
    "hot_spot": {"units": "1", "long_name": "share of the step held by each component (sums to 1)"},
    "energy_per_step_J": {"units": "J", "long_name": "energy per step, by column"},
    "energy_to_target_J": {"units": "J", "long_name": "energy to the target loss (steps x energy per step)"},
    "bytes_per_worker_B": {"units": "B", "long_name": "bytes a worker sends per step (a sync's bytes / H)"},
    "wan_B": {"units": "B", "long_name": "bytes on each directed WAN link in use per step (a sync's bytes / H)"},
    "module_stage_s": {"units": "s", "long_name": "module pipeline stage time, one worker's delta"},
    "ettr": {"units": "1", "long_name": "effective training time ratio: share of wall time on work "
                                         "that is kept, failures counted (1: nothing fails)",
             "note": "first order in the failure rate (docs/model.md section 17); see failure_status"},
    "goodput": {"units": "1", "long_name": "goodput: compute utilisation x ETTR",
                "note": "first order in the failure rate (docs/model.md section 17); see failure_status"},
    "mtbf_s": {"units": "s", "long_name": "mean time between failures of the cluster, 1 / (N r)"},
    "checkpoint_interval_s": {"units": "s", "long_name": "checkpoint interval of a job that stops on "
                                                         "any failure (Young's unless set)",
                              "note": "NaN for a variant syncing in rounds: its replicas recover "
                                      "from a peer"},
    "failure_status": {"units": "1", "long_name": "whether the first-order failure forms hold "
                                                  "(the product with the failure rate <= 0.1)",
                       "flag_values": [failures.FIRST_ORDER, failures.BEYOND_FIRST_ORDER],
                       "flag_meanings": failures.STATUS_MEANINGS},
}


@partial(jax.jit, static_argnames=("index", "names", "straggles"))
def _evaluate(sc: Scenario, steps, index: tuple[int, ...], names: tuple[str, ...],
              straggles: bool = True):
    """The requested quantities on the grid, variants picked by ``index`` (registry positions).

    Times and energies to target are NaN where the steps are not a finite number (never reaches
    the target, or not measured), inside the one fused pass rather than as a copy afterwards.
    ``straggles`` (static): :func:`bandjax.stragglers.may_straggle` of the concrete grid; False
    leaves the quadrature of c' out of the program (half the report's sweeps' compile time),
    with the same outputs bit for bit.
    """
    out = metrics.evaluate(settled(sc, straggles), steps)
    ok = jnp.isfinite(steps)
    for q in ("time_to_target_s", "energy_to_target_J"):
        out[q] = jnp.where(ok, out[q], jnp.nan)
    out["hot_spot"] = metrics.hot_spots(out["terms_s"])
    energy = out["energy_J"]
    out["energy_per_step_J"] = jnp.concatenate([energy, jnp.sum(energy, -1, keepdims=True)], -1)
    out["module_stage_s"] = module_stages_s(sc)
    picked = {k: out[k] for k in names}
    if index != tuple(range(len(sc.variants))):  # a static choice: slices, not a gather per element
        for k in names:
            if k not in NO_VARIANT:
                axis = -2 if k in ("hot_spot", "energy_per_step_J") else -1
                picked[k] = jnp.take(out[k], np.asarray(index), axis=axis)
    return picked


QUICK_CELLS = 2 ** 15
"""Grids of at most this many cells (points x variants) are compiled with
:func:`bandjax._jax.quick_compile`'s options: a third of the compile time, for a run about 1.5x
(7,200 cells) to 3x (72,000 cells) slower, which a grid this small pays back only after hundreds of
calls. The report's sweeps are all below it (the largest, its curves, 11,664 cells)."""
_evaluate_quick = _jax.quick(_evaluate, static_argnames=("index", "names", "straggles"))


def sweep(scenario: Scenario | None = None, *, bandwidth=None, enob=None, budget=None,
          variant=None, model=None, gpu=None, dcs=None, topology=None, workers_per_dc=None, H=None,
          basis=None, link=None, link_bandwidth=None, link_latency_s=None,
          quantities: Sequence[str] | None = None, dtype: str = "float64",
          **fields) -> xr.Dataset:
    """Evaluate every closed form over a labelled grid in one jitted call.

    Each argument is a scalar (a scalar coordinate, no dimension) or a sequence (a dimension).
    Dimensions appear in the order of the arguments below, then ``variant``, then the inner axes
    (``component`` for ``hot_spot``, ``energy`` for ``energy_per_step_J``, ``stage``). The
    arguments are parsed by :func:`bandjax.sweepargs.parse`.

    Args:
      scenario: the parameters; the reference scenario by default.
      bandwidth: WAN bandwidth per directed link, GB/s.
      enob: bits per in-transit band coefficient; steps exist only for measured ENOB.
      budget: module compute budget, GFLOP/s, or ``"free"`` / ``"low"`` / ``"high"``.
      variant: variant ids of the scenario's registry; all by default (as a dimension).
      model: preset names (:data:`bandjax.scenario.PRESETS`) or parameter counts.
      gpu: GPU presets (:data:`bandjax.scenario.GPUS`, or ``"study"``).
      dcs: the number of data centres K (whole, >= 2).
      topology: ``"ring"`` or ``"mesh"`` (one compiled call covers both).
      workers_per_dc: workers per DC.
      H: sync every H steps (steps to target are assumed unchanged).
      basis: ``"hypothesis"`` or ``"exact"``: which steps a basis-dependent rule takes.
      link: one link of the scenario's links table, ``"a -> b"`` (from DC a to DC b) or
        ``"a <-> b"`` (both directions, each taking the same values), whose own bandwidth or
        latency ``link_bandwidth`` and ``link_latency_s`` set, every other link keeping its own.
      link_bandwidth: that link's bandwidth, GB/s (not beside ``bandwidth`` / ``wan_Bps``,
        which scale every link).
      link_latency_s: that link's one-way latency, s (not beside ``wan_latency_s``).
      quantities: which variables to return (default all of :data:`QUANTITIES`).
      dtype: ``"float64"`` (default) or ``"float32"``: the precision of the jitted pass (float32
        is faster; on the reference grid of ``benchmarks/winner_bench.py`` its times to target
        differ from float64's by at most 2.5e-7 relative, ``float32.max_rel_err`` in
        BENCHMARKS.md). Break-evens are always float64.
      **fields: any other numeric scenario field by name, in SI units (``wan_latency_s``,
        ``overlap_fraction``, ``optics_Sps``, ...).

    Under uncertain inputs, :func:`bandjax.sweep` with ``samples`` (:mod:`bandjax.answers`).

    The jitted pass starts as soon as the arguments are checked, and the coordinates are built
    while it runs. A scenario keeps, while it lives, the last 8 grids that its sweeps' arguments
    parsed to (arguments of at most :data:`ARGS_KEPT_UP_TO` values in all, told apart by type and
    every bit), with their coordinates and overrides once the same arguments come a second time:
    sweeping the same axes again (for other quantities, say) neither parses, checks nor labels
    them again; from the third time with the same quantities (float64), only the memory the
    sweep needs is checked and only its outputs are labelled. The result is the same, bit for
    bit; a scenario made anew keeps nothing.

    Returns:
      An ``xarray.Dataset``; every variable has ``attrs["units"]``. ``time_to_target_s`` is NaN
      where a variant never reaches the target or was not measured, and ``status`` says which.
      ``bytes_per_worker_B`` and ``wan_B`` are per step (a sync's bytes / H).
      With per-link values (``scenario.links``), ``bandwidth`` / ``wan_Bps`` is the slowest link's
      and ``wan_latency_s`` the longest link's: every link scales in proportion, and
      ``attrs["links_scaling"]`` says so (:func:`bandjax.links.scaling_note`). ``dcs`` cannot be
      swept then (K comes from the table). Over ``link_bandwidth`` or ``link_latency_s`` the
      slowest link's bandwidth and the longest link's latency follow the swept link point by
      point, and its coordinate's ``attrs["link"]`` names it.
      The arrays are read-only (the jitted outputs, broadcast views for quantities that do
      not vary along every axis, and the coordinates); ``ds.copy(deep=True)`` gives writable
      ones.
    """
    sc = reference() if scenario is None else scenario
    names = tuple(QUANTITIES if quantities is None else quantities)
    for q in names:
        if q not in QUANTITIES:
            raise ValueError(f"quantities: {q!r} is not known; allowed: {', '.join(QUANTITIES)}")
    args = dict(bandwidth=bandwidth, enob=enob, budget=budget, variant=variant, model=model,
                gpu=gpu, dcs=dcs, topology=topology, workers_per_dc=workers_per_dc, H=H,
                basis=basis, link=link, link_bandwidth=link_bandwidth,
                link_latency_s=link_latency_s, **fields)
    kept, key = _Kept.of(sc), _args_key(args)
    again = kept.grid(key)
    plan = None if again is None else again.plans.get((names, dtype))
    if plan is not None:  # the same arguments, quantities and precision again
        return _replay(sc, again.grid, names, dtype, plan)
    g = parse(sc, **args) if again is None else again.grid
    check_size(sc, g, names, dtype)
    # the jitted pass runs on XLA's threads while the labels are built here (label converts the
    # outputs last): every check above and in dispatch_grid comes before it starts
    raw = dispatch_grid(sc, g, names, dtype, kept=again)
    if again is None:  # made as it is the first time; kept for when it comes again
        kept.keep_grid(key, g)
        return label(sc, g, raw, names)
    ds = label(sc, g, raw, names, kept=again)
    if dtype == "float64":  # what a third time needs, found once
        again.plans[names, dtype] = _Plan(_need_bytes(sc, g, names, dtype),
                                          _call(sc, g, names, dtype, kept=again),
                                          again.specs[names], again.labels[_inner_dims(names)],
                                          again.sizes[names])
    return ds


class _Plan(NamedTuple):
    """A sweep of a kept grid (:class:`_KeptGrid`) for the same quantities at float64, made a
    second time: everything :func:`_replay` needs to make it again without parsing, checking
    or labelling anything but the outputs."""

    need: tuple  # check_size's estimate of the memory it needs (_need_bytes)
    call: tuple  # (jitted function, scenario arrays, steps, index, jitted names)
    specs: tuple  # label's (name, dims, attrs, value, late) per variable
    built: tuple  # the coordinates, indexes and attrs (_coordinates), shared, never handed out
    sizes: dict  # the Dataset's sizes


def _replay(sc: Scenario, g: Grid, names: tuple[str, ...], dtype: str, plan: _Plan) -> xr.Dataset:
    """The sweep of ``plan`` again: its memory checked by :func:`check_size`, the
    jitted pass started at once and the Dataset built as :func:`label` builds it. At 1e5 cells
    and 100 budgets, the sweep's own CPU time (warm, the pass left out) went from 23 to 16 us,
    and its cost beside its core in ``benchmarks/sweep.py`` (``wrapper_s``) from 94-96 to
    56-92 us."""
    check_size(sc, g, names, dtype, need=plan.need)
    fn, arrays, steps, index, jit_names = plan.call
    return _dataset(plan.specs, fn(arrays, steps, index=index, names=jit_names),
                    _own(plan.built), plan.sizes)


ARGS_KEPT_UP_TO = 2**14
"""Sweep arguments of at most this many values in all (arrays of numbers or text, and lists or
tuples of up to 64 plain values) are told apart exactly by :func:`_args_key`, so that the grid
they parse to can be kept with the scenario (:class:`_Kept`); larger ones are parsed every time."""


def _args_key(args: dict):
    """A key that tells sweep arguments apart exactly, or None where they are not kept.

    Exactly: the type of each value and every bit of it (``-0.0`` is not ``0.0``, ``1`` is not
    ``1.0`` nor ``True``), so that two arguments with one key parse to the same grid."""
    parts, size = [], 0
    for name, value in args.items():
        if value is None:  # the default: left out of the key, as an argument not given
            continue
        if type(value) is np.ndarray:
            size += value.size
            if value.dtype.kind not in "biufU" or size > ARGS_KEPT_UP_TO:
                return None  # before any copy: a huge argument is refused by parse, at once
            part = (np.ndarray, *_values_key(value))
        elif type(value) in (list, tuple):
            if len(value) > 64:
                return None
            size += len(value)
            items = tuple(_scalar_key(v) for v in value)
            if None in items:
                return None
            part = (type(value), items)
        else:
            part = _scalar_key(value)
            if part is None:
                return None
        if size > ARGS_KEPT_UP_TO:
            return None
        parts.append((name, part))
    return tuple(parts)


class _Bits(bytes):
    """An array's bytes in an argument key (:func:`_args_key`): equal to another only where every
    byte is, but hashed by its length and its first and last 64 bytes. Hashing every byte of a
    10,000-value axis cost more than the rest of a repeated sweep's key; keys that hash alike are
    told apart by comparing all their bytes, and a scenario keeps only a few."""

    __slots__ = ()

    def __hash__(self):
        return hash((len(self), bytes(self[:64]), bytes(self[-64:])))


def _scalar_key(value):
    """``(type, repr)`` of a plain value (repr tells every float apart), else None."""
    if value is None or type(value) in (bool, int, float, str) or isinstance(value, np.generic):
        return type(value), repr(value)
    return None


# Values a cell of each quantity holds per variant (the inner axis), for the memory estimate.
_WIDTH = {"hot_spot": len(COMPONENTS), "energy_per_step_J": len(ENERGY_COLUMNS)}


def _need_bytes(sc: Scenario, g: Grid, names: tuple[str, ...], dtype: str) -> tuple:
    """:func:`check_size`'s estimate: (bytes needed, values in the largest array, cells).

    Where the WAN's links are each their own (a links table, or sites), the closed forms hold a
    time per link in use at every point: K (K - 1) of them on a mesh. Those arrays are counted
    too, twice over (a K = 100 mesh over 1e4 and 1e5 bandwidths peaked at 0.9 and 7.7 GB above
    the process's start, about points x links x 8 B)."""
    points = math.prod(g.shape)
    cells = points * len(sc.variants)
    widths = [_WIDTH.get(q, 1) for q in names if q not in ("steps_to_target", "status")]
    itemsize = 4 if dtype == "float32" else 8
    per_link = points * links_per_point(sc, g)
    return (2 * (cells * sum(widths, 1) + per_link) * itemsize,
            max(cells * max(widths, default=1), per_link), cells)


def links_per_point(sc: Scenario, g: Grid | None = None) -> int:
    """The links whose times the closed forms hold at each point of a sweep where the WAN's links
    are each their own (a links table, or sites that differ): K (K - 1) where a point may be a
    mesh, else K; 0 where the WAN is one bandwidth and latency."""
    if sc.links is None and sc.sites is None:
        return 0
    K = sc.links.K if sc.links is not None else sc.sites.K
    topology = sc.topology if g is None else g.leaves.get("topology", sc.topology)
    mesh = bool(np.any(np.asarray(topology, dtype=float) == TOPOLOGIES.index("mesh")))
    return K * (K - 1) if mesh else K


def check_size(sc: Scenario, g: Grid, names: tuple[str, ...], dtype: str = "float64", *,
               need: tuple | None = None) -> None:
    """Refuse, before compiling, a sweep whose outputs would not fit in memory.

    The jitted pass computes every variant of the registry and writes each requested quantity
    (``hot_spot`` and ``energy_per_step_J`` with their inner axes), plus about as much again in
    intermediates; that estimate must stay under :data:`bandjax._limits.SWEEP_MEMORY_SHARE` of the
    memory available now, and no array may pass :data:`bandjax._limits.MAX_ARRAY_ELEMENTS`.
    ``need``: :func:`_need_bytes` of these arguments, where found before (a :class:`_Plan`).
    """
    MAX_ARRAY_ELEMENTS, SWEEP_MEMORY_SHARE = _limits.MAX_ARRAY_ELEMENTS, _limits.SWEEP_MEMORY_SHARE
    describe_bytes = _limits.describe_bytes
    need, largest, cells = _need_bytes(sc, g, names, dtype) if need is None else need
    avail = _available_memory_bytes(need / SWEEP_MEMORY_SHARE)
    if largest > MAX_ARRAY_ELEMENTS or need > SWEEP_MEMORY_SHARE * avail:
        shape = " x ".join(f"{a.name} {len(a.coords)}" for a in g.axes) or "one point"
        links = links_per_point(sc, g)
        raise ValueError(
            f"sweep of {shape} x {len(sc.ids)} variants ({cells:.3g} cells"
            + (f", each point with the times of {links:,} links" if links else "")
            + f") needs about {describe_bytes(need)} in memory"
            + (f" and arrays of {largest:.3g} values (at most {MAX_ARRAY_ELEMENTS:.3g})"
               if largest > MAX_ARRAY_ELEMENTS else
               f"; {describe_bytes(avail)} is available and at most "
               f"{SWEEP_MEMORY_SHARE:.0%} of it is used")
            + ": write it to disk in chunks with bandjax.store.write(path, scenario, ...), ask who "
              "wins with bandjax.winner(...) (no per-variant arrays), or ask for fewer quantities")


# A reading of the available memory is reused for this long, by sweeps that need less than
# 1/MEMORY_MARGIN of what it found: no change of memory in that time could change their verdict.
MEMORY_READING_S = 1.0
MEMORY_MARGIN = 100.0
_memory_reading: list = [None, -math.inf, math.inf]  # the function read, when (monotonic s), bytes


def _available_memory_bytes(least: float) -> float:
    """:func:`bandjax._limits.available_memory_bytes`, read again unless a reading younger than
    :data:`MEMORY_READING_S` found :data:`MEMORY_MARGIN` times ``least`` bytes or more."""
    read = _limits.available_memory_bytes
    fn, when, value = _memory_reading
    now = time.monotonic()
    if fn is read and now - when < MEMORY_READING_S and value >= MEMORY_MARGIN * least:
        return value
    value = read()
    _memory_reading[:] = [read, now, value]
    return value


@contextlib.contextmanager
def precision(dtype: str):
    """Run jitted model code at ``dtype`` (one of :data:`DTYPES`).

    float32 is JAX with 64-bit floats off for the call: every float in the closed forms (the
    scenario's leaves, steps, constants) is then float32, with no model code changed.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype = {dtype!r} is not known; allowed: {', '.join(DTYPES)}")
    if dtype == "float64":
        yield
        return
    with jax.enable_x64(False):
        yield


def scenario_arrays(sc: Scenario, g: Grid, device: bool = False) -> Scenario:
    """The scenario with grid ``g``'s overrides, every leaf a NumPy float64 array (``device``:
    the scenario's own leaves on the device, for a float64 pass; the overrides too, from the
    second time the scenario meets them, while it keeps them).

    The overrides, each value checked by :func:`~bandjax.sweepargs.parse`, are checked for what
    must hold between fields (:func:`bandjax.scenario.check_overrides`) the first time the scenario
    meets them. A scenario is frozen, so its own leaves as
    arrays and the last few sets of overrides it accepted are kept with it (:class:`_Kept`): a
    sweep of the same scenario over the same axes again is not checked again.
    """
    # numpy leaves: jit takes them through its fast path (a jnp.asarray each costs a dispatch)
    kept = _Kept.of(sc)
    leaves = {k: np.asarray(v, dtype=float) for k, v in g.leaves.items()}
    key = (tuple((k, v.shape, v.tobytes()) for k, v in leaves.items())
           if sum(v.size for v in leaves.values()) <= _Kept.LEAF_VALUES else None)
    if not kept.accepts(key):
        check_overrides(sc, g.leaves)  # raises on a relation the scenario does not allow
        kept.accept(key)
        out = dataclasses.replace(kept.device if device else kept.arrays, **leaves)
    elif device:  # met again: worth putting on the device once
        out = kept.on_device(key, leaves)
    else:
        out = dataclasses.replace(kept.arrays, **leaves)
    # one link swept: the table at every grid point, as data
    return out if g.links is None else dataclasses.replace(out, links=unflatten(sc.links.names,
                                                                                g.links))


class _Kept:
    """What a sweep keeps with a scenario while it lives (a scenario is frozen): its leaves as
    NumPy float64 arrays and as device arrays, the last few sets of grid overrides that it
    accepted (with the scenario of those overrides on the device, once a float64 pass used them),
    and the last few grids that sweep arguments parsed to (:func:`_args_key`) with their
    coordinates, indexes and attrs once built (:func:`label`): a notebook that sweeps the same
    axes again, for other quantities, parses, checks and labels them once."""

    OVERRIDES = 8  # sets of overrides kept per scenario
    GRIDS = 8  # parsed grids kept per scenario
    LEAF_VALUES = 2**16  # overrides of more values in all are checked every time
    PIECES = 32  # dimensions' coordinates and indexes kept per scenario (_coordinates)
    _by_id: dict = {}

    def __init__(self, sc: Scenario):
        key, by_id = id(sc), _Kept._by_id  # bound now: at exit the class may be gone first
        self.ref = weakref.ref(sc, lambda _: by_id.pop(key, None))
        self.arrays = jax.tree.map(lambda x: np.asarray(x, dtype=float), sc)
        self._accepted: collections.OrderedDict = collections.OrderedDict()  # key -> device or None
        self._grids: collections.OrderedDict = collections.OrderedDict()
        self._pieces: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()  # a store's slices may be swept from several threads
        self._device = None

    def accepts(self, key) -> bool:
        """Whether these overrides (``key``; None: too large to keep) were accepted before."""
        with self._lock:
            if key is None or key not in self._accepted:
                return False
            self._accepted.move_to_end(key)
            return True

    def accept(self, key) -> None:
        if key is None:
            return
        with self._lock:
            self._accepted[key] = None
            while len(self._accepted) > self.OVERRIDES:
                self._accepted.popitem(last=False)

    def on_device(self, key, leaves: dict) -> Scenario:
        """The scenario on the device with the accepted overrides ``leaves`` (of ``key``) on the
        device too, put there once: the jitted call then converts no argument."""
        with self._lock:
            sc = self._accepted.get(key)
        if sc is None:
            sc = dataclasses.replace(self.device, **jax.device_put(leaves))
            with self._lock:
                if key in self._accepted:
                    self._accepted[key] = sc
        return sc

    def grid(self, key) -> "_KeptGrid | None":
        """The grid that sweep arguments of ``key`` parsed to, with what is kept of it (None:
        not kept)."""
        if key is None:
            return None
        with self._lock:
            entry = self._grids.get(key)
            if entry is not None:
                self._grids.move_to_end(key)
            return entry

    def keep_grid(self, key, g: Grid) -> None:
        """Keep ``g``, parsed from arguments of ``key`` and accepted by the scenario."""
        if key is None:
            return
        with self._lock:
            self._grids[key] = _KeptGrid(g)
            while len(self._grids) > self.GRIDS:
                self._grids.popitem(last=False)

    def piece(self, key, build) -> tuple[dict, dict]:
        """The coordinates and indexes of one dimension of a sweep (:func:`_coordinates`), each
        Variable this Dataset's own copy (:func:`_shallow_copy`) of the kept one: ``build()``
        made once per ``key`` (None: made every time, not kept) among the last :data:`PIECES`."""
        if key is None:
            return build()
        with self._lock:
            got = self._pieces.get(key)
            if got is not None:
                self._pieces.move_to_end(key)
        if got is None:
            got = build()
            with self._lock:
                self._pieces[key] = got
                while len(self._pieces) > self.PIECES:
                    self._pieces.popitem(last=False)
        variables, indexes = got
        return {name: _shallow_copy(var) for name, var in variables.items()}, indexes

    @classmethod
    def of(cls, sc: Scenario) -> "_Kept":
        kept = cls._by_id.get(id(sc))
        if kept is None or kept.ref() is not sc:
            kept = cls._by_id[id(sc)] = cls(sc)
        return kept

    @property
    def device(self) -> Scenario:
        if self._device is None:
            self._device = jax.device_put(self.arrays)
        return self._device


@dataclasses.dataclass
class _KeptGrid:
    """A grid a scenario keeps (:meth:`_Kept.keep_grid`), and what is kept of it once it comes
    again: its coordinates, indexes and attrs by inner dimensions, and its Datasets' sizes and
    variables' specs by quantities (:func:`label`), the scenario with its overrides and the steps
    on the device (:func:`dispatch_grid`), and a sweep's :class:`_Plan` by quantities and
    precision once it came a second time (:func:`sweep`)."""

    grid: Grid
    labels: dict = dataclasses.field(default_factory=dict)
    sizes: dict = dataclasses.field(default_factory=dict)
    specs: dict = dataclasses.field(default_factory=dict)
    plans: dict = dataclasses.field(default_factory=dict)
    device: tuple | None = None


def dispatch_grid(sc: Scenario, g: Grid, names: tuple[str, ...], dtype: str = "float64", *,
                  kept: _KeptGrid | None = None) -> dict:
    """Start the jitted pass of ``names`` on grid ``g`` and return its outputs (JAX arrays) at
    once: JAX dispatches asynchronously, so the pass runs while the caller goes on, and
    ``np.asarray`` of an output waits for it. The overrides are checked before it starts.
    ``kept``: ``g`` as the scenario keeps it (accepted before), whose arrays are then put on the
    device once."""
    with precision(dtype) if dtype != "float64" else contextlib.nullcontext():
        fn, arrays, steps, index, jit_names = _call(sc, g, names, dtype, kept=kept)
        return fn(arrays, steps, index=index, names=jit_names)


def _call(sc: Scenario, g: Grid, names: tuple[str, ...], dtype: str = "float64", *,
          kept: _KeptGrid | None = None) -> tuple:
    """What :func:`dispatch_grid` calls: (jitted function, scenario arrays, steps, index, jitted
    names); a float32 call must be made in :func:`precision` (the arrays are NumPy's for it)."""
    jit_names = tuple(q for q in names if q not in ("steps_to_target", "status"))
    if kept is not None and dtype == "float64":
        if kept.device is None:
            kept.device = (scenario_arrays(sc, g, device=True), jax.device_put(g.steps))
        arrays, steps = kept.device
    else:
        arrays, steps = scenario_arrays(sc, g, device=dtype == "float64"), g.steps
    small = math.prod(g.shape) * len(g.index) <= QUICK_CELLS
    # a links table as data: a sweep of another table of the same K runs the same program
    fn = partial(_evaluate_quick if small else _evaluate, straggles=may_straggle(arrays))
    return fn, as_data(arrays), steps, tuple(g.index), jit_names


def evaluate_grid(sc: Scenario, g: Grid, names: tuple[str, ...], dtype: str = "float64") -> dict:
    """The jitted quantities of ``names`` on grid ``g`` as NumPy arrays (zero-copy views)."""
    return {k: np.asarray(v) for k, v in dispatch_grid(sc, g, names, dtype).items()}


def grid_coords(g: Grid) -> dict:
    """The grid's coordinates as xarray Variables: one per axis, each scalar argument, and the
    extra coordinates beside the axes (labels, names)."""
    coords: dict[str, object] = {}
    for a in g.axes:
        coords[a.name] = xr.Variable(a.name, np.asarray(a.coords), a.attrs)
    return {**coords, **_beside_axes(g)}


def _beside_axes(g: Grid) -> dict:
    """The grid's coordinates that are not an axis's: each scalar argument, and the extra
    coordinates beside the axes (a model's parameters)."""
    coords = {dim: xr.Variable((), cval, g.scalar_attrs.get(dim, {}))
              for dim, cval in g.scalars.items()}
    for name, (cdims, values, attrs) in g.extra_coords.items():  # a copy: a grid may be kept
        coords[name] = xr.Variable(cdims, np.array(values), attrs)
    return coords


def _indexed(coords: dict, budget_index_names: dict | None) -> tuple[dict, dict]:
    """The coordinates of a Dataset built directly (:func:`_assemble`), with the indexes
    ``xr.Dataset(data, coords=coords)`` would give them: a ``PandasIndex`` for each dimension
    coordinate, the ``budget`` axis's :class:`~bandjax._budget_index.BudgetIndex` at once with
    ``budget_index_names``. ``coords``: name -> ``xr.Variable``, each made for this Dataset
    (the Dataset takes those that are not dimension coordinates as they are). Returns (name -> the
    coordinate's own Variable, as its index gives it for a dimension coordinate; name -> index).
    The indexes of text axes (variant ids, components) are kept between calls: they are the same
    few every time."""
    indexes = {}
    for name, var in coords.items():
        if var.dims != (name,):
            continue
        budget = name == "budget" and budget_index_names is not None
        if var.dtype.kind == "U" and not budget:
            indexes[name] = _text_index(name, tuple(var.values.tolist()), var.dtype.str)
        elif var.dtype.kind in "fi" and var.dtype.itemsize == 8:  # what from_variables makes
            cls, extra = (BudgetIndex, {"names": budget_index_names}) if budget else (PandasIndex, {})
            indexes[name] = cls(pd.Index(var.values, name=name), name, coord_dtype=var.dtype,
                                fastpath=True, **extra)
        elif budget:
            indexes[name] = BudgetIndex.from_variables({name: var},
                                                       options={"names": budget_index_names})
        else:
            indexes[name] = PandasIndex.from_variables({name: var}, options={})
    # a Variable made by its constructor owns its attrs dict (a copy), as the Dataset's must
    variables = {name: indexes[name].create_variables({name: var})[name] if name in indexes
                 else var for name, var in coords.items()}
    return variables, indexes


def _assemble(data: dict, coord_variables: dict, indexes: dict, attrs: dict | None,
              sizes: dict | None = None) -> xr.Dataset:
    """``xr.Dataset(data, coords=coords, attrs=attrs)`` for variables that are already
    consistent, built directly from ``data`` (name -> ``xr.Variable``) and :func:`_indexed`'s
    coordinates and indexes, without the general constructor's alignment and merge, which cost
    more than the rest of a 1e5-cell sweep's labelling. Data variables come first, as the
    constructor orders them. The Dataset takes the Variables as they are: each must be made for
    it (a Variable's constructor copies the attrs dict it is given, as the Dataset's does).
    ``sizes``: the Dataset's sizes, in the order xarray finds them, where known (an earlier
    Dataset of the same quantities on the same grid); found from the variables otherwise."""
    variables = {**data, **coord_variables}
    return xr.Dataset._construct_direct(variables, set(coord_variables),
                                        dims=None if sizes is None else dict(sizes),
                                        indexes=indexes, attrs=None if attrs is None else dict(attrs))


@functools.lru_cache(maxsize=64)
def _text_index(name: str, values: tuple, dtype: str) -> PandasIndex:
    return PandasIndex.from_variables({name: xr.Variable(name, np.asarray(values, dtype=dtype))},
                                      options={})


_INNER = (("hot_spot", "component", COMPONENTS), ("energy_per_step_J", "energy", ENERGY_COLUMNS),
          ("module_stage_s", "stage", STAGES))
_INNER_OF = {q: (dim, values) for q, dim, values in _INNER}


def _inner_dims(names: tuple[str, ...]) -> tuple[str, ...]:
    """The inner dimensions of quantities ``names``, in the order of :data:`_INNER`."""
    return tuple(dim for q, dim, _ in _INNER if q in names)


def label(sc: Scenario, g: Grid, raw: dict, names: tuple[str, ...], *,
          kept: _KeptGrid | None = None) -> xr.Dataset:
    """The labelled dataset of a grid's evaluated quantities.

    ``raw``: the jitted outputs, NumPy arrays or JAX arrays still being computed
    (:func:`dispatch_grid`): the coordinates, their indexes, the attrs and the Dataset itself are
    built first, and the outputs converted (waited for) only then, each into the Variable made
    for it. ``kept``: ``g`` as the scenario keeps it (:class:`_Kept`), where its coordinates,
    indexes, attrs and sizes are kept between calls, or None.
    """
    inner = _inner_dims(names)
    built = None if kept is None else kept.labels.get(inner)
    if built is None:
        built = _coordinates(sc, g, inner)
        if kept is not None:
            kept.labels[inner] = built
    if kept is None:
        coord_variables, indexes, attrs = built
    else:  # the kept ones are never handed out
        coord_variables, indexes, attrs = _own(built)
    dims = g.dims
    grid_shape = g.shape
    vids = g.variants
    vdims = dims + (["variant"] if g.variant_is_dim else [])

    # Quantities that do not vary along every axis come back small; broadcasting them is a view
    # (read-only, as the jitted outputs already are).
    def full(inner=()):
        return partial(_broadcast, shape=(*grid_shape, len(vids), *inner),
                       pick=None if g.variant_is_dim else (..., 0, *(slice(None) for _ in inner)))

    if "steps_to_target" in names or "status" in names:
        steps_picked = np.take(g.steps, np.asarray(g.index), axis=-1)
    # (name, dims, attrs, value, late): value, an array of the grid (a function of its steps), or
    # None for a jitted output, held in its Variable as it is and converted last (_dataset): as
    # it is if late is None, else by late
    specs = []
    for q in names:
        value = late = None
        if q == "steps_to_target":
            qdims, value = vdims, full()(steps_picked)
        elif q == "status":
            qdims, value = vdims, full()(metrics.status_of(steps_picked))
        elif q == "module_stage_s":
            qdims = dims + ["stage"]
            late = partial(_broadcast, shape=(*grid_shape, len(STAGES)), pick=None)
        elif q in NO_VARIANT:
            qdims = list(dims)
            late = partial(_broadcast, shape=tuple(grid_shape), pick=None)
        else:  # a jitted output over the grid, the variants and its inner axis, if any
            dim, values = _INNER_OF.get(q, (None, ()))
            inner_q, qdims = ((len(values),), vdims + [dim]) if dim else ((), vdims)
            a = raw[q]
            if not (isinstance(a, jax.Array) and g.variant_is_dim
                    and a.shape == (*grid_shape, len(vids), *inner_q)):
                late = full(inner_q)
        specs.append((q, tuple(qdims), _ATTRS[q], value, late))
    sizes = None if kept is None else kept.sizes.get(names)
    # a Dataset's sizes come from its variables the first time: an output of another shape than
    # its Variable's is converted now
    ds = _dataset(specs if sizes is not None else
                  [(q, d, at, late(np.asarray(raw[q])), None) if late else (q, d, at, v, late)
                   for q, d, at, v, late in specs], raw, (coord_variables, indexes, attrs), sizes)
    if kept is not None and sizes is None:  # the same names on this grid: the same Dataset
        kept.sizes[names] = dict(ds.sizes)
        kept.specs[names] = tuple(specs)
    return ds


def _broadcast(a: np.ndarray, shape: tuple, pick: tuple | None) -> np.ndarray:
    """An output that does not vary along every axis (it comes back small) as a read-only view
    of ``shape``, then indexed by ``pick`` (the one variant of a scalar variant)."""
    if a.shape != shape or a.flags.writeable:
        a = np.broadcast_to(a, shape)
    return a if pick is None else a[pick]


def _dataset(specs, raw: dict, owned: tuple, sizes: dict | None) -> xr.Dataset:
    """The Dataset of :func:`label`'s ``specs`` (name, dims, attrs, value, late) over the
    coordinates, indexes and attrs ``owned`` (this Dataset's own), with the jitted outputs
    ``raw``, maybe still being computed. Every variable is built first, each jitted output
    held in its Variable as it is, and the outputs are converted (waited for) last; one
    converted by ``late`` may have another shape until then, so ``sizes`` must be given."""
    coord_variables, indexes, attrs = owned
    # NumPy arrays of numbers: what xarray's checks would hand the Variable unchanged, so it is
    # made directly; a JAX array still being computed is held as it is until it is converted
    variables = {q: _variable(dims, raw[q] if value is None else value, a)
                 if value is None or _plain(value) else xr.Variable(dims, value, a)
                 for q, dims, a, value, _ in specs}
    ds = _assemble(variables, coord_variables, indexes, attrs, sizes)
    for q, _, _, value, late in specs:  # the wait for the pass: everything else is built
        if value is None:
            a = np.asarray(raw[q])
            if late is not None:
                a = late(a)
            elif a.flags.writeable:  # a copy from another device: read-only, as on the CPU
                a.flags.writeable = False
            # the shape of the Variable's dims (label found it), and plain numbers: what the
            # data setter's checks would accept, so set directly
            object.__setattr__(variables[q], "_data", a)
    return ds


def _plain(a) -> bool:
    return type(a) is np.ndarray and a.dtype.kind in "biuf"


def _variable(dims: list, data, attrs: dict) -> xr.Variable:
    """``xr.Variable(dims, data, attrs, fastpath=True)`` for ``data`` with one dimension per name
    in ``dims``, made directly from xarray's slots (as :func:`_shallow_copy`): the constructor's
    checks of dims and data took 2 of a repeated 1e5-cell sweep's 25 us of own CPU (warm).
    ``tests/test_sweep_build.py`` checks it against xarray's constructor."""
    new, put = object.__new__(xr.Variable), object.__setattr__
    put(new, "_dims", tuple(dims))
    put(new, "_data", data)
    put(new, "_attrs", dict(attrs) if attrs else None)
    put(new, "_encoding", None)
    return new


def _own(built: tuple) -> tuple[dict, dict, dict]:
    """:func:`_coordinates`'s result for one Dataset: each Variable a copy with its own attrs
    dict over the same read-only data; the indexes shared (xarray never changes an index in
    place)."""
    variables, indexes, attrs = built
    return {name: _shallow_copy(var) for name, var in variables.items()}, indexes, dict(attrs)


def _shallow_copy(var: xr.Variable) -> xr.Variable:
    """``var.copy(deep=False)``: a Variable of the same type, dims, data and encoding, with its
    own attrs and encoding dicts, made directly from xarray's slots. xarray's copy runs the
    constructor's checks again, which a Variable already made has passed: doing without them took
    a repeated 1e5-cell sweep's own CPU time (warm, the pass left out) from 36 to 26 us.
    ``tests/test_sweep_build.py`` checks it against xarray's copy."""
    new, attrs, encoding = object.__new__(type(var)), var._attrs, var._encoding
    put = object.__setattr__
    put(new, "_dims", var._dims)
    put(new, "_data", var._data)
    put(new, "_attrs", None if attrs is None else dict(attrs))
    put(new, "_encoding", None if encoding is None else dict(encoding))
    return new


def _coordinates(sc: Scenario, g: Grid, inner: tuple[str, ...]) -> tuple[dict, dict, dict]:
    """The coordinates of a sweep of grid ``g`` (the inner dimensions ``inner`` among them),
    their indexes and the Dataset's attrs: (name -> Variable, name -> index, attrs).

    Each dimension's coordinates and index (an axis's values; the budget's labels beside it; the
    variants' ids and labels; an inner axis) are kept with the scenario (:meth:`_Kept.piece`), so
    that a sweep over one new axis builds that axis's only: at 1e5 cells over a new bandwidth
    axis and 100 budgets, its own CPU (warm, the pass left out) went from 268 to 227 us."""
    kept = _Kept.of(sc)
    variables, indexes = {}, {}

    def take(key, build):
        piece_variables, piece_indexes = kept.piece(key, build)
        variables.update(piece_variables)
        indexes.update(piece_indexes)

    for a in g.axes:
        key, attrs_key = _values_key(a.coords), _attrs_key(a.attrs)
        take(None if key is None or attrs_key is None else ("axis", a.name, key, attrs_key),
             partial(_axis_piece, sc, a))
    if g.variant_is_dim:
        take(("variant", tuple(g.variants)), lambda: _piece(variant_coords(sc, g)))
    for _, dim, values in _INNER:
        if dim in inner:
            take(("inner", dim), partial(_inner_piece, dim, values))
    # scalars and what lies along a dimension without being its coordinate: built every time
    rest = _beside_axes(g)
    if "budget" in g.scalars:
        rest["budget_label"] = _budget_label(budget_labels(sc, rest["budget"].values), ())
    if not g.variant_is_dim:
        rest.update(variant_coords(sc, g))
    for var in rest.values():
        var.data.flags.writeable = False
    variables.update(rest)
    # in the order the coordinates always had: the axes, the scalars, the extra coordinates,
    # the budget's labels, the variants, the inner axes
    order = [*g.dims, *g.scalars, *g.extra_coords, "budget_label", "variant", "label", *inner]
    return {n: variables[n] for n in order if n in variables}, indexes, _attrs(sc, g, g.variants)


def _values_key(values):
    """A key that tells an axis's values apart exactly (as :func:`_args_key`), or None where
    there are too many to keep."""
    arr = np.asarray(values)
    if arr.size > ARGS_KEPT_UP_TO or arr.dtype.kind not in "biufU":
        return None
    return arr.dtype.str, arr.shape, _Bits(arr.tobytes())


def _attrs_key(attrs: dict):
    """A key of an axis's attrs (text values), or None where one is not hashable."""
    key = tuple(sorted(attrs.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _budget_label(labels: np.ndarray, dims) -> xr.Variable:
    return xr.Variable(dims, labels, {
        "long_name": "module compute budget: the scenario's name for it, or GFLOP/s"})


def _axis_piece(sc: Scenario, a) -> tuple[dict, dict]:
    """An axis's coordinate and index (:func:`_piece`); the ``budget`` axis's labels beside it
    and its :class:`~bandjax._budget_index.BudgetIndex`."""
    coords = {a.name: xr.Variable(a.name, np.asarray(a.coords), a.attrs)}
    budget_index_names = None
    # numeric for plots and arithmetic; named beside it, and selectable by name on an axis
    # (ds.sel(budget="low"), see BudgetIndex)
    if a.name == "budget":
        b = coords["budget"]
        b_labels = budget_labels(sc, b.values)
        coords["budget_label"] = _budget_label(b_labels, b.dims)
        named = functools.reduce(np.logical_or, (b_labels == n for n in BUDGET_NAMES))
        budget_index_names = budget_names(b_labels, b.values, named)
    return _piece(coords, budget_index_names)


def _inner_piece(dim: str, values) -> tuple[dict, dict]:
    return _piece({dim: xr.Variable(dim, np.asarray(values))})


def _piece(coords: dict, budget_index_names: dict | None = None) -> tuple[dict, dict]:
    """:func:`_indexed`'s coordinates and indexes, the data of those that are not an index's made
    read-only (an index's is already): a piece is shared between Datasets."""
    variables, indexes = _indexed(coords, budget_index_names)
    for name, var in variables.items():
        if name not in indexes:
            var.data.flags.writeable = False
    return variables, indexes


def variant_coords(sc: Scenario, g: Grid) -> dict:
    """The grid's variant coordinate (a dimension, with each variant's short ``label`` beside it,
    or a scalar where one variant was asked for as a scalar)."""
    vids = g.variants
    if g.variant_is_dim:
        return {"variant": xr.Variable("variant", np.asarray(vids), COORD_ATTRS["variant"]),
                "label": xr.Variable("variant", np.asarray([sc.variant(v).short for v in vids]))}
    return {"variant": xr.Variable((), vids[0], COORD_ATTRS["variant"])}


def _attrs(sc: Scenario, g: Grid, vids) -> dict:
    """The attrs of a sweep's Dataset."""
    attrs = {}
    rules = [v.id for v in sc.variants if v.basis_dependent]
    note = scaling_note(sc, [*g.dims, *g.scalars])
    if note:
        attrs["links_scaling"] = note
    note = _sites.scaling_note(sc, [*g.dims, *g.scalars])
    if note:
        attrs["sites_scaling"] = note
    attrs.update({
        "title": "bandjax closed-form sweep",
        "target_loss": float(sc.steps.target_loss),
        "assumptions": "d calibrated to the study's step times; steps to target are single-seed "
                       "measurements; " + (f"{', '.join(rules)} take(s) steps by a rule whose basis "
                       "(hypothesis or exact) is the basis coordinate; " if rules else "")
                       + "syncing every H steps (and a sync's delay) assumes steps to target unchanged"
                       + ("; " + _sites.ASSUMPTION if _sites.differ(sc) else ""),
    })
    own = [v.id for v in sc.variants if v.own_method and v.id in vids]
    if own:  # the scenario's H (and a sweep over it) moves only the variants without their own
        attrs["own_H_variants"] = ", ".join(
            f"{v} (H = {sc.variant(v).sync_every:g})" for v in own)
        attrs["H_note"] = ("the scenario's H (the H coordinate) applies to the variants that do "
                           "not set their own; " + attrs["own_H_variants"] + " keep theirs")
    return attrs
