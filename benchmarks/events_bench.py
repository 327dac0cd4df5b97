"""Throughput of the shared-WAN event engine, beside bare SimPy loops with the same traffic.

Figures (each the median, min and max of several runs, timed with ``time.perf_counter``):

- ``events_per_s``: link arrivals (other jobs' transfers and the sync's messages) simulated per
  wall second by the engine: AdamW at load 0.9 on the reference scenario.
- ``bare_simpy_events_per_s``: the same traffic (same Poisson streams, the same non-WAN time,
  the sync's messages one after another on each direction) written as the textbook SimPy model:
  a ``simpy.Resource`` per link and a process per transfer, with no statistics or trace.
  ``ratio_bare_simpy`` = engine / this.
- ``bare_lean_events_per_s``: the same traffic on a Lindley-recursion link with one SimPy event
  per arrival and no statistics or trace (how the engine ran before it applied other jobs'
  transfers without events): ``ratio_bare_lean`` is what skipping those events gains, net of the
  engine's bookkeeping.
- ``adamw_400_load09_s``: wall time of one 400-step AdamW run at load 0.9 (12.5 GB/s).
- ``mesh8``: the same three figures and ratios on 8 DCs joined as a mesh (56 directed links, each
  with its own background; 40 steps, so the warm-up is a large share), AdamW at load 0.9.
- ``stragglers``: the engine with workers that straggle (4 DCs of 64 workers, H = 10, exponential
  tail share 0.1, load 0.5; every worker's step factor drawn, one process per DC) beside the
  same run with nothing straggling: ``steps_per_s`` and ``plain_steps_per_s`` (inner steps per
  wall second), ``ratio_plain`` = with / without, the link arrivals per second of each, and
  ``draws_per_s`` (worker step factors alone, 4.2e6 exponential draws maximised per step of
  64: what :data:`events.stragglers.DRAWS_PER_S` stands for).
- ``sweep_cluster_s`` / ``sweep_inline_s``: one sweep (every variant, loads 0.5 and 0.9, 4 seeds,
  200 steps) on an already started ``LocalCluster`` of 2 single-threaded worker processes
  against the same sweep in this process; ``cluster_speedup`` = inline / cluster, and
  ``cluster_start_s`` the cluster's start-up, timed separately. Fewer repeats (3) for these;
  ``quick`` uses worker threads (a smoke test of the path only).

Run as a script for a table; ``run(quick=True)`` is a smoke-sized version (seconds).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time

import numpy as np
import simpy

import bandjax
import events
from events.engine import simulate, warmup_s


def _stats(samples: list[float]) -> dict:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
            "runs": len(samples)}


def _repeat(fn, n: int) -> list:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        value = fn()
        out.append((time.perf_counter() - t, value))
    return out


def bare_resource(plan, load: float, seed: int, steps: int) -> int:
    """Textbook SimPy: a Resource per link, a process per transfer. Returns link arrivals."""
    env = simpy.Environment()
    links = [simpy.Resource(env, capacity=1) for _ in range(plan.links)]
    s_bg = plan.background_B / plan.wan_Bps
    count = [0]

    def transfer(link, service):
        count[0] += 1
        with link.request() as req:
            yield req
            yield env.timeout(service)

    def background(link, rng):
        while True:
            for gap in (rng.standard_exponential(4096) * s_bg / load).tolist():
                yield env.timeout(gap)
                env.process(transfer(link, s_bg))

    def send(link):
        n = math.ceil(plan.wan_B / plan.message_B)
        for i in range(n):
            size = plan.message_B if i < n - 1 else plan.wan_B - (n - 1) * plan.message_B
            yield env.process(transfer(link, size / plan.wan_Bps))

    non_wan = sum(max(p.duration_s for p in phase) for phase in plan.sync_phases)

    def job():
        yield env.timeout(warmup_s(plan, load))
        for _ in range(steps):
            yield env.timeout(plan.compute_s + non_wan)
            yield env.all_of([env.process(send(link)) for link in links])

    for i, link in enumerate(links):
        env.process(background(link, np.random.default_rng([seed, i])))
    env.run(until=env.process(job()))
    return count[0]


def bare_lean(plan, load: float, seed: int, steps: int) -> int:
    """The same traffic on a Lindley-recursion link (the engine's mechanism), nothing else."""
    env = simpy.Environment()
    free = [0.0] * plan.links
    count = [0]
    s_bg = plan.background_B / plan.wan_Bps

    def background(i, rng):
        timeout = env.timeout
        while True:
            for gap in (rng.standard_exponential(4096) * s_bg / load).tolist():
                yield timeout(gap)
                now = env.now
                free[i] = (free[i] if free[i] > now else now) + s_bg
                count[0] += 1

    def send(i):
        n = math.ceil(plan.wan_B / plan.message_B)
        for k in range(n):
            size = plan.message_B if k < n - 1 else plan.wan_B - (n - 1) * plan.message_B
            now = env.now
            free[i] = (free[i] if free[i] > now else now) + size / plan.wan_Bps
            count[0] += 1
            yield env.timeout(free[i] - now)

    non_wan = sum(max(p.duration_s for p in phase) for phase in plan.sync_phases)

    def job():
        yield env.timeout(warmup_s(plan, load))
        for _ in range(steps):
            yield env.timeout(plan.compute_s + non_wan)
            yield env.all_of([env.process(send(i)) for i in range(plan.links)])

    for i in range(plan.links):
        env.process(background(i, np.random.default_rng([seed, i])))
    env.run(until=env.process(job()))
    return count[0]


def _throughput(plan, load: float, steps: int, repeats: int) -> dict:
    """The engine's link arrivals per second beside the two bare loops, same traffic, same seed."""
    eng = _repeat(lambda: simulate(plan, load, 0, steps, trace_steps=0).messages, repeats)
    res = _repeat(lambda: bare_resource(plan, load, 0, steps), repeats)
    lean = _repeat(lambda: bare_lean(plan, load, 0, steps), repeats)
    eng_rate = [n / t for t, n in eng]
    res_rate = [n / t for t, n in res]
    lean_rate = [n / t for t, n in lean]
    return {
        "links": plan.links,
        "steps": steps,
        "messages_per_run": eng[0][1],
        "bare_messages_per_run": res[0][1],
        "events_per_s": _stats(eng_rate),
        "bare_simpy_events_per_s": _stats(res_rate),
        "bare_lean_events_per_s": _stats(lean_rate),
        "ratio_bare_simpy": statistics.median(eng_rate) / statistics.median(res_rate),
        "ratio_bare_lean": statistics.median(eng_rate) / statistics.median(lean_rate),
        "run_s": _stats([t for t, _ in eng]),
    }


def _draws(workers: int = 64, steps: int = 1 << 16) -> int:
    """Worker step factors alone (exponential, one DC of ``workers``): the draws made."""
    from events.stragglers import StepFactors

    f = StepFactors((workers,), "exponential", 0.1, 0)
    f.take(0, steps)
    return f.draws


def _stragglers(quick: bool) -> dict:
    """The engine with workers that straggle (docs/model.md section 16: per-DC processes, every
    worker's step factor drawn) beside the same run with nothing straggling (the plain rounds),
    same scenario, load and seed: inner steps and link arrivals per wall second, and worker
    draws per second."""
    sc = bandjax.reference().replace(dcs=4.0, workers_per_dc=64.0, sync_every_H=10.0)
    steps, repeats = (100, 3) if quick else (1000, 5)
    on = events.build(sc, "adamw", straggler="exponential", straggler_s=0.1)
    off = events.build(sc, "adamw")
    ran = {k: _repeat(lambda p=p: simulate(p, 0.5, 0, steps, trace_steps=0), repeats)
           for k, p in (("on", on), ("off", off))}
    steps_s = {k: [steps / t for t, _ in r] for k, r in ran.items()}
    events_s = {k: [run.messages / t for t, run in r] for k, r in ran.items()}
    return {
        "scenario": "reference, 4 DCs x 64 workers, H = 10, AdamW, 12.5 GB/s, load 0.5; "
                    "exponential tail share 0.1 against none",
        "steps": steps,
        "steps_per_s": _stats(steps_s["on"]),
        "plain_steps_per_s": _stats(steps_s["off"]),
        "ratio_plain": statistics.median(steps_s["on"]) / statistics.median(steps_s["off"]),
        "events_per_s": _stats(events_s["on"]),
        "plain_events_per_s": _stats(events_s["off"]),
        "draws_per_s": _stats([n / t for t, n in _repeat(_draws, repeats)]),
    }


def run(quick: bool = False) -> dict:
    """Every figure of the module docstring, JSON-ready."""
    sc = bandjax.reference()
    load = 0.9
    steps = 40 if quick else 400
    repeats = 3 if quick else 5
    ref = _throughput(events.build(sc, "adamw"), load, steps, repeats)
    out = {
        "quick": quick,
        "scenario": "reference, AdamW, 12.5 GB/s, load 0.9",
        "steps": steps,
        "messages_per_run": ref["messages_per_run"],
        "bare_messages_per_run": ref["bare_messages_per_run"],
        "events_per_s": ref["events_per_s"],
        "bare_simpy_events_per_s": ref["bare_simpy_events_per_s"],
        "bare_lean_events_per_s": ref["bare_lean_events_per_s"],
        "ratio_bare_simpy": ref["ratio_bare_simpy"],
        "ratio_bare_lean": ref["ratio_bare_lean"],
        f"adamw_{steps}_load09_s": ref["run_s"],
    }
    # 8 DCs on a mesh: 56 directed links, each with its own background (docs/model.md section 13)
    mesh8 = bandjax.reference().replace(dcs=8.0, topology=1.0)
    out["mesh8"] = {"scenario": "8 DCs, mesh (56 links), AdamW, 12.5 GB/s per link, load 0.9",
                    **_throughput(events.build(mesh8, "adamw"), load, 5 if quick else 40,
                                  1 if quick else 3)}

    out["stragglers"] = _stragglers(quick)

    grid = dict(load=[0.5, 0.9], seed=list(range(2 if quick else 4)), steps=20 if quick else 200,
                progress=False)
    cluster_repeats = 1 if quick else 3
    from distributed import Client, LocalCluster

    t = time.perf_counter()
    # quick: worker threads start at once (a smoke test of the path, no speed-up to expect)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=not quick,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        start = time.perf_counter() - t
        client.submit(sum, [1]).result()  # workers up
        on_cluster = [t for t, _ in _repeat(lambda: events.sweep(sc, scheduler=client, **grid),
                                            cluster_repeats)]
    inline = [t for t, _ in _repeat(lambda: events.sweep(sc, scheduler="inline", **grid),
                                    cluster_repeats)]
    out.update({
        "cluster": "LocalCluster, 2 workers, " + ("threads (quick)" if quick else "processes"),
        "sweep_runs": 2 * len(grid["seed"]) * len(bandjax.variants.IDS),
        "sweep_steps": grid["steps"],
        "cluster_start_s": start,
        "sweep_cluster_s": _stats(on_cluster),
        "sweep_inline_s": _stats(inline),
        "cluster_speedup": statistics.median(inline) / statistics.median(on_cluster),
    })
    return out


# The steady-state reference the queueing approximation is measured against (accuracy()):
# runs are warmed up with the job's own traffic, sized in relaxation times of the busiest link.
DISCARD_RELAXATIONS = 5.0  # steps dropped from each run's start, in relaxation times
KEEP_RELAXATIONS = 15.0  # steps kept, in relaxation times (within MIN_KEPT .. MAX_KEPT steps)
MIN_KEPT, MAX_KEPT = 100, 5000


def relaxation_s(plan, utilisation: float) -> float:
    """Relaxation time of a link at ``utilisation`` (the busy share a run reaches, the job's own
    messages included), s: that of an M/D/1 queue, s_bg / (1 - sqrt(u))^2, the time scale on which
    its backlog forgets where it started; the engine's warm-up is ten of them at the background's
    load alone (:func:`events.engine.warmup_s`), so it is read from there."""
    return warmup_s(plan, min(float(utilisation), 1 - 1e-9)) / 10


def _size(plan, run) -> tuple[int, int, float]:
    """(steps dropped, steps kept, relaxation time s) for runs like ``run``: the relaxation time at
    the busiest link's utilisation, in steps of ``run``'s mean, a whole number of rounds."""
    H = plan.sync_every
    tau = relaxation_s(plan, max(run.utilisation))
    per_step = float(np.mean(run.step_s))
    drop = math.ceil(DISCARD_RELAXATIONS * tau / per_step / H) * H
    keep = min(max(math.ceil(KEEP_RELAXATIONS * tau / per_step), MIN_KEPT), MAX_KEPT)
    return drop, math.ceil(keep / H) * H, tau


def steady_state_mean(plan, load: float, seeds: int = 4, max_seeds: int = 32,
                      rel_se: float = 0.009) -> dict:
    """The engine's steady-state mean step of ``plan`` at ``load``, with its standard error.

    The engine warms the links up with the other jobs' traffic only; the job's own messages then
    take the busiest link to a utilisation u above the load (about 0.985 at load 0.95 on two
    DCs), whose relaxation time tau = s_bg / (1 - sqrt(u))^2 (:func:`relaxation_s`) can be longer
    than a short run. So each run drops its first :data:`DISCARD_RELAXATIONS` tau of steps and
    keeps :data:`KEEP_RELAXATIONS` tau (:data:`MIN_KEPT` to :data:`MAX_KEPT` steps), sized from a
    pilot run and re-sized (at most twice) until the dropped steps span the relaxation time at
    the utilisation that seed 0's sized run reaches. Seeds 0, 1, ... are independent runs: the
    mean is over seeds (``seeds``, more in fours up to ``max_seeds`` until the standard error is
    under ``rel_se`` of the mean). ``drift_rel`` (with ``drift_se_rel``) is the second half of
    the kept steps against the first, averaged over seeds: near 0 within its error when the
    dropped steps were enough.

    Returns a JSON-ready dict: mean_s, se_s, seeds, drop_steps, keep_steps, relaxation_s,
    relaxations_kept, utilisation_max, drift_rel, drift_se_rel, run_s (wall time).
    """
    t0 = time.perf_counter()
    drop, keep, tau = _size(plan, simulate(plan, load, 10**6, MIN_KEPT, trace_steps=0))
    for _ in range(3):
        first = simulate(plan, load, 0, drop + keep, trace_steps=0)
        d2, k2, tau2 = _size(plan, first)
        if d2 <= drop:
            break
        drop, keep, tau = d2, max(keep, k2), tau2
    runs = [first]
    while True:
        runs += [simulate(plan, load, s, drop + keep, trace_steps=0)
                 for s in range(len(runs), seeds if len(runs) < seeds else len(runs) + 4)]
        means = np.array([r.step_s[drop:].mean() for r in runs])
        se = float(np.std(means, ddof=1) / math.sqrt(len(means)))
        if se <= rel_se * means.mean() or len(runs) >= max_seeds:
            break
    half = keep // 2
    drift = np.array([r.step_s[drop + half:].mean() / r.step_s[drop:drop + half].mean() - 1
                      for r in runs])
    kept_s = float(means.mean()) * keep
    return {"mean_s": float(means.mean()), "se_s": se, "seeds": len(runs),
            "drop_steps": drop, "keep_steps": keep, "relaxation_s": tau,
            "relaxations_kept": kept_s / tau,
            "utilisation_max": float(max(max(r.utilisation) for r in runs)),
            "drift_rel": float(drift.mean()),
            "drift_se_rel": float(np.std(drift, ddof=1) / math.sqrt(len(drift))),
            "run_s": time.perf_counter() - t0}


def _cluster(K: int, topology: str, gbps: float):
    return bandjax.reference().replace(
        dcs=float(K), topology=float(bandjax.variants.TOPOLOGIES.index(topology)),
        wan_Bps=gbps * 1e9)


def _cell(args) -> dict:
    K, top, vid, load, gbps, kw = args
    plan = events.build(_cluster(K, top, gbps), vid)
    return {"dcs": K, "topology": top, "variant": vid, "load": load, "links": plan.links,
            **steady_state_mean(plan, load, **kw)}


def engine_table(dcs=(2, 3, 4, 8), topologies=("ring", "mesh"), loads=(0.5, 0.7, 0.9, 0.95),
                 gbps: float = 12.5, processes: int = 1, out: str | None = None,
                 first=None, **kw) -> list:
    """:func:`steady_state_mean` for every variant of the reference scenario at ``gbps`` GB/s
    per link, each K and topology (at K = 2 only the ring: both are the same two links) and
    load. Cells run on ``processes`` worker processes: the variants ``first`` before the others
    (one with many messages a sync, one with a single message: they bracket the rest), the
    highest loads first (where the approximation is least sure), the cheapest first within a
    load (fewest links); each
    finished cell prints a progress line to stderr and, with ``out``, rewrites that JSON file
    (a list of cells, in the order they finished); cells already in ``out`` are kept, not rerun."""
    if first is None:  # the variants with the most and the fewest messages a sync
        sc0 = bandjax.reference()
        per = {v: events.build(sc0, v).wan_B / float(sc0.wan_message_B) for v in sc0.ids}
        first = (max(per, key=per.get), min(per, key=per.get))
    cells = [(K, top, vid, load, gbps, kw) for K in dcs
             for top in (topologies if K > 2 else topologies[:1])
             for vid in bandjax.variants.IDS for load in loads]
    cells.sort(key=lambda c: (c[2] not in first, -c[3],
                              events.build(_cluster(c[0], c[1], gbps), c[2]).links))
    done, have, t0 = [], set(), time.perf_counter()
    if out and os.path.exists(out):
        with open(out) as f:
            done = json.load(f)
        have = {(c["dcs"], c["topology"], c["variant"], c["load"]) for c in done}
        cells = [c for c in cells if c[:4] not in have]

    def record(cell):
        done.append(cell)
        if out:
            with open(out, "w") as f:
                json.dump(done, f, indent=1)
        print(f"[{len(done)}/{len(cells) + len(have)} {time.perf_counter() - t0:.0f} s] K={cell['dcs']} "
              f"{cell['topology']} {cell['variant']} load {cell['load']}: "
              f"{cell['mean_s'] * 1e3:.4g} ms +/- {cell['se_s'] / cell['mean_s']:.2%} "
              f"({cell['seeds']} x {cell['drop_steps']}+{cell['keep_steps']} steps, "
              f"drift {cell['drift_rel']:+.2%} +/- {cell['drift_se_rel']:.2%}, "
              f"{cell['run_s']:.0f} s)", file=sys.stderr, flush=True)

    if processes > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            for cell in pool.imap_unordered(_cell, cells):
                record(cell)
    else:
        for c in cells:
            record(_cell(c))
    return done


def accuracy(engine: list | str, split: float = 0.9) -> dict:
    """The queueing approximation (:func:`bandjax.queueing.shared_wan_step_s`) against the
    engine's steady-state means of :func:`engine_table` (its list, or the JSON file it wrote).
    Returns per "K=.. topology" the errors (approx. / engine - 1, with the engine's standard
    error relative to its mean, ``se_rel``), and the worst at loads up to ``split``
    (``worst_to``) and above it (``worst_above``)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from bandjax.queueing import shared_wan_step_s

    if isinstance(engine, str):
        with open(engine) as f:
            engine = json.load(f)
    out = {}
    for key in sorted({(c["dcs"], c["topology"]) for c in engine}):
        cells = [c for c in engine if (c["dcs"], c["topology"]) == key]
        sc = _cluster(*key, gbps=12.5)
        loads = sorted({c["load"] for c in cells})
        approx = np.asarray(shared_wan_step_s(sc, np.asarray(loads, dtype=float)))
        errors = []
        for c in sorted(cells, key=lambda c: (c["load"], c["variant"])):
            a = approx[loads.index(c["load"]), sc.ids.index(c["variant"])]
            errors.append({"variant": c["variant"], "load": c["load"],
                           "rel_err": float(a / c["mean_s"] - 1),
                           "se_rel": c["se_s"] / c["mean_s"]})

        def worst(rows):
            return max(rows, key=lambda r: abs(r["rel_err"]), default=None)

        out[f"K={key[0]} {key[1]}"] = {
            "worst_to": worst([e for e in errors if e["load"] <= split]),
            "worst_above": worst([e for e in errors if e["load"] > split]),
            "errors": errors}
    return out


def _table(r: dict, indent: str = "") -> str:
    rows = []
    for k, v in r.items():
        if isinstance(v, dict) and "median" not in v:
            rows.append(f"{indent}{k}:")
            rows.append(_table(v, indent + "  "))
        elif isinstance(v, dict):
            rows.append(f"{indent}{k:<28} median {v['median']:>12.4g}  min {v['min']:>12.4g}  "
                        f"max {v['max']:>12.4g}  ({v['runs']} runs)")
        else:
            rows.append(f"{indent}{k:<28} {v}")
    return "\n".join(rows)


if __name__ == "__main__":
    if "--engine-table" in sys.argv:  # --engine-table OUT.json [PROCESSES]
        at = sys.argv.index("--engine-table")
        engine_table(out=sys.argv[at + 1],
                     processes=int(sys.argv[at + 2]) if len(sys.argv) > at + 2 else 1)
        sys.exit(0)
    if "--accuracy" in sys.argv:  # --accuracy ENGINE.json (written by --engine-table)
        print(json.dumps(accuracy(sys.argv[sys.argv.index("--accuracy") + 1]), indent=1))
        sys.exit(0)
    result = run(quick="--quick" in sys.argv)
    print(_table(result))
    if "--json" in sys.argv:
        print(json.dumps(result, indent=1))
