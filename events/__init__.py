"""events: the shared-WAN discrete-event engine (model.md section 11), SimPy and NumPy only.

The closed forms assume the WAN is the training job's alone; this engine shares each direction
with other jobs' Poisson traffic. At load 0 it must give the closed forms' step time exactly,
which makes it an independent check of them.

Public API (imported lazily, so dask workers that only run :func:`simulate` stay light):

    build(scenario, variant) -> Plan         the job's phases, from bandjax.variants.traffic
    simulate(plan, load, seed, steps) -> RunResult
    run(scenario, variant, load, seed, steps) -> RunResult
    sweep(scenario, variant=, load=, bandwidth=, seed=, steps=, ...) -> xarray.Dataset (on dask)
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
