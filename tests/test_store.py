"""Sweeps streamed to disk in chunks equal the sweep computed in memory, and are written whole."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
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
    # read back, the budget axis still selects by name, as a sweep in memory does
    np.testing.assert_array_equal(ds.step_s.sel(budget="low").values,
                                  bandjax.sweep(**ARGS).step_s.sel(budget="low").values)


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


@pytest.mark.slow
def test_peak_memory_is_bounded_by_the_chunk_not_the_sweep(tmp_path):
    # 1.2e7 cells = 288 MB of output, written in 4 MiB chunks: the peak may grow by a few chunks
    # (jit temporaries, compressor buffers), not by the sweep.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    growth_B = int(proc.stdout.split()[-1])
    assert growth_B < 64 * 2**20, f"peak RSS grew by {growth_B / 2**20:.0f} MiB for 288 MB of output"


# --------------------------------------------------------------------------- written whole

SMALL = dict(bandwidth=np.geomspace(0.1, 1000.0, 24), enob=[6, 8], quantities=("step_s",))


def test_a_path_that_is_not_our_store_is_refused(tmp_path):
    (tmp_path / "file.zarr").write_text("notes")
    (tmp_path / "folder.zarr").mkdir()
    (tmp_path / "folder.zarr" / "thesis.tex").write_text("chapter 1")
    for name, kind in [("file.zarr", "a regular file"), ("folder.zarr", "a folder that is not")]:
        with pytest.raises(FileExistsError, match=f"{name}' exists and is {kind}"):
            store.write(tmp_path / name, progress=False, **SMALL)
    with pytest.raises(FileExistsError, match="not a regular file or folder"):
        store.write(Path("/dev/null"), progress=False, **SMALL)
    (tmp_path / "s.zarr.old").write_text("mine")  # a leftover name that is not ours either
    with pytest.raises(FileExistsError, match="s.zarr.old' exists and is a regular file"):
        store.write(tmp_path / "s.zarr", progress=False, **SMALL)
    assert (tmp_path / "file.zarr").read_text() == "notes"
    assert (tmp_path / "folder.zarr" / "thesis.tex").read_text() == "chapter 1"
    assert (tmp_path / "s.zarr.old").read_text() == "mine"


def _bandwidths(path):
    return store.open(path)["bandwidth"].values


@pytest.mark.parametrize("left", ["partial", "new beside old", "window", "old half removed"])
def test_leftovers_of_a_killed_write_are_recovered(tmp_path, left):
    # Each state a write passes through (module docstring of bandjax.store), made by hand: the
    # path opens as a complete store, and the next write recovers and leaves nothing beside it.
    old = [1.0, 2.0]
    path = store.write(tmp_path / "s.zarr", progress=False, bandwidth=old)
    other = store.write(tmp_path / "t.zarr", progress=False, bandwidth=[3.0, 4.0, 5.0])
    beside = lambda s: tmp_path / f"s.zarr{s}"  # noqa: E731
    expect = before = old
    if left == "partial":
        beside(".partial").mkdir()
        (beside(".partial") / store.PARTIAL_MARKER).touch()
        other.rename(beside(".partial") / "data")  # complete or not, a partial is discarded
    elif left == "new beside old":
        other.rename(beside(".new"))
        expect = [3.0, 4.0, 5.0]  # complete: the swap is rolled forward
    elif left == "window":
        path.rename(beside(".old"))
        other.rename(beside(".new"))
        expect = before = [3.0, 4.0, 5.0]
    else:
        path.rename(beside(".old"))
        other.rename(path)
        for p in beside(".old").iterdir():  # cut short: the marker is removed last
            if p.name != store.MARKER:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        expect = before = [3.0, 4.0, 5.0]
    np.testing.assert_array_equal(_bandwidths(path), before)  # readable before any recovery
    store.recover(path)
    np.testing.assert_array_equal(_bandwidths(path), expect)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("s.")) == ["s.zarr"]
    store.write(path, progress=False, bandwidth=[7.0])
    np.testing.assert_array_equal(_bandwidths(path), [7.0])


KILLED = """
import sys, numpy as np
from bandjax import store
path, n = sys.argv[1], 0
kw = dict(enob=[6, 8], quantities=("step_s", "time_to_target_s"), chunk_B=2000, progress=False)
store.write(path, bandwidth=np.geomspace(0.1, 1000.0, 40), **kw)
print("ready", flush=True)
while True:  # the old store and the new one in turn, each written over the other
    n += 1
    store.write(path, bandwidth=np.geomspace(0.1, 1000.0, 40 + n % 2), **kw)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_write_killed_at_a_random_moment_leaves_a_complete_store(tmp_path, sig):
    # Seeded random moments while writes replace each other; every kill must leave the path
    # opening as one of the two complete stores (equal, value for value, to the in-memory sweep).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rng = np.random.default_rng(20260 + int(sig))
    expected = {n: bandjax.sweep(bandwidth=np.geomspace(0.1, 1000.0, n), enob=[6, 8],
                                 quantities=("step_s", "time_to_target_s")) for n in (40, 41)}
    for trial in range(2):
        path = tmp_path / f"k{trial}.zarr"
        with (tmp_path / "stderr").open("w+") as err, subprocess.Popen(
                [sys.executable, "-c", KILLED, str(path)], cwd=ROOT, env=env,
                stdout=subprocess.PIPE, stderr=err, text=True) as proc:
            try:
                ready = proc.stdout.readline().strip()
                assert ready == "ready", (err.seek(0), err.read()[-3000:])[1]
                time.sleep(rng.uniform(0.0, 1.5))
                proc.send_signal(sig)
                proc.wait(timeout=60)
            finally:
                proc.kill()
        ds = store.open(path).load()
        xr.testing.assert_identical(ds, expected[ds.sizes["bandwidth"]])
        store.recover(path)
        xr.testing.assert_identical(store.open(path).load(), ds)
        left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f"k{trial}."))
        assert left == [path.name]


# --------------------------------------------------------------------------- on a dask cluster


@pytest.mark.slow
def test_a_local_cluster_writes_the_same_store_bit_for_bit(tmp_path):
    args = {**ARGS, "quantities": ("step_s", "time_to_target_s", "status", "hot_spot")}
    here = store.write(tmp_path / "here.zarr", chunk_B=50_000, progress=False, **args)
    there = store.write(tmp_path / "there.zarr", chunk_B=50_000, progress=False, scheduler="local",
                        **args)
    a, b = store.open(here).load(), store.open(there).load()
    xr.testing.assert_identical(a, b)
    for k in a.variables:  # identical, and equal bit for bit (NaN where NaN)
        np.testing.assert_array_equal(a[k].values, b[k].values, strict=True)
    assert store.open(there)["step_s"].chunks == store.open(here)["step_s"].chunks


def test_a_scheduler_that_does_not_answer_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "CONNECT_TIMEOUT_S", 1.0)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionError, match=rf"scheduler = 'tcp://127.0.0.1:{port}': no dask "
                                              r"scheduler answered within 1 s"):
        store.write(tmp_path / "s.zarr", progress=False, scheduler=f"tcp://127.0.0.1:{port}", **SMALL)
    with pytest.raises(ValueError, match="scheduler = 'cluster' is not known; allowed: None"):
        store.write(tmp_path / "s.zarr", progress=False, scheduler="cluster", **SMALL)
    assert not list(tmp_path.iterdir())


def test_the_store_command_writes_the_sweep(tmp_path, monkeypatch, capsys):
    import argparse

    from bandjax.cli import store as store_cli

    parser = argparse.ArgumentParser()
    store_cli.register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["store", str(tmp_path / "c.zarr"), "--bandwidth", "0.5", "50",
                              "--points", "7", "--budget", "free", "200", "--quiet",
                              "--quantities", "step_s", "status"])
    assert args.func(args) == 0
    assert "wrote" in capsys.readouterr().out
    xr.testing.assert_identical(
        store.open(tmp_path / "c.zarr").load(),
        bandjax.sweep(bandwidth=np.geomspace(0.5, 50.0, 7), budget=["free", 200.0],
                      quantities=("step_s", "status")))
    bad = parser.parse_args(["store", str(tmp_path / "d.zarr"), "--bandwidth", "5", "0.5"])
    with pytest.raises(ValueError, match=r"--bandwidth 5 0.5: must be GB/s with 0 < LO <= HI, finite"):
        bad.func(bad)
