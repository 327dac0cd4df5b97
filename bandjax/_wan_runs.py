"""The report's shared-WAN runs of the event engine (:mod:`bandjax.report.sections.shared_wan`):
sized to a budget before any starts (:func:`size_runs`) and started in worker processes
(:func:`start_runs`).

Apart from the section, and with no jax, altair or xarray to import, so that ``bandjax report``
starts the runs (:func:`start_early`) before it loads the rest of the report: on a machine of few
cores the workers then take the core that loading leaves idle, about a second of it.
"""

from __future__ import annotations

import math
import os

from . import links as _links
from . import variants as _v
from .scenario import Scenario
from .units import plain as g6
from .units import significant

KEY = "shared_wan"

LOADS = (0.0, 0.5, 0.9)


SEEDS = 8  # seeds 0 .. SEEDS-1


STEPS = 400  # steps per run


LOAD0_GBPS = (0.5, 2.0, 12.5, 100.0, 500.0)


SCHEDULER = None  # None: a LocalCluster for the report's runs; "inline": this process


BUDGET_S = 60.0
"""Default seconds of engine work the section may plan for (``bandjax report --budget-s``), on
each of its workers at once (one inline). The reference scenario's runs take a few of them."""


MESSAGES_PER_S = 2.5e5
"""The sync's messages the engine simulates a second on one worker (each is a SimPy event; about
3e5 measured on the reference machine, rounded down)."""


BACKGROUND_PER_S = 1.2e6
"""Other jobs' transfers the engine simulates a second on one worker (Lindley's recursion over
batches; 1.4e6 to 3e6 measured, rounded down)."""


RUN_OVERHEAD_S = 0.01
"""Seconds a run costs beyond its link arrivals (building it, its summary)."""


MAX_MESSAGES = 1000
"""The most messages one sync puts on a link; a larger sync goes as larger messages (the
approximation's change with the message size is the stated cost)."""


MIN_STEPS = 100
"""Steps a run keeps before its seeds are lowered below the wanted count."""


def options(ctx: dict) -> dict:
    """Run sizes, overridable through ``ctx["shared_wan"]`` (loads, seeds, steps, scheduler,
    ``budget_s``, and ``dcs`` / ``topology`` to run the section on another cluster than the
    scenario's)."""
    opts = {"loads": LOADS, "seeds": SEEDS, "steps": STEPS, "scheduler": SCHEDULER, "n_workers": 2,
            "progress": True, "dcs": None, "topology": None, "budget_s": BUDGET_S}
    opts.update(ctx.get(KEY, {}))
    return opts


def _cost_s(est: dict) -> float:
    """Estimated seconds of one worker for a run of :func:`events.engine.estimate_events`."""
    return est["messages"] / MESSAGES_PER_S + est["background"] / BACKGROUND_PER_S + RUN_OVERHEAD_S


def _mb(x: float) -> str:
    return f"{significant(x / 1e6, 4)} MB"


def size_runs(scenario: Scenario, ids, loads, seeds: int, steps: int, budget_s: float,
              workers: int) -> dict:
    """The engine runs that fit ``budget_s`` seconds on ``workers`` workers, chosen before any
    starts: {"message_B", "steps", "seeds", "loads" (the engine's), "approx_loads" (the
    approximation's alone), "max_sim_s", "estimated_s", "events", "notes" (sentences: what was
    changed and why)}.

    The sync's messages grow to at most :data:`MAX_MESSAGES` a link a sync. If the wanted runs
    (``seeds`` x ``steps`` at every load and variant) cost more than the budget, steps go down to
    :data:`MIN_STEPS` (whole rounds of H), then seeds to 2, then steps to one round; a load that
    does not fit even then is dropped, the most costly first. The sim-time bound of each run is
    four times its estimate (the estimate stretches a step by 1 / (1 - load), more than the
    queue does). Each link's background is the load x that link's own bandwidth. Where the links
    differ (:func:`bandjax.links.differ`) there is no approximation to fall back on: a dropped
    load is then shown by neither, and ``approx_loads`` is empty.
    """
    from events.engine import MAX_SIM_S, estimate_events
    from events.plan import build as plan_of, sync_every

    from . import _limits

    notes = []
    plans = {v: plan_of(scenario, v) for v in ids}
    H = max(sync_every(scenario, v) for v in ids)
    m0 = float(scenario.wan_message_B)
    biggest = max(p.wan_B for p in plans.values())
    m = max(m0, biggest / MAX_MESSAGES)
    if m > m0:
        plans = {v: p.__class__(**{**p.__dict__, "message_B": m}) for v, p in plans.items()}

    def run_cost(load, n):  # (seconds, link arrivals, simulated s) of one run of each variant
        ests = [estimate_events(p, load, n, math.inf) for p in plans.values()]
        return (sum(_cost_s(e) for e in ests), sum(e["total"] for e in ests),
                max(e["sim_s"] for e in ests))

    def total(loads_, seeds_, steps_):
        c = [run_cost(x, steps_) for x in loads_]
        return seeds_ * sum(x[0] for x in c), seeds_ * sum(x[1] for x in c)

    capacity = float(budget_s) * max(int(workers), 1)

    def fits(loads_, seeds_, steps_):
        t, e = total(loads_, seeds_, steps_)
        return t <= capacity and e <= _limits.MAX_EVENTS

    def whole(n):  # whole rounds of H where a round fits in n
        return n // H * H if n >= H else max(n, 1)

    asked_steps = int(steps)
    # whole rounds of H, at least one: fewer steps than H would never sync
    want_seeds, want_steps = int(seeds), max(H, asked_steps // H * H)
    least_seeds, least_steps = min(2, want_seeds), H
    kept = [float(x) for x in loads]
    dropped = []
    while kept and not fits(kept, least_seeds, least_steps):
        worst = max(kept, key=lambda x: run_cost(x, least_steps)[0])
        kept.remove(worst)
        dropped.append(worst)
    chosen_seeds, chosen_steps = want_seeds, want_steps
    if kept and not fits(kept, want_seeds, want_steps):
        def most_steps(n_seeds, floor):  # the most steps (whole rounds) that fit, or None
            lo, hi = floor, want_steps
            if not fits(kept, n_seeds, lo):
                return None
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if fits(kept, n_seeds, mid) else (lo, mid)
            return whole(hi if fits(kept, n_seeds, hi) else lo)

        floor = min(max(MIN_STEPS, least_steps), want_steps)
        chosen_steps = most_steps(want_seeds, floor)
        if chosen_steps is None:
            chosen_seeds = want_seeds
            while chosen_seeds > least_seeds and chosen_steps is None:
                chosen_seeds = max(least_seeds, chosen_seeds // 2)
                chosen_steps = most_steps(chosen_seeds, floor)
            if chosen_steps is None:
                chosen_seeds = least_seeds
                chosen_steps = most_steps(least_seeds, least_steps) or least_steps
    if not kept:
        chosen_seeds, chosen_steps = 0, 0
    t, e = total(kept, chosen_seeds, chosen_steps) if kept else (0.0, 0.0)
    sim = max([run_cost(x, chosen_steps)[2] for x in kept], default=0.0)
    if m > m0:
        notes.append(f"The sync's WAN messages ran at {_mb(m)} instead of the scenario's "
                     f"{_mb(m0)}, so that a sync is at most {MAX_MESSAGES} messages a link.")
    if want_steps != asked_steps:
        notes.append(f"Runs of whole rounds of H = {H} steps: {want_steps} steps wanted instead "
                     f"of {asked_steps}.")
    if kept and (chosen_steps, chosen_seeds) != (want_steps, want_seeds):
        notes.append(f"Runs of {chosen_steps} steps x {chosen_seeds} seeds instead of "
                     f"{want_steps} x {want_seeds}, to fit the budget of {g6(float(budget_s))} s "
                     f"on {max(int(workers), 1)} worker(s) (about {e:.3g} link arrivals).")
    differ = _links.differ(scenario)
    if dropped:
        at = ("each link's own bandwidth" if differ
              else f"{g6(float(scenario.wan_Bps) / 1e9)} GB/s a link")
        notes.append(f"Load {', '.join(g6(x) for x in sorted(dropped))}: the engine would "
                     f"need more than the budget of {g6(float(budget_s))} s even at "
                     f"{least_steps} steps x {least_seeds} seeds (other jobs' transfers of "
                     f"{_mb(float(scenario.background_B))} at load x {at}), "
                     + ("and the queueing approximation assumes identical links, so this load "
                        "is not shown." if differ else
                        "so the queueing approximation stands alone there."))
    return {"message_B": m, "scenario_message_B": m0, "steps": chosen_steps,
            "seeds": chosen_seeds, "steps_wanted": asked_steps, "seeds_wanted": want_seeds,
            "loads": kept, "approx_loads": [] if differ else sorted(dropped),
            "budget_s": float(budget_s),
            "workers": max(int(workers), 1), "estimated_s": t / max(int(workers), 1),
            "events": e, "max_sim_s": max(MAX_SIM_S, 4 * sim), "notes": notes}


def with_cluster(sc: Scenario, dcs=None, topology=None) -> Scenario:
    """``sc`` on ``dcs`` data centres joined as ``topology`` ("ring" or "mesh"); None keeps the
    scenario's. With per-link values K comes from the links table: ``dcs`` must then be that K."""
    changes = {}
    if dcs is not None and sc.links is not None:
        if int(dcs) != sc.links.K:
            raise ValueError(f"dcs = {dcs!r}: this scenario has per-link values for "
                             f"{sc.links.K} DCs ({', '.join(sc.links.names)}), so K comes from its "
                             "links table; leave dcs out or give that table another size")
    elif dcs is not None:
        changes["dcs"] = dcs
    if topology is not None:
        if topology not in _v.TOPOLOGIES:
            raise ValueError(f"topology = {topology!r}: must be one of "
                             f"{', '.join(map(repr, _v.TOPOLOGIES))}")
        changes["topology"] = float(_v.TOPOLOGIES.index(topology))
    return sc.replace(**changes) if changes else sc


WORKER_NICE = 10
"""The niceness of the section's engine workers in a process pool (:func:`events.runner.pool`)."""

POOL_MAX_S = 60.0
"""Planned seconds of engine work a worker (:func:`size_runs`) up to which the section's runs go to
a plain process pool (:func:`events.runner.pool`, started in a fraction of a second) rather than a
dask ``LocalCluster`` (seconds to start); with the default scheduler."""

STARTED = "shared_wan_started"  # ctx key of the runs started ahead (:func:`start_early`)


def start_runs(scenario: Scenario, ctx: dict) -> dict:
    """The section's runs sized (:func:`size_runs`) and submitted to worker processes, returning
    at once: what the runs need and what they tell, for the section to collect (``"given"`` is
    the scenario asked for, ``"o"`` the options they were sized with). A bound the estimate
    missed is kept as ``"error"``, for the section to tell."""
    import contextlib

    import events
    from events.engine import estimate_events
    from events.plan import build as plan_of, sync_every
    from events.runner import run_cache_dir, submit

    o = options(ctx)
    given, scenario = scenario, with_cluster(scenario, o["dcs"], o["topology"])
    loads = [float(x) for x in o["loads"]]
    H = sync_every(scenario)
    inline = o["scheduler"] == "inline"
    workers = 1 if inline else int(o["n_workers"])
    ids = list(scenario.ids)
    sized = size_runs(scenario, ids, loads, int(o["seeds"]), int(o["steps"]),
                      float(o["budget_s"]), workers)
    at_m = scenario.replace(wan_message_B=sized["message_B"])  # the scenario the engine runs
    run_loads, seeds = sized["loads"], list(range(sized["seeds"]))
    # load 0 over bandwidths: a few messages a link (the step does not depend on their size there)
    load0_sc = scenario.replace(wan_message_B=max(
        sized["message_B"], max(plan_of(scenario, v).wan_B for v in ids) / 16))
    load0_sim = max(estimate_events(plan_of(load0_sc.replace(wan_Bps=g * 1e9), v), 0.0, 2 * H,
                                    math.inf)["sim_s"] for g in LOAD0_GBPS for v in ids)
    scheduler = o["scheduler"]
    if scheduler is None and sized["estimated_s"] <= POOL_MAX_S:
        scheduler = "processes"
    st = {"given": given, "o": o, "scenario": scenario, "loads": loads, "ids": ids, "sized": sized,
          "at_m": at_m, "run_loads": run_loads, "seeds": seeds,
          "stack": contextlib.ExitStack(), "runs": None, "load0": None, "error": None}
    try:
        # the engine's workers below this process's priority: on a machine of few cores the
        # sections that come first keep their share, and the runs take what is left
        where = st["stack"].enter_context(events.client(scheduler, o["n_workers"], nice=WORKER_NICE))
        kept = run_cache_dir()  # runs done before (same engine, same task) are read back
        if run_loads:
            st["runs"] = submit(where, at_m, load=run_loads, seed=seeds, steps=sized["steps"],
                                max_sim_s=sized["max_sim_s"], budget_s=float(o["budget_s"]),
                                cache_dir=kept)
        st["load0"] = submit(where, load0_sc, load=0.0, seed=0, bandwidth=list(LOAD0_GBPS),
                             steps=2 * H, max_sim_s=max(events.MAX_SIM_S, 4 * load0_sim),
                             budget_s=float(o["budget_s"]), cache_dir=kept)
    except (ValueError, RuntimeError) as e:  # a bound the estimate missed: told by build
        st["stack"].close()
        st["error"] = e
    except BaseException:
        st["stack"].close()
        raise
    return st


TEST_SIZE_ENV = "BANDJAX_REPORT_TEST_SIZE"
"""Environment variable for tests that run `bandjax report` as a subprocess: "small" runs the
shared-WAN section at 2 seeds x 20 steps in the process (as tests/conftest.py does in process)."""


def small_for_tests(ctx: dict) -> None:
    """The runs' options of :data:`TEST_SIZE_ENV`, set into ``ctx`` where it says "small"."""
    if os.environ.get(TEST_SIZE_ENV) == "small":
        ctx[KEY] = {**ctx.get(KEY, {}), "seeds": 2, "steps": 20, "scheduler": "inline",
                    "progress": False}


def start_early(scenario: Scenario, ctx: dict) -> None:
    """Start the section's runs for ``scenario`` and ``ctx`` now, into ``ctx``, where they run in
    worker processes (not inline); the section takes them when the report reaches it with the same
    scenario and options (:func:`adopt`), else they are stopped and run anew. Nothing is started
    where sizing fails: the section meets the failure again and says why."""
    small_for_tests(ctx)
    if options(ctx)["scheduler"] == "inline":
        return
    try:
        ctx[STARTED] = start_runs(scenario, ctx)
    except (OSError, MemoryError):
        raise
    except Exception:  # noqa: BLE001 - told by the section, in its place
        pass


def adopt(scenario: Scenario, ctx: dict) -> dict | None:
    """The runs started for ``scenario`` with ``ctx``'s options (:func:`start_early`), else None
    (and any started for another scenario or other options are stopped)."""
    st = ctx.get(STARTED)
    if st is not None and st["given"] is scenario and st["o"] == options(ctx):
        return st
    stop(ctx)
    return None


def stop(ctx: dict) -> None:
    """Stop the runs started into ``ctx`` and their workers, if any (twice is harmless)."""
    st = ctx.pop(STARTED, None)
    if st is not None:
        st["stack"].close()
