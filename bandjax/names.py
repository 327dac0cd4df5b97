"""Display names of the scenario's parameters: one table for the page, results.md and the CLI.

``NAMES`` maps a parameter (a :data:`bandjax.scenario.FIELDS` name, ``fixed_s.<variant id>``,
``steps_a`` or ``steps_b``) to ``(display name, unit for display, scale from SI)``: a value in SI
times ``scale`` is in ``unit``. It is built from ``FIELDS``, so a field added there gets a name
(its TOML key in words) and a unit (its dimension's first unit, the one scenario files use) without
an entry here; the entries below only say it better.
"""

from __future__ import annotations

from typing import NamedTuple

from . import variants as _v
from .scenario import FIELDS
from .units import UNITS


class Name(NamedTuple):
    """How a parameter is shown: ``value_SI * scale`` in ``unit``."""

    name: str
    unit: str
    scale: float


# Better words than the TOML key, where one helps; the unit still comes from the dimension.
_WORDS = {
    "params": "parameters P",
    "gpu_compute_s": "GPU compute per step",
    "tokens_per_worker": "tokens per worker per step",
    "flops_per_param_token": "FLOP per parameter per token",
    "dense_bytes_per_param": "bytes per parameter of the dense delta",
    "workers_per_dc": "workers per DC",
    "worker_port_Bps": "worker port",
    "qsfp_port_Bps": "module port",
    "wan_Bps": "WAN bandwidth per direction",
    "band_fraction": "band fraction",
    "gpu_band_bits": "bits per band coefficient on the GPU",
    "enob": "ENOB in transit",
    "topk_fraction": "top-k fraction k / P",
    "topk_bytes_per_value": "bytes per top-k value",
    "optics_Sps": "optics sample rate",
    "fpga_Bps": "FPGA rate",
    "transform_flops_per_param": "transform FLOP per parameter",
    "budget_FLOPs": "module compute budget",
    "budget_low_FLOPs": "[low] module budget",
    "budget_high_FLOPs": "[high] module budget",
    "gpu_static_W": "GPU static power",
    "gpu_J_per_FLOP": "GPU energy per FLOP",
    "link_J_per_bit": "port energy per bit",
    "wan_J_per_bit": "WAN energy per bit",
    "module_W": "module power",
    "sync_every_H": "sync every H steps",
    "wan_message_B": "WAN message size",
    "background_B": "other jobs' transfer size",
}
# Counts that have a unit of their own (a count's dimension has none).
_COUNT_UNITS = {"enob": "bits", "gpu_band_bits": "bits",
                "dense_bytes_per_param": "B", "topk_bytes_per_value": "B",
                "wan_message_B": "B", "background_B": "B"}


def _default(field: str, dimension: str) -> Name:
    """A field's name without an entry in ``_WORDS``: its TOML key in words, its file unit."""
    key = FIELDS[field][1]
    unit, factor = next(iter(UNITS.get(dimension, {"": 1.0}).items()))
    return Name(_WORDS.get(field, key.replace("_", " ")), _COUNT_UNITS.get(field, unit), 1.0 / factor)


NAMES: dict[str, Name] = {
    **{f: _default(f, dim) for f, (_, _, dim, _) in FIELDS.items()},
    **{f"fixed_s.{v.id}": Name(f"fixed time d of {v.short}", "ms", 1e3) for v in _v.VARIANTS},
    "steps_a": Name("steps to target of the first variant", "steps", 1.0),
    "steps_b": Name("steps to target of the second variant", "steps", 1.0),
}


def name(parameter: str) -> Name:
    """The display name of ``parameter``; one not in the table is shown as it is, without a unit."""
    if parameter in NAMES:
        return NAMES[parameter]
    if parameter.startswith("fixed_s."):
        return Name(f"fixed time d of {parameter.split('.', 1)[1]}", "ms", 1e3)
    return Name(parameter.replace("_", " "), "", 1.0)


def label(parameter: str) -> str:
    """``"optics sample rate (GS/s)"``: the name with its unit, for a table's cell or header."""
    n = name(parameter)
    return f"{n.name} ({n.unit})" if n.unit else n.name


def value(parameter: str, x: float, digits: int = 4) -> str:
    """``x`` (SI) in the parameter's display unit: ``"7 GS/s"``."""
    n = name(parameter)
    return f"{float(x) * n.scale:.{digits}g}" + (f" {n.unit}" if n.unit else "")
