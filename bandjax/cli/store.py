"""``bandjax store``: a sweep written chunk by chunk to a zarr store (:func:`bandjax.store.write`)."""

from __future__ import annotations

import numpy as np

from ..units import significant

from ._setup import sig
from .args import check_bandwidth_range, check_points, load_scenario, scenario_arg


def _budget(text: str):
    """A budget value: GFLOP/s, or one of the named budgets."""
    if text in ("free", "low", "high"):
        return text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--budget = {text!r}: give GFLOP/s (a number > 0) or free, low, "
                         "high") from None


def _store_cli(args) -> int:
    from .. import store

    lo, hi = args.bandwidth
    check_bandwidth_range(lo, hi)
    from .._limits import MAX_AXIS_VALUES

    check_points(args.points, MAX_AXIS_VALUES)
    if not (np.isfinite(args.chunk_MiB) and args.chunk_MiB > 0):
        raise ValueError(f"--chunk-MiB = {sig(args.chunk_MiB)}: must be a finite number > 0 MiB")
    sweep_args = {"bandwidth": np.geomspace(lo, hi, args.points)}
    if args.budget:
        twice = sorted({b for b in args.budget if args.budget.count(b) > 1})
        if twice:
            raise ValueError(f"--budget {' '.join(args.budget)}: {', '.join(twice)} given twice; "
                             "give each budget once")
        sweep_args["budget"] = [_budget(b) for b in args.budget]
    if args.quantities:
        sweep_args["quantities"] = tuple(args.quantities)
    path = store.write(args.out, load_scenario(args), chunk_B=args.chunk_MiB * 2**20,
                       scheduler=args.scheduler, progress=not args.quiet, **sweep_args)
    ds = store.open(path)
    size_B = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    print(f"wrote {path}: {', '.join(f'{d} {n}' for d, n in ds.sizes.items())}; "
          f"{len(ds.data_vars)} variables; {significant(size_B / 2**20, 3)} MiB on disk")
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser(
        "store", help="write a sweep, chunk by chunk, to a zarr store",
        description="Sweep the closed forms over WAN bandwidth (log-spaced), and budgets if given, "
                    "and write the result to a zarr store, chunk by chunk, optionally computed "
                    "on a dask cluster. An existing store written by bandjax is replaced only "
                    "once the new one is complete. Read it back with bandjax.store.open(OUT).")
    p.add_argument("out", metavar="OUT.zarr", help="the store to write (a folder)")
    p.add_argument("--bandwidth", nargs=2, type=float, metavar=("LO", "HI"), default=(0.1, 1000.0),
                   help="WAN bandwidth range, GB/s (default 0.1 1000)")
    p.add_argument("--points", type=int, default=1000,
                   help="bandwidth points, log-spaced (default 1000)")
    p.add_argument("--budget", nargs="+", metavar="GFLOPS",
                   help="module budgets: GFLOP/s or free, low, high (default: the scenario's)")
    p.add_argument("--quantities", nargs="+", metavar="Q",
                   help="variables to store (default: all of bandjax.grid.QUANTITIES)")
    p.add_argument("--chunk-MiB", type=float, default=256.0,
                   help="output per chunk, MiB (default 256)")
    p.add_argument("--scheduler", metavar="ADDR|local",
                   help="compute chunks on a dask cluster: 'local' (2 worker processes) or a "
                        "scheduler address tcp://host:port (must be trusted: it runs pickled "
                        "tasks); default: in this process")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    scenario_arg(p)
    p.set_defaults(func=_store_cli)
