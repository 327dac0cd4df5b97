"""``bandjax wan``: step times on a WAN shared with other jobs, from the event engine (:mod:`events`),
beside the queueing approximation.

Only argparse at import time: the engine, jax and the report's shared-WAN section load inside the
command.
"""

from __future__ import annotations

import math

from ..variants import TOPOLOGIES
from ..units import describe, significant
from ._setup import SIG, sig
from .args import check_once, load_scenario, scenario_arg, variant_ids


def _ms(x) -> str:
    """A step in ms, 4 significant figures (as the report's tables)."""
    return significant(float(x), 4)


def check_wan_args(args) -> None:
    """Refuse ``bandjax wan`` arguments that are not allowed, before any work; each message names
    the option, the value as typed and what is allowed (the bounds are in :mod:`bandjax._limits`).
    The event count and the estimated wall time of the whole sweep are bounded later, once the
    scenario is known (:func:`events.engine.check_bounds`, :func:`events.engine.check_budget`)."""
    from .. import _limits

    for x in args.load:
        if not 0 <= x < 1:
            raise ValueError(f"--load {sig(x)}: must be in [0, 1) (other jobs' share of each WAN "
                             "direction)")
    check_once("--load", args.load, "load")
    if not 1 <= args.steps <= _limits.MAX_STEPS:
        raise ValueError(f"--steps {args.steps}: must be a whole number of steps in 1 .. "
                         f"{_limits.MAX_STEPS}")
    if not 1 <= args.seeds <= _limits.MAX_SEEDS:
        raise ValueError(f"--seeds {args.seeds}: must be a whole number of seeds in 1 .. "
                         f"{_limits.MAX_SEEDS}")
    if not 0 <= args.seed <= 2**63 - args.seeds:  # each run's seed is a signed 64-bit integer
        raise ValueError(f"--seed {args.seed}: must be a whole number >= 0 with --seed + --seeds "
                         f"<= 2**63 (--seeds {args.seeds}: the last seed is --seed + --seeds - 1)")
    if args.bandwidth is not None and not (math.isfinite(args.bandwidth) and args.bandwidth > 0):
        raise ValueError(f"--bandwidth {sig(args.bandwidth)} GB/s: must be a finite number of GB/s "
                         "> 0")
    if not (math.isfinite(args.max_sim_s) and args.max_sim_s > 0):
        raise ValueError(f"--max-sim-s {sig(args.max_sim_s)} s: must be a finite number of seconds > 0")
    if not (math.isfinite(args.budget_s) and 0 < args.budget_s <= 86400):
        raise ValueError(f"--budget-s {sig(args.budget_s)}: must be a number of seconds in (0, 86400] "
                         "(the wall time the runs may be estimated to take)")
    if not 1 <= args.workers <= _limits.MAX_LOCAL_WORKERS:
        raise ValueError(f"--workers {args.workers}: must be a whole number of processes in 1 .. "
                         f"{_limits.MAX_LOCAL_WORKERS} (each is a Python process of a few hundred MB)")
    if args.out:
        from .._io import check_regular_or_absent

        check_regular_or_absent(args.out, "--out")
    if args.dcs is not None and not 2 <= args.dcs <= _limits.MAX_DCS:
        raise ValueError(f"--dcs {args.dcs}: must be a whole number of data centres in 2 .. "
                         f"{_limits.MAX_DCS} (the engine simulates every WAN link: K(K-1) on a mesh)")


def _wan(args) -> int:
    import events
    import numpy as np

    from .. import _limits
    from ..queueing import accuracy, shared_wan_step_once_s as shared_wan_step_s
    from ..step import step_s

    from .._wan_runs import LOADS, STEPS, with_cluster
    from ..report.sections.shared_wan import ci95, cluster_text

    args.load = list(LOADS) if args.load is None else args.load
    args.steps = STEPS if args.steps is None else args.steps
    args.budget_s = _limits.MAX_ENGINE_S if args.budget_s is None else args.budget_s
    check_wan_args(args)
    sc = with_cluster(load_scenario(args), args.dcs, args.topology)
    variants = variant_ids("--variant", args.variant, sc) if args.variant else None
    seeds = list(range(args.seed, args.seed + args.seeds))
    ds = events.sweep(sc, load=list(args.load), seed=seeds, steps=args.steps,
                      bandwidth=args.bandwidth, variant=variants,
                      scheduler=args.scheduler, n_workers=args.workers, max_sim_s=args.max_sim_s,
                      budget_s=args.budget_s)
    if args.bandwidth is not None:
        sc = sc.replace(wan_Bps=args.bandwidth * 1e9)
    import jax.numpy as jnp

    from .. import links as _links
    from ..report.sections.shared_wan import LINKS_DIFFER

    left_out = _links.differ(sc)  # the approximation takes identical links
    approx = (None if left_out else
              np.asarray(shared_wan_step_s(sc, jnp.asarray([float(x) for x in args.load]))))
    closed_ms = np.asarray(step_s(sc)) * 1e3  # the load-0 step; the engine equals it there
    stated = None if left_out else accuracy(sc)
    ms = ds.step_s * 1e3
    each = "the slowest; each link at its own" if left_out else "each"
    print(f"shared WAN on {cluster_text(sc)} of {describe(float(sc.wan_Bps), 'byte_rate', SIG)} "
          f"{each}, "
          f"{args.steps} steps a run, seeds {seeds[0]}..{seeds[-1]}; step in ms (mean over the "
          f"run; p95 at seed {args.seed}); growth = mean / the load-0 step (the closed form, "
          "which the engine equals at load 0); "
          + (LINKS_DIFFER if left_out else "approx. = queueing approximation (stated "
             f"accuracy {stated['accuracy']:.0%} {stated['basis']})"))
    print(f"{'variant':<20} {'load':>5} {'step':>10} {'p95':>10} {'mean':>10} {'95% CI':>21} "
          f"{'growth':>7}" + ("" if approx is None else f" {'approx.':>10}"))
    for vid in np.atleast_1d(ds.variant.values):
        at = sc.ids.index(vid)
        for j, x in enumerate(args.load):
            s = ms.sel(load=float(x))
            s = s.sel(variant=vid) if "variant" in s.dims else s
            lo, hi = ci95(s.values)
            m = float(s.mean())
            p95 = ds.step_p95_s.sel(load=float(x), seed=args.seed)
            p95 = p95.sel(variant=vid) if "variant" in p95.dims else p95
            ci = "n/a (1 seed)" if math.isnan(lo) else f"[{_ms(lo)}, {_ms(hi)}]"
            print(f"{vid:<20} {sig(x):>5} {_ms(s.sel(seed=args.seed)):>10} {_ms(p95 * 1e3):>10} "
                  f"{_ms(m):>10} {ci:>21} {m / closed_ms[at]:>7.2f} "
                  + ("" if approx is None else f"{_ms(approx[j, at] * 1e3):>10}"))
    if args.out:
        from .._io import atomic_write_bytes

        atomic_write_bytes(args.out, ds.to_netcdf())
        print(f"wrote {args.out}")
    return 0


def register_cli(sub) -> None:
    from .. import _limits

    p = sub.add_parser("wan", help="step times on a WAN shared with other jobs (event engine)",
                       description="Run the shared-WAN event engine for every variant at each "
                                   "load and print step times beside the queueing approximation.")
    p.add_argument("--load", type=float, nargs="+", metavar="X",
                   help="other jobs' share of each WAN link, in [0, 1) (default: the report's, "
                        "0 0.5 0.9)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--seeds", type=int, default=1, help="number of seeds from --seed (default 1)")
    p.add_argument("--steps", type=int, help="steps a run (default: the report's, 400)")
    p.add_argument("--bandwidth", type=float, metavar="GBps",
                   help="WAN bandwidth per directed link, GB/s (default: the scenario's)")
    p.add_argument("--variant", nargs="+", metavar="V",
                   help="variants by id or label, e.g. adamw E \"E'\" (default: all)")
    p.add_argument("--dcs", type=int, metavar="K",
                   help="data centres K, >= 2 (default: the scenario's)")
    p.add_argument("--topology", choices=TOPOLOGIES,
                   help="WAN between the DCs: ring (K directed links) or mesh (K(K-1)) "
                        "(default: the scenario's)")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="dask scheduler address, e.g. tcp://host:8786 (default: a LocalCluster; "
                        "'inline' runs in this process)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    p.add_argument("--max-sim-s", type=float, default=3600.0, dest="max_sim_s",
                   help="bound on each run's simulated time, s (default 3600)")
    p.add_argument("--budget-s", type=float, default=None, dest="budget_s", metavar="SECONDS",
                   help="refuse, before any run, a sweep estimated to take longer than this on "
                        f"its workers, s (default {sig(_limits.MAX_ENGINE_S)})")
    p.add_argument("--out", metavar="FILE.nc", help="also write the runs as netCDF")
    scenario_arg(p)
    p.set_defaults(func=_wan)
