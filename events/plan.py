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
from bandjax import sites as _sites
from bandjax.scenario import Scenario

from . import stragglers as _st
from .engine import Part, Plan


class _Floats:
    """A scenario's fields as Python floats (the engine never sees arrays)."""

    def __init__(self, sc: Scenario):
        self._sc = sc

    def __getattr__(self, name):
        if name in ("sites", "links"):  # static tables, read as they are
            return getattr(self._sc, name, None)
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


def sites(sc: Scenario, variant: str | None = None, *, compute_s=None, workers=None,
          straggler=None, straggler_s=None, rule=None
          ) -> tuple[tuple[float, ...], tuple[int, ...], str, float, str]:
    """Each DC's compute and workers, the stragglers' family and parameter, and the sites' rule
    (docs/model.md section 16), for :func:`build`: each argument given here, else the
    scenario's.

    From the scenario: ``straggler`` (0 none, 1 exponential, 2 lognormal, or the name) and
    ``straggler_s`` where it has them (default none, 0); each DC's compute and workers from
    ``sc.sites`` where it has one (a :class:`bandjax.sites.Sites`: c_i = c x compute_rel, n_i; or
    a mapping with ``compute_s``, ``workers`` and optionally ``rule``), else every DC the
    scenario's c and n (``dcs`` DCs); the rule from a mapping's ``rule``, else the variant's
    ``sites`` ("wait" by default). Returns (compute_s,
    workers, straggler, straggler_s, rule), checked (:func:`events.stragglers.check`): a tuple
    of the wrong length, a DC without workers or compute, a family, parameter or rule not
    allowed is a ``ValueError`` naming it.
    """
    K = int(float(sc.dcs))
    table = getattr(sc, "sites", None)

    def read(name):
        if table is None:
            return None
        if isinstance(table, _sites.Sites):
            if name == "compute_s":
                return table.compute_s(float(sc.gpu_compute_s))
            if name == "workers":
                return tuple(int(n) for n in table.workers)
            return None
        return table.get(name) if isinstance(table, dict) else getattr(table, name, None)

    if compute_s is None:
        compute_s = read("compute_s")
    if compute_s is None:
        compute_s = (float(sc.gpu_compute_s),) * K
    if workers is None:
        workers = read("workers")
    if workers is None:
        n = float(sc.workers_per_dc)
        workers = (int(n) if n.is_integer() else n,) * K
    compute_s, workers = tuple(compute_s), tuple(workers)
    for name, values in (("dc_compute_s", compute_s), ("dc_workers", workers)):
        if len(values) != K:
            raise ValueError(f"{name} = {values!r}: {len(values)} values for {K} DCs (dcs = "
                             f"{K}); give one per DC")
    if straggler is None:
        straggler = getattr(sc, "straggler", 0.0)
        straggler = straggler if isinstance(straggler, str) else float(straggler)
    if straggler_s is None:
        straggler_s = float(getattr(sc, "straggler_s", 0.0))
    if rule is None:
        own = getattr(sc.variant(variant), "sites", None) if variant is not None else None
        rule = read("rule") or own or "wait"
    return _st.check(compute_s, workers, straggler, straggler_s, rule)


def build(sc: Scenario, variant: str, *, compute_s=None, workers=None, straggler=None,
          straggler_s=None, sites_rule=None) -> Plan:
    """The steps of ``variant`` under scenario ``sc``, one DC's phases in order.

    Sync phases: worker port (port bytes / worker port rate); the module's four pipelined stages
    (:func:`bandjax.phases.module_stages`) for variants with a module; the module port (qsfp
    bytes / module port rate); the fixed time d. Then the bytes of each directed WAN link in use
    (K on a ring, K(K-1) on a mesh), each link done hops x latency after its last message (with
    per-link values, ``sc.links``, each its own capacity and latency: :func:`_per_link`). A
    zero-byte phase is left out. With the variant's F fragments (docs/model.md section 14) these
    are one fragment's: every byte term / F, d and latency in full; each fragment sync starts f c
    before its sync point and is due ``delay`` steps after it.

    Sites and stragglers (docs/model.md section 16; :func:`sites`): ``compute_s`` (each DC's
    compute per inner step, s), ``workers`` (each DC's n_i), ``straggler`` ("none",
    "exponential", "lognormal"), ``straggler_s`` (s or sigma) and ``sites_rule`` ("wait",
    "scaled"), each the scenario's when not given. Equal sites with nothing straggling build
    the plan of equal DCs (no per-DC fields), the engine's plain rounds.
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
    link_B = _link_bytes(sc, v, pay, F)
    c, n, name, param, rule = sites(sc, variant, compute_s=compute_s, workers=workers,
                                    straggler=straggler, straggler_s=straggler_s, rule=sites_rule)
    per_dc = len(set(c)) > 1 or _st.straggles(name, param)
    per_dc_fields = dict(dc_compute_s=c, dc_workers=n, straggler=name, straggler_s=param,
                         sites=rule) if per_dc else {}
    return Plan(variant=variant, compute_s=max(c) if per_dc else f.gpu_compute_s,
                sync_phases=tuple(phases),
                wan_B=float(t.wan_B) / F, wan_Bps=min(rates, default=wan_Bps), message_B=f.wan_message_B,
                background_B=f.background_B, sync_every=sync_every(sc, variant), links=int(t.links),
                latency_s=max(latencies, default=float(t.hops) * f.wan_latency_s),
                overlap=f.overlap_fraction, link_Bps=rates, link_latency_s=latencies, link_B=link_B,
                fragments=F, delay=int(v.delay), **per_dc_fields)


def _link_bytes(sc: Scenario, v, pay: dict, F: int) -> tuple[float, ...]:
    """Each link in use's bytes of one fragment sync where they differ (an all-gather on sites
    of different sizes: :func:`bandjax.sites.allgather_counts` x the payload), else ()."""
    if not (_sites.differ(sc) and v.collective == "allgather"):
        return ()
    payload = float(_phases.variant_payload_B(_Floats(sc), v, pay))
    pairs = _links.pairs_in_use(sc.sites.K, sc.topology)
    return tuple(float(n) * payload / F for n in _sites.allgather_counts(sc.sites, pairs))


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


def run(sc: Scenario, variant: str, load: float, seed: int = 0, steps: int = 400, *,
        compute_s=None, workers=None, straggler=None, straggler_s=None, sites_rule=None,
        **kwargs):
    """Simulate ``variant`` under ``sc``; the sites' and stragglers' arguments go to
    :func:`build`, other keyword arguments to :func:`events.engine.simulate`."""
    from .engine import simulate

    plan = build(sc, variant, compute_s=compute_s, workers=workers, straggler=straggler,
                 straggler_s=straggler_s, sites_rule=sites_rule)
    return simulate(plan, load, seed, steps, **kwargs)
