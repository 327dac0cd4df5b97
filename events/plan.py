"""Build an engine :class:`~events.engine.Plan` from a scenario, phase by phase.

The bytes come from :func:`bandjax.variants.traffic` (the one description of which bytes cross
which link) and the rates from the scenario's fields (converted with ``float``), so the engine and
the closed forms share every number but no formula. Payload sizes (model.md section 2):

    dense G = dense bytes/param x P      top-k K = k/P x P x bytes/value
    band on the GPU b = band share x P x GPU bits / 8      in transit: ... x ENOB / 8
"""

from __future__ import annotations

import math

from bandjax import variants as _variants
from bandjax.scenario import Scenario

from .engine import Part, Plan


def _payloads_B(sc: Scenario) -> dict[str, float]:
    P = float(sc.params)
    band = float(sc.band_fraction) * P
    return {
        "dense": float(sc.dense_bytes_per_param) * P,
        "topk": float(sc.topk_fraction) * P * float(sc.topk_bytes_per_value),
        "band_gpu": band * float(sc.gpu_band_bits) / 8,
        "band_transit": band * float(sc.enob) / 8,
    }


def sync_every(sc: Scenario) -> int:
    """H as a whole number of steps (the engine syncs on every H-th step)."""
    H = float(sc.sync_every_H)
    if not (H >= 1 and H.is_integer()):
        raise ValueError(f"sync_every_H = {sc.sync_every_H!r}: the event engine syncs every H "
                         "steps, so H must be a whole number >= 1")
    return int(H)


def build(sc: Scenario, variant: str) -> Plan:
    """The steps of ``variant`` under scenario ``sc``, one DC's phases in order.

    Sync phases: worker port (port bytes / worker port rate); the module's four pipelined stages
    (dense bytes / module port, parameters / optics rate, transform FLOPs / budget, dense bytes /
    FPGA rate) for variants with a module; the module port (qsfp bytes / module port rate); the
    fixed time d. Then the WAN bytes of one direction. A zero-byte phase is left out.
    """
    v = _variants.get(variant)
    pay = _payloads_B(sc)
    t = _variants.traffic(v, pay[v.payload], pay["dense"], float(sc.workers_per_dc))
    P = float(sc.params)
    G = pay["dense"]
    phases: list[tuple[Part, ...]] = []
    if float(t.port_B) > 0:
        phases.append((Part("worker port", float(t.port_B), float(sc.worker_port_Bps)),))
    if v.module:
        phases.append((
            Part("module port", G, float(sc.qsfp_port_Bps)),
            Part("module optics", P, float(sc.optics_Sps)),
            Part("module compute", float(sc.transform_flops_per_param) * P, float(sc.budget_FLOPs)),
            Part("module fpga", G, float(sc.fpga_Bps)),
        ))
    if float(t.qsfp_B) > 0:
        phases.append((Part("band through the module port", float(t.qsfp_B),
                            float(sc.qsfp_port_Bps)),))
    d = float(sc.fixed_s[variant])
    if d > 0:
        phases.append((Part("fixed time d", d),))
    wan_Bps = float(sc.wan_Bps)
    if not (wan_Bps > 0 and math.isfinite(wan_Bps)):
        raise ValueError(f"wan_Bps = {sc.wan_Bps!r}: the WAN bandwidth must be a finite number > 0 B/s")
    return Plan(variant=variant, compute_s=float(sc.gpu_compute_s), sync_phases=tuple(phases),
                wan_B=float(t.wan_B), wan_Bps=wan_Bps, message_B=float(sc.wan_message_B),
                background_B=float(sc.background_B), sync_every=sync_every(sc))


def run(sc: Scenario, variant: str, load: float, seed: int = 0, steps: int = 400, **kwargs):
    """Simulate ``variant`` under ``sc``; keyword arguments go to :func:`events.engine.simulate`."""
    from .engine import simulate

    return simulate(build(sc, variant), load, seed, steps, **kwargs)
