"""Sweeps larger than memory: computed in chunks along one dimension and streamed to a zarr store.

:func:`write` runs :func:`bandjax.sweep` on one slice of a swept argument at a time (every slice
but the last has the same shape, so the jitted closed forms compile at most twice), appends each
slice's labelled Dataset to a zarr store and drops it, so peak memory is one chunk, whatever the
size of the whole sweep. :func:`open` reads the store back as a dask-backed (lazy) Dataset.

The store is written under ``<path>.partial`` and renamed to ``path`` only when complete, so a
reader (or a crash) never sees half a sweep.
"""

from __future__ import annotations

import builtins
import math
import os
import shutil
from pathlib import Path

import numpy as np
import xarray as xr

from .grid import sweep

DEFAULT_CHUNK_B = 256 * 2**20  # output bytes per chunk: large enough to amortise a call


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


def write(path: str | os.PathLike, scenario=None, *, chunk_dim: str | None = None,
          chunk_B: float = DEFAULT_CHUNK_B, progress: bool = True, **sweep_args) -> Path:
    """Compute ``bandjax.sweep(scenario, **sweep_args)`` chunk by chunk into a zarr store at ``path``.

    The result is the Dataset :func:`bandjax.sweep` would return (same variables, dims, coords,
    attrs and values), stored on disk with one zarr chunk per computed chunk. Peak memory is about
    ``chunk_B`` of outputs plus the jitted function's temporaries and the compressor's buffers,
    independent of the size of the sweep.

    Chunk length = max(1, chunk_B // output bytes of one value of ``chunk_dim``).

    Args:
      path: the store to create (a folder); an existing one is replaced once the new one is complete.
      scenario: as for :func:`bandjax.sweep`.
      chunk_dim: the swept argument to slice (default: the one with the most values).
      chunk_B: output bytes per chunk, B (default 256 MiB).
      progress: show a tqdm progress bar (cells done; a cell is one variant at one grid point).
      **sweep_args: the arguments of :func:`bandjax.sweep` (``bandwidth=``, ``budget=``, ...).

    Returns:
      ``Path(path)``.
    """
    _require_zarr()
    from tqdm.auto import tqdm

    if isinstance(chunk_B, bool) or not isinstance(chunk_B, (int, float)) or not chunk_B > 0:
        raise ValueError(f"chunk_B = {chunk_B!r}: must be a number of bytes > 0")
    dim = chunk_dim_of(sweep_args, chunk_dim)
    values = _swept(sweep_args)[dim]
    # One value of the chunked dimension gives the output bytes per value (and checks arguments).
    probe = sweep(scenario, **{**sweep_args, dim: values[:1]})
    slice_B = sum(v.nbytes for v in probe.data_vars.values())
    per_chunk = min(len(values), max(1, int(chunk_B // max(slice_B, 1))))
    cells_per_value = math.prod(n for d, n in probe.sizes.items() if d not in INNER)
    # Text labels along the chunked dimension (variant ids, model names) are fixed-width: every
    # chunk takes the width of the widest label, which a one-point sweep along it tells.
    text = [k for k, v in probe.coords.items() if dim in v.dims and v.dtype.kind == "U"]
    widths = {}
    if text:
        point = {k: v[:1] for k, v in _swept(sweep_args).items() if k != dim}
        labels = sweep(scenario, **{**sweep_args, **point, "quantities": ("step_s",)})
        widths = {k: labels[k].dtype for k in text}
    del probe

    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        with tqdm(total=len(values) * cells_per_value, unit="cell", unit_scale=True,
                  disable=not progress, desc=f"sweep to {path.name}") as bar:
            for start in builtins.range(0, len(values), per_chunk):
                chunk = sweep(scenario, **{**sweep_args, dim: values[start:start + per_chunk]})
                if widths:
                    chunk = chunk.assign_coords({k: chunk[k].astype(w) for k, w in widths.items()})
                if start == 0:
                    encoding = {k: {"chunks": tuple(per_chunk if d == dim else n
                                                    for d, n in zip(v.dims, v.shape))}
                                for k, v in chunk.variables.items() if dim in v.dims}
                    chunk.to_zarr(partial, mode="w", zarr_format=2, consolidated=True,
                                  encoding=encoding)
                else:
                    chunk.to_zarr(partial, append_dim=dim, zarr_format=2, consolidated=True)
                bar.update(chunk.sizes[dim] * cells_per_value)
                del chunk
        if path.exists():
            shutil.rmtree(path)
        os.replace(partial, path)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return path


def open(path: str | os.PathLike) -> xr.Dataset:  # noqa: A001 - the module's verb, as xr.open_*
    """A store written by :func:`write`, as a lazy dask-backed Dataset (one dask chunk per stored
    chunk): nothing is read until a value is asked for."""
    _require_zarr()
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"sweep store {os.fspath(path)!r} does not exist")
    return xr.open_zarr(path, consolidated=True)
