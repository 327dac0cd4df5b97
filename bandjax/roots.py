"""Every sign change of a scalar function over a range, for whole grids at once: pure ``jax``.

:func:`find_crossings` is the search behind every break-even in bandjax. For a residual r(x, theta)
of one positive variable x (a bandwidth, a budget, a rate), it

1. evaluates r on a coarse grid, uniform in log x, and marks each cell where the sign changes
   (a bracket); a residual that is zero at a grid point counts as positive, so a root on the grid is
   found once;
2. refines the first ``max_roots`` brackets of every grid point at once with a safeguarded Newton
   iteration in u = log x (the derivative from ``jax.jvp``; a step that leaves the bracket is
   replaced by bisection), in one ``lax.while_loop`` that stops when every root has converged;
3. attaches the derivative by the implicit function theorem, du*/dtheta = -(dr/dtheta) / (dr/du),
   evaluated once at the root: gradients never flow through the iterations, so they cost one extra
   residual evaluation whatever the number of iterations.

Everything broadcasts: theta's leaves, ``lo`` and ``hi`` may have any shapes that broadcast to a
common batch shape, and the residual must broadcast x of shape (n, *batch) against them, each
output element depending only on the x at the same position (an elementwise function of x).

The search assumes only continuity within a grid cell. Two roots closer than one cell of the coarse
grid (a factor (hi/lo)^(1/(grid-1)) in x) cancel out and are not seen; make ``grid`` finer for
functions that wiggle. A root where r touches zero without changing sign is not a crossing.

optimistix (``optimistix.root_find`` with ``optimistix.Newton`` and ``ImplicitAdjoint``) solves one
root of one system; here each grid point holds several independent scalar roots found from coarse
brackets, which a hand-written bracketed Newton in ``jax.lax`` does for all of them in one loop.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

from . import _jax  # noqa: F401  (64-bit floats, the Scenario PyTree)
import jax
import jax.numpy as jnp
import numpy as np

# Why a search returns what it does (``Crossings.status``).
CROSSES, A_WINS, B_WINS, TIE, NEITHER, NOT_AVAILABLE = range(6)
STATUS_NAMES = ("crosses", "a_wins_throughout", "b_wins_throughout", "tie_throughout",
                "neither_reaches_target", "not_available")

MAX_ITERATIONS = 64  # Newton converges in a handful; bisection alone needs ~50 from a grid cell
UNROLLED = 4  # Newton steps unrolled ahead of the loop on a large batch
# A large batch, from this many points: the search unrolls UNROLLED Newton steps and evaluates
# the brackets' ends afresh. On a smaller one it unrolls none and reads the ends off the coarse
# grid, since both cost more to compile than they save in passes (0.5 s of a 2 s first call of a
# scalar break-even, measured).
LARGE_BATCH = 1024


class Crossings(NamedTuple):
    """The crossings of one residual r(x) = log T_a(x) - log T_b(x) over a range, per grid point.

    Attributes:
      x: (..., max_roots) the crossings in ascending order, in the units of the searched variable;
        NaN where there are fewer.
      count: (...,) sign changes found on the coarse grid; more than ``max_roots`` means only the
        first ``max_roots`` are in ``x``.
      a_wins_below: (..., max_roots) whether r < 0 (a is faster) just below each crossing; a wins
        above it where this is False. False in NaN slots.
      status: (...,) int8, :data:`CROSSES` or, when there is no crossing, who wins throughout
        (:data:`A_WINS`, :data:`B_WINS`, :data:`TIE`) or why there is no answer
        (:data:`NOT_AVAILABLE`: the residual is NaN; callers may refine it to :data:`NEITHER`).
      residual: (..., max_roots) r at each crossing (0 up to rounding; NaN in NaN slots).
    """

    x: jax.Array
    count: jax.Array
    a_wins_below: jax.Array
    status: jax.Array
    residual: jax.Array


def _validate_range(lo, hi, grid: int, max_roots: int) -> None:
    from ._limits import MAX_ROOT_GRID

    def whole(x):
        return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
    if not (whole(grid) and 2 <= grid <= MAX_ROOT_GRID):
        raise ValueError(f"grid = {grid!r}: must be a whole number of points in [2, {MAX_ROOT_GRID:,}]")
    if not (whole(max_roots) and 1 <= max_roots < grid):
        raise ValueError(f"max_roots = {max_roots!r}: must be a whole number in [1, grid - 1 = "
                         f"{grid - 1:,}] (a crossing needs a bracket of the grid)")
    lo, hi = _concrete(lo), _concrete(hi)  # None under jit: checked by the caller instead
    for name, v in (("lo", lo), ("hi", hi)):
        if v is not None and not np.all(np.isfinite(v) & (v > 0)):
            raise ValueError(f"{name} = {v.tolist()!r}: the range is searched in log x; must be "
                             "finite and > 0")
    if lo is not None and hi is not None and not np.all(lo < hi):
        raise ValueError(f"range lo = {lo.tolist()!r}, hi = {hi.tolist()!r}: must have lo < hi")


def _concrete(v):
    try:
        return np.asarray(v, dtype=float)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def find_crossings(residual: Callable, theta, lo, hi, *, grid: int = 32,
                   max_roots: int = 2, implicit: bool = True) -> Crossings:
    """Every crossing of ``residual(x, theta) = 0`` for x in [lo, hi], for all grid points at once.

    Args:
      residual: r(x, theta) -> array, elementwise in x (x has shape (n, *batch)); r < 0 means "a
        wins" in the returned labels. Written in ``jax.numpy``; differentiable in x and theta.
      theta: a PyTree of arrays (the parameters); gradients of the result flow to it.
      lo, hi: the range of x (> 0, same units as x), scalars or arrays broadcasting to the batch.
      grid: points of the coarse log-uniform grid that finds the brackets (static).
      max_roots: how many crossings per grid point to refine (static).
      implicit: give the crossings their derivative in ``theta`` (static; ``False`` for a caller
        that only wants the values: one tracing of the residual's derivative less to compile).

    Returns:
      :class:`Crossings`. ``jax.jit``-able (with ``residual``, ``grid``, ``max_roots`` static) and
      differentiable in ``theta`` (first order, by the implicit function theorem).
    """
    _validate_range(lo, hi, grid, max_roots)
    batch = jnp.broadcast_shapes(*(jnp.shape(v) for v in jax.tree.leaves(theta)),
                                 jnp.shape(lo), jnp.shape(hi))
    size = math.prod(batch)
    # The search runs on a flat batch: elementwise code on (n, size) arrays compiles to simple
    # loops, where high-rank broadcasting and gathers are many times slower on CPU.
    flat = lambda v: jnp.broadcast_to(jnp.asarray(v, dtype=float), batch).reshape(size)  # noqa: E731
    theta = jax.tree.map(flat, theta)
    f = lambda u, th: residual(jnp.exp(u), th)  # noqa: E731  (the search runs in u = log x)

    sg_theta = jax.lax.stop_gradient(theta)
    # A scalar range stays scalar, so the coarse grid's exp is taken once per grid point.
    scalar_range = jnp.ndim(lo) == 0 and jnp.ndim(hi) == 0
    log_range = lambda v: jnp.log(jnp.asarray(v, dtype=float)) if scalar_range else flat(jnp.log(v))  # noqa: E731
    u_lo, u_hi = log_range(lo), log_range(hi)

    def u_at(k):  # grid point k (a float array); the same arithmetic wherever it is used
        return jnp.where(k >= grid - 1, u_hi, u_lo + (k / (grid - 1)) * (u_hi - u_lo))

    u_grid = u_at(jnp.arange(grid, dtype=float)[:, None])  # (grid, size) or (grid, 1)
    g = jnp.broadcast_to(f(u_grid, sg_theta), (grid, size))

    # Brackets: cells whose ends are both numbers and have opposite signs (0 counts as positive).
    pos = g >= 0
    is_nan = jnp.isnan(g)
    bracket = (pos[:-1] != pos[1:]) & ~is_nan[:-1] & ~is_nan[1:]  # (grid-1, size)
    count = jnp.sum(bracket, axis=0)
    # The first max_roots brackets, by repeated minimum (cumsum and gathers are slow on CPU).
    cells = jnp.arange(grid - 1)[:, None]
    first = []
    for _ in range(max_roots):
        k = jnp.min(jnp.where(bracket, cells, grid), axis=0)
        first.append(k)
        bracket = bracket & (cells > k)
    k = jnp.stack(first)  # (max_roots, size); grid where there is none
    found = k < grid
    k = jnp.where(found, k, 0).astype(float)
    a0, b0 = jnp.broadcast_to(u_at(k), k.shape), jnp.broadcast_to(u_at(k + 1), k.shape)
    small = size < LARGE_BATCH
    if small:  # r at the bracket's ends read off the coarse grid: the residual traced once less
        at_cell = lambda row, kk: jnp.sum(jnp.where(cells == kk, row, 0.0), axis=0)  # noqa: E731
        ga = jnp.stack([at_cell(g[:-1], kk) for kk in k])  # exact: one term is selected
        gb = jnp.stack([at_cell(g[1:], kk) for kk in k])
    else:  # on a large batch those sums cost more than evaluating both ends at once
        ends = jnp.broadcast_to(f(jnp.concatenate([a0, b0]), sg_theta), (2 * max_roots, size))
        ga, gb = ends[:max_roots], ends[max_roots:]

    u_root = _refine(f, sg_theta, a0, b0, ga, gb, found, unrolled=0 if small else UNROLLED)

    u_star = jax.lax.stop_gradient(jnp.where(found, u_root, a0))
    if implicit:
        # Implicit differentiation: the value is the converged root, the derivative -r_theta / r_u.
        r, r_u = jax.jvp(lambda u: f(u, theta), (u_star,), (jnp.ones_like(u_star),))
        r_u = jax.lax.stop_gradient(r_u)
        safe = found & jnp.isfinite(r_u) & (r_u != 0)
        step = (r - jax.lax.stop_gradient(r)) / jnp.where(safe, r_u, 1.0)
        u_out = jnp.where(found, u_star - jnp.where(safe, step, 0.0), jnp.nan)
    else:
        r = jnp.broadcast_to(f(u_star, sg_theta), u_star.shape)
        u_out = jnp.where(found, u_star, jnp.nan)

    a_wins_below = found & (ga < 0)
    status = jnp.select(
        [count > 0, jnp.any(is_nan, axis=0), jnp.all(g == 0, axis=0), jnp.all(g <= 0, axis=0),
         jnp.all(g >= 0, axis=0)],
        [CROSSES, NOT_AVAILABLE, TIE, A_WINS, B_WINS], NOT_AVAILABLE).astype(jnp.int8)
    per_root = lambda a: jnp.moveaxis(a, 0, -1).reshape(*batch, max_roots)  # noqa: E731
    return Crossings(
        x=per_root(jnp.exp(u_out)),
        count=count.reshape(batch),
        a_wins_below=per_root(a_wins_below),
        status=status.reshape(batch),
        residual=per_root(jnp.where(found, jax.lax.stop_gradient(r), jnp.nan)),
    )


def _refine(f, theta, a, b, ga, gb, active, unrolled=UNROLLED):
    """Safeguarded Newton in u inside the brackets [a, b] (where ``active``), all at once.

    Each step evaluates r and dr/du at the iterate, shrinks the bracket to the side that still holds
    the sign change, then takes the Newton step if it lands strictly inside the new bracket and
    bisects otherwise. Converged when the Newton step is below a few ulps of u, the bracket is that
    narrow, or r is exactly 0.
    """
    pos_a = ga >= 0
    # Start from the secant (regula falsi) point: for the near-linear log-ratios here it is
    # already close, so Newton needs a handful of steps.
    x0 = jnp.where(gb != ga, a - ga * (b - a) / (gb - ga), 0.5 * (a + b))
    x0 = jnp.where((x0 > a) & (x0 < b), x0, 0.5 * (a + b))
    tol = 4 * jnp.finfo(x0.dtype).eps * (1.0 + jnp.abs(x0))
    done0 = ~active | (ga == 0) | (gb == 0)
    x0 = jnp.where(ga == 0, a, jnp.where(gb == 0, b, x0))
    ones = jnp.ones_like(x0)

    def cond(state):
        _, _, _, done, it = state
        return (it < MAX_ITERATIONS) & ~jnp.all(done)

    def body(state):
        x, lo, hi, done, it = state
        r, dr = jax.jvp(lambda u: f(u, theta), (x,), (ones,))
        r = jnp.broadcast_to(r, x.shape)
        dr = jnp.broadcast_to(dr, x.shape)
        same = (r >= 0) == pos_a
        lo_n = jnp.where(same, x, lo)
        hi_n = jnp.where(same, hi, x)
        step = r / dr
        newton = x - step
        # A Newton step below a few ulps has converged; it is tested before the bracket check,
        # which would reject it (x is now an end of the bracket).
        small = jnp.abs(step) <= tol
        inside = jnp.isfinite(newton) & (newton > lo_n) & (newton < hi_n)
        x_n = jnp.where(inside | small, newton, 0.5 * (lo_n + hi_n))
        converged = (r == 0) | small | (hi_n - lo_n <= tol) | jnp.isnan(r)
        x_n = jnp.where((r == 0) | ~jnp.isfinite(x_n), x, x_n)
        return (jnp.where(done, x, x_n), jnp.where(done, lo, lo_n), jnp.where(done, hi, hi_n),
                done | converged, it + 1)

    # The first steps unrolled: XLA fuses them into one pass over the batch, where each pass of a
    # while loop reads and writes every array; the loop then finishes the stragglers.
    state = (x0, a, b, done0, jnp.asarray(0))
    for _ in range(unrolled):
        state = body(state)
    x, *_ = jax.lax.while_loop(cond, body, state)
    return x


def time_crossings(time_a: Callable, time_b: Callable, theta, lo, hi, *, grid: int = 32,
                   max_roots: int = 2) -> Crossings:
    """Every crossing of two time-to-target curves: :func:`find_crossings` of

        r(x) = log time_a(x, theta) - log time_b(x, theta)

    for user-supplied curves (any number of crossings); ``time_a``/``time_b`` elementwise in x.
    """
    return find_crossings(lambda x, th: jnp.log(time_a(x, th)) - jnp.log(time_b(x, th)), theta,
                          lo, hi, grid=grid, max_roots=max_roots)
