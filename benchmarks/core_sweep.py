"""Compile and steady-state time of the reference dense sweep.

6 variants x 1,000 bandwidths x 2 ENOB x 50 budgets x 2 bases = 1.2e6 cells in one call to
``bandjax.sweep``. Run: ``python benchmarks/core_sweep.py``. The full suite is ``python -m benchmarks``.
"""

import statistics
import time

import numpy as np

import bandjax
from bandjax import grid


def main(repeats: int = 5) -> dict:
    args = dict(bandwidth=np.logspace(-1, 3, 1000), enob=[8, 6], budget=np.linspace(10, 200, 50),
                basis=["hypothesis", "exact"])
    grid._evaluate.clear_cache()
    t0 = time.perf_counter()
    ds = bandjax.sweep(**args)
    first = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        bandjax.sweep(**{**args, "bandwidth": args["bandwidth"] * (1 + 1e-3 * (i + 1))})
        times.append(time.perf_counter() - t0)
    steady = statistics.median(times)
    cells = ds["step_s"].size
    out = {"cells": cells, "first_call_s": first, "steady_s": steady,
           "compile_s": first - steady, "cells_per_s": cells / steady}
    print(f"{cells:,} cells: first call {first:.2f} s, steady state {steady:.3f} s "
          f"(median of {repeats}), compile ~{first - steady:.2f} s, {cells / steady:,.0f} cells/s")
    return out


if __name__ == "__main__":
    main()
