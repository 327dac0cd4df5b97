"""The straggler tail a compute-utilisation target tolerates (docs/model.md section 16).

For a variant and a target u: the largest tail t (the share s of an exponential tail, or the sigma
of a lognormal one: the scenario's family) with compute utilisation CU(t) >= u, everything else as
the scenario has it.

Why CU never rises with the tail. The tail enters the step only through the compute part of an
inner step, c' (:func:`bandjax.step.inner_compute_s`), which grows with t (the largest of m
draws moves up with the tail: mu_m and sigma_m both grow). The step is

    step = c' + F max(0, comm_frag - (f + tau) c') / H = max(c', c' (1 - F (f + tau) / H) + F comm_frag / H)

with comm_frag free of c'. Where F (f + tau) <= H both pieces are non-decreasing in c', so the
step never falls and CU = c / step never rises as t grows: at most one crossing, found by
bisection. Every variant of the registry and of :data:`bandjax.METHODS` meets it at any overlap
f (tests/test_tolerance.py checks CU against the tail numerically). A method that hides a sync
behind more than its round (F (f + tau) > H) can gain from a longer compute part: its step is
still convex in c', so {t : CU(t) >= u} is one interval and, where it holds t = 0, the bisection
still finds its upper end; where it does not ("not_reachable": even without a tail the target is
missed), a larger tail might meet it, which this question does not look for.

The root search. CU(t) is evaluated by the closed forms themselves (the same functions a sweep
runs), for every target, grid point and variant at once; the bracket [0, t_max] is halved
:data:`ITERATIONS` times (the bracket shrinks 2^64-fold: to rounding), in one jitted call. A
closed form in c' exists (the step is piecewise linear in it), but inverting c'(t) needs a root
search anyway (the lognormal's moments are quadratures), and a bisection on CU itself stays right
whatever the compute part becomes (sites that differ). Values only: the answer is not
differentiable here (no implicit derivative is set up).

The family's largest tail t_max:
- exponential: s = 1 (X = E ~ Exp(1): the whole step is the tail; the family allows no more);
- lognormal: sigma = :data:`LOGNORMAL_SIGMA_MAX` = 1, a coefficient of variation
  sqrt(e - 1) = 1.31, above the largest an exponential tail can have (1), and the range over
  which the lognormal's quadrature is checked to 1e-13 (:mod:`bandjax.stragglers`). A measured
  step-time spread is some hundredths.
A target still met at t_max has status ``any``.

A tail needs a family: a scenario whose ``straggler`` is "none" has no tail to tolerate (choose
``straggler="exponential"`` or ``"lognormal"``; the value of ``straggler_s`` is ignored, it is
what is solved for).
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial

from . import _jax  # 64-bit floats, the Scenario PyTree; compile options
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .grid import QUICK_CELLS, grid_coords, scenario_arrays, variant_coords
from .links import as_data
from .need import _check_targets
from .scenario import STRAGGLERS, Scenario, reference
from .step import col, step_parts_s, step_s, sync_method
from .stragglers import EXPONENTIAL, LOGNORMAL, NONE
from .sweepargs import parse

LOGNORMAL_SIGMA_MAX = 1.0  # the largest lognormal sigma searched (see the module's docstring)
EXPONENTIAL_S_MAX = 1.0  # the exponential family's largest tail share
ITERATIONS = 64  # halvings of [0, t_max]: below rounding

# status of a tolerated tail
REACHED, NOT_REACHABLE, ANY = 0, 1, 2
STATUS_MEANINGS = "reached not_reachable any"


def _cu(sc: Scenario):
    """Compute utilisation of every variant, shape (..., variant), unit 1: the sweep's
    (:func:`bandjax.metrics.evaluate`: the mean GPU compute of a step over the step)."""
    m = sync_method(sc)
    return step_parts_s(sc, method=m)[0] / step_s(sc, method=m)


def _utilisation_at(sc: Scenario, tail):
    """CU of every variant with the tail ``tail`` (its variant axis last), shape (..., variant):
    variant v's CU at tail[..., v].

    Every field gets one more trailing axis, on which the tail's variant axis lies; the scenario
    is evaluated for every variant at every variant's tail and the diagonal taken (the registry
    is short: its square is cheap beside a compile), as :func:`bandjax.need._goodput_at` does."""
    tail = jnp.asarray(tail)
    at = jax.tree.map(lambda x: jnp.asarray(x)[..., None], sc)
    at = dataclasses.replace(at, straggler_s=tail)
    out = _cu(at)  # (..., the tail's variant, variant)
    V = out.shape[-1]
    out = jnp.broadcast_to(out, jnp.broadcast_shapes(out.shape, tail.shape[:-1] + (V, V)))
    return jnp.diagonal(out, axis1=-2, axis2=-1)


def largest_tail(family):
    """t_max of each point's family: 1 for an exponential share, :data:`LOGNORMAL_SIGMA_MAX`
    for a lognormal sigma (NaN for "none", which has no tail)."""
    family = jnp.asarray(family, dtype=float)
    return jnp.where(family == EXPONENTIAL, EXPONENTIAL_S_MAX,
                     jnp.where(family == LOGNORMAL, LOGNORMAL_SIGMA_MAX, jnp.nan))


@jax.jit
def tolerated_tail_s(sc: Scenario, utilisation):
    """The largest tail of the scenario's straggler family at which each variant's compute
    utilisation stays >= ``utilisation``, by bisection over [0, t_max] (see the module's
    docstring), with its status.

    Args:
      sc: the scenario; every numeric field may be an array, broadcasting with the rest. Its
        ``straggler`` must be exponential or lognormal at every point (its ``straggler_s`` is not
        read).
      utilisation: targets u in (0, 1], any shape; the result has it in front of the scenario's
        batch shape and the variant axis.

    Returns:
      (tail, status, compute utilisation at the tail): tail is the answer where REACHED, t_max
      where ANY (met at the family's largest tail), NaN where NOT_REACHABLE (even without a tail
      CU < u); the utilisation is the closed forms' at the answer (NaN where not reachable).
    """
    V = len(sc.variants)
    top = largest_tail(sc.straggler)[..., None] * jnp.ones(V)  # (..., variant)
    u = jnp.asarray(utilisation, dtype=float)
    at_zero = _utilisation_at(sc, jnp.zeros_like(top))
    at_top = _utilisation_at(sc, top)
    u = u.reshape(u.shape + (1,) * jnp.ndim(at_zero))
    lo = jnp.zeros_like(at_zero * u)
    hi = top * jnp.ones_like(lo)

    def halve(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = _utilisation_at(sc, mid) >= u
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    lo, hi = jax.lax.fori_loop(0, ITERATIONS, halve, (lo, hi))
    none = at_zero < u
    anything = at_top >= u
    status = jnp.where(none, NOT_REACHABLE, jnp.where(anything, ANY, REACHED))
    tail = jnp.where(none, jnp.nan, jnp.where(anything, hi, lo))
    cu = jnp.where(none, jnp.nan, _utilisation_at(sc, jnp.where(none, 0.0, tail)))
    return tail, status.astype(jnp.int8), cu


_tolerated_once = _jax.quick(tolerated_tail_s)


def _check_family(family) -> None:
    f = np.asarray(family, dtype=float)
    if np.any(f == NONE):
        raise ValueError("straggler = 'none': a tolerated tail needs a straggler family (the "
                         "tail is the exponential's share s or the lognormal's sigma); set "
                         "straggler='exponential' or 'lognormal'")


def tolerated_tail(scenario: Scenario | None = None, utilisation=0.9, *, variant=None,
                   **grid) -> xr.Dataset:
    """The largest straggler tail (the share s of an exponential tail, the sigma of a lognormal
    one: the scenario's family) at which each variant's compute utilisation stays at or above
    ``utilisation`` (docs/model.md section 16), over any grid of the other parameters.

    Args:
      scenario: the parameters; its ``straggler`` family (exponential or lognormal) says which
        tail; its ``straggler_s`` is what is solved for and is not read. The reference scenario
        (with an exponential tail) by default.
      utilisation: compute-utilisation targets u in (0, 1] (c / step), one or a list.
      variant: variant ids of the scenario's registry (all by default), as for :func:`bandjax.sweep`.
      **grid: any other argument of :func:`bandjax.sweep` but ``straggler_s`` (``H``, ``model``,
        ``dcs``, ``bandwidth``, ``straggler``, ...): each a scalar or a sequence (a dimension).

    Returns:
      An ``xarray.Dataset`` over (utilisation, the swept dimensions, variant) with
      ``tolerated_tail`` (unit 1: s or sigma; NaN where not reachable, the family's largest tail
      where any is tolerated), ``status`` (``reached``, ``not_reachable``: even without a tail
      CU < u; ``any``: met at the family's largest tail, s = 1 or sigma =
      :data:`LOGNORMAL_SIGMA_MAX`; flag values and meanings), ``compute_utilisation`` (unit 1, at
      the tail returned) and ``family`` (the family's name at each point).

    Values only: not differentiable (a bisection, no implicit derivative). Raises ValueError for a
    target outside (0, 1], for the family "none" anywhere on the grid (a tail needs a family) and
    for a swept ``straggler_s``.
    """
    sc = reference().replace(straggler="exponential") if scenario is None else scenario
    if "straggler_s" in grid:
        raise ValueError("straggler_s: tolerated_tail solves for the tail; sweep any other "
                         "parameter instead")
    u = _check_targets(utilisation)
    g = parse(sc, variant=variant, **grid)
    arrays = scenario_arrays(sc, g)
    _check_family(arrays.straggler)
    small = u.size * math.prod(g.shape) * len(sc.ids) <= QUICK_CELLS
    solve = _tolerated_once if small else tolerated_tail_s
    tail, status, cu = solve(as_data(arrays), u)  # a new table of the same K: the same program
    index = np.asarray(g.index)
    tail, status, cu = (np.take(np.asarray(x), index, axis=-1) for x in (tail, status, cu))
    shape = (u.size, *g.shape, index.size)
    tail, status, cu = (np.broadcast_to(x, shape) for x in (tail, status, cu))
    dims = ["utilisation", *g.dims, "variant"]
    if not g.variant_is_dim:
        tail, status, cu = (x[..., 0] for x in (tail, status, cu))
        dims = dims[:-1]
    family = np.broadcast_to(np.asarray(arrays.straggler, dtype=float), g.shape).astype(int)
    coords: dict = {"utilisation": xr.Variable("utilisation", u, {
        "units": "1", "long_name": "compute utilisation target (GPU compute / step time)"}),
        **grid_coords(g), **variant_coords(sc, g)}
    ds = xr.Dataset({
        "tolerated_tail": xr.Variable(dims, tail, {
            "units": "1", "long_name": "largest straggler tail (exponential share s or lognormal "
                                       "sigma) at which compute utilisation stays >= the target",
            "note": "NaN where even no tail meets the target; the family's largest tail where "
                    "every tail does (status)"}),
        "status": xr.Variable(dims, status, {
            "units": "1", "long_name": "whether a tail is tolerated",
            "flag_values": [REACHED, NOT_REACHABLE, ANY], "flag_meanings": STATUS_MEANINGS}),
        "compute_utilisation": xr.Variable(dims, cu, {
            "units": "1", "long_name": "compute utilisation at the tail returned"}),
        "family": xr.Variable(list(g.dims), np.asarray(STRAGGLERS, dtype=object)[family], {
            "long_name": "the straggler family whose tail is given"}),
    }, coords=coords)
    ds.attrs.update({
        "title": "bandjax: the straggler tail a compute-utilisation target tolerates",
        "largest_tail": {"exponential": EXPONENTIAL_S_MAX, "lognormal": LOGNORMAL_SIGMA_MAX},
        "method": f"bisection of CU(tail) >= u over [0, largest tail], {ITERATIONS} halvings "
                  "(docs/model.md section 16); values only, not differentiable",
        "assumptions": "steps to target assumed not to change with the tail; at H > 1 each DC's "
                       "round taken as a normal (docs/model.md section 16)",
    })
    return ds


def status_names(status: xr.DataArray) -> xr.DataArray:
    """The name of each code of ``tolerated_tail(...)["status"]``."""
    return xr.apply_ufunc(lambda a: np.asarray(STATUS_MEANINGS.split(), dtype=object)[a], status)
