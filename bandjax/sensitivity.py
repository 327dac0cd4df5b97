"""Sensitivities of break-evens: which parameter moves the answer most.

The elasticity of a break-even x* with respect to a parameter p is the % change of x* per % change
of p:

    e_p = d log x* / d log p = (p / x*) dx*/dp

computed by forward-mode differentiation of the search (:mod:`bandjax.roots`), whose derivative
is the implicit function theorem's, dx*/dp = -(dr/dp) / (dr/dx) at the root: never through the
iterations. A parameter that is 0 or infinite (a [free] budget, a zero fixed time) has elasticity 0:
no finite % change of it exists, and where it is 0 or not charged it does not enter the times.
"""

from __future__ import annotations

import dataclasses
from functools import partial

from . import _jax  # 64-bit floats, the Scenario PyTree; compile options
import jax
import jax.numpy as jnp
import numpy as np

from . import breakeven as _be
from .parameters import with_parameters
from .scenario import Scenario
from .metrics import time_to_target_s

__all__ = ["budget_elasticities", "crossing_elasticities", "elasticities"]


def _scaled(theta, names, z):
    """theta with each parameter names[i] multiplied by exp(z[i]) where it is finite and non-zero.

    One substitution of every field at once (not one copy of the scenario per parameter): less
    for the first call to trace."""
    sc, steps_a, steps_b = theta
    values = {}
    for i, name in enumerate(names):
        p = jnp.asarray(_be.get_parameter(theta, name), dtype=float)
        values[name] = jnp.where(jnp.isfinite(p) & (p != 0), p * jnp.exp(z[i]), p)
    steps_a, steps_b = values.pop("steps_a", steps_a), values.pop("steps_b", steps_b)
    return with_parameters(sc, values), steps_a, steps_b


@partial(jax.jit, static_argnames=("k", "bandwidth", "grid", "max_roots", "general"))
def crossing_elasticities(sc: Scenario, ia, ib, steps_a, steps_b, lo, hi, k=0, *,
                          bandwidth: bool = True, grid: int = _be.GRID,
                          max_roots: int = _be.MAX_ROOTS, general: bool | None = None):
    """d log x* / d log p of every crossing x* with respect to every parameter p of
    :func:`bandjax.breakeven.parameters`: shape (..., max_roots, parameter), NaN without a crossing.

    Searches over the WAN (``bandwidth=True``, ``lo``/``hi`` in B/s) or over parameter number ``k``
    of :func:`~bandjax.breakeven.parameters`; other arguments as in
    :func:`bandjax.breakeven.bandwidth_crossings` (pairs may be a grid dimension). ``general``
    (static): :func:`bandjax.breakeven.needs_general_search` of the concrete scenario (None: True,
    since the scenario is traced here: the search then re-evaluates the times at each trial).
    """
    theta = (sc, jnp.asarray(steps_a, dtype=float), jnp.asarray(steps_b, dtype=float))
    names = _be.parameters(sc)

    def log_crossings(z):
        sc_z, na, nb = _scaled(theta, names, z)
        if bandwidth:
            c = _be.bandwidth_crossings(sc_z, ia, ib, na, nb, lo, hi, grid=grid, max_roots=max_roots,
                                        general=general)
        else:
            c = _be._field_crossings(sc_z, ia, ib, na, nb, lo, hi, k, grid=grid, max_roots=max_roots)
        return jnp.log(c.x)

    return jax.jacfwd(log_crossings)(jnp.zeros(len(names)))


@partial(jax.jit, static_argnames=("k", "names"))
def _field_elasticities(sc: Scenario, ia, ib, steps_a, steps_b, x, k: int, names: tuple):
    """d log x* / d log p at known crossings ``x`` (..., max_roots) of the search over parameter
    number ``k`` (static; the WAN's bandwidth ``wan_Bps`` too), for each parameter p of ``names``
    (static), by the implicit function theorem at the root:

        e_p = -(dr/dz_p) / (dr/du),   u = log x*,  z_p = log p

    with r the residual of :func:`bandjax.breakeven.field_crossings`: the log ratio of the two
    times to target (a step / ETTR; on sites that differ, over the throughput). The same
    derivative the search's own implicit step gives (0 where dr/du is 0 or not finite), without
    compiling the search a second time. Shape (..., max_roots, len(names)); NaN where x is not a
    number.
    """
    theta = (sc, jnp.asarray(steps_a, dtype=float), jnp.asarray(steps_b, dtype=float))
    searched = _be.parameters(sc)[k]
    if searched == "steps_a":  # the searched steps are a variable, not a table entry
        theta = (sc, jnp.ones_like(theta[1]), theta[2])
    if searched == "steps_b":
        theta = (sc, theta[1], jnp.ones_like(theta[2]))

    def residual(u, z):  # u: (...,) one crossing per point; z[-1] moves u, z[:-1] the parameters
        sc_x, na, nb = _be.with_parameter_at(_scaled(theta, names, z[:-1]), k, jnp.exp(u + z[-1]))
        s = time_to_target_s(sc_x, 1.0)  # a step / ETTR, as the search's residual
        return jnp.log(na * _be._pick(s, ia)) - jnp.log(nb * _be._pick(s, ib))

    u = jnp.log(jnp.asarray(x, dtype=float))
    # a Python loop over the (few) root slots: vmap over a slot or two costs more to trace. The
    # searched parameter is replaced by x: its own elasticity is 0, as in the search.
    return jnp.stack([_at_root(lambda z, u=u[..., r]: residual(u, z), u[..., r], len(names))
                      for r in range(u.shape[-1])], axis=-2)


def _at_root(residual, u, n: int):
    """-(dr/dz) / (dr/du) at a root u = log x*, for ``residual(z)`` whose z[:n] are the log
    parameters and z[n] moves u: one forward pass with a tangent per parameter and one for u.
    0 where dr/du is 0 or not finite, NaN where u is not a number. Shape (..., n)."""
    jac = jax.jacfwd(residual)(jnp.zeros(n + 1))
    r_z, r_u = jac[..., :-1], jac[..., -1]
    safe = jnp.isfinite(r_u) & (r_u != 0)
    e = jnp.where(safe[..., None], -r_z / jnp.where(safe, r_u, 1.0)[..., None], 0.0)
    return jnp.where(jnp.isfinite(u)[..., None], e, jnp.nan)


quick_elasticities_at = _jax.quick(_field_elasticities, static_argnames=("k", "names"))
""":func:`_field_elasticities` (the elasticities at crossings already found) compiled for a call
made once (:func:`bandjax._jax.quick`): the report's and :func:`elasticities`'s, over the WAN's
bandwidth as over any other parameter."""


def elasticities(sc: Scenario, a: str, b: str, *, over: str = "bandwidth",
                 basis: str = "hypothesis", lo=None, hi=None, parameters=None,
                 grid: int = _be.GRID) -> tuple[_be.BreakEven, dict[str, np.ndarray]]:
    """The break-even of a and b and its elasticity with respect to every parameter.

    Args:
      sc, a, b, over, basis, lo, hi, grid: as in :func:`bandjax.breakeven.break_even`.
      parameters: names (see :func:`bandjax.breakeven.parameter_names`); default all of them but
        the one searched over and the energy fields (which no time depends on).

    Returns:
      (the :class:`~bandjax.breakeven.BreakEven`, {parameter: elasticity array (..., max_roots)}),
      NaN where there is no crossing. Elasticities are dimensionless (% per %).
    """
    result = _be.break_even(sc, a, b, over=over, basis=basis, lo=lo, hi=hi, grid=grid)
    names = tuple(parameters) if parameters is not None else tuple(
        n for n in _be.parameter_names(result.a, result.b)
        if n != result.parameter and not _is_energy(n))
    for n in names:
        _be._check_parameter(n, sc)
    every = _be.parameters(sc)
    ia, ib = sc.ids.index(result.a), sc.ids.index(result.b)
    k = every.index(result.parameter)
    sc = _be.table_as_data(sc)  # a new table of the same K: the same programs
    # at the crossings found, for the parameters asked: the search is not compiled again
    jac = np.asarray(quick_elasticities_at(sc, ia, ib, result.steps_a, result.steps_b, result.x,
                                           k=k, names=names))
    return result, {n: jac[..., i] for i, n in enumerate(names)}


def _is_energy(name: str) -> bool:
    from .scenario import FIELDS

    return name in FIELDS and FIELDS[name][0] == "energy"


@partial(jax.jit, static_argnames=("names",))
def _budget_elasticities_at(sc: Scenario, x, names: tuple[str, ...]):
    """d log(budget break-even) / d log(each of ``names``) at the break-even ``x`` (FLOP/s) found
    by :func:`bandjax.breakeven.budget_break_even_search`, by the implicit function theorem on its
    residual r (log compute stage - log the slowest other stage):

        e_p = -(dr/dz_p) / (dr/du),   u = log x,  z_p = log p

    0 where dr/du is 0 or not finite, NaN where x is not a number: the search's own implicit
    step, without differentiating through a second search."""
    theta = (sc, jnp.asarray(1.0), jnp.asarray(1.0))
    u = jnp.log(jnp.asarray(x, dtype=float))

    def residual(z):  # z[:-1] scale the parameters, z[-1] moves u
        sc_z, _, _ = _scaled(theta, names, z[:-1])
        return _be._budget_residual(jnp.exp(u + z[-1]), sc_z)

    return _at_root(residual, u, len(names))


_quick_budget_at = _jax.quick(_budget_elasticities_at, static_argnames=("names",))


def budget_elasticities(sc: Scenario, parameters=None, lo_GFLOPs: float = 1e-3,
                        hi_GFLOPs: float = 1e9) -> tuple[float, dict[str, float]]:
    """The budget break-even (FLOP/s, found numerically) and its elasticity with respect to every
    numeric scenario field (or ``parameters``). Scalar scenarios."""
    from .scenario import FIELDS

    names = tuple(parameters) if parameters is not None else tuple(
        n for n in FIELDS if n != "budget_FLOPs" and not _is_energy(n) and n not in _be.DISCRETE)
    # the module's stages do not read the links: one program for every table. The break-even is
    # budget_break_even's own search (one program for both), its derivatives taken at the root
    sc = dataclasses.replace(sc, links=None)
    c = _be._quick_budget(sc, lo_GFLOPs * 1e9, hi_GFLOPs * 1e9)
    x = np.asarray(c.x)[..., 0]
    jac = np.asarray(_quick_budget_at(sc, x, names=names))
    return float(x), {n: float(jac[..., i]) for i, n in enumerate(names)}
