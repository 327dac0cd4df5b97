"""``bandjax sites``: the sites of a cross-DC job and the workers that straggle (docs/model.md
section 16): each site's compute per step and workers, the share of each variant's step the
GPUs wait (for the slowest site, for the slowest worker), what each site adds (throughput and
compute utilisation with and without it) and, with ``--target``, the straggler tail each variant
tolerates.

Only argparse at import time: jax and the closed forms load inside the command.
"""

from __future__ import annotations

import math

from .._limits import MAX_SITES
from ..scenario import STRAGGLERS
from ..units import describe, duration, significant
from ._setup import check_bandwidth, sig
from .args import check_once, load_scenario, scenario_arg, with_methods


def _time(seconds: float) -> str:
    """A duration of a step, 4 significant figures, in the unit a person reads it in."""
    return duration(seconds) if math.isfinite(seconds) else "-"


def _rate(tokens_per_s: float) -> str:
    return "-" if not math.isfinite(tokens_per_s) else describe(tokens_per_s, "token_rate")


def _pct(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{significant(100 * x, 4)}%"


def check_sites_args(args) -> None:
    """Refuse arguments that are not allowed, before any work; each message names the option,
    the value as typed and what is allowed."""
    for u in args.target or ():
        if not (math.isfinite(u) and 0 < u < 1):
            raise ValueError(f"--target {sig(u)}: must be a compute-utilisation target in (0, 1) "
                             "(GPU compute / step time, e.g. 0.9)")
    check_once("--target", args.target or (), "target")
    if args.tail is not None and not (math.isfinite(args.tail) and args.tail >= 0):
        raise ValueError(f"--tail {sig(args.tail)}: must be a tail >= 0 (an exponential share s in "
                         "[0, 1] or a lognormal sigma)")
    check_bandwidth(args.bandwidth)
    if args.dcs is not None and not 2 <= args.dcs <= MAX_SITES:
        raise ValueError(f"--dcs {args.dcs}: must be a whole number of DCs in 2 .. {MAX_SITES:,}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers {args.workers}: must be a whole number >= 1")


def _changes(args) -> dict:
    """The scenario fields the options set (checked by the scenario)."""
    out = {}
    if args.straggler is not None:
        out["straggler"] = args.straggler
    if args.tail is not None:
        out["straggler_s"] = args.tail
    if args.bandwidth is not None:
        out["wan_Bps"] = args.bandwidth * 1e9
    if args.dcs is not None:
        out["dcs"] = float(args.dcs)
    if args.workers is not None:
        out["workers_per_dc"] = float(args.workers)
    return out


def _from(sc, table) -> str:
    """What a site's compute per step comes from, in words."""
    P = float(sc.active)
    rate = float(sc.gpu_peak_FLOPs) * float(sc.utilisation)
    base = (f"{sig(float(sc.flops_per_param_token))} x {significant(P, 4)} params x "
            f"{significant(float(sc.tokens_per_worker), 4)} tokens / "
            f"({describe(rate, 'flop_rate')})")
    return base + ("" if table.equal else " x the site's compute relative to the scenario's")


def _sites(args) -> int:
    check_sites_args(args)
    sc = load_scenario(args)
    sc = sc.replace(**_changes(args))
    family = STRAGGLERS[int(float(sc.straggler))]
    if args.target and family == "none":
        raise ValueError(f"--target {' '.join(sig(u) for u in args.target)}: the tolerated tail "
                         "needs a straggler family (the tail is an exponential share s or a "
                         "lognormal sigma); give --straggler exponential or lognormal, or a "
                         "scenario with [stragglers] family")

    import numpy as np

    from ..sitevalue import MIN_DCS, site_idle, site_value, sites_differ, sites_of
    from ..tolerance import status_names, tolerated_tail

    table = sites_of(sc)
    sc, ids = with_methods(sc, args.variant, args.methods)
    tail = float(sc.straggler_s)
    N = int(round(float(np.sum(table.workers))))
    straggles = ("nothing straggles" if family == "none" or tail == 0 else
                 f"workers straggle: {family} tail {'s' if family == 'exponential' else 'sigma'} "
                 f"= {significant(tail, 4)}")
    print(f"Sites and stragglers: {table.K} DCs, {N:,} workers in all, WAN "
          f"{describe(float(sc.wan_Bps), 'byte_rate')} per directed link, {straggles} "
          "(docs/model.md section 16)")
    print(f"{'site':<12} {'workers':>8} {'compute/step':>13}  from")
    for name, n, c in zip(table.names, table.workers, table.compute_s):
        print(f"{name:<12} {int(n):>8,} {_time(float(c)):>13}  {_from(sc, table)}")
    if table.equal:
        print("(no sites given: every DC is the same site, the scenario's GPU and workers)")

    idle = site_idle(sc, ids)
    differ = sites_differ(sc)
    heads = ([f"site {name}" for name in table.names] if differ else ["slowest site"])
    print("Share of each variant's step the GPUs wait (from the hot spots): for the slowest "
          "site" + (" (each site's own)" if differ else "") + ", and for the slowest worker")
    print(f"{'variant':<22} {'H':>5} {'step':>11} {'CU':>8} "
          + " ".join(f"{h:>13}" for h in heads) + f" {'slowest worker':>15}")
    H = float(sc.sync_every_H)
    for vid in ids:
        v = sc.variant(vid)
        h = v.sync_every if v.sync_every is not None else H
        at = idle.sel(variant=vid)
        step = float(at.step_s)
        waits = ([float(x) for x in at.waiting_for_site.values] if differ
                 else [float(at.hot_spot_site_wait)])
        print(f"{vid:<22} {sig(h):>5} {_time(step):>11} {_pct(float(at.compute_utilisation)):>8} "
              + " ".join(f"{_pct(w):>13}" for w in waits) + f" {_pct(float(at.hot_spot_straggle)):>15}")

    if table.K <= MIN_DCS:
        print(f"What each site adds: needs {MIN_DCS + 1} DCs or more (without one of "
              f"{table.K} there is no cross-DC job; try --dcs {MIN_DCS + 1})")
    else:
        value = site_value(sc, ids)
        names = [table.names[0]] if table.equal else list(table.names)
        print("What each site adds: throughput and compute utilisation with every site, without "
              + ("any one of them (every site the same), and what one adds" if table.equal
                 else "each one, and what each adds"))
        heads = [("one site" if table.equal else n) for n in names]
        print(f"{'variant':<22} {'with every site':>27} "
              + " ".join(f"{'without ' + h:>27} {h + ' adds':>20}" for h in heads))
        for vid in ids:
            at = value.sel(variant=vid)
            cells = []
            for n in names:
                w = at.sel(site=n)
                cells.append(f"{_rate(float(w.throughput_without_tokens_per_s)):>17} "
                             f"{_pct(float(w.compute_utilisation_without)):>9} "
                             f"{_rate(float(w.throughput_added_tokens_per_s)):>20}")
            print(f"{vid:<22} {_rate(float(at.throughput_tokens_per_s)):>17} "
                  f"{_pct(float(at.compute_utilisation)):>9} " + " ".join(cells))

    if args.target:
        ds = tolerated_tail(sc, args.target, variant=ids).transpose("utilisation", "variant")
        names = np.asarray(status_names(ds.status))
        value = np.asarray(ds.tolerated_tail)
        symbol = "s" if family == "exponential" else "sigma"
        top = ds.attrs["largest_tail"][family]
        print(f"The straggler tail each variant tolerates ({family} {symbol}, searched 0 to "
              f"{sig(top)}), the largest at which compute utilisation stays at the target:")
        print(f"{'variant':<22} " + " ".join(f"{f'{sig(100 * u)}%':>22}" for u in args.target))
        for k, vid in enumerate(ids):
            cells = []
            for i in range(len(args.target)):
                if names[i, k] == "reached":
                    cells.append(f"{symbol} = {significant(value[i, k], 4)}")
                elif names[i, k] == "any":
                    cells.append(f"any ({symbol} {sig(top)} met)")
                else:
                    cells.append("missed with no tail")
            print(f"{vid:<22} " + " ".join(f"{c:>22}" for c in cells))
    print("assumed: steps to target do not change with the tail or with syncing every H steps; "
          "at H > 1 each DC's round of inner steps is taken as a normal")
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser("sites", help="the sites of the job and the workers that straggle: idle "
                                     "shares, what each site adds, the tail a target tolerates",
                       description="Print each site's compute per step and workers, the share of "
                                   "each variant's step the GPUs wait for the slowest site and "
                                   "for the slowest worker, what each site adds (throughput and "
                                   "compute utilisation with and without it), and with --target "
                                   "the largest straggler tail each variant tolerates.")
    p.add_argument("--straggler", choices=STRAGGLERS,
                   help="how a worker's compute time straggles (default: the scenario's "
                        "[stragglers] family)")
    p.add_argument("--tail", type=float, metavar="T",
                   help="the tail: an exponential share s in [0, 1] or a lognormal sigma >= 0 "
                        "(default: the scenario's)")
    p.add_argument("--dcs", type=int, metavar="K", help="DCs, equal sites (default: the scenario's)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="workers per DC, equal sites (default: the scenario's)")
    p.add_argument("--bandwidth", type=float, metavar="GBPS",
                   help="WAN bandwidth per directed link, GB/s (default: the scenario's)")
    p.add_argument("--target", type=float, nargs="+", metavar="U",
                   help="compute-utilisation targets in (0, 1): the tail each variant tolerates")
    p.add_argument("--variant", nargs="+", metavar="V",
                   help="variants by id or label, the methods' too (default: the scenario's, and "
                        "the methods with --methods)")
    p.add_argument("--methods", action="store_true",
                   help="add the field's ways of syncing in rounds (bandjax.METHODS)")
    scenario_arg(p)
    p.set_defaults(func=_sites)
