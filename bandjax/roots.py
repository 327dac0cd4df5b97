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

The search assumes only continuity within a cell. Two roots closer than one cell cancel out and are
not seen, so a caller that knows where its residual changes form passes those points as ``extra``
bracket points, merged with the coarse grid: where r is linear (or monotone) between consecutive
points, each cell holds at most one root and none can hide (the break-evens pass every variant's
kinks, :mod:`bandjax.breakeven`). Otherwise make ``grid`` finer for functions that wiggle. A root
where r touches zero without changing sign is not a crossing.

Ties: where |r| <= ``tie_rtol`` (:data:`TIE_RTOL`; r is a relative difference of two times) at both
ends of a run of cells spanning more than :data:`TIE_MIN_LENGTH` in log x, the two are equal over
that whole run: a tie interval, reported with its ends (bracket points: exact where the tie starts
and ends at an ``extra`` point, else to the grid's resolution) and the sign of r just outside it.
A tie is not a crossing, and a cell that touches one brackets none.

optimistix (``optimistix.root_find`` with ``optimistix.Newton`` and ``ImplicitAdjoint``) solves one
root of one system; here each grid point holds several independent scalar roots found from coarse
brackets, which a hand-written bracketed Newton in ``jax.lax`` does for all of them in one loop.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Callable, NamedTuple

from . import _jax  # noqa: F401  (64-bit floats, the Scenario PyTree)
import jax
import jax.numpy as jnp
import numpy as np

# Why a search returns what it does (``Crossings.status``).
CROSSES, A_WINS, B_WINS, TIE, NEITHER, NOT_AVAILABLE, TIE_PART = range(7)
STATUS_NAMES = ("crosses", "a_wins_throughout", "b_wins_throughout", "tie_throughout",
                "neither_reaches_target", "not_available", "tie_over_interval")

# Two times are tied where their relative difference |r| is at most this (both compute-bound with
# equal steps x c give r = 0 exactly; 1e-12 leaves room for rounding in the closed forms).
TIE_RTOL = 1e-12
# A tie spans more than this in log x (relative length); shorter runs of |r| <= TIE_RTOL are a
# crossing at a point that the bracket points hold more than once.
TIE_MIN_LENGTH = 1e-12

MAX_ITERATIONS = 64  # Newton converges in a handful; bisection alone needs ~50 from a grid cell
UNROLLED = 4  # Newton steps unrolled ahead of the loop on a large batch
# A large batch, from this many points: the search unrolls UNROLLED Newton steps and evaluates
# the brackets' ends afresh. On a smaller one it unrolls none and reads the ends off the coarse
# grid, since both cost more to compile than they save in passes (0.5 s of a 2 s first call of a
# scalar break-even, measured).
LARGE_BATCH = 1024
# A large batch's Newton steps after the unrolled ones run on at most this many unconverged
# elements gathered apart (:func:`_refine`)
STRAGGLERS = 256


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
      tie_lo, tie_hi: (..., max_roots) the ends of each interval over which a and b tie (|r| <=
        :data:`TIE_RTOL`), ascending, in the units of x; NaN where there are fewer.
      tie_count: (...,) tie intervals found (more than ``max_roots``: only the first are given).
      tie_below, tie_above: (..., max_roots) int8, the sign of r just below and just above each
        tie (-1: a is faster, +1: b is faster, 0: the tie reaches the range's end, or r is NaN).
      status: :data:`TIE` where a and b tie over the whole range; :data:`TIE_PART` where they tie
        over part of it and never cross.
    """

    x: jax.Array
    count: jax.Array
    a_wins_below: jax.Array
    status: jax.Array
    residual: jax.Array
    tie_lo: jax.Array
    tie_hi: jax.Array
    tie_count: jax.Array
    tie_below: jax.Array
    tie_above: jax.Array


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
                   max_roots: int = 2, implicit: bool = True, extra=None,
                   tie_rtol: float = TIE_RTOL, one_pass: bool = False,
                   start: Callable | None = None) -> Crossings:
    """Every crossing of ``residual(x, theta) = 0`` for x in [lo, hi], for all grid points at once.

    Args:
      residual: r(x, theta) -> array, elementwise in x (x has shape (n, *batch)); r < 0 means "a
        wins" in the returned labels. Written in ``jax.numpy``; differentiable in x and theta.
      theta: a PyTree of arrays (the parameters); gradients of the result flow to it.
      lo, hi: the range of x (> 0, same units as x), scalars or arrays broadcasting to the batch.
      grid: points of the coarse log-uniform grid that finds the brackets (static).
      max_roots: how many crossings (and tie intervals) per grid point to refine (static).
      implicit: give the crossings their derivative in ``theta`` (static; ``False`` for a caller
        that only wants the values: one tracing of the residual's derivative less to compile).
      extra: None, or a sequence of arrays broadcasting to the batch: more bracket points (x
        values; NaN or outside (lo, hi): none), such as the points where r changes form. Tie ends
        that fall on them are exact and differentiable through them.
      tie_rtol: |r| at or below this counts as equal (:data:`TIE_RTOL`).
      one_pass: find the brackets in one pass over the batch (static; for a residual of a few
        flops, which is then traced once a grid point): the grid's values are reduced as they are
        computed, and written out only where some point of the batch may hold a tie. Used without
        ``extra`` points, with at most :data:`_PACKED_POINTS` grid points and
        :data:`_PACKED_ROOTS` roots; the answers are the same either way.
      start: None, or ``start(x_a, x_b, theta) -> x0``, elementwise: a first iterate inside each
        bracket [x_a, x_b] (x units) better than the secant in log x, such as the root of a
        residual's numerator where that is linear in x (static). The refinement then takes one
        Newton step on the whole batch before its loop finishes what has not converged; the
        roots are those of the same refinement, to its tolerance of a few ulps of log x.

    Returns:
      :class:`Crossings`. ``jax.jit``-able (with ``residual``, ``grid``, ``max_roots`` static) and
      differentiable in ``theta`` (first order, by the implicit function theorem).
    """
    _validate_range(lo, hi, grid, max_roots)
    extra = () if extra is None else tuple(extra)
    batch = jnp.broadcast_shapes(*(jnp.shape(v) for v in jax.tree.leaves(theta)),
                                 jnp.shape(lo), jnp.shape(hi), *(jnp.shape(e) for e in extra))
    size = math.prod(batch)
    # The search runs on a flat batch: elementwise code on (n, size) arrays compiles to simple
    # loops, where high-rank broadcasting and gathers are many times slower on CPU.
    flat = lambda v: jnp.broadcast_to(jnp.asarray(v, dtype=float), batch).reshape(size)  # noqa: E731
    theta = jax.tree.map(flat, theta)
    f = lambda u, th: residual(jnp.exp(u), th)  # noqa: E731  (the search runs in u = log x)

    # theta is computed once, here: XLA would otherwise fuse its producers (the closed forms, a
    # select of each pair's variant) into every pass that reads it, each Newton step's included.
    sg_theta = jax.lax.optimization_barrier(jax.lax.stop_gradient(theta))
    # A scalar range stays scalar, so the coarse grid's exp is taken once per grid point.
    scalar_range = jnp.ndim(lo) == 0 and jnp.ndim(hi) == 0
    log_range = lambda v: jnp.log(jnp.asarray(v, dtype=float)) if scalar_range else flat(jnp.log(v))  # noqa: E731
    u_lo, u_hi = log_range(lo), log_range(hi)

    def u_at(k):  # grid point k (a float array); the same arithmetic wherever it is used
        return jnp.where(k >= grid - 1, u_hi, u_lo + (k / (grid - 1)) * (u_hi - u_lo))

    u_grid = u_at(jnp.arange(grid, dtype=float)[:, None])  # (grid, size) or (grid, 1)
    m = len(extra)
    if m:
        # The extra points join the grid, in order; one outside the open range becomes a copy of
        # lo (a cell of length 0 brackets nothing).
        e = jnp.stack([flat(v) for v in extra])  # (m, size)
        ok = jnp.isfinite(e) & (e > 0)
        u_e = jnp.log(jnp.where(ok, e, 1.0))
        inside = ok & (u_e > u_lo) & (u_e < u_hi)
        u_e = jnp.where(inside, u_e, u_lo)
        # (where none is inside the range anywhere, they are all copies of lo: put them first)
        first = lambda _: jnp.concatenate([jnp.broadcast_to(u_lo, (m, size)),  # noqa: E731
                                           jnp.broadcast_to(u_grid, (grid, size))])
        u_pts = jax.lax.cond(jnp.any(inside), lambda _: _merge(u_grid, u_e), first, None)
    else:
        u_pts = u_grid
    n = u_pts.shape[0]
    u_sg = jax.lax.stop_gradient(u_pts)
    cells = jnp.arange(n - 1)[:, None]
    # One pass (a cheap residual on a large batch, without extra points): the grid's r at every
    # point is reduced in registers to the counts, first brackets and flags, and nothing of the
    # (points, batch) shape is written unless two points in a row are within tie_rtol of 0.
    one_pass = one_pass and not m and n <= _PACKED_POINTS and max_roots <= _PACKED_ROOTS
    grid_r = lambda: jnp.broadcast_to(f(u_sg, sg_theta), (n, size))  # noqa: E731
    g = g_outer = None if one_pass else grid_r()
    code = _scan_grid(f, sg_theta, u_sg, size, max_roots, tie_rtol) if one_pass else None

    # The first max_roots brackets (and ties), by repeated minimum (cumsum and gathers are slow
    # on CPU).
    def firsts(mask):
        out = []
        for _ in range(max_roots):
            k = jnp.min(jnp.where(mask, cells, n), axis=0)
            out.append(k)
            mask = mask & (cells > k)
        return jnp.stack(out)  # (max_roots, size); n where there is none

    # Ties: runs of cells with |r| <= tie_rtol at both ends, longer than TIE_MIN_LENGTH. A cell of
    # (nearly) length 0 (a point given twice) joins a tie only next to one of positive length:
    # alone it is a crossing on that point. Such cells come from the extra points, so at most m
    # follow one another.
    def tie_cells(g):
        zero = jnp.abs(g) <= tie_rtol  # False where NaN
        return zero[:-1] & zero[1:]

    def with_ties(_):
        g = grid_r() if one_pass else g_outer
        seg = tie_cells(g)
        no = jnp.zeros((1, size), bool)
        below = lambda v: jnp.concatenate([v, no])  # noqa: E731  (cell k -> point k)
        above = lambda v: jnp.concatenate([no, v])  # noqa: E731  (cell k -> point k + 1)
        longer = (u_sg[1:] - u_sg[:-1]) > TIE_MIN_LENGTH
        tie_pt = below(seg & longer) | above(seg & longer)
        for _ in range(m):
            joined = seg & ~longer & (tie_pt[:-1] | tie_pt[1:])
            tie_pt = tie_pt | below(joined) | above(joined)
        tie_seg = seg & tie_pt[:-1] & tie_pt[1:]
        tie_first = tie_seg & ~jnp.concatenate([no, tie_seg[:-1]])
        tie_last = tie_seg & ~jnp.concatenate([tie_seg[1:], no])
        tie_count = jnp.sum(tie_first, axis=0)
        count, k, status = brackets(g, ~tie_pt, [jnp.all(tie_pt, axis=0), tie_count > 0])
        ends = jax.lax.cond(jnp.any(tie_count > 0), partial(tie_ends, g, tie_first, tie_last),
                            no_ties, None)
        return count, k, tie_count, *ends, status

    def without_ties(_):  # no two points in a row within tie_rtol: the brackets alone
        if one_pass:
            count, k, status = _unpack_scan(code, n, max_roots)
        else:
            count, k, status = brackets(g_outer, None, [])
        return count, k, jnp.zeros_like(count), *no_ties(None), status

    def brackets(g, off_tie, tie_status):
        # Cells whose ends are both numbers, off any tie, with opposite signs (0 counts as
        # positive); with the status of each batch element.
        pos, is_nan = g >= 0, jnp.isnan(g)
        bracket = (pos[:-1] != pos[1:]) & ~is_nan[:-1] & ~is_nan[1:]
        if off_tie is not None:
            bracket = bracket & off_tie[:-1] & off_tie[1:]
        count = jnp.sum(bracket, axis=0)
        status = jnp.select(
            [count > 0, jnp.any(is_nan, axis=0), *tie_status,
             jnp.all(g <= 0, axis=0), jnp.all(g >= 0, axis=0)],
            [CROSSES, NOT_AVAILABLE, *(TIE, TIE_PART)[:len(tie_status)], A_WINS, B_WINS],
            NOT_AVAILABLE).astype(jnp.int8)
        return count, firsts(bracket), status

    # Tie intervals: their ends are bracket points (differentiable through ``extra``), and the
    # sign of r at the points just outside them. Only computed where some point has one.
    def tie_ends(g, tie_first, tie_last, _):
        t0, t1 = firsts(tie_first), firsts(tie_last)
        has_tie = t0 < n
        t0, t1 = jnp.where(has_tie, t0, 0), jnp.where(has_tie, t1, 0)
        # (the range's own ends where a tie reaches them, rather than exp(log(lo)))
        u_full = jnp.broadcast_to(u_pts, (n, size))
        lo_ = jnp.where(t0 == 0, flat(lo), jnp.exp(jnp.stack([_row(u_full[:-1], kk) for kk in t0])))
        hi_ = jnp.where(t1 == n - 2, flat(hi), jnp.exp(jnp.stack([_row(u_full[1:], kk) for kk in t1])))

        def side(kk):  # the sign of r at point kk: 0 outside the range or where r is NaN
            v = jnp.stack([_row(g, p) for p in kk])
            inside = has_tie & (kk >= 0) & (kk < n)
            return jnp.where(inside & (v < 0), -1, jnp.where(inside & (v > 0), 1, 0)).astype(jnp.int8)

        return (jnp.where(has_tie, lo_, jnp.nan), jnp.where(has_tie, hi_, jnp.nan),
                side(t0 - 1), side(t1 + 2))

    def no_ties(_):
        nan = jnp.full((max_roots, size), jnp.nan, dtype=u_pts.dtype)
        zero_side = jnp.zeros((max_roots, size), jnp.int8)
        return nan, nan, zero_side, zero_side

    # Most searches have no two points in a row within tie_rtol of 0: they skip the tie
    # bookkeeping, whose passes over the (points, batch) arrays cost more than the brackets'.
    (count, k, tie_count, tie_lo, tie_hi, tie_below, tie_above,
     status) = jax.lax.cond(jnp.any(code >= _SEG_FLAG) if one_pass else jnp.any(tie_cells(g)),
                            with_ties, without_ties, None)
    found = k < n
    k = jnp.where(found, k, 0).astype(float)
    if extra:
        a0 = jnp.stack([_row(u_sg[:-1], kk) for kk in k])
        b0 = jnp.stack([_row(u_sg[1:], kk) for kk in k])
    else:
        a0, b0 = jnp.broadcast_to(u_at(k), k.shape), jnp.broadcast_to(u_at(k + 1), k.shape)
    small = size < LARGE_BATCH
    # the brackets' ends as x (f's arithmetic; where nothing reads them, XLA drops them)
    x_ends = jnp.exp(jnp.concatenate([a0, b0]))
    if small and not one_pass:  # r at the bracket's ends read off the coarse grid: the residual traced once less
        ga = jnp.stack([_row(g[:-1], kk) for kk in k])  # exact: one term is selected
        gb = jnp.stack([_row(g[1:], kk) for kk in k])
    else:  # on a large batch those sums cost more than evaluating both ends at once
        ends = jnp.broadcast_to(residual(x_ends, sg_theta), (2 * max_roots, size))
        ga, gb = ends[:max_roots], ends[max_roots:]
    u0 = (None if start is None else
          jnp.log(start(x_ends[:max_roots], x_ends[max_roots:], sg_theta)))
    u_root = _refine(f, sg_theta, a0, b0, ga, gb, found,
                     unrolled=0 if small else 1 if start is not None else UNROLLED, x0=u0)

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
    per_root = lambda a: jnp.moveaxis(a, 0, -1).reshape(*batch, max_roots)  # noqa: E731
    return Crossings(
        x=per_root(jnp.exp(u_out)),
        count=count.reshape(batch),
        a_wins_below=per_root(a_wins_below),
        status=status.reshape(batch),
        residual=per_root(jnp.where(found, jax.lax.stop_gradient(r), jnp.nan)),
        tie_lo=per_root(tie_lo),
        tie_hi=per_root(tie_hi),
        tie_count=tie_count.reshape(batch),
        tie_below=per_root(tie_below),
        tie_above=per_root(tie_above),
    )


# One pass packs a batch element's grid answers in an int64: the count of brackets (8 bits), the
# first brackets' cells (8 bits each; all ones: none), then the flags.
_PACKED_POINTS = 255
_PACKED_ROOTS = 5
_NAN_FLAG, _LE_FLAG, _GE_FLAG, _SEG_FLAG = (1 << b for b in range(56, 60))


def _scan_grid(f, theta, u_pts, size, max_roots, tie_rtol):
    """The coarse grid's brackets in one pass: r at each point (``u_pts`` (n, 1)) is reduced as it
    is computed, so XLA fuses the whole grid into one loop over the batch that writes one int64
    an element (:func:`_unpack_scan` reads it):

        count  cells with a sign change (0 counts as positive) whose ends are both numbers
        cells  the first max_roots such cells
        flags  some r is NaN; every r <= 0; every r >= 0; two points in a row with |r| <= tie_rtol
    """
    n = u_pts.shape[0]
    i64 = jnp.int64
    count = jnp.zeros(size, i64)
    cells = [jnp.full(size, 255, i64) for _ in range(max_roots)]
    nan_any = jnp.zeros(size, bool)
    le_all = ge_all = jnp.ones(size, bool)
    seg_any = jnp.zeros(size, bool)
    prev = None
    for j in range(n):
        r = jnp.broadcast_to(f(u_pts[j], theta), (size,))
        pos, nan, zero = r >= 0, jnp.isnan(r), jnp.abs(r) <= tie_rtol
        if prev is not None:
            p_pos, p_nan, p_zero = prev
            bracket = (p_pos != pos) & ~p_nan & ~nan
            cells = [jnp.where(bracket & (count == s), j - 1, c) for s, c in enumerate(cells)]
            count = count + bracket
            seg_any = seg_any | (p_zero & zero)
        nan_any = nan_any | nan
        le_all, ge_all = le_all & (r <= 0), ge_all & (r >= 0)
        prev = pos, nan, zero
    code = count
    for s, c in enumerate(cells):
        code = code | (c << (8 * (s + 1)))
    for flag, on in ((_NAN_FLAG, nan_any), (_LE_FLAG, le_all), (_GE_FLAG, ge_all),
                     (_SEG_FLAG, seg_any)):
        code = code | jnp.where(on, flag, 0)
    return code


def _unpack_scan(code, n, max_roots):
    """(count, first cells (max_roots, size), n where none, status) from :func:`_scan_grid`'s
    code, where no two points in a row tie."""
    count = code & 255
    k = jnp.stack([(code >> (8 * (s + 1))) & 255 for s in range(max_roots)])
    k = jnp.where(k == 255, n, k)
    status = jnp.select(
        [count > 0, (code & _NAN_FLAG) != 0, (code & _LE_FLAG) != 0, (code & _GE_FLAG) != 0],
        [CROSSES, NOT_AVAILABLE, A_WINS, B_WINS], NOT_AVAILABLE).astype(jnp.int8)
    return count, k, status


def _row(rows, k):
    """rows[k] for each batch element: ``rows`` (n, size), ``k`` (size,) a whole-numbered float
    array in [0, n) (rows[0] elsewhere). A chain of selects, which XLA fuses into the loop that
    reads ``rows`` (a sum of a one-hot mask is a reduction over the leading axis, which XLA's CPU
    backend runs many times slower: 60 ms for (33, 1e5))."""
    out = rows[0]
    for j in range(1, rows.shape[0]):
        out = jnp.where(k == j, rows[j], out)
    return out


def _merge(u_grid, u_e):
    """The grid's points (grid, size or 1), ascending, and the extra points (m, size), merged in
    ascending order: (grid + m, size). By rank, with selects (no sort: m is small)."""
    m, size = u_e.shape
    grid = u_grid.shape[0]
    if m == 1:
        e = u_e
    elif m == 2:
        e = jnp.stack([jnp.minimum(u_e[0], u_e[1]), jnp.maximum(u_e[0], u_e[1])])
    else:
        e = jnp.sort(u_e, axis=0)
    # rank of extra j among all points: j + the grid points strictly below it
    pos = jnp.arange(m)[:, None] + jnp.sum(u_grid[:, None, :] < e[None], axis=0)  # (m, size)
    r = jnp.arange(grid + m)[:, None]
    before = sum((pos[j][None] < r).astype(int) for j in range(m))  # extras below point r
    # point r is grid point r - before where no extra sits at r
    shifted = [jnp.concatenate([jnp.repeat(u_grid[:1], c, axis=0), u_grid,
                                jnp.repeat(u_grid[-1:], m - c, axis=0)]) for c in range(m + 1)]
    out = sum(jnp.where(before == c, shifted[c], 0.0) for c in range(m + 1))
    for j in range(m):
        out = jnp.where(pos[j][None] == r, e[j][None], out)
    return jnp.broadcast_to(out, (grid + m, size))


def _refine(f, theta, a, b, ga, gb, active, unrolled=UNROLLED, x0=None):
    """Safeguarded Newton in u inside the brackets [a, b] (where ``active``), all at once.

    Each step evaluates r and dr/du at the iterate, shrinks the bracket to the side that still holds
    the sign change, then takes the Newton step if it lands strictly inside the new bracket and
    bisects otherwise. Converged when the Newton step is below a few ulps of u, the bracket is that
    narrow, or r is exactly 0. ``x0``: a first iterate (NaN or outside the bracket: its middle).

    ``theta``'s leaves have the batch's shape (size,), ``a`` and the rest (rows, size). After the
    ``unrolled`` steps on the whole batch, what has not converged (a few in a thousand: an iterate
    that steps by one ulp of r back and forth until the bracket closes) is gathered and finished
    apart, up to :data:`STRAGGLERS` of them, so each further step costs that many evaluations rather
    than the batch's; more than that, and the loop runs on the whole batch. Each element's steps
    are the same either way (the steps are elementwise; the loop stops at the same count).
    """
    pos_a = ga >= 0
    # Start from the secant (regula falsi) point: for the near-linear log-ratios here it is
    # already close, so Newton needs a handful of steps.
    if x0 is None:
        x0 = jnp.where(gb != ga, a - ga * (b - a) / (gb - ga), 0.5 * (a + b))
    x0 = jnp.where((x0 > a) & (x0 < b), x0, 0.5 * (a + b))
    tol = 4 * jnp.finfo(x0.dtype).eps * (1.0 + jnp.abs(x0))
    done0 = ~active | (ga == 0) | (gb == 0)
    x0 = jnp.where(ga == 0, a, jnp.where(gb == 0, b, x0))

    def cond(state):
        _, _, _, done, it, _ = state
        return (it < MAX_ITERATIONS) & ~jnp.all(done)

    def body(state):
        x, lo, hi, done, it, (th, pos, tl) = state
        r, dr = jax.jvp(lambda u: f(u, th), (x,), (jnp.ones_like(x),))
        r = jnp.broadcast_to(r, x.shape)
        dr = jnp.broadcast_to(dr, x.shape)
        same = (r >= 0) == pos
        lo_n = jnp.where(same, x, lo)
        hi_n = jnp.where(same, hi, x)
        step = r / dr
        newton = x - step
        # A Newton step below a few ulps has converged; it is tested before the bracket check,
        # which would reject it (x is now an end of the bracket).
        small = jnp.abs(step) <= tl
        inside = jnp.isfinite(newton) & (newton > lo_n) & (newton < hi_n)
        x_n = jnp.where(inside | small, newton, 0.5 * (lo_n + hi_n))
        converged = (r == 0) | small | (hi_n - lo_n <= tl) | jnp.isnan(r)
        x_n = jnp.where((r == 0) | ~jnp.isfinite(x_n), x, x_n)
        return (jnp.where(done, x, x_n), jnp.where(done, lo, lo_n), jnp.where(done, hi, hi_n),
                done | converged, it + 1, (th, pos, tl))

    # The first steps unrolled: XLA fuses them into one pass over the batch, where each pass of a
    # while loop reads and writes every array; the loop then finishes the stragglers.
    state = (x0, a, b, done0, jnp.asarray(0), (theta, pos_a, tol))
    for _ in range(unrolled):
        state = body(state)
    total = x0.size
    if not unrolled or total <= 2 * STRAGGLERS:
        return jax.lax.while_loop(cond, body, state)[0]

    x, lo, hi, done, it, _ = state
    whole = lambda v: jnp.broadcast_to(v, x0.shape).reshape(total)  # noqa: E731

    def apart(_):
        # the unconverged elements' indices, then `total` (out of range: dropped when written back)
        idx = jnp.nonzero(~done.reshape(total), size=STRAGGLERS, fill_value=total)[0]
        take = lambda v: jnp.take(whole(v), idx, mode="clip")  # noqa: E731
        sub_th = jax.tree.map(take, theta)
        sub = (take(x), take(lo), take(hi), take(done) | (idx == total), it,
               (sub_th, take(pos_a), take(tol)))
        x_sub = jax.lax.while_loop(cond, body, sub)[0]
        return whole(x).at[idx].set(x_sub, mode="drop").reshape(x0.shape)

    def together(_):
        return jax.lax.while_loop(cond, body, state)[0]

    return jax.lax.cond(jnp.sum(~done) <= STRAGGLERS, apart, together, None)


def time_crossings(time_a: Callable, time_b: Callable, theta, lo, hi, *, grid: int = 32,
                   max_roots: int = 2) -> Crossings:
    """Every crossing of two time-to-target curves: :func:`find_crossings` of

        r(x) = log time_a(x, theta) - log time_b(x, theta)

    for user-supplied curves (any number of crossings); ``time_a``/``time_b`` elementwise in x.
    """
    return find_crossings(lambda x, th: jnp.log(time_a(x, th)) - jnp.log(time_b(x, th)), theta,
                          lo, hi, grid=grid, max_roots=max_roots)
