"""``bandjax need``: the WAN bandwidth each variant needs to keep its GPUs computing a share of
the time (compute utilisation, docs/model.md section 14), with why where none does.

Only argparse at import time: jax and the closed forms load inside the command.
"""

from __future__ import annotations

import math

from ..variants import METHODS
from .args import check_once, load_scenario, scenario_arg

DEFAULT_TARGETS = (0.5, 0.8, 0.9, 0.95, 0.99)  # as the report's table
DEFAULT_RANGE_GBps = (0.1, 1000.0)
# what caps a target no bandwidth reaches (bandjax.need.CAPS), in words
CAP_WORDS = {"latency": "the WAN latency", "d": "the fixed time d", "module": "the module stages",
             "ports": "the ports", "compute": "the compute (no window to hide the sync)"}


def check_need_args(args) -> None:
    """Refuse ``bandjax need`` arguments that are not allowed, before any work; each message names
    the option, the value as typed and what is allowed."""
    for u in args.utilisation:
        if not (math.isfinite(u) and 0 < u < 1):
            raise ValueError(f"--utilisation {u:g}: must be a compute-utilisation target in (0, 1) "
                             "(GPU compute / step time, e.g. 0.9)")
    check_once("--utilisation", args.utilisation, "target")
    lo, hi = args.range
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise ValueError(f"--range {lo:g} {hi:g} GB/s: must be finite, positive and ordered, "
                         "0 < LO < HI")


def status_text(status: str, cap: str, lo: float, hi: float) -> str:
    """One needed bandwidth's status in words."""
    if status == "reached":
        return "reached"
    if status == "below_range":
        return f"below the range (met at {lo:g} GB/s already)"
    if status == "above_range" or cap == "range":
        return f"above the range (more than {hi:g} GB/s)"
    return f"not reachable at any bandwidth: capped by {CAP_WORDS.get(cap, cap)}"


def _need(args) -> int:
    args.utilisation = list(DEFAULT_TARGETS) if args.utilisation is None else args.utilisation
    args.range = list(DEFAULT_RANGE_GBps) if args.range is None else args.range
    check_need_args(args)
    sc = load_scenario(args)

    import numpy as np

    from ..need import cap_names, required_bandwidth, status_names
    from .args import variant_ids

    pack = [m for m in METHODS if m.id not in sc.ids]
    full = sc.with_variants(pack)  # a method of the pack may be named without --methods
    if args.variant:
        ids = variant_ids("--variant", args.variant, full)
    else:
        ids = list(full.ids if args.methods else sc.ids)
    sc = sc.with_variants([m for m in pack if m.id in ids or args.methods])
    lo, hi = args.range
    ds = required_bandwidth(sc, args.utilisation, variant=ids, range_GBps=(lo, hi))
    ds = ds.transpose("utilisation", "variant")
    GBps = np.asarray(ds.required_bandwidth_GBps)  # (target, variant)
    status, cap = np.asarray(status_names(ds.status)), np.asarray(cap_names(ds.cap))
    H = float(sc.sync_every_H)
    n = int(float(sc.dcs))
    print(f"WAN bandwidth per directed link each variant needs for a compute-utilisation target "
          f"(GPU compute / step), on {n} DCs of {int(float(sc.workers_per_dc))} workers, overlap "
          f"f = {float(sc.overlap_fraction):.3g}, searched in {lo:g} to {hi:g} GB/s "
          "(docs/model.md section 14)")
    if ds.attrs.get("links_scaling"):
        print(ds.attrs["links_scaling"])
    print(f"{'variant':<22} {'H':>5} {'F':>3} {'tau':>3} {'target':>7} {'GB/s':>10} "
          f"{'Gbit/s':>10}  status")
    for k, vid in enumerate(ids):
        v = sc.variant(vid)
        h = v.sync_every if v.sync_every is not None else H
        for i, u in enumerate(args.utilisation):
            g = float(GBps[i, k])
            num = "-" if math.isnan(g) else f"{g:.4g}"
            gbit = "-" if math.isnan(g) else f"{8 * g:.4g}"
            target = f"{100 * u:g}%"
            print(f"{vid:<22} {h:>5g} {v.fragments:>3d} {v.delay:>3d} {target:>7} {num:>10} "
                  f"{gbit:>10}  {status_text(status[i, k], cap[i, k], lo, hi)}")
    print("assumed: syncing every H steps does not change steps to target (the needed bandwidth "
          "uses none)")
    delayed = [f"{vid} (tau = {sc.variant(vid).delay})" for vid in ids
               if sc.variant(vid).delay > 0]
    if delayed:
        print(f"assumed: a sync applied tau steps late does not change steps to target: "
              f"{', '.join(delayed)}")
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser("need", help="the WAN bandwidth a compute-utilisation target needs",
                       description="Print the WAN bandwidth per directed link (GB/s and Gbit/s) "
                                   "each variant needs to keep its GPUs computing a share of the "
                                   "time, with its status: reached, not reachable (and which "
                                   "term caps it) or below the range.")
    p.add_argument("--utilisation", type=float, nargs="+", metavar="U",
                   help="compute-utilisation targets in (0, 1) (default: 0.5 0.8 0.9 0.95 0.99)")
    p.add_argument("--variant", nargs="+", metavar="V",
                   help="variants by id or label, the methods' too ("
                        + ", ".join(m.id for m in METHODS) + ") (default: the scenario's, and the "
                        "methods with --methods)")
    p.add_argument("--range", type=float, nargs=2, metavar=("LO", "HI"),
                   help="bandwidth range searched, GB/s per directed link (default 0.1 1000)")
    p.add_argument("--methods", action="store_true",
                   help="add the field's ways of syncing in rounds (bandjax.METHODS: data "
                        "parallel bf16, DiLoCo, Streaming DiLoCo, its FP4 overlapped form, int8 "
                        "DiLoCo)")
    scenario_arg(p)
    p.set_defaults(func=_need)
