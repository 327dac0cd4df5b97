"""The parameters of a study: hardware, cluster, model, fixed times, energy, variants and steps.

A :class:`Scenario` is a frozen PyTree (registered in :mod:`bandjax._jax`, so this module does not
import jax). Its numeric fields are leaves (floats or arrays, SI units, the unit in the name), so it
can be passed through ``jax.jit`` and differentiated with ``jax.grad``. The variant registry
(:class:`bandjax.variants.Variant` entries) and the measured steps to the target loss
(:class:`Steps`) are static: discrete data, resolved outside jit.

The reference scenario (docs/model.md section 2) is :func:`reference`. A scenario round-trips through a
TOML file (:func:`save`, :func:`load`) whose values carry their units (``wan = "12.5 GB/s"``).
Every value is checked by one function (:func:`check_field`), however it arrives: a file,
:meth:`Scenario.replace` or a sweep.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import variants as _variants
from ._io import atomic_write_text
from ._limits import MAX_LINK_DCS
from .links import Links
from .sites import Sites, _real, check_positive, check_workers
from .units import ScenarioError, _digits, describe, format_quantity, parse, plain, shown
from .variants import NEVER, TOPOLOGIES, Rule, Variant

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# The families a worker's compute time X may straggle by (docs/model.md section 16); the
# ``straggler`` leaf is the index of one, as ``topology`` is of TOPOLOGIES.
STRAGGLERS = ("none", "exponential", "lognormal")

# Model-size presets: parameter counts (synced; every byte term scales with them).
PRESETS: dict[str, float] = {
    "study": 7_916_736.0,  # the study's model (docs/model.md section 2)
    "gpt2-124m": 124_439_808.0,  # GPT-2 small
    "llama3-8b": 8.03e9,  # Llama-3-8B (docs/model.md section 9)
    "llama3-70b": 70.6e9,  # Llama-3-70B
    # Llama-3-405B: 405e9 parameters, dense (Llama Team, "The Llama 3 Herd of Models", 2024,
    # arXiv:2407.21783, Table 3)
    "llama3-405b": 405e9,
    # DeepSeek-V3: 671e9 parameters in all, 37e9 active for each token (DeepSeek-AI, "DeepSeek-V3
    # Technical Report", 2024, arXiv:2412.19437, abstract)
    "deepseek-v3": 671e9,
}
# Active parameters of the mixture-of-experts presets (c and the FLOPs; docs/model.md section 14);
# a preset not named here is dense (active = synced).
ACTIVE_PRESETS: dict[str, float] = {
    "deepseek-v3": 37e9,  # DeepSeek-V3 Technical Report, arXiv:2412.19437: 37B activated a token
}

# The study's GPU: the effective rate that gives its calibrated 0.4918 ms a step at P
# (docs/model.md section 13): R = 6 x 7,916,736 x 512 / 0.4918 ms, about 4.945e13 FLOP/s.
STUDY_GPU_FLOPs = 6.0 * 7_916_736.0 * 512.0 / 0.4918e-3


@dataclass(frozen=True)
class Gpu:
    """A GPU preset: dense BF16 peak (FLOP/s, without sparsity) and board power (W)."""

    peak_FLOPs: float
    board_W: float
    source: str


GPUS: dict[str, Gpu] = {
    "a100": Gpu(312e12, 400.0, "NVIDIA A100 Tensor Core GPU datasheet: A100 SXM, BF16 Tensor Core "
                               "312 TFLOPS dense, max TDP 400 W"),
    "h100": Gpu(989e12, 700.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM, BF16 Tensor Core "
                               "989 TFLOPS dense (1,979 with sparsity), max TDP up to 700 W"),
    "b200": Gpu(2250e12, 1000.0, "NVIDIA HGX B200 datasheet: per B200 GPU, BF16 Tensor Core "
                                 "2.25 PFLOPS dense (4.5 with sparsity), 1,000 W"),
}
DEFAULT_UTILISATION = 0.4  # model-FLOPs utilisation a named GPU preset starts from


@dataclass(frozen=True)
class Steps:
    """Measured steps to a target loss.

    ``measured`` maps variant id -> steps (variants whose steps are ``"flat"``). ``by_enob`` maps
    variant id -> ((enob, steps), ...) (variants whose steps are ``"enob"``); steps may be
    :data:`NEVER` (measured, never reaches the loss). Variants with a rule
    (:class:`bandjax.variants.Rule`) have no entry: their steps come from the rule.
    ``hypothesis_from`` / ``exact_from`` are kept for files that name them; the registry's rules
    are what :meth:`lookup` reads.
    """

    target_loss: float = 3.158
    measured: tuple[tuple[str, float], ...] = (
        ("adamw", 400.0), ("topk", 400.0), ("band_gpu", 2667.0), ("band_gpu_allreduce", 2667.0))
    by_enob: tuple[tuple[str, tuple[tuple[int, Any], ...]], ...] = (
        ("band_pluggable", ((8, 1800.0), (6, NEVER))),)
    hypothesis_from: str = "band_pluggable"
    exact_from: str = "band_gpu"

    def measured_enobs(self, variant_id: str | None = None,
                       registry: tuple[Variant, ...] = _variants.VARIANTS) -> tuple[int, ...]:
        """ENOB with measured steps for ``variant_id`` (a rule's: its sources'; default: every
        variant measured per ENOB)."""
        if variant_id is None:
            ids = [v.id for v in registry if v.steps == "enob"]
        else:
            v = _variants.get(variant_id, registry)
            ids = list(dict.fromkeys(v.rule.hypothesis + v.rule.exact)) if v.rule else [variant_id]
        table = dict(self.by_enob)
        return tuple(sorted({e for vid in ids for e, _ in table.get(vid, ())}))

    def lookup(self, variant_id: str, enob: float, basis: str,
               registry: tuple[Variant, ...] = _variants.VARIANTS) -> float:
        """Steps of ``variant_id`` at ``enob`` on ``basis``: a number, inf ("never") or nan (not
        measured). A rule takes the largest of its sources' steps on that basis."""
        if basis not in BASES:
            raise ValueError(f"basis = {basis!r} is not known; allowed: {', '.join(BASES)}")
        v = _variants.get(variant_id, registry)
        if v.rule is not None:
            # max with NaN first: any source not measured makes the rule not available
            values = [self.lookup(src, enob, basis, registry) for src in v.rule.sources(basis)]
            return math.nan if any(math.isnan(x) for x in values) else max(values)
        measured = dict(self.measured)
        if v.steps == "flat":
            if variant_id not in measured:
                return math.nan
            return math.inf if measured[variant_id] == NEVER else float(measured[variant_id])
        table = dict(dict(self.by_enob).get(variant_id, ()))
        if enob in table:
            value = table[enob]
            return math.inf if value == NEVER else float(value)
        return math.nan


BASES = ("hypothesis", "exact")

# Field name -> (TOML section, TOML key, dimension, what it is). Every one is a PyTree leaf.
FIELDS: dict[str, tuple[str, str, str, str]] = {
    "params": ("model", "params", "count", "parameters P; dense delta G = dense_bytes_per_param x P"),
    "tokens_per_worker": ("model", "tokens_per_worker", "count", "tokens T per worker per step"),
    "flops_per_param_token": ("model", "flops_per_param_token", "count", "F = this x P x T a worker a step"),
    "gpu_peak_FLOPs": ("model", "gpu_peak", "flop_rate", "GPU peak rate; c = F / (peak x utilisation)"),
    "utilisation": ("model", "utilisation", "count", "model-FLOPs utilisation of the GPU peak"),
    "overlap_fraction": ("model", "overlap", "count", "share f of GPU compute that hides communication: "
                         "step = c + max(0, comm - f c)"),
    "dense_bytes_per_param": ("model", "dense_bytes_per_param", "count", "fp32 delta"),
    "dcs": ("cluster", "dcs", "count", "K data centres; N = K n workers"),
    "topology": ("cluster", "topology", "topology", "WAN between DCs: ring (K links) or mesh (K(K-1))"),
    "workers_per_dc": ("cluster", "workers_per_dc", "count", "n"),
    "worker_port_Bps": ("links", "worker_port", "byte_rate", "worker to DC switch"),
    "qsfp_port_Bps": ("links", "qsfp_port", "byte_rate", "pluggable module port"),
    "wan_Bps": ("links", "wan", "byte_rate", "per directed WAN link"),
    "wan_latency_s": ("links", "latency", "time", "one-way WAN latency per hop"),
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
    "wan_J_per_bit": ("energy", "wan_energy_per_bit", "energy_per_bit", "every directed WAN link in use"),
    "module_W": ("energy", "module_power", "power", "per module"),
    "sync_every_H": ("sync", "every_H", "count", "sync every H steps: communication / H (steps to target assumed unchanged)"),
    "wan_message_B": ("shared_wan", "message_bytes", "bytes", "the sync's WAN bytes go as messages of this size, one after another (event engine)"),
    "background_B": ("shared_wan", "background_bytes", "bytes", "size of other jobs' Poisson transfers on each WAN link (event engine)"),
    "straggler": ("stragglers", "family", "straggler", "how a worker's compute time X (mean 1) straggles: "
                  "none, exponential (X = 1 - s + s Exp(1)) or lognormal (ln X ~ Normal(-s^2/2, s^2))"),
    "straggler_s": ("stragglers", "s", "count", "the tail: share s in [0, 1] (exponential) or sigma "
                    ">= 0 (lognormal)"),
    "failure_rate_per_hour": ("failures", "rate", "per_hour", "each worker fails as a Poisson process at this rate (0: nothing fails)"),
    "restart_s": ("failures", "restart", "time", "u0: from a failure to the job (or replica) running again"),
    "checkpoint_write_s": ("failures", "checkpoint_write", "time", "w: one blocking checkpoint write (a job that stops on any failure)"),
    "restore_bytes_per_param": ("failures", "restore_bytes_per_param", "count", "b: bytes a parameter a failed replica copies from a peer over the WAN"),
}
# Fields that are a choice among words: the leaf is the word's index in its tuple.
CHOICES: dict[str, tuple[str, ...]] = {"topology": TOPOLOGIES, "straggler": STRAGGLERS}
# A leaf outside FIELDS: None (the default) means "the same as params", so replacing only params
# keeps a dense model dense. Sets c and the energy's FLOPs; params sets every byte term.
ACTIVE = ("model", "active_params")
FIXED_SECTION = "fixed_time"  # d_v per variant, calibrated (docs/model.md section 5)
VARIANTS_SECTION = "variants"  # a user's variants, one [variants.<id>] table each
# A leaf outside FIELDS: the checkpoint interval tau_c, s; None (the default) means Young's interval
# sqrt(2 w / lambda) (docs/model.md section 17), which follows the failure rate and the write time.
CHECKPOINT = ("failures", "checkpoint_every")
LEAVES = (*FIELDS, "active_params", "checkpoint_every_s", "fixed_s")

# Published fleet failure rates, per GPU an hour (docs/model.md section 17).
FAILURE_RATES: dict[str, float] = {
    # Llama Team, "The Llama 3 Herd of Models", 2024, arXiv:2407.21783, section 3.3.4: 419
    # unexpected interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs
    "llama3": 419.0 / (54.0 * 24.0 * 16384.0),
    # Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
    # 2024, arXiv:2410.21680: 6.50 failures per 1,000 node-days (RSC-1), at 8 GPUs a node
    "rsc1": 6.50 / 1000.0 / 24.0 / 8.0,
}

# What each field allows: (lowest, lowest allowed, highest, highest allowed, whole, inf allowed).
_POSITIVE = (0.0, False, math.inf, False, False, False)
_NONNEGATIVE = (0.0, True, math.inf, False, False, False)
LIMITS: dict[str, tuple] = {
    **{name: _POSITIVE for name in FIELDS},
    "gpu_static_W": _NONNEGATIVE, "gpu_J_per_FLOP": _NONNEGATIVE, "link_J_per_bit": _NONNEGATIVE,
    "wan_J_per_bit": _NONNEGATIVE, "module_W": _NONNEGATIVE, "transform_flops_per_param": _NONNEGATIVE,
    "flops_per_param_token": _NONNEGATIVE, "wan_latency_s": _NONNEGATIVE,
    "budget_FLOPs": (0.0, False, math.inf, True, False, True),
    "band_fraction": (0.0, False, 1.0, True, False, False),
    "topk_fraction": (0.0, False, 1.0, True, False, False),  # k / P: at most every value
    "utilisation": (0.0, False, 1.0, True, False, False),
    "overlap_fraction": (0.0, True, 1.0, True, False, False),
    "workers_per_dc": (1.0, True, math.inf, False, True, False),
    "dcs": (2.0, True, math.inf, False, True, False),
    "sync_every_H": (1.0, True, math.inf, False, True, False),
    "topology": (0.0, True, 1.0, True, True, False),
    "straggler": (0.0, True, float(len(STRAGGLERS) - 1), True, True, False),
    "straggler_s": _NONNEGATIVE,
    "failure_rate_per_hour": _NONNEGATIVE, "restart_s": _NONNEGATIVE, "checkpoint_write_s": _NONNEGATIVE,
}


MAGNITUDES = (1e-30, 1e30)
"""The least size of a field that must be > 0 (a rate or a share the closed forms divide by) and
the greatest of any field, in SI units (B/s, s, FLOP/s, J, ...): within them every product and
quotient the closed forms take stays a finite 64-bit float (a bandwidth of 1e-311 B/s made every
step inf s), and every real cluster is far inside. A field that may be 0 (an overlap, a latency)
is never a divisor, and any size below the greatest is allowed for it."""


def _where(name: str) -> str:
    section, key, _, _ = FIELDS[name]
    return f"[{section}] {key}"


def _shown(name: str, value: float):
    dim = FIELDS[name][2]
    if dim in CHOICES:
        words = CHOICES[dim]
        return words[int(value)] if value in range(len(words)) else value
    return shown(value, dim)


def choice_index(name: str, value):
    """A choice field's leaf from its word (``"mesh"`` -> 1.0); any other value as it is (checked
    by :func:`check_field`). The error names the field, the word and the words allowed."""
    if not isinstance(value, str):
        return value
    words = CHOICES[FIELDS[name][2]]
    if value not in words:
        raise ScenarioError(f"{_where(name)} = {value!r} is not known; allowed: {', '.join(words)}")
    return float(words.index(value))


def allowed_text(name: str) -> str:
    """What ``name`` allows, in words and the file's units."""
    lo, lo_ok, hi, hi_ok, whole, inf_ok = LIMITS[name]
    dim = FIELDS[name][2]
    if dim in CHOICES:
        return f"one of {', '.join(repr(t) for t in CHOICES[dim])}"
    unit = format_quantity(1.0, dim)
    unit = unit.split(" ", 1)[1] if isinstance(unit, str) else ""
    kind = "a whole number " if whole else ""
    if math.isinf(hi):
        text = f"{kind}{'>=' if lo_ok else '>'} {plain(lo)}"
    else:
        text = f"{kind}in {'[' if lo_ok else '('}{plain(lo)}, {plain(hi)}{']' if hi_ok else ')'}"
    text += f" {unit}" if unit else ""
    return text + (" or 'free'" if inf_ok else "")


def check_field(name: str, value, *, whole: bool = True) -> None:
    """Raise :class:`ScenarioError` unless every element of ``value`` is allowed for field ``name``.

    The one check of a field, whichever way it arrives (a file, :meth:`Scenario.replace`, a sweep).
    The message names the file key, the value in the file's units and what is allowed. Values that
    are not concrete (jax tracers or arrays inside jit) are not checked. ``whole=False`` lets the
    counts that must be whole in a file or a sweep (n, K) take any value in their range:
    :meth:`Scenario.replace` does, so that derivatives in n can be checked by finite differences.
    """
    # the allowed text is formatted only for a message: a sweep checks its fields on every call
    x = _numbers(_where(name), value, lambda: f"a number, {allowed_text(name)}")
    if x is None:
        return
    lo, lo_ok, hi, hi_ok, must_be_whole, inf_ok = LIMITS[name]
    must_be_whole = must_be_whole and (whole or FIELDS[name][2] in CHOICES)
    # comparisons with NaN are False (no warning): a NaN fails the range tests
    good = (x >= lo) if lo_ok else (x > lo)
    good &= ((x <= hi) if hi_ok else (x < hi)) | ((x == math.inf) if inf_ok else False)
    finite = np.isfinite(x)
    good &= (finite | (x == math.inf)) if inf_ok else finite
    if must_be_whole:
        good &= finite & (x == np.round(x))
    if not np.all(good):  # one vectorised test; the first bad value is named
        bad = float(x[np.argmin(good)])
        text = "nan" if math.isnan(bad) else ("inf" if math.isinf(bad) else _shown(name, bad))
        raise ScenarioError(f"{_where(name)} = {text!r}: must be {allowed_text(name)}")
    # every value is >= lo >= 0 here; a value that may be 0 is never a divisor: only one that
    # must be > 0 has the least size
    least = 0.0 if lo_ok else MAGNITUDES[0]
    outside = (x > MAGNITUDES[1]) & finite
    if least:
        outside |= x < least
    if outside.any():
        bad = float(x[np.argmax(outside)])
        dim = FIELDS[name][2]
        span = (f"{describe(MAGNITUDES[0], dim, 1)} to {describe(MAGNITUDES[1], dim, 1)}" if least
                else f"at most {describe(MAGNITUDES[1], dim, 1)}")
        raise ScenarioError(f"{_where(name)} = {_shown(name, bad)!r}: outside the magnitudes bandjax "
                            f"computes with, {span}")


def _numbers(where: str, value, allowed):
    """``value`` as a flat float array, or None where it is not concrete (a jax array or tracer:
    not checked here); a boolean, text, None, a complex number, an empty array or anything else
    that is not real numbers raises :class:`ScenarioError` naming ``where``, the value and
    ``allowed`` (text, or a function giving it)."""
    if callable(allowed):
        try:
            return _numbers(where, value, "")
        except ScenarioError:
            return _numbers(where, value, allowed())
    if type(value).__module__.startswith("jax"):
        return None
    if isinstance(value, (bool, np.bool_)):
        raise ScenarioError(f"{where} = {value!r}: expected a number, not a boolean")
    if not isinstance(value, (int, float, np.ndarray, np.number, list, tuple)):
        raise ScenarioError(f"{where} = {value!r}: expected {allowed}, not {type(value).__name__}")
    try:
        x = np.asarray(value)
    except (ValueError, TypeError):  # ragged lists
        raise ScenarioError(f"{where} = {value!r}: expected {allowed}") from None
    if x.dtype.kind not in "iuf":
        what = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "text"}.get(x.dtype.kind, "not numbers")
        raise ScenarioError(f"{where} = {value!r}: expected {allowed}, got {what}")
    if x.size == 0:
        raise ScenarioError(f"{where} = {value!r}: empty; expected {allowed}")
    return x.astype(float).ravel()


numbers = _numbers  # for the other entry points' arguments (the same refusals, the same words)


def _check_active(value) -> None:
    """active_params: > 0 parameters (None: the same as params)."""
    x = _numbers("[model] active_params", value, "a number > 0 parameters")
    if x is None:
        return  # a tracer: not checked
    good = np.isfinite(x) & (x > 0)
    if not np.all(good):
        raise ScenarioError(f"[model] active_params = {float(x[np.argmin(good)])!r}: must be > 0 "
                            "parameters (or left out: the same as params)")


def _check_checkpoint(value) -> None:
    """checkpoint_every_s: a finite time > 0 s (None: Young's interval)."""
    x = _numbers("[failures] checkpoint_every", value, "a time > 0 s, or 'young'")
    if x is None:
        return  # a tracer: not checked
    good = np.isfinite(x) & (x > 0)
    if not np.all(good):
        raise ScenarioError(f"[failures] checkpoint_every = {_time_text(float(x[np.argmin(good)]))}: "
                            "must be a finite time > 0 s (or 'young', the default: Young's interval "
                            "sqrt(2 w / lambda))")
    sane = (x >= MAGNITUDES[0]) & (x <= MAGNITUDES[1])
    if not np.all(sane):
        raise ScenarioError(f"[failures] checkpoint_every = {_time_text(float(x[np.argmin(sane)]))}: "
                            f"outside the magnitudes bandjax computes with, {MAGNITUDES[0]:g} s to "
                            f"{MAGNITUDES[1]:g} s")


def failure_rate(value) -> float:
    """A failure rate per worker an hour: a number (1/h) or a preset name of
    :data:`FAILURE_RATES`."""
    if isinstance(value, str):
        if value not in FAILURE_RATES:
            raise ScenarioError(f"[failures] rate = {value!r} is not a preset; allowed: a rate "
                                f"per worker an hour ('2e-5 /h') or one of {', '.join(FAILURE_RATES)}")
        return FAILURE_RATES[value]
    check_field("failure_rate_per_hour", value)
    return float(value)


def _fixed_default() -> dict:
    return {v.id: v.d_s for v in _variants.VARIANTS}


@dataclass(frozen=True)
class Scenario:
    """One study's parameters, SI units. Numeric fields are PyTree leaves; ``steps`` and
    ``variants`` (the registry, :data:`bandjax.variants.VARIANTS` by default) are static.
    ``links`` (:class:`bandjax.links.Links`) gives each directed WAN link its own bandwidth
    and latency relative to ``wan_Bps`` (then the slowest link's) and ``wan_latency_s`` (the
    longest link's); None is K equal links. :meth:`with_links` sets it. Under jit a table is
    static, or data (its tables leaves, its names static) where held as
    :class:`bandjax.links.DataLinks` (:func:`bandjax.links.as_data`). ``sites`` (static,
    :class:`bandjax.sites.Sites`) gives each DC its own workers and GPU compute relative to c;
    then ``dcs`` is K and ``workers_per_dc`` the mean N / K. :meth:`with_sites` sets it.

    GPU compute per step is not a field: c = flops_per_param_token x P x T / (gpu_peak_FLOPs x
    utilisation) (:attr:`gpu_compute_s`). The study's GPU is its calibrated effective rate
    (:data:`STUDY_GPU_FLOPs`, utilisation 1), so c = 0.4918 ms at its P.

    Choosing a GPU preset (:meth:`with_gpu`) sets the peak and the utilisation, and its board power
    replaces ``gpu_static_W`` with ``gpu_J_per_FLOP`` set to 0: the board power is what the GPU
    draws working, its FLOPs included (as a module's power covers its FLOPs).
    """

    params: Any = PRESETS["study"]
    tokens_per_worker: Any = 512.0
    flops_per_param_token: Any = 6.0
    gpu_peak_FLOPs: Any = STUDY_GPU_FLOPs
    utilisation: Any = 1.0
    overlap_fraction: Any = 0.0
    dense_bytes_per_param: Any = 4.0
    dcs: Any = 2.0
    topology: Any = 0.0
    workers_per_dc: Any = 4.0
    worker_port_Bps: Any = 50e9
    qsfp_port_Bps: Any = 25e9
    wan_Bps: Any = 12.5e9
    wan_latency_s: Any = 0.0
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
    straggler: Any = 0.0  # none (STRAGGLERS)
    straggler_s: Any = 0.0
    failure_rate_per_hour: Any = 0.0
    restart_s: Any = 600.0
    checkpoint_write_s: Any = 60.0
    restore_bytes_per_param: Any = 4.0
    active_params: Any = None  # None: the same as params (a dense model)
    checkpoint_every_s: Any = None  # None: Young's interval (bandjax.failures)
    fixed_s: dict = field(default_factory=_fixed_default)
    steps: Steps = Steps()
    variants: tuple[Variant, ...] = _variants.VARIANTS
    uncertain: tuple = ()  # ((parameter, distribution), ...): bandjax.distributions, static
    links: Links | None = None  # per-link values (docs/model.md section 15); None: equal
    sites: Sites | None = None  # per-DC workers and compute (section 16), static; None: equal

    @property
    def gpu_compute_s(self):
        """GPU compute per step, s: c = flops_per_param_token x P x T / (peak x utilisation)."""
        return (self.flops_per_param_token * self.active * self.tokens_per_worker
                / (self.gpu_peak_FLOPs * self.utilisation))

    @property
    def active(self):
        """Active parameters: ``active_params``, or ``params`` where it is None (a dense model)."""
        return self.params if self.active_params is None else self.active_params

    @property
    def ids(self) -> tuple[str, ...]:
        """The registry's variant ids, in the order of every per-variant axis."""
        return tuple(v.id for v in self.variants)

    def variant(self, variant_id: str) -> Variant:
        return _variants.get(variant_id, self.variants)

    def replace(self, **changes) -> "Scenario":
        """A copy with ``changes``; each concrete value is checked (:func:`check_field`).

        ``gpu_compute_s=c`` (for callers that set c directly) sets the GPU peak that gives c at
        the new P and utilisation. Counts that a file or a sweep requires whole (n, K) may take
        any value in their range here (a continuous extension, for derivatives).
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)} - {"gpu_compute_s"})
        if unknown:
            raise ScenarioError(f"Scenario.replace: {', '.join(unknown)} is not a scenario field; "
                                f"allowed: {', '.join(f.name for f in dataclasses.fields(self))}, "
                                "gpu_compute_s")
        if "gpu_compute_s" in changes:
            c = changes.pop("gpu_compute_s")
            cx = _numbers("[model] gpu_compute", c, "a time > 0 s")
            if cx is not None and not np.all(np.isfinite(cx) & (cx > 0)):
                raise ScenarioError(f"[model] gpu_compute = {_time_text(c)}: must be a finite time > 0 s")
            get = lambda k: changes.get(k, getattr(self, k))  # noqa: E731
            active = get("active_params")
            changes["gpu_peak_FLOPs"] = (get("flops_per_param_token")
                                         * (get("params") if active is None else active)
                                         * get("tokens_per_worker") / (c * get("utilisation")))
        for name in [k for k in changes if k in FIELDS and FIELDS[k][2] in CHOICES]:
            changes[name] = choice_index(name, changes[name])  # a word ("mesh"): the leaf its index
        links = changes.get("links", self.links)
        if "dcs" in changes:
            check_dcs_of_links(changes["dcs"], links)
        if "links" in changes and links is not None:
            changes["dcs"] = float(links.K)
        sites = changes.get("sites", self.sites)
        if sites is not None:
            _check_fixed_by_sites(sites, changes, links)
            changes["dcs"], changes["workers_per_dc"] = float(sites.K), sites.N / sites.K
        for name, value in changes.items():
            if name in LIMITS:
                check_field(name, value, whole=False)
                if isinstance(value, (list, tuple)):  # a leaf is a number or an array, not a list
                    changes[name] = np.asarray(value, dtype=float)
        if changes.get("active_params") is not None:
            _check_active(changes["active_params"])
        if changes.get("checkpoint_every_s") is not None:
            _check_checkpoint(changes["checkpoint_every_s"])
        if "variants" in changes:
            _check_variants(changes["variants"])
        if "steps" in changes and not isinstance(changes["steps"], Steps):
            raise ScenarioError(f"steps = {changes['steps']!r}: expected a bandjax.Steps "
                                "(measured steps to the target loss)")
        out = dataclasses.replace(self, **changes)
        if "fixed_s" in changes or "variants" in changes:
            _check_fixed(out)
        _check_relations(out)
        return out

    def with_links(self, bandwidth, latency=None, names=None) -> "Scenario":
        """This scenario with a bandwidth and a latency per directed link (docs/model.md
        section 15).

        Args:
          bandwidth: (K, K) B_ij of the link from DC i to DC j, B/s (the diagonal is ignored).
          latency: (K, K) one-way l_ij, s (the diagonal is ignored); None: all 0.
          names: K DC names, in ring order (the ring is i -> i+1 mod K); default ``dc0``...

        Sets ``links``, ``dcs`` = K, ``wan_Bps`` = the slowest link's bandwidth and
        ``wan_latency_s`` = the longest link's latency. Symmetric links are a symmetric table.
        """
        links, wan_Bps, latency_s = Links.from_absolute(bandwidth, latency, names)
        if self.sites is not None and self.sites.names != links.names:
            raise ScenarioError(f"with_links names = {list(links.names)!r}: this scenario's sites "
                                f"are {list(self.sites.names)!r}; the links table must name the "
                                "same DCs in the same order (or drop the sites first)")
        check_field("wan_Bps", wan_Bps)
        check_field("wan_latency_s", latency_s)
        return dataclasses.replace(self, links=links, dcs=float(links.K), wan_Bps=wan_Bps,
                                   wan_latency_s=latency_s)

    def with_sites(self, names=None, gpu=None, utilisation=None, workers=None,
                   gpu_compute_s=None) -> "Scenario":
        """This scenario with each DC's own GPU compute and workers (docs/model.md section 16).

        Every argument is optional, a list of K values (K from ``names``, else the links table,
        else ``dcs``); a None entry (or argument) is the scenario's own value for that DC.

        Args:
          names: the K DCs' names; with per-link values they must be the links table's, in its
            order (default: the table's, or ``dc0``...).
          gpu: per DC, a preset of :data:`GPUS`, ``"study"`` (the study's calibrated rate) or a
            peak in FLOP/s.
          utilisation: per DC, the model-FLOPs utilisation in (0, 1] (default: 0.4 for a named
            preset, 1 for ``"study"``, else the scenario's).
          workers: per DC, n_i, whole, >= 1 (default: the scenario's n).
          gpu_compute_s: per DC, c_i in s, directly (then neither ``gpu`` nor ``utilisation`` for
            that DC).

        c_i = flops_per_param_token x P_active x T / (peak_i x utilisation_i). The scenario's GPU
        becomes the slowest site's (its c is c_max, so the slowest site's ``compute_rel`` is 1),
        ``dcs`` K and ``workers_per_dc`` the mean N / K. Board power and energy per FLOP stay the
        scenario's (one GPU's energy for every site).
        """
        from .links import default_names

        def listed(arg, what, K):
            if arg is None:
                return [None] * K
            if isinstance(arg, (str, bytes, dict)) or not isinstance(arg, (list, tuple, np.ndarray)):
                raise ScenarioError(f"with_sites {what} = {arg!r}: expected a list of {K} values, "
                                    "one per DC")
            if len(arg) != K:
                raise ScenarioError(f"with_sites {what} = {list(arg)!r}: {len(arg)} values for {K} "
                                    "DCs; give one per DC")
            return list(arg)

        if names is not None:
            if isinstance(names, str) or not isinstance(names, (list, tuple)):
                raise ScenarioError(f"with_sites names = {names!r}: expected a list of DC names")
            names = tuple(names)
            if self.links is not None:
                unknown = [n for n in names if n not in self.links.names]
                if unknown:
                    raise ScenarioError(f"with_sites names: {', '.join(map(repr, unknown))} not in "
                                        f"the links table; allowed: {', '.join(self.links.names)}")
            K = len(names)
        elif self.links is not None:
            names, K = self.links.names, self.links.K
        elif self.sites is not None:
            names, K = self.sites.names, self.sites.K
        else:
            K = int(float(self.dcs))
            names = default_names(K)
        gpus = listed(gpu, "gpu", K)
        utils = listed(utilisation, "utilisation", K)
        ns = listed(workers, "workers", K)
        cs = listed(gpu_compute_s, "gpu_compute_s", K)
        work = float(self.flops_per_param_token) * float(self.active) * float(self.tokens_per_worker)
        rates, computes = [], []
        for i in range(K):
            where = f"[[sites]] {names[i]!r}" if i < len(names) else f"[[sites]] {i}"
            g, u, c = gpus[i], utils[i], cs[i]
            if c is not None:
                if g is not None or u is not None:
                    raise ScenarioError(f"{where}: gpu_compute = {c!r} with gpu = {g!r} / "
                                        f"utilisation = {u!r}; give the compute, or the GPU and "
                                        "its utilisation, not both")
                computes.append(check_positive(c, where, "gpu_compute", " s"))
                rates.append(None)
                continue
            if g is None:
                peak, default_u = float(self.gpu_peak_FLOPs), float(self.utilisation)
            elif isinstance(g, str):
                if g == "study":
                    peak, default_u = STUDY_GPU_FLOPs, 1.0
                elif g in GPUS:
                    peak, default_u = GPUS[g].peak_FLOPs, DEFAULT_UTILISATION
                else:
                    raise ScenarioError(f"{where} gpu = {g!r} is not a preset; allowed: "
                                        f"{', '.join(GPUS)}, study, or a peak in FLOP/s")
            else:
                peak = check_positive(g, where, "gpu", " FLOP/s (a peak) or a preset name")
                default_u = float(self.utilisation)
            if u is None:
                u = default_u
            elif not _real(u) or not (0 < float(u) <= 1):
                raise ScenarioError(f"{where} utilisation = {u!r}: must be a number in (0, 1]")
            rates.append((peak, float(u)))
            computes.append(check_positive(work / (peak * float(u)), where, "gpu_compute", " s"))
        ns = [self.workers_per_dc if n is None else n for n in ns]
        ns = [check_workers(n, f"[[sites]] {names[i]!r}" if i < len(names) else f"[[sites]] {i}")
              for i, n in enumerate(ns)]
        slowest = int(np.argmax(computes))
        top = computes[slowest]
        sites = Sites(names, tuple(ns), tuple(c / top for c in computes))
        if rates[slowest] is None:
            base = self.replace(sites=None, gpu_compute_s=top)
        else:
            base = self.replace(sites=None, gpu_peak_FLOPs=rates[slowest][0],
                                utilisation=rates[slowest][1])
        if self.links is not None and sites.names != self.links.names:
            raise ScenarioError(f"with_sites names = {list(sites.names)!r}: must be the links "
                                f"table's DCs in its order, {list(self.links.names)!r}")
        return base.replace(sites=sites)

    def without_site(self, name: str) -> "Scenario":
        """This scenario less DC ``name``: K - 1 DCs, its links row and column removed where the
        scenario has per-link values (the rest keep theirs; ``wan_Bps`` and ``wan_latency_s``
        follow the new slowest and longest links). Refused below 2 DCs. Equal sites are first
        written as a table (``sites``) of the scenario's n and c."""
        from .links import names_of

        sites = self.sites
        if sites is None:
            K = int(float(self.dcs))
            sites = Sites(names_of(self), (float(self.workers_per_dc),) * K, (1.0,) * K)
        out = dataclasses.replace(self, sites=None)
        less = sites.without(name)  # an unknown name or too few DCs: refused before the cut
        if self.links is not None:
            B, L, names = self.link_values()
            keep = [k for k in range(len(names)) if names[k] != name]
            out = out.with_links(np.nan_to_num(B[np.ix_(keep, keep)], nan=1.0),
                                 np.nan_to_num(L[np.ix_(keep, keep)], nan=0.0),
                                 [names[k] for k in keep])
        return out.replace(sites=less)

    def link_values(self) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """(bandwidth B/s, latency s, names): the absolute K x K tables of a scenario point,
        diagonal NaN (equal links when ``links`` is None)."""
        from .links import default_names

        K = int(float(self.dcs))
        if self.links is None:
            B, L = np.full((K, K), float(self.wan_Bps)), np.full((K, K), float(self.wan_latency_s))
            np.fill_diagonal(B, np.nan)
            np.fill_diagonal(L, np.nan)
            return B, L, default_names(K)
        return (self.links.bandwidth_Bps(self.wan_Bps), self.links.latency_s(self.wan_latency_s),
                self.links.names)

    def with_link(self, source: str, target: str, *, bandwidth=None, latency=None,
                  symmetric: bool = False) -> "Scenario":
        """This scenario with one directed link changed ("what if this link were faster"):
        the link ``source`` -> ``target`` (DC names) gets ``bandwidth`` (B/s) and/or ``latency``
        (s); ``symmetric`` changes ``target`` -> ``source`` too. Equal links (``links`` None) are
        first written as a table named ``dc0``...; ``wan_Bps`` and ``wan_latency_s`` follow the
        new slowest and longest links."""
        from .links import link_number

        B, L, names = self.link_values()
        if source not in names or target not in names or source == target:
            raise ScenarioError(f"link {source!r} -> {target!r} is not a link; DCs: {', '.join(names)}")
        where = f"with_link({source!r}, {target!r})"
        bandwidth = None if bandwidth is None else link_number(f"{where} bandwidth", bandwidth)
        latency = None if latency is None else link_number(f"{where} latency", latency)
        i, j = names.index(source), names.index(target)
        for a, b in ((i, j), (j, i)) if symmetric else ((i, j),):
            if bandwidth is not None:
                B[a, b] = bandwidth
            if latency is not None:
                L[a, b] = latency
        # only the diagonal is filled (it means nothing): a NaN given for a link is refused there
        np.fill_diagonal(B, 1.0)
        np.fill_diagonal(L, 0.0)
        return self.with_links(B, L, names)

    def with_variants(self, variants, *, steps=None) -> "Scenario":
        """This scenario with each of ``variants`` added (or replaced, by id), e.g.
        :data:`bandjax.variants.METHODS`; ``steps`` optionally maps id -> measured steps (the
        rest are not measured)."""
        sc = self
        for v in variants:
            sc = sc.with_variant(v, steps=(steps or {}).get(v.id))
        return sc

    def at_preset(self, name: str) -> "Scenario":
        """The model preset ``name`` (:data:`PRESETS`): its parameters, and its active ones where
        it is a mixture of experts (:data:`ACTIVE_PRESETS`; else dense)."""
        if name not in PRESETS:
            raise ScenarioError(f"[model] preset = {name!r} is not known; allowed: {', '.join(PRESETS)}")
        return self.replace(params=PRESETS[name], active_params=ACTIVE_PRESETS.get(name))

    def at_model_size(self, params) -> "Scenario":
        """The same hardware with ``params`` parameters: GPU compute scales with P, d does not."""
        return self.replace(params=params)

    def with_gpu(self, name: str, utilisation=None) -> "Scenario":
        """The GPU preset ``name`` (:data:`GPUS`): its peak, board power as ``gpu_static_W``
        (``gpu_J_per_FLOP`` 0, see the class docstring), and ``utilisation`` (default
        :data:`DEFAULT_UTILISATION`)."""
        if name not in GPUS:
            raise ScenarioError(f"[model] gpu = {name!r} is not a preset; allowed: {', '.join(GPUS)}")
        g = GPUS[name]
        return self.replace(gpu_peak_FLOPs=g.peak_FLOPs, gpu_static_W=g.board_W, gpu_J_per_FLOP=0.0,
                            utilisation=DEFAULT_UTILISATION if utilisation is None else utilisation)

    def with_variant(self, v: Variant, *, d_s=None, steps=None) -> "Scenario":
        """This scenario with variant ``v`` added (or replaced, by id).

        Args:
          v: the variant.
          d_s: its fixed time d, s (default ``v.d_s``); a leaf like every other d.
          steps: its measured steps: a number or ``"never"`` (``v.steps == "flat"``), or a mapping
            ENOB -> steps (``"enob"``); none for a variant with a rule.
        """
        # a variant of the same id is replaced where it stands (the variant axis keeps its order)
        registry = (tuple(v if u.id == v.id else u for u in self.variants) if v.id in self.ids
                    else self.variants + (v,))
        _variants.check_registry(registry, added=v)
        check_methods((v,), self.sync_every_H)
        fixed = {**self.fixed_s, v.id: v.d_s if d_s is None else d_s}
        _check_fixed(dataclasses.replace(self, variants=registry, fixed_s=fixed))
        s = self.steps
        measured = dict(s.measured)
        by_enob = dict(s.by_enob)
        measured.pop(v.id, None)
        by_enob.pop(v.id, None)
        if steps is not None:
            if v.steps == "rule":
                raise ScenarioError(f"variant {v.id!r} takes its steps from a rule; give no steps")
            if isinstance(steps, dict):
                by_enob[v.id] = tuple(sorted(((int(e), _steps_value(f"[steps] {v.id}.{e}", n))
                                              for e, n in steps.items()), reverse=True))
            else:
                measured[v.id] = _steps_value(f"[steps] {v.id}", steps)
        new_steps = dataclasses.replace(s, measured=tuple(measured.items()), by_enob=tuple(by_enob.items()))
        return dataclasses.replace(self, variants=registry, fixed_s=fixed, steps=new_steps)

    def steps_of(self, variant_id: str, enob=None, basis: str = "hypothesis") -> float:
        """Steps to target of ``variant_id`` (:meth:`Steps.lookup` over this registry)."""
        enob = float(self.enob) if enob is None else float(enob)
        return self.steps.lookup(variant_id, enob, basis, self.variants)


def reference() -> Scenario:
    """The study's configuration (docs/model.md section 2)."""
    return Scenario()


def budget_value(budget) -> float:
    """A budget label ('free', 'low', 'high' are resolved by :func:`resolve_budget`) or GFLOP/s."""
    if isinstance(budget, str):
        if budget == "free":
            return math.inf
        raise ValueError(f"budget = {budget!r}: expected 'free', 'low', 'high' or GFLOP/s > 0")
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, float, np.integer, np.floating)):
        raise ValueError(f"budget = {budget!r}: expected 'free', 'low', 'high' or a number of "
                         "GFLOP/s > 0")
    try:
        value = float(budget)
    except OverflowError:  # an integer past the largest float
        raise ValueError(f"budget = {_digits(budget)}: too large for a 64-bit float; give 'free' "
                         "for no bound") from None
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


def _time_text(value) -> str:
    """A time as typed for a message: in ms where it is a plain number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return repr(shown(float(value), "time"))
    return repr(value)


def _check_fixed_by_sites(sites, changes: dict, links) -> None:
    """With per-DC sites, K and the mean n come from the table: a concrete ``dcs`` or
    ``workers_per_dc`` that disagrees with it is refused (a traced one, a derivative over every
    field at once, is not checked); a links table must name the same DCs in the same order."""
    if not isinstance(sites, Sites):
        raise ScenarioError(f"sites = {sites!r}: expected a bandjax.Sites (or None)")
    for name, value in (("dcs", float(sites.K)), ("workers_per_dc", sites.N / sites.K)):
        if name not in changes:
            continue
        x = changes[name]
        concrete = isinstance(x, (int, float, np.ndarray, np.number, list, tuple))
        if concrete and not np.allclose(np.asarray(x, dtype=float), value, rtol=1e-12, atol=0.0):
            raise ScenarioError(
                f"{_where(name)} = {x!r}: this scenario has per-site values for {sites.K} DCs "
                f"({', '.join(sites.names)}, workers {', '.join(map(plain, sites.workers))}), "
                f"so {'K' if name == 'dcs' else 'n (the mean N / K)'} comes from its sites table; "
                "give new sites with with_sites(...) instead")
    if links is not None and links.names != sites.names:
        raise ScenarioError(f"sites names = {list(sites.names)!r}: the links table names "
                            f"{list(links.names)!r}; both must name the same DCs in the same order")


def _check_variants(registry) -> None:
    if not (isinstance(registry, tuple) and all(isinstance(v, Variant) for v in registry)):
        raise ScenarioError(f"variants = {registry!r}: expected a tuple of bandjax.Variant")
    try:
        _variants.check_registry(registry)
    except ValueError as e:
        raise ScenarioError(f"[{VARIANTS_SECTION}] {e}") from None


def _check_fixed(sc: Scenario) -> None:
    """fixed_s: one d per variant of the registry, each a finite time >= 0 s."""
    if not isinstance(sc.fixed_s, dict):
        raise ScenarioError(f"fixed_s = {sc.fixed_s!r}: expected a mapping variant id -> d, s")
    ids = sc.ids
    unknown = set(sc.fixed_s) - set(ids)
    missing = set(ids) - set(sc.fixed_s)
    if unknown or missing:
        raise ScenarioError(f"[{FIXED_SECTION}] keys {sorted(unknown) or sorted(missing)} "
                            f"{'are not variants' if unknown else 'are missing'}; "
                            f"allowed: {', '.join(ids)}")
    check_dcs_of_links(sc.dcs, sc.links)
    for vid, d in sc.fixed_s.items():
        x = _numbers(f"[{FIXED_SECTION}] {vid}", d, "a time >= 0 s")
        if x is not None and not np.all(np.isfinite(x) & (x >= 0)):
            bad = float(x[np.argmin(np.isfinite(x) & (x >= 0))])
            raise ScenarioError(f"[{FIXED_SECTION}] {vid} = {_time_text(bad)}: must be a finite "
                                "time >= 0 s")


def check_dcs_of_links(dcs, links) -> None:
    """With per-link values (``links`` not None) K comes from the table: ``dcs`` must equal its
    number of DCs, wherever dcs is given (replace, a measurement row). A traced K (a derivative
    over every field at once) is not checked, as :func:`check_field`."""
    if links is None:
        return
    x = _numbers("[cluster] dcs", dcs, "a whole number >= 2")
    if x is not None and not np.all(x == links.K):
        raise ScenarioError(
            f"[cluster] dcs = {dcs!r}: this scenario has per-link values for {links.K} DCs "
            f"({', '.join(links.names)}), so K comes from its links table; give a new table with "
            "with_links(...) instead of changing dcs")


def _concrete_floats(*values):
    """The values as float arrays, or None if any is not concrete (a jax array or tracer)."""
    if any(type(v).__module__.startswith("jax") for v in values):
        return None
    return [np.asarray(v, dtype=float) for v in values]


def check_overrides(sc: Scenario, leaves: dict) -> None:
    """Raise where ``sc.replace(**leaves)`` would, for a sweep's overrides, whose every field
    :func:`bandjax.sweepargs.parse` checked already with :func:`check_field` (and where it refused
    ``dcs`` beside per-link values): only what holds between fields is checked again here, on
    ``sc`` with the overrides where they touch a field of :data:`RELATED_FIELDS`, else on ``sc``
    as it is. A new sweep's overrides were checked twice before: at 1e5 cells over a new
    bandwidth axis, the second check took 20 of the 288 us of its own CPU (warm, the pass left
    out)."""
    if leaves.get("active_params") is not None:
        _check_active(leaves["active_params"])
    _check_relations(sc if RELATED_FIELDS.isdisjoint(leaves) else dataclasses.replace(sc, **leaves))


RELATED_FIELDS = frozenset({"budget_low_FLOPs", "budget_high_FLOPs", "params",
                            "dense_bytes_per_param", "topk_bytes_per_value", "straggler",
                            "straggler_s", "sync_every_H"})
"""The numeric fields that :func:`_check_relations` reads (besides the variants, which no sweep
overrides)."""


def _check_relations(sc: Scenario) -> None:
    """What holds between fields: budget_low <= budget_high, the byte counts derived from the
    parameters finite (params = 1e308 would make the dense delta inf bytes), an exponential
    straggler's tail share at most 1 (at every point of a sweep of either), and each variant's
    delay and fragments within the scenario's H where it takes that H (checked whichever side
    changes: a variant added, or H replaced or swept)."""
    tail = _concrete_floats(sc.straggler, sc.straggler_s)
    if tail is not None:
        family, s = np.broadcast_arrays(*tail)
        bad = (family == STRAGGLERS.index("exponential")) & ~(s <= 1.0)
        if np.any(bad):
            raise ScenarioError(f"[stragglers] s = {float(s[bad][0])!r} with family = 'exponential': "
                                "an exponential tail share must be in [0, 1] (s is sigma, >= 0, "
                                "only for family = 'lognormal')")
    tied = tuple(v for v in sc.variants if v.sync_every is None and (v.delay or v.fragments > 1))
    H = _concrete_floats(sc.sync_every_H) if tied else None
    if H is not None:
        check_methods(tied, H[0])
    pair = _concrete_floats(sc.budget_low_FLOPs, sc.budget_high_FLOPs)
    if pair is not None and not np.all(pair[0] <= pair[1]):
        raise ScenarioError(f"[module] budget_low = {shown(float(np.max(pair[0])), 'flop_rate')!r} "
                            f"is above budget_high = {shown(float(np.min(pair[1])), 'flop_rate')!r}: "
                            "budget_low must be <= budget_high")
    sizes = _concrete_floats(sc.params, sc.dense_bytes_per_param, sc.topk_bytes_per_value)
    if sizes is not None:
        per_param = max([float(np.max(sizes[1])), float(np.max(sizes[2])), 4.0]
                        + [v.bytes_per_param for v in sc.variants if v.bytes_per_param])
        with np.errstate(over="ignore"):
            largest = float(np.max(sizes[0])) * per_param
        if not math.isfinite(largest) or largest > MAX_BYTES:
            raise ScenarioError(f"[model] params = {plain(float(np.max(sizes[0])))}: "
                                f"its byte counts (x {plain(per_param)} B a parameter) would overflow; "
                                f"at most {MAX_BYTES / per_param:.3g} parameters")


MAX_BYTES = 1e200
"""Largest byte count the model's derived sizes may reach (well inside a 64-bit float, with room
for the products the closed forms take of it)."""

def validate(sc: Scenario) -> Scenario:
    """Check every value; raise :class:`ScenarioError` naming the first bad one."""
    _check_variants(sc.variants)
    if not isinstance(sc.steps, Steps):
        raise ScenarioError(f"steps = {sc.steps!r}: expected a bandjax.Steps")
    for name in FIELDS:
        # with sites, n is the mean N / K, which need not be whole (each n_i is)
        check_field(name, getattr(sc, name), whole=not (name == "workers_per_dc" and sc.sites))
    if sc.sites is not None:
        _check_fixed_by_sites(sc.sites, {"dcs": sc.dcs, "workers_per_dc": sc.workers_per_dc},
                              sc.links)
    if sc.active_params is not None:
        _check_active(sc.active_params)
    if sc.checkpoint_every_s is not None:
        _check_checkpoint(sc.checkpoint_every_s)
    _check_fixed(sc)
    _check_relations(sc)
    enobs = sc.steps.measured_enobs(registry=sc.variants)
    outside = [float(e) for e in np.ravel(sc.enob) if float(e) not in enobs] if enobs else []
    if outside:  # (a grid of ENOB is checked value by value)
        raise ScenarioError(f"[band] enob = {outside[0]!r}: outside the steps table; measured ENOB: "
                            f"{', '.join(str(e) for e in enobs)}")
    if sc.uncertain:
        from .distributions import check

        check(sc.uncertain, sc.variants, field_table())
    return sc


def check_methods(registry: tuple[Variant, ...], H) -> None:
    """Each variant's delay <= H - 1 and fragments <= H, at its own H or at ``H`` (the scenario's,
    a number or the values a sweep gives it) where it has none; errors name the variant."""
    for v in registry:
        try:
            _variants.check_method(v, v.sync_every if v.sync_every is not None else H)
        except ValueError as e:
            where = "" if v.sync_every is not None else " (the scenario's [sync] every_H)"
            raise ScenarioError(f"[{VARIANTS_SECTION}.{v.id}] {e}{where}") from None


# --------------------------------------------------------------------------------------- TOML


def _variant_to_toml(v: Variant) -> dict:
    out: dict[str, Any] = {"label": v.label, "short": v.short, "payload": v.payload,
                           "collective": v.collective, "link": v.link, "module": v.module,
                           "steps": v.steps, "d": format_quantity(v.d_s, "time"), "colour": v.colour}
    if v.bytes_per_param is not None:
        out["bytes_per_param"] = format_quantity(v.bytes_per_param, "count")
    if v.rule is not None:
        out["rule"] = {"hypothesis": list(v.rule.hypothesis), "exact": list(v.rule.exact)}
    if v.sync_every is not None:
        out["sync_every"] = int(v.sync_every) if float(v.sync_every).is_integer() else v.sync_every
    if v.delay:
        out["delay"] = int(v.delay)
    if v.fragments != 1:
        out["fragments"] = int(v.fragments)
    if v.sites != "wait":
        out["sites"] = v.sites
    return out


_VARIANT_KEYS = ("label", "short", "payload", "collective", "link", "module", "steps", "d", "colour",
                 "bytes_per_param", "rule", "sync_every", "delay", "fragments", "sites")
# what the method's keys allow (docs/model.md section 14)
_METHOD_ALLOWED = {"sync_every": "a whole number of inner steps >= 1",
                   "delay": "a whole number of inner steps, 0 to H - 1",
                   "fragments": "a whole number, 1 to H"}


def _variant_from_toml(vid: str, table: dict, default: Variant | None) -> Variant:
    where = f"[{VARIANTS_SECTION}.{vid}]"
    if not isinstance(table, dict):
        raise ScenarioError(f"{where} = {table!r}: expected a table with keys {', '.join(_VARIANT_KEYS)}")
    for key in table:
        if key not in _VARIANT_KEYS:
            raise ScenarioError(f"{where} {key} is not a known key; allowed: {', '.join(_VARIANT_KEYS)}")
    base = dataclasses.asdict(default) if default else {"label": vid, "short": vid, "colour": 0}
    base.pop("id", None)
    if default is not None and default.rule is not None:
        base["rule"] = default.rule
    kw = {k: base[k] for k in base if k in {f.name for f in dataclasses.fields(Variant)}}
    for key, value in table.items():
        if key == "d":
            kw["d_s"] = parse(f"{where} d", value, "time")
        elif key == "bytes_per_param":
            kw["bytes_per_param"] = parse(f"{where} bytes_per_param", value, "count")
        elif key == "rule":
            if not (isinstance(value, dict) and set(value) == {"hypothesis", "exact"}
                    and all(isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids)
                            for ids in value.values())):
                raise ScenarioError(f"{where} rule = {value!r}: expected {{hypothesis = [ids], exact = [ids]}}")
            kw["rule"] = Rule(tuple(value["hypothesis"]), tuple(value["exact"]))
        elif key == "colour":
            x = parse(f"{where} colour", value, "count")
            if not (math.isfinite(x) and x == round(x) and 0 <= x < 1000):
                raise ScenarioError(f"{where} colour = {value!r}: must be a whole number in [0, 1000)")
            kw["colour"] = int(x)
        elif key in _METHOD_ALLOWED:
            x = parse(f"{where} {key}", value, "count")
            lowest = 0 if key == "delay" else 1
            if not (math.isfinite(x) and x == round(x) and x >= lowest):
                raise ScenarioError(f"{where} {key} = {value!r}: must be {_METHOD_ALLOWED[key]}")
            kw[key] = float(x) if key == "sync_every" else int(x)
        else:
            kw[key] = value
    missing = [k for k in ("payload", "collective") if k not in kw]
    if missing:
        raise ScenarioError(f"{where}: {', '.join(missing)} missing; payload one of "
                            f"{', '.join(_variants.PAYLOADS)}, collective one of {', '.join(_variants.COLLECTIVES)}")
    try:
        return Variant(vid, **kw)
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"{where}: {e}") from None


def to_toml_dict(sc: Scenario) -> dict:
    out: dict[str, dict] = {}
    for name, (section, key, dim, _) in FIELDS.items():
        value = float(getattr(sc, name))
        if name == "budget_FLOPs" and math.isinf(value):
            out.setdefault(section, {})[key] = "free"
        elif dim in CHOICES:
            out.setdefault(section, {})[key] = CHOICES[dim][int(value)]
        else:
            out.setdefault(section, {})[key] = format_quantity(value, dim)
    # c, derived (for readers of the file); on load it must agree with the peak and utilisation
    out["model"]["gpu_compute"] = format_quantity(float(sc.gpu_compute_s), "time")
    if sc.links is not None:
        out["links"].update(_links_to_toml(sc))
    if sc.sites is not None:  # n is each row's; the mean N / K is derived
        del out["cluster"]["workers_per_dc"]
        out[SITES_SECTION] = _sites_to_toml(sc)
    if sc.active_params is not None:
        out["model"][ACTIVE[1]] = format_quantity(float(sc.active_params), "count")
    if sc.checkpoint_every_s is not None:
        out[CHECKPOINT[0]][CHECKPOINT[1]] = format_quantity(float(sc.checkpoint_every_s), "time")
    out[FIXED_SECTION] = {vid: format_quantity(float(d), "time") for vid, d in sc.fixed_s.items()}
    defaults = {v.id: v for v in _variants.VARIANTS}
    own = {v.id: _variant_to_toml(v) for v in sc.variants if defaults.get(v.id) != v}
    if own or len(sc.variants) != len(defaults) or set(sc.ids) != set(defaults):
        out[VARIANTS_SECTION] = own
        if set(defaults) - set(sc.ids):
            out[VARIANTS_SECTION]["only"] = list(sc.ids)
    s = sc.steps
    table: dict[str, Any] = {"target_loss": s.target_loss}
    table.update({vid: n if n == NEVER else int(n) if float(n).is_integer() else n
                  for vid, n in s.measured})
    for vid, entries in s.by_enob:
        table[vid] = {str(e): (n if n == NEVER else int(n)) for e, n in entries}
    out["steps"] = table
    if sc.uncertain:
        from .distributions import SECTION, to_table

        out[SECTION] = to_table(sc.uncertain, field_table())
    return out


LINK_ROW_KEYS = ("from", "to", "wan", "latency", "symmetric")
SITES_SECTION = "sites"  # [[sites]] rows, one a DC (docs/model.md section 16)
SITE_ROW_KEYS = ("name", "workers", "gpu", "utilisation", "gpu_compute")


def _sites_to_toml(sc: Scenario) -> list[dict]:
    """The ``[[sites]]`` rows of a scenario with per-DC sites: each DC's name, workers and GPU
    compute c_i (with its unit; c_i = c x compute_rel)."""
    s = sc.sites
    return [{"name": name, "workers": int(n), "gpu_compute": format_quantity(c, "time")}
            for name, n, c in zip(s.names, s.workers, s.compute_s(float(sc.gpu_compute_s)))]


def _sites_from_toml(rows, sc: Scenario) -> Scenario:
    """``sc`` with the sites of a file's ``[[sites]]`` rows.

    Each row: ``name`` (required), ``workers`` (default the scenario's n), and either
    ``gpu_compute`` (c_i, with a unit) or ``gpu`` (a preset of :data:`GPUS`, ``"study"`` or a
    peak with a unit, ``"989 TFLOP/s"``) and ``utilisation``. Rows that give only compute times
    are c_i / c of the file's own c (its ``[model]``), as saved; rows with a GPU go through
    :meth:`Scenario.with_sites` (the scenario's GPU becomes the slowest site's)."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ScenarioError(f"[[sites]] = {rows!r}: expected [[sites]] rows, each a table with "
                            f"keys {', '.join(SITE_ROW_KEYS)}")
    names, gpus, utils, workers, computes = [], [], [], [], []
    for k, row in enumerate(rows, 1):
        where = f"[[sites]] row {k}"
        for key in row:
            if key not in SITE_ROW_KEYS:
                raise ScenarioError(f"{where}: {key} is not a known key; allowed: "
                                    f"{', '.join(SITE_ROW_KEYS)}")
        name = row.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ScenarioError(f"{where}: name = {name!r}: every site needs a DC name (a "
                                "non-empty string)")
        where = f"[[sites]] {name!r}"
        names.append(name)
        n = row.get("workers")
        workers.append(None if n is None else parse(f"{where} workers", n, "count"))
        g = row.get("gpu")
        if isinstance(g, str) and g not in GPUS and g != "study":
            g = parse(f"{where} gpu", g, "flop_rate")
        elif g is not None and not isinstance(g, str):
            raise ScenarioError(f"{where} gpu = {g!r}: expected a preset name ({', '.join(GPUS)}, "
                                "study) or a peak with its unit, e.g. '989 TFLOP/s'")
        gpus.append(g)
        u = row.get("utilisation")
        utils.append(None if u is None else parse(f"{where} utilisation", u, "count"))
        c = row.get("gpu_compute")
        if c is not None and not isinstance(c, str):
            raise ScenarioError(f"{where} gpu_compute = {c!r} has no unit; write it with one, "
                                "e.g. gpu_compute = '1.2 s'")
        computes.append(None if c is None else parse(f"{where} gpu_compute", c, "time"))
    if all(g is None and u is None for g, u in zip(gpus, utils)):
        c = float(sc.gpu_compute_s)
        rel = [1.0 if x is None else check_positive(x, f"[[sites]] {nm!r}", "gpu_compute", " s") / c
               for nm, x in zip(names, computes)]
        n = [float(sc.workers_per_dc) if x is None else x for x in workers]
        return sc.replace(sites=Sites(tuple(names), tuple(n), tuple(rel)))
    return sc.with_sites(names, gpus, utils, workers, computes)


def _links_to_toml(sc: Scenario) -> dict:
    """``names`` and the ``[[links.pairs]]`` rows of a scenario with per-link values: one row
    with ``symmetric = true`` where both directions agree, else one row per direction."""
    B, L, names = sc.link_values()
    rows = []
    K = len(names)
    for i in range(K):
        for j in range(i + 1, K):
            same = B[i, j] == B[j, i] and L[i, j] == L[j, i]
            for a, b in ((i, j),) if same else ((i, j), (j, i)):
                row = {"from": names[a], "to": names[b], "wan": format_quantity(float(B[a, b]), "byte_rate"),
                       "latency": format_quantity(float(L[a, b]), "time")}
                if same:
                    row["symmetric"] = True
                rows.append(row)
    return {"names": list(names), "pairs": rows}


def _links_from_toml(entries: dict) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The (bandwidth B/s, latency s, names) of a ``[links]`` table's ``pairs`` rows.

    Every value carries its unit; each ordered pair of distinct DCs is given exactly once (a row
    with ``symmetric = true`` gives both directions); names come from ``names`` or, without it,
    from the rows in the order they first appear. Errors name the row.
    """
    rows = entries["pairs"]
    if not isinstance(rows, list) or not rows:
        raise ScenarioError(f"[links] pairs = {rows!r}: expected [[links.pairs]] rows, each a table "
                            f"with keys {', '.join(LINK_ROW_KEYS)}")
    declared = entries.get("names")
    if declared is not None and (not isinstance(declared, list)
                                 or not all(isinstance(n, str) and n.strip() for n in declared)):
        raise ScenarioError(f"[links] names = {declared!r}: expected a list of DC names (non-empty "
                            "strings), in ring order")
    if declared is not None and len(set(declared)) != len(declared):
        raise ScenarioError(f"[links] names = {declared!r}: a DC name is given twice; names must "
                            "be unique")
    names: list[str] = list(declared) if declared is not None else []
    parsed = []
    for n, row in enumerate(rows, 1):
        where = f"[[links.pairs]] row {n}"
        if not isinstance(row, dict):
            raise ScenarioError(f"{where} = {row!r}: expected a table with keys "
                                f"{', '.join(LINK_ROW_KEYS)}")
        for key in row:
            if key not in LINK_ROW_KEYS:
                raise ScenarioError(f"{where}: {key} is not a known key; allowed: "
                                    f"{', '.join(LINK_ROW_KEYS)}")
        for key in ("from", "to", "wan"):
            if key not in row:
                raise ScenarioError(f"{where}: {key} is missing; a row needs from, to and wan "
                                    "(latency and symmetric are optional)")
        src, dst = row["from"], row["to"]
        for key, name in (("from", src), ("to", dst)):
            if not isinstance(name, str) or not name.strip():
                raise ScenarioError(f"{where}: {key} = {name!r}: expected a DC name (a non-empty string)")
            if name not in names:
                if declared is not None:
                    raise ScenarioError(f"{where}: {key} = {name!r} is not a DC of [links] names; "
                                        f"allowed: {', '.join(declared)}")
                names.append(name)
        if src == dst:
            raise ScenarioError(f"{where}: from = to = {src!r}; a link joins two different DCs")
        where = f"{where} ({src} -> {dst})"
        values = {}
        for key, dim, example in (("wan", "byte_rate", "10 Gb/s"), ("latency", "time", "40 ms")):
            value = row.get(key, "0 s")
            if not isinstance(value, str):
                raise ScenarioError(f"{where}: {key} = {value!r} has no unit; write it with one, "
                                    f"e.g. {key} = {example!r}")
            values[key] = parse(f"{where} {key}", value, dim)
        symmetric = row.get("symmetric", False)
        if not isinstance(symmetric, bool):
            raise ScenarioError(f"{where}: symmetric = {symmetric!r}: expected true or false")
        parsed.append((n, src, dst, values["wan"], values["latency"], symmetric))
    K = len(names)
    if K < 2:
        raise ScenarioError(f"[links] pairs: {K} DC named; links join K >= 2 DCs")
    if K > MAX_LINK_DCS:
        raise ScenarioError(f"[links] pairs: {K:,} DCs named; at most {MAX_LINK_DCS:,} "
                            "(bandjax._limits.MAX_LINK_DCS)")
    B, L = np.full((K, K), np.nan), np.full((K, K), np.nan)
    given: dict[tuple[int, int], int] = {}
    for n, src, dst, wan, latency, symmetric in parsed:
        i, j = names.index(src), names.index(dst)
        for a, b in ((i, j), (j, i)) if symmetric else ((i, j),):
            if (a, b) in given:
                raise ScenarioError(f"[[links.pairs]] row {n}: the link {names[a]} -> {names[b]} is "
                                    f"already given by row {given[(a, b)]}; give each direction once "
                                    "(symmetric = true gives both)")
            given[(a, b)] = n
            B[a, b], L[a, b] = wan, latency
    missing = [f"{names[i]} -> {names[j]}" for i in range(K) for j in range(K)
               if i != j and (i, j) not in given]
    if missing:
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6:,} more" if len(missing) > 6 else "")
        raise ScenarioError(f"[links] pairs: no row gives {shown}; every ordered pair of "
                            "DCs needs a row (symmetric = true on a row gives both directions)")
    np.fill_diagonal(B, 1.0)
    np.fill_diagonal(L, 0.0)
    return B, L, tuple(names)


def save(sc: Scenario, path: str | os.PathLike) -> None:
    """Write ``sc`` as a TOML file with units (whole or not at all)."""
    import tomli_w

    header = ("# bandjax scenario. Values carry units; a bare number is SI.\n"
              "# [fixed_time] is d per variant, calibrated to the study's recorded step times.\n"
              "# [steps] are measured steps to the target loss; \"never\" = measured, never reaches it.\n"
              "# [variants.<id>] adds a variant (or changes one of the study's six).\n")
    if sc.sites is not None:
        header += ("# [[sites]] gives each DC its workers and GPU compute per inner step; "
                   "[cluster] dcs is then their number.\n")
    if sc.links is not None:
        header += ("# [[links.pairs]] gives each directed WAN link its bandwidth and latency "
                   "(symmetric = true: both directions);\n# [links] wan and latency are then "
                   "the slowest link's and the longest link's, and must agree with the rows.\n")
    atomic_write_text(path, header + tomli_w.dumps(to_toml_dict(validate(sc))))


def _registry_from_toml(table: dict) -> tuple[Variant, ...]:
    if not isinstance(table, dict):
        raise ScenarioError(f"[{VARIANTS_SECTION}] = {table!r}: expected [{VARIANTS_SECTION}.<id>] tables")
    defaults = {v.id: v for v in _variants.VARIANTS}
    registry = dict(defaults)
    only = table.get("only")
    for vid, entry in table.items():
        if vid != "only":
            registry[vid] = _variant_from_toml(vid, entry, defaults.get(vid))
    if only is not None:
        if not (isinstance(only, list) and only and all(isinstance(v, str) for v in only)):
            raise ScenarioError(f"[{VARIANTS_SECTION}] only = {only!r}: expected a list of variant "
                                f"ids; allowed: {', '.join(registry)}")
        twice = sorted({v for v in only if only.count(v) > 1})
        if twice:
            raise ScenarioError(f"[{VARIANTS_SECTION}] only = {only!r}: {', '.join(twice)} given "
                                "more than once; give each variant once")
        unknown = [v for v in only if v not in registry]
        if unknown:
            raise ScenarioError(f"[{VARIANTS_SECTION}] only = {only!r}: {unknown} are not variants; "
                                f"allowed: {', '.join(registry)}")
        registry = {vid: registry[vid] for vid in only}
    out = tuple(registry.values())
    try:
        _variants.check_registry(out)
    except ValueError as e:
        raise ScenarioError(f"[{VARIANTS_SECTION}] {e}") from None
    return out


def from_toml_dict(data: dict) -> Scenario:
    """Build a scenario from a parsed TOML mapping; missing keys take the reference's values.

    Besides the keys of :data:`FIELDS`: ``[model] model = "llama3-8b"`` sets params from a model
    preset (:data:`PRESETS`); ``[model] gpu = "h100"`` applies a GPU preset
    (:meth:`Scenario.with_gpu`) before the file's other values; ``[model] gpu_compute = "0.49 ms"``
    (files written before c came from FLOPs) sets the GPU peak that gives that c;
    ``[failures] rate = "llama3"`` takes a published fleet rate (:data:`FAILURE_RATES`), and
    ``[failures] checkpoint_every = "20 min"`` a checkpoint interval (``"young"``, the default:
    Young's interval).
    """
    data = dict(data)
    site_rows = data.pop(SITES_SECTION, None)
    by_key = {(section, key): name for name, (section, key, _, _) in FIELDS.items()}
    extra = {("model", "gpu"), ("model", "gpu_compute"), ("model", "model"), ACTIVE, ("links", "pairs"),
             ("links", "names"), CHECKPOINT}
    sections = {s for s, _ in by_key} | {FIXED_SECTION, "steps", VARIANTS_SECTION, "uncertain",
                                         SITES_SECTION}
    changes: dict[str, Any] = {}
    ref = reference()
    for section, entries in data.items():
        if section not in sections:
            raise ScenarioError(f"[{section}] is not a known section; allowed: {', '.join(sorted(sections))}")
        if not isinstance(entries, dict):
            raise ScenarioError(f"{section} = {entries!r}: expected a [{section}] table")
        if section in (FIXED_SECTION, "steps", VARIANTS_SECTION, "uncertain"):
            continue
        for key, value in entries.items():
            name = by_key.get((section, key))
            if (section, key) == ("model", "gpu"):
                if not isinstance(value, str):
                    raise ScenarioError(f"[model] gpu = {value!r}: expected a preset name; allowed: "
                                        f"{', '.join(GPUS)}")
                continue
            if (section, key) == ("model", "model"):
                if not (isinstance(value, str) and value in PRESETS):
                    raise ScenarioError(f"[model] model = {value!r}: expected a preset name; allowed: "
                                        f"{', '.join(PRESETS)}")
                if "params" in entries:
                    raise ScenarioError(f"[model] model = {value!r} and params = {entries['params']!r}: "
                                        "give one (a preset sets params)")
                changes["params"] = PRESETS[value]
                if value in ACTIVE_PRESETS and "active_params" not in entries:
                    changes["active_params"] = ACTIVE_PRESETS[value]
                continue
            if (section, key) == ("model", "gpu_compute"):
                changes["gpu_compute_s"] = parse("[model] gpu_compute", value, "time")
                continue
            if (section, key) in (("links", "pairs"), ("links", "names")):
                continue
            if (section, key) == ACTIVE:
                changes["active_params"] = parse("[model] active_params", value, "count")
                continue
            if (section, key) == CHECKPOINT:
                if value != "young":  # Young's interval, the default
                    changes["checkpoint_every_s"] = parse("[failures] checkpoint_every", value, "time")
                continue
            if name == "failure_rate_per_hour" and isinstance(value, str) and value in FAILURE_RATES:
                changes[name] = FAILURE_RATES[value]
                continue
            if name is None:
                allowed = sorted([k for s, k in by_key if s == section] + [k for s, k in extra if s == section])
                raise ScenarioError(f"[{section}] {key} is not a known key; allowed: {', '.join(allowed)}")
            if name == "budget_FLOPs" and value == "free":
                changes[name] = math.inf
            elif FIELDS[name][2] in CHOICES:
                words = CHOICES[FIELDS[name][2]]
                if value not in words:
                    raise ScenarioError(f"[{section}] {key} = {value!r}: must be {allowed_text(name)}")
                changes[name] = float(words.index(value))
            else:
                changes[name] = parse(f"[{section}] {key}", value, FIELDS[name][2])
    gpu = data.get("model", {}).get("gpu")
    if gpu is not None:
        ref = ref.with_gpu(gpu, utilisation=changes.get("utilisation"))
    registry = _registry_from_toml(data[VARIANTS_SECTION]) if VARIANTS_SECTION in data else ref.variants
    ids = tuple(v.id for v in registry)
    fixed = {v.id: dict(ref.fixed_s).get(v.id, v.d_s) for v in registry}
    for v in registry:  # a [variants.<id>] table's d is that variant's d unless [fixed_time] says
        if v.id in data.get(VARIANTS_SECTION, {}) and "d" in data[VARIANTS_SECTION][v.id]:
            fixed[v.id] = v.d_s
    for vid, value in data.get(FIXED_SECTION, {}).items():
        if vid not in ids:
            raise ScenarioError(f"[{FIXED_SECTION}] {vid} is not a variant; allowed: {', '.join(ids)}")
        fixed[vid] = parse(f"[{FIXED_SECTION}] {vid}", value, "time")
    changes["fixed_s"] = fixed
    steps, registry = _steps_from_toml(data.get("steps", {}), registry)
    sc = dataclasses.replace(ref, variants=registry, steps=steps)
    if "uncertain" in data:
        from .distributions import from_table

        sc = dataclasses.replace(sc, uncertain=from_table(data["uncertain"], registry,
                                                          fields=field_table()))
    c = changes.get("gpu_compute_s")
    if c is not None and ("gpu_peak_FLOPs" in changes or gpu is not None):
        changes.pop("gpu_compute_s")
        derived = float(sc.replace(**changes).gpu_compute_s)
        if not math.isclose(derived, c, rel_tol=1e-9):
            raise ScenarioError(f"[model] gpu_compute = {format_quantity(c, 'time')!r} disagrees with "
                                f"gpu_peak x utilisation ({shown(derived, 'time')}); give one "
                                "(c = flops_per_param_token x params x tokens_per_worker / (gpu_peak x utilisation))")
    links = data.get("links", {})
    if "names" in links and "pairs" not in links:
        raise ScenarioError(f"[links] names = {links['names']!r}: names go with [[links.pairs]] "
                            "rows, which give each link's bandwidth and latency")
    if site_rows is not None:  # K and n come from the rows: the file's, if given, must agree
        fixed = {k: changes.pop(k) for k in ("dcs", "workers_per_dc") if k in changes}
    if "pairs" in links:
        sc = _with_file_links(sc.replace(**changes), changes, _links_from_toml(links))
    else:
        sc = sc.replace(**changes)
    if site_rows is not None:
        sc = _sites_from_toml(site_rows, sc)
        _check_fixed_by_sites(sc.sites, fixed, sc.links)
    return validate(sc)


def _with_file_links(sc: Scenario, changes: dict, table) -> Scenario:
    """``sc`` with a file's links table. ``[links] wan`` / ``latency`` and ``[cluster] dcs``, if the
    file gives them too, must agree with the table (the slowest link's bandwidth, the longest
    link's latency, the number of DCs): they are derived from it, as ``gpu_compute`` is."""
    B, L, names = table
    out = sc.with_links(B, L, names)
    for name, derived in (("wan_Bps", out.wan_Bps), ("wan_latency_s", out.wan_latency_s),
                          ("dcs", out.dcs)):
        if name in changes and not math.isclose(changes[name], derived, rel_tol=1e-9, abs_tol=0.0):
            what = {"wan_Bps": "the slowest link's bandwidth", "wan_latency_s": "the longest link's "
                    "latency", "dcs": "the number of DCs in the table"}[name]
            shown = _shown(name, changes[name])
            raise ScenarioError(f"{_where(name)} = {shown!r} disagrees with [[links.pairs]]: "
                                f"{what} is {_shown(name, derived)!r}; give the table alone, or a "
                                "value that agrees with it")
    return out


def _steps_from_toml(table: dict, registry: tuple[Variant, ...]) -> tuple[Steps, tuple[Variant, ...]]:
    """Steps from a [steps] table; entries it leaves out keep the reference's. ``hypothesis_from``
    and ``exact_from`` (older files) rewrite the rules of basis-dependent variants."""
    ref = Steps()
    ids = tuple(v.id for v in registry)
    measured = {k: n for k, n in ref.measured if k in ids}
    by_enob = {k: n for k, n in ref.by_enob if k in ids}
    target, hyp, exa = ref.target_loss, None, None
    with_steps = [v.id for v in registry if v.rule is None]
    for key, value in table.items():
        where = f"[steps] {key}"
        if key == "target_loss":
            target = parse(where, value, "count")
            if not (math.isfinite(target) and target > 0):
                raise ScenarioError(f"{where} = {value!r}: must be a finite loss > 0")
        elif key in ("hypothesis_from", "exact_from"):
            if value not in with_steps:
                raise ScenarioError(f"{where} = {value!r}: must name a variant with its own steps; "
                                    f"allowed: {', '.join(with_steps)}")
            hyp, exa = (value, exa) if key == "hypothesis_from" else (hyp, value)
        elif key not in ids:
            raise ScenarioError(f"{where} is not a variant; allowed: {', '.join(ids)}")
        elif _variants.get(key, registry).rule is not None:
            r = _variants.get(key, registry).rule
            raise ScenarioError(f"{where}: {key} has no steps of its own; it takes the largest of "
                                f"{', '.join(r.hypothesis)} (hypothesis) or of {', '.join(r.exact)} (exact)")
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
            measured.pop(key, None)
        else:
            measured[key] = _steps_value(where, value)
            by_enob.pop(key, None)
    if hyp is not None or exa is not None:
        new = []
        for v in registry:
            if v.basis_dependent:
                h = hyp or v.rule.hypothesis[0]
                rule = Rule((h,), tuple(dict.fromkeys((h, exa or v.rule.exact[-1]))))
                v = dataclasses.replace(v, rule=rule)
            new.append(v)
        registry = tuple(new)
    return Steps(target, tuple(measured.items()), tuple(by_enob.items()),
                 hyp or ref.hypothesis_from, exa or ref.exact_from), registry


def _fits_float(value) -> bool:
    """A finite 64-bit float: not inf or NaN, nor an integer past the largest float."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _steps_value(where: str, value):
    if value == NEVER:
        return NEVER
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating))
            or not (value > 0 and _fits_float(value))):
        shown = f"{str(value)[:20]}...({len(str(value))} digits)" if isinstance(value, int) \
            and len(str(value)) > 40 else repr(value)
        raise ScenarioError(f"{where} = {shown}: steps must be a finite number > 0 or \"never\"")
    return float(value)


def load(path: str | os.PathLike) -> Scenario:
    """Read a scenario TOML file (see :func:`save`); errors name the key, value and what is allowed."""
    from ._io import read_bounded_text
    from ._limits import MAX_SCENARIO_BYTES

    try:
        # bounded: /dev/zero, a FIFO or a huge file is refused before it is read
        text = read_bounded_text(path, "scenario file", MAX_SCENARIO_BYTES)
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {os.fspath(path)!r} does not exist") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"scenario file {os.fspath(path)!r} is not valid TOML: {e}") from None
    except RecursionError:
        raise ScenarioError(f"scenario file {os.fspath(path)!r}: nested too deeply to read") from None
    except ValueError as e:  # an integer of more digits than Python converts (4,300)
        raise ScenarioError(f"scenario file {os.fspath(path)!r}: {e}") from None
    return from_toml_dict(data)


def field_table():
    """The numeric fields as data (:class:`bandjax.distributions.Fields`), for the modules below
    the scenario that check parameter names and values against them without importing it."""
    from .distributions import Fields

    return Fields(table=FIELDS, limits=LIMITS, check=check_field)
