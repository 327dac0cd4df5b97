"""Module pipeline and per-variant step time (model.md sections 4, 5 and 9): pure ``jax.numpy``.

Everything here is written for one point of a scenario and broadcasts over whatever array shapes
the scenario's fields hold. The last axis of a per-variant result is the variant, in the order of
:data:`bandjax.variants.IDS`; the component axis of :func:`step_terms_s` is :data:`COMPONENTS`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from . import variants as _v
from .scenario import Scenario

STAGES = ("port", "optics", "compute", "fpga")
# The terms of a step, in the order of model.md section 5 and the hot-spot names of section 7.
COMPONENTS = ("gpu_compute", "module_port", "module_optics", "module_compute", "module_fpga",
              "qsfp", "port", "wan", "fixed")
COMPONENT_LABELS = {
    "gpu_compute": "GPU compute", "module_port": "module port", "module_optics": "module optics",
    "module_compute": "module compute", "module_fpga": "module fpga",
    "qsfp": "band through the module port", "port": "worker port", "wan": "WAN",
    "fixed": "fixed time d (calibrated)",
}


def col(x):
    """A scenario field as a column against the trailing variant axis."""
    return jnp.asarray(x)[..., None]


def payloads_B(sc: Scenario) -> dict:
    """Bytes per worker of each payload kind.

        dense        G = 4 P                       (fp32 delta)
        topk         K = (P/16) x (4 + 4)          (fp32 value + int32 index)
        band_gpu     b = (P/4) x 8 / 8             (GPU band: 8 bits a coefficient)
        band_transit b = (P/4) x ENOB / 8          (bit-packed, not rounded per coefficient)
    """
    P = sc.params
    band = sc.band_fraction * P
    return {
        "dense": sc.dense_bytes_per_param * P,
        "topk": sc.topk_fraction * P * sc.topk_bytes_per_value,
        "band_gpu": band * sc.gpu_band_bits / 8,
        "band_transit": band * sc.enob / 8,
    }


def traffic_B(sc: Scenario) -> _v.Traffic:
    """Bytes per step of every variant, stacked on a last axis of length len(IDS)."""
    pay = payloads_B(sc)
    per = [_v.traffic(v, pay[v.payload], pay["dense"], sc.workers_per_dc) for v in _v.VARIANTS]
    return _v.Traffic(*(jnp.stack(jnp.broadcast_arrays(*col), axis=-1) for col in zip(*per)))


def module_stages_s(sc: Scenario):
    """The module's four pipelined stages for one worker's dense delta, last axis :data:`STAGES`.

        port    = G / qsfp port       optics = P / optics rate
        compute = 40 P / budget       fpga   = G / fpga rate        (budget = inf: not charged)
    """
    P = sc.params
    G = sc.dense_bytes_per_param * P
    stages = (G / sc.qsfp_port_Bps, P / sc.optics_Sps,
              sc.transform_flops_per_param * P / sc.budget_FLOPs, G / sc.fpga_Bps)
    return jnp.stack(jnp.broadcast_arrays(*stages), axis=-1)


def binding_stage(stages_s):
    """One-hot of the slowest stage; ties go to the first in :data:`STAGES` order."""
    return jnp.argmax(stages_s, axis=-1)[..., None] == jnp.arange(len(STAGES))


def budget_break_even_FLOPs(sc: Scenario):
    """The budget above which the module's compute stops binding against its optics:
    transform FLOPs per parameter x optics rate (independent of P)."""
    return sc.transform_flops_per_param * sc.optics_Sps


def step_parts_s(sc: Scenario) -> tuple:
    """The terms of :func:`step_terms_s`, one array per component in :data:`COMPONENTS` order.

    Each is broadcastable to (..., variant) but not broadcast: on an outer-product grid most terms
    depend on one axis only, so sums of these stay one fused pass over the grid instead of a
    materialised (..., variant, component) array.
    """
    t = traffic_B(sc)
    stages = module_stages_s(sc)
    module_parts = jnp.where(binding_stage(stages), stages, 0.0)  # (..., stage)
    has_module = jnp.array([v.module for v in _v.VARIANTS])  # (variant,)
    fixed = jnp.stack([jnp.asarray(sc.fixed_s[v], dtype=float) for v in _v.IDS], axis=-1)
    comm = [*(jnp.where(has_module, module_parts[..., i, None], 0.0) for i in range(len(STAGES))),
            t.qsfp_B / col(sc.qsfp_port_Bps), t.port_B / col(sc.worker_port_Bps),
            t.wan_B / col(sc.wan_Bps), fixed]
    H = col(sc.sync_every_H)
    return (col(sc.gpu_compute_s), *(c / H for c in comm))


def step_terms_s(sc: Scenario):
    """Each variant's step split into :data:`COMPONENTS`, shape (..., variant, component), s.

        adamw               c + 2(n-1)/n G/port          + G/B        + d
        topk                c + (N-1) K/port             + (N/2) K/B  + d
        band_gpu            c + (N-1) b/port             + (N/2) b/B  + d
        band_gpu_allreduce  c + 2(n-1)/n b/port          + b/B        + d
        band_pluggable      c + module + (N-1) b/qsfp    + (N/2) b/B  + d
        band_switch         c + G/port + module + 2 b/qsfp + b/B      + d

    Only the module's binding stage holds time. Syncing every H steps divides every term but c by H.
    """
    return jnp.stack(jnp.broadcast_arrays(*step_parts_s(sc)), axis=-1)


def sum_parts(parts):
    """The sum of broadcastable arrays, left to right, at their common shape.

    A part or partial sum smaller than the result is computed once, as its own array
    (``optimization_barrier``), rather than fused into the full-size loop and recomputed there at
    every cell: on an outer-product grid that is most of the work (divisions, the module's max).
    """
    shape = jnp.broadcast_shapes(*(jnp.shape(p) for p in parts))
    size = math.prod(shape)

    def once(x):
        return jax.lax.optimization_barrier(x) if jnp.size(x) < size else x

    total = once(parts[0])
    for p in parts[1:]:
        total = once(total + once(p))
    return jnp.broadcast_to(total, shape)


def step_s(sc: Scenario):
    """Step time of every variant, shape (..., variant), s: the sum of :func:`step_parts_s`."""
    return sum_parts(step_parts_s(sc))
