"""events: the shared-WAN discrete-event engine (docs/model.md sections 11, 13-17), SimPy and
NumPy only.

The closed forms assume the WAN is the training job's alone; this engine shares every directed WAN
link in use (K on a ring of K DCs, K(K-1) on a mesh) with other jobs' Poisson traffic, with the
scenario's one-way latency and overlap; with per-link values (docs/model.md section 15) each
link has its own capacity, background and latency. At load 0 it gives the closed forms' step time
exactly, which makes it an independent check of them. :mod:`events.failures` injects worker
failures into a run and recovers by either rule of docs/model.md section 17, checking the
first-order ETTR forms. :mod:`events.stragglers` draws each worker's step factor for sites that
differ and workers that straggle (section 16) and measures the closed forms' normal
approximation against those draws (``python -m events.stragglers``). ``import events`` never
loads jax.

Public API (imported lazily, so dask workers that only run :func:`simulate` stay light):

    build(scenario, variant, *, compute_s=, workers=, straggler=, straggler_s=, sites_rule=)
        -> Plan                              the job's phases, from bandjax.phases and .variants;
                                             per-DC compute and workers, stragglers and the
                                             sites' rule (docs/model.md section 16)
    simulate(plan, load, seed, steps) -> RunResult   (RunResult.compute_utilisation)
    run(scenario, variant, load, seed, steps, *, the same as build) -> RunResult
    sweep(scenario, load=, seed=, steps=, scheduler=, **bandjax.sweep's arguments)
        -> xarray.Dataset
    simulate_failures(rule, workers=, failure_rate_per_hour=, restart_s=, duration_s=, ...)
        -> FailureRun                        runs that fail (docs/model.md section 17)
    fit_duration_s(rule, workers=, failure_rate_per_hour=, duration_s=, ...)
        -> (duration_s, note)                a failure run shortened to its bound

:func:`sweep` runs on a new dask ``LocalCluster`` by default; its worker processes import the
calling script, so a script must call it under ``if __name__ == "__main__":``. With
``scheduler="inline"`` the runs go one after another in this process (no dask, no guard);
``scheduler="processes"`` uses a plain pool of local processes (no dask; quick to start, for a
few seconds' work); ``scheduler="tcp://host:8786"`` or a ``distributed.Client`` uses an existing
cluster. :func:`events.runner.submit` starts a sweep's runs and returns at once.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Part": "engine", "Plan": "engine", "RunResult": "engine", "SimulationBoundError": "engine",
    "simulate": "engine", "warmup_s": "engine", "MAX_SIM_S": "engine",
    "build": "plan", "run": "plan",
    "sweep": "runner", "QUANTITIES": "runner", "client": "runner",
    "simulate_failures": "failures", "FailureRun": "failures", "FailureBoundError": "failures",
    "fit_duration_s": "failures",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'events' has no attribute {name!r}")


def __dir__():
    return __all__
