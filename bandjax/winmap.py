"""Who wins where, and by how much: the winner map of a grid in one fused pass.

:func:`winner` answers the question a sweep is usually asked (which variant reaches the target
loss first at each grid point, and by what margin) without materialising any per-variant array:
the step time of each variant (the closed forms of :mod:`bandjax.step`) is computed and reduced
inside one jitted loop over the grid, unrolled over the variants with a running minimum, its
position and the runner-up. Per grid point it writes 18 B (two int8, two float64) where
:func:`bandjax.sweep` writes a float64 time for every variant plus its companions.

On sites that differ (docs/model.md section 16) the fused step is not the sweep's (the wait for
the slowest site, a "scaled" variant's window and its tokens a round), so there the map reduces
the sweep's own times to target (:func:`bandjax.metrics.time_to_target_s`), one variant array of
the grid's size in memory at once; equal sites (or none) keep the fused pass, bit for bit.

Ties go to the variant first in the variant order (the registry's, or the order given with
``variant=``), as ``sweep(...)["time_to_target_s"].fillna(inf).argmin("variant")`` does: a later
variant takes the lead only when it is strictly faster. A variant that never reaches the target or
was not measured (steps inf or NaN) never wins.

:func:`best_over` reduces a winner map over one of its dimensions (the best choice along it, or
where along it a given variant starts to win) on the small map, not on a per-variant grid.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
from functools import partial

from . import _jax  # noqa: F401  (64-bit floats, the Scenario PyTree)
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .grid import DTYPES, label, precision, scenario_arrays
from .links import DataLinks, as_data, flatten, unflatten
from .scenario import Scenario, reference
from . import failures as _failures
from . import sites as _sites
from .metrics import time_to_target_s
from .step import (Method, fragment_parts_s, inner_compute_s, rounds_step_s, sum_parts, sync_method,
                   unit_rounds)
from .stragglers import may_straggle
from .sweepargs import Grid, parse

NONE = "none"  # the label of winner / runner_up = -1: no (other) variant reaches the target
OUTPUTS = ("winner", "time_to_target_s", "runner_up", "margin")

_ATTRS = {
    "winner": {"units": "1", "long_name": "fastest variant to the target loss (index into the "
                                          "variant coordinate; -1: none reaches it)"},
    "time_to_target_s": {"units": "s", "long_name": "the winner's time to the target loss",
                         "note": "NaN where no variant reaches the target"},
    "runner_up": {"units": "1", "long_name": "second-fastest variant (index into the variant "
                                             "coordinate; -1: fewer than two reach the target)"},
    "margin": {"units": "1", "long_name": "runner-up's time to target / the winner's (>= 1)",
               "note": "inf where only the winner reaches the target; NaN where none does"},
}


@partial(jax.jit, static_argnames=("index", "fails", "unit", "straggles"))
def _fused(sc: Scenario, steps, index: tuple[int, ...], fails: bool = False,
           unit: tuple[bool, ...] | None = None, straggles: bool = False):
    """Winner, its time, runner-up and margin at every grid point, variants reduced in the loop.

    ``steps`` is broadcastable to (*grid, registry); ``index`` the competing variants' registry
    positions, in tie order. Equal sites (or none) only: sites that differ go through
    :func:`_from_times`. Every per-variant term of :func:`bandjax.step.fragment_parts_s` is small
    (it varies along few axes); the full-size work is one elementwise pass per variant, fused by
    XLA into loops that write the packed outputs only (:func:`_unpack` reads them).

    ``fails`` (static): times are divided by ETTR (:mod:`bandjax.failures`); False where the
    failure rate is 0 everywhere (:func:`bandjax.failures.may_fail`), where ETTR is exactly 1.
    ``unit`` (static, one a competing variant; None: none known): whose H is 1 at every point
    (:func:`bandjax.step.unit_rounds`), so its step divides by nothing. A step with a division
    costs enough that XLA writes it once into a full-size array of its own for the two packed
    outputs to read, where a step without one is recomputed inside both loops and nothing but the
    outputs is written: about 3x faster at 1e7 points for the study's six variants (BENCHMARKS.md).
    ``straggles`` (static): the compute part of an inner step is c' (:func:`bandjax.step.
    inner_compute_s`); False where nothing straggles (:func:`bandjax.stragglers.may_straggle`),
    where c' is c exactly.
    """
    c = sc.gpu_compute_s
    m = sync_method(sc)
    parts = fragment_parts_s(sc, method=m)
    shape = jnp.broadcast_shapes(jnp.shape(c), jnp.shape(steps)[:-1],
                                 *(jnp.shape(p)[:-1] for p in parts))
    inf = jnp.asarray(jnp.inf, dtype=jnp.result_type(c))

    def times():  # run by _reduce after its running minimum is set up
        stop = _failures.stop_ettr(sc) if fails else None
        inner = inner_compute_s(sc, m) if straggles else None
        for k, i in enumerate(index):
            comm = sum_parts([p[..., i] for p in parts])
            method = Method(*(x[..., i] for x in m))
            if unit is not None and unit[k]:
                method = method._replace(H=1.0)
            step = rounds_step_s(c if inner is None else inner[..., i], comm, sc.overlap_fraction,
                                 method)
            n = steps[..., i]
            # as sweep: no time where the steps are not a number; inf here so it never wins
            t = jnp.where(jnp.isfinite(n), n * step, inf)
            if fails:
                ettr = _failures.ettr_parts(sc, step, method.H, variant_axis=False, stop=stop)[0]
                t = _failures.time_to_target_s(t, ettr)
            yield t

    return _reduce(shape, inf, times())


@partial(jax.jit, static_argnames=("index",))
def _from_times(sc: Scenario, steps, index: tuple[int, ...]):
    """:func:`_fused`'s packed outputs from the sweep's own times to target
    (:func:`bandjax.metrics.time_to_target_s`, every variant at once), reduced over the
    competing variants ``index`` in tie order.

    For sites that differ (docs/model.md section 16), where :func:`_fused`'s per-variant step
    (c, no tokens share, the window in c) is not the sweep's: the step waits for the slowest
    site, a "scaled" variant's window is its fastest site's step, and its time counts global
    batches of N T tokens (steps x step / tokens share). One variant array of the grid's size
    is written before the reduction, so it costs more than the fused pass; equal sites never
    come here."""
    t = time_to_target_s(sc, steps)  # (..., registry): NaN where the steps are not measured
    inf = jnp.asarray(jnp.inf, dtype=t.dtype)
    t = jnp.where(jnp.isnan(t), inf, t)  # as sweep(...).fillna(inf): it never wins
    return _reduce(t.shape[:-1], inf, (t[..., i] for i in index))


def _reduce(shape, inf, times):
    """Winner, its time, runner-up and margin of the times ``times`` (one array a competing
    variant, in tie order, each broadcastable to ``shape``; inf: never), packed (:func:`_unpack`).

    A running minimum, its position and the runner-up: a later variant takes the lead only when
    strictly faster."""
    best, second = jnp.full(shape, inf), jnp.full(shape, inf)
    first, runner = jnp.full(shape, -1, jnp.int8), jnp.full(shape, -1, jnp.int8)
    for k, t in enumerate(times):
        ahead, next_ = t < best, t < second
        second = jnp.where(ahead, best, jnp.where(next_, t, second))
        runner = jnp.where(ahead, first, jnp.where(next_, jnp.int8(k), runner))
        best = jnp.where(ahead, t, best)
        first = jnp.where(ahead, jnp.int8(k), first)
    some = first >= 0
    time = jnp.where(some, best, jnp.nan)
    margin = jnp.where(some, jnp.where(runner >= 0, second / best, jnp.inf), jnp.nan)
    # Two outputs, not four: XLA on CPU gives each output of the grid's size a loop of its own,
    # which recomputes every variant's time. The codes share an int16 (winner in the low byte)
    # and time and margin a complex number; _unpack views them as the four arrays, no copy.
    codes = (first.astype(jnp.int16) & 0xFF) | (runner.astype(jnp.int16) << 8)
    return codes, jax.lax.complex(time, margin)


def _unpack(codes, pair) -> tuple:
    """The four outputs of :func:`_fused` as NumPy views of its two packed arrays."""
    codes, pair = np.asarray(codes), np.asarray(pair)
    low, high = (0, 1) if sys.byteorder == "little" else (1, 0)
    # (a 0-d array cannot change its item size in place: viewed through a 1-d one)
    c8 = codes.reshape(-1).view(np.int8).reshape(*codes.shape, 2)
    f = pair.reshape(-1).view(pair.real.dtype).reshape(*pair.shape, 2)
    return c8[..., low], f[..., 0], c8[..., high], f[..., 1]


def winner(scenario: Scenario | None = None, *, bandwidth=None, enob=None, budget=None,
           variant=None, model=None, gpu=None, dcs=None, topology=None, workers_per_dc=None,
           H=None, basis=None, dtype: str = "float64", chunk: int | None = None,
           chunk_dim: str | None = None, threads: int = 1, **fields) -> xr.Dataset:
    """The fastest variant to the target loss at every grid point, and by how much, in one pass.

    The arguments are :func:`bandjax.sweep`'s (parsed by :func:`bandjax.sweepargs.parse`): each
    is a scalar (a scalar coordinate) or a sequence (a dimension). ``variant`` names the variants
    that compete (all of the registry by default) and their order, which breaks ties.

    Args:
      scenario: the parameters; the reference scenario by default. The grid arguments
        (``bandwidth``, ``enob``, ``budget``, ``variant``, ``model``, ``gpu``, ``dcs``,
        ``topology``, ``workers_per_dc``, ``H``, ``basis``, ``link`` with ``link_bandwidth`` or
        ``link_latency_s``, and any field by name) are as for :func:`bandjax.sweep` (GB/s,
        GFLOP/s, bits, ...).
      dtype: ``"float64"`` (default) or ``"float32"``: the precision of the fused pass. float32
        is faster; over the reference grid of ``benchmarks/winner_bench.py`` its times differ from
        float64's by at most 2.5e-7 relative (BENCHMARKS.md, ``float32.max_rel_err``), so it can
        pick a different winner only where two variants are within that of each other.
      chunk: grid values per call along ``chunk_dim`` (default: all in one call). Outputs are
        written into arrays of the whole grid; for maps larger than memory use
        :func:`bandjax.store.write` with ``of="winner"``.
      chunk_dim: the swept argument to slice (default: the one with the most values).
      threads: chunks computed at once, each in its own thread (the jitted call releases the
        GIL). One call already uses every core (XLA splits the pass): 1.85x on 2 quiet cores
        against 1, where 16 chunks two at a time gave 1.37x (BENCHMARKS.md,
        ``winner.core_scaling``), so keep the default unless the map is chunked anyway.

    Returns:
      An ``xarray.Dataset`` over the sweep's dimensions (no ``variant`` dimension):

      - ``winner`` (int8): the winner's position in the ``variant`` coordinate (the competing
        ids, in order), -1 where no variant reaches the target. Labels: ``names(ds["winner"])``
        or ``attrs["flag_values"]`` / ``attrs["flag_meanings"]`` (CF flags; -1 is ``"none"``).
      - ``time_to_target_s`` (s): the winner's; NaN where none reaches the target.
      - ``runner_up`` (int8): the second-fastest, same coding; on a tie, the later variant.
      - ``margin`` (1): runner-up's time / winner's time (1 on a tie, inf where only the winner
        reaches the target, NaN where none does).
    """
    sc = reference() if scenario is None else scenario
    if dtype not in DTYPES:
        raise ValueError(f"dtype = {dtype!r} is not known; allowed: {', '.join(DTYPES)}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads = {threads!r}: must be a whole number of threads >= 1")
    g = parse(sc, bandwidth=bandwidth, enob=enob, budget=budget, variant=variant, model=model,
              gpu=gpu, dcs=dcs, topology=topology, workers_per_dc=workers_per_dc, H=H,
              basis=basis, **fields)
    if len(g.index) > 127:
        raise ValueError(f"variant: {len(g.index)} variants compete; at most 127 fit the int8 map")
    _check_size(g, sc, chunk, chunk_dim, threads)
    raw = winner_arrays(sc, g, dtype=dtype, chunk=chunk, chunk_dim=chunk_dim, threads=threads)
    return label_map(sc, g, raw)


WINNER_BYTES_PER_POINT = 20
"""Memory a winner map takes a point: its arrays (two int8 and two float64 values, 18 B) and the
jitted call's own buffers. Measured growth of the resident set at 1e7 and 1e8 points of the
reference (float64, one call): 19.8 and 19.0 B a point; tests/test_winner_memory.py keeps the
estimate within 25% of it."""


def _check_size(g, sc: Scenario | None = None, chunk=None, chunk_dim=None, threads: int = 1) -> None:
    """Refuse, before any work, a map whose arrays would not fit in memory (at
    :data:`WINNER_BYTES_PER_POINT`, and where the WAN's links are each their own the times of
    every link in use at each point it computes at once, 8 B each, twice:
    :func:`bandjax.grid.links_per_point`; with ``chunk``, ``threads`` chunks at once): it belongs
    in a store."""
    import math

    from ._limits import (MAX_ARRAY_ELEMENTS, SWEEP_MEMORY_SHARE, available_memory_bytes,
                          describe_bytes)
    from .grid import links_per_point

    points = math.prod(g.shape)
    links = 0 if sc is None else links_per_point(sc, g)
    at_once = points
    if links and isinstance(chunk, (int, np.integer)) and not isinstance(chunk, bool) and chunk >= 1 \
            and g.dims:
        axis = _chunk_axis(g.dims, g.shape, chunk_dim if chunk_dim in g.dims else None)
        at_once = min(points, points // g.shape[axis] * int(chunk) * max(int(threads), 1))
    need = points * WINNER_BYTES_PER_POINT + 2 * 8 * links * at_once
    avail = available_memory_bytes()
    if max(points, at_once * links) > MAX_ARRAY_ELEMENTS or need > SWEEP_MEMORY_SHARE * avail:
        held = f", each with the times of {links:,} links," if links else ""
        raise ValueError(f"winner map of {points:.3g} points{held} needs about "
                         f"{describe_bytes(need)} in "
                         f"memory ({describe_bytes(avail)} available, at most "
                         f"{SWEEP_MEMORY_SHARE:.0%} used, at most {MAX_ARRAY_ELEMENTS:.3g} points): "
                         "write it to disk in chunks with bandjax.store.write(path, scenario, "
                         "of=\"winner\", ...)"
                         + (", or compute it a part at a time with chunk=N (the link times are "
                            "held for the parts being computed)" if links else ""))


def _chunk_axis(dims, shape, chunk_dim) -> int:
    """The grid axis a chunked map runs along: ``chunk_dim``'s, or the longest where it is None."""
    return int(np.argmax(shape)) if chunk_dim is None else list(dims).index(chunk_dim)


def winner_arrays(sc: Scenario, g: Grid, *, dtype: str = "float64", chunk: int | None = None,
                  chunk_dim: str | None = None, threads: int = 1) -> dict:
    """The four outputs of :func:`winner` on grid ``g`` as NumPy arrays of the grid's shape."""
    shape = g.shape
    dims = g.dims
    if chunk is None:
        parts = [None]
        axis = None
    else:
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"chunk = {chunk!r}: must be a whole number of grid values >= 1")
        if not dims:
            raise ValueError("chunk: no argument is a sequence, so there is nothing to chunk")
        if chunk_dim is not None and chunk_dim not in dims:
            raise ValueError(f"chunk_dim = {chunk_dim!r} is not a swept argument; allowed: "
                             f"{', '.join(dims)}")
        axis = _chunk_axis(dims, shape, chunk_dim)
        parts = [slice(s, s + int(chunk)) for s in range(0, shape[axis], int(chunk))]
    index = tuple(g.index)
    with precision(dtype):
        sc_arrays = as_data(scenario_arrays(sc, g))  # a new table of the same K: one program
        steps = g.steps
        if _sites.differ(sc_arrays):  # the fused step assumes equal sites: the sweep's times
            solve = partial(_from_times, index=index)
        else:
            solve = partial(_fused, index=index, fails=_failures.may_fail(sc_arrays),
                            unit=unit_rounds(sc_arrays, index), straggles=may_straggle(sc_arrays))

        def run(sl):
            if sl is None:
                return _unpack(*solve(sc_arrays, steps))
            return _unpack(*solve(_cut_scenario(sc_arrays, axis, sl, len(shape)),
                                  _cut(steps, axis, sl, len(shape))))

        if len(parts) == 1:
            out = [np.broadcast_to(np.asarray(a), shape) for a in run(parts[0])]
            return dict(zip(OUTPUTS, out))
        ftype = np.float32 if dtype == "float32" else np.float64
        out = [np.empty(shape, np.int8), np.empty(shape, ftype), np.empty(shape, np.int8),
               np.empty(shape, ftype)]
        _in_threads(run, parts, out, axis, shape, threads)
    return dict(zip(OUTPUTS, out))


def _cut_scenario(sc: Scenario, axis: int, sl: slice, ndim: int) -> Scenario:
    """``sc`` along grid ``axis``: each leaf (:func:`_cut`), and a links table held as data along
    its grid axes, which follow its (K, K)."""
    links = sc.links
    out = jax.tree.map(lambda x: _cut(x, axis, sl, ndim), dataclasses.replace(sc, links=None))
    if isinstance(links, DataLinks):
        tables = flatten(links)[0]
        links = unflatten(links.names, tuple(_cut(t, axis + 2, sl, ndim + 2) for t in tables))
    return dataclasses.replace(out, links=links)


def _cut(x, axis: int, sl: slice, ndim: int):
    """``x`` (broadcastable to the grid, possibly with a trailing variant axis) along ``axis``."""
    x = np.asarray(x)
    extra = x.ndim - ndim  # 0 for a scenario leaf, 1 for steps; < 0: a 0-d override
    if extra < 0 or x.shape[axis] == 1:
        return x
    return x[(slice(None),) * axis + (sl,)]


def _in_threads(run, parts, out, axis, shape, threads):
    """Compute every slice, ``threads`` at a time, each written into its place in ``out``."""
    lock = threading.Lock()
    queue = list(reversed(parts))
    errors = []

    def work():
        while True:
            with lock:
                if not queue or errors:
                    return
                sl = queue.pop()
            try:
                res = run(sl)
                where = (slice(None),) * axis + (sl,)
                sub = tuple(shape[:axis]) + (len(range(*sl.indices(shape[axis]))),) + tuple(shape[axis + 1:])
                for o, r in zip(out, res):
                    o[where] = np.broadcast_to(np.asarray(r), sub)
            except BaseException as e:  # raised again in the caller's thread
                errors.append(e)
                return

    pool = [threading.Thread(target=work) for _ in range(min(threads, len(parts)) - 1)]
    for t in pool:
        t.start()
    work()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]


def label_map(sc: Scenario, g: Grid, raw: dict) -> xr.Dataset:
    """The labelled winner map of raw outputs: the sweep's coordinates, ``variant`` the ids that
    compete (a dimension of its own, on no variable)."""
    base = label(sc, g, {}, ())
    ids = list(g.variants)
    flags = {"flag_values": list(range(-1, len(ids))), "flag_meanings": " ".join([NONE, *ids])}
    dims = g.dims
    data = {}
    for k in OUTPUTS:
        attrs = {**_ATTRS[k], **(flags if k in ("winner", "runner_up") else {})}
        data[k] = xr.Variable(dims, raw[k], attrs)
    # the sweep's coordinates with their indexes (the budget axis's names among them)
    coords = base.drop_vars(["variant", "label"], errors="ignore").coords
    ds = xr.Dataset(data, coords=coords).assign_coords(
        variant=xr.Variable("variant", np.asarray(ids), {"long_name": "variants that compete"}),
        label=xr.Variable("variant", np.asarray([sc.variant(v).short for v in ids])))
    ds.attrs.update(base.attrs)
    ds.attrs["title"] = "bandjax winner map"
    ds.attrs["ties"] = "first in variant order wins; the later one is the runner-up (margin 1)"
    return ds


def names(codes: xr.DataArray) -> xr.DataArray:
    """The variant ids of a ``winner`` or ``runner_up`` map (``"none"`` for -1), as strings."""
    meanings = codes.attrs.get("flag_meanings")
    if meanings is None:
        raise ValueError("names: expected a winner or runner_up map (with attrs['flag_meanings'])")
    table = np.asarray(meanings.split())  # position 0 is -1
    return xr.DataArray(table[np.asarray(codes) + 1], dims=codes.dims, coords=codes.coords,
                        attrs={"long_name": codes.attrs.get("long_name", "")})


def best_over(ds: xr.Dataset, dim: str, *, wins: str | None = None) -> xr.Dataset | xr.DataArray:
    """A winner map reduced over one of its dimensions.

    - ``wins=None``: the best choice along ``dim`` at every other point: the lowest
      ``time_to_target_s`` over ``dim`` and the winner, runner-up and margin there; the coordinate
      ``dim`` becomes a variable of the chosen values (``"none"`` / NaN where no choice reaches the
      target). E.g. ``best_over(m, "topology")``: the better WAN topology and who wins on it.
    - ``wins=<variant id>`` (one of the map's ``variant`` coordinate): the lowest value of the
      numeric coordinate ``dim`` at which that variant wins, at every other point (a DataArray in
      ``dim``'s units; NaN where it wins nowhere along ``dim``). E.g. ``best_over(m, "budget",
      wins=v)`` with ``v`` the in-network band's id: per bandwidth, the smallest module budget,
      GFLOP/s, at which it is the fastest.
    """
    if dim not in ds.dims:
        raise ValueError(f"dim = {dim!r} is not a dimension of the map; allowed: "
                         f"{', '.join(map(str, ds.dims))}")
    if wins is not None:
        ids = list(ds["variant"].values)
        if wins not in ids:
            raise ValueError(f"wins = {wins!r} is not a variant of the map; allowed: {', '.join(ids)}")
        coord = ds[dim]
        if coord.dtype.kind not in "iuf":
            raise ValueError(f"wins: dimension {dim!r} has no numeric coordinate; it needs one "
                             "(bandwidth, budget, enob, dcs, H, ...)")
        at = coord.astype(float).where(ds["winner"] == ids.index(wins))
        out = at.min(dim)  # NaN where it wins nowhere along dim
        out.attrs = {**coord.attrs, "long_name": f"lowest {dim} at which {wins} wins"}
        return out.rename(f"lowest_{dim}")
    t = ds["time_to_target_s"]
    pick = t.fillna(math.inf).argmin(dim)
    out = ds.drop_vars([v for v in ds.coords if v != dim and dim in ds[v].dims]).isel({dim: pick})
    none = ds["winner"].isel({dim: pick}) < 0
    chosen = out[dim]
    chosen = chosen.where(~none, NONE if chosen.dtype.kind == "U" else math.nan)
    out = out.drop_vars(dim).assign({dim: chosen.variable.copy(data=np.asarray(chosen))})
    out[dim].attrs = {**ds[dim].attrs, "long_name": f"best {dim} (lowest time to target)"}
    out.attrs = {**ds.attrs, "reduced": f"best over {dim}"}
    return out

