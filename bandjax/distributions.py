"""Uncertain inputs as data: distributions on named parameters, and the ``[uncertain]`` table.

A scenario holds its uncertain inputs (``Scenario.uncertain``, static, none by default) as pairs
(parameter, distribution). A parameter is a numeric scenario field (by name or file key; ``gpu``
is the GPU rate ``gpu_peak_FLOPs`` at the scenario's utilisation), a variant's fixed time
(``d.<variant>`` or ``fixed_s.<variant>``) or a variant's steps to target (``steps.<variant>``,
a variant with steps of its own; a variant whose rule names it follows it). In a file:

    [uncertain]
    wan = { normal = ["12.5 GB/s", "1 GB/s"] }             # mean, sd
    "d.adamw" = { lognormal = ["0.1 ms", 0.2] }            # median, sigma of log x
    "fixed_s.topk" = { uniform = ["0 ms", "0.01 ms"] }     # lo, hi
    "steps.band_pluggable" = { seeds = [1800, 1650, 2010] } # one value per seed

Values carry the parameter's units (a bare number is SI; steps are counts). Plain Python and
NumPy: no jax at import (:mod:`bandjax.scenario` reads and writes the table through this module).

This module sits below the scenario and does not import it: what it needs to know of the
scenario's numeric fields (their names, file keys, dimensions and limits) it is handed as data, a
:class:`Fields` (``bandjax.scenario.field_table()``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from . import variants as _variants
from .parameters import FIXED_PREFIX
from .units import SI, UNITS, ScenarioError, format_quantity, parse

SECTION = "uncertain"
STEPS_PREFIX = "steps."
# Names a person uses for a parameter -> the scenario field.
ALIASES = {"gpu": "gpu_peak_FLOPs", "bandwidth": "wan_Bps", "budget": "budget_FLOPs",
           "model": "params"}


@dataclass(frozen=True)
class Fields:
    """The scenario's numeric fields as data: ``table`` as :data:`bandjax.scenario.FIELDS` (name ->
    (default, file key, dimension, description)), ``limits`` as :data:`bandjax.scenario.LIMITS`,
    and ``check``, the scenario's check of a field's values (``check(name, values, whole=False)``
    raises a ``ScenarioError`` naming what is allowed)."""

    table: Mapping
    limits: Mapping
    check: Callable


def _require(ok, name, what, allowed):
    if not ok:
        raise ScenarioError(f"[{SECTION}] {name}: {what}; must be {allowed}")


def _shown(name: str, value, fields: Fields | None = None):
    """``value`` (SI) in the units of parameter ``name`` as a file writes it, else as it is."""
    if fields is None:
        return value
    try:
        dim = dimension(resolve(name, fields=fields) if not name.startswith(("d.", FIXED_PREFIX))
                        else FIXED_PREFIX, fields)
    except (ScenarioError, KeyError):
        return value
    if isinstance(value, (list, tuple)):
        return [format_quantity(v, dim) for v in value]
    return format_quantity(value, dim)


@dataclass(frozen=True)
class Normal:
    """Normal(mean, sd), in the parameter's SI units (steps: a count)."""

    mean: float
    sd: float

    def sample(self, rng, n):
        return rng.normal(self.mean, self.sd, n)

    @property
    def center(self):
        return float(self.mean)

    @property
    def variance(self):
        return float(self.sd) ** 2

    @property
    def values(self):
        return (self.mean, self.sd)

    def check(self, name, fields: Fields | None = None):
        _require(math.isfinite(self.mean), name, f"mean = {_shown(name, self.mean, fields)!r}", "a finite number")
        _require(self.sd >= 0 and math.isfinite(self.sd), name, f"sd = {_shown(name, self.sd, fields)!r}",
                 "a finite number >= 0")


@dataclass(frozen=True)
class LogNormal:
    """log x ~ Normal(log median, sigma): a positive parameter known to a factor exp(sigma)."""

    median: float
    sigma: float

    def sample(self, rng, n):
        return self.median * np.exp(rng.normal(0.0, self.sigma, n))

    @property
    def center(self):
        return float(self.median * math.exp(self.sigma**2 / 2))

    @property
    def variance(self):
        return float(math.expm1(self.sigma**2) * self.median**2 * math.exp(self.sigma**2))

    @property
    def values(self):
        return (self.median, self.sigma)

    def check(self, name, fields: Fields | None = None):
        _require(self.median > 0 and math.isfinite(self.median), name,
                 f"median = {_shown(name, self.median, fields)!r}", "> 0")
        _require(self.sigma >= 0 and math.isfinite(self.sigma), name, f"sigma = {self.sigma!r}",
                 "a finite number >= 0 (a bare number: the sd of log x)")


@dataclass(frozen=True)
class Uniform:
    """Uniform on [lo, hi]."""

    lo: float
    hi: float

    def sample(self, rng, n):
        return rng.uniform(self.lo, self.hi, n)

    @property
    def center(self):
        return 0.5 * (self.lo + self.hi)

    @property
    def variance(self):
        return (self.hi - self.lo) ** 2 / 12

    @property
    def values(self):
        return (self.lo, self.hi)

    def check(self, name, fields: Fields | None = None):
        _require(math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo <= self.hi, name,
                 f"lo = {_shown(name, self.lo, fields)!r}, hi = {_shown(name, self.hi, fields)!r}", "finite, lo <= hi")


@dataclass(frozen=True)
class Seeds:
    """Measured values (one per seed): Monte Carlo draws among them with equal weight; the delta
    method takes their mean and sample variance."""

    values: tuple

    def __init__(self, values):
        object.__setattr__(self, "values", tuple(float(v) for v in values))

    def sample(self, rng, n):
        return rng.choice(np.asarray(self.values), n)

    @property
    def center(self):
        return float(np.mean(self.values))

    @property
    def variance(self):
        return float(np.var(self.values, ddof=1))

    def check(self, name, fields: Fields | None = None):
        _require(len(self.values) >= 2 and all(math.isfinite(v) for v in self.values), name,
                 f"values = {_shown(name, list(self.values), fields)!r}", "at least two finite values, one per seed")


# kind in a file -> (class, the dimension of each value: "" the parameter's, "count" bare)
KINDS = {"normal": (Normal, ("", "")), "lognormal": (LogNormal, ("", "count")),
         "uniform": (Uniform, ("", "")), "seeds": (Seeds, None)}
_KIND_OF = {cls: kind for kind, (cls, _) in KINDS.items()}
_SHAPES = "normal = [mean, sd], lognormal = [median, sigma], uniform = [lo, hi], seeds = [v1, v2, ...]"


# --------------------------------------------------------------------------- parameters


def _variant_id(name: str, registry, where: str) -> str:
    found = _variants.find(name, registry, long_label=True)
    if found is not None:
        return found
    raise ScenarioError(f"{where}: variant {name!r} is not known; allowed: "
                        + ", ".join(f"{v.id} ({v.short})" for v in registry))


def resolve(name: str, registry: tuple = _variants.VARIANTS, *, fields: Fields,
            steps: bool = True) -> str:
    """A parameter's canonical name: a field of :data:`bandjax.scenario.FIELDS` (by name, file key
    or alias: ``gpu`` is ``gpu_peak_FLOPs``), ``fixed_s.<id>`` (also ``d.<variant>``, by id or
    label) or, with ``steps``, ``steps.<id>`` of a variant with steps of its own."""
    FIELDS = fields.table

    for prefix in (FIXED_PREFIX, "d."):
        if name.startswith(prefix):
            return FIXED_PREFIX + _variant_id(name[len(prefix):], registry, name)
    if steps and name.startswith(STEPS_PREFIX):
        vid = _variant_id(name[len(STEPS_PREFIX):], registry, name)
        v = _variants.get(vid, registry)
        if v.rule is not None:
            raise ScenarioError(f"{name}: {vid} has no steps of its own, it follows "
                                f"{', '.join(dict.fromkeys(v.rule.hypothesis + v.rule.exact))}; "
                                "allowed: steps.<variant> of "
                                + ", ".join(u.id for u in registry if u.rule is None))
        return STEPS_PREFIX + vid
    if name in FIELDS:
        return name
    by_key = {key: field for field, (_, key, _, _) in FIELDS.items()}
    found = ALIASES.get(name) or by_key.get(name)
    if found in FIELDS:
        return found
    raise ScenarioError(
        f"{name!r} is not a parameter; allowed: a numeric scenario field or its file key "
        f"({', '.join(FIELDS)}), gpu (the GPU rate), fixed_s.<variant> or d.<variant>"
        + (", steps.<variant>" if steps else "") + f" ({', '.join(v.id for v in registry)})")


def dimension(name: str, fields: Fields) -> str:
    """The dimension (a key of :data:`bandjax.units.UNITS`) of a canonical parameter name."""
    FIELDS = fields.table

    if name.startswith(FIXED_PREFIX):
        return "time"
    if name.startswith(STEPS_PREFIX):
        return "count"
    return FIELDS[name][2]


def unit(name: str, fields: Fields) -> str:
    """The unit a person reads the parameter in (the file's first unit; steps are counts)."""
    dim = dimension(name, fields)
    return next(iter(UNITS[dim])) if dim in UNITS and dim != "count" else ("steps" if name.startswith(STEPS_PREFIX) else SI.get(dim, "1"))


def check_center(name: str, dist, fields: Fields) -> None:
    """The distribution's values lie where the parameter is allowed (a field's own limits)."""
    LIMITS, check_field = fields.limits, fields.check

    if name in LIMITS:
        points = dist.values if isinstance(dist, Seeds) else (dist.center,)
        if isinstance(dist, Uniform):
            points = (dist.lo, dist.hi)
        check_field(name, list(points), whole=False)
    elif name.startswith(STEPS_PREFIX) or name.startswith(FIXED_PREFIX):
        low = dist.values if isinstance(dist, Seeds) else ((dist.lo,) if isinstance(dist, Uniform) else (dist.center,))
        ok = all(v > 0 for v in low) if name.startswith(STEPS_PREFIX) else all(v >= 0 for v in low)
        _require(ok, name, f"values {list(low)!r}", "> 0 steps" if name.startswith(STEPS_PREFIX) else ">= 0 s")


# --------------------------------------------------------------------------- the [uncertain] table


def from_table(table, registry: tuple = _variants.VARIANTS, *, fields: Fields) -> tuple:
    """((parameter, distribution), ...) from an ``[uncertain]`` table; errors name the key, the
    value and what is allowed."""
    if not isinstance(table, dict):
        raise ScenarioError(f"[{SECTION}] = {table!r}: expected a table of parameter = {{ kind = [values] }}")
    out = []
    for key, entry in table.items():
        where = f"[{SECTION}] {key}"
        try:
            name = resolve(key, registry, fields=fields)
        except ScenarioError as e:
            raise ScenarioError(f"{where}: {e}") from None
        if not (isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)) in KINDS):
            raise ScenarioError(f"{where} = {entry!r}: expected one of {_SHAPES}")
        kind, values = next(iter(entry.items()))
        cls, dims = KINDS[kind]
        if not isinstance(values, list) or (dims is not None and len(values) != len(dims)):
            raise ScenarioError(f"{where} = {entry!r}: expected one of {_SHAPES}")
        dims = dims or ("",) * len(values)
        si = [parse(f"{where}.{kind}[{i}]", v, d or dimension(name, fields))
              for i, (v, d) in enumerate(zip(values, dims))]
        dist = cls(si) if cls is Seeds else cls(*si)
        dist.check(key, fields)
        check_center(name, dist, fields)
        out.append((name, dist))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ScenarioError(f"[{SECTION}]: a parameter is given twice among {', '.join(table)}")
    return tuple(out)


def to_table(uncertain: tuple, fields: Fields) -> dict:
    """The ``[uncertain]`` table of ``uncertain`` (the inverse of :func:`from_table`)."""
    out = {}
    for name, dist in uncertain:
        kind = _KIND_OF[type(dist)]
        dims = KINDS[kind][1] or ("",) * len(dist.values)
        out[name] = {kind: [format_quantity(v, d or dimension(name, fields))
                            for v, d in zip(dist.values, dims)]}
    return out


def describe(name: str, dist, fields: Fields) -> str:
    """``wan_Bps ~ normal(12.5 GB/s, 1 GB/s)``: the parameter and its distribution, with units."""
    kind = _KIND_OF[type(dist)]
    dims = KINDS[kind][1] or ("",) * len(dist.values)
    shown = [format_quantity(v, d or dimension(name, fields)) for v, d in zip(dist.values, dims)]
    if name.startswith(STEPS_PREFIX):
        shown = [f"{v:g} steps" for v in dist.values]
    return f"{name} ~ {kind}({', '.join(str(s) for s in shown)})"


def check(uncertain: tuple, registry: tuple, fields: Fields) -> None:
    """Every parameter of ``uncertain`` exists in ``registry`` and its values are allowed."""
    for name, dist in uncertain:
        if resolve(name, registry, fields=fields) != name:
            raise ScenarioError(f"[{SECTION}] {name}: not a canonical parameter name")
        dist.check(name, fields)
        check_center(name, dist, fields)
