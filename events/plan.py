"""Build an engine :class:`~events.engine.Plan` from a scenario, phase by phase.

Payload sizes, the module's stages and the bytes on each WAN link come from :mod:`bandjax.phases`
and :func:`bandjax.variants.traffic` (the one description, which :mod:`bandjax.step` reads too),
evaluated here on Python floats; the rates are the scenario's fields. So the engine and the closed
forms share every formula but compute them independently.
"""

from __future__ import annotations

import math

from bandjax import links as _links
from bandjax import phases as _phases
from bandjax.scenario import Scenario

from .engine import Part, Plan


class _Floats:
    """A scenario's fields as Python floats (the engine never sees arrays)."""

    def __init__(self, sc: Scenario):
        self._sc = sc

    def __getattr__(self, name):
        return float(getattr(self._sc, name))


def _select(cond, a, b):
    return a if cond else b


def sync_every(sc: Scenario, variant: str | None = None) -> int:
    """H as a whole number of steps (the engine syncs on every H-th step): the variant's own, or
    the scenario's."""
    own = sc.variant(variant).sync_every if variant is not None else None
    H = float(sc.sync_every_H if own is None else own)
    if not (H >= 1 and H.is_integer()):
        raise ValueError(f"sync_every_H = {sc.sync_every_H!r}: the event engine syncs every H "
                         "steps, so H must be a whole number >= 1")
    return int(H)


def build(sc: Scenario, variant: str) -> Plan:
    """The steps of ``variant`` under scenario ``sc``, one DC's phases in order.

    Sync phases: worker port (port bytes / worker port rate); the module's four pipelined stages
    (:func:`bandjax.phases.module_stages`) for variants with a module; the module port (qsfp
    bytes / module port rate); the fixed time d. Then the bytes of each directed WAN link in use
    (K on a ring, K(K-1) on a mesh), each link done hops x latency after its last message (with
    per-link values, ``sc.links``, each its own capacity and latency: :func:`_per_link`). A
    zero-byte phase is left out. With the variant's F fragments (docs/model.md section 14) these
    are one fragment's: every byte term / F, d and latency in full; each fragment sync starts f c
    before its sync point and is due ``delay`` steps after it.
    """
    v = sc.variant(variant)
    f = _Floats(sc)
    pay = _phases.payloads_B(f)
    t = _phases.variant_traffic(f, v, pay, _select)
    F = int(v.fragments)
    phases: list[tuple[Part, ...]] = []
    if t.port_B > 0:
        phases.append((Part("worker port", t.port_B / F, f.worker_port_Bps),))
    if v.module:
        phases.append(tuple(Part(name, s / F, 1.0) for name, s in
                            zip(_phases.STAGE_NAMES, _phases.module_stages(f))))
    if t.qsfp_B > 0:
        phases.append((Part("band through the module port", t.qsfp_B / F, f.qsfp_port_Bps),))
    d = float(sc.fixed_s[variant])
    if d > 0:
        phases.append((Part("fixed time d", d),))
    wan_Bps = f.wan_Bps
    if not (wan_Bps > 0 and math.isfinite(wan_Bps)):
        raise ValueError(f"wan_Bps = {sc.wan_Bps!r}: the WAN bandwidth must be a finite number > 0 B/s")
    rates, latencies = _per_link(sc, float(t.hops))
    return Plan(variant=variant, compute_s=f.gpu_compute_s, sync_phases=tuple(phases),
                wan_B=float(t.wan_B) / F, wan_Bps=min(rates, default=wan_Bps), message_B=f.wan_message_B,
                background_B=f.background_B, sync_every=sync_every(sc, variant), links=int(t.links),
                latency_s=max(latencies, default=float(t.hops) * f.wan_latency_s),
                overlap=f.overlap_fraction, link_Bps=rates, link_latency_s=latencies,
                fragments=F, delay=int(v.delay))


def _per_link(sc: Scenario, hops: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Each link in use's capacity and its last message's time to done (docs/model.md section 15),
    or two empty tuples for equal links (the plan's ``wan_Bps`` and ``latency_s`` then hold).

        ring   B_i = wan_Bps x rel of link i -> i+1,   done (hops / K) x (sum of the ring's l) after
               its last message (the chunks cross every ring link's latency in turn)
        mesh   B_ij = wan_Bps x rel,                    done hops x l_ij after its last message

    The same relative tables and the same arithmetic order as :func:`bandjax.step.wan_terms_s`.
    """
    L = sc.links
    if L is None:
        return (), ()
    K = L.K
    B, lat = float(sc.wan_Bps), float(sc.wan_latency_s)
    pairs = _links.pairs_in_use(K, sc.topology)
    rates = tuple(B * float(L.bandwidth_rel[i, j]) for i, j in pairs)
    if float(sc.topology) == 1:
        latencies = tuple(hops * lat * float(L.latency_rel[i, j]) for i, j in pairs)
    else:
        ring = sum(float(L.latency_rel[i, j]) for i, j in pairs)
        latencies = (hops * lat * (ring / K),) * K
    return rates, latencies


def run(sc: Scenario, variant: str, load: float, seed: int = 0, steps: int = 400, **kwargs):
    """Simulate ``variant`` under ``sc``; keyword arguments go to :func:`events.engine.simulate`."""
    from .engine import simulate

    return simulate(build(sc, variant), load, seed, steps, **kwargs)
