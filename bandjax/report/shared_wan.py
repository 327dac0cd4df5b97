"""Report section and ``bandjax wan``: the step on a WAN shared with other jobs (docs/model.md sections
11 and 13).

The event engine (:mod:`events`) runs every variant at loads 0, 0.5 and 0.9 for several seeds, on
the scenario's K DCs and WAN topology (every directed link in use shared with other jobs);
the section gives the step at seed 0, the mean over seeds with a 95% interval (Student t), how
much the step grows against load 0, the queueing approximation (:mod:`bandjax.queueing`) beside
it, a trace of the first steps for the explorer page, and load-0 engine runs over a range of
bandwidths that must sit on the closed-form curves.
"""

from __future__ import annotations

import math

import numpy as np

from .. import variants as _v
from ..scenario import Scenario
from .sections import Results, SharedWan

KEY = SharedWan.KEY
LOADS = (0.0, 0.5, 0.9)
SEEDS = 8  # seeds 0 .. SEEDS-1
STEPS = 400  # steps per run
LOAD0_GBPS = (0.5, 2.0, 12.5, 100.0, 500.0)
TRACE_LOAD = 0.9
BASIS = "hypothesis"
SCHEDULER = None  # None: a LocalCluster for the report's runs; "inline": this process


def _options(ctx: dict) -> dict:
    """Run sizes, overridable through ``ctx["shared_wan"]`` (loads, seeds, steps, scheduler, and
    ``dcs`` / ``topology`` to run the section on another cluster than the scenario's)."""
    opts = {"loads": LOADS, "seeds": SEEDS, "steps": STEPS, "scheduler": SCHEDULER, "n_workers": 2,
            "progress": True, "dcs": None, "topology": None}
    opts.update(ctx.get(KEY, {}))
    return opts


def with_cluster(sc: Scenario, dcs=None, topology=None) -> Scenario:
    """``sc`` on ``dcs`` data centres joined as ``topology`` ("ring" or "mesh"); None keeps the
    scenario's."""
    changes = {}
    if dcs is not None:
        changes["dcs"] = dcs
    if topology is not None:
        if topology not in _v.TOPOLOGIES:
            raise ValueError(f"topology = {topology!r}: must be one of "
                             f"{', '.join(map(repr, _v.TOPOLOGIES))}")
        changes["topology"] = float(_v.TOPOLOGIES.index(topology))
    return sc.replace(**changes) if changes else sc


def cluster_text(sc: Scenario) -> str:
    """"K DCs, ring: L directed WAN links" for a header."""
    K = int(float(sc.dcs))
    topology = _v.TOPOLOGIES[int(float(sc.topology))]
    links = K * (K - 1) if topology == "mesh" else K
    return f"{K} DCs, {topology}: {links} directed WAN links"


def ci95(samples) -> tuple[float, float]:
    """Student-t 95% interval of the mean: mean -/+ t(0.975, n-1) s / sqrt(n); NaN for one
    sample, which has no interval."""
    from scipy.stats import t

    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return math.nan, math.nan
    half = float(t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return float(x.mean() - half), float(x.mean() + half)


def build(scenario: Scenario, ctx: dict) -> SharedWan:
    """Engine runs and the approximation for ``scenario``; see the module docstring."""
    import events
    import jax.numpy as jnp
    from events.engine import TRACE_STEPS
    from events.plan import sync_every

    from ..queueing import ACCURACY_BY_CLUSTER, accuracy, shared_wan_step_s
    from ..step import step_s

    o = _options(ctx)
    scenario = with_cluster(scenario, o["dcs"], o["topology"])
    loads = [float(x) for x in o["loads"]]
    seeds = list(range(int(o["seeds"])))
    H = sync_every(scenario)
    with events.client(o["scheduler"], o["n_workers"]) as where:
        runs = events.sweep(scenario, load=loads, seed=seeds, steps=int(o["steps"]),
                            scheduler=where, progress=o["progress"])
        load0 = events.sweep(scenario, load=0.0, seed=0, bandwidth=list(LOAD0_GBPS),
                             steps=2 * H, scheduler=where, progress=o["progress"])
    ids = list(runs.variant.values)
    step_ms = runs.step_s * 1e3
    approx = np.asarray(shared_wan_step_s(scenario, jnp.asarray(loads))) * 1e3
    mean = step_ms.mean("seed")
    closed_ms = np.asarray(step_s(scenario)) * 1e3  # the load-0 step: the engine equals it there
    stated = accuracy(scenario)
    out = {"seed": 0, "loads": loads, "steps": int(o["steps"]), "seeds": len(seeds),
           "bandwidth_GBps": float(scenario.wan_Bps) / 1e9,
           "dcs": int(float(scenario.dcs)),
           "topology": _v.TOPOLOGIES[int(float(scenario.topology))],
           "links": int(float(np.max(traffic_links(scenario)))),
           "step_ms": {}, "mean_step_ms": {}, "ci95_ms": {}, "growth": {}, "approx_step_ms": {},
           "p95_ms": {}, "wan_utilisation": {}, "wan_utilisation_max": {},
           "approx_accuracy": stated["accuracy"], "approx_accuracy_basis": stated["basis"],
           "approx_accuracy_by_cluster": [{"dcs": k, "topology": t, "accuracy": v}
                                          for (k, t), v in ACCURACY_BY_CLUSTER.items()]}
    worst = 0.0
    for i, vid in enumerate(ids):
        at = scenario.ids.index(vid)
        s = step_ms.sel(variant=vid)
        m = mean.sel(variant=vid).values
        out["step_ms"][vid] = [float(x) for x in s.sel(seed=0).values]
        out["mean_step_ms"][vid] = [float(x) for x in m]
        out["ci95_ms"][vid] = [list(ci95(s.sel(load=x).values)) for x in loads]
        out["growth"][vid] = [float(x / closed_ms[at]) for x in m]
        out["p95_ms"][vid] = [float(x) for x in (runs.step_p95_s.sel(variant=vid, seed=0) * 1e3).values]
        out["wan_utilisation"][vid] = [float(x) for x in runs.wan_utilisation.sel(variant=vid, seed=0).values]
        out["wan_utilisation_max"][vid] = [
            float(x) for x in runs.wan_utilisation_max.sel(variant=vid, seed=0).values]
        a = approx[:, at]
        out["approx_step_ms"][vid] = [float(x) for x in a]
        worst = max(worst, float(np.max(np.abs(a / m - 1))))
    out["approx_max_rel_err"] = worst

    # load 0 over bandwidths: the engine against the closed form, and dots for the page
    points, err = [], 0.0
    for g in LOAD0_GBPS:
        sc_g = scenario.replace(wan_Bps=g * 1e9)
        closed = np.asarray(step_s(sc_g))
        for vid in ids:
            eng = float(load0.step_s.sel(bandwidth=g, variant=vid))
            err = max(err, abs(eng / closed[scenario.ids.index(vid)] - 1))
            steps = scenario.steps.lookup(vid, float(scenario.enob), BASIS, scenario.variants)
            ttt = steps * eng if math.isfinite(steps) else None
            points.append({"variant": vid, "GBps": g, "step_ms": eng * 1e3,
                           "time_to_target_s": ttt, "basis": BASIS})
    out["load0_points"] = points
    out["load0_max_rel_err"] = err

    # the trace follows the registry's first variant (the study's dense AdamW baseline)
    trace_variant = scenario.ids[0]
    run = events.run(scenario, trace_variant, TRACE_LOAD, seed=0, steps=TRACE_STEPS)
    out["trace"] = {"variant": trace_variant, "load": TRACE_LOAD,
                    "bandwidth_GBps": float(scenario.wan_Bps) / 1e9, **run.trace}
    return SharedWan(**out)


def traffic_links(sc: Scenario):
    """Directed WAN links in use: K on a ring, K(K-1) on a mesh."""
    K, mesh = float(sc.dcs), float(sc.topology) == 1
    return np.asarray(K * (K - 1) if mesh else K)


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.shared_wan
    if r is None:
        return ""
    loads = r.loads
    head = " | ".join(f"load {x:g}: seed 0 / mean [95% CI] / growth / approx." for x in loads)
    K, topology = r.dcs, r.topology
    lines = [
        "## Shared WAN (event engine)",
        "",
        f"{K} DCs joined as a {topology}: each of the {r.links} directed WAN links in "
        f"use ({r.bandwidth_GBps:g} GB/s each) is a first-come-first-served link "
        "shared with other jobs' Poisson 1 MB transfers at load x capacity; the sync's bytes on "
        "each link go as 1 MB messages one after another, and the step ends when every link is "
        "done. Step times in ms: one run of "
        f"{r.steps} steps at seed {r.seed}, the mean over {r.seeds} seeds with its 95% "
        "interval (Student t), its growth against the load-0 step (the closed form, which the "
        "engine equals at load 0), and the queueing approximation "
        f"(stated accuracy {r.approx_accuracy:.0%} {r.approx_accuracy_basis or ''}; "
        f"largest deviation here {r.approx_max_rel_err:.1%}). Budget [free] unless the "
        "scenario sets one; d calibrated to the study's step times.",
        "",
        f"| variant | {head} |",
        "|---|" + "---|" * len(loads),
    ]
    # the scenario's own variants (a user's included), as the report's setup lists them
    shorts = results.names()
    for vid, s in r.step_ms.items():
        cells = []
        for j in range(len(loads)):
            lo, hi = r.ci95_ms[vid][j]
            interval = "[n/a: one seed]" if lo is None else f"[{lo:.3f}, {hi:.3f}]"
            cells.append(f"{s[j]:.3f} / {r.mean_step_ms[vid][j]:.3f} {interval} / "
                         f"x{r.growth[vid][j]:.2f} / {r.approx_step_ms[vid][j]:.3f}")
        lines.append(f"| {shorts.get(vid, vid)} | " + " | ".join(cells) + " |")
    measured = r.approx_accuracy_by_cluster
    if measured and all(m["accuracy"] is not None for m in measured):
        lines += ["", "The approximation's worst error against the engine's mean (every variant, "
                  "12.5 GB/s per link, loads 0.5 to 0.95): "
                  + ", ".join(f"K = {m['dcs']} {m['topology'] if m['dcs'] > 2 else ''}"
                              .rstrip() + f" {m['accuracy']:.0%}" for m in measured) + "."]
    lines += [
        "",
        f"At load 0 the engine matches the closed-form step to {r.load0_max_rel_err:.1e} "
        f"(largest relative difference over every variant at "
        f"{', '.join(f'{p:g}' for p in sorted({p['GBps'] for p in r.load0_points}))} GB/s).",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ CLI


def check_wan_args(args) -> None:
    """Refuse ``bandjax wan`` arguments that are not allowed, before any work; each message names
    the option, the value as typed and what is allowed (the bounds are in :mod:`bandjax._limits`).
    The event count of the whole sweep is bounded later, once the scenario is known
    (:func:`events.engine.check_bounds`)."""
    from .. import _limits

    for x in args.load:
        if not 0 <= x < 1:
            raise ValueError(f"--load {x:g}: must be in [0, 1) (other jobs' share of each WAN "
                             "direction)")
    twice = sorted({x for x in args.load if list(args.load).count(x) > 1})
    if twice:
        raise ValueError(f"--load {' '.join(f'{x:g}' for x in args.load)}: "
                         f"{', '.join(f'{x:g}' for x in twice)} given twice; give each load once")
    if not 1 <= args.steps <= _limits.MAX_STEPS:
        raise ValueError(f"--steps {args.steps}: must be a whole number of steps in 1 .. "
                         f"{_limits.MAX_STEPS}")
    if not 1 <= args.seeds <= _limits.MAX_SEEDS:
        raise ValueError(f"--seeds {args.seeds}: must be a whole number of seeds in 1 .. "
                         f"{_limits.MAX_SEEDS}")
    if args.seed < 0:
        raise ValueError(f"--seed {args.seed}: must be a whole number >= 0")
    if args.bandwidth is not None and not (math.isfinite(args.bandwidth) and args.bandwidth > 0):
        raise ValueError(f"--bandwidth {args.bandwidth:g} GB/s: must be a finite number of GB/s "
                         "> 0")
    if not (math.isfinite(args.max_sim_s) and args.max_sim_s > 0):
        raise ValueError(f"--max-sim-s {args.max_sim_s:g} s: must be a finite number of seconds > 0")
    if not 1 <= args.workers <= 1024:
        raise ValueError(f"--workers {args.workers}: must be a whole number of processes in 1 .. 1024")
    if args.out:
        from .._io import check_regular_or_absent

        check_regular_or_absent(args.out, "--out")
    if args.dcs is not None and args.dcs < 2:
        raise ValueError(f"--dcs {args.dcs}: must be a whole number of data centres >= 2")


def _wan(args) -> int:
    import events

    from ..cliargs import load_scenario, variant_ids
    from ..queueing import accuracy, shared_wan_step_s
    from ..step import step_s

    check_wan_args(args)
    sc = with_cluster(load_scenario(args), args.dcs, args.topology)
    variants = variant_ids("--variant", args.variant, sc) if args.variant else None
    seeds = list(range(args.seed, args.seed + args.seeds))
    ds = events.sweep(sc, load=list(args.load), seed=seeds, steps=args.steps,
                      bandwidth=args.bandwidth, variant=variants,
                      scheduler=args.scheduler, n_workers=args.workers, max_sim_s=args.max_sim_s)
    if args.bandwidth is not None:
        sc = sc.replace(wan_Bps=args.bandwidth * 1e9)
    import jax.numpy as jnp

    approx = np.asarray(shared_wan_step_s(sc, jnp.asarray([float(x) for x in args.load])))
    closed_ms = np.asarray(step_s(sc)) * 1e3  # the load-0 step; the engine equals it there
    stated = accuracy(sc)
    ms = ds.step_s * 1e3
    print(f"shared WAN on {cluster_text(sc)} of {float(sc.wan_Bps) / 1e9:g} GB/s each, "
          f"{args.steps} steps a run, seeds {seeds[0]}..{seeds[-1]}; step in ms (mean over the "
          f"run; p95 at seed {args.seed}); growth = mean / the load-0 step (the closed form, "
          "which the engine equals at load 0); approx. = queueing approximation (stated "
          f"accuracy {stated['accuracy']:.0%} {stated['basis']})")
    print(f"{'variant':<20} {'load':>5} {'step':>10} {'p95':>10} {'mean':>10} {'95% CI':>21} "
          f"{'growth':>7} {'approx.':>10}")
    for vid in np.atleast_1d(ds.variant.values):
        at = sc.ids.index(vid)
        for j, x in enumerate(args.load):
            s = ms.sel(load=float(x))
            s = s.sel(variant=vid) if "variant" in s.dims else s
            lo, hi = ci95(s.values)
            m = float(s.mean())
            p95 = ds.step_p95_s.sel(load=float(x), seed=args.seed)
            p95 = p95.sel(variant=vid) if "variant" in p95.dims else p95
            print(f"{vid:<20} {x:>5g} {float(s.sel(seed=args.seed)):>10.3f} "
                  f"{float(p95) * 1e3:>10.3f} "
                  f"{m:>10.3f} {'n/a (1 seed)' if math.isnan(lo) else f'[{lo:.3f}, {hi:.3f}]':>21} "
                  f"{m / closed_ms[at]:>7.2f} "
                  f"{approx[j, at] * 1e3:>10.3f}")
    if args.out:
        from .._io import atomic_write_bytes

        atomic_write_bytes(args.out, ds.to_netcdf())
        print(f"wrote {args.out}")
    return 0


def register_cli(sub) -> None:
    from ..cliargs import scenario_arg

    p = sub.add_parser("wan", help="step times on a WAN shared with other jobs (event engine)",
                       description="Run the shared-WAN event engine for every variant at each "
                                   "load and print step times beside the queueing approximation.")
    p.add_argument("--load", type=float, nargs="+", default=list(LOADS), metavar="X",
                   help="other jobs' share of each WAN link, in [0, 1) (default: 0 0.5 0.9)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--seeds", type=int, default=1, help="number of seeds from --seed (default 1)")
    p.add_argument("--steps", type=int, default=STEPS, help=f"steps a run (default {STEPS})")
    p.add_argument("--bandwidth", type=float, metavar="GBps",
                   help="WAN bandwidth per directed link, GB/s (default: the scenario's)")
    p.add_argument("--variant", nargs="+", metavar="V",
                   help="variants by id or label, e.g. adamw E \"E'\" (default: all)")
    p.add_argument("--dcs", type=int, metavar="K",
                   help="data centres K, >= 2 (default: the scenario's)")
    p.add_argument("--topology", choices=_v.TOPOLOGIES,
                   help="WAN between the DCs: ring (K directed links) or mesh (K(K-1)) "
                        "(default: the scenario's)")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="dask scheduler address, e.g. tcp://host:8786 (default: a LocalCluster; "
                        "'inline' runs in this process)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    p.add_argument("--max-sim-s", type=float, default=3600.0, dest="max_sim_s",
                   help="bound on each run's simulated time, s (default 3600)")
    p.add_argument("--out", metavar="FILE.nc", help="also write the runs as netCDF")
    scenario_arg(p)
    p.set_defaults(func=_wan)
