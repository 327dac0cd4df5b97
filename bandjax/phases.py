"""What a worker's sync does, phase by phase, in plain arithmetic (docs/model.md sections 2, 4 and 13).

The one description of payload sizes and the module's stages. :mod:`bandjax.step` calls it on
``jax.numpy`` arrays, the event engine (:mod:`events.plan`) on floats: the functions use only
``+ - * /`` and a ``where`` passed in, so they work on either. No jax at import.

    payloads per worker        dense G = dense bytes/param x P
                               top-k   = top-k share x P x bytes/value
                               band    = band share x P x bits / 8   (GPU bits; in transit ENOB)
    module stages (pipelined)  port    = G / module port       optics = P / optics rate
                               compute = 40 P / budget         fpga   = G / FPGA rate
"""

from __future__ import annotations

from .sites import Sites
from .variants import Traffic, Variant, traffic

STAGES = ("port", "optics", "compute", "fpga")
STAGE_NAMES = tuple(f"module {s}" for s in STAGES)


def payloads_B(sc) -> dict:
    """Bytes per worker of each payload kind (:data:`bandjax.variants.PAYLOADS`)."""
    P = sc.params
    band = sc.band_fraction * P
    return {
        "dense": sc.dense_bytes_per_param * P,
        "topk": sc.topk_fraction * P * sc.topk_bytes_per_value,
        "band_gpu": band * sc.gpu_band_bits / 8,
        "band_transit": band * sc.enob / 8,
    }


def variant_payload_B(sc, v: Variant, pay: dict):
    """Payload per worker of variant ``v``: its kind's, or its own bytes a parameter (dense)."""
    if v.bytes_per_param is not None:
        return v.bytes_per_param * sc.params
    return pay[v.payload]


def variant_traffic(sc, v: Variant, pay: dict, where) -> Traffic:
    """:func:`bandjax.variants.traffic` of ``v`` under ``sc`` (``where``: elementwise select).

    Sites that differ (``sc.sites``, docs/model.md section 16): the all-reduce and in-network
    WAN bytes do not depend on n; a worker's port and its own WAN share are those of the DC with
    the most workers (2(n-1)/n p grows with n: that DC's ring binds the sync's intra-DC part); an
    all-gather puts (N - 1) p through each worker's link and sum_i (K-1) n_i p = (K-1) N p on the
    WAN, whose mean over the links in use is ``wan_B`` (what the energy sums; each link's own
    bytes are :func:`bandjax.sites.allgather_counts` x p)."""
    p = variant_payload_B(sc, v, pay)
    s = getattr(sc, "sites", None)
    if not isinstance(s, Sites) or s.equal:
        return traffic(v, p, pay["dense"], sc.workers_per_dc, sc.dcs, sc.topology, where=where)
    K, N = float(s.K), s.N
    t = traffic(v, p, pay["dense"], max(s.workers), K, sc.topology, where=where)
    if v.collective != "allgather":
        return t
    on_link, zero = (N - 1) * p, 0.0 * p
    port, qsfp = (on_link, zero) if v.link == "port" else (zero, on_link)
    return t._replace(port_B=port, qsfp_B=qsfp,
                      wan_B=where(sc.topology == 1, N * p / K, (K - 1) * N * p / K))


def module_stages(sc) -> tuple:
    """The module's four pipelined stages for one worker's dense delta, in :data:`STAGES` order, s
    (budget = inf: compute not charged)."""
    P = sc.params
    G = sc.dense_bytes_per_param * P
    return (G / sc.qsfp_port_Bps, P / sc.optics_Sps,
            sc.transform_flops_per_param * P / sc.budget_FLOPs, G / sc.fpga_Bps)
