"""Module pipeline and per-variant step time (docs/model.md sections 4, 5, 9, 13, 14 and 15), in
pure ``jax.numpy``.

Everything here is written for one point of a scenario and broadcasts over whatever array shapes
the scenario's fields hold. The last axis of a per-variant result is the variant, in the order of
the scenario's registry (``sc.ids``); the component axis of :func:`step_terms_s` is
:data:`COMPONENTS`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from . import _jax  # noqa: F401  (64-bit floats, the Scenario PyTree)
import jax
import jax.numpy as jnp
import numpy as np

from . import links as _links
from . import phases as _phases
from . import sites as _sites
from . import stragglers as _stragglers
from . import variants as _v
from .scenario import Scenario

STAGES = _phases.STAGES
# The terms of one sync, in the order of docs/model.md section 5 (:func:`comm_parts_s`).
SYNC_COMPONENTS = ("module_port", "module_optics", "module_compute", "module_fpga", "qsfp", "port",
                   "wan", "wan_latency", "fixed")
# The terms of a step and the hot-spot names of section 7: the mean (useful) GPU compute, the
# sync's terms, the wait for the slowest worker and the wait for the slowest site (section 16;
# last, so a sync's terms keep their places).
COMPONENTS = ("gpu_compute", *SYNC_COMPONENTS, "straggle", "site_wait")
COMPONENT_LABELS = {
    "gpu_compute": "GPU compute", "module_port": "module port", "module_optics": "module optics",
    "module_compute": "module compute", "module_fpga": "module fpga",
    "qsfp": "band through the module port", "port": "worker port", "wan": "WAN",
    "wan_latency": "WAN latency", "fixed": "fixed time d (calibrated)",
    "straggle": "waiting for the slowest worker",
    "site_wait": "waiting for the slowest site",
}
_WAN = COMPONENTS.index("wan")


def col(x):
    """A scenario field as a column against the trailing variant axis."""
    return jnp.asarray(x)[..., None]


def payloads_B(sc: Scenario) -> dict:
    """Bytes per worker of each payload kind (:func:`bandjax.phases.payloads_B`)."""
    return _phases.payloads_B(sc)


variant_payload_B = _phases.variant_payload_B


def traffic_B(sc: Scenario) -> _v.Traffic:
    """Bytes per sync of every variant, stacked on a last axis of the registry's length.

    WAN bytes are per directed link in use; ``links`` and ``hops`` per variant likewise.
    """
    pay = payloads_B(sc)
    per = [_phases.variant_traffic(sc, v, pay, jnp.where) for v in sc.variants]
    return _v.Traffic(*(jnp.stack(jnp.broadcast_arrays(*c), axis=-1) for c in zip(*per)))


def module_stages_s(sc: Scenario):
    """The module's four pipelined stages for one worker's dense delta, last axis :data:`STAGES`.

        port    = G / qsfp port       optics = P / optics rate
        compute = 40 P / budget       fpga   = G / fpga rate        (budget = inf: not charged)
    """
    stages = _phases.module_stages(sc)
    return jnp.stack(jnp.broadcast_arrays(*stages), axis=-1)


def binding_stage(stages_s):
    """One-hot of the slowest stage; ties go to the first in :data:`STAGES` order."""
    return jnp.argmax(stages_s, axis=-1)[..., None] == jnp.arange(len(STAGES))


def budget_break_even_FLOPs(sc: Scenario):
    """The budget above which the module's compute stops binding against its optics:
    transform FLOPs per parameter x optics rate (independent of P)."""
    return sc.transform_flops_per_param * sc.optics_Sps


def link_values(table, pairs):
    """The entries of a (K, K, ...) links table at the index pairs ``pairs`` (static), the pairs
    on the last axis: shape (..., len(pairs)). A table that a tree map gave more axes after its
    (K, K) (as :func:`bandjax.need._goodput_at` does to every leaf) keeps them in front."""
    i, j = np.array(pairs).T
    return jnp.moveaxis(jnp.asarray(table)[i, j], 0, -1)


def _link_rel(sc: Scenario, pairs) -> tuple:
    """Relative bandwidths and latencies of the links ``pairs``, shape (..., link): the table's
    (constants, or leaves where it is data: :class:`bandjax.links.DataLinks`), ones for equal
    links."""
    if sc.links is None:
        return np.ones(len(pairs)), np.ones(len(pairs))
    return link_values(sc.links.bandwidth_rel, pairs), link_values(sc.links.latency_rel, pairs)


def _dcs(sc: Scenario) -> int:
    """K where it is static: the links table's or the sites' (the per-link paths need one)."""
    return sc.links.K if sc.links is not None else sc.sites.K


def _per_link(sc: Scenario) -> bool:
    """Whether the WAN is taken link by link: per-link values, or sites that differ (whose
    all-gather links carry different bytes). A static fact."""
    return sc.links is not None or _sites.differ(sc)


def link_bytes_B(sc: Scenario, t: _v.Traffic, pairs):
    """Bytes of one sync on each link of ``pairs``, shape (..., variant, link): ``t.wan_B`` on
    every link, but an all-gather's on sites that differ: ring i -> i+1 (N - n_(i+1)) p, mesh
    i -> j n_i p (:func:`bandjax.sites.allgather_counts`, docs/model.md section 16)."""
    if not _sites.differ(sc) or not any(v.collective == "allgather" for v in sc.variants):
        return t.wan_B[..., None]
    counts = _sites.allgather_counts(sc.sites, pairs)
    pay = payloads_B(sc)
    per = [jnp.asarray(variant_payload_B(sc, v, pay))[..., None] * counts
           if v.collective == "allgather" else t.wan_B[..., k, None]
           for k, v in enumerate(sc.variants)]
    return jnp.stack(jnp.broadcast_arrays(*per), axis=-2)


def _mesh_times_s(sc: Scenario, t: _v.Traffic):
    """Each mesh link's bytes / B_ij and hops x l_ij, shape (..., variant, link), links in
    :func:`bandjax.links.mesh_pairs` order."""
    pairs = _links.mesh_pairs(_dcs(sc))
    rb, rl = (r[..., None, :] for r in _link_rel(sc, pairs))  # (..., variant, link)
    wan = link_bytes_B(sc, t, pairs) / (col(sc.wan_Bps)[..., None] * rb)
    lat = t.hops[..., None] * col(sc.wan_latency_s)[..., None] * rl
    return wan, lat


def _ring_times_s(sc: Scenario, t: _v.Traffic):
    """A ring's WAN term, (bytes part, latency part), each broadcastable to (..., variant): the
    largest over its links of bytes / B_ij (the bytes per link / the slowest link's B where every
    link carries the same) and (hops / K) x the sum of its links' latencies."""
    K = _dcs(sc)
    pairs = _links.ring_pairs(K)
    rb, rl = _link_rel(sc, pairs)
    if _sites.differ(sc):
        ring_wan = jnp.max(link_bytes_B(sc, t, pairs) / (col(sc.wan_Bps)[..., None]
                                                         * rb[..., None, :]), axis=-1)
    else:
        ring_wan = t.wan_B / (col(sc.wan_Bps) * col(jnp.min(rb, axis=-1)))
    # exactly hops x l for equal links
    ring_lat = t.hops * col(sc.wan_latency_s) * col(jnp.sum(rl, axis=-1) / K)
    return ring_wan, ring_lat


def wan_link_terms_s(sc: Scenario, t: _v.Traffic) -> tuple:
    """The WAN terms of one sync link by link, (bytes part, latency part), s, each on a trailing
    link axis: shape (..., variant, link).

    Equal links (``sc.links`` None): one entry, :func:`wan_terms_s`'s. Per-link values: on a mesh
    each link of :func:`bandjax.links.mesh_pairs` (bytes / B_ij, hops x l_ij); on a ring the one
    term of section 15 (slowest ring link, (hops / K) x the ring's latencies) in every entry. So a
    fragment sync's WAN time is the largest over the axis of bytes part / F + latency part, which
    is what :func:`wan_terms_s` selects (used where a question needs every link, as
    :mod:`bandjax.need` does).
    """
    if not _per_link(sc):
        wan, lat = wan_terms_s(sc, t)
        return wan[..., None], lat[..., None]
    ring_wan, ring_lat = _ring_times_s(sc, t)
    wan, lat = jnp.broadcast_arrays(*_mesh_times_s(sc, t))
    mesh = col(sc.topology)[..., None] == 1
    return jnp.where(mesh, wan, ring_wan[..., None]), jnp.where(mesh, lat, ring_lat[..., None])


def _fragment_time_s(wan, lat, fragments):
    """Each mesh link's time for one fragment sync, bytes / (F B_ij) + hops x l_ij (F static)."""
    F = np.asarray(fragments, dtype=float)
    return wan + lat if np.all(F == 1) else wan / F[..., None] + lat


def wan_terms_s(sc: Scenario, t: _v.Traffic, fragments=1) -> tuple:
    """The WAN terms of one sync, (bytes part, latency part), each broadcastable to
    (..., variant), s (docs/model.md sections 13, 14 and 15).

    Equal links (``sc.links`` None): bytes per link / B and hops x l. Per-link values (B_ij =
    wan_Bps x bandwidth_rel, l_ij = wan_latency_s x latency_rel):

        ring   bytes per link / (the smallest B on the ring) + (hops / K) x (sum of the ring's l)
        mesh   the largest over links of bytes per link / B_ij + hops x l_ij, split at that link

    ``fragments`` (F, static, broadcastable to (variant,)): the mesh's binding pair is the one
    whose FRAGMENT sync finishes last, bytes / (F B_ij) + hops x l_ij (section 14: a fragment
    carries 1/F of the bytes and pays the latency in full); the bytes part returned is still one
    whole sync's (the caller divides it by F). A ring's terms do not depend on F.

    ``t`` is :func:`traffic_B`'s. Both are computed and the topology leaf selects (0 ring, 1 mesh),
    so a sweep over the topology is one compiled call.
    """
    B, l = col(sc.wan_Bps), col(sc.wan_latency_s)
    if not _per_link(sc):
        return t.wan_B / B, t.hops * l
    ring_wan, ring_lat = _ring_times_s(sc, t)
    wan, lat = jnp.broadcast_arrays(*_mesh_times_s(sc, t))
    k = jnp.argmax(_fragment_time_s(wan, lat, fragments), axis=-1)[..., None]
    mesh_wan = jnp.take_along_axis(wan, k, axis=-1)[..., 0]
    mesh_lat = jnp.take_along_axis(lat, k, axis=-1)[..., 0]
    mesh = col(sc.topology) == 1
    return jnp.where(mesh, mesh_wan, ring_wan), jnp.where(mesh, mesh_lat, ring_lat)


def pacing_link_index(sc: Scenario):
    """The link that sets each variant's WAN pace, shape (..., variant): an index into
    :func:`bandjax.links.mesh_pairs` (K) (i -> j, i != j, row by row).

    On a ring the slowest ring link (the first in ring order among equals); on a mesh the link
    whose fragment sync's bytes / (F B_ij) + hops x l_ij is largest (the first among equals; F
    the variant's fragments, 1 unless it syncs in fragments). Equal links name the first link in
    use (dc0 -> dc1).
    """
    t = traffic_B(sc)
    if not _per_link(sc):
        return jnp.zeros(jnp.broadcast_shapes(jnp.shape(t.wan_B), jnp.shape(col(sc.topology))), int)
    K = _dcs(sc)
    pairs = _links.mesh_pairs(K)
    ring_pairs = _links.ring_pairs(K)
    rb, _ = _link_rel(sc, ring_pairs)
    at = jnp.asarray(np.array([pairs.index(p) for p in ring_pairs]))
    if _sites.differ(sc):  # the ring link whose own bytes / B_ij is largest
        ring = at[jnp.argmax(link_bytes_B(sc, t, ring_pairs) / rb[..., None, :], axis=-1)]
    else:
        ring = col(at[jnp.argmin(rb, axis=-1)])
    wan, lat = jnp.broadcast_arrays(*_mesh_times_s(sc, t))
    mesh = jnp.argmax(_fragment_time_s(wan, lat, sync_method(sc).fragments), axis=-1)
    return jnp.where(col(sc.topology) == 1, mesh, ring)


def comm_parts_s(sc: Scenario, fragments=1, *, traffic: _v.Traffic | None = None) -> tuple:
    """The communication terms of ONE sync of every variant (all but c), in :data:`COMPONENTS`
    order from ``module_port`` on (docs/model.md sections 5, 13 and 15; sections 9 and 14 apply
    the rounds in :func:`step_parts_s`). ``fragments``: as in :func:`wan_terms_s` (which mesh
    pair binds a fragment sync); :func:`fragment_parts_s` passes each variant's F. ``traffic``:
    :func:`traffic_B`'s of ``sc``, where the caller already has it (computed here when None), so
    that one evaluation builds every variant's traffic once.

    Each is broadcastable to (..., variant) but not broadcast: on an outer-product grid most terms
    depend on one axis only, so sums of these stay one fused pass over the grid instead of a
    materialised (..., variant, component) array.

        module (binding stage only) | qsfp bytes / qsfp port | port bytes / port |
        WAN bytes per link / B | hops x latency | d      (the WAN: :func:`wan_terms_s`)
    """
    t = traffic_B(sc) if traffic is None else traffic
    wan, wan_latency = wan_terms_s(sc, t, fragments)
    stages = module_stages_s(sc)
    module_parts = jnp.where(binding_stage(stages), stages, 0.0)  # (..., stage)
    has_module = jnp.array([v.module for v in sc.variants])  # (variant,)
    fixed = jnp.stack([jnp.asarray(sc.fixed_s[v], dtype=float) for v in sc.ids], axis=-1)
    return (*(jnp.where(has_module, module_parts[..., i, None], 0.0) for i in range(len(STAGES))),
            t.qsfp_B / col(sc.qsfp_port_Bps), t.port_B / col(sc.worker_port_Bps), wan, wan_latency,
            fixed)


# The terms of one sync that scale with its bytes (a fragment carries 1/F of them); the WAN's
# latency and d are paid in full by every fragment (docs/model.md section 14).
BYTE_COMPONENTS = ("module_port", "module_optics", "module_compute", "module_fpga", "qsfp", "port",
                   "wan")


class Method(NamedTuple):
    """How each variant syncs, arrays broadcastable to (..., variant): ``H`` inner steps a round,
    ``delay`` tau (inner steps a sync may run late), ``fragments`` F."""

    H: object
    delay: object
    fragments: object


def sync_method(sc: Scenario) -> Method:
    """Each variant's H, tau and F: its own, or the scenario's ``sync_every_H``, 0 and 1.

        H = where(variant sets H, its H, sc.sync_every_H)      shape (..., variant)

    tau and F are static (NumPy, from the registry), so a registry that syncs every step in one
    piece without delay runs the same operations as before rounds existed, bit for bit.
    """
    own = [v.sync_every for v in sc.variants]
    H = col(sc.sync_every_H)
    if any(h is not None for h in own):
        has_own = np.array([h is not None for h in own])
        own_H = np.array([1.0 if h is None else float(h) for h in own])
        H = jnp.where(has_own, own_H, H)
    delay = np.array([float(v.delay) for v in sc.variants])
    fragments = np.array([float(v.fragments) for v in sc.variants])
    return Method(H, delay, fragments)


def _ones(x) -> bool:
    return isinstance(x, (np.ndarray, np.number, float, int)) and bool(np.all(np.asarray(x) == 1))


def _zeros(x) -> bool:
    return isinstance(x, (np.ndarray, np.number, float, int)) and bool(np.all(np.asarray(x) == 0))


def fragment_parts_s(sc: Scenario, parts=None, method: Method | None = None, *,
                     traffic: _v.Traffic | None = None) -> tuple:
    """The terms of one fragment's sync: :func:`comm_parts_s` with the byte terms divided by F
    (:data:`BYTE_COMPONENTS`); latency and d in full.

    ``parts`` (:func:`comm_parts_s`'s), ``method`` (:func:`sync_method`'s) and ``traffic``
    (:func:`traffic_B`'s): of ``sc``, where the caller already has them; each None is computed
    here."""
    F = (sync_method(sc) if method is None else method).fragments
    parts = comm_parts_s(sc, F, traffic=traffic) if parts is None else parts
    # Every term is divided (by 1 where it is paid in full), by values XLA cannot fold away: the
    # sums below then compile the same way whatever the grid's shape, so a chunked winner map
    # equals the whole one bit for bit.
    F, one = jax.lax.optimization_barrier((jnp.asarray(F), jnp.ones_like(jnp.asarray(F))))
    return tuple(p / (F if name in BYTE_COMPONENTS else one)
                 for name, p in zip(SYNC_COMPONENTS, parts))


def window_s(c, overlap, delay=0.0):
    """What a sync can hide behind: (f + tau) c, s."""
    return overlap * c if _zeros(delay) else (overlap + delay) * c


def exposed_s(c, comm, overlap, delay=0.0):
    """The communication of one (fragment) sync left after its window: max(0, comm - (f + tau) c)."""
    return jnp.maximum(0.0, comm - window_s(c, overlap, delay))


def rounds_step_s(c, comm_frag, overlap, m: Method, window_c=None):
    """Step time with syncs in rounds (docs/model.md section 14), s:

        step = c + F max(0, comm_frag - (f + tau) c_w) / H

    ``window_c`` c_w: the compute the window is counted in (None: c; on sites that differ,
    :func:`window_compute_s`)."""
    exposed = exposed_s(c if window_c is None else window_c, comm_frag, overlap, m.delay)
    exposed = exposed if _ones(m.fragments) else m.fragments * exposed
    # (an H known to be 1 divides nothing: x / 1 = x, and the pass that uses it stays cheap)
    return c + (exposed if _ones(m.H) else exposed / m.H)


def unit_rounds(sc: Scenario, index) -> tuple[bool, ...]:
    """For each variant of ``index`` (registry positions), whether its H is concretely 1 at every
    point of the scenario (a static fact, as :func:`bandjax.failures.may_fail`): its own H is 1,
    or it has none and ``sc.sync_every_H`` is 1 everywhere. False where not known (traced)."""
    try:
        scenario_ones = bool(np.all(np.asarray(sc.sync_every_H) == 1))
    except Exception:  # a tracer: not known until run
        scenario_ones = False
    own = [sc.variants[i].sync_every for i in index]
    return tuple(scenario_ones if h is None else float(h) == 1.0 for h in own)


def inner_compute_s(sc: Scenario, method: Method | None = None):
    """The compute part of an inner step, c' = c M, s, broadcastable to (..., variant)
    (docs/model.md section 16, equal sites): M = 1 where nothing straggles, mu_N at H = 1 and
    mu_n + sigma_n e_K / sqrt(H) at H > 1, H each variant's own
    (:func:`bandjax.stragglers.equal_sites_factor`).

    The family is a leaf, so it is a select and a sweep over it is one compiled call; where it is
    "none" M is exactly 1 and c M is c bit for bit. A concrete "none" (outside jit) returns c
    itself, without the quadrature."""
    c = col(sc.gpu_compute_s)
    if _sites.differ(sc):
        return _sites_compute_s(sc, sync_method(sc) if method is None else method)
    if _zeros(sc.straggler):
        return c
    m = sync_method(sc) if method is None else method
    M = _stragglers.equal_sites_factor(col(sc.straggler), col(sc.straggler_s), col(sc.workers_per_dc),
                                       col(sc.dcs), m.H)
    return c * M


def _scaled(sc: Scenario) -> np.ndarray:
    """Whether each variant runs its sites "scaled" (static, (variant,))."""
    return np.array([v.sites == "scaled" for v in sc.variants])


def site_rates(sc: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """(useful, tokens): per variant, static, (variant,), on sites that differ (docs/model.md
    section 16), with H_i = H under "wait" and H c_max / c_i under "scaled":

        useful = (sum_i n_i H_i c_i) / (N H c)   the useful compute of an inner step over c
        tokens = (sum_i n_i H_i) / (N H)         the tokens of an inner step over N T

    Equal sites (or none): ones."""
    if not _sites.differ(sc):
        ones = np.ones(len(sc.variants))
        return ones, ones
    s = sc.sites
    rule = lambda v: v.sites  # noqa: E731
    return (np.array([s.useful_rel(rule(v)) for v in sc.variants]),
            np.array([s.tokens_share(rule(v)) for v in sc.variants]))


def _sites_compute_s(sc: Scenario, m: Method):
    """The compute part of an inner step on sites that differ, broadcastable to (..., variant):
    c_max = max_i c_i where nothing straggles (either rule: "scaled" DCs all compute for H c_max
    a round); else :func:`bandjax.stragglers.compute_part_s` over each DC's c_i, n_i and H_i."""
    s = sc.sites
    rel = np.asarray(s.compute_rel)
    top = float(np.max(rel))
    c = col(sc.gpu_compute_s)
    c_max = c if top == 1.0 else c * top
    if _zeros(sc.straggler):
        return c_max
    c_i = c[..., None] * rel  # (..., 1, K)
    H = jnp.asarray(m.H, dtype=float)
    steps_rel = np.where(_scaled(sc)[:, None], top / rel, 1.0)  # (variant, K): H_i / H
    part = _stragglers.compute_part_s(c_i, _sites.workers_of(sc), col(sc.straggler),
                                      col(sc.straggler_s), H, H[..., None] * steps_rel)
    return part


def window_compute_s(sc: Scenario, cs):
    """The compute a sync's window (f + tau) is counted in, (..., variant): the compute part of
    an inner step ``cs``, but under sites "scaled" (sites that differ) cs x c_min / c_max: the
    fastest DC's gradients are ready last and its result is due first (the event engine's rule),
    so its inner step is the window (c_min where nothing straggles)."""
    scaled = _scaled(sc)
    if not _sites.differ(sc) or not scaled.any():
        return cs
    rel = np.asarray(sc.sites.compute_rel)
    return cs * np.where(scaled, float(np.min(rel) / np.max(rel)), 1.0)


def step_parts_s(sc: Scenario, *, method: Method | None = None, frag=None) -> tuple:
    """(useful compute, *communication terms, wait for the slowest worker, wait for the slowest
    site): the terms of :func:`step_terms_s`, the communication ones scaled by their exposed
    share, so they sum to the step (:func:`comm_parts_s` for one sync's). The worker's wait is
    c' - c_max (:func:`inner_compute_s`); the site's c_max - (sum_i n_i H_i c_i) / (N H) (0 with
    equal sites, and under "scaled", where every DC computes the whole round).

    ``method`` (:func:`sync_method`'s) and ``frag`` (:func:`fragment_parts_s`'s): of ``sc``, where
    the caller already has them (as :func:`bandjax.metrics.evaluate` does); each None is computed
    here.
    """
    c = col(sc.gpu_compute_s)
    m = sync_method(sc) if method is None else method
    cs = inner_compute_s(sc, m)
    frag = fragment_parts_s(sc, method=m) if frag is None else frag
    total = sum_parts(frag)
    exposed = exposed_s(window_compute_s(sc, cs), total, col(sc.overlap_fraction), m.delay)
    # Hot spots split the exposed communication over its terms in proportion.
    share = jnp.where(total > 0, exposed / jnp.where(total > 0, total, 1.0), 0.0)
    scale = share / m.H if _ones(m.fragments) else share * m.fragments / m.H
    comm = tuple(p * scale for p in frag)
    if not _sites.differ(sc):
        return (c, *comm, cs - c, jnp.zeros_like(c))
    top = float(np.max(sc.sites.compute_rel))
    c_max = c if top == 1.0 else c * top
    useful = c * site_rates(sc)[0]
    return (useful, *comm, cs - c_max, c_max - useful)


def step_terms_s(sc: Scenario):
    """Each variant's step split into :data:`COMPONENTS`, shape (..., variant, component), s.

        ring all-reduce of p     c + 2(n-1)/n p/port               + WAN(p) + d    (AdamW, C')
        all-gather of p          c + module? + (N-1) p/link        + WAN(p) + d    (top-k, C, E)
        in-network sum of b      c + G/port + module + 2 b/qsfp    + WAN(b) + d    (E')

    WAN(p) = bytes per directed link / B + hops x latency (:mod:`bandjax.variants`), N = K n. Only
    the module's binding stage holds time. With syncs in rounds (H, tau, F of each variant, docs/
    model.md section 14) the communication terms are scaled so that they sum to
    F max(0, comm_frag - (f + tau) c') / H. The last two components are the wait for the
    slowest worker, c' - c_max, and for the slowest site, c_max - the useful compute (section 16;
    each 0 where nothing straggles and every site is the same).
    """
    return jnp.stack(jnp.broadcast_arrays(*step_parts_s(sc)), axis=-1)


def computed_once(*values):
    """``values`` (arrays) handed back unchanged, each computed on its own shape, once.

    XLA fuses cheap element-wise work (adds, products, selects, maxima) into the loop of the
    larger result that consumes it, so a term that depends on one axis of an outer-product grid,
    broadcast into the full grid, is recomputed at every cell. ``jax.lax.optimization_barrier``
    does not stop that on CPU (XLA's CPU compiler removes it before fusing); a conditional does:
    its operands and results are buffers of their own. The predicate is read from the data, so
    XLA cannot fold the conditional away; both branches give the values back exactly (x, or
    x * 1 where the probe is NaN). Other platforms get the optimization barrier.
    """
    if not values:
        return values

    def cpu(*v):
        probe = next((jnp.ravel(x)[0] for x in v if jnp.size(x)), None)
        if probe is None:
            return v
        return jax.lax.cond(probe == probe, lambda *a: a,
                            lambda *a: tuple(x * jnp.ones((), x.dtype) for x in a), *v)

    return jax.lax.platform_dependent(*values, cpu=cpu,
                                      default=lambda *v: jax.lax.optimization_barrier(v))


def sum_parts(parts):
    """The sum of broadcastable arrays, left to right, at their common shape.

    The parts and partial sums smaller than the result are computed once, on their own shapes
    (:func:`computed_once`), rather than fused into the full-size loop and recomputed there at
    every cell: on an outer-product grid that is most of the work (divisions, the module's max).
    """
    parts = [jnp.asarray(p) for p in parts]
    shape = jnp.broadcast_shapes(*(p.shape for p in parts))
    size = math.prod(shape)
    # the sum of the leading parts stays smaller than the result up to part k
    k = 1
    while k < len(parts) and math.prod(jnp.broadcast_shapes(*(p.shape for p in parts[:k + 1]))) < size:
        k += 1
    head = parts[0]
    for p in parts[1:k]:
        head = head + p
    terms = [head, *parts[k:]]
    small = [i for i, p in enumerate(terms) if p.size < size]
    for i, p in zip(small, computed_once(*(terms[i] for i in small))):
        terms[i] = p
    total = terms[0]
    for p in terms[1:]:
        total = total + p
    return jnp.broadcast_to(total, shape)


def step_s(sc: Scenario, *, method: Method | None = None, frag=None):
    """Step time of every variant, shape (..., variant), s: c' + F max(0, comm_frag - (f + tau) c') / H,
    comm_frag = one sync's byte terms / F + latency + d (docs/model.md section 14), c' the compute
    part of an inner step (:func:`inner_compute_s`: c where nothing straggles, section 16).

    ``method`` and ``frag``: as in :func:`step_parts_s` (None: computed here)."""
    m = sync_method(sc) if method is None else method
    frag = fragment_parts_s(sc, method=m) if frag is None else frag
    cs = inner_compute_s(sc, m)
    return rounds_step_s(cs, sum_parts(frag), col(sc.overlap_fraction), m,
                         window_compute_s(sc, cs))


def useful_compute_s(sc: Scenario):
    """The useful GPU compute of an inner step, (..., variant) or (..., 1), s: c, or on sites
    that differ (sum_i n_i H_i c_i) / (N H) (docs/model.md section 16)."""
    c = col(sc.gpu_compute_s)
    return c * site_rates(sc)[0] if _sites.differ(sc) else c


def compute_utilisation(sc: Scenario):
    """Compute utilisation of every variant, shape (..., variant), unit 1: the useful compute
    over the step, c / step (compute-weighted on sites that differ, (sum_i n_i H_i c_i) / (N H
    step)): the waits for the slowest worker and the slowest site are not useful (docs/model.md
    section 16)."""
    return useful_compute_s(sc) / step_s(sc)
