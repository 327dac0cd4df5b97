"""Sweeps streamed to disk in chunks equal the sweep computed in memory, and are written whole."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import bandjax
from bandjax import grid, store

ROOT = Path(__file__).resolve().parents[1]
ARGS = dict(bandwidth=np.geomspace(0.1, 1000.0, 37), budget=["free", "low", 50.0], enob=[6, 8])


def test_chunked_store_equals_the_in_memory_sweep(tmp_path):
    path = store.write(tmp_path / "s.zarr", chunk_B=50_000, progress=False, **ARGS)
    ds = store.open(path)
    assert ds["step_s"].chunks is not None  # lazy, dask-backed
    chunks = ds["step_s"].chunks[0]
    assert len(chunks) > 3 and len(set(chunks[:-1])) == 1  # several equal chunks along bandwidth
    xr.testing.assert_identical(ds.load(), bandjax.sweep(**ARGS))


@pytest.mark.parametrize("dim", ["budget", "variant"])
def test_chunking_along_a_labelled_dimension(tmp_path, dim):
    args = {**ARGS, "variant": ["band_switch", "adamw", "topk"],
            "quantities": ("step_s", "time_to_target_s", "status", "hot_spot")}
    path = store.write(tmp_path / "s.zarr", chunk_dim=dim, chunk_B=1, progress=False, **args)
    ds = store.open(path)
    assert ds["step_s"].chunks[ds["step_s"].dims.index(dim)] == (1,) * ds.sizes[dim]
    xr.testing.assert_identical(ds.load(), bandjax.sweep(**args))


def test_bad_arguments_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="no argument is a sequence"):
        store.write(tmp_path / "a.zarr", bandwidth=12.5, progress=False)
    with pytest.raises(ValueError, match="chunk_dim = 'enob' is not a swept argument; allowed: bandwidth"):
        store.write(tmp_path / "a.zarr", bandwidth=[1.0, 2.0], chunk_dim="enob", progress=False)
    with pytest.raises(ValueError, match="chunk_B = 0"):
        store.write(tmp_path / "a.zarr", bandwidth=[1.0, 2.0], chunk_B=0, progress=False)
    with pytest.raises(ValueError, match="bandwidth = -1"):
        store.write(tmp_path / "a.zarr", bandwidth=[1.0, -1.0], progress=False)
    assert not list(tmp_path.iterdir())
    with pytest.raises(FileNotFoundError, match="does not exist"):
        store.open(tmp_path / "missing.zarr")


def test_a_failure_midway_leaves_the_old_store_untouched(tmp_path, monkeypatch):
    path = store.write(tmp_path / "s.zarr", progress=False, bandwidth=[1.0, 2.0])
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # the probe, one chunk, then a failure
            raise RuntimeError("disk full")
        return grid.sweep(*args, **kwargs)

    monkeypatch.setattr(store, "sweep", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        store.write(path, chunk_B=1, progress=False, bandwidth=[3.0, 4.0, 5.0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]
    np.testing.assert_array_equal(store.open(path)["bandwidth"].values, [1.0, 2.0])


CHILD = """
import sys, numpy as np
from bandjax import store
from benchmarks.common import peak_rss_B
kw = dict(bandwidth=np.geomspace(0.1, 1000.0, 20000), budget=np.geomspace(1, 1000, 100),
          quantities=("step_s", "time_to_target_s", "energy_to_target_J"))
store.write(sys.argv[1] + "/warm.zarr", progress=False, chunk_B=4 * 2**20,
            **{**kw, "bandwidth": kw["bandwidth"][:1000]})
before = peak_rss_B()
store.write(sys.argv[1] + "/big.zarr", progress=False, chunk_B=4 * 2**20, **kw)
print(peak_rss_B() - before)
"""


def test_peak_memory_is_bounded_by_the_chunk_not_the_sweep(tmp_path):
    # 1.2e7 cells = 288 MB of output, written in 4 MiB chunks: the peak may grow by a few chunks
    # (jit temporaries, compressor buffers), not by the sweep.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    growth_B = int(proc.stdout.split()[-1])
    assert growth_B < 64 * 2**20, f"peak RSS grew by {growth_B / 2**20:.0f} MiB for 288 MB of output"
