"""Uncertain inputs carried to the answer: Monte Carlo in one jitted, vmapped call, and the delta
method through the break-even's implicit gradient.

An uncertain input is a distribution (:mod:`bandjax.distributions`: Normal, LogNormal, Uniform,
Seeds) on one parameter: a numeric scenario field (by name, file key or ``gpu``, the GPU rate), a
variant's fixed time (``d.<variant>`` / ``fixed_s.<variant>``) or a variant's steps to target
(``steps.<variant>``; a variant whose rule takes them, as E' takes E's, follows through its rule).
A :class:`bandjax.calibration.Calibration` (or the ``multinormal`` entry a saved calibration
writes) is a multivariate normal on the parameters it fitted (its estimate and covariance), each
drawn on its interval's scale (:class:`bandjax.distributions.MultiNormal`); it propagates together
with any further inputs. Without ``uncertain`` the scenario's own (``Scenario.uncertain``,
a file's ``[uncertain]`` table) are propagated.

    propagate_break_even   the break-even bandwidth of a pair: quantiles (5%, 50%, 95%) over the
                           samples, the probability that a beats b at each bandwidth, and the delta
                           method's interval: root(mean) +- z sqrt(g^T Sigma g), g = d root / d theta
                           by implicit differentiation at the root (the fast path; MC checks it)
    propagate_sweep        quantiles of step and time to target over a bandwidth grid

Samples are drawn with NumPy from ``seed`` outside jit; the model runs once over all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from . import _jax, _limits
from . import breakeven as _be
from .calibration import Calibration
from .links import as_data
from .distributions import (STEPS_PREFIX, LogNormal, MultiNormal, Normal, Seeds, Uniform, _require, check_center,
                            resolve)
from .metrics import steps_to_target, time_to_target_s
from .parameters import FIXED_PREFIX, with_parameters
from .scenario import Scenario, field_table
from .step import step_s
from .units import plain, significant

QUANTILES = (0.05, 0.5, 0.95)
SKEWED = 0.1  # |Bowley skewness| of the Monte Carlo quantiles above which the delta interval is not shown first


# --------------------------------------------------------------------------- draws


@dataclass(frozen=True)
class Draws:
    """Samples of every uncertain parameter (canonical names), their centres and covariance."""

    names: tuple[str, ...]
    samples: np.ndarray  # (samples, parameter)
    center: np.ndarray  # (parameter,)
    cov: np.ndarray  # (parameter, parameter)


def inputs(sc: Scenario, uncertain=None) -> dict:
    """The uncertain inputs to propagate, as key -> distribution: ``uncertain`` (a mapping name ->
    distribution or Calibration, a Calibration, or a list or tuple whose items are any of these
    or (name, distribution) pairs, all propagated together), or else the scenario's own
    (``Scenario.uncertain``). A Calibration becomes its :meth:`Calibration.distribution`."""
    if uncertain is None:
        uncertain = sc.uncertain
    out: dict = {}

    def add(key, dist):
        if isinstance(dist, Calibration):
            ok = np.all(np.isfinite(dist.cov))
            _require(ok, key, "the calibration's parameters are not identifiable", "identifiable")
            dist = dist.distribution()
        if key in out:
            raise ValueError(f"uncertain: {key!r} is given twice")
        out[key] = dist

    items = [uncertain] if isinstance(uncertain, (Calibration, dict)) else list(uncertain)
    for item in items:
        if isinstance(item, Calibration):
            add(f"calibration{'' if 'calibration' not in out else len(out)}", item)
        elif isinstance(item, dict):
            for key, dist in item.items():
                add(key, dist)
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            add(*item)
        else:
            raise ValueError(f"uncertain item {item!r}: expected a Calibration, a mapping name -> "
                             "distribution or a pair (name, distribution)")
    if not out:
        raise ValueError("uncertain = {}: no uncertain inputs; give uncertain={name: distribution} "
                         "or an [uncertain] table in the scenario file, e.g. "
                         "wan = { normal = [\"12.5 GB/s\", \"1 GB/s\"] }")
    return out


def draw(sc: Scenario, uncertain, samples: int, seed: int) -> Draws:
    """Samples of ``uncertain`` (see :func:`inputs`; None: the scenario's) from
    ``np.random.default_rng(seed)``."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 2:
        raise ValueError(f"samples = {samples!r}: must be a whole number >= 2")
    if samples > _limits.MAX_SAMPLES:  # before any is drawn
        raise ValueError(f"samples = {samples!r}: at most {_limits.MAX_SAMPLES:,} "
                         "(bandjax._limits.MAX_SAMPLES)")
    uncertain = inputs(sc, uncertain)
    rng = np.random.default_rng(seed)
    names, cols, centers, blocks = [], [], [], []
    fields = field_table()
    for key, dist in uncertain.items():
        if isinstance(dist, MultiNormal):
            dist.check(key, fields)
            names += [resolve(n, sc.variants, fields=fields, steps=False) for n in dist.names]
            cols.append(dist.sample(rng, samples))
            centers += list(dist.mean)
            blocks.append(np.asarray(dist.variance))
            continue
        if not hasattr(dist, "sample"):
            raise ValueError(f"uncertain {key!r} = {dist!r}: expected Normal, LogNormal, Uniform, "
                             "Seeds or a Calibration")
        dist.check(key, fields)
        names.append(resolve(key, sc.variants, fields=fields))
        check_center(names[-1], dist, fields)
        cols.append(np.asarray(dist.sample(rng, samples), dtype=float)[:, None])
        centers.append(dist.center)
        blocks.append(np.array([[dist.variance]]))
    if len(set(names)) != len(names):
        raise ValueError(f"uncertain: a parameter is given twice among {names}")
    size = sum(len(b) for b in blocks)
    cov = np.zeros((size, size))
    i = 0
    for b in blocks:
        cov[i:i + len(b), i:i + len(b)] = b
        i += len(b)
    return Draws(tuple(names), np.concatenate(cols, axis=1), np.asarray(centers), cov)


def _followers(sc: Scenario, vid: str, basis: str) -> list[str]:
    """Variants whose steps move with ``vid``'s on ``basis``: itself, and every variant whose rule
    takes ``vid`` among its sources there (E' takes E's on the hypothesis basis; on the exact basis
    the largest of E's and the exact band's)."""
    return [v.id for v in sc.variants
            if v.id == vid or (v.rule is not None and vid in v.rule.sources(basis))]


def _split(sc: Scenario, names, basis):
    """(scenario parameter names and their columns, ((variant index, column), ...) for steps
    measured, ((variant index, source indices), ...) for the rules that follow them)."""
    fields, own, rules = [], {}, {}
    for j, n in enumerate(names):
        if n.startswith(STEPS_PREFIX):
            vid = n[len(STEPS_PREFIX):]
            own[sc.ids.index(vid)] = j
            for w in _followers(sc, vid, basis):
                if w != vid:
                    rules[sc.ids.index(w)] = tuple(sc.ids.index(u) for u in sc.variant(w).rule.sources(basis))
        else:
            fields.append((n, j))
    return tuple(fields), (tuple(sorted(own.items())), tuple(sorted(rules.items())))


def _apply(sc: Scenario, fields, steps_index, steps0, v):
    """The scenario and the per-variant steps at one sample ``v`` (parameter,), or at every row
    of ``v`` (samples, parameter) as fields of shape (samples,) (traceable): sampled steps set,
    then each rule that follows them re-taken as the largest of its sources (NaN if any source
    was not measured, as :meth:`bandjax.scenario.Steps.lookup`)."""
    batch = jnp.shape(v)[:-1]
    values = {n: v[..., j] for n, j in fields}
    if batch and any(n.startswith(FIXED_PREFIX) for n in values):
        # the fixed times are stacked over the variants: one shape for all
        values = {**{FIXED_PREFIX + u: jnp.broadcast_to(jnp.asarray(t, dtype=float), batch)
                     for u, t in sc.fixed_s.items()}, **values}
    sc = with_parameters(sc, values)
    own, rules = steps_index
    steps = jnp.asarray(steps0)
    steps = jnp.broadcast_to(steps, (*batch, steps.shape[-1]))
    for i, j in own:
        steps = steps.at[..., i].set(v[..., j])
    for i, sources in rules:
        steps = steps.at[..., i].set(jnp.max(steps[..., list(sources)], axis=-1))
    return sc, steps


# --------------------------------------------------------------------------- break-even


@dataclass(frozen=True)
class BreakEvenUncertainty:
    """The break-even bandwidth of a and b under uncertain inputs, GB/s.

    ``quantiles_GBps`` over :data:`QUANTILES` from Monte Carlo (among samples with a crossing in
    range; ``crossing_share`` says how many have one); ``delta_GBps`` the same quantiles from the
    delta method (symmetric by construction); ``skewness`` the Monte Carlo quantiles' Bowley
    skewness (q95 + q5 - 2 q50) / (q95 - q5), and ``skewed`` whether it exceeds
    :data:`SKEWED` in size: then the delta interval misplaces the mass and :attr:`interval_GBps`
    (the one to show first) is the Monte Carlo's; ``p_a_wins`` (bandwidth,) the probability that
    a reaches the target first at each of ``bandwidth_GBps``; ``roots_GBps`` (samples,) every
    sample's first crossing (NaN: none).
    """

    a: str
    b: str
    basis: str
    names: tuple[str, ...]
    nominal_GBps: float
    quantiles_GBps: np.ndarray
    delta_GBps: np.ndarray
    delta_sd_GBps: float
    gradient: np.ndarray  # d root / d parameter at the centre, GB/s per SI unit
    crossing_share: float
    bandwidth_GBps: np.ndarray
    p_a_wins: np.ndarray
    roots_GBps: np.ndarray

    @property
    def skewness(self) -> float:
        q = self.quantiles_GBps
        width = q[2] - q[0]
        return float((q[2] + q[0] - 2 * q[1]) / width) if width > 0 else 0.0 if np.isfinite(width) else math.nan

    @property
    def skewed(self) -> bool:
        return bool(abs(self.skewness) > SKEWED)

    @property
    def interval_GBps(self) -> np.ndarray:
        """The quantiles to show first: the Monte Carlo's where it is skewed or the delta method
        has no answer, else the delta method's (they then agree)."""
        return self.quantiles_GBps if self.skewed or not np.all(np.isfinite(self.delta_GBps)) else self.delta_GBps

    def summary(self) -> str:
        q, d = self.quantiles_GBps, self.delta_GBps
        skew = (f"; the Monte Carlo is skewed ({self.skewness:+.2f}), so the delta method's symmetric "
                "interval misplaces it" if self.skewed else "")
        g = lambda x: significant(x, 4)  # noqa: E731
        return (f"{self.a} vs {self.b} ({self.basis}): break-even median {g(q[1])} GB/s, 90% "
                f"interval {g(q[0])} to {g(q[2])} GB/s (Monte Carlo, {self.crossing_share:.1%} of "
                f"samples cross in range); delta method {g(d[1])} GB/s, {g(d[0])} to {g(d[2])} GB/s"
                + skew)


def sample_roots(sc, V, steps0, lo, hi, *, ia, ib, fields, steps_index):
    """Every sample's first crossing of a (index ``ia``) and b over WAN bandwidth, B/s (NaN: none
    in [lo, hi]): one search over the rows of ``V`` (samples, parameter), the samples a batch
    dimension of the scenario's fields.

    Whether a step may change slope in range is a static fact of the scenario and of what is
    sampled (:func:`bandjax.breakeven.may_kink`; a sampled overlap may give it one), so the
    search brackets at the kinks only where there can be some."""
    return _sample_roots(sc, V, steps0, lo, hi, ia=ia, ib=ib, fields=fields,
                         steps_index=steps_index, kinks=_may_kink(sc, ia, ib, fields),
                         general=_general(sc, fields))


def _may_kink(sc, ia, ib, fields) -> bool:
    """:func:`bandjax.breakeven.may_kink` of the scenario, or True where the overlap is drawn."""
    return _be.may_kink(sc, ia, ib) or any(n == "overlap_fraction" for n, _ in fields)


def _general(sc, fields) -> bool:
    """:func:`bandjax.breakeven.needs_general_search` of the scenario, or True where a failure
    rate or a straggler family is drawn (a sample may then fail or straggle where the scenario
    does not): the samples' times are then re-evaluated at each trial bandwidth."""
    return _be.needs_general_search(sc) or any(n in ("failure_rate_per_hour", "straggler")
                                               for n, _ in fields)


@partial(jax.jit, static_argnames=("fields", "steps_index", "kinks", "general"))
def _sample_roots(sc, V, steps0, lo, hi, *, ia, ib, fields, steps_index, kinks, general):
    # The samples are the search's batch, not a vmap: its branches (ties, kinks merged) stay
    # branches, which a vmap would turn into selects that run both sides.
    s, steps = _apply(sc, fields, steps_index, steps0, V)
    return _be.bandwidth_crossings(s, ia, ib, steps[..., ia], steps[..., ib], lo, hi,
                                   kinks=kinks, general=general).x[..., 0]


_quick_core = _jax.quick(_sample_roots, static_argnames=("fields", "steps_index", "kinks",
                                                         "general"))


def _quick_roots(sc, V, steps0, lo, hi, *, ia, ib, fields, steps_index):
    return _quick_core(sc, V, steps0, lo, hi, ia=ia, ib=ib, fields=fields,
                       steps_index=steps_index, kinks=_may_kink(sc, ia, ib, fields),
                       general=_general(sc, fields))


@partial(jax.jit, static_argnames=("fields", "steps_index"))
def _sample_wins(sc, V, steps0, grid_Bps, *, ia, ib, fields, steps_index):
    """Whether a reaches the target before b at each grid bandwidth, per sample."""

    def one(v):
        s, steps = _apply(sc, fields, steps_index, steps0, v)
        T = time_to_target_s(s.replace(wan_Bps=grid_Bps), steps)  # (grid, variant)
        return T[..., ia] < T[..., ib]

    return jax.vmap(one)(V)


def _root_at(sc, v, steps0, lo, hi, ia, ib, fields, steps_index):
    s, steps = _apply(sc, fields, steps_index, steps0, v)
    return _be.bandwidth_crossings(s, ia, ib, steps[ia], steps[ib], lo, hi).x[..., 0]


def prepare(sc: Scenario, a: str, b: str, uncertain, samples: int, seed: int, basis: str):
    """(draws, per-variant steps at the centre, the static arguments of :func:`sample_roots`)."""
    a, b = _be.resolve_variant(a, sc.variants), _be.resolve_variant(b, sc.variants)
    if a == b:
        raise ValueError(f"a = b = {a!r}: a break-even needs two different variants")
    d = draw(sc, uncertain, samples, seed)
    fields, steps_index = _split(sc, d.names, basis)
    static = dict(ia=sc.ids.index(a), ib=sc.ids.index(b), fields=fields, steps_index=steps_index)
    return d, steps_to_target(sc, None, basis), static


def propagate_break_even(sc: Scenario, a: str, b: str, uncertain, samples: int = 10_000,
                         seed: int = 0, *, basis: str = "hypothesis", bandwidth=None,
                         lo_GBps: float = _be.BANDWIDTH_RANGE_GBps[0],
                         hi_GBps: float = _be.BANDWIDTH_RANGE_GBps[1], over: str = "bandwidth",
                         lo=None, hi=None) -> BreakEvenUncertainty:
    """The break-even bandwidth of a and b with uncertain inputs: Monte Carlo and the delta method.

    Args:
      sc: the scenario (scalar fields).
      a, b: variant ids or labels.
      uncertain: parameter name -> :class:`Normal` / :class:`LogNormal` / :class:`Uniform` /
        :class:`Seeds`, or a Calibration (its covariance), in SI units (steps: a count).
      samples, seed: Monte Carlo size and the NumPy seed.
      basis: which steps E' takes.
      bandwidth: GB/s at which to give the probability that a wins (default 33 points, log-uniform
        over the range).
      lo_GBps, hi_GBps: the searched range (``lo``, ``hi``: the same in B/s, as
        :func:`bandjax.break_even` takes them).
      over: ``"bandwidth"``, the one search run under uncertain inputs.

    Returns:
      :class:`BreakEvenUncertainty`. The delta method linearises the first crossing at the
      distributions' means: sd^2 = g^T Sigma g with g from implicit differentiation at the root.
    """
    if _be.OVER.get(over, over) != "wan_Bps":
        raise ValueError(f"over = {over!r}: under uncertain inputs (samples) the break-even is "
                         "searched over 'bandwidth' only")
    lo_GBps = lo_GBps if lo is None else float(lo) / 1e9
    hi_GBps = hi_GBps if hi is None else float(hi) / 1e9
    if not 0 < lo_GBps < hi_GBps < math.inf:
        raise ValueError(f"lo, hi = {plain(lo_GBps)}, {plain(hi_GBps)} GB/s: must be 0 < lo < hi, finite")
    a, b = _be.resolve_variant(a, sc.variants), _be.resolve_variant(b, sc.variants)
    d, steps0, static = prepare(sc, a, b, uncertain, samples, seed, basis)
    sc = _be.table_as_data(sc)  # a new table of the same K: the same programs
    grid = np.geomspace(lo_GBps, hi_GBps, 33) if bandwidth is None else np.atleast_1d(
        np.asarray(bandwidth, dtype=float))
    lo, hi = lo_GBps * 1e9, hi_GBps * 1e9
    V, S = jnp.asarray(d.samples), jnp.asarray(steps0)
    roots = _quick_roots(sc, V, S, lo, hi, **static)
    wins = _sample_wins(sc, V, S, jnp.asarray(grid * 1e9), **static)
    roots = np.asarray(roots) / 1e9
    crossed = np.isfinite(roots)
    q = np.quantile(roots[crossed], QUANTILES) if crossed.any() else np.full(len(QUANTILES), np.nan)

    center = jnp.asarray(d.center)
    root_fn = partial(_root_at, sc, steps0=jnp.asarray(steps0), lo=lo, hi=hi, **static)
    nominal = float(root_fn(center)) / 1e9
    g = np.asarray(jax.grad(root_fn)(center)) / 1e9 if math.isfinite(nominal) else np.full(len(d.names), np.nan)
    sd = float(np.sqrt(g @ d.cov @ g))
    from scipy.stats import norm

    z = norm.ppf(np.asarray(QUANTILES))
    return BreakEvenUncertainty(
        a=a, b=b, basis=basis, names=d.names, nominal_GBps=nominal, quantiles_GBps=q,
        delta_GBps=nominal + z * sd, delta_sd_GBps=sd, gradient=g,
        crossing_share=float(np.mean(crossed)), bandwidth_GBps=grid,
        p_a_wins=np.mean(np.asarray(wins), axis=0), roots_GBps=roots)


# --------------------------------------------------------------------------- sweep


@partial(jax.jit, static_argnames=("fields", "steps_index"))
def _sweep_samples(sc, V, steps0, grid_Bps, quantiles, *, fields, steps_index):

    def one(v):
        s, steps = _apply(sc, fields, steps_index, steps0, v)
        s = s.replace(wan_Bps=grid_Bps)
        return step_s(s), time_to_target_s(s, steps)

    step, ttt = jax.vmap(one)(V)  # (samples, bandwidth, variant)
    return jnp.quantile(step, quantiles, axis=0), jnp.quantile(ttt, quantiles, axis=0)


DEFAULT_BANDWIDTH_GBps = (0.1, 1, 12.5, 100, 1000)


def propagate_sweep(sc: Scenario, uncertain, samples: int = 10_000, seed: int = 0, *,
                    bandwidth=DEFAULT_BANDWIDTH_GBps, basis: str = "hypothesis",
                    others: dict | None = None) -> xr.Dataset:
    """Quantiles (5%, 50%, 95%) of every variant's step time and time to target over WAN
    bandwidths (GB/s) under uncertain inputs, Monte Carlo in one jitted, vmapped call.

    Returns an ``xarray.Dataset`` over (quantile, bandwidth, variant) with ``step_s`` and
    ``time_to_target_s`` (s; NaN where a variant never reaches the target or was not measured).
    ``others``: the rest of :func:`bandjax.sweep`'s arguments, which must be unset here (set
    them on the scenario: ``sc.replace(...)``).
    """
    given = sorted(k for k, v in (others or {}).items() if v is not None)
    if given:
        raise ValueError(f"sweep with samples: {', '.join(given)} given; allowed: bandwidth (GB/s) "
                         "and basis (set other fields on the scenario, sc.replace(...))")
    bandwidth = DEFAULT_BANDWIDTH_GBps if bandwidth is None else bandwidth
    basis = "hypothesis" if basis is None else basis
    d = draw(sc, uncertain, samples, seed)
    fields, steps_index = _split(sc, d.names, basis)
    grid = np.atleast_1d(np.asarray(bandwidth, dtype=float))
    if not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError(f"bandwidth = {bandwidth!r}: must be finite numbers > 0 GB/s")
    step, ttt = _sweep_samples(as_data(sc), jnp.asarray(d.samples), jnp.asarray(steps_to_target(sc, None, basis)),
                               jnp.asarray(grid * 1e9), jnp.asarray(QUANTILES), fields=fields,
                               steps_index=steps_index)
    dims = ("quantile", "bandwidth", "variant")
    coords = {"quantile": list(QUANTILES),
              "bandwidth": xr.Variable("bandwidth", grid, {"units": "GB/s"}),
              "variant": list(sc.ids)}
    ds = xr.Dataset({
        "step_s": xr.Variable(dims, np.asarray(step), {"units": "s", "long_name": "step time"}),
        "time_to_target_s": xr.Variable(dims, np.asarray(ttt), {"units": "s", "long_name": "time to the target loss"}),
    }, coords=coords)
    ds.attrs.update({"uncertain": ", ".join(d.names), "samples": int(samples), "seed": int(seed),
                     "basis": basis})
    return ds


__all__ = ["BreakEvenUncertainty", "Draws", "LogNormal", "MultiNormal", "Normal", "QUANTILES", "SKEWED", "Seeds",
           "Uniform",
           "draw", "prepare", "propagate_break_even", "sample_roots", "propagate_sweep"]
