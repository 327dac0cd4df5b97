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


def accuracy(dcs=(2, 3, 4, 8), topologies=("ring", "mesh"), loads=(0.5, 0.9, 0.95),
             seeds: int = 8, steps: int = 100, gbps: float = 12.5) -> dict:
    """The queueing approximation (:func:`bandjax.queueing.shared_wan_step_s`) against the
    engine's mean step over ``seeds`` seeds of ``steps`` steps, every variant of the reference
    scenario at ``gbps`` GB/s per link, for each K and topology (at K = 2 both topologies are the
    same two links, so only the ring is run). Returns per (K, topology) the worst relative error
    (approx. / engine - 1) with its variant and load, every error, and the standard error of the
    engine's mean relative to it (the error's noise floor)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from bandjax.queueing import shared_wan_step_s

    out = {}
    for K in dcs:
        for top in topologies if K > 2 else topologies[:1]:
            sc = bandjax.reference().replace(
                dcs=float(K), topology=float(bandjax.variants.TOPOLOGIES.index(top)),
                wan_Bps=gbps * 1e9)
            approx = np.asarray(shared_wan_step_s(sc, np.asarray(loads, dtype=float)))
            errors, worst = [], None
            for j, load in enumerate(loads):
                for i, vid in enumerate(sc.ids):
                    means = [simulate(events.build(sc, vid), load, s, steps, trace_steps=0).mean_s
                             for s in range(seeds)]
                    m = float(np.mean(means))
                    row = {"variant": vid, "load": load, "rel_err": float(approx[j, i] / m - 1),
                           "sem_rel": float(np.std(means, ddof=1) / math.sqrt(seeds) / m)}
                    errors.append(row)
                    if worst is None or abs(row["rel_err"]) > abs(worst["rel_err"]):
                        worst = row
            out[f"K={K} {top}"] = {"worst": worst, "errors": errors}
            print(f"K={K} {top}: worst {worst}", file=sys.stderr, flush=True)
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
    if "--accuracy" in sys.argv:
        print(json.dumps(accuracy(), indent=1))
        sys.exit(0)
    result = run(quick="--quick" in sys.argv)
    print(_table(result))
    if "--json" in sys.argv:
        print(json.dumps(result, indent=1))
