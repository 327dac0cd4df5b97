"""What a straggling tail costs a dense sweep (docs/model.md section 16).

One grid, bandwidth x H x tail (the method pack beside the study's six variants, so a cell is
one variant at one point), timed twice in the same run: with a lognormal tail (sigma swept) and
with nothing straggling (the same grid, the family "none"). Each figure is
:func:`benchmarks.common.measure`'s median of several calls of :func:`bandjax.sweep` after
warm-up calls (the labelled Dataset a user gets: checks, coordinates and labels included).

The tail's moments are quadratures on the tail's own small shape (sigma x H, not the bandwidth
axis), so the two should run at about the same rate: ``time_over_no_straggler`` = the
no-straggler rate / the straggler rate (the sweep's time with the tail over its time without),
the target <= 3.
"""

from __future__ import annotations

import numpy as np

import bandjax
from bandjax.variants import METHODS

from . import common

QUANTITIES = ("step_s", "time_to_target_s", "compute_utilisation")
WARMUP = 3
TAILS = (0.0, 0.05, 0.1, 0.2)  # sigma of the lognormal
HS = (1.0, 10.0, 100.0, 1000.0)


def _grid(quick: bool):
    sc = bandjax.reference().with_variants(METHODS).replace(dcs=4.0, workers_per_dc=64.0)
    target = 1e5 if quick else 1e6
    n_bw = max(1, round(target / (len(TAILS) * len(HS) * len(sc.ids))))
    return sc, np.geomspace(0.1, 1000.0, n_bw)


def run(quick: bool = False) -> dict:
    """cells/s of the sweep with a lognormal tail and without one, and their ratio."""
    sc, bandwidth = _grid(quick)
    cells = len(bandwidth) * len(TAILS) * len(HS) * len(sc.ids)
    repeat = common.MIN_REPEAT if quick else 9
    args = dict(bandwidth=bandwidth, sync_every_H=list(HS), straggler_s=list(TAILS),
                quantities=QUANTITIES)
    tail = sc.replace(straggler="lognormal")
    # the same numbers as the closed form at a point, before anything is timed
    ds = bandjax.sweep(tail, **args)
    point = tail.replace(straggler_s=0.1, sync_every_H=100.0, wan_Bps=float(bandwidth[-1]) * 1e9)
    np.testing.assert_allclose(
        ds["step_s"].sel(straggler_s=0.1, sync_every_H=100.0).isel(bandwidth=-1).values,
        np.asarray(bandjax.step.step_s(point)), rtol=1e-12)
    with_tail = common.measure(lambda: bandjax.sweep(tail, **args), repeat=repeat, warmup=WARMUP)
    without = common.measure(lambda: bandjax.sweep(sc, **args), repeat=repeat, warmup=WARMUP)
    rate, rate_none = cells / with_tail["median_s"], cells / without["median_s"]
    return {
        "cells": cells,
        "cells_per_s": rate,
        "cells_per_s_no_straggler": rate_none,
        "time_over_no_straggler": rate_none / rate,
        "target_time_over_no_straggler": 3.0,
        "with_tail": with_tail,
        "no_straggler": without,
        "grid": {"bandwidth": len(bandwidth), "sync_every_H": list(HS), "straggler_s": list(TAILS),
                 "variants": len(sc.ids), "family": "lognormal"},
    }


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    print(json.dumps({k: v for k, v in run("--quick" in sys.argv).items()
                      if k not in ("with_tail", "no_straggler")}, indent=1))
