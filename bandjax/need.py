"""The WAN bandwidth a compute-utilisation target needs (docs/model.md section 14).

Compute utilisation CU = c / step never falls as the bandwidth B grows. With syncs in rounds the
step is piecewise linear in 1/B:

    step = c + F max(0, comm_frag(B) - w) / H,   comm_frag(B) = A + W / B,   w = (f + tau) c

with W the WAN bytes on each directed link of one fragment sync (a sync's / F) and A every other
term of a fragment sync (module stages and ports / F, latency, d). So

    CU >= u  <=>  step <= c / u  <=>  W / B <= R = H c (1/u - 1) / F + w - A

and the smallest such B is W / R where R > 0. The root is this closed form: exact, vectorised over
every other dimension in one jitted call, and differentiable by plain automatic differentiation
(it is what the implicit function theorem gives for the root of CU(B) = u). Where R <= 0 no
bandwidth reaches u: the terms in A (latency, d, the module, the ports) or the compute itself (no
window to hide behind) cap it; where W / R passes the range's top the range caps it.

With per-link values (docs/model.md section 15) B is the scenario's ``wan_Bps``, the slowest
link's bandwidth, every link scaled in proportion. A ring's WAN term is still W / B + latency,
with W a fragment's bytes per link over its slowest link's relative bandwidth (1 for the slowest
ring link): the same closed form. A mesh's is the largest over its links of W / (B b_ij) +
hops x l_ij (b_ij = B_ij / B), and CU >= u needs every link's term to fit:

    W / (B b_ij) <= R_ij = H c (1/u - 1) / F + w - A' - hops x l_ij   for every link ij

(A' the terms of A other than the latency), so B* = max over links of W / (b_ij R_ij), not
reachable where any R_ij <= 0: still a closed form, one per link, and its maximum.

On sites that differ (docs/model.md section 16) CU is compute-weighted, (sum_i n_i H_i c_i) /
(N H step), the step waits for the slowest site and a "scaled" variant's window is its fastest
site's step: not the form above, so there the answer is a bisection in log B of the sweep's own
CU (:func:`_needed_on_sites`), as goodput's is (:func:`needed_goodput_Bps`). Equal sites keep the
closed form.
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
from .links import as_data, scaling_note
from . import failures as _failures
from .labels import check_distinct
from .scenario import Scenario, numbers, reference
from . import sites as _sites
from .step import (STAGES, SYNC_COMPONENTS, col, fragment_parts_s, inner_compute_s, step_s,
                   sum_parts, sync_method, traffic_B, useful_compute_s, wan_link_terms_s, window_s)
from .stragglers import may_straggle
from .sweepargs import parse

DEFAULT_UTILISATION = (0.5, 0.8, 0.9, 0.95, 0.99)
DEFAULT_RANGE_GBps = (0.1, 1000.0)

# status of a needed bandwidth
REACHED, NOT_REACHABLE, BELOW_RANGE, ABOVE_RANGE = 0, 1, 2, 3
STATUS_MEANINGS = "reached not_reachable below_range above_range"
# what caps a target that is not reachable (index into CAPS; NONE where it is reachable)
CAPS = ("none", "latency", "d", "module", "ports", "compute", "range", "failures", "stragglers",
        "sites")
_NONE, _LATENCY, _D, _MODULE, _PORTS, _COMPUTE, _RANGE, _FAILURES, _STRAGGLERS, _SITES = range(len(CAPS))
CAP_WORDS = {"latency": "WAN latency", "d": "fixed time d", "module": "module stages",
             "ports": "ports", "compute": "compute (no window to hide the sync)",
             "range": "range", "failures": "failures (restarts and lost work)",
             "stragglers": "straggler tail", "sites": "wait for the slowest site"}
"""What caps a target that no bandwidth reaches (:data:`CAPS`), in words, for every output."""
# the terms of a fragment sync (SYNC_COMPONENTS) grouped by the cap they name
_GROUPS = {"latency": ("wan_latency",), "d": ("fixed",),
           "module": tuple(f"module_{s}" for s in STAGES), "ports": ("qsfp", "port")}
_AT = {name: i for i, name in enumerate(SYNC_COMPONENTS)}


def _needed_per_link(sc: Scenario, m, W, groups, c, u, cs=None):
    """The closed form link by link (per-link values, docs/model.md section 15): (B*, reachable,
    cap groups with the latency of the link that needs the most room).

    Each link ij has its fragment's WAN time W / (B b_ij) + lat_ij (:func:`wan_link_terms_s`,
    seconds at the scenario's B, b_ij its bandwidth relative to B); it fits where
    W / (B' b_ij) <= R_ij = H c (1/u - 1) / F + w - A' - lat_ij, so B' >= W / (b_ij R_ij), and
    B* is the largest over links. W / (B b_ij) is seconds at B, so W / (b_ij R_ij) is
    B x (W / (B b_ij)) / R_ij. ``cs``: the compute part of an inner step where workers straggle
    (None: c), in R = H (c/u - c') / F + (f + tau) c' - A' - lat_ij.
    """
    wan_s, lat_s = wan_link_terms_s(sc, traffic_B(sc))  # one sync's, (..., variant, link)
    F = jnp.asarray(m.fragments)[..., None]
    time_s = wan_s / F  # a fragment's bytes part on each link at the scenario's bandwidth
    rest = sum_parts([v for k, v in groups.items() if k != "latency"])
    nd = max(jnp.ndim(rest), jnp.ndim(lat_s) - 1, jnp.ndim(wan_s) - 1, jnp.ndim(c),
             jnp.ndim(m.H), jnp.ndim(m.fragments), jnp.ndim(m.delay), 0 if cs is None else jnp.ndim(cs))
    uu = u.reshape(u.shape + (1,) * nd)
    if cs is None:
        base = m.H * c * (1 / uu - 1) / m.fragments + window_s(c, col(sc.overlap_fraction), m.delay) - rest
    else:
        base = m.H * (c / uu - cs) / m.fragments + window_s(cs, col(sc.overlap_fraction), m.delay) - rest
    R = base[..., None] - lat_s  # (utilisation, ..., variant, link)
    fits = R > 0
    some = jnp.all(fits, axis=-1)
    need = col(sc.wan_Bps)[..., None] * time_s / jnp.where(fits, R, 1.0)
    B = jnp.max(jnp.where(time_s > 0, need, 0.0), axis=-1)  # no WAN bytes: any bandwidth
    groups = {**groups, "latency": jnp.max(jnp.broadcast_to(lat_s, jnp.broadcast_shapes(
        lat_s.shape, jnp.shape(wan_s))), axis=-1)}
    return B, some, groups


def _split(sc: Scenario):
    """(W, A-terms by cap group): one fragment sync's WAN bytes per link (B) and its other terms (s)."""
    m = sync_method(sc)
    parts = fragment_parts_s(sc, method=m)
    W = traffic_B(sc).wan_B / m.fragments
    groups = {k: sum_parts([parts[_AT[n]] for n in names]) for k, names in _GROUPS.items()}
    return m, W, groups


@partial(jax.jit, static_argnames=("straggles",))
def needed_Bps(sc: Scenario, utilisation, lo_Bps, hi_Bps, straggles: bool = False):
    """The smallest WAN bandwidth at which each variant's compute utilisation reaches
    ``utilisation``, with where it lies against the range [lo, hi] asked, and why where none does.

        B* = W / R,   R = H (c/u - c') / F + (f + tau) c' - A

    (c' the compute part of an inner step, c where nothing straggles: R = H c (1/u - 1) / F +
    (f + tau) c - A; docs/model.md sections 14 and 16). The closed form is exact wherever the
    target is reachable at some bandwidth, inside the range or not: the status says where.

    Args:
      sc: the scenario; every numeric field may be an array, broadcasting with the rest.
      utilisation: targets u in (0, 1], any shape; the result has it in front of the scenario's
        batch shape and the variant axis.
      lo_Bps, hi_Bps: the range, B/s.
      straggles (static): whether workers may straggle (:func:`bandjax.stragglers.may_straggle`
        of the scenario); False runs the expression without c' (c' = c there exactly).

    Returns:
      (bandwidth B/s, status, cap): bandwidth is the closed form's B* wherever some bandwidth
      reaches the target (0 where the sync sends no WAN bytes) and NaN where none does; status one
      of REACHED (B* in the range), BELOW_RANGE (B* <= lo: met at the range's bottom already),
      ABOVE_RANGE (B* > hi), NOT_REACHABLE (no bandwidth is enough); cap an index into
      :data:`CAPS` (``range`` for ABOVE_RANGE, the capping term for NOT_REACHABLE).

    On sites that differ (:func:`bandjax.sites.differ`, a static fact) the closed form's step and
    utilisation (c, CU = c / step) are not the sweep's, so the answer there is a bisection of
    the sweep's own compute utilisation (:func:`_needed_on_sites`).
    """
    if _sites.differ(sc):
        return _needed_on_sites(sc, utilisation, lo_Bps, hi_Bps, straggles)
    m, W, groups = _split(sc)
    c = col(sc.gpu_compute_s)
    cs = inner_compute_s(sc, m) if straggles else c
    u = jnp.asarray(utilisation, dtype=float)
    window = window_s(cs, col(sc.overlap_fraction), m.delay)
    if sc.links is None:
        A = sum_parts(list(groups.values()))
        # the targets go in front of every other axis (of any term: a swept H or tail too)
        nd = max(jnp.ndim(x) for x in (A, c, cs, window, W, m.H, m.fragments, m.delay))
        u = u.reshape(u.shape + (1,) * nd)
        allowed = m.H * (c / u - cs) if straggles else m.H * c * (1 / u - 1)
        R = allowed / m.fragments + window - A
        some = R > 0
        B = W / jnp.where(some, R, 1.0)
        # no WAN bytes: any bandwidth is enough wherever the rest fits
        B = jnp.where(W > 0, B, 0.0)
    else:
        B, some, groups = _needed_per_link(sc, m, W, groups, c, u, cs if straggles else None)
    over = some & (B > hi_Bps)
    below = some & (B <= lo_Bps)
    status = jnp.where(~some, NOT_REACHABLE,
                       jnp.where(over, ABOVE_RANGE, jnp.where(below, BELOW_RANGE, REACHED)))
    # what caps an unreachable target: the largest term of A, or the compute (nothing to hide behind)
    term = _largest_term(groups)
    if straggles:  # the wait for the slowest worker alone leaves less than u: no bandwidth helps
        # the targets in front of every axis of the term and of c' (u above is reshaped only
        # where the links are equal)
        t = jnp.asarray(utilisation, dtype=float)
        t = t.reshape(t.shape + (1,) * max(jnp.ndim(term), jnp.ndim(cs), jnp.ndim(c)))
        term = jnp.where(c / t <= cs, _STRAGGLERS, term)
    cap = jnp.where(~some, term, jnp.where(over, _RANGE, _NONE))
    bandwidth = jnp.where(some, B, jnp.nan)
    shape = jnp.broadcast_shapes(jnp.shape(bandwidth), jnp.shape(cap))
    return (jnp.broadcast_to(bandwidth, shape), jnp.broadcast_to(status, shape).astype(jnp.int8),
            jnp.broadcast_to(cap, shape).astype(jnp.int8))


def _largest_term(groups):
    """What caps an unreachable target, by the terms of a fragment sync grouped by cap
    (:data:`_GROUPS`): the largest, or the compute where every one is 0 (nothing to hide
    behind)."""
    stacked = jnp.stack(jnp.broadcast_arrays(*groups.values()), axis=-1)
    biggest = 1 + jnp.argmax(stacked, axis=-1)  # _LATENCY + position in _GROUPS order
    return jnp.where(jnp.max(stacked, axis=-1) > 0, biggest, _COMPUTE)


def _needed_on_sites(sc: Scenario, utilisation, lo_Bps, hi_Bps, straggles: bool):
    """:func:`needed_Bps` on sites that differ (docs/model.md section 16): a bisection in log B of
    the compute utilisation as the sweep computes it, compute-weighted,

        CU(B) = (sum_i n_i H_i c_i) / (N H step(B)),

    step(B) waiting for the slowest site (c_max, or the largest of the sites' sums where workers
    straggle) with a "scaled" variant's window in its fastest site's step. CU never falls as B
    grows, so there is one crossing; :func:`_bisect_Bps` finds it, as for goodput. Returns
    :func:`needed_Bps`'s (bandwidth, status, cap). The bandwidth is the bisection's (to
    rounding) wherever the bracket, the range widened :data:`GOODPUT_WIDEN`-fold each way, holds
    it: the bracket's bottom where the target is met there already, NaN beyond its top. Cap of a
    target no bandwidth reaches: ``sites`` where the wait for the slowest site alone leaves less
    than the target (useful compute / u <= c_max), ``stragglers`` where the wait for the
    slowest worker does (<= c'), else the largest term of a fragment sync (or the compute)."""
    bandwidth, status, some, over = _bisect_Bps(sc, utilisation, lo_Bps, hi_Bps, goodput=False)
    m, _, groups = _split(sc)
    c = col(sc.gpu_compute_s)
    u = jnp.asarray(utilisation, dtype=float)
    term = _largest_term(groups)
    u = u.reshape(u.shape + (1,) * jnp.ndim(term))
    cs = inner_compute_s(sc, m)
    allowed = useful_compute_s(sc) / u  # the longest step that still gives u
    if straggles:
        term = jnp.where(allowed <= cs, _STRAGGLERS, term)
    top = float(np.max(sc.sites.compute_rel))
    term = jnp.where(allowed <= c * top, _SITES, term)
    cap = jnp.where(~some, term, jnp.where(over, _RANGE, _NONE))
    shape = jnp.broadcast_shapes(jnp.shape(bandwidth), jnp.shape(cap))
    return (jnp.broadcast_to(bandwidth, shape), jnp.broadcast_to(status, shape).astype(jnp.int8),
            jnp.broadcast_to(cap, shape).astype(jnp.int8))


# required_bandwidth's grids are evaluated once
_needed_once = _jax.quick(needed_Bps, static_argnames=("straggles",))

GOODPUT_ITERATIONS = 64  # bisections in log B: the bracket shrinks 2^64-fold, below rounding


def _goodput_at(sc: Scenario, B, goodput: bool = True):
    """Goodput (CU x ETTR, :mod:`bandjax.failures`) of every variant at WAN bandwidth ``B``
    (every link scaled in proportion), shape (..., variant): variant v's goodput at B[..., v].
    ``goodput`` (static) False: the compute utilisation alone. CU is the sweep's: the useful
    compute over the step (:func:`bandjax.step.useful_compute_s`, compute-weighted on sites that
    differ, c itself otherwise).

    Every field gets one more trailing axis, on which B's variant axis lies; the scenario is then
    evaluated for every variant at every variant's B, and the diagonal taken (the registry is
    short: its square is cheap beside a compile)."""
    B = jnp.asarray(B)
    at = jax.tree.map(lambda x: jnp.asarray(x)[..., None], sc)
    at = dataclasses.replace(at, wan_Bps=B)
    m = sync_method(at)
    step = step_s(at, method=m)
    out = useful_compute_s(at) / step  # (..., B's variant, variant)
    if goodput:
        out = out * jnp.maximum(_failures.ettr_parts(at, step, m.H)[0], 0.0)
    V = out.shape[-1]
    out = jnp.broadcast_to(out, out.shape[:-2] + (V, V))
    return jnp.diagonal(out, axis1=-2, axis2=-1)


GOODPUT_WIDEN = 1e6  # the bisection's bracket: the range asked, widened this much each way


@partial(jax.jit, static_argnames=("straggles",))
def needed_goodput_Bps(sc: Scenario, goodput, lo_Bps, hi_Bps, straggles: bool = False):
    """The smallest WAN bandwidth at which each variant's goodput (compute utilisation x ETTR,
    docs/model.md section 17) reaches ``goodput``, with where it lies against [lo, hi].

    Goodput never falls as B grows (the step shrinks, and with it a round and a replica's
    restore), so the answer is the one crossing, found by bisection in log B over the range
    widened :data:`GOODPUT_WIDEN`-fold each way (:data:`GOODPUT_ITERATIONS` halvings: to
    rounding), vectorised over every target, grid point and variant in one jitted call. Not a
    closed form: a replica's ETTR depends on B through its round and its restore; a closed form
    per piece exists, but the bisection serves every topology and link table alike. Values only
    (no implicit derivative).

    Returns (bandwidth B/s, status, cap) as :func:`needed_Bps`: the bandwidth found wherever the
    widened bracket holds it (NaN where it lies beyond, or nowhere), status REACHED,
    BELOW_RANGE, ABOVE_RANGE or NOT_REACHABLE. The cap of a target no bandwidth reaches: the
    compute utilisation's own cap (latency, d, module, ports, compute) where CU cannot reach it
    at any bandwidth; else ``failures``: CU could, but the time lost to failures leaves goodput
    short even at infinite bandwidth. ``straggles``: as in :func:`needed_Bps`.
    """
    bandwidth, status, some, over = _bisect_Bps(sc, goodput, lo_Bps, hi_Bps, goodput=True)
    # what caps it: the compute utilisation's own cap where CU itself cannot reach the target
    # at any bandwidth (goodput <= CU), else the failures where infinite bandwidth falls short
    _, cu_status, cu_cap = needed_Bps(sc, goodput, lo_Bps, hi_Bps, straggles)
    cap = jnp.where(some, jnp.where(over, _RANGE, _NONE),
                    jnp.where(cu_status == NOT_REACHABLE, cu_cap, _FAILURES))
    return bandwidth, status.astype(jnp.int8), cap.astype(jnp.int8)


def _bisect_Bps(sc: Scenario, target, lo_Bps, hi_Bps, *, goodput: bool):
    """The smallest WAN bandwidth at which each variant's goodput (``goodput`` True) or compute
    utilisation (False) reaches ``target``, by bisection in log B (:func:`_goodput_at`, which
    never falls as B grows) over [lo, hi] widened :data:`GOODPUT_WIDEN`-fold each way,
    :data:`GOODPUT_ITERATIONS` halvings. Returns (bandwidth B/s, status, some, over): the
    bandwidth (the bracket's bottom where that is enough already; NaN beyond its top), status
    REACHED, BELOW_RANGE, ABOVE_RANGE or NOT_REACHABLE, whether infinite bandwidth reaches the
    target, and whether the answer lies above ``hi``. Shape (target, ..., variant)."""
    at = partial(_goodput_at, sc, goodput=goodput)
    g = jnp.asarray(target, dtype=float)
    V = len(sc.variants)
    bottom, top = lo_Bps / GOODPUT_WIDEN, hi_Bps * GOODPUT_WIDEN
    at_top = at(jnp.full((V,), top, dtype=float))
    g = g.reshape(g.shape + (1,) * jnp.ndim(at_top))
    at_inf = at(jnp.full((V,), jnp.inf))
    at_bottom = at(jnp.full((V,), bottom, dtype=float))
    lo = jnp.log(bottom) * jnp.ones_like(at_top * g)
    hi = jnp.log(top) * jnp.ones_like(at_top * g)

    def halve(_, bracket):
        lo, hi = bracket
        mid = (lo + hi) / 2
        ok = at(jnp.exp(mid)) >= g
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo, hi = jax.lax.fori_loop(0, GOODPUT_ITERATIONS, halve, (lo, hi))
    B = jnp.where(at_bottom >= g, bottom, jnp.exp(hi))
    some = at_inf >= g
    found = at_top >= g
    over = some & (~found | (B > hi_Bps))
    below = found & (B <= lo_Bps)
    status = jnp.where(~some, NOT_REACHABLE,
                       jnp.where(over, ABOVE_RANGE, jnp.where(below, BELOW_RANGE, REACHED)))
    return jnp.where(found, B, jnp.nan), status, some, over


_needed_goodput_once = _jax.quick(needed_goodput_Bps, static_argnames=("straggles",))


@jax.jit
def needed_H(sc: Scenario, utilisation):
    """The fewest inner steps a round, H, at which each variant's compute utilisation reaches
    ``utilisation`` at the scenario's own bandwidth (docs/model.md section 14):

        F max(0, comm_frag - (f + tau) c) / H <= c (1/u - 1)
        =>  H = max(ceil(F max(0, comm_frag - w) / (c (1/u - 1))), F, tau + 1)

    F and tau are the variant's; its own H (if any) is what is asked, so it is ignored. Returns
    H (inf where no H reaches u: u = 1 with a sync that outlasts its window), shape
    (utilisation, ..., variant).
    """
    m = sync_method(sc)
    c = col(sc.gpu_compute_s)
    exposed = jnp.maximum(0.0, sum_parts(list(fragment_parts_s(sc, method=m)))
                          - window_s(c, col(sc.overlap_fraction), m.delay))
    u = jnp.asarray(utilisation, dtype=float)
    u = u.reshape(u.shape + (1,) * max(jnp.ndim(x) for x in (exposed, c, m.fragments, m.delay)))
    allowed = c * (1 / u - 1)
    # a ratio within rounding of a whole number is that number (its ceil would overshoot by one)
    ratio = m.fragments * exposed / jnp.where(allowed > 0, allowed, 1.0)
    H = jnp.ceil(ratio * (1 - 1e-12))
    H = jnp.where(allowed > 0, H, jnp.where(exposed > 0, jnp.inf, 1.0))
    return jnp.maximum(H, jnp.maximum(m.fragments, m.delay + 1))


def _check_targets(utilisation) -> np.ndarray:
    """The targets as a 1-D float array: real numbers in (0, 1], each once; a boolean, complex
    number, text or None is refused, not converted."""
    allowed = "one target in (0, 1] or a list of them"
    if isinstance(utilisation, (list, tuple, np.ndarray)) and np.ndim(utilisation) > 1:
        raise ValueError(f"utilisation = {utilisation!r}: expected {allowed}")
    numbers(f"utilisation", utilisation, allowed)
    u = np.atleast_1d(np.asarray(utilisation, dtype=float))
    bad = ~((u > 0) & (u <= 1))
    if np.any(bad):
        raise ValueError(f"utilisation = {float(u[np.argmax(bad)])!r}: a compute utilisation "
                         "target must be in (0, 1]")
    check_distinct("utilisation", u.tolist())
    return u


def _check_range(range_GBps) -> tuple[float, float]:
    """(lowest, highest) GB/s: two real numbers with 0 < lowest < highest < inf."""
    allowed = "(lowest, highest) GB/s with 0 < lowest < highest, finite"
    if not (isinstance(range_GBps, (list, tuple, np.ndarray)) and np.shape(range_GBps) == (2,)) \
            or any(isinstance(x, (bool, np.bool_)) for x in range_GBps):
        raise ValueError(f"range_GBps = {range_GBps!r}: expected {allowed}")
    lo, hi = numbers("range_GBps", range_GBps, allowed)
    if not (0 < lo < hi < np.inf):
        raise ValueError(f"range_GBps = {range_GBps!r}: expected {allowed}")
    return float(lo), float(hi)


TARGETS = ("utilisation", "goodput")


def required_bandwidth(scenario: Scenario | None = None, utilisation=DEFAULT_UTILISATION, *,
                       variant=None, range_GBps=DEFAULT_RANGE_GBps, target: str = "utilisation",
                       **grid) -> xr.Dataset:
    """The WAN bandwidth each variant needs to keep its GPUs computing a share ``utilisation``
    of the time (docs/model.md section 14), over any grid of the other parameters.

    Args:
      scenario: the parameters; the reference scenario by default.
      utilisation: compute-utilisation targets u in (0, 1] (c / step), one or a list.
      variant: variant ids of the scenario's registry (all by default), as for :func:`bandjax.sweep`.
      range_GBps: (lowest, highest) bandwidth searched, GB/s per directed WAN link.
      target: ``"utilisation"`` (compute utilisation, the closed form above) or ``"goodput"``
        (compute utilisation x ETTR at the scenario's failure rate, docs/model.md section 17:
        :func:`needed_goodput_Bps`); ``utilisation`` then holds goodput targets.
      **grid: any other argument of :func:`bandjax.sweep` but ``bandwidth`` and
        ``link_bandwidth`` (``H``, ``model``, ``dcs``, ``wan_latency_s``, ``link`` with
        ``link_latency_s``, ...): each a scalar or a sequence (a dimension).

    Returns:
      An ``xarray.Dataset`` over (utilisation, the swept dimensions, variant) with
      ``required_bandwidth_GBps`` (GB/s: the closed form's exact value wherever some bandwidth
      reaches the target, in the range asked or not; NaN where none does),
      ``required_bandwidth_Gbitps`` (the same in Gbit/s), ``status`` (``reached`` in the range,
      ``below_range``, ``above_range``, ``not_reachable``: flag values and meanings) and ``cap``
      (what caps a target that is not reachable: latency, d, module, ports, compute, stragglers
      (the wait for the slowest worker alone), failures (goodput); ``range`` where it lies above
      the range; ``none`` otherwise).

    With per-link values (``scenario.links``) the bandwidth is the slowest link's, every link
    scaled in proportion (``attrs["links_scaling"]`` says so); a mesh's answer is the largest of
    its links' closed forms (docs/model.md section 15).

    On sites that differ (docs/model.md section 16) the utilisation is compute-weighted, as the
    sweep computes it, and the answer is a bisection of it (:func:`needed_Bps`): the bandwidth
    to rounding wherever the range widened :data:`GOODPUT_WIDEN`-fold each way holds it; ``cap``
    ``sites`` where the wait for the slowest site alone leaves the target out of reach.
    """
    sc = reference() if scenario is None else scenario
    for name in ("bandwidth", "wan_Bps", "link_bandwidth"):
        if name in grid:
            raise ValueError(f"{name}: required_bandwidth solves for the WAN bandwidth (every link "
                             "in proportion); sweep any other parameter instead")
    lo, hi = _check_range(range_GBps)
    if target not in TARGETS:
        raise ValueError(f"target = {target!r} is not known; allowed: {', '.join(TARGETS)}")
    u = _check_targets(utilisation)
    g = parse(sc, variant=variant, **grid)
    # a small grid compiles quickly (and keeps its program); a large one compiles to run fast
    small = u.size * math.prod(g.shape) * len(sc.ids) <= QUICK_CELLS
    if target == "goodput":
        solve = _needed_goodput_once if small else needed_goodput_Bps
    else:
        solve = _needed_once if small else needed_Bps
    arrays = scenario_arrays(sc, g)
    # a links table as data: the next table of the same K runs the same program
    bandwidth, status, cap = solve(as_data(arrays), u, lo * 1e9, hi * 1e9, straggles=may_straggle(arrays))
    index = np.asarray(g.index)
    bandwidth, status, cap = (np.take(np.asarray(x), index, axis=-1) for x in (bandwidth, status, cap))
    shape = (u.size, *g.shape, index.size)
    bandwidth, status, cap = (np.broadcast_to(x, shape) for x in (bandwidth, status, cap))
    dims = ["utilisation", *g.dims, "variant"]
    if not g.variant_is_dim:
        bandwidth, status, cap = (x[..., 0] for x in (bandwidth, status, cap))
        dims = dims[:-1]
    coords: dict = {"utilisation": xr.Variable("utilisation", u, {
        "units": "1", "long_name": "compute utilisation target (GPU compute / step time)"
        if target == "utilisation" else "goodput target (compute utilisation x ETTR)"}),
        **grid_coords(g)}
    vids = g.variants
    coords.update(variant_coords(sc, g))
    GBps = bandwidth / 1e9
    delayed = [v for v in vids if sc.variant(v).delay > 0]
    ds = xr.Dataset({
        "required_bandwidth_GBps": xr.Variable(dims, GBps, {
            "units": "GB/s", "long_name": "WAN bandwidth per directed link the target needs",
            "note": "the closed form's value wherever some bandwidth reaches the target, inside "
                    "the range or not (status says where); NaN where none does"}),
        "required_bandwidth_Gbitps": xr.Variable(dims, 8 * GBps, {
            "units": "Gbit/s", "long_name": "the same in Gbit/s (8 x GB/s)"}),
        "status": xr.Variable(dims, status, {
            "units": "1", "long_name": "where the needed bandwidth lies against the range asked",
            "flag_values": [REACHED, NOT_REACHABLE, BELOW_RANGE, ABOVE_RANGE],
            "flag_meanings": STATUS_MEANINGS}),
        "cap": xr.Variable(dims, cap, {
            "units": "1", "long_name": "what caps a target that is not reachable",
            "flag_values": list(range(len(CAPS))), "flag_meanings": " ".join(CAPS)}),
    }, coords=coords)
    ds.attrs.update({
        "title": "bandjax: WAN bandwidth a compute-utilisation target needs",
        "target": target,
        "range_GBps": [lo, hi],
        "method": "closed form B = W / (H c (1/u - 1) / F + (f + tau) c - A) (docs/model.md "
                  "section 14); with links that differ, the largest over links of the same form "
                  "link by link (section 15)",
        "assumptions": "syncing every H steps"
                       + (f" and a sync's delay ({', '.join(delayed)})" if delayed else "")
                       + " assumed not to change steps to target",
    })
    if target == "goodput":
        ds.attrs.update({
            "title": "bandjax: WAN bandwidth a goodput target needs",
            "method": "bisection in log B of goodput = CU x ETTR (docs/model.md section 17), "
                      f"{GOODPUT_ITERATIONS} halvings",
            "assumptions": ds.attrs["assumptions"] + "; ETTR to first order in the failure rate "
                           "(docs/model.md section 17)",
        })
    if _sites.differ(sc) and target == "utilisation":
        ds.attrs["method"] = (f"bisection in log B of the compute-weighted compute utilisation "
                              f"(docs/model.md section 16), {GOODPUT_ITERATIONS} halvings: the "
                              "closed form assumes equal sites")
    if _sites.differ(sc):
        ds.attrs["assumptions"] += "; " + _sites.ASSUMPTION
    note = scaling_note(sc, ["bandwidth"])
    if note:
        ds.attrs["links_scaling"] = note
    return ds


def cap_names(cap: xr.DataArray) -> xr.DataArray:
    """The :data:`CAPS` name of each code of ``required_bandwidth(...)["cap"]``."""
    return xr.apply_ufunc(lambda a: np.asarray(CAPS, dtype=object)[a], cap)


def status_names(status: xr.DataArray) -> xr.DataArray:
    """The name of each code of ``required_bandwidth(...)["status"]`` (reached, not_reachable,
    below_range)."""
    return xr.apply_ufunc(lambda a: np.asarray(STATUS_MEANINGS.split(), dtype=object)[a], status)

