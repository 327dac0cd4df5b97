"""Sweeps larger than memory: computed in chunks along one dimension and streamed to a zarr store.

:func:`write` runs :func:`bandjax.sweep` on one slice of a swept argument at a time (every slice
but the last has the same shape, so the jitted closed forms compile at most twice), appends each
slice's labelled Dataset to a zarr store and drops it, so peak memory is one chunk, whatever the
size of the whole sweep. The slices may be computed by the workers of a dask cluster
(``scheduler=``); the writing stays in the calling process, in order. :func:`open` reads the store
back as a dask-backed (lazy) Dataset.

A store is written whole: a reader, a crash or an interrupt never leaves half a sweep at ``path``,
nor an old store half removed. Beside ``path`` (say ``s.zarr``) :func:`write` uses three names:

1. ``s.zarr.partial/``: a folder holding the new store while it is written (``data``, incomplete,
   always discarded) and the marker file :data:`PARTIAL_MARKER`;
2. ``s.zarr.new``: the new store, complete (moved from ``.partial/data`` after the last chunk);
3. ``s.zarr.old``: the old store, renamed aside, then removed.

The swap is two renames, ``s.zarr -> s.zarr.old`` then ``s.zarr.new -> s.zarr``. Between them
``s.zarr`` does not exist for a moment; :func:`open` then reads ``s.zarr.new`` (complete), and after
a process killed in that window it does the same until the next :func:`write`. The next
:func:`write` (and an interrupted one, on its way out) recovers first: it discards ``.partial``,
finishes a swap whose ``.new`` is complete (rolling forward) and removes ``.old``, so at every
moment ``path`` or its ``.new`` opens as one complete store, the old or the new. Every complete
store carries the marker file :data:`MARKER`, removed last when a store is removed; a path, or one of
these names, that exists but is not a store of ours (a file, a device, a foreign folder) is refused,
never removed.
"""

from __future__ import annotations

import builtins
import collections
import json
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np
import xarray as xr

from ._limits import MAX_CHUNKS, MAX_STORE_POINTS, MIN_CHUNK_B, describe_bytes
from .grid import sweep
from .units import plain

OF = ("sweep", "winner")  # what a store holds: the sweep's Dataset or the winner map's


def _compute(of: str):
    """The function whose Dataset a store of ``of`` holds (:data:`OF`)."""
    if of == "winner":
        from .winmap import winner
        return winner
    return sweep

DEFAULT_CHUNK_B = 256 * 2**20  # output bytes per chunk: large enough to amortise a call
CONNECT_TIMEOUT_S = 10.0  # how long to wait for an existing dask scheduler
LOCAL_WORKERS = 2  # processes of the LocalCluster made for scheduler="local"
MARKER = ".bandjax-store"  # a file in every complete store written here: ours to replace
PARTIAL_MARKER = ".bandjax-partial"  # a file in the folder that holds a store being written
PARTIAL, NEW, OLD = ".partial", ".new", ".old"

INNER = ("component", "energy", "stage")  # axes inside a cell, not cells themselves


def _require_zarr() -> None:
    """zarr is an optional dependency: say how to get it before any work is done."""
    try:
        import zarr  # noqa: F401
    except ImportError:
        raise ImportError("bandjax.store needs the zarr package: pip install 'bandjax[store]'") from None


def _swept(sweep_args: dict) -> dict:
    """The arguments given as sequences (the sweep's dimensions), as lists."""
    return {k: np.asarray(v).tolist() if isinstance(v, np.ndarray) else list(v)
            for k, v in sweep_args.items()
            if k != "quantities" and not isinstance(v, (str, bytes)) and np.ndim(v) > 0}


def chunk_dim_of(sweep_args: dict, chunk_dim: str | None = None) -> str:
    """The argument to slice: ``chunk_dim``, or by default the swept one with the most values."""
    swept = _swept(sweep_args)
    if not swept:
        raise ValueError("store.write: no argument is a sequence, so there is nothing to chunk; "
                         "give at least one swept argument (e.g. bandwidth=[...])")
    if chunk_dim is None:
        return max(swept, key=lambda k: len(swept[k]))
    if chunk_dim not in swept:
        raise ValueError(f"chunk_dim = {chunk_dim!r} is not a swept argument; allowed: "
                         f"{', '.join(swept)}")
    return chunk_dim


# --------------------------------------------------------------------------- the store on disk


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _is_ours(p: Path, marker: str = MARKER) -> bool:
    """A folder of ours: holding ``marker``, or empty (a removal that was cut short at its end)."""
    if not p.is_dir() or p.is_symlink():
        return False
    return (p / marker).is_file() or not any(p.iterdir())


def _refuse_foreign(p: Path, marker: str = MARKER) -> None:
    """Raise unless ``p`` is absent or a folder of ours (see :func:`_is_ours`)."""
    if not os.path.lexists(p) or _is_ours(p, marker):
        return
    kind = ("a symbolic link" if p.is_symlink() else "a folder that is not a sweep store" if p.is_dir()
            else "a regular file" if p.is_file() else "not a regular file or folder (a device?)")
    raise FileExistsError(f"store path {os.fspath(p)!r} exists and is {kind}; store.write replaces "
                          f"only a store it wrote (a folder holding {marker!r}): remove it or "
                          "choose another path")


REMOVE_TRIES = 50  # a writer still finishing has this many 20 ms rounds to stop adding files


def _remove(p: Path, marker: str = MARKER) -> None:
    """Remove a folder of ours, its marker last: cut short, what is left is still known as ours.

    After an interrupt, zarr's own I/O thread may still be writing into the folder while it is
    removed; a file that appears late puts the marker back and the removal goes round again, so
    the folder is never left holding data without its marker."""
    for _ in builtins.range(REMOVE_TRIES):
        if not os.path.lexists(p):
            return
        try:
            for child in p.iterdir():
                if child.name != marker:
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            (p / marker).unlink(missing_ok=True)
            p.rmdir()
            return
        except OSError:
            if not p.is_dir():
                raise
            (p / marker).touch()  # something was written meanwhile: still ours
            time.sleep(0.02)
    raise OSError(f"{os.fspath(p)!r}: files kept appearing while it was removed; it is left with "
                  f"its marker {marker!r}, and the next write or recover removes it")


def _settle_zarr_io(timeout_s: float = 10.0) -> None:
    """Wait for the writes zarr's I/O thread still runs after an interrupt.

    zarr 3 writes on an event loop of its own; an interrupt stops only the main thread's wait for
    it, so without this a chunk's files could land in ``.partial`` after :func:`recover` removed
    it. ``zarr.core.sync.loop`` is zarr's internal loop: where it is absent or idle there is
    nothing to wait for (and :func:`_remove` still keeps the marker of a folder written to late).
    """
    import asyncio

    try:
        from zarr.core import sync
    except ImportError:
        return
    loop = (getattr(sync, "loop", None) or [None])[0]
    if loop is None or not loop.is_running():
        return

    async def drain():
        me = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not me]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)

    try:
        asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout_s + 1.0)
    except (TimeoutError, RuntimeError):  # the loop stopped or kept busy: _remove copes
        pass


def _check_names(path: Path) -> None:
    for p in (path, _beside(path, NEW), _beside(path, OLD)):
        _refuse_foreign(p)
    _refuse_foreign(_beside(path, PARTIAL), PARTIAL_MARKER)


def recover(path: str | os.PathLike) -> None:
    """Finish or undo what a killed or interrupted :func:`write` left beside ``path``.

    ``.partial`` is discarded; a complete ``.new`` replaces ``path`` (the swap is rolled forward);
    ``.old`` is removed once ``path`` is a complete store, else renamed back. Leftovers that are not
    stores of ours are refused (FileExistsError), never removed.
    """
    path = Path(path)
    partial, new, old = (_beside(path, s) for s in (PARTIAL, NEW, OLD))
    _check_names(path)
    _remove(partial, PARTIAL_MARKER)
    if os.path.lexists(new):
        if os.path.lexists(path):
            if os.path.lexists(old):
                _remove(old)
            os.rename(path, old)
        os.rename(new, path)
    if os.path.lexists(old):
        if os.path.lexists(path):
            _remove(old)
        else:
            os.rename(old, path)


def _swap(path: Path, data: Path) -> None:
    """Put the complete store ``data`` in place of ``path`` (see the module's docstring)."""
    new, old = _beside(path, NEW), _beside(path, OLD)
    (data / MARKER).write_text(json.dumps({"format": 1}) + "\n")
    os.rename(data, new)
    if os.path.lexists(path):
        os.rename(path, old)
    os.rename(new, path)
    _remove(old)


# --------------------------------------------------------------------------- computing the chunks


def _chunk(scenario, sweep_args: dict, dim: str, values: list, widths: dict, x64: bool,
           of: str = "sweep") -> xr.Dataset:
    """One slice of the sweep, as :func:`write` stores it (runs in a worker with a scheduler)."""
    import jax

    if jax.config.jax_enable_x64 != x64:  # a worker process computes in the caller's precision
        jax.config.update("jax_enable_x64", x64)
    chunk = _compute(of)(scenario, **{**sweep_args, dim: values})
    if widths:
        chunk = chunk.assign_coords({k: chunk[k].astype(w) for k, w in widths.items()})
    return chunk


class _InProcess:
    """The scheduler=None executor: each chunk computed when it is asked for."""

    def chunks(self, fn, slices):
        return (fn(s) for s in slices)

    def close(self):
        pass


class _Dask:
    """Chunks computed by the workers of a dask cluster, handed back in order, a few in flight."""

    def __init__(self, scheduler: str):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ImportError("store.write(scheduler=...) needs dask.distributed: "
                              "pip install 'dask[distributed]'") from None
        self.cluster = None
        if scheduler == "local":
            from ._io import children_ignore_interrupt

            with children_ignore_interrupt():  # the command answers a Ctrl-C, quietly
                self.cluster = LocalCluster(n_workers=LOCAL_WORKERS, threads_per_worker=1,
                                            processes=True, dashboard_address=":0")
                self.client = Client(self.cluster)
        elif isinstance(scheduler, str) and "://" in scheduler:
            # probed first, bounded: a port that accepts but never answers is refused in
            # CONNECT_TIMEOUT_S, as `bandjax wan` does
            from events.runner import connect

            try:
                self.client = connect(scheduler, CONNECT_TIMEOUT_S)
            except ConnectionError as e:
                cause = str(e).rsplit(" (", 1)[-1].rstrip(")") if " (" in str(e) else "no answer"
                raise ConnectionError(f"scheduler = {scheduler!r}: no dask scheduler answered "
                                      f"within {plain(CONNECT_TIMEOUT_S)} s ({cause})") from None
        else:
            raise ValueError(f"scheduler = {scheduler!r} is not known; allowed: None (in process), "
                             "'local' (a 2-worker LocalCluster) or an address 'tcp://host:port'")
        workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        self.in_flight = 2 * workers

    def chunks(self, fn, slices):
        slices, queue = iter(slices), collections.deque()
        for s in slices:
            queue.append(self.client.submit(fn, s, pure=False))
            if len(queue) >= self.in_flight:
                yield queue.popleft().result()
        while queue:
            yield queue.popleft().result()

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _check_points(sweep_args: dict) -> None:
    points = math.prod(int(np.size(v)) for k, v in sweep_args.items()
                       if k != "quantities" and not isinstance(v, (str, bytes)) and np.ndim(v) > 0)
    if points > MAX_STORE_POINTS:
        raise ValueError(f"store: {points:,} grid points; allowed: at most {MAX_STORE_POINTS:,} "
                         "(bandjax._limits.MAX_STORE_POINTS)")


def _check_work(sweep_args: dict, n_values: int, per_chunk: int, slice_B: float, path: Path) -> None:
    """Refuse, before anything is computed or written, a store of more than MAX_STORE_POINTS grid
    points, more than MAX_CHUNKS chunks or more bytes than the disk under ``path`` has free."""
    _check_points(sweep_args)
    chunks = -(-n_values // per_chunk)
    if chunks > MAX_CHUNKS:
        raise ValueError(f"store: {chunks:,} chunks of {per_chunk:,} values; allowed: at most "
                         f"{MAX_CHUNKS:,}; give a larger chunk_B")
    need = slice_B * n_values  # uncompressed: the most the store can take
    parent = path.resolve().parent
    try:
        free = shutil.disk_usage(parent if parent.exists() else Path.cwd()).free
    except OSError:
        return
    if need > free:
        raise ValueError(f"store: up to {describe_bytes(need)} to write under {str(parent)!r}, "
                         f"which has {describe_bytes(free)} free")


def write(path: str | os.PathLike, scenario=None, *, chunk_dim: str | None = None,
          chunk_B: float = DEFAULT_CHUNK_B, progress: bool = True, scheduler: str | None = None,
          of: str = "sweep", **sweep_args) -> Path:
    """Compute ``bandjax.sweep(scenario, **sweep_args)`` chunk by chunk into a zarr store at ``path``.

    The result is the Dataset :func:`bandjax.sweep` would return (same variables, dims, coords,
    attrs and values, bit for bit with any scheduler), stored on disk with one zarr chunk per
    computed chunk. Peak memory is about ``chunk_B`` of outputs plus the jitted function's
    temporaries and the compressor's buffers (with a scheduler: a few chunks in flight), independent
    of the size of the sweep.

    Chunk length = max(1, chunk_B // output bytes of one value of ``chunk_dim``).

    Args:
      path: the store to create (a folder). An existing store written here is replaced once the new
        one is complete (see the module's docstring); any other existing path is refused.
      scenario: as for :func:`bandjax.sweep`.
      chunk_dim: the swept argument to slice (default: the one with the most values).
      chunk_B: output bytes per chunk, B (default 256 MiB).
      progress: show a tqdm progress bar over chunks.
      scheduler: where chunks are computed: ``None`` in this process; ``"local"`` a dask
        LocalCluster of 2 worker processes made for this call; ``"tcp://host:port"`` an existing
        dask scheduler (connection timeout 10 s). A scheduler runs pickled tasks: use only one
        you trust, as its workers run whatever it is sent. The client writes every chunk, in order.
      of: ``"sweep"`` (default) or ``"winner"``: store :func:`bandjax.winner`'s map of the same
        arguments instead (18 B a grid point, whatever the number of variants), for maps larger
        than memory.
      **sweep_args: the arguments of :func:`bandjax.sweep` (``bandwidth=``, ``budget=``, ...),
        or of :func:`bandjax.winner` with ``of="winner"`` (``dtype=``, ``threads=``, ...).

    Returns:
      ``Path(path)``.
    """
    _require_zarr()
    import jax
    from tqdm.auto import tqdm

    if (isinstance(chunk_B, (bool, np.bool_)) or not isinstance(chunk_B, (int, float, np.integer, np.floating))
            or not (math.isfinite(chunk_B) and chunk_B >= MIN_CHUNK_B)):
        raise ValueError(f"chunk_B = {chunk_B!r}: must be a finite number of bytes >= "
                         f"{MIN_CHUNK_B:,}")
    chunk_B = float(chunk_B)
    if scheduler is not None and not (scheduler == "local" or (isinstance(scheduler, str)
                                                               and "://" in scheduler)):
        raise ValueError(f"scheduler = {scheduler!r} is not known; allowed: None (in process), "
                         "'local' (a 2-worker LocalCluster) or an address 'tcp://host:port'")
    if of not in OF:
        raise ValueError(f"of = {of!r} is not known; allowed: {', '.join(OF)}")
    _check_points(sweep_args)  # before any copy of the values is made or anything computed
    compute = _compute(of)
    path = Path(path)
    _check_names(path)
    dim = chunk_dim_of(sweep_args, chunk_dim)
    values = _swept(sweep_args)[dim]
    # One value of the chunked dimension gives the output bytes per value (and checks arguments).
    probe = compute(scenario, **{**sweep_args, dim: values[:1]})
    slice_B = sum(v.nbytes for v in probe.data_vars.values())
    per_chunk = min(len(values), max(1, int(chunk_B // max(slice_B, 1))))
    # Text labels along the chunked dimension (variant ids, model names) are fixed-width: every
    # chunk takes the width of the widest label, which a one-point sweep along it tells.
    text = [k for k, v in probe.coords.items() if dim in v.dims and v.dtype.kind == "U"]
    widths = {}
    if text:
        point = {k: v[:1] for k, v in _swept(sweep_args).items() if k != dim}
        small = {"quantities": ("step_s",)} if of == "sweep" else {}
        labels = compute(scenario, **{**sweep_args, **point, **small})
        widths = {k: labels[k].dtype for k in text}
    del probe

    _check_work(sweep_args, len(values), per_chunk, slice_B, path)
    starts = builtins.range(0, len(values), per_chunk)
    x64 = bool(jax.config.jax_enable_x64)
    fn = _Chunker(scenario, sweep_args, dim, values, per_chunk, widths, x64, of)
    # Connected (or refused) before anything is written beside path.
    executor = _InProcess() if scheduler is None else _Dask(scheduler)
    partial = _beside(path, PARTIAL)
    data = partial / "data"
    try:
        recover(path)
        partial.mkdir()
        (partial / PARTIAL_MARKER).touch()
        with tqdm(total=len(starts), unit="chunk", disable=not progress,
                  desc=f"sweep to {path.name}") as bar:
            for start, chunk in zip(starts, executor.chunks(fn, starts)):
                if start == 0:
                    encoding = {k: {"chunks": tuple(per_chunk if d == dim else n
                                                    for d, n in zip(v.dims, v.shape))}
                                for k, v in chunk.variables.items() if dim in v.dims}
                    chunk.to_zarr(data, mode="w", zarr_format=2, consolidated=True,
                                  encoding=encoding)
                else:
                    chunk.to_zarr(data, append_dim=dim, zarr_format=2, consolidated=True)
                bar.update(1)
                del chunk
        _swap(path, data)
        _remove(partial, PARTIAL_MARKER)
    except BaseException:
        # Interrupted anywhere: the new store is discarded unless complete, the swap finished if
        # it had begun; path is left as the old complete store or the new one.
        _settle_zarr_io()
        recover(path)
        raise
    finally:
        executor.close()
    return path


class _Chunker:
    """The chunk starting at a given index: a picklable callable for the workers."""

    def __init__(self, scenario, sweep_args, dim, values, per_chunk, widths, x64, of="sweep"):
        self.args = (scenario, sweep_args, dim, widths, x64, of)
        self.values, self.per_chunk = values, per_chunk

    def __call__(self, start: int) -> xr.Dataset:
        scenario, sweep_args, dim, widths, x64, of = self.args
        return _chunk(scenario, sweep_args, dim, self.values[start:start + self.per_chunk],
                      widths, x64, of)


def open(path: str | os.PathLike) -> xr.Dataset:  # noqa: A001 - the module's verb, as xr.open_*
    """A store written by :func:`write`, as a lazy dask-backed Dataset (one dask chunk per stored
    chunk): nothing is read until a value is asked for.

    Where ``path`` is absent because a :func:`write` is between its two renames (or was killed
    there), the complete new store beside it (``<path>.new``) is read; nothing is changed on disk.
    """
    _require_zarr()
    path = Path(path)
    if not os.path.lexists(path) and _is_ours(_beside(path, NEW)):
        path = _beside(path, NEW)
    if not path.exists():
        raise FileNotFoundError(f"sweep store {os.fspath(path)!r} does not exist")
    from ._budget_index import budget_indexed

    return budget_indexed(xr.open_zarr(path, consolidated=True))
