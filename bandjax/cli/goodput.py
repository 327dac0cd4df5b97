"""``bandjax goodput``: what failures cost each way of syncing (docs/model.md section 17): the
cluster's MTBF, each variant's recovery rule, checkpoint interval, ETTR, compute utilisation and
goodput at the scenario's bandwidth, and the WAN bandwidth a goodput target needs.

Only argparse at import time: jax and the closed forms load inside the command.
"""

from __future__ import annotations

import math

from ..scenario import MAGNITUDES
from ..units import describe, duration, significant
from ._setup import check_bandwidth, sig
from .args import check_once, load_scenario, scenario_arg, with_methods
from .need import status_text

DEFAULT_TARGETS = (0.9,)
DEFAULT_RANGE_GBps = (0.1, 1000.0)


def _time(seconds: float) -> str:
    """A duration in the unit a person reads it in (:func:`bandjax.units.duration`)."""
    if not math.isfinite(seconds):
        return "never" if seconds > 0 else "-"
    return duration(seconds)


def check_goodput_args(args) -> None:
    """Refuse arguments that are not allowed, before any work; each message names the option,
    the value as typed and what is allowed."""
    for g in args.target:
        if not (math.isfinite(g) and 0 < g < 1):
            raise ValueError(f"--target {sig(g)}: must be a goodput target in (0, 1) (compute "
                             "utilisation x ETTR, e.g. 0.9)")
    check_once("--target", args.target, "target")
    lo, hi = args.range
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise ValueError(f"--range {sig(lo)} {sig(hi)} GB/s: must be finite, positive and ordered, "
                         "0 < LO < HI")
    check_bandwidth(args.bandwidth)
    for option, value in (("--restart", args.restart), ("--checkpoint-write", args.checkpoint_write),
                          ("--checkpoint-every", args.checkpoint_every)):
        if value is not None and math.isfinite(value) and abs(value) > MAGNITUDES[1]:
            raise ValueError(f"{option} {sig(value)} s: outside the magnitudes bandjax computes "
                             f"with, at most {MAGNITUDES[1]:g} s")


def _changes(args) -> dict:
    """The scenario fields the options set (checked by the scenario, in its units)."""
    from ..scenario import failure_rate

    out = {}
    if args.rate is not None:
        try:
            value = float(args.rate)
        except ValueError:
            value = args.rate  # a preset's name
        out["failure_rate_per_hour"] = failure_rate(value)
    for option, field in (("restart", "restart_s"), ("checkpoint_write", "checkpoint_write_s"),
                          ("checkpoint_every", "checkpoint_every_s")):
        if getattr(args, option) is not None:
            out[field] = getattr(args, option)
    if args.bandwidth is not None:
        out["wan_Bps"] = args.bandwidth * 1e9
    return out


def _goodput(args) -> int:
    args.target = list(DEFAULT_TARGETS) if args.target is None else args.target
    args.range = list(DEFAULT_RANGE_GBps) if args.range is None else args.range
    check_goodput_args(args)
    sc = load_scenario(args)
    sc = sc.replace(**_changes(args))

    import numpy as np

    from ..failures import BEYOND_FIRST_ORDER, FIRST_ORDER_LIMIT
    from ..grid import sweep
    from ..need import cap_names, required_bandwidth, status_names

    sc, ids = with_methods(sc, args.variant, args.methods)
    ds = sweep(sc, variant=ids, quantities=("compute_utilisation", "ettr", "goodput", "mtbf_s",
                                            "checkpoint_interval_s", "failure_status"))
    lo, hi = args.range
    need = required_bandwidth(sc, args.target, variant=ids, range_GBps=(lo, hi), target="goodput")
    need = need.transpose("utilisation", "variant")
    GBps = np.asarray(need.required_bandwidth_GBps)
    status, cap = np.asarray(status_names(need.status)), np.asarray(cap_names(need.cap))
    K, n = int(float(sc.dcs)), int(float(sc.workers_per_dc))
    N = K * n
    rate = float(sc.failure_rate_per_hour)
    print(f"Goodput (compute utilisation x ETTR, the share of wall time on work that is kept) on "
          f"{K} DCs of {n} worker{'s' if n != 1 else ''} ({N:,} in all), each failing at "
          f"{significant(rate, 4)} a worker-hour, WAN {describe(float(sc.wan_Bps), 'byte_rate')} "
          "per directed link "
          "(docs/model.md section 17)")
    print(f"cluster MTBF: {_time(float(ds['mtbf_s']))}; restart u0 = {_time(float(sc.restart_s))}, "
          f"checkpoint write w = {_time(float(sc.checkpoint_write_s))}, checkpoint interval "
          + ("Young's sqrt(2 w / lambda)" if sc.checkpoint_every_s is None
             else _time(float(sc.checkpoint_every_s))))
    targets = " ".join(f"{sig(100 * g)}%".rjust(10) for g in args.target)
    print(f"{'variant':<22} {'H':>5} {'recovery':<9} {'checkpoint':>11} {'ETTR':>7} {'CU':>7} "
          f"{'goodput':>8}  needs GB/s for goodput {targets}")
    H = float(sc.sync_every_H)
    beyond = []
    for k, vid in enumerate(ids):
        v = sc.variant(vid)
        h = v.sync_every if v.sync_every is not None else H
        at = {q: float(ds[q].sel(variant=vid)) for q in ("compute_utilisation", "ettr", "goodput",
                                                          "checkpoint_interval_s")}
        rule = "replica" if h > 1 else "restart"
        ckpt = "-" if math.isnan(at["checkpoint_interval_s"]) else _time(at["checkpoint_interval_s"])
        cells = []
        for i in range(len(args.target)):
            g = float(GBps[i, k])
            cells.append(("-" if math.isnan(g) else significant(g, 4)).rjust(10))
        print(f"{vid:<22} {sig(h):>5} {rule:<9} {ckpt:>11} {at['ettr']:>7.4f} "
              f"{at['compute_utilisation']:>7.4f} {at['goodput']:>8.4f}  {'':>22} {' '.join(cells)}")
        if int(ds["failure_status"].sel(variant=vid)) == BEYOND_FIRST_ORDER:
            beyond.append(vid)
        for i, g in enumerate(args.target):
            if status[i, k] != "reached":
                words = ("not reachable at any bandwidth: failures cost more than the target "
                         "leaves" if cap[i, k] == "failures" else status_text(status[i, k], cap[i, k], lo, hi))
                print(f"  {vid} at {sig(100 * g)}% goodput: {words}")
    print("recovery: 'restart' = the whole job stops on any failure and goes back to its last "
          "checkpoint (H = 1); 'replica' = only the failed DC's replica stops, copies the model "
          "from a peer over the WAN and rejoins at the next round (H > 1)")
    print(f"assumed: ETTR to first order in the failure rate; syncing every H steps does not change "
          "steps to target")
    if beyond:
        print(f"beyond first order (a failure-rate product above {sig(FIRST_ORDER_LIMIT)}; the "
              f"numbers are rough): {', '.join(beyond)}")
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser("goodput", help="what failures cost each way of syncing: MTBF, ETTR, "
                                       "goodput and the bandwidth a goodput target needs",
                       description="Print the cluster's MTBF and, for each variant, how it "
                                   "recovers from a failure, its checkpoint interval, ETTR "
                                   "(effective training time ratio), compute utilisation and "
                                   "goodput (CU x ETTR) at the scenario's bandwidth, and the WAN "
                                   "bandwidth per directed link a goodput target needs.")
    p.add_argument("--rate", metavar="R",
                   help="failures a worker an hour, or a published fleet rate: llama3 (Llama 3's "
                        "419 interruptions in 54 days on 16,384 GPUs) or rsc1 (6.50 failures a "
                        "1,000 node-days) (default: the scenario's [failures] rate)")
    p.add_argument("--restart", type=float, metavar="S",
                   help="restart time u0, s (default: the scenario's, 600 s)")
    p.add_argument("--checkpoint-write", type=float, metavar="S", dest="checkpoint_write",
                   help="one blocking checkpoint write w, s (default: the scenario's, 60 s)")
    p.add_argument("--checkpoint-every", type=float, metavar="S", dest="checkpoint_every",
                   help="checkpoint interval, s (default: Young's interval sqrt(2 w / lambda))")
    p.add_argument("--bandwidth", type=float, metavar="GBPS",
                   help="WAN bandwidth per directed link, GB/s (default: the scenario's)")
    p.add_argument("--target", type=float, nargs="+", metavar="G",
                   help="goodput targets in (0, 1) for the needed bandwidth (default: 0.9)")
    p.add_argument("--range", type=float, nargs=2, metavar=("LO", "HI"),
                   help="bandwidth range searched, GB/s per directed link (default 0.1 1000)")
    p.add_argument("--variant", nargs="+", metavar="V",
                   help="variants by id or label, the methods' too (default: the scenario's, and "
                        "the methods with --methods)")
    p.add_argument("--methods", action="store_true",
                   help="add the field's ways of syncing in rounds (bandjax.METHODS)")
    scenario_arg(p)
    p.set_defaults(func=_goodput)
