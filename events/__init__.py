"""events: the shared-WAN discrete-event engine (docs/model.md sections 11 and 13), SimPy and NumPy only.

The closed forms assume the WAN is the training job's alone; this engine shares every directed WAN
link in use (K on a ring of K DCs, K(K-1) on a mesh) with other jobs' Poisson traffic, with the
scenario's one-way latency and overlap; with per-link values (docs/model.md section 15) each
link has its own capacity, background and latency. At load 0 it gives the closed forms' step time
exactly, which makes it an independent check of them. ``import events`` never loads jax.

Public API (imported lazily, so dask workers that only run :func:`simulate` stay light):

    build(scenario, variant) -> Plan         the job's phases, from bandjax.phases and .variants
    simulate(plan, load, seed, steps) -> RunResult
    run(scenario, variant, load, seed, steps) -> RunResult
    sweep(scenario, load=, seed=, steps=, scheduler=, **bandjax.sweep's arguments)
        -> xarray.Dataset

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
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'events' has no attribute {name!r}")


def __dir__():
    return __all__
