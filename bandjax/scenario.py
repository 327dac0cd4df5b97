"""The parameters of a study: hardware, cluster, model, fixed times, energy and measured steps.

A :class:`Scenario` is a frozen PyTree. Its numeric fields are leaves (floats or arrays, SI units,
the unit in the name), so it can be passed through ``jax.jit`` and differentiated with ``jax.grad``.
The measured steps to the target loss are a static table (:class:`Steps`): they are discrete data,
resolved to numbers outside jit.

The reference scenario (model.md section 2) is :func:`reference`. A scenario round-trips through a
TOML file (:func:`save`, :func:`load`) whose values carry their units (``wan = "12.5 GB/s"``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import jax

from . import variants as _variants
from ._io import atomic_write_text
from .units import ScenarioError, format_quantity, parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NEVER = "never"

# Model-size presets: parameter counts.
PRESETS: dict[str, float] = {
    "study": 7_916_736.0,  # the study's model (model.md section 2)
    "gpt2-124m": 124_439_808.0,  # GPT-2 small
    "llama3-8b": 8.03e9,  # Llama-3-8B (model.md section 9)
    "llama3-70b": 70.6e9,  # Llama-3-70B
}


@dataclass(frozen=True)
class Steps:
    """Measured steps to a target loss.

    ``measured`` maps variant id -> steps. ``by_enob`` maps in-transit variant id -> ((enob, steps), ...)
    where steps may be :data:`NEVER` (measured, never reaches the loss). ``hypothesis_from`` names the
    variant whose steps ``band_switch`` takes on the hypothesis basis; on the exact basis it takes
    ``exact_from``'s.
    """

    target_loss: float = 3.158
    measured: tuple[tuple[str, float], ...] = (
        ("adamw", 400.0), ("topk", 400.0), ("band_gpu", 2667.0), ("band_gpu_allreduce", 2667.0))
    by_enob: tuple[tuple[str, tuple[tuple[int, Any], ...]], ...] = (
        ("band_pluggable", ((8, 1800.0), (6, NEVER))),)
    hypothesis_from: str = "band_pluggable"
    exact_from: str = "band_gpu"

    def measured_enobs(self, variant_id: str = "band_pluggable") -> tuple[int, ...]:
        return tuple(sorted(e for e, _ in dict(self.by_enob).get(variant_id, ())))

    def lookup(self, variant_id: str, enob: float, basis: str) -> float:
        """Steps of ``variant_id`` at ``enob`` on ``basis``: a number, inf ("never") or nan (not
        measured)."""
        if basis not in BASES:
            raise ValueError(f"basis = {basis!r} is not known; allowed: {', '.join(BASES)}")
        if variant_id == "band_switch":
            variant_id = self.hypothesis_from if basis == "hypothesis" else self.exact_from
        measured = dict(self.measured)
        if variant_id in measured:
            return float(measured[variant_id])
        table = dict(dict(self.by_enob).get(variant_id, ()))
        if enob in table:
            value = table[enob]
            return math.inf if value == NEVER else float(value)
        return math.nan


BASES = ("hypothesis", "exact")

# Field name -> (TOML section, TOML key, dimension, what it is).
FIELDS: dict[str, tuple[str, str, str, str]] = {
    "params": ("model", "params", "count", "parameters P; dense delta G = dense_bytes_per_param x P"),
    "gpu_compute_s": ("model", "gpu_compute", "time", "GPU forward + backward per step at `params`; scales linearly with P"),
    "tokens_per_worker": ("model", "tokens_per_worker", "count", "tokens per worker per step (only for FLOPs)"),
    "flops_per_param_token": ("model", "flops_per_param_token", "count", "F = this x P x tokens"),
    "dense_bytes_per_param": ("model", "dense_bytes_per_param", "count", "fp32 delta"),
    "workers_per_dc": ("cluster", "workers_per_dc", "count", "n; 2 DCs, N = 2 n"),
    "worker_port_Bps": ("links", "worker_port", "byte_rate", "worker to DC switch"),
    "qsfp_port_Bps": ("links", "qsfp_port", "byte_rate", "pluggable module port"),
    "wan_Bps": ("links", "wan", "byte_rate", "per direction"),
    "band_fraction": ("band", "fraction", "count", "share of transform coefficients in the band"),
    "gpu_band_bits": ("band", "gpu_bits", "count", "bits per band coefficient on the GPU (C, C')"),
    "enob": ("band", "enob", "count", "bits per band coefficient in transit (E, E')"),
    "topk_fraction": ("band", "topk_fraction", "count", "k / P"),
    "topk_bytes_per_value": ("band", "topk_bytes_per_value", "count", "fp32 value + int32 index"),
    "optics_Sps": ("module", "optics", "sample_rate", "one sample per parameter"),
    "fpga_Bps": ("module", "fpga", "byte_rate", "over the dense delta's bytes"),
    "transform_flops_per_param": ("module", "transform_flops_per_param", "count", "5 log2 256"),
    "budget_FLOPs": ("module", "budget", "flop_rate", "module compute budget; 'free' = not charged"),
    "budget_low_FLOPs": ("module", "budget_low", "flop_rate", "[low] end of the budget bracket"),
    "budget_high_FLOPs": ("module", "budget_high", "flop_rate", "[high] end of the budget bracket"),
    "gpu_static_W": ("energy", "gpu_static", "power", "drawn for the whole step"),
    "gpu_J_per_FLOP": ("energy", "gpu_energy_per_flop", "energy_per_flop", ""),
    "link_J_per_bit": ("energy", "link_energy_per_bit", "energy_per_bit", "ports and module ports"),
    "wan_J_per_bit": ("energy", "wan_energy_per_bit", "energy_per_bit", "both directions"),
    "module_W": ("energy", "module_power", "power", "per module"),
    "sync_every_H": ("sync", "every_H", "count", "sync every H steps: communication / H (steps to target assumed unchanged)"),
    "wan_message_B": ("shared_wan", "message_bytes", "count", "the sync's WAN bytes go as messages of this size, one after another (event engine)"),
    "background_B": ("shared_wan", "background_bytes", "count", "size of other jobs' Poisson transfers on each WAN direction (event engine)"),
}
FIXED_SECTION = "fixed_time"  # d_v per variant, calibrated (model.md section 5)


@dataclass(frozen=True)
class Scenario:
    """One study's parameters, SI units. Numeric fields are PyTree leaves; ``steps`` is static."""

    params: Any = PRESETS["study"]
    gpu_compute_s: Any = 0.4918e-3
    tokens_per_worker: Any = 512.0
    flops_per_param_token: Any = 6.0
    dense_bytes_per_param: Any = 4.0
    workers_per_dc: Any = 4.0
    worker_port_Bps: Any = 50e9
    qsfp_port_Bps: Any = 25e9
    wan_Bps: Any = 12.5e9
    band_fraction: Any = 0.25
    gpu_band_bits: Any = 8.0
    enob: Any = 8.0
    topk_fraction: Any = 1 / 16
    topk_bytes_per_value: Any = 8.0
    optics_Sps: Any = 3.5e9
    fpga_Bps: Any = 40e9
    transform_flops_per_param: Any = 40.0
    budget_FLOPs: Any = math.inf
    budget_low_FLOPs: Any = 10e9
    budget_high_FLOPs: Any = 99e9
    gpu_static_W: Any = 97.06
    gpu_J_per_FLOP: Any = 8.507e-12
    link_J_per_bit: Any = 10e-12
    wan_J_per_bit: Any = 50e-12
    module_W: Any = 11.9
    sync_every_H: Any = 1.0
    wan_message_B: Any = 1e6
    background_B: Any = 1e6
    fixed_s: dict = field(default_factory=lambda: {
        "adamw": 0.0998e-3, "topk": 0.0, "band_gpu": 0.0408e-3, "band_gpu_allreduce": 0.1009e-3,
        "band_pluggable": 0.0017e-3, "band_switch": 0.0227e-3})
    steps: Steps = Steps()

    def replace(self, **changes) -> "Scenario":
        return dataclasses.replace(self, **changes)

    def at_model_size(self, params) -> "Scenario":
        """The same hardware with ``params`` parameters: GPU compute scales with P, d does not."""
        return self.replace(params=params, gpu_compute_s=self.gpu_compute_s * params / self.params)


jax.tree_util.register_dataclass(
    Scenario, data_fields=[*FIELDS, "fixed_s"], meta_fields=["steps"])


def reference() -> Scenario:
    """The study's configuration (model.md section 2)."""
    return Scenario()


def budget_value(budget) -> float:
    """A budget label ('free', 'low', 'high' are resolved by :func:`resolve_budget`) or GFLOP/s."""
    if isinstance(budget, str):
        if budget == "free":
            return math.inf
        raise ValueError(f"budget = {budget!r}: expected 'free', 'low', 'high' or GFLOP/s > 0")
    value = float(budget)
    if not value > 0:
        raise ValueError(f"budget = {budget!r}: must be > 0 GFLOP/s, or 'free'")
    return value * 1e9


def resolve_budget(scenario: Scenario, budget) -> float:
    """FLOP/s for a budget given as 'free', 'low', 'high' or a number in GFLOP/s."""
    if budget == "low":
        return float(scenario.budget_low_FLOPs)
    if budget == "high":
        return float(scenario.budget_high_FLOPs)
    return budget_value(budget)


def validate(sc: Scenario) -> Scenario:
    """Check every value; raise :class:`ScenarioError` naming the first bad one."""
    positive = {"params", "gpu_compute_s", "workers_per_dc", "worker_port_Bps", "qsfp_port_Bps",
                "wan_Bps", "band_fraction", "gpu_band_bits", "enob", "topk_fraction",
                "topk_bytes_per_value", "optics_Sps", "fpga_Bps", "budget_FLOPs",
                "budget_low_FLOPs", "budget_high_FLOPs", "dense_bytes_per_param", "sync_every_H",
                "tokens_per_worker", "wan_message_B", "background_B"}
    for name, (section, key, dim, _) in FIELDS.items():
        value = float(getattr(sc, name))
        where = f"[{section}] {key}"
        if math.isnan(value):
            raise ScenarioError(f"{where} = nan: must be a number")
        if name in positive and not value > 0:
            raise ScenarioError(f"{where} = {format_quantity(value, dim)!r}: must be > 0")
        if name not in positive and value < 0:
            raise ScenarioError(f"{where} = {format_quantity(value, dim)!r}: must be >= 0")
        if math.isinf(value) and name != "budget_FLOPs":
            raise ScenarioError(f"{where} = inf: must be finite")
    if float(sc.workers_per_dc) < 1 or not float(sc.workers_per_dc).is_integer():
        raise ScenarioError(f"[cluster] workers_per_dc = {sc.workers_per_dc!r}: must be a whole number >= 1")
    if not float(sc.band_fraction) <= 1:
        raise ScenarioError(f"[band] fraction = {sc.band_fraction!r}: must be in (0, 1]")
    unknown = set(sc.fixed_s) - set(_variants.IDS)
    missing = set(_variants.IDS) - set(sc.fixed_s)
    if unknown or missing:
        raise ScenarioError(f"[{FIXED_SECTION}] keys {sorted(unknown) or sorted(missing)} "
                            f"{'are not variants' if unknown else 'are missing'}; "
                            f"allowed: {', '.join(_variants.IDS)}")
    for vid, d in sc.fixed_s.items():
        if not float(d) >= 0:
            raise ScenarioError(f"[{FIXED_SECTION}] {vid} = {d!r}: must be >= 0 s")
    enobs = sc.steps.measured_enobs()
    if float(sc.enob) not in enobs:
        raise ScenarioError(f"[band] enob = {sc.enob!r}: outside the steps table; measured ENOB: "
                            f"{', '.join(str(e) for e in enobs)}")
    return sc


# --------------------------------------------------------------------------------------- TOML


def to_toml_dict(sc: Scenario) -> dict:
    out: dict[str, dict] = {}
    for name, (section, key, dim, _) in FIELDS.items():
        value = float(getattr(sc, name))
        if name == "budget_FLOPs" and math.isinf(value):
            out.setdefault(section, {})[key] = "free"
        else:
            out.setdefault(section, {})[key] = format_quantity(value, dim)
    out[FIXED_SECTION] = {vid: format_quantity(float(d), "time") for vid, d in sc.fixed_s.items()}
    s = sc.steps
    table: dict[str, Any] = {"target_loss": s.target_loss,
                             "hypothesis_from": s.hypothesis_from, "exact_from": s.exact_from}
    table.update({vid: int(n) if float(n).is_integer() else n for vid, n in s.measured})
    for vid, entries in s.by_enob:
        table[vid] = {str(e): (n if n == NEVER else int(n)) for e, n in entries}
    out["steps"] = table
    return out


def save(sc: Scenario, path: str | os.PathLike) -> None:
    """Write ``sc`` as a TOML file with units (whole or not at all)."""
    import tomli_w

    header = ("# bandjax scenario. Values carry units; a bare number is SI.\n"
              "# [fixed_time] is d per variant, calibrated to the study's recorded step times.\n"
              "# [steps] are measured steps to the target loss; \"never\" = measured, never reaches it.\n")
    atomic_write_text(path, header + tomli_w.dumps(to_toml_dict(validate(sc))))


def from_toml_dict(data: dict) -> Scenario:
    """Build a scenario from a parsed TOML mapping; missing keys take the reference's values."""
    by_key = {(section, key): name for name, (section, key, _, _) in FIELDS.items()}
    sections = {s for s, _ in by_key} | {FIXED_SECTION, "steps"}
    changes: dict[str, Any] = {}
    for section, entries in data.items():
        if section not in sections:
            raise ScenarioError(f"[{section}] is not a known section; allowed: {', '.join(sorted(sections))}")
        if not isinstance(entries, dict):
            raise ScenarioError(f"{section} = {entries!r}: expected a [{section}] table")
        if section in (FIXED_SECTION, "steps"):
            continue
        for key, value in entries.items():
            name = by_key.get((section, key))
            if name is None:
                allowed = sorted(k for s, k in by_key if s == section)
                raise ScenarioError(f"[{section}] {key} is not a known key; allowed: {', '.join(allowed)}")
            if name == "budget_FLOPs" and value == "free":
                changes[name] = math.inf
            else:
                changes[name] = parse(f"[{section}] {key}", value, FIELDS[name][2])
    ref = reference()
    fixed = dict(ref.fixed_s)
    for vid, value in data.get(FIXED_SECTION, {}).items():
        if vid not in _variants.IDS:
            raise ScenarioError(f"[{FIXED_SECTION}] {vid} is not a variant; allowed: {', '.join(_variants.IDS)}")
        fixed[vid] = parse(f"[{FIXED_SECTION}] {vid}", value, "time")
    changes["fixed_s"] = fixed
    if "steps" in data:
        changes["steps"] = _steps_from_toml(data["steps"])
    return validate(ref.replace(**changes))


def _steps_from_toml(table: dict) -> Steps:
    """Steps from a [steps] table; entries it leaves out keep the reference's."""
    ref = Steps()
    measured, by_enob = dict(ref.measured), dict(ref.by_enob)
    target, hyp, exa = ref.target_loss, ref.hypothesis_from, ref.exact_from
    for key, value in table.items():
        where = f"[steps] {key}"
        if key == "target_loss":
            target = parse(where, value, "count")
        elif key in ("hypothesis_from", "exact_from"):
            if value not in _variants.IDS or value == "band_switch":
                raise ScenarioError(f"{where} = {value!r}: must name a variant with its own steps")
            hyp, exa = (value, exa) if key == "hypothesis_from" else (hyp, value)
        elif key not in _variants.IDS:
            raise ScenarioError(f"{where} is not a variant; allowed: {', '.join(_variants.IDS)}")
        elif key == "band_switch":
            raise ScenarioError(f"{where}: band_switch has no steps of its own; it takes "
                                "hypothesis_from's (hypothesis) or exact_from's (exact)")
        elif isinstance(value, dict):
            entries = []
            for enob, steps in value.items():
                try:
                    e = int(enob)
                except ValueError:
                    raise ScenarioError(f"{where}.{enob}: ENOB must be a whole number of bits") from None
                if not 1 <= e <= 32:
                    raise ScenarioError(f"{where}.{enob}: ENOB must be in 1..32 bits")
                entries.append((e, _steps_value(f"{where}.{enob}", steps)))
            by_enob[key] = tuple(sorted(entries, reverse=True))
        else:
            measured[key] = _steps_value(where, value)
    return Steps(target, tuple(measured.items()), tuple(by_enob.items()), hyp, exa)


def _steps_value(where: str, value):
    if value == NEVER:
        return NEVER
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ScenarioError(f"{where} = {value!r}: steps must be a number > 0 or \"never\"")
    return float(value)


def load(path: str | os.PathLike) -> Scenario:
    """Read a scenario TOML file (see :func:`save`); errors name the key, value and what is allowed."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {os.fspath(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"scenario file {os.fspath(path)!r} is not valid TOML: {e}") from None
    return from_toml_dict(data)
