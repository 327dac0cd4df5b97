"""Sweep arguments and coordinate labels shared by the closed-form grid and the event engine.

``bandjax.sweep`` and ``events.sweep`` take the same arguments and label their results the same
way, so the two line up with ``xr.align``; both read them from here. Plain Python and NumPy only.
"""

from __future__ import annotations

import math

import numpy as np

from .scenario import PRESETS, Scenario, resolve_budget

COORD_ATTRS = {
    "bandwidth": {"units": "GB/s", "long_name": "WAN bandwidth per direction"},
    "enob": {"units": "bit", "long_name": "ENOB of the in-transit band"},
    "budget": {"units": "GFLOP/s", "long_name": "module compute budget (inf = free, not charged)"},
    "model": {"long_name": "model size preset"},
    "params": {"units": "1", "long_name": "parameters"},
    "workers_per_dc": {"units": "1", "long_name": "workers per DC (2 DCs)"},
    "H": {"units": "steps", "long_name": "sync every H steps (steps to target assumed unchanged)"},
    "basis": {"long_name": "E' steps basis (hypothesis: E's steps; exact: the exact band's)"},
    "variant": {"long_name": "variant"},
    "load": {"units": "1", "long_name": "other jobs' share of each WAN direction's capacity"},
    "seed": {"units": "1", "long_name": "seed of the background traffic"},
}


def as_list(name, values) -> tuple[list, bool]:
    """(values as a list, whether it is a dimension): a scalar is a scalar coordinate."""
    if isinstance(values, (str, bytes)) or np.ndim(values) == 0:
        return [values], False
    values = list(np.asarray(values).tolist()) if not isinstance(values, (list, tuple)) else list(values)
    if not values:
        raise ValueError(f"{name} = []: give at least one value")
    return values, True


def positive(name, values, unit) -> list[float]:
    """``values`` as floats, each finite and > 0, or an error naming ``name``, the value and ``unit``."""
    if set(map(type, values)) <= {float, int}:  # plain numbers (bool is a type of its own): at once
        arr = np.asarray(values, dtype=float)
        if np.all(arr > 0) and np.all(np.isfinite(arr)):
            return arr.tolist()
    for x in values:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.number)) or not (x > 0) or math.isinf(x):
            raise ValueError(f"{name} = {x!r}: must be a finite number > 0 {unit}".rstrip())
    return [float(x) for x in values]


def budgets_FLOPs(sc: Scenario, values) -> list[float]:
    """Budgets given as 'free', 'low', 'high' or GFLOP/s, in FLOP/s (inf = free)."""
    return [resolve_budget(sc, b) for b in values]


def models(values) -> tuple[list[str], list[float]]:
    """(labels, parameter counts) for presets (by name) or parameter counts."""
    names, params = [], []
    for m in values:
        if isinstance(m, str):
            if m not in PRESETS:
                raise ValueError(f"model = {m!r} is not a preset; allowed: {', '.join(PRESETS)}, "
                                 "or a parameter count > 0")
            names.append(m)
            params.append(PRESETS[m])
        else:
            (p,) = positive("model", [m], "parameters")
            names.append(f"P={p:.4g}")
            params.append(p)
    return names, params
