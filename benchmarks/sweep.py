"""The dense sweep: bandjax against vectorised numpy and a pure-Python scalar loop, and its cost curve.

A cell is one variant at one grid point. The grid is bandwidth x budget (100 budgets, 10 below
1e5 cells) x all six variants, and each cell yields step time, time to target and energy to target
(3 float64 outputs, 24 B a cell). Two bandjax figures are timed:

- ``sweep``: :func:`bandjax.sweep` with those three quantities, the labelled ``xarray.Dataset``
  a user gets (argument checks, coordinates and labels included);
- ``core``: the jitted function that call wraps, on arrays already prepared.

Baselines, timed in the same run on the same grid: :mod:`benchmarks.numpy_baseline` (the same
formulas, vectorised numpy) and :mod:`benchmarks.scalar_baseline` (one cell at a time in Python,
timed on a random sample of cells).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import bandjax
from bandjax import grid
from bandjax import variants as _v

from . import common, numpy_baseline, scalar_baseline

QUANTITIES = numpy_baseline.QUANTITIES
OUTPUT_B_PER_CELL = 8 * len(QUANTITIES)
SIZES = (1e4, 1e5, 1e6, 1e7)
BIG_SIZES = (1e8,)
QUICK_SIZES = (1e4, 1e5, 1e6)  # the quick headline is still at 1e6 cells, past the fixed costs
HEADLINE_CELLS = 1e7  # the size the headline figures (and the memory-bandwidth target) refer to
WRAPPER_CELLS = 1e5  # the wrapper's cost is measured at this size, at each number of budgets
WRAPPER_BUDGETS = (10, 100, 10_000)
WRAPPER_REPEAT = 101  # paired runs: the wrapper is the difference of two times of about 1 ms,
# which vary by 2x from run to run on 2 cores: 15 runs gave fractions 0.77 to 1.14 for one build
WARMUP = 3  # untimed calls before each figure's runs. At a new size the first calls grow the
# heap: at 1e6 cells the sweep's first 3 to 12 calls paid page faults that later ones did not
# (glibc keeping freed memory), and with one warm-up call the function timed first at a size
# (the sweep) took more of them than the rest
FIT_FROM_CELLS = 1e5  # the cost curve is fitted from here up
DISK_CELLS = 1e9


def grid_for(cells: float) -> tuple[np.ndarray, np.ndarray]:
    """(bandwidths in GB/s, budgets in GFLOP/s) whose grid x 6 variants is about ``cells`` cells."""
    n_budget = 10 if cells < 1e5 else 100
    n_bw = max(1, round(cells / len(_v.IDS) / n_budget))
    return np.geomspace(0.1, 1000.0, n_bw), np.geomspace(1.0, 1000.0, n_budget)


def cells_of(bandwidth, budget) -> int:
    return len(bandwidth) * len(budget) * len(_v.IDS)


@jax.jit
def _floor(sc):
    """The least any sweep of this grid must do: write three fresh full-size float64 outputs
    (one add each, no model). Its time is the floor set by memory and page faults."""
    a = sc.wan_Bps[..., None] + sc.budget_FLOPs[..., None] + jnp.arange(len(_v.IDS), dtype=float)
    return a, a + 1.0, a + 2.0


def core_args(sc, bandwidth, budget):
    """The arrays :func:`bandjax.sweep` hands its jitted function for this grid."""
    leaves = {"wan_Bps": np.asarray(bandwidth, float)[:, None] * 1e9,
              "budget_FLOPs": np.asarray(budget, float)[None, :] * 1e9}
    sc = jax.tree.map(lambda x: jnp.asarray(x, dtype=float), sc.replace(**leaves))
    steps = jnp.asarray(numpy_baseline.steps(sc))
    return sc, steps, tuple(range(len(_v.IDS)))


def measure_size(cells: float, *, repeat: int, python_sample: int, seed: int = 0) -> dict:
    """Every figure at one grid size; times in s, rates in cells/s."""
    sc = bandjax.reference()
    bw, bud = grid_for(cells)
    n = cells_of(bw, bud)

    warm = dict(repeat=repeat, warmup=WARMUP)
    user = common.measure(lambda: bandjax.sweep(sc, bandwidth=bw, budget=bud, quantities=QUANTITIES),
                          **warm)
    args = core_args(sc, bw, bud)
    core = common.measure(lambda: grid._evaluate(*args, QUANTITIES), **warm)
    floor = common.measure(lambda: _floor(args[0]), **warm)
    del args
    npy = common.measure(lambda: numpy_baseline.sweep(sc, bw, bud), **warm)

    rng = np.random.default_rng(seed)
    k = min(python_sample, n)
    sample = list(zip(rng.integers(0, len(bw), k).tolist(), rng.integers(0, len(bud), k).tolist(),
                      rng.integers(0, len(_v.IDS), k).tolist()))
    py = common.measure(lambda: scalar_baseline.sweep_cells(sc, bw, bud, sample), repeat=repeat)

    def rate(t, cells_timed=n):
        return {**t, "cells": cells_timed, "cells_per_s": cells_timed / t["median_s"],
                "cells_per_s_min": cells_timed / t["max_s"], "cells_per_s_max": cells_timed / t["min_s"]}

    out = {"cells": n, "grid": {"bandwidth": len(bw), "budget": len(bud), "variant": len(_v.IDS)},
           "sweep": rate(user), "core": rate(core), "floor": rate(floor), "numpy": rate(npy),
           "python": rate(py, k)}
    for who in ("sweep", "core"):
        r = out[who]["cells_per_s"]
        out[who]["ratio_numpy"] = r / out["numpy"]["cells_per_s"]
        out[who]["ratio_python"] = r / out["python"]["cells_per_s"]
        # first call at this grid shape (tracing + XLA compile) beyond a steady-state call
        out[who]["compile_s"] = out[who]["first_s"] - out[who]["median_s"]
    return out


def run(quick: bool = False, big: bool = False, progress: bool = True) -> dict:
    """The sweep figures: per size, the cost curve and the fraction of memory bandwidth.

    ``quick``: sizes up to 1e6 cells, smaller samples (a smoke run of seconds). ``big``: add 1e8.
    """
    sizes = QUICK_SIZES if quick else SIZES + (BIG_SIZES if big else ())
    fit_from = min(sizes) * 0.99 if quick else FIT_FROM_CELLS * 0.99
    repeat = common.MIN_REPEAT
    bandjax.sweep(bandwidth=[1.0, 2.0], quantities=QUANTITIES)  # start the backend once
    bw_B = 2**28 if quick else 2**30  # quick: still well past the last-level cache
    membw = common.memory_bandwidth(bw_B, repeat=repeat)
    per_size = []
    for cells in sizes:
        if progress:
            print(f"  sweep: {cells:.0e} cells ...", file=sys.stderr, flush=True)
        per_size.append(measure_size(cells, repeat=repeat, python_sample=200 if quick else 3000))

    head = max((s for s in per_size if s["cells"] <= HEADLINE_CELLS * 1.01), key=lambda s: s["cells"])
    fit = [s for s in per_size if s["cells"] >= fit_from]
    out = {
        "measured": "bandjax.sweep(bandwidth=[...], budget=[...], quantities=(step_s, "
                    "time_to_target_s, energy_to_target_J)), a labelled xarray.Dataset; 'core' is "
                    "the jitted function it wraps, on prepared arrays",
        "cell": "one variant at one grid point: step time, time to target and energy to target, "
                f"{OUTPUT_B_PER_CELL} B of float64 output",
        "headline_cells": head["cells"],
        "fit_from_cells": min(s["cells"] for s in fit),
        "cells_per_s": head["sweep"]["cells_per_s"],
        "ratio_numpy": head["sweep"]["ratio_numpy"],
        "ratio_python": head["sweep"]["ratio_python"],
        "compile_s": head["sweep"]["compile_s"],
        "scaling_exponent": common.fit_exponent([s["cells"] for s in fit],
                                                [s["sweep"]["median_s"] for s in fit]),
        "fraction_of_memory_bw": fraction_of_bw(head["cells"], head["sweep"]["median_s"], membw),
        "fraction_of_floor": head["sweep"]["cells_per_s"] / head["floor"]["cells_per_s"],
        # without the smallest fitted size, where a fixed cost per call outside jit still shows
        "scaling_exponent_from_1e6": common.fit_exponent(
            [s["cells"] for s in per_size if s["cells"] >= 0.99e6],
            [s["sweep"]["median_s"] for s in per_size if s["cells"] >= 0.99e6]),
        "core": {
            "cells_per_s": head["core"]["cells_per_s"],
            "ratio_numpy": head["core"]["ratio_numpy"],
            "ratio_python": head["core"]["ratio_python"],
            "compile_s": head["core"]["compile_s"],
            "scaling_exponent": common.fit_exponent([s["cells"] for s in fit],
                                                    [s["core"]["median_s"] for s in fit]),
            "fraction_of_memory_bw": fraction_of_bw(head["cells"], head["core"]["median_s"], membw),
            "fraction_of_fresh_memory_bw": fraction_of_bw(head["cells"], head["core"]["median_s"],
                                                          membw, "fresh"),
            "fraction_of_floor": head["core"]["cells_per_s"] / head["floor"]["cells_per_s"],
        },
        "fraction_of_fresh_memory_bw": fraction_of_bw(head["cells"], head["sweep"]["median_s"],
                                                      membw, "fresh"),
        "floor": {
            "what": "a jitted function writing the same three fresh outputs with one add each",
            "cells_per_s": head["floor"]["cells_per_s"],
            "fraction_of_memory_bw": fraction_of_bw(head["cells"], head["floor"]["median_s"], membw),
        },
        "memory_bw": membw,
        "sizes": per_size,
    }
    if progress:
        print(f"  sweep: wrapper at {WRAPPER_CELLS:.0e} cells, "
              f"{', '.join(map(str, WRAPPER_BUDGETS))} budgets ...", file=sys.stderr, flush=True)
    out["wrapper"] = wrapper_cost()
    out["wrapper_s"] = {str(b): w["wrapper_s"]["median_s"] for b, w in out["wrapper"].items()}
    out["wrapper_growth"] = (out["wrapper_s"][str(WRAPPER_BUDGETS[-1])]
                             / out["wrapper_s"][str(WRAPPER_BUDGETS[0])])
    if progress:
        print("  sweep: 1 core against 2 ...", file=sys.stderr, flush=True)
    from .winner_bench import SCALING_SIZE, core_scaling
    scaling = core_scaling("sweep", 1e5 if quick else SCALING_SIZE, repeat)
    out["core_scaling"] = scaling["scaling"]
    out["core_scaling_detail"] = scaling
    if not quick:
        if progress:
            print(f"  sweep: page-fault probe at {head['cells']:.0e} cells ...", file=sys.stderr,
                  flush=True)
        out["page_faults"] = page_fault_probe(head["cells"], repeat)
    return out


def wrapper_cost(cells: float = WRAPPER_CELLS, budgets=WRAPPER_BUDGETS,
                 repeat: int = WRAPPER_REPEAT) -> dict:
    """What :func:`bandjax.sweep` costs beyond its jitted core, at ``cells`` cells for each number
    of budgets (the bandwidth axis shrinks as the budget axis grows).

    The wrapper is everything but the jitted pass: argument checks, the scenario's arrays, the
    coordinates, the budget labels and the ``xarray.Dataset``. Each of ``repeat`` runs times the
    sweep and then its core on the same arrays, back to back; ``wrapper_s`` is the median of the
    differences (paired, so that load shared with other processes cancels as far as it can).
    ``fraction_of_core`` is the core's median time over the sweep's: 1 would be a free wrapper.

    Those runs sweep the same arguments again, as a notebook does, so they take what a sweep
    keeps with its scenario (the parsed grid, its labels, the overrides on the device).
    ``new_axes`` times, in the same runs, a sweep whose bandwidths are new every call (each
    scaled by 1 + a few ulps), which can keep nothing: its ``wrapper_s`` is paired with the
    same core run, and its ``fraction_of_core`` is taken the same way.
    """
    sc = bandjax.reference()
    out = {}
    for n_budget in budgets:
        bw = np.geomspace(0.1, 1000.0, max(1, round(cells / len(_v.IDS) / n_budget)))
        bud = np.geomspace(1.0, 1000.0, n_budget)
        args = core_args(sc, bw, bud)

        def user():
            return bandjax.sweep(sc, bandwidth=bw, budget=bud, quantities=QUANTITIES)

        def core():
            return common._wait(grid._evaluate(*args, QUANTITIES))

        new = iter([bw * (1.0 + (i + 1) * 2.0**-48) for i in range(repeat + 1)])

        def user_new():
            return bandjax.sweep(sc, bandwidth=next(new), budget=bud, quantities=QUANTITIES)

        user(), core(), user_new()  # compile at this shape
        t_user, t_core, t_new = [], [], []
        for _ in range(repeat):
            for fn, times in ((user, t_user), (core, t_core), (user_new, t_new)):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
        sweep_s, core_s, new_s = common.stats(t_user), common.stats(t_core), common.stats(t_new)
        out[str(n_budget)] = {
            "budgets": n_budget, "bandwidths": len(bw), "cells": cells_of(bw, bud),
            "wrapper_s": common.stats(np.subtract(t_user, t_core)), "sweep": sweep_s,
            "core": core_s, "fraction_of_core": core_s["median_s"] / sweep_s["median_s"],
            "new_axes": {"wrapper_s": common.stats(np.subtract(t_new, t_core)), "sweep": new_s,
                         "fraction_of_core": core_s["median_s"] / new_s["median_s"]}}
    return out


def fraction_of_bw(cells: int, seconds: float, membw: dict, which: str = "warm") -> float:
    """The sweep's memory traffic as a fraction of a numpy copy's.

    The sweep writes 24 B a cell and reads next to nothing (its inputs are 1-D axes); it is counted
    like the copy, as bytes written plus the bytes a write brings into the cache first (write
    allocate): 2 x 24 B a cell. So the fraction is also (time to copy an array the size of the
    output) / (time of the sweep).
    """
    return 2 * OUTPUT_B_PER_CELL * cells / seconds / membw[which]["Bps"]


# ----------------------------------------------------------------------------------- page faults

# glibc: never hand big blocks back to the kernel, so a new output reuses pages already mapped.
REUSE_PAGES_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**40)}


def page_fault_probe(cells: float = HEADLINE_CELLS, repeat: int = common.MIN_REPEAT) -> dict:
    """How much of the sweep's time is the kernel mapping fresh pages for its outputs.

    Times the core, the floor and the numpy baseline in two fresh processes: as usual, and with
    glibc told to keep freed memory (:data:`REUSE_PAGES_ENV`), so each run's outputs land in pages
    the last run already touched. The difference is the cost of first-touch page faults. (That
    setting is a diagnosis, not a recommendation: the process then never returns memory.)
    """
    out = {"cells": None, "env": REUSE_PAGES_ENV}
    for name, extra in (("default", {}), ("reuse_pages", REUSE_PAGES_ENV)):
        code = ("import sys, json; from benchmarks.sweep import _probe_child; "
                "print(json.dumps(_probe_child(float(sys.argv[1]), int(sys.argv[2]))))")
        proc = subprocess.run([sys.executable, "-c", code, repr(float(cells)), str(repeat)],
                              stdout=subprocess.PIPE, text=True, check=True,
                              env={**os.environ, **extra, "PYTHONPATH": os.pathsep.join(
                                  [os.getcwd(), os.environ.get("PYTHONPATH", "")])})
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        out["cells"] = out[name]["cells"]
    return out


def _probe_child(cells: float, repeat: int) -> dict:
    sc = bandjax.reference()
    bw, bud = grid_for(cells)
    args = core_args(sc, bw, bud)
    n = cells_of(bw, bud)
    figures = {"cells": n}
    for who, fn in (("core", lambda: grid._evaluate(*args, QUANTITIES)),
                    ("floor", lambda: _floor(args[0])),
                    ("numpy", lambda: numpy_baseline.sweep(sc, bw, bud))):
        t = common.measure(fn, repeat=repeat)
        figures[who] = {"median_s": t["median_s"], "min_s": t["min_s"], "max_s": t["max_s"],
                        "cells_per_s": n / t["median_s"]}
    return figures


# ------------------------------------------------------------------------------------------ disk


def disk_run(cells: float = DISK_CELLS, directory: str | None = None, chunk_B: float | None = None,
             progress: bool = True) -> dict:
    """Stream a ``cells``-cell sweep to a zarr store in a fresh process; report its peak memory.

    The child process's peak resident set size (``VmHWM``) is the figure; the store is deleted
    afterwards. Returns wall time, s; peak RSS, B; bytes on disk; cells; chunking.
    """
    directory = tempfile.mkdtemp(prefix="bandjax-disk-", dir=directory)
    path = os.path.join(directory, "sweep.zarr")
    try:
        code = ("import sys, json; from benchmarks.sweep import _disk_child; "
                "print(json.dumps(_disk_child(float(sys.argv[1]), sys.argv[2], "
                "None if sys.argv[3] == 'None' else float(sys.argv[3]), sys.argv[4] == '1')))")
        proc = subprocess.run([sys.executable, "-c", code, repr(float(cells)), path, repr(chunk_B),
                               "1" if progress else "0"],
                              stdout=subprocess.PIPE, stderr=None, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [os.getcwd(), os.environ.get("PYTHONPATH", "")])})
        if proc.returncode != 0:
            raise RuntimeError(f"disk sweep of {cells:.0e} cells failed (exit {proc.returncode})")
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _disk_child(cells: float, path: str, chunk_B: float | None, progress: bool) -> dict:
    from bandjax import store

    bw, bud = grid_for(cells)
    kwargs = {} if chunk_B is None else {"chunk_B": chunk_B}
    rss_before = common.peak_rss_B()
    t0 = time.perf_counter()
    store.write(path, bandwidth=bw, budget=bud, quantities=QUANTITIES, progress=progress, **kwargs)
    wall = time.perf_counter() - t0
    peak = common.peak_rss_B()
    on_disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    ds = store.open(path)
    n = int(ds.sizes["bandwidth"] * ds.sizes["budget"] * ds.sizes["variant"])
    # spot-check one value against an in-memory sweep of that point
    i = len(bw) // 2
    ref = bandjax.sweep(bandwidth=[float(bw[i])], budget=bud, quantities=QUANTITIES)
    err = float(np.nanmax(np.abs(ds["step_s"].isel(bandwidth=[i]).values - ref["step_s"].values)
                          / ref["step_s"].values))
    return {"cells": n, "wall_s": wall, "cells_per_s": n / wall, "peak_rss_B": peak,
            "peak_rss_before_write_B": rss_before, "bytes_on_disk": on_disk,
            "output_B": n * OUTPUT_B_PER_CELL,
            "chunk_B": store.DEFAULT_CHUNK_B if chunk_B is None else chunk_B,
            "format": "zarr v2, blosc zstd compression", "spot_check_rel_err": err}
