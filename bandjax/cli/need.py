"""``bandjax need``: the WAN bandwidth each variant needs to keep its GPUs computing a share of
the time (compute utilisation, docs/model.md section 14), with why where none does.

Only argparse at import time: jax and the closed forms load inside the command.
"""

from __future__ import annotations

import math

from ..variants import METHODS
from ..units import describe, significant
from ._setup import SIG, sig
from .args import check_once, load_scenario, methods_arg, scenario_arg, with_methods

DEFAULT_TARGETS = (0.5, 0.8, 0.9, 0.95, 0.99)  # as the report's table
DEFAULT_RANGE_GBps = (0.1, 1000.0)


def check_need_args(args) -> None:
    """Refuse ``bandjax need`` arguments that are not allowed, before any work; each message names
    the option, the value as typed and what is allowed."""
    for u in args.utilisation:
        if not (math.isfinite(u) and 0 < u < 1):
            raise ValueError(f"--utilisation {sig(u)}: must be a compute-utilisation target in (0, 1) "
                             "(GPU compute / step time, e.g. 0.9)")
    check_once("--utilisation", args.utilisation, "target")
    lo, hi = args.range
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise ValueError(f"--range {sig(lo)} {sig(hi)} GB/s: must be finite, positive and ordered, "
                         "0 < LO < HI")


def status_text(status: str, cap: str, lo: float, hi: float) -> str:
    """One needed bandwidth's status in words."""
    if status == "reached":
        return "reached"
    if status == "below_range":
        return f"below the range (met at {sig(lo)} GB/s already)"
    if status == "above_range" or cap == "range":
        return f"above the range (more than {sig(hi)} GB/s)"
    from ..need import CAP_WORDS  # the jitted questions' module: imported once there is an answer

    return f"not reachable at any bandwidth: capped by the {CAP_WORDS.get(cap, cap)}"


def _cell(g: float, status: str, cap: str, hi: float) -> str:
    """One needed bandwidth in the wide table: GB/s, or why there is none in the range."""
    if status == "reached":
        return significant(g, 4)
    if status == "below_range":
        return f"{significant(g, 4)} (below)"
    if status == "above_range" or cap == "range":
        return f"> {sig(hi)}"
    return f"- ({cap})"


def _need(args) -> int:
    args.utilisation = list(DEFAULT_TARGETS) if args.utilisation is None else args.utilisation
    args.range = list(DEFAULT_RANGE_GBps) if args.range is None else args.range
    check_need_args(args)
    sc = load_scenario(args)

    import numpy as np

    from ..grid import sweep
    from ..need import cap_names, required_bandwidth, status_names
    from ._setup import assumption_lines, percent, print_setup, sync_every

    sc, ids = with_methods(sc, args.variant, args.methods)
    lo, hi = args.range
    ds = required_bandwidth(sc, args.utilisation, variant=ids, range_GBps=(lo, hi))
    ds = ds.transpose("utilisation", "variant")
    GBps = np.asarray(ds.required_bandwidth_GBps)  # (target, variant)
    status, cap = np.asarray(status_names(ds.status)), np.asarray(cap_names(ds.cap))
    # the compute utilisation at the scenario's own bandwidth, the same closed forms
    now = np.atleast_1d(np.asarray(
        sweep(sc, variant=ids, quantities=("compute_utilisation",))["compute_utilisation"]))
    print_setup(sc, basis="none used (compute utilisation and the bandwidth it needs do not "
                          "depend on steps to target)",
                bandwidth="solved for here")
    print(f"WAN bandwidth per directed link each variant needs for a compute-utilisation target "
          f"(GPU compute / step), searched in {sig(lo)} to {sig(hi)} GB/s (docs/model.md section 14); "
          f"at the scenario = the compute utilisation at the scenario's own bandwidth, "
          f"{describe(float(sc.wan_Bps), 'byte_rate', SIG)}")
    head = f"{'variant':<22} {'H':>5} {'F':>3} {'tau':>3}"
    rows = [f"{vid:<22} {sig(sync_every(sc, vid)):>5} {sc.variant(vid).fragments:>3d} "
            f"{sc.variant(vid).delay:>3d}" for vid in ids]
    scenario = [percent(float(x)) for x in now]
    if args.wide:
        print("cells: GB/s per directed link; (below): under the range's bottom, met there "
              f"already; > {sig(hi)}: above the range; - (cap): not reachable at any bandwidth, "
              "capped by that term (the long form, without --wide, names it in words)")
        cols = [[f"{sig(100 * u)}%", *(_cell(float(GBps[i, k]), status[i, k], cap[i, k], hi)
                                    for k in range(len(ids)))]
                for i, u in enumerate(args.utilisation)]
        cols.append(["at the scenario", *scenario])
        widths = [max(map(len, col)) for col in cols]
        print(head + "".join(f"  {col[0]:>{w}}" for col, w in zip(cols, widths)))
        for k, row in enumerate(rows):
            print(row + "".join(f"  {col[k + 1]:>{w}}" for col, w in zip(cols, widths)))
    else:
        print(f"{head} {'target':>7} {'GB/s':>10} {'Gbit/s':>10} {'at the scenario':>15}  status")
        for k, (vid, row) in enumerate(zip(ids, rows)):
            for i, u in enumerate(args.utilisation):
                g = float(GBps[i, k])
                num = "-" if math.isnan(g) else significant(g, 4)
                gbit = "-" if math.isnan(g) else significant(8 * g, 4)
                print(f"{row} {f'{sig(100 * u)}%':>7} {num:>10} {gbit:>10} {scenario[k]:>15}  "
                      f"{status_text(status[i, k], cap[i, k], lo, hi)}")
    for line in assumption_lines(sc, ids):  # for the times to target elsewhere
        print(line)
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
    p.add_argument("--wide", action="store_true",
                   help="one row per variant, the targets as columns (default: one row per "
                        "variant and target, the status in words)")
    methods_arg(p)
    scenario_arg(p)
    p.set_defaults(func=_need)
