"""``bandjax breakeven``: where two variants break even over bandwidth, budget or ENOB
(:mod:`bandjax.breakeven`), with elasticities and the smallest change that makes A win.

Only argparse at import time; every argument is checked, against the scenario, before any search.
"""

from __future__ import annotations

import math

from ._setup import sig
from .args import load_scenario, scenario_arg, variant_ids
from ..scenario import BASES

OVERS = ("bandwidth", "budget", "enob")


def _check(args, sc) -> tuple[str, str, tuple[float, float] | tuple[None, None]]:
    """(a, b, (lo, hi) in SI units or None) of the arguments, or a ``ValueError`` naming the
    option, the value as typed and what is allowed."""
    from .. import breakeven as be

    (a,), (b,) = variant_ids("A", [args.a], sc), variant_ids("B", [args.b], sc)
    if a == b:
        raise ValueError(f"A = B = {a!r}: a break-even needs two different variants")
    lo = hi = None
    if args.range:
        typed = {"budget": "GFLOP/s"}.get(args.over, "GB/s")
        lo_, hi_ = args.range
        if not (math.isfinite(lo_) and math.isfinite(hi_) and 0 < lo_ < hi_):
            raise ValueError(f"--range {sig(lo_)} {sig(hi_)} {typed}: must satisfy 0 < lo < hi, both "
                             "finite")
        lo, hi = lo_ * 1e9, hi_ * 1e9  # GB/s and GFLOP/s alike
    if args.sensitivity and args.over == "enob":
        raise ValueError("--sensitivity with --over enob: ENOB is discrete (measured steps) and "
                         "has no elasticity; use --over bandwidth or budget")
    if args.achieve is not None:
        try:
            be._check_parameter(args.achieve, sc)
        except ValueError as e:
            raise ValueError(f"--achieve {args.achieve}: {e}") from None
    return a, b, (lo, hi)


def _breakeven_cli(args) -> int:
    sc = load_scenario(args)
    a, b, (lo, hi) = _check(args, sc)
    from . import _breakeven_out as rb

    from ..variants import basis_dependent

    bases = [args.basis] if args.basis else (
        list(BASES) if set(basis_dependent(sc.variants)) & {a, b} else ["hypothesis"])
    show = {"bandwidth": rb.print_bandwidth, "budget": rb.print_budget,
            "enob": rb.print_enob}[args.over]
    from ._setup import basis_words, print_setup

    role = {"bandwidth": "searched for the break-even",
            "budget": "held at the scenario's while the budget is searched",
            "enob": "each of the grid below"}[args.over]
    print_setup(sc, basis=basis_words(sc, bases, [a, b]), bandwidth=role)
    for basis in bases:
        show(sc, a, b, basis, lo, hi)
        if args.sensitivity:
            rb.print_elasticities(sc, a, b, args.over, basis, lo, hi)
        if args.achieve:
            rb.print_achieve(sc, a, b, args.achieve, basis)
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser(
        "breakeven", help="where two variants break even (bandwidth, budget or ENOB)",
        description="Print where variants A and B reach the target loss in the same time, with "
                    "the faster one on each side. Variants by id or label (adamw, topk, C, C', "
                    "E, E').")
    p.add_argument("a", metavar="A", help="variant id or label")
    p.add_argument("b", metavar="B", help="variant id or label")
    p.add_argument("--basis", choices=BASES,
                   help="E' steps basis (default: both when E' is in the pair)")
    p.add_argument("--over", choices=OVERS, default="bandwidth",
                   help="search over WAN bandwidth (default), module budget, or ENOB")
    p.add_argument("--range", nargs=2, type=float, metavar=("LO", "HI"),
                   help="searched range: GB/s for bandwidth and enob, GFLOP/s for budget "
                        "(default 0.1 1000 GB/s; 1 10000 GFLOP/s)")
    p.add_argument("--sensitivity", action="store_true",
                   help="also print the elasticities of each break-even (bandwidth or budget)")
    p.add_argument("--achieve", metavar="PARAM",
                   help="also print the smallest change of PARAM (e.g. optics_Sps, budget_FLOPs, "
                        "qsfp_port_Bps, wan_Bps, steps_a) that makes A beat B")
    scenario_arg(p)
    p.set_defaults(func=_breakeven_cli)
