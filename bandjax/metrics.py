"""Time to target, hot spots and energy (docs/model.md sections 6 to 9): pure ``jax.numpy``.

Like :mod:`bandjax.step`, everything is written for one point and broadcasts; per-variant results
have a last axis of variants in the order of the scenario's registry (``sc.ids``).
"""

from __future__ import annotations

from functools import partial

from . import _jax  # 64-bit floats, the Scenario PyTree; compile options
import jax
import jax.numpy as jnp
import numpy as np

from . import failures as _failures
from . import links as _links
from . import sites as _sites
from .scenario import Scenario
from .stragglers import may_straggle, settled
from .step import (col, fragment_parts_s, pacing_link_index, site_rates, step_parts_s, step_s,
                   sum_parts, sync_method, traffic_B)

ENERGY_PARTS = ("compute", "network", "modules")

# status of a time to target: why it is or is not a number
OK, NEVER, NOT_MEASURED = 0, 1, 2
STATUS_MEANINGS = "ok never_reaches_target not_measured"


def steps_to_target(sc: Scenario, enob=None, basis: str = "hypothesis") -> np.ndarray:
    """Steps to the target loss of every variant (variant axis last): inf where the variant was
    measured never to reach it, nan where it was not measured. Resolved outside jit."""
    enob = float(sc.enob) if enob is None else float(enob)
    return np.array([sc.steps_of(v, enob, basis) for v in sc.ids])


def status_of(steps) -> np.ndarray:
    steps = np.asarray(steps)
    return np.where(np.isnan(steps), NOT_MEASURED, np.where(np.isinf(steps), NEVER, OK)).astype(np.int8)


def hot_spots(terms_s):
    """Share of the step that each component holds, shape (..., variant, component); sums to 1."""
    return terms_s / jnp.sum(terms_s, axis=-1, keepdims=True)


def pacing_links(sc: Scenario) -> dict[str, tuple[str, str]]:
    """The directed link that sets each variant's WAN pace at a scenario point: variant id ->
    (from DC, to DC) (:func:`bandjax.step.pacing_link_index`; names from ``sc.links``, or
    ``dc0``... for equal links, where the first link in use is named)."""
    index = np.asarray(pacing_link_index(sc))
    if index.ndim != 1:
        raise ValueError(f"pacing_links: a scenario point is needed; this one is a grid of shape "
                         f"{index.shape[:-1]} (use bandjax.step.pacing_link_index for grids)")
    names = _links.names_of(sc)
    pairs = _links.mesh_pairs(len(names))
    return {vid: (names[pairs[k][0]], names[pairs[k][1]]) for vid, k in zip(sc.ids, index.tolist())}


def energy_parts_J(sc: Scenario, step_s, *, traffic=None, method=None) -> tuple:
    """The columns of :func:`energy_per_step_J` as separate broadcastable arrays, in
    :data:`ENERGY_PARTS` order (so their total needs no stacked array).

    ``traffic`` (:func:`bandjax.step.traffic_B`'s) and ``method``
    (:func:`bandjax.step.sync_method`'s): of ``sc``, where the caller already has them; each None
    is computed here."""
    N = col(sc.dcs * sc.workers_per_dc)
    t = traffic_B(sc) if traffic is None else traffic
    m = sync_method(sc) if method is None else method
    flops = sc.flops_per_param_token * sc.active * sc.tokens_per_worker
    if _sites.differ(sc):  # a worker's FLOPs of a step: its DC's H_i / H inner steps' (N T share)
        compute = N * (col(sc.gpu_static_W) * step_s
                       + col(sc.gpu_J_per_FLOP * flops) * site_rates(sc)[1])
    else:
        compute = N * (col(sc.gpu_static_W) * step_s + col(sc.gpu_J_per_FLOP * flops))
    network = (8 * N * (t.port_B + t.qsfp_B) * col(sc.link_J_per_bit)
               + 8 * t.links * t.wan_B * col(sc.wan_J_per_bit)) / m.H
    has_module = jnp.array([v.module for v in sc.variants])
    modules = jnp.where(has_module, N * col(sc.module_W) * step_s, 0.0)
    return compute, network, modules


def energy_per_step_J(sc: Scenario, step_s):
    """Energy per step, shape (..., variant, part) with parts :data:`ENERGY_PARTS`, J.

        compute  = N (GPU static power x step + energy per FLOP x F),   F = 6 P tokens
        network  = 8 N (port + qsfp bytes) x link J/bit
                 + 8 x (WAN links in use) x (bytes per link) x WAN J/bit
                   (the bytes summed over the links in use: every link in use carries the same
                   bytes per sync, whatever its bandwidth, so per-link values change no byte)
        modules  = N x module power x step                              (variants with a module)

    N = K n (sum_i n_i on sites). On sites that differ under "scaled" a step's FLOPs are those of
    sum_i n_i H_i / H inner steps; the WAN bytes summed over the links in use are the same
    (:func:`bandjax.phases.variant_traffic`), and every GPU draws the scenario's power.

    Syncing every H steps (each variant's H) divides the network bytes by H; F = 6 P_active T.
    """
    return jnp.stack(jnp.broadcast_arrays(*energy_parts_J(sc, step_s)), axis=-1)


def bytes_per_worker_B(sc: Scenario, *, traffic=None, method=None):
    """What one worker sends per step (a sync's bytes / H): its port and module-port traffic plus
    its own WAN shard. ``traffic`` and ``method``: as in :func:`energy_parts_J`."""
    t = traffic_B(sc) if traffic is None else traffic
    return (t.port_B + t.qsfp_B + t.own_wan_B) / (sync_method(sc) if method is None else method).H


def wan_link_B(sc: Scenario, *, traffic=None, method=None):
    """Bytes on each directed WAN link in use per step (a sync's bytes / H). ``traffic`` and
    ``method``: as in :func:`energy_parts_J`."""
    t = traffic_B(sc) if traffic is None else traffic
    return t.wan_B / (sync_method(sc) if method is None else method).H


def evaluate(sc: Scenario, steps):
    """Every closed-form quantity at once, for jit.

    ``steps``: steps to target, broadcastable to (..., variant); inf = never, nan = not measured.
    Returns a dict of arrays: ``terms_s`` (..., variant, component), ``step_s``, ``gpu_s`` (the
    useful compute), ``comm_s``, ``compute_utilisation``, ``throughput_tokens_per_s`` (T N / step;
    on sites that differ T sum_i n_i H_i / (H step)), ``time_to_target_s`` (steps x N T /
    throughput, which is steps x step but under sites "scaled"; divided by ETTR,
    :mod:`bandjax.failures`), ``ettr``, ``goodput``, ``checkpoint_interval_s``,
    ``failure_status``, ``bytes_per_worker_B``, ``wan_B`` (..., variant), ``mtbf_s`` (...),
    ``energy_J`` (..., variant, part) and ``energy_to_target_J`` (..., variant).

    Every variant's traffic (:func:`bandjax.step.traffic_B`), the syncing method and one fragment
    sync's terms are built once here and handed to the functions that use them, so a trace runs
    each formula once.
    """
    t = traffic_B(sc)
    m = sync_method(sc)
    frag = fragment_parts_s(sc, method=m, traffic=t)
    parts = step_parts_s(sc, method=m, frag=frag)
    step = jnp.broadcast_to(step_s(sc, method=m, frag=frag),
                            jnp.broadcast_shapes(*(jnp.shape(p) for p in parts)))
    terms = jnp.stack(jnp.broadcast_arrays(*parts), axis=-1)
    energy = energy_parts_J(sc, step, traffic=t, method=m)
    total = sum_parts(energy)
    gpu = jnp.broadcast_to(parts[0], step.shape)
    fail = _failures.outputs(sc, step, gpu, m.H)
    tokens = col(sc.tokens_per_worker * sc.dcs * sc.workers_per_dc)
    if _sites.differ(sc):  # global batches of N T tokens at T sum_i n_i H_i / (H step) tokens/s
        share = site_rates(sc)[1]
        time, throughput, per_batch = steps * step / share, tokens * share / step, 1.0 / share
    else:
        time, throughput, per_batch = steps * step, tokens / step, None
    return {
        "terms_s": terms,
        "step_s": step,
        "gpu_s": gpu,
        "comm_s": step - gpu,
        "compute_utilisation": gpu / step,
        "time_to_target_s": _failures.time_to_target_s(time, fail["ettr"]),
        "throughput_tokens_per_s": throughput,
        "ettr": fail["ettr"],
        "goodput": fail["goodput"],
        "checkpoint_interval_s": fail["checkpoint_interval_s"],
        "failure_status": fail["failure_status"],
        "mtbf_s": _failures.mtbf_s(sc),
        "bytes_per_worker_B": bytes_per_worker_B(sc, traffic=t, method=m),
        "wan_B": wan_link_B(sc, traffic=t, method=m),
        "energy_J": jnp.stack(jnp.broadcast_arrays(*energy), axis=-1),
        "energy_to_target_J": steps * total if per_batch is None else steps * per_batch * total,
    }


def time_to_target_s(sc: Scenario, steps):
    """Steps x step time / ETTR, per variant (last axis), s (ETTR = 1 where nothing fails,
    :mod:`bandjax.failures`); on sites that differ steps x N T / throughput (global batches of
    N T tokens). Differentiable in the scenario and steps."""
    m = sync_method(sc)
    step = step_s(sc, method=m)
    time = steps * step / site_rates(sc)[1] if _sites.differ(sc) else steps * step
    return _failures.time_to_target_s(time, _failures.ettr_parts(sc, step, m.H)[0])


# bandjax's own one-off evaluations (the report's load-0 steps and weakest inputs): one compiled
# call, kept between processes (bandjax._jax.quick), where op-by-op each operation of the closed
# forms would be a small program of its own, 60 of them read back in a second report
@partial(jax.jit, static_argnames=("straggles",))
def _step_settled_s(sc: Scenario, straggles: bool):
    return step_s(settled(sc, straggles))


@partial(jax.jit, static_argnames=("straggles",))
def _time_to_target_settled_s(sc: Scenario, steps, straggles: bool):
    return time_to_target_s(settled(sc, straggles), steps)


_step_once = _jax.quick(_step_settled_s, static_argnames=("straggles",))
_time_to_target_once = _jax.quick(_time_to_target_settled_s, static_argnames=("straggles",))


def step_once_s(sc: Scenario):
    """:func:`step_s` of a concrete scenario in one kept program, without the quadrature of c'
    where nothing straggles (:func:`bandjax.stragglers.settled`)."""
    return _step_once(sc, straggles=may_straggle(sc))


def time_to_target_once_s(sc: Scenario, steps):
    """:func:`time_to_target_s` of a concrete scenario in one kept program, as
    :func:`step_once_s`."""
    return _time_to_target_once(sc, steps, straggles=may_straggle(sc))
