"""The variant registry: what each way of syncing sends over which link.

This is the one description of traffic in bandjax. The step time (:mod:`bandjax.step`), the energy
(:mod:`bandjax.metrics`) and the event engine (:mod:`events`) all read it, so no byte count is
written twice. Choices here (which variant, which collective) are made outside jit; the byte counts
are plain arithmetic on whatever arrays they are given.

Collectives, with payload p, n workers per DC and N = 2 n workers (model.md section 5):

    ring_allreduce    port 2(n-1)/n p,  WAN p        (reduce-scatter in DC, WAN exchange, all-gather)
    allgather(link)   link (N-1) p,     WAN N/2 p    (a DC sends the N/2 payloads of its workers)
    in_network        port G, qsfp 2 p, WAN p        (dense delta to the switch; summed band back)

The WAN entry is the bytes that cross one direction of the WAN per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

LINKS = ("port", "qsfp", "wan")


class Traffic(NamedTuple):
    """Bytes per step of one variant: per worker on its port and its module's port, on the WAN
    (one direction), and the part of the WAN bytes a worker sends itself (its all-reduce shard)."""

    port_B: object
    qsfp_B: object
    wan_B: object
    own_wan_B: object


@dataclass(frozen=True)
class Variant:
    id: str
    label: str
    short: str
    payload: str  # "dense" | "topk" | "band_gpu" | "band_transit"
    collective: str  # "ring_allreduce" | "allgather" | "in_network"
    link: str = "port"  # for allgather: the link the all-gather runs through
    module: bool = False  # a pluggable module pipeline (section 4) sits on the path
    in_transit: bool = False  # band bits are the module's ENOB, not the GPU's 8


VARIANTS: tuple[Variant, ...] = (
    Variant("adamw", "AdamW", "AdamW", "dense", "ring_allreduce"),
    Variant("topk", "top-k", "top-k", "topk", "allgather"),
    Variant("band_gpu", "band on the GPU, all-gathered", "C", "band_gpu", "allgather"),
    Variant("band_gpu_allreduce", "band on the GPU, all-reduced", "C'", "band_gpu",
            "ring_allreduce"),
    Variant("band_pluggable", "band in the pluggable module, all-gathered", "E", "band_transit",
            "allgather", link="qsfp", module=True, in_transit=True),
    Variant("band_switch", "band summed in the switch", "E'", "band_transit", "in_network",
            module=True, in_transit=True),
)
IDS: tuple[str, ...] = tuple(v.id for v in VARIANTS)
BY_ID: dict[str, Variant] = {v.id: v for v in VARIANTS}


def get(variant_id: str) -> Variant:
    """The registered variant ``variant_id``; a clear error for an unknown one."""
    try:
        return BY_ID[variant_id]
    except KeyError:
        raise ValueError(f"variant = {variant_id!r} is not known; allowed: {', '.join(IDS)}") from None


def traffic(v: Variant, payload_B, dense_B, n) -> Traffic:
    """Bytes per step of variant ``v`` with ``payload_B`` bytes of payload per worker.

    ``dense_B`` is the dense delta G (the in-network variant sends it to the switch); ``n`` is the
    number of workers per DC. Works on floats and arrays alike.
    """
    zero = 0.0 * payload_B
    N = 2 * n
    if v.collective == "ring_allreduce":
        return Traffic(2 * (n - 1) / n * payload_B, zero, payload_B, payload_B / n)
    if v.collective == "allgather":
        on_link = (N - 1) * payload_B
        port, qsfp = (on_link, zero) if v.link == "port" else (zero, on_link)
        return Traffic(port, qsfp, N / 2 * payload_B, zero)
    if v.collective == "in_network":
        return Traffic(dense_B + zero, 2 * payload_B, payload_B, zero)
    raise ValueError(f"collective = {v.collective!r} is not known; allowed: ring_allreduce, "
                     "allgather, in_network")
