"""Engine runs over a labelled grid, in parallel on dask.distributed or a pool of processes.

:func:`sweep` takes the arguments of :func:`bandjax.sweep`, parsed by the same parser
(:func:`bandjax.sweepargs.parse`: ``bandwidth`` in GB/s, ``enob``, ``budget`` in GFLOP/s with
inf = free, ``model``, ``gpu``, ``dcs``, ``topology``, ``workers_per_dc``, ``H``, ``basis`` and any
scenario field by name), plus ``load`` and ``seed``, and labels its result the same way, so the two
line up with ``xr.align``. Each grid point is one run of :func:`events.engine.simulate`; runs go
to a dask ``LocalCluster`` by default (a script that does so needs an
``if __name__ == "__main__":`` guard, as dask starts worker processes by importing it), to an
existing scheduler given by address or ``distributed.Client``, to a plain pool of local processes
with ``scheduler="processes"`` (:func:`pool`; the same guard), or, with ``scheduler="inline"``,
one after another in this process without dask. :func:`submit` starts a sweep's runs and returns
at once, for this process to do other work meanwhile.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from bandjax import _limits
from bandjax.labels import COORD_ATTRS, as_list
from bandjax.links import Links
from bandjax.scenario import Scenario, reference
from bandjax.sweepargs import parse

from . import _worker, engine
from .plan import build

QUANTITIES = ("step_s", "step_p50_s", "step_p95_s", "step_p99_s", "wan_utilisation",
              "wan_utilisation_max", "wan_queue_mean", "wan_queue_mean_max", "wan_queue_max",
              "messages", "sim_s")
_SUMMARY = {"step_s": "mean_s", "step_p50_s": "p50_s", "step_p95_s": "p95_s",
            "step_p99_s": "p99_s", "wan_utilisation": "utilisation_mean",
            "wan_utilisation_max": "utilisation_max", "wan_queue_mean": "queue_mean_mean",
            "wan_queue_mean_max": "queue_mean_max", "wan_queue_max": "queue_max_max",
            "messages": "messages", "sim_s": "sim_s"}
_ATTRS = {
    "step_s": {"units": "s", "long_name": "mean step time of the run"},
    "step_p50_s": {"units": "s", "long_name": "median step time"},
    "step_p95_s": {"units": "s", "long_name": "95th percentile step time"},
    "step_p99_s": {"units": "s", "long_name": "99th percentile step time"},
    "wan_utilisation": {"units": "1", "long_name": "busy share of a WAN link over the job (mean over the links in use)"},
    "wan_utilisation_max": {"units": "1", "long_name": "busy share of a WAN link over the job (max over the links in use)"},
    "wan_queue_mean": {"units": "messages", "long_name": "time-averaged messages in a WAN link (mean over the links in use)"},
    "wan_queue_mean_max": {"units": "messages", "long_name": "time-averaged messages in a WAN link (max over the links in use)"},
    "wan_queue_max": {"units": "messages", "long_name": "most messages in a WAN link (max over the links in use)"},
    "messages": {"units": "1", "long_name": "link arrivals simulated (warm-up included)"},
    "sim_s": {"units": "s", "long_name": "simulated time (warm-up included)"},
}


def sweep(scenario: Scenario | None = None, *, load=0.0, seed=0, steps: int = 400,
          scheduler=None, n_workers: int = 2, max_sim_s: float = engine.MAX_SIM_S,
          progress: bool = True, budget_s: float | None = None, **grid) -> xr.Dataset:
    """Run the engine at every point of a grid.

    Each grid argument is a scalar (a scalar coordinate) or a sequence (a dimension), as in
    :func:`bandjax.sweep`, whose arguments it takes (parsed by :func:`bandjax.sweepargs.parse`);
    dimensions come in that order, then ``load``, ``seed`` and ``variant``.

    Args:
      scenario: the parameters; the reference scenario by default.
      load: other jobs' share of each WAN link's capacity, in [0, 1).
      seed: seeds of the background traffic (whole numbers >= 0).
      steps: training steps per run (>= 1).
      scheduler: None for a new ``LocalCluster`` of ``n_workers`` processes (call it under
        ``if __name__ == "__main__":`` in a script); an address ("tcp://host:8786") or a
        ``distributed.Client`` to use an existing one; ``"processes"`` for a plain pool of
        ``n_workers`` processes (:func:`pool`: no dask, quick to start; the same guard), or a
        ``concurrent.futures`` executor; ``"inline"`` to run in this process without dask (no
        worker processes, no guard needed).
      max_sim_s: bound on each run's simulated time, s.
      progress: show a progress bar of runs done.
      budget_s: the most wall seconds the sweep may be estimated to take on its workers (the
        runs' link arrivals at the engine's measured rates, :func:`events.engine.wall_s`; default
        :data:`bandjax._limits.MAX_ENGINE_S`, ``math.inf`` for none); a sweep over it is refused
        before any run starts, with the estimate.
      **grid: ``variant``, ``bandwidth`` (GB/s per directed link), ``enob``, ``budget``,
        ``model``, ``gpu``, ``dcs``, ``topology``, ``workers_per_dc``, ``H`` (a whole number
        here: the engine syncs on every H-th step), ``basis``, ``link`` with ``link_bandwidth``
        or ``link_latency_s``, or any scenario field by name.

    Returns:
      An ``xarray.Dataset`` of :data:`QUANTITIES`, each with ``attrs["units"]``.
    """
    job = _Job(scenario, load, seed, steps, max_sim_s, grid, budget_s,
               _workers(scheduler, n_workers))
    return job.assemble(_execute(job.tasks, scheduler, n_workers, progress))


def _at(sc: Scenario, g, leaves: dict, at: tuple) -> Scenario:
    """The scenario at grid point ``at``: each leaf's value there, and where one link is swept
    (``g.links``, :func:`bandjax.sweepargs.parse`) the links table there."""
    out = sc.replace(**{k: float(v[at]) for k, v in leaves.items()})
    if g.links is None:
        return out
    tables = (np.broadcast_to(t, (*t.shape[:2], *g.shape))[(slice(None), slice(None), *at)]
              for t in g.links)
    return out.replace(links=Links(sc.links.names, *tables))


class _Job:
    """A sweep's runs, checked and planned before any starts (``tasks``: the arguments of
    :func:`events.engine.run_summary`, in grid order), and :meth:`assemble`, which labels their
    summaries."""

    def __init__(self, scenario, load, seed, steps, max_sim_s, grid, budget_s=None, workers=1):
        sc = reference() if scenario is None else scenario
        budget_s = _limits.MAX_ENGINE_S if budget_s is None else budget_s
        number = isinstance(budget_s, (int, float, np.integer, np.floating))
        if isinstance(budget_s, (bool, np.bool_)) or not number or not budget_s > 0:
            raise ValueError(f"budget_s = {budget_s!r}: must be a number of seconds > 0 (math.inf "
                             "for no bound)")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ValueError(f"steps = {steps!r}: must be a whole number >= 1")
        if steps > _limits.MAX_STEPS:
            raise ValueError(f"steps = {steps}: at most {_limits.MAX_STEPS} steps a run "
                             "(bandjax._limits.MAX_STEPS)")
        engine.check_run_args(0.0, steps, 0, max_sim_s)  # before any plan: max_sim_s divides
        # a swept H is refused unless whole by parse (as every sweep); the scenario's own by the plan
        g = parse(sc, **grid)
        axes = [(a.name, list(a.coords), a.attrs) for a in g.axes]
        scalars = {k: (v, g.scalar_attrs.get(k, {})) for k, v in g.scalars.items()}

        def add(dim, values, is_dim, coords):
            if is_dim:
                axes.append((dim, coords, COORD_ATTRS[dim]))
            else:
                scalars[dim] = (coords[0], COORD_ATTRS[dim])

        loads, load_dim = as_list("load", load)
        for x in loads:
            engine.check_run_args(x, steps)
        add("load", loads, load_dim, [float(x) for x in loads])
        seeds, seed_dim = as_list("seed", seed)
        if len(seeds) > _limits.MAX_SEEDS:
            raise ValueError(f"{len(seeds)} seeds: at most {_limits.MAX_SEEDS} a sweep "
                             "(bandjax._limits.MAX_SEEDS)")
        for s in seeds:
            engine.check_run_args(0.0, steps, s)
        add("seed", seeds, seed_dim, [int(s) for s in seeds])
        if g.variant_is_dim:
            axes.append(("variant", list(g.variants), COORD_ATTRS["variant"]))
        else:
            scalars["variant"] = (g.variants[0], COORD_ATTRS["variant"])

        shape = tuple(len(a[1]) for a in axes)
        dims = [a[0] for a in axes]
        runs = int(np.prod(shape)) if shape else 1
        if runs > _limits.MAX_RUNS:
            raise ValueError(f"the grid has {runs} runs ({' x '.join(map(str, shape))} over "
                             f"{', '.join(dims)}): at most {_limits.MAX_RUNS} a sweep "
                             "(bandjax._limits.MAX_RUNS)")
        points = list(np.ndindex(*shape)) if shape else [()]
        n_grid = len(g.axes)
        leaves = {k: np.broadcast_to(v, g.shape) for k, v in g.leaves.items()}
        tasks = []
        total = {"messages": 0.0, "background": 0.0, "total": 0.0, "draws": 0.0,
                 "milestones": 0.0}
        plans: dict = {}  # one plan per grid point and variant, one estimate per plan and load:
        estimates: dict = {}  # seeds share both, so a sweep of many seeds is checked in ms
        for idx in points:
            coord = {dim: coords[i] for (dim, coords, _), i in zip(axes, idx)}
            coord.update({k: v for k, (v, _) in scalars.items() if k not in coord})
            at = idx[:n_grid]
            key = (at, coord["variant"])
            if key not in plans:
                plans[key] = build(_at(sc, g, leaves, at), coord["variant"])
            plan = plans[key]
            # every run is checked before any starts: a sweep fails at once, not after hours
            if (key, float(coord["load"])) not in estimates:
                estimates[key, float(coord["load"])] = engine.check_bounds(
                    plan, float(coord["load"]), int(steps), float(max_sim_s), _limits.MAX_EVENTS)
            est = estimates[key, float(coord["load"])]
            for k in total:
                total[k] += est[k]
            tasks.append((plan, float(coord["load"]), int(coord["seed"]), int(steps),
                          float(max_sim_s)))
        engine.check_budget(total, float(budget_s), workers, f"the sweep's {runs} runs",
                            "budget_s; bandjax wan --budget-s")
        if total["total"] > _limits.MAX_EVENTS:
            raise ValueError(f"the sweep's {runs} runs would simulate about {total['total']:.3g} "
                             f"link arrivals, over the bound of {_limits.MAX_EVENTS:.3g} "
                             "(bandjax._limits.MAX_EVENTS); lower the steps, seeds or loads")
        self.tasks, self.points, self.shape, self.dims = tasks, points, shape, dims
        self.axes, self.scalars, self.g, self.sc, self.steps = axes, scalars, g, sc, steps

    def assemble(self, results: list) -> xr.Dataset:
        """The dataset of the runs' summaries (``results``, in the order of ``tasks``)."""
        points, shape, dims, axes, scalars, g, sc = (self.points, self.shape, self.dims, self.axes,
                                                     self.scalars, self.g, self.sc)
        steps = self.steps

        data = {q: np.empty(shape if shape else ()) for q in QUANTITIES}
        for idx, summary in zip(points, results):
            for q, key in _SUMMARY.items():
                data[q][idx] = summary[key]
        coords: dict = {}
        for dim, cvals, attrs in axes:
            coords[dim] = xr.Variable(dim, np.asarray(cvals), attrs)
        for dim, (cval, attrs) in scalars.items():
            coords[dim] = xr.Variable((), cval, attrs)
        if g.variant_is_dim:
            coords["label"] = xr.Variable("variant",
                                          np.asarray([sc.variant(v).short for v in g.variants]))
        for name, (cdims, values, attrs) in g.extra_coords.items():
            coords[name] = xr.Variable(cdims, values, attrs)
        ds = xr.Dataset({q: xr.Variable(dims, data[q], _ATTRS[q]) for q in QUANTITIES},
                        coords=coords)
        ds.attrs.update({
            "title": "bandjax shared-WAN event engine sweep",
            "steps": int(steps),
            "assumptions": "each directed WAN link in use (K on a ring, K(K-1) on a mesh) a FCFS "
                           "link shared with other jobs' Poisson transfers "
                           f"of {float(sc.background_B):g} B at load x capacity; the sync's bytes "
                           f"on each link as {float(sc.wan_message_B):g} B messages one after "
                           "another; d calibrated to the study's step times",
        })
        return ds


def _workers(scheduler, n_workers) -> int:
    """Workers a sweep's runs share, for its time estimate: 1 in this process or on a scheduler
    given by address (not asked before the check), a Client's workers, or a new LocalCluster's
    ``n_workers`` up to this machine's cores."""
    import os

    if scheduler is None:
        ok = isinstance(n_workers, (int, np.integer)) and not isinstance(n_workers, bool)
        return max(1, min(int(n_workers), os.cpu_count() or 1)) if ok else 1
    if scheduler == "inline" or isinstance(scheduler, str):
        return 1
    if isinstance(scheduler, concurrent.futures.Executor):  # a pool: its worker processes
        return max(1, int(getattr(scheduler, "_max_workers", 1) or 1))
    if hasattr(scheduler, "scheduler_info"):  # a distributed.Client
        return max(1, len(scheduler.scheduler_info().get("workers", {})))
    return 1  # not a scheduler: client() says so


@contextlib.contextmanager
def client(scheduler=None, n_workers: int = 2, *, nice: int = 0):
    """Where runs execute, for reuse across sweeps: yields a ``distributed.Client`` (a new
    ``LocalCluster`` of ``n_workers`` single-threaded processes when ``scheduler`` is None, or
    the scheduler at an address such as "tcp://host:8786"), the given Client, a process pool of
    ``n_workers`` for ``"processes"`` (:func:`pool`, its workers at ``nice``), or "inline"."""
    if scheduler == "inline":
        yield "inline"
        return
    if scheduler == "processes":
        with pool(n_workers, nice=nice) as p:
            yield p
        return
    if isinstance(scheduler, concurrent.futures.Executor):
        yield scheduler
        return
    from distributed import Client, LocalCluster

    if isinstance(scheduler, Client):
        yield scheduler
    elif scheduler is None:
        _check_workers(n_workers)
        # ":0": the dashboard on any free port (None still asks for 8787 and warns when it is taken)
        from bandjax._io import children_ignore_interrupt

        with children_ignore_interrupt():  # workers leave a Ctrl-C to the command
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
        with cluster, Client(cluster) as c:
            yield c
    elif isinstance(scheduler, str):
        with connect(scheduler) as c:
            yield c
    else:
        raise ValueError(f"scheduler = {scheduler!r}: give None (a LocalCluster), a scheduler "
                         "address such as 'tcp://host:8786', a distributed.Client, "
                         "'processes' or 'inline'")


def _check_workers(n_workers) -> None:
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers = {n_workers!r}: must be a whole number >= 1")


@contextlib.contextmanager
def pool(n_workers: int = 2, *, nice: int = 0):
    """A pool of ``n_workers`` local processes for engine runs, without dask: started in a
    fraction of a second where a ``LocalCluster`` takes seconds, for sweeps of a few seconds'
    work. Its processes are spawned (not forked: a process that has loaded jax must not fork) and
    import only the engine; a script that uses it needs an ``if __name__ == "__main__":`` guard.
    Pending runs are cancelled when the block is left.

    ``nice`` (0 to 19): the workers' priority below the caller's (``os.nice``), for a caller with
    work of its own on the same cores: the report runs its engine this way, so that on 2 cores
    the runs take what its own process leaves (the first report 12.2 s where it took 13.5 s, the
    same runs and results). Each run's result does not depend on it."""
    import multiprocessing

    _check_workers(n_workers)
    if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
        raise ValueError(f"nice = {nice!r}: must be a whole number in 0 .. 19")
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=functools.partial(_worker.start, nice))
    try:
        yield executor
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


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
    runs, index = _distinct(tasks)
    with client(scheduler, n_workers) as c:
        return _spread(_gather(_submit(runs, c), len(runs), progress), tasks, index)


def _distinct(tasks: list) -> tuple[list, list[int]]:
    """The runs to start for ``tasks``, and for each task the index of the run whose summary is
    its own: tasks that differ only in the seed share one run where the seed changes nothing
    (:func:`events.engine.seed_free`: no other jobs' traffic, nothing drawn), as the load-0
    runs of a sweep over seeds do."""
    runs, index, first = [], [], {}
    for t in tasks:
        plan, load, _, steps, max_sim_s = t
        key = (id(plan), load, steps, max_sim_s) if engine.seed_free(plan, load) else None
        if key is not None and key in first:
            index.append(first[key])
            continue
        if key is not None:
            first[key] = len(runs)
        index.append(len(runs))
        runs.append(t)
    return runs, index


def _spread(summaries: list[dict], tasks: list, index: list[int]) -> list[dict]:
    """Each task's summary from its run's (:func:`_distinct`), under its own seed."""
    out = []
    for t, i in zip(tasks, index):
        s = summaries[i]
        out.append(s if s["seed"] == t[2] else {**s, "seed": t[2]})
    return out


def _submit(tasks: list, where):
    """Start ``tasks`` at ``where`` (a ``distributed.Client``, a ``concurrent.futures``
    executor, or "inline": nothing starts yet): what :func:`_gather` waits for."""
    if where == "inline":
        return tasks
    if isinstance(where, concurrent.futures.Executor):
        from bandjax._io import children_ignore_interrupt

        with children_ignore_interrupt():  # a pool starts its processes here: Ctrl-C is ours
            return [where.submit(engine.run_summary, *t) for t in tasks]
    return [where.submit(engine.run_summary, *t, pure=False) for t in tasks]


def _gather(futures: list, total: int, progress: bool) -> list[dict]:
    """The summaries of :func:`_submit`'s runs, in order; a progress bar counts runs done. Runs
    that finished before the bar starts (started ahead, while other work went on) are its
    starting count, so its rate is that of the runs it watches, not thousands of runs a second."""
    started = [f for f in futures if hasattr(f, "done") and f.done()]
    with tqdm(total=total, initial=len(started), desc="shared-WAN runs", unit="run",
              disable=not progress) as bar:
        out: list = []
        if futures and not hasattr(futures[0], "result"):  # inline: run them here, in order
            for t in futures:
                out.append(engine.run_summary(*t))
                bar.update()
            return out
        if not futures:
            return out
        out = [None] * len(futures)
        if isinstance(futures[0], concurrent.futures.Future):
            key, done = id, concurrent.futures.as_completed(futures)
        else:
            from distributed import as_completed

            key, done = (lambda f: f.key), as_completed(futures)
        index = {key(f): i for i, f in enumerate(futures)}
        counted = {key(f) for f in started}
        for f in done:
            out[index[key(f)]] = f.result()
            if key(f) not in counted:
                bar.update()
        return out


RUN_CACHE_FOLDER = "engine"  # in bandjax's cache folder (:func:`run_cache_dir`)
RUN_CACHE_KEEP = 5_000  # run summaries kept (0.6 KB each, 4 KB on disk); least recently used go


def run_cache_dir(environ=None) -> Path | None:
    """Where :func:`submit` may keep run summaries between processes: ``engine`` in bandjax's cache
    folder (:func:`bandjax._cache.cache_folder`: ``BANDJAX_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/bandjax``, else ``~/.cache/bandjax``); ``None``, no cache, when
    ``BANDJAX_NO_CACHE`` is set or no folder is known."""
    from bandjax._cache import cache_folder

    folder = cache_folder(environ)
    return None if folder is None else folder / RUN_CACHE_FOLDER


@functools.cache
def _engine_digest() -> str:
    """What decides a run's summary beyond its task: the engine's code (every module of this
    package), and the versions of Python, NumPy (its random streams) and SimPy."""
    import simpy

    from bandjax._cache import source_digest

    return source_digest(Path(__file__).parent, "*.py",
                         (sys.version, np.__version__, simpy.__version__))


class _RunCache:
    """Run summaries kept in ``folder``, one JSON file a run, named by the hash of the engine's
    code and the run's task (its plan in plain floats, load, seed, steps and bound), all of which
    a run is a function of: a seeded run gives the same summary every time. A file that cannot be
    read or parsed is a miss; one that cannot be written is skipped."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _path(self, task) -> Path:
        key = hashlib.sha256(repr((_engine_digest(), task)).encode()).hexdigest()
        return self.folder / f"{key}.json"

    def get(self, task) -> dict | None:
        path = self._path(task)
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
            os.utime(path)  # recently used: kept longest
        except (OSError, ValueError):
            return None
        return summary if isinstance(summary, dict) else None

    def put(self, pairs: list) -> None:
        from bandjax._cache import trim
        from bandjax._io import atomic_write_bytes

        try:
            for task, summary in pairs:
                text = json.dumps(summary, default=_plain)
                atomic_write_bytes(self._path(task), text.encode("utf-8"))
            if pairs:
                trim(self.folder, "*.json", RUN_CACHE_KEEP)
        except (OSError, TypeError, ValueError):
            pass


def _plain(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    raise TypeError(f"{type(x).__name__} is not JSON-ready")


class Pending:
    """A sweep started by :func:`submit`: :meth:`result` waits for its runs and gives the
    dataset :func:`sweep` would give."""

    def __init__(self, job: _Job, futures: list, kept: list, cache: _RunCache | None,
                 todo: list, index: list[int]):
        self._job, self._futures, self._cache, self._kept = job, futures, cache, kept
        # the tasks not kept, and the index of each one's run among futures (_distinct)
        self._todo, self._index = todo, index

    def result(self, progress: bool = True) -> xr.Dataset:
        fresh = iter(_spread(_gather(self._futures, len(self._futures), progress), self._todo,
                             self._index))
        ran = [i for i, k in enumerate(self._kept) if k is None]
        summaries = [k if k is not None else next(fresh) for k in self._kept]
        if self._cache is not None:
            self._cache.put([(self._job.tasks[i], summaries[i]) for i in ran])
        return self._job.assemble(summaries)


def submit(where, scenario: Scenario | None = None, *, load=0.0, seed=0, steps: int = 400,
           max_sim_s: float = engine.MAX_SIM_S, budget_s: float | None = None,
           cache_dir: Path | None = None, **grid) -> Pending:
    """Start :func:`sweep`'s runs at ``where`` (what :func:`client` yields: a process pool, a
    ``distributed.Client`` or "inline") and return at once, so this process can do other work
    meanwhile; ``.result()`` waits for them. Arguments as in :func:`sweep`, checked before any
    run starts (a ``ValueError`` here, as there). With "inline" the runs go in ``.result()``.

    With ``cache_dir`` (:func:`run_cache_dir`, say), a run done before with the same engine code
    is read back from there instead of run again (a seeded run's summary is the same each time),
    and each new run's summary is kept there."""
    job = _Job(scenario, load, seed, steps, max_sim_s, grid, budget_s, _workers(where, 2))
    cache = None if cache_dir is None else _RunCache(cache_dir)
    kept = [None if cache is None else cache.get(t) for t in job.tasks]
    todo = [t for t, k in zip(job.tasks, kept) if k is None]
    runs, index = _distinct(todo)
    return Pending(job, _submit(runs, where) if runs else [], kept, cache, todo, index)
