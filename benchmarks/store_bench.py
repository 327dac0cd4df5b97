"""A sweep written to a zarr store on a 2-worker dask LocalCluster against in process.

The same store is written both ways (proven equal, bit for bit, before the times are kept), once
each at a modest size: the cluster's time includes starting it, as ``scheduler="local"`` does.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr

from bandjax import store

QUANTITIES = ("step_s", "time_to_target_s", "energy_to_target_J")


def _size_B(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(quick: bool = False) -> dict:
    n_bw, n_budget = (2000, 10) if quick else (20_000, 50)
    args = dict(bandwidth=np.geomspace(0.1, 1000.0, n_bw), budget=np.geomspace(1, 1000, n_budget),
                quantities=QUANTITIES)
    chunk_B = (1 if quick else 8) * 2**20
    tmp = Path(tempfile.mkdtemp(prefix="bandjax-store-bench-"))
    try:
        store.write(tmp / "warm.zarr", chunk_B=chunk_B, progress=False,
                    **{**args, "bandwidth": args["bandwidth"][:10]})  # compile outside the clock
        t0 = time.perf_counter()
        here = store.write(tmp / "here.zarr", chunk_B=chunk_B, progress=False, **args)
        here_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        there = store.write(tmp / "there.zarr", chunk_B=chunk_B, progress=False,
                            scheduler="local", **args)
        there_s = time.perf_counter() - t0
        lazy = store.open(here)
        chunks = len(lazy["step_s"].chunks[lazy["step_s"].dims.index("bandwidth")])
        a, b = lazy.load(), store.open(there).load()
        xr.testing.assert_identical(a, b)
        for k in a.variables:
            np.testing.assert_array_equal(a[k].values, b[k].values, strict=True)
        cells = int(np.prod([n for d, n in a.sizes.items() if d not in store.INNER]))
        return {"cells": cells, "chunks": chunks,
                "in_process_s": here_s, "local_cluster_s": there_s,
                "distributed_speedup": here_s / there_s, "store_B": _size_B(here),
                "workers": store.LOCAL_WORKERS}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1))
