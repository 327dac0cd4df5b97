"""Break-evens of pairs of variants (docs/model.md section 10): bandwidth, budget and ENOB.

A pair (a, b) breaks even where both reach the target loss in the same time. The residual is

    r(x) = log T_a(x) - log T_b(x),     T_v = steps_v x step_v,

with x the swept parameter; r < 0 means a is faster. :func:`bandjax.roots.find_crossings` finds every
sign change of r over a range, for a whole grid of scenarios and pairs in one jitted call, and makes
the crossings differentiable (implicit function theorem).

Over the WAN bandwidth B the closed forms of :mod:`bandjax.step` are affine in 1/B (every WAN term is
bytes / B), so each variant's time is evaluated once per grid point and the search runs on

    T_v(B) = steps_v (R_v + V_v / B),   R_v = step_v - wan_v,  V_v = wan_v x B0

where step_v and wan_v (its WAN term) come from :func:`bandjax.step.step_terms_s` at the scenario's
own bandwidth B0. This equals ``step_s(sc.replace(wan_Bps=B))`` to rounding (tested) and costs a few
flops per evaluation. Over any other parameter (budget, a rate, the fixed time, the steps) the
closed forms are re-evaluated at each trial value (:func:`field_crossings`).

Every crossing, however close two are: each variant's step is c + max(0, Q + V/B), so its slope in
1/B changes only at its kink B* = V / (-Q), where its communication first fits its window (docs/
model.md sections 10 and 14; per-link meshes add the points where the pacing link changes,
:func:`bandwidth_kinks_Bps`). Those kinks join the coarse grid as bracket points, so between two
consecutive points both times are linear in 1/B and their difference has at most one root or is
zero throughout: a tie, reported as an interval whose ends are kinks (exact to rounding) with who is
faster on each side (:data:`bandjax.roots.TIE_RTOL`), never as a crossing.

Which steps a variant with a rule takes depends on the basis (E': ``"hypothesis"``, E's steps;
``"exact"``, max(E's, the exact band's)); for pairs without such a variant both bases agree.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass
from functools import partial

from . import _jax  # 64-bit floats, the Scenario PyTree; compile options
import jax
import jax.numpy as jnp
import numpy as np

from . import failures as _failures
from . import roots as _roots
from . import sites as _sites
from . import variants as _v
from .metrics import time_to_target_s
from .roots import (A_WINS, B_WINS, CROSSES, NEITHER, NOT_AVAILABLE, STATUS_NAMES, TIE, TIE_PART,
                    TIE_RTOL, Crossings)
from .links import DataLinks, as_data, mesh_envelope, mesh_pairs, scaling_note
from .links import envelope_breaks  # noqa: F401  (where the searches' bracket points come from)
from .parameters import FIXED_PREFIX, scenario_parameter, with_parameters
from .scenario import BASES, FIELDS, Scenario, numbers
from .units import SI, _digits
from .step import (COMPONENTS, STAGES, budget_break_even_FLOPs, col, fragment_parts_s, inner_compute_s,
                   link_values, module_stages_s, step_s, sum_parts, sync_method, traffic_B,
                   window_compute_s, window_s)
from .stragglers import may_straggle, settled

BANDWIDTH_RANGE_GBps = (0.1, 1000.0)  # docs/model.md section 2: the swept range
BUDGET_RANGE_GFLOPs = (1.0, 10_000.0)
GRID = 32
MAX_ROOTS = 1  # break_even re-runs with more where a point has more crossings
# Parameters a crossing can be searched over or differentiated against, besides the numeric
# scenario fields: the fixed time of a variant ("fixed_s.<id>") and the steps of a or b.
STEPS_PARAMETERS = ("steps_a", "steps_b")
OVER = {"bandwidth": "wan_Bps", "budget": "budget_FLOPs"}
_WAN = COMPONENTS.index("wan") - 1  # in the communication terms (all but c)
# Whole counts and choices: no crossing between them (sweep them instead).
DISCRETE = ("dcs", "topology")
# Default searched ranges (SI) of parameters whose value may be 0.
DEFAULT_RANGES = {"wan_latency_s": (1e-7, 1.0), "overlap_fraction": (1e-4, 1.0)}

__all__ = [
    "A_WINS", "B_WINS", "BANDWIDTH_RANGE_GBps", "BreakEven", "CROSSES", "Crossings", "NEITHER",
    "NOT_AVAILABLE", "STATUS_NAMES", "TIE", "TIED", "TIE_PART", "TIE_RTOL", "bandwidth_crossings",
    "bandwidth_kinks_Bps", "break_even", "may_kink", "needs_general_search",
    "budget_break_even", "describe", "enob_break_even", "field_crossings", "pair_steps", "parameter_names",
    "resolve_variant", "with_parameter",
]


# --------------------------------------------------------------------------- names and steps


def resolve_variant(name: str, registry: tuple[_v.Variant, ...] = _v.VARIANTS, *,
                    what: str = "variant") -> str:
    """A variant id from its id or its short label (``"E'"``, ``"C"``, ``"AdamW"``), any case;
    errors name the argument ``what``."""
    allowed = ", ".join(f"{v.id} ({v.short})" for v in registry)
    if not isinstance(name, str):
        raise ValueError(f"{what} = {name!r}: expected a variant id or short label (text); "
                         f"allowed: {allowed}")
    found = _v.find(name, registry)
    if found is not None:
        return found
    raise ValueError(f"{what} = {name!r} is not known; allowed: {allowed}")


def parameters(sc: Scenario | None = None) -> tuple[str, ...]:
    """Every parameter of a crossing: the numeric fields, each variant's d, the pair's steps."""
    ids = _v.IDS if sc is None else sc.ids
    return (*FIELDS, *(f"fixed_s.{v}" for v in ids), *STEPS_PARAMETERS)


PARAMETERS = parameters()  # of the study's registry


def parameter_names(a: str, b: str) -> tuple[str, ...]:
    """Everything the times of a and b depend on: numeric scenario fields (whole counts and the
    topology excepted), their fixed times, steps."""
    return (*(f for f in FIELDS if f not in DISCRETE), f"fixed_s.{a}", f"fixed_s.{b}",
            *STEPS_PARAMETERS)


def _check_parameter(name: str, sc: Scenario | None = None) -> None:
    if name in DISCRETE:
        raise ValueError(f"over = {name!r}: {name} is a whole count or a choice, with no crossing "
                         f"between its values; sweep it (bandjax.sweep(sc, {name}=[...])) and take "
                         "the break-even at each value")
    if name in parameters(sc):
        return
    raise ValueError(f"parameter = {name!r} is not known; allowed: a scenario field "
                     f"({', '.join(FIELDS)}), fixed_s.<variant id>, {', '.join(STEPS_PARAMETERS)}")


def with_parameter(theta, name: str, value):
    """(sc, steps_a, steps_b) with parameter ``name`` set to ``value`` (traceable)."""
    sc, steps_a, steps_b = theta
    if name == "steps_a":
        return sc, value, steps_b
    if name == "steps_b":
        return sc, steps_a, value
    return with_parameters(sc, {name: value}), steps_a, steps_b


def get_parameter(theta, name: str):
    sc, steps_a, steps_b = theta
    if name == "steps_a":
        return steps_a
    if name == "steps_b":
        return steps_b
    return scenario_parameter(sc, name)


def pair_steps(sc: Scenario, a: str, b: str, basis: str, enob=None) -> tuple[np.ndarray, np.ndarray]:
    """Steps to target of a and b (inf = never, NaN = not measured), resolved outside jit, over the
    shape of the scenario's ENOB (or of ``enob``)."""
    if basis not in BASES:
        raise ValueError(f"basis = {basis!r} is not known; allowed: {', '.join(BASES)}")
    enob = np.asarray(sc.enob if enob is None else enob, dtype=float)
    look = np.vectorize(lambda vid, e: sc.steps_of(vid, float(e), basis), otypes=[float])
    return look(a, enob), look(b, enob)


def _pick(x, index):
    """x[..., index] with ``index`` an integer array broadcasting against x's leading axes."""
    index = jnp.asarray(index)
    batch = jnp.broadcast_shapes(x.shape[:-1], index.shape)
    # On a flat batch: high-rank broadcasting is many times slower on CPU.
    flat = jnp.broadcast_to(x, (*batch, x.shape[-1])).reshape(-1, x.shape[-1])
    i = jnp.broadcast_to(index, batch).reshape(-1)
    # A chain of selects, fused into the loop that uses it (a masked sum is a reduction of its
    # own, which XLA's CPU backend runs several times slower).
    out = flat[:, 0]
    for j in range(1, x.shape[-1]):
        out = jnp.where(i == j, flat[:, j], out)
    return out.reshape(batch)


# --------------------------------------------------------------------------- the searches


def _times_B(B, theta):
    """(n_a / n_b x T_a x B, T_b x B): the two times the bandwidth search compares, both times B
    (piecewise linear in B)."""
    ratio, c, Q_a, V_a, Q_b, V_b = theta
    return ratio * (c * B + jnp.maximum(0.0, Q_a * B + V_a)), c * B + jnp.maximum(0.0, Q_b * B + V_b)


def _bandwidth_residual(B, theta):
    # T_a / T_b - 1, both times B: no logarithm, as these evaluations are most of the search's cost.
    t_a, t_b = _times_B(B, theta)
    return t_a / t_b - 1.0


def _bandwidth_start(B_a, B_b, theta):
    """The root of the residual's numerator, T_a - T_b times B (piecewise linear in B), on the
    line through its values at B_a and B_b: exact in a bracket where neither time changes slope,
    so the refinement's first Newton step converges."""
    n_a, n_b = (a - b for a, b in (_times_B(B_a, theta), _times_B(B_b, theta)))
    return jnp.where(n_a != n_b, B_a + n_a * (B_b - B_a) / (n_a - n_b), jnp.nan)


def _positive_ratio(num, den):
    """num / den where both are > 0, else NaN (no kink)."""
    ok = (num > 0) & (den > 0)
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), jnp.nan)


def bandwidth_kinks_Bps(sc: Scenario, *, straggles: bool = False) -> tuple:
    """The WAN bandwidths at which any variant's step changes slope in 1/B, B/s: a tuple of arrays,
    each broadcastable to (..., variant), NaN where there is none (a superset is harmless: each
    is one more bracket point of the search).

    With equal links, or a ring (paced by its slowest link), one fragment's communication is
    A + S/B (S = WAN bytes per link / F / the slowest ring link's relative bandwidth), so the step
    c + F max(0, A + S/B - (f + tau) c) / H has one kink, where the communication first fits its
    window:

        B* = S / ((f + tau) c - A)        (where both are > 0; none otherwise)

    On a mesh of links that differ (``sc.links``, per-link values) the WAN term is the
    largest over links of bytes / B_ij + hops l_ij: add the bandwidths where the largest link
    changes (the breaks of the upper envelope of the links' lines, scaled by bytes / (hops x
    latency): :func:`bandjax.links.mesh_envelope`, found where the table is concrete and held as
    data beside a table held so) and each link's own zero of max(0, .).

    The window is counted in the compute the step's is (docs/model.md section 16): c' where
    workers straggle (``straggles``, static: :func:`bandjax.stragglers.may_straggle`), c_max on
    sites that differ, and a "scaled" variant's fastest site's step (:func:`bandjax.step.
    window_compute_s`); c otherwise.
    """
    m = sync_method(sc)
    parts = fragment_parts_s(sc, method=m)
    comm = sum_parts(parts)
    c = col(sc.gpu_compute_s)
    if straggles or _sites.differ(sc):
        c = window_compute_s(sc, inner_compute_s(sc, m))
    wan = parts[_WAN]  # one fragment's WAN bytes term at the scenario's own bandwidth
    window = window_s(c, col(sc.overlap_fraction), m.delay)
    kinks = [_positive_ratio(wan * col(sc.wan_Bps), window - (comm - wan))]
    links = _mesh_links(sc)
    if links is not None:
        kinks += _mesh_kinks_Bps(sc, links, m, comm - wan - parts[_WAN + 1], window)
    return tuple(kinks)


def _mesh_links(sc: Scenario):
    """The scenario's per-link table where its links differ (per-link values), else None
    (equal links: one kink per variant). A table held as data is one whose links differ
    (:func:`table_as_data`): its values may be traced."""
    links = getattr(sc, "links", None)
    if links is None or isinstance(links, DataLinks):
        return links
    return None if getattr(links, "equal", False) else links


def table_as_data(sc: Scenario) -> Scenario:
    """``sc`` with a links table whose links differ held as data, with its mesh's envelope
    (:func:`bandjax.links.as_data`): a search over a new table of the same K (and an envelope of
    as many slots) runs the program the first one compiled, with the same answers. Equal links
    stay a static table (all ones: one program for every such K, and no pacing link to change)."""
    links = sc.links
    if links is None or (not isinstance(links, DataLinks) and links.equal):
        return sc
    return as_data(sc, envelope=True)


def _mesh_kinks_Bps(sc: Scenario, links, m, rest, window) -> list:
    """:func:`bandwidth_kinks_Bps`'s points of a mesh whose links differ: ``rest`` is a fragment's
    communication without the WAN (module, ports, d), ``window`` (f + tau) c. The envelope of
    the table's lines is the one it holds as data (NaN and -1 padded), else found from it
    (:func:`bandjax.links.mesh_envelope`)."""
    pairs = mesh_pairs(int(links.K))
    rb, rl = link_values(links.bandwidth_rel, pairs), link_values(links.latency_rel, pairs)
    t = traffic_B(sc)
    latency = t.hops * col(sc.wan_latency_s)  # the longest link's hops x l
    # Link l's term is wan_B / (B rb_l) + latency rl_l: lines in y = wan_B / (B latency) with
    # slopes 1 / rb_l and intercepts rl_l.
    breaks, on_top = getattr(links, "envelope", None) or mesh_envelope(links)
    out = []
    for F in {1.0, *np.unique(np.asarray(m.fragments, dtype=float)).tolist()}:
        # the pacing link switches (bytes of one sync, or of one fragment)
        out += [_positive_ratio(t.wan_B / F, breaks[k] * latency) for k in range(len(breaks))]
    for k in range(len(on_top)):  # each pacing link's own zero of max(0, .)
        l = jnp.maximum(on_top[k], 0)  # a padded slot (-1): no point
        zero = _positive_ratio(t.wan_B / m.fragments / rb[l], window - rest - latency * rl[l])
        out.append(jnp.where(on_top[k] >= 0, zero, jnp.nan))
    return out


def may_kink(sc: Scenario, ia=None, ib=None) -> bool:
    """Whether a variant's step can change slope in 1/B (a static fact, as
    :func:`bandjax.failures.may_fail`): False where the overlap is concretely 0 everywhere, every
    variant (of the pair ``ia``, ``ib`` where they are concrete indices, else of the registry)
    syncs without delay, and the links are equal. Then (f + tau) c = 0, so each step is
    c + F (comm - WAN + WAN(B)) / H, affine in 1/B over the whole range: no kink. True where it
    may (or where a value is traced)."""
    if _mesh_links(sc) is not None:
        return True
    try:
        if np.any(np.asarray(sc.overlap_fraction) != 0):
            return True
    except Exception:  # a tracer: not known until run
        return True
    delay = np.array([float(v.delay) for v in sc.variants])
    try:
        used = np.unique(np.concatenate([np.ravel(np.asarray(i, dtype=int)) for i in (ia, ib)]))
    except Exception:  # traced (or not given): every variant of the registry
        used = np.arange(len(delay))
    return bool(np.any(delay[used] != 0))


def needs_general_search(sc: Scenario) -> bool:
    """Whether a pair's times over bandwidth are not of the simple form n (c + max(0, Q + V/B))
    that :func:`bandwidth_crossings`'s fast residual takes (a static fact of a concrete
    scenario; True where a value is traced):

    - per-link values (``sc.links``): a mesh's WAN term is the largest of its links';
    - failures (:func:`bandjax.failures.may_fail`): the time divides by an ETTR that moves with B;
    - stragglers (:func:`bandjax.stragglers.may_straggle`): the compute part is c', not c;
    - sites that differ (:func:`bandjax.sites.differ`): the step waits for c_max, a "scaled"
      variant's window is its fastest site's step and its time divides by its tokens share.

    Where it holds the search re-evaluates the sweep's own times at every trial bandwidth
    (:func:`field_crossings` over ``wan_Bps``)."""
    return (sc.links is not None or _failures.may_fail(sc) or may_straggle(sc)
            or _sites.differ(sc))


def bandwidth_crossings(sc: Scenario, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps, *,
                        grid: int = GRID, max_roots: int = MAX_ROOTS, implicit: bool = True,
                        fails: bool = False, kinks: bool | None = None,
                        general: bool | None = None) -> Crossings:
    """Where variants ``ia`` and ``ib`` reach the target equally fast, over WAN bandwidth (B/s).

        r(B) = n_a (c + max(0, Q_a + V_a/B)) / (n_b (c + max(0, Q_b + V_b/B))) - 1,
        Q = F/H (comm_frag - WAN bytes term - (f + tau) c),   V = F/H WAN bytes term x B0

    (comm_frag: one fragment sync's terms, docs/model.md section 14). The bracket points are the
    coarse grid and both variants' kinks (:func:`bandwidth_kinks_Bps`), so every crossing in range
    is found and ties over an interval come back as such (``tie_lo``, ``tie_hi``).

    Where a variant never reaches the target (steps inf) or was not measured (NaN) there is no
    crossing; the status says who wins throughout or why there is no answer.

    Args:
      sc: the scenario; any numeric field may be an array (a grid), broadcasting with the rest.
      ia, ib: integer arrays of variant indices into the scenario's registry (pairs as a
        grid dimension, broadcasting with the scenario's fields).
      steps_a, steps_b: steps to target of a and b, broadcasting likewise.
      lo_Bps, hi_Bps: the searched range, B/s.
      implicit: as in :func:`bandjax.roots.find_crossings` (``False``: values only).

    With per-link values (``sc.links``) a mesh's WAN term is the largest of several links' terms,
    not affine in 1/B once their latencies differ; the search then re-evaluates the closed forms
    at each trial bandwidth (:func:`field_crossings` over ``wan_Bps``, every link scaled in
    proportion), a table whose links differ held as data (:func:`table_as_data`). So does a scenario where workers fail (``fails``, static: give
    :func:`bandjax.failures.may_fail` of the scenario): a time to target divided by the ETTR of
    replicas that meet once a round is not affine in 1/B. Without ``fails`` the ETTR is taken as 1.
    Sites that differ (a static fact) always take the general search. ``general`` (static):
    whether the times are not of the simple form for any reason; None asks
    :func:`needs_general_search` of ``sc`` (True where a value that decides it is traced: a caller
    inside its own jit gives the concrete scenario's fact, as it does ``kinks``); with it, c' where
    workers straggle.

    ``kinks`` (static): whether a step may change slope in range (:func:`may_kink`, which None
    asks of the arguments: True under a trace). False runs the search on the coarse grid alone,
    in one pass over the batch (:func:`bandjax.roots.find_crossings`'s ``one_pass``), with the
    same answers: with no kink, each time is affine in 1/B and the kinks would all be NaN.

    Returns:
      :class:`bandjax.roots.Crossings` with ``x`` in B/s; differentiable in ``sc`` and the steps.
    """
    sc = table_as_data(sc)
    kinks = may_kink(sc, ia, ib) if kinks is None else bool(kinks)
    general = (bool(fails) or needs_general_search(sc)) if general is None else bool(general)
    return _bandwidth_crossings(sc, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps, grid=grid,
                                max_roots=max_roots, implicit=implicit, general=general,
                                kinks=kinks, straggles=general and may_straggle(sc))


@partial(jax.jit, static_argnames=("grid", "max_roots", "implicit", "general", "kinks",
                                   "straggles"))
def _bandwidth_crossings(sc: Scenario, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps, *, grid: int,
                         max_roots: int, implicit: bool, general: bool, kinks: bool,
                         straggles: bool = False) -> Crossings:
    """:func:`bandwidth_crossings` with its static facts given (``straggles``: the kinks' window
    in c', :func:`bandwidth_kinks_Bps`)."""
    if sc.links is not None or general or _sites.differ(sc):
        # the pair's kinks (where max(0, .) switches, and where a mesh's pacing link changes) are
        # bracket points, so no pair of crossings hides between two coarse cells
        extra = ([_pick(k, i) for k in bandwidth_kinks_Bps(sc, straggles=straggles)
                  for i in (ia, ib)] if kinks else None)
        return _field_crossings(sc, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps,
                                parameters(sc).index("wan_Bps"), grid=grid, max_roots=max_roots,
                                implicit=implicit, extra=extra, straggles=straggles)
    m = sync_method(sc)
    comm_parts = fragment_parts_s(sc, method=m)
    comm = sum_parts(comm_parts)
    c = jnp.asarray(sc.gpu_compute_s)
    wan = jnp.broadcast_to(comm_parts[_WAN], comm.shape)
    # F max(0, x) / H = max(0, F x / H): the rounds' factor goes inside the kink (section 14)
    rate = m.fragments / m.H
    Q = rate * (comm - wan - window_s(col(c), col(sc.overlap_fraction), m.delay))
    V = rate * wan * col(sc.wan_Bps)
    steps_a, steps_b = jnp.asarray(steps_a, dtype=float), jnp.asarray(steps_b, dtype=float)
    measured = jnp.isfinite(steps_a) & jnp.isfinite(steps_b)
    # Unmeasured or "never" steps are set aside before the search (and their statuses after it),
    # so nothing infinite enters the residual or its derivatives.
    ratio = jnp.where(measured, steps_a, 1.0) / jnp.where(measured, steps_b, 1.0)
    theta = (ratio, c, _pick(Q, ia), _pick(V, ia), _pick(Q, ib), _pick(V, ib))
    if kinks:
        # each variant's kink, B* = V / (-Q) (:func:`bandwidth_kinks_Bps`, from the same Q and V)
        extra = [_positive_ratio(theta[3], -theta[2]), _positive_ratio(theta[5], -theta[4])]
        if _mesh_links(sc) is not None:
            extra += [_pick(k, i) for k in bandwidth_kinks_Bps(sc)[1:] for i in (ia, ib)]
    else:  # Q >= 0 (no window), so no kink: the residual is a few flops, searched in one pass
        extra = None
    c = _roots.find_crossings(_bandwidth_residual, theta, lo_Bps, hi_Bps, grid=grid,
                              max_roots=max_roots, implicit=implicit, extra=extra,
                              one_pass=not kinks, start=_bandwidth_start)
    return _set_aside(c, steps_a, steps_b)


# bandjax's own searches that return NumPy values: quick to compile, no derivatives
_quick_core = _jax.quick(_bandwidth_crossings,
                         static_argnames=("grid", "max_roots", "implicit", "general", "kinks",
                                          "straggles"))


QUICK_BATCH = 256
"""A search of the simple form (:func:`_quick_bandwidth`) of at most this many points runs on a
flat batch of this many: the report's three (every pair at each budget, the pairs over K and
topology, the smallest changes of the WAN) then share one compiled program, where each grid's
shape compiled its own (1 to 2 s each on 2 cores)."""
_QUICK_LOCK = threading.Lock()  # held around its calls: two threads' first calls compile once


def _quick_bandwidth(sc, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps, *, grid, max_roots):
    """:func:`bandwidth_crossings` of a concrete scenario, values only (NumPy), its static facts
    asked of it (:func:`needs_general_search`, :func:`may_kink`).

    Where the times are of the simple form (no links table: every leaf of the scenario is a value
    per point), the points are flattened to one axis, padded with copies of the last point up to
    :data:`QUICK_BATCH` (or the next power of two above it), and the answers put back in the
    grid's shape: the compiled program then depends on that length alone, not on which fields
    are grids of which shape. Each point's answer is its own search's either way."""
    sc = table_as_data(sc)
    facts = dict(general=needs_general_search(sc), kinks=may_kink(sc, ia, ib),
                 straggles=may_straggle(sc))
    run = partial(_quick_core, grid=grid, max_roots=max_roots, implicit=False, **facts)
    if facts["general"] or sc.links is not None:
        return jax.tree.map(np.asarray, run(sc, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps))
    leaves, tree = jax.tree.flatten(sc)
    ints, floats = [np.asarray(ia), np.asarray(ib)], [np.asarray(v, dtype=float) for v in
                                                      (*leaves, steps_a, steps_b, lo_Bps, hi_Bps)]
    shape = np.broadcast_shapes(*(v.shape for v in ints + floats))
    n = math.prod(shape)
    if n == 0:
        return jax.tree.map(np.asarray, run(sc, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps))
    size = max(QUICK_BATCH, 1 << (n - 1).bit_length())

    def flat(v):
        v = np.broadcast_to(v, shape).reshape(n)
        return np.concatenate([v, np.repeat(v[-1:], size - n)])

    ints, floats = [flat(v) for v in ints], [flat(v) for v in floats]
    with _QUICK_LOCK:
        c = run(jax.tree.unflatten(tree, floats[:-4]), *ints, *floats[-4:])
    return jax.tree.map(lambda v: np.asarray(v)[:n].reshape(tuple(shape) + np.shape(v)[1:]), c)


def _set_aside(c: Crossings, steps_a, steps_b) -> Crossings:
    """No crossings where a step count is not a number: who wins throughout, or why no answer."""
    never_a, never_b = jnp.isposinf(steps_a), jnp.isposinf(steps_b)
    missing = jnp.isnan(steps_a) | jnp.isnan(steps_b)
    measured = ~(never_a | never_b | missing)
    status = jnp.select([measured, missing, never_a & never_b, never_a], [c.status, NOT_AVAILABLE,
                        NEITHER, B_WINS], A_WINS).astype(jnp.int8)
    shape = jnp.broadcast_shapes(status.shape, c.count.shape)
    keep = measured[..., None]
    return Crossings(
        x=jnp.where(keep, c.x, jnp.nan),
        count=jnp.broadcast_to(jnp.where(measured, c.count, 0), shape),
        a_wins_below=jnp.where(keep, c.a_wins_below, False),
        status=jnp.broadcast_to(status, shape),
        residual=jnp.where(keep, c.residual, jnp.nan),
        tie_lo=jnp.where(keep, c.tie_lo, jnp.nan),
        tie_hi=jnp.where(keep, c.tie_hi, jnp.nan),
        tie_count=jnp.broadcast_to(jnp.where(measured, c.tie_count, 0), shape),
        tie_below=jnp.where(keep, c.tie_below, 0).astype(jnp.int8),
        tie_above=jnp.where(keep, c.tie_above, 0).astype(jnp.int8),
    )


def _most_roots(c: Crossings) -> int:
    """The most crossings or ties of any point of ``c``, read in NumPy (``np.max`` of a JAX array
    would compile a reduction of its own for each shape)."""
    return int(max(np.max(np.asarray(c.count)), np.max(np.asarray(c.tie_count))))


def all_bandwidth_crossings(sc: Scenario, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps, *,
                            grid: int = GRID) -> Crossings:
    """:func:`bandwidth_crossings` with as many root slots as the most crossings any point has
    (it runs again with more where the first run filled them)."""
    max_roots = MAX_ROOTS
    while True:
        c = _quick_bandwidth(sc, ia, ib, steps_a, steps_b, lo_Bps, hi_Bps, grid=grid,
                             max_roots=max_roots)
        most = _most_roots(c)
        if most <= max_roots:
            return c
        max_roots = most


def field_crossings(sc: Scenario, ia, ib, steps_a, steps_b, lo, hi, *, field: str,
                    grid: int = GRID, max_roots: int = MAX_ROOTS) -> Crossings:
    """Where ``ia`` and ``ib`` reach the target equally fast, over one parameter ``field``.

        r(x) = log(n_a step_a(sc with field = x)) - log(n_b step_b(sc with field = x))

    ``field`` is a name of :data:`PARAMETERS`; ``lo``/``hi`` in its SI units. Other arguments as
    in :func:`bandwidth_crossings`. Each field has its own compiled search (the field's index is
    static: compiling one substitution is several times faster than a select over all of them).
    """
    _check_parameter(field, sc)
    sc = table_as_data(sc)
    return _field_crossings(sc, ia, ib, steps_a, steps_b, lo, hi, parameters(sc).index(field),
                            grid=grid, max_roots=max_roots, straggles=may_straggle(sc))


def with_parameter_at(theta, k, value):
    """theta with parameter number ``k`` of :func:`parameters` set to ``value``.

    ``k`` a Python int (static): only that parameter is replaced, so the traced graph holds one
    substitution, not one select per parameter (several times less to compile). ``k`` traced: a
    select over every parameter.
    """
    if isinstance(k, (int, np.integer)):
        name = parameters(theta[0])[int(k)]
        if name.startswith("fixed_s."):  # the fixed times are stacked: one shape for all
            fixed = theta[0].fixed_s
            shape = jnp.broadcast_shapes(jnp.shape(value), *(jnp.shape(t) for t in fixed.values()))
            fixed = {v: jnp.broadcast_to(jnp.asarray(t, dtype=float), shape) for v, t in fixed.items()}
            theta = (theta[0].replace(fixed_s=fixed), *theta[1:])
        return with_parameter(theta, name, value)
    for j, name in enumerate(parameters(theta[0])):
        theta = with_parameter(theta, name, jnp.where(k == j, value, get_parameter(theta, name)))
    return theta


def _table_apart(sc: Scenario) -> tuple:
    """(``sc`` without its links table, the table): the search flattens every leaf of its
    parameters to its batch (:func:`bandjax.roots.find_crossings`), which a table held as data
    (K x K leaves) is not part of, so the residual puts the table back."""
    return dataclasses.replace(sc, links=None), sc.links


@partial(jax.jit, static_argnames=("k", "grid", "max_roots", "implicit", "straggles"))
def _field_crossings(sc, ia, ib, steps_a, steps_b, lo, hi, k, *, grid, max_roots, implicit=True,
                     extra=None, straggles=True):
    # straggles (static): may_straggle of the concrete scenario; False leaves the quadrature of c'
    # out of the program (bandjax.stragglers.settled), unless the family itself is searched
    sc = settled(sc, straggles or parameters(sc)[k] == "straggler")
    steps_a, steps_b = jnp.asarray(steps_a, dtype=float), jnp.asarray(steps_b, dtype=float)
    # The searched steps are a variable, not a table entry: only the other side's can be missing.
    names = parameters(sc)
    steps_a = jnp.where(k == names.index("steps_a"), 1.0, steps_a)
    steps_b = jnp.where(k == names.index("steps_b"), 1.0, steps_b)
    measured = jnp.isfinite(steps_a) & jnp.isfinite(steps_b)
    safe = lambda n: jnp.where(measured, n, 1.0)  # noqa: E731
    sc, links = _table_apart(sc)

    def residual(x, theta):
        pair, rest = theta[:2], theta[2:]
        sc_x, na, nb = with_parameter_at(rest, k, x)
        s = time_to_target_s(dataclasses.replace(sc_x, links=links), 1.0)  # a step / ETTR
        return jnp.log(na * _pick(s, pair[0])) - jnp.log(nb * _pick(s, pair[1]))

    # The pair's indices travel in theta, so they are flattened with the batch.
    theta = (ia, ib, sc, safe(steps_a), safe(steps_b))
    # extra: more bracket points (over wan_Bps, the pair's kinks: bandwidth_kinks_Bps picked at
    # ia and ib), as in bandwidth_crossings
    c = _roots.find_crossings(residual, theta, lo, hi, grid=grid, max_roots=max_roots,
                              implicit=implicit, extra=extra)
    return _set_aside(c, steps_a, steps_b)


_quick_field = partial(_jax.quick(_field_crossings,
                                  static_argnames=("k", "grid", "max_roots", "implicit",
                                                   "straggles")),
                       implicit=False)


@partial(jax.jit, static_argnames=("names", "grid", "max_roots", "straggles"))
def _fields_crossings(sc, ia, ib, steps_a, steps_b, lo, hi, which, *, names, grid, max_roots,
                      straggles=True):
    """:func:`_field_crossings` over several parameters in one search: point i searches
    ``names[which[i]]`` (values only). Each name is substituted by a select on ``which``, among
    ``names`` alone, so one compiled search serves them all where :func:`_field_crossings`
    compiles one a parameter; a point's numbers are those of its own parameter's search.
    ``straggles``: as in :func:`_field_crossings`."""
    sc = settled(sc, straggles or "straggler" in names)
    steps_a, steps_b = jnp.asarray(steps_a, dtype=float), jnp.asarray(steps_b, dtype=float)
    which = jnp.asarray(which)
    # The searched steps are a variable, not a table entry: only the other side's can be missing.
    steps_a = jnp.where(jnp.asarray([n == "steps_a" for n in names])[which], 1.0, steps_a)
    steps_b = jnp.where(jnp.asarray([n == "steps_b" for n in names])[which], 1.0, steps_b)
    measured = jnp.isfinite(steps_a) & jnp.isfinite(steps_b)
    safe = lambda n: jnp.where(measured, n, 1.0)  # noqa: E731
    every = parameters(sc)
    sc, links = _table_apart(sc)

    def residual(x, theta):
        pair, w, rest = theta[:2], theta[2], theta[3:]
        for j, name in enumerate(names):
            rest = with_parameter_at(rest, every.index(name),
                                     jnp.where(w == j, x, get_parameter(rest, name)))
        sc_x, na, nb = rest
        s = time_to_target_s(dataclasses.replace(sc_x, links=links), 1.0)  # a step / ETTR
        return jnp.log(na * _pick(s, pair[0])) - jnp.log(nb * _pick(s, pair[1]))

    theta = (ia, ib, which, sc, safe(steps_a), safe(steps_b))
    c = _roots.find_crossings(residual, theta, lo, hi, grid=grid, max_roots=max_roots,
                              implicit=False)
    return _set_aside(c, steps_a, steps_b)


_quick_fields = _jax.quick(_fields_crossings,
                           static_argnames=("names", "grid", "max_roots", "straggles"))


def searches(sc: Scenario, pairs, names, lo, hi, *, grid: int = GRID) -> Crossings:
    """Many searches at once: a list of :class:`Crossings` (NumPy), one a search; search i is of
    pair ``pairs[i]`` = (a, b, basis) over parameter ``names[i]`` (a name of :func:`parameters`,
    ``"wan_Bps"`` for the bandwidth) within [lo[i], hi[i]] (SI), and its numbers are
    :func:`break_even`'s for it. The bandwidth's searches run as one compiled search, the others'
    as one more, where :func:`break_even` compiles one a parameter (root slots: as many as the
    most crossings of any search, NaN-padded)."""
    pairs, names = list(pairs), list(names)
    sc = table_as_data(sc)
    out = [None] * len(pairs)
    groups = {"wan_Bps": [i for i, n in enumerate(names) if n == "wan_Bps"]}
    groups["fields"] = [i for i, n in enumerate(names) if n != "wan_Bps"]
    for group, at in groups.items():
        if not at:
            continue
        ia = np.array([sc.ids.index(pairs[i][0]) for i in at])
        ib = np.array([sc.ids.index(pairs[i][1]) for i in at])
        steps = [pair_steps(sc, pairs[i][0], pairs[i][1], pairs[i][2]) for i in at]
        na = np.array([float(s[0]) for s in steps])
        nb = np.array([float(s[1]) for s in steps])
        lo_, hi_ = np.array([lo[i] for i in at]), np.array([hi[i] for i in at])
        if group == "fields":
            used = tuple(dict.fromkeys(names[i] for i in at))
            which = np.array([used.index(names[i]) for i in at])
        max_roots = MAX_ROOTS
        while True:
            if group == "wan_Bps":
                c = _quick_bandwidth(sc, ia, ib, na, nb, lo_, hi_, grid=grid,
                                     max_roots=max_roots)
            else:
                c = _quick_fields(sc, ia, ib, na, nb, lo_, hi_, which, names=used, grid=grid,
                                  max_roots=max_roots, straggles=may_straggle(sc))
            most = _most_roots(c)
            if most <= max_roots:
                break
            max_roots = most
        c = jax.tree.map(np.asarray, c)
        for j, i in enumerate(at):
            out[i] = c._replace(**{f: getattr(c, f)[j] for f in c._fields})
    return out


# --------------------------------------------------------------------------- user-facing


@dataclass(frozen=True)
class BreakEven:
    """Crossings and ties of a and b over one parameter, for every point of the scenario's grid.

    ``x`` (..., max_roots) in ``units`` (SI), NaN-padded; ``a_wins_below`` likewise; ``count`` and
    ``status`` (...,), statuses named by :data:`bandjax.roots.STATUS_NAMES`. ``tie_lo``/``tie_hi``
    (..., max_roots): the ends of each interval over which both take equally long (relative
    difference at most :data:`TIE_RTOL`; NaN-padded), ``tie_count`` (...,), and ``tie_below`` /
    ``tie_above`` the sign of log(T_a / T_b) just outside each (-1: a faster, +1: b faster, 0: the
    range's end). A tie is not a crossing.
    """

    a: str
    b: str
    basis: str
    over: str
    parameter: str
    units: str
    lo: float
    hi: float
    x: np.ndarray
    a_wins_below: np.ndarray
    count: np.ndarray
    status: np.ndarray
    steps_a: np.ndarray
    steps_b: np.ndarray
    links_scaling: str | None = None  # with per-link values: how the searched leaf scales them
    tie_lo: np.ndarray | None = None
    tie_hi: np.ndarray | None = None
    tie_count: np.ndarray | None = None
    tie_below: np.ndarray | None = None
    tie_above: np.ndarray | None = None

    def at(self, index=()) -> dict:
        """One grid point's answer: crossings, tie intervals, the winner on each piece of the
        range, and the status name (:func:`describe`)."""
        ties = {}
        if self.tie_lo is not None:
            ties = {k: np.asarray(getattr(self, k))[index]
                    for k in ("tie_lo", "tie_hi", "tie_count", "tie_below", "tie_above")}
        return describe(self.a, self.b, np.asarray(self.x)[index],
                        np.asarray(self.a_wins_below)[index], np.asarray(self.count)[index],
                        np.asarray(self.status)[index], **ties)


TIED = "tie"  # the winner of a piece of the range over which a and b tie


def describe(a: str, b: str, x, a_wins_below, count, status, tie_lo=(), tie_hi=(), tie_count=0,
             tie_below=(), tie_above=()) -> dict:
    """One point's crossings and ties as plain values.

    Returns a dict: ``x`` (the crossings, ascending), ``ties`` (``[from, to]`` of each interval
    over which a and b take equally long), ``winners`` (who is faster on each piece the
    crossings and the ties' ends cut the range into, in order: a variant id, :data:`TIED` on a
    tie, None where neither reaches the target or there is no answer), ``cuts`` (the len(winners)
    - 1 points between consecutive pieces) and ``status`` (a name of :data:`STATUS_NAMES`).
    Without ties, ``winners`` has count + 1 entries (one, when there is no crossing) and ``cuts``
    is ``x``.
    """
    n = min(int(count), len(x))
    xs = [float(v) for v in x[:n]]
    below = [bool(v) for v in a_wins_below[:n]]
    name = STATUS_NAMES[int(status)]
    nt = min(int(tie_count), len(tie_lo))
    ties = [[float(tie_lo[k]), float(tie_hi[k])] for k in range(nt)]
    side = lambda s: None if int(s) == 0 else (a if int(s) < 0 else b)  # noqa: E731
    # Crossings and ties along the range: (where, who is faster below, [(cut, next piece), ...]).
    events = [(xs[k], a if below[k] else b, [(xs[k], b if below[k] else a)]) for k in range(n)]
    for k in range(nt):
        up = side(tie_above[k])
        events.append((ties[k][0], side(tie_below[k]),
                       [(ties[k][0], TIED)] + ([(ties[k][1], up)] if up else [])))
    events.sort(key=lambda e: e[0])
    cuts = []
    if events:
        winners = [events[0][1]] if events[0][1] is not None else []
        for _, _, after in events:
            for cut, w in after:
                if winners:
                    cuts.append(cut)
                winners.append(w)
    elif name in ("a_wins_throughout", "b_wins_throughout"):
        winners = [a if name == "a_wins_throughout" else b]
    else:
        winners = [None]
    return {"x": xs, "ties": ties, "winners": winners, "cuts": cuts, "status": name}


def _default_range(over: str, parameter: str, sc: Scenario, steps: tuple, lo, hi):
    if over == "bandwidth":
        lo = BANDWIDTH_RANGE_GBps[0] * 1e9 if lo is None else lo
        hi = BANDWIDTH_RANGE_GBps[1] * 1e9 if hi is None else hi
    elif over == "budget":
        lo = BUDGET_RANGE_GFLOPs[0] * 1e9 if lo is None else lo
        hi = BUDGET_RANGE_GFLOPs[1] * 1e9 if hi is None else hi
    elif (lo is None or hi is None) and parameter in DEFAULT_RANGES:
        lo = DEFAULT_RANGES[parameter][0] if lo is None else lo
        hi = DEFAULT_RANGES[parameter][1] if hi is None else hi
    elif lo is None or hi is None:
        p0 = np.asarray(get_parameter((sc, *steps), parameter), dtype=float)
        if not np.all(np.isfinite(p0) & (p0 > 0)):
            raise ValueError(f"{parameter} = {p0!r}: give the searched range (lo, hi) explicitly; "
                             "the default (value / 100 to value x 100) needs a finite value > 0")
        lo = float(np.min(p0)) / 100 if lo is None else lo
        hi = float(np.max(p0)) * 100 if hi is None else hi
    return check_range(lo, hi, f"in SI units of {parameter}")


def check_range(lo, hi, units: str, names: str = "range") -> tuple[float, float]:
    """(lo, hi) of a searched range as floats: real numbers, finite, 0 < lo < hi; else a
    ``ValueError`` naming ``names``, the values as given and ``units``."""
    lo, hi = (x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in (lo, hi))
    for x in (lo, hi):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise ValueError(f"{names} = ({lo!r}, {hi!r}): expected two real numbers with "
                             f"0 < lo < hi ({units})")
    try:
        lo_, hi_ = float(lo), float(hi)
    except OverflowError:  # an integer past the largest float
        lo_ = hi_ = math.nan
    if not (math.isfinite(lo_) and math.isfinite(hi_) and 0 < lo_ < hi_):
        shown = ", ".join(_digits(x) if isinstance(x, int) else repr(x) for x in (lo, hi))
        raise ValueError(f"{names} = ({shown}): must be finite with 0 < lo < hi ({units})")
    return lo_, hi_


def break_even(sc: Scenario, a: str, b: str, *, over: str = "bandwidth",
               basis: str = "hypothesis", lo=None, hi=None, grid: int = GRID,
               max_roots: int = MAX_ROOTS) -> BreakEven:
    """Every crossing of a and b over ``over`` for the scenario (scalar or a grid of fields).

    Args:
      sc: the scenario; numeric fields may be arrays (broadcast as a grid).
      a, b: variant ids or short labels.
      over: ``"bandwidth"`` (WAN, B/s), ``"budget"`` (module compute, FLOP/s) or any parameter of
        :func:`parameter_names` (searched by re-evaluating the closed forms).
      basis: which steps E' takes: ``"hypothesis"`` (E's) or ``"exact"`` (the exact band's).
      lo, hi: the range in SI units; defaults: 0.1 to 1,000 GB/s, 1 to 10,000 GFLOP/s, or the
        parameter's value / 100 to x 100.
      grid: coarse grid points (log-uniform) that find brackets.
      max_roots: crossings refined per point; raised and re-run if any point has more.

    With per-link values (``sc.links``) ``bandwidth`` is the slowest link's and ``wan_latency_s``
    the longest link's: every link scales in proportion, which ``links_scaling`` says.

    Ties over an interval (equal times, :data:`TIE_RTOL`) come back in ``tie_lo``/``tie_hi``, not as
    crossings. Over bandwidth their ends are the variants' kinks, exact to rounding; over another
    parameter they are points of the coarse grid (the tie's true ends lie within one cell).

    Returns:
      :class:`BreakEven` (numpy arrays). Under uncertain inputs, :func:`bandjax.break_even` with
      ``samples`` (:mod:`bandjax.answers`).
    """
    a, b = resolve_variant(a, sc.variants, what="a"), resolve_variant(b, sc.variants, what="b")
    if a == b:
        raise ValueError(f"a = b = {a!r}: a break-even needs two different variants")
    for what, value in (("over", over), ("basis", basis)):
        if not isinstance(value, str):
            raise ValueError(f"{what} = {value!r}: expected a name (text): over 'bandwidth', "
                             "'budget' or a parameter; basis 'hypothesis' or 'exact'")
    parameter = OVER.get(over, over)
    _check_parameter(parameter, sc)
    if parameter == "enob":
        raise ValueError("over = 'enob': ENOB is discrete (measured steps); use enob_break_even")
    steps = pair_steps(sc, a, b, basis)
    lo, hi = _default_range(over, parameter, sc, steps, lo, hi)
    ia, ib = sc.ids.index(a), sc.ids.index(b)
    data = table_as_data(sc)
    while True:
        if parameter == "wan_Bps":
            c = _quick_bandwidth(data, ia, ib, *steps, lo, hi, grid=grid, max_roots=max_roots)
        else:
            c = _quick_field(data, ia, ib, *steps, lo, hi, k=parameters(sc).index(parameter),
                             grid=grid, max_roots=max_roots, straggles=may_straggle(sc))
        most = _most_roots(c)
        if most <= max_roots:
            break
        max_roots = most
    units = parameter_units(parameter)
    return BreakEven(a=a, b=b, basis=basis, over=over, parameter=parameter, units=units,
                     lo=lo, hi=hi, x=np.asarray(c.x), a_wins_below=np.asarray(c.a_wins_below),
                     count=np.asarray(c.count), status=np.asarray(c.status),
                     steps_a=steps[0], steps_b=steps[1], tie_lo=np.asarray(c.tie_lo),
                     tie_hi=np.asarray(c.tie_hi), tie_count=np.asarray(c.tie_count),
                     tie_below=np.asarray(c.tie_below), tie_above=np.asarray(c.tie_above),
                     links_scaling=scaling_note(sc, [parameter]))


def parameter_units(parameter: str) -> str:
    """The SI units of a parameter of :func:`parameters`."""
    units = FIELDS[parameter][2] if parameter in FIELDS else (
        "s" if parameter.startswith("fixed_s.") else "steps")
    return SI.get(units, units)


# --------------------------------------------------------------------------- budget and ENOB


def _budget_residual(x, sc):
    stages = module_stages_s(sc.replace(budget_FLOPs=x))
    compute = stages[..., STAGES.index("compute")]
    others = jnp.max(jnp.delete(stages, STAGES.index("compute"), axis=-1), axis=-1)
    return jnp.log(compute) - jnp.log(others)


@partial(jax.jit, static_argnames=("grid",))
def budget_break_even_search(sc: Scenario, lo_FLOPs, hi_FLOPs, *, grid: int = GRID) -> Crossings:
    """The budget where the module's compute stops binding, found numerically:

        r(budget) = log(compute stage) - log(max of the other stages),   compute = flops x P / budget

    "a" is the compute stage: r < 0 (it is not the slowest) above the break-even. The module's
    stages do not read the links: a table (data or not) is left out of the search's parameters.
    """
    return _roots.find_crossings(_budget_residual, dataclasses.replace(sc, links=None), lo_FLOPs,
                                 hi_FLOPs, grid=grid, max_roots=1)


_quick_budget = _jax.quick(budget_break_even_search, static_argnames=("grid",))


def budget_break_even(sc: Scenario, lo_GFLOPs: float = 1e-3, hi_GFLOPs: float = 1e9) -> dict:
    """The budget above which the module's compute no longer binds, in GFLOP/s: the closed form
    (transform FLOPs per parameter x optics rate, which assumes the optics is the next slowest
    stage) beside the numeric search (compute stage = slowest other stage), and which stage binds
    above it. Scalar scenarios."""
    lo_GFLOPs, hi_GFLOPs = check_range(lo_GFLOPs, hi_GFLOPs, "GFLOP/s",
                                       "(lo_GFLOPs, hi_GFLOPs)")
    # the module's stages do not read the links: one program for every table
    c = _quick_budget(dataclasses.replace(sc, links=None), lo_GFLOPs * 1e9, hi_GFLOPs * 1e9)
    stages = np.asarray(module_stages_s(sc.replace(budget_FLOPs=math.inf)))
    return {
        "closed_form_GFLOPs": float(budget_break_even_FLOPs(sc)) / 1e9,
        "numeric_GFLOPs": float(c.x[..., 0]) / 1e9,
        "binding_above": STAGES[int(np.argmax(stages))],
        "residual": float(c.residual[..., 0]),
    }


@jax.jit
def _times_over_enob_bandwidth(sc: Scenario, enob, wan_Bps, steps):
    sc = sc.replace(enob=enob[:, None], wan_Bps=wan_Bps[None, :])
    return time_to_target_s(sc, steps[:, None, :])


_times_over_enob_bandwidth = _jax.quick(_times_over_enob_bandwidth)  # a few hundred cells, once


def enob_break_even(sc: Scenario, a: str, b: str, GBps, *, basis: str = "hypothesis") -> np.ndarray:
    """The lowest measured ENOB at which in-transit variant a still beats b, at each bandwidth.

    For each ENOB with measured steps (ascending), a beats b where T_a < T_b (a variant that never
    reaches the target never wins). Returns an array over ``GBps`` (GB/s) of ENOB in bits, NaN where
    a wins at no measured ENOB. Scalar scenarios.
    """
    a, b = resolve_variant(a, sc.variants, what="a"), resolve_variant(b, sc.variants, what="b")
    if not sc.variant(a).in_transit:
        raise ValueError(f"a = {a!r} is not an in-transit variant; ENOB applies to "
                         f"{', '.join(v.id for v in sc.variants if v.in_transit)}")
    # a rule's ENOB are its sources' (on a basis-dependent rule, the union of both bases')
    enobs = np.asarray(sc.steps.measured_enobs(a, sc.variants), dtype=float)
    if enobs.size == 0:
        raise ValueError(f"no measured ENOB for {a!r} in the steps table")
    numbers("GBps", GBps, "bandwidths > 0 GB/s, one or a list")  # no booleans, text, [] ...
    GBps = np.atleast_1d(np.asarray(GBps, dtype=float))
    if GBps.ndim != 1 or not np.all(np.isfinite(GBps) & (GBps > 0)):
        raise ValueError(f"GBps = {GBps!r}: bandwidths must be finite and > 0 GB/s")
    steps = np.array([[sc.steps_of(v, e, basis) for v in sc.ids] for e in enobs])
    T = np.asarray(_times_over_enob_bandwidth(as_data(sc), jnp.asarray(enobs), jnp.asarray(GBps * 1e9),
                                              jnp.asarray(steps)))
    ia, ib = sc.ids.index(a), sc.ids.index(b)
    wins = T[..., ia] < T[..., ib]  # (enob, bandwidth); False wherever a time is NaN or inf
    first = np.argmax(wins, axis=0)
    return np.where(np.any(wins, axis=0), enobs[first], np.nan)
