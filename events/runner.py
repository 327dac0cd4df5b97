"""Engine runs over a labelled grid, in parallel on dask.distributed.

:func:`sweep` labels its result like :func:`bandjax.sweep` (dimension names ``bandwidth`` in GB/s,
``budget`` in GFLOP/s with inf = free, ``model``, ``H``, ``variant``, plus ``load`` and ``seed``),
so the two line up with ``xr.align``. Each grid point is one run of :func:`events.engine.simulate`;
runs go to a dask ``LocalCluster`` by default, or to an existing scheduler given by address.
"""

from __future__ import annotations

import contextlib

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from bandjax import _limits
from bandjax import variants as _variants
from bandjax.labels import COORD_ATTRS, as_list, budgets_FLOPs, models, positive
from bandjax.scenario import Scenario, reference

from . import engine
from .plan import build

QUANTITIES = ("step_s", "step_p50_s", "step_p95_s", "step_p99_s", "wan_utilisation",
              "wan_queue_mean", "wan_queue_max", "messages", "sim_s")
_SUMMARY = {"step_s": "mean_s", "step_p50_s": "p50_s", "step_p95_s": "p95_s",
            "step_p99_s": "p99_s", "messages": "messages", "sim_s": "sim_s"}
_ATTRS = {
    "step_s": {"units": "s", "long_name": "mean step time of the run"},
    "step_p50_s": {"units": "s", "long_name": "median step time"},
    "step_p95_s": {"units": "s", "long_name": "95th percentile step time"},
    "step_p99_s": {"units": "s", "long_name": "99th percentile step time"},
    "wan_utilisation": {"units": "1", "long_name": "busy share of each WAN direction over the job (mean of both)"},
    "wan_queue_mean": {"units": "messages", "long_name": "time-averaged messages in a WAN direction (mean of both)"},
    "wan_queue_max": {"units": "messages", "long_name": "most messages in a WAN direction (max of both)"},
    "messages": {"units": "1", "long_name": "link arrivals simulated (warm-up included)"},
    "sim_s": {"units": "s", "long_name": "simulated time (warm-up included)"},
}


def sweep(scenario: Scenario | None = None, *, variant=None, load=0.0, bandwidth=None,
          budget=None, model=None, H=None, seed=0, steps: int = 400,
          scheduler=None, n_workers: int = 2, max_sim_s: float = engine.MAX_SIM_S,
          progress: bool = True) -> xr.Dataset:
    """Run the engine at every point of a grid.

    Each grid argument is a scalar (a scalar coordinate) or a sequence (a dimension), as in
    :func:`bandjax.sweep`; dimensions come in the order bandwidth, budget, model, H, load, seed,
    variant.

    Args:
      scenario: the parameters; the reference scenario by default.
      variant: variant ids; all of them by default (as a dimension).
      load: other jobs' share of each WAN direction's capacity, in [0, 1).
      bandwidth: WAN bandwidth per direction, GB/s (> 0).
      budget: module compute budget, GFLOP/s, or "free" / "low" / "high".
      model: preset names or parameter counts (GPU compute scales with P, d does not).
      H: sync every H steps (a whole number).
      seed: seeds of the background traffic (whole numbers >= 0).
      steps: training steps per run (>= 1).
      scheduler: None for a new ``LocalCluster`` of ``n_workers`` processes; an address
        ("tcp://host:8786") or a ``distributed.Client`` to use an existing one; "inline" to run
        in this process without dask.
      max_sim_s: bound on each run's simulated time, s.
      progress: show a progress bar of runs done.

    Returns:
      An ``xarray.Dataset`` of :data:`QUANTITIES`, each with ``attrs["units"]``.
    """
    sc = reference() if scenario is None else scenario
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps = {steps!r}: must be a whole number >= 1")
    if steps > _limits.MAX_STEPS:
        raise ValueError(f"steps = {steps}: at most {_limits.MAX_STEPS} steps a run "
                         "(bandjax._limits.MAX_STEPS)")
    axes: list[tuple[str, list, list]] = []  # (dim, coordinate values, scenario changes per value)
    scalars: dict[str, object] = {}
    base: dict = {}

    def add(dim, given, coords, changes):
        values, is_dim = given
        if is_dim:
            axes.append((dim, coords, changes))
        else:
            scalars[dim] = coords[0]
            base.update(changes[0])

    if bandwidth is not None:
        vals, is_dim = as_list("bandwidth", bandwidth)
        gbps = positive("bandwidth", vals, "GB/s")
        add("bandwidth", (vals, is_dim), gbps, [{"wan_Bps": g * 1e9} for g in gbps])
    if budget is not None:
        vals, is_dim = as_list("budget", budget)
        flops = budgets_FLOPs(sc, vals)
        add("budget", (vals, is_dim), [f / 1e9 for f in flops], [{"budget_FLOPs": f} for f in flops])
    model_params = None
    if model is not None:
        vals, is_dim = as_list("model", model)
        labels, params = models(vals)
        add("model", (vals, is_dim), labels,
            [{"params": p, "gpu_compute_s": float(sc.at_model_size(p).gpu_compute_s)} for p in params])
        model_params = (params, is_dim)
    if H is not None:
        vals, is_dim = as_list("H", H)
        for h in vals:
            if isinstance(h, bool) or not isinstance(h, (int, float, np.number)) \
                    or not (h >= 1 and float(h).is_integer()):
                raise ValueError(f"H = {h!r}: must be a whole number of steps >= 1")
        add("H", (vals, is_dim), [float(h) for h in vals], [{"sync_every_H": float(h)} for h in vals])
    loads, load_dim = as_list("load", load)
    for x in loads:
        engine.check_run_args(x, steps)
    add("load", (loads, load_dim), [float(x) for x in loads], [{} for _ in loads])
    seeds, seed_dim = as_list("seed", seed)
    if len(seeds) > _limits.MAX_SEEDS:
        raise ValueError(f"{len(seeds)} seeds: at most {_limits.MAX_SEEDS} a sweep "
                         "(bandjax._limits.MAX_SEEDS)")
    for s in seeds:
        engine.check_run_args(0.0, steps, s)
    add("seed", (seeds, seed_dim), [int(s) for s in seeds], [{} for _ in seeds])
    vids, variant_dim = as_list("variant", list(_variants.IDS) if variant is None else variant)
    for vid in vids:
        _variants.get(vid)
    add("variant", (vids, variant_dim), list(vids), [{} for _ in vids])

    shape = tuple(len(a[1]) for a in axes)
    dims = [a[0] for a in axes]
    runs = int(np.prod(shape)) if shape else 1
    if runs > _limits.MAX_RUNS:
        raise ValueError(f"the grid has {runs} runs ({' x '.join(map(str, shape))} over "
                         f"{', '.join(dims)}): at most {_limits.MAX_RUNS} a sweep "
                         "(bandjax._limits.MAX_RUNS)")
    points = list(np.ndindex(*shape)) if shape else [()]
    tasks = []
    events_total = 0.0
    for idx in points:
        changes = dict(base)
        coord = dict(scalars)
        for (dim, coords, ch), i in zip(axes, idx):
            changes.update(ch[i])
            coord[dim] = coords[i]
        plan = build(sc.replace(**changes), coord["variant"])
        # every run is checked before any starts: a sweep fails at once, not after hours
        events_total += engine.check_bounds(plan, float(coord["load"]), int(steps),
                                            float(max_sim_s), _limits.MAX_EVENTS)["total"]
        tasks.append((plan, float(coord["load"]), int(coord["seed"]), int(steps), float(max_sim_s)))
    if events_total > _limits.MAX_EVENTS:
        raise ValueError(f"the sweep's {runs} runs would simulate about {events_total:.3g} link "
                         f"arrivals, over the bound of {_limits.MAX_EVENTS:.3g} "
                         "(bandjax._limits.MAX_EVENTS); lower the steps, seeds or loads")
    results = _execute(tasks, scheduler, n_workers, progress)

    data = {q: np.empty(shape if shape else ()) for q in QUANTITIES}
    for idx, summary in zip(points, results):
        for q, key in _SUMMARY.items():
            data[q][idx] = summary[key]
        data["wan_utilisation"][idx] = float(np.mean(summary["utilisation"]))
        data["wan_queue_mean"][idx] = float(np.mean(summary["queue_mean"]))
        data["wan_queue_max"][idx] = float(np.max(summary["queue_max"]))
    coords: dict = {}
    for dim, cvals, _ in axes:
        coords[dim] = xr.Variable(dim, np.asarray(cvals), COORD_ATTRS[dim])
    for dim, cval in scalars.items():
        coords[dim] = xr.Variable((), cval, COORD_ATTRS[dim])
    if "variant" in dims:
        coords["label"] = xr.Variable("variant", np.asarray([_variants.get(v).short for v in vids]))
    if model_params is not None:
        params, is_dim = model_params
        coords["params"] = xr.Variable(("model",) if is_dim else (),
                                       np.asarray(params if is_dim else params[0]),
                                       COORD_ATTRS["params"])
    ds = xr.Dataset({q: xr.Variable(dims, data[q], _ATTRS[q]) for q in QUANTITIES}, coords=coords)
    ds.attrs.update({
        "title": "bandjax shared-WAN event engine sweep",
        "steps": int(steps),
        "assumptions": "each WAN direction a FCFS link shared with other jobs' Poisson transfers "
                       f"of {float(sc.background_B):g} B at load x capacity; the sync's WAN bytes "
                       f"as {float(sc.wan_message_B):g} B messages one after another; "
                       "d calibrated to the study's step times",
    })
    return ds


@contextlib.contextmanager
def client(scheduler=None, n_workers: int = 2):
    """Where runs execute, for reuse across sweeps: yields a ``distributed.Client`` (a new
    ``LocalCluster`` of ``n_workers`` single-threaded processes when ``scheduler`` is None, or
    the scheduler at an address such as "tcp://host:8786"), the given Client, or "inline"."""
    if scheduler == "inline":
        yield "inline"
        return
    from distributed import Client, LocalCluster

    if isinstance(scheduler, Client):
        yield scheduler
    elif scheduler is None:
        if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
            raise ValueError(f"n_workers = {n_workers!r}: must be a whole number >= 1")
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as c:
            yield c
    elif isinstance(scheduler, str):
        with connect(scheduler) as c:
            yield c
    else:
        raise ValueError(f"scheduler = {scheduler!r}: give None (a LocalCluster), a scheduler "
                         "address such as 'tcp://host:8786', a distributed.Client, or 'inline'")


def connect(address: str, timeout_s: float | None = None):
    """A ``distributed.Client`` of the scheduler at ``address``, or ``ConnectionError`` in one
    line if none answers within ``timeout_s`` seconds (default
    :data:`bandjax._limits.SCHEDULER_TIMEOUT_S`; a dead address, a port that accepts but never
    speaks dask's protocol)."""
    import asyncio

    from distributed import Client

    timeout_s = _limits.SCHEDULER_TIMEOUT_S if timeout_s is None else timeout_s
    if "://" not in address and ":" not in address:
        raise ValueError(f"scheduler = {address!r}: give an address such as 'tcp://host:8786', "
                         "or 'inline'")
    try:
        # distributed's Client ignores its timeout while waiting for the handshake of a peer
        # that accepts the connection but never answers, so probe the handshake first, bounded
        asyncio.run(_probe(address, timeout_s))
        return Client(address, timeout=timeout_s)
    except (OSError, TimeoutError) as e:
        raise ConnectionError(f"no dask scheduler answered at {address!r} within {timeout_s:g} s "
                              f"({type(e).__name__})") from None


async def _probe(address: str, timeout_s: float) -> None:
    """Connect to ``address`` and complete dask's handshake within ``timeout_s``, then close."""
    import asyncio

    from distributed.comm import connect as comm_connect

    comm = await asyncio.wait_for(comm_connect(address, timeout=timeout_s), timeout_s)
    await comm.close()


def _execute(tasks: list, scheduler, n_workers: int, progress: bool) -> list[dict]:
    """Run every task, in order of ``tasks``; a progress bar counts runs done."""
    with client(scheduler, n_workers) as c, \
            tqdm(total=len(tasks), desc="shared-WAN runs", unit="run", disable=not progress) as bar:
        if c == "inline":
            out = []
            for t in tasks:
                out.append(engine.run_summary(*t))
                bar.update()
            return out
        from distributed import as_completed

        futures = [c.submit(engine.run_summary, *t, pure=False) for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list = [None] * len(tasks)
        for f in as_completed(futures):
            out[index[f.key]] = f.result()
            bar.update()
        return out
