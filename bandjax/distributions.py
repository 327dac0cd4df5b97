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

A fit's correlated estimates (``Calibration.save`` writes them) are one entry under a label of
their own, every number SI:

    [uncertain.calibration.multinormal]
    parameters = ["gpu_peak_FLOPs", "fixed_s.adamw"]
    mean = [49451429426596.17, 9.98e-05]
    cov = [[1.0e24, -2.0e5], [-2.0e5, 1.0e-14]]
    scale = ["log", "linear"]

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
from .units import SI, UNITS, ScenarioError, format_quantity, parse, shown

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
    """``value`` (SI) in the units of parameter ``name`` for a message (:func:`.units.shown`),
    else as it is."""
    if fields is None:
        return value
    try:
        dim = dimension(resolve(name, fields=fields) if not name.startswith(("d.", FIXED_PREFIX))
                        else FIXED_PREFIX, fields)
    except (ScenarioError, KeyError):
        return value
    if isinstance(value, (list, tuple)):
        return [shown(v, dim) for v in value]
    return shown(value, dim)


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
    method takes the mean and variance of that same distribution (ddof 0)."""

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
        # the variance of the draws (each value with weight 1/n), so that the delta method and
        # the Monte Carlo see one spread
        return float(np.var(self.values, ddof=0))

    def check(self, name, fields: Fields | None = None):
        _require(len(self.values) >= 2 and all(math.isfinite(v) for v in self.values), name,
                 f"values = {_shown(name, list(self.values), fields)!r}", "at least two finite values, one per seed")


SCALES = ("linear", "log", "logit")


@dataclass(frozen=True)
class MultiNormal:
    """Correlated parameters (a fit's estimates): a multivariate normal with mean ``mean`` and
    covariance ``cov`` (SI units), each parameter drawn on its ``scale``:

    - ``"linear"``: as it is, a draw below 0 set to 0 (every fitted parameter is >= 0);
    - ``"log"``: log x is normal with covariance cov_ij / (mean_i mean_j) (the delta method's
      image of ``cov``), so a positive parameter's draws stay positive;
    - ``"logit"``: the same for a fraction in (0, 1) on log(x / (1 - x)).

    ``names`` are canonical parameter names; the entry's key in ``[uncertain]`` is a label.
    """

    names: tuple
    mean: tuple
    cov: tuple
    scale: tuple

    def __init__(self, names, mean, cov, scale=None):
        names = tuple(str(n) for n in names)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "mean", tuple(float(v) for v in mean))
        object.__setattr__(self, "cov", tuple(tuple(float(v) for v in row) for row in np.atleast_2d(cov)))
        object.__setattr__(self, "scale", tuple(scale) if scale is not None else ("linear",) * len(names))

    def _jacobian(self) -> np.ndarray:
        """d(search coordinate) / dx at the mean, per parameter."""
        m = np.asarray(self.mean)
        return np.array([1.0 if s == "linear" else 1.0 / v if s == "log" else 1.0 / (v * (1 - v))
                         for s, v in zip(self.scale, m)])

    def sample(self, rng, n):
        """(n, parameter) draws."""
        m, g = np.asarray(self.mean), self._jacobian()
        center = np.array([v if s == "linear" else math.log(v) if s == "log" else math.log(v / (1 - v))
                           for s, v in zip(self.scale, m)])
        u = rng.multivariate_normal(center, np.asarray(self.cov) * np.outer(g, g), n)
        out = np.empty_like(u)
        for j, s in enumerate(self.scale):
            out[:, j] = (np.maximum(u[:, j], 0.0) if s == "linear" else np.exp(u[:, j]) if s == "log"
                         else 1.0 / (1.0 + np.exp(-u[:, j])))
        return out

    @property
    def center(self):
        return np.asarray(self.mean)

    @property
    def variance(self):
        return np.asarray(self.cov)

    @property
    def values(self):
        return self.mean

    def check(self, name, fields: Fields | None = None):
        k = len(self.names)
        cov = np.asarray(self.cov)
        _require(k >= 1 and len(self.mean) == k and cov.shape == (k, k) and len(self.scale) == k, name,
                 f"{k} parameters, {len(self.mean)} means, a {cov.shape} cov and {len(self.scale)} scales",
                 "one mean, one scale and one row and column of cov per parameter")
        _require(all(s in SCALES for s in self.scale), name, f"scale = {list(self.scale)!r}",
                 f"one of {', '.join(SCALES)} per parameter")
        _require(bool(np.all(np.isfinite(cov))) and np.allclose(cov, cov.T, rtol=1e-9, atol=0), name,
                 "cov is not finite and symmetric (a fit that does not identify its parameters has "
                 "no covariance)", "a finite symmetric matrix")
        _require(bool(np.all(np.linalg.eigvalsh(cov) >= -1e-9 * max(np.abs(np.diag(cov)).max(), 1e-300))),
                 name, "cov has a negative eigenvalue", "positive semi-definite")
        for n, s, v in zip(self.names, self.scale, self.mean):
            ok = v >= 0 if s == "linear" else v > 0 if s == "log" else 0 < v < 1
            _require(math.isfinite(v) and ok, name, f"mean of {n} = {v!r} on scale {s!r}",
                     ">= 0 (linear), > 0 (log) or in (0, 1) (logit)")


def _multinormal_from_table(where: str, spec, registry, fields: Fields) -> MultiNormal:
    keys = {"parameters", "mean", "cov", "scale"}
    if not (isinstance(spec, dict) and {"parameters", "mean", "cov"} <= set(spec) <= keys):
        raise ScenarioError(f"{where} = {spec!r}: expected multinormal = {{ parameters = [names], "
                            "mean = [SI values], cov = [[SI^2 values], ...], scale = [linear|log|logit] }")
    names = []
    for n in spec["parameters"]:
        try:
            names.append(resolve(str(n), registry, fields=fields, steps=False))
        except ScenarioError as e:
            raise ScenarioError(f"{where}.parameters: {e}") from None
    try:
        mean = [float(v) for v in spec["mean"]]
        cov = np.asarray(spec["cov"], dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(f"{where}: mean and cov must be numbers (SI units), cov a list of "
                            "rows") from None
    return MultiNormal(names, mean, cov, spec.get("scale"))


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
        if isinstance(entry, dict) and list(entry) == ["multinormal"]:
            dist = _multinormal_from_table(f"{where}.multinormal", entry["multinormal"], registry, fields)
            dist.check(key, fields)
            out.append((key, dist))
            continue
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
    names = parameters(out)
    if len(set(names)) != len(names):
        raise ScenarioError(f"[{SECTION}]: a parameter is given twice among {', '.join(names)}")
    return tuple(out)


def parameters(uncertain) -> list[str]:
    """Every parameter that ``uncertain`` ((key, distribution), ...) makes uncertain, in order."""
    out = []
    for name, dist in uncertain:
        out += list(dist.names) if isinstance(dist, MultiNormal) else [name]
    return out


def to_table(uncertain: tuple, fields: Fields) -> dict:
    """The ``[uncertain]`` table of ``uncertain`` (the inverse of :func:`from_table`)."""
    out = {}
    for name, dist in uncertain:
        if isinstance(dist, MultiNormal):
            out[name] = {"multinormal": {"parameters": list(dist.names), "mean": list(dist.mean),
                                         "cov": [list(r) for r in dist.cov], "scale": list(dist.scale)}}
            continue
        kind = _KIND_OF[type(dist)]
        dims = KINDS[kind][1] or ("",) * len(dist.values)
        out[name] = {kind: [format_quantity(v, d or dimension(name, fields))
                            for v, d in zip(dist.values, dims)]}
    return out


def describe(name: str, dist, fields: Fields) -> str:
    """``wan_Bps ~ normal(12.5 GB/s, 1 GB/s)``: the parameter and its distribution, with units."""
    if isinstance(dist, MultiNormal):
        sd = np.sqrt(np.diag(np.asarray(dist.cov)))
        parts = [f"{n} ~ {shown(float(m), dimension(n, fields))} +- "
                 f"{shown(float(e), dimension(n, fields))}"
                 for n, m, e in zip(dist.names, dist.mean, sd)]
        return f"{name}: correlated normal ({'; '.join(parts)})"
    kind = _KIND_OF[type(dist)]
    dims = KINDS[kind][1] or ("",) * len(dist.values)
    values = [shown(v, d or dimension(name, fields)) for v, d in zip(dist.values, dims)]
    if name.startswith(STEPS_PREFIX):
        values = [f"{v:g} steps" for v in dist.values]
    return f"{name} ~ {kind}({', '.join(str(s) for s in values)})"


def check(uncertain: tuple, registry: tuple, fields: Fields) -> None:
    """Every parameter of ``uncertain`` exists in ``registry`` and its values are allowed."""
    for name, dist in uncertain:
        if isinstance(dist, MultiNormal):
            for n in dist.names:
                if resolve(n, registry, fields=fields, steps=False) != n:
                    raise ScenarioError(f"[{SECTION}] {name}: {n} is not a canonical parameter name")
            dist.check(name, fields)
            continue
        if resolve(name, registry, fields=fields) != name:
            raise ScenarioError(f"[{SECTION}] {name}: not a canonical parameter name")
        dist.check(name, fields)
        check_center(name, dist, fields)
