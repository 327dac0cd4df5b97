"""The variant registry: what each way of syncing is, sends over which link, and where its steps
come from.

This is the one description of traffic in bandjax. The step time (:mod:`bandjax.step`), the energy
(:mod:`bandjax.metrics`) and the event engine (:mod:`events`) all read it, so no byte count is
written twice. A variant is data (:class:`Variant`); a scenario holds its own registry
(``Scenario.variants``, the six of the study by default), so a user's variant is one more entry.
Plain Python and NumPy: no jax at import.

Collectives, with payload p per worker, K DCs of n workers, N = K n (docs/model.md sections 5 and 13).
Bytes per step on each directed WAN link in use:

    collective        port / qsfp            ring WAN link     mesh WAN link   latency ring / mesh
    ring_allreduce    port 2(n-1)/n p        2(K-1)/K p        2 p / K         2(K-1) l / 2 l
    allgather(link)   link (N-1) p           (K-1) n p         n p             (K-1) l  / l
    in_network        port G, qsfp 2 p       2(K-1)/K p        2 p / K         2(K-1) l / 2 l

A ring uses K directed links, a mesh K(K-1); at K = 2 both are the study's two WAN directions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .units import _digits, plain

LINKS = ("port", "qsfp", "wan")
PAYLOADS = ("dense", "topk", "band_gpu", "band_transit")
COLLECTIVES = ("ring_allreduce", "allgather", "in_network")
TOPOLOGIES = ("ring", "mesh")  # the numeric leaf Scenario.topology is the index in this tuple
# How a round runs on sites that differ (docs/model.md section 16): "wait", every DC runs H inner
# steps and the sync waits for the slowest; "scaled", DC i runs H c_max / c_i.
SITE_RULES = ("wait", "scaled")
STEPS_SOURCES = ("flat", "enob", "rule")
NEVER = "never"
ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")
"""What a variant id may be: it is a key of files and of results.json, so it is kept plain."""
MAX_NAME_CHARS = 200
"""Longest label or short label a variant may have (they are printed in tables and legends)."""


class Traffic(NamedTuple):
    """Bytes of one variant per sync: per worker on its port and its module's port, on each directed
    WAN link in use, and the part of the WAN bytes a worker sends itself (its all-reduce shard);
    ``links``: directed WAN links in use; ``hops``: one-way WAN latencies on the critical path."""

    port_B: object
    qsfp_B: object
    wan_B: object
    own_wan_B: object
    links: object = 2.0
    hops: object = 1.0


@dataclass(frozen=True)
class Rule:
    """Steps taken from other variants: on each basis, the largest of the named variants' steps at
    the same ENOB (inf = never wins over any number; a variant not measured there gives NaN).

    The study's E' is ``Rule(hypothesis=("band_pluggable",), exact=("band_pluggable", "band_gpu"))``
    (docs/model.md section 6, amended): E's steps, or on the exact basis max(E's, the exact band's).
    """

    hypothesis: tuple[str, ...]
    exact: tuple[str, ...]

    @property
    def basis_dependent(self) -> bool:
        """Whether the two bases can give different steps."""
        return tuple(self.hypothesis) != tuple(self.exact)

    def sources(self, basis: str) -> tuple[str, ...]:
        return self.hypothesis if basis == "hypothesis" else self.exact


@dataclass(frozen=True)
class Variant:
    """One way of syncing.

    Attributes:
      id, label, short: names (the short one is what tables and plots print; a scenario refuses
        two variants with one short label, in any case).
      payload: what a worker sends, one of :data:`PAYLOADS`: ``dense`` (G = bytes_per_param x P),
        ``topk`` (k values + indices), ``band_gpu`` (band at the GPU's bits), ``band_transit``
        (band at the module's ENOB).
      collective: one of :data:`COLLECTIVES`.
      link: ``"port"`` or ``"qsfp"``: the link an all-gather runs through.
      module: a pluggable module pipeline (docs/model.md section 4) sits on the path.
      bytes_per_param: for a dense payload, bytes a parameter (None: the scenario's fp32 4).
      steps: where its steps come from: ``"flat"`` (one measured number), ``"enob"`` (measured per
        ENOB) or ``"rule"`` (:attr:`rule`, over other variants' steps).
      rule: the :class:`Rule` when ``steps == "rule"``.
      d_s: its default fixed time d, s (the scenario holds the value used, ``fixed_s[id]``).
      colour: position in plots' colour order.
      sync_every: H, inner steps a round (docs/model.md section 14); None: the scenario's
        ``sync_every_H``.
      delay: tau, whole inner steps a sync may run before its result is applied (0: blocking;
        at most H - 1, checked where H is known).
      fragments: F, whole, the model synced in F fragments spread over the round (1 to H).
      sites: on sites that differ (docs/model.md section 16), one of :data:`SITE_RULES`:
        ``"wait"`` (every DC runs H inner steps; the sync waits for the slowest) or ``"scaled"``
        (DC i runs H c_max / c_i, so every DC computes for the whole round). Equal sites: no
        difference.
    """

    id: str
    label: str
    short: str
    payload: str
    collective: str
    link: str = "port"
    module: bool = False
    bytes_per_param: float | None = None
    steps: str = "flat"
    rule: Rule | None = None
    d_s: float = 0.0
    colour: int = 0
    sync_every: float | None = None
    delay: int = 0
    fragments: int = 1
    sites: str = "wait"

    def __post_init__(self):
        def bad(what, value, allowed):
            raise ValueError(f"variant {self.id!r}: {what} = {value!r} is not known; allowed: "
                             f"{', '.join(allowed)}")
        if not (isinstance(self.id, str) and ID_PATTERN.fullmatch(self.id)):
            raise ValueError(f"variant id = {self.id!r}: must be letters, digits, '_', '.', '+' or "
                             "'-', starting with a letter, digit or '_' (at most 64)")
        for what in ("label", "short"):
            value = getattr(self, what)
            if not (isinstance(value, str) and value.strip() and len(value) <= MAX_NAME_CHARS):
                raise ValueError(f"variant {self.id!r}: {what} = {value!r}: must be a non-empty "
                                 f"text of at most {MAX_NAME_CHARS} characters")
        if not isinstance(self.module, (bool, np.bool_)):
            raise ValueError(f"variant {self.id!r}: module = {self.module!r}: must be true or false")
        if not (_whole(self.colour) and 0 <= self.colour < 1000):
            raise ValueError(f"variant {self.id!r}: colour = {_typed(self.colour)}: must be a whole "
                             "number in [0, 1000) (a position in the plots' colour order)")
        if not _number(self.d_s):
            raise ValueError(f"variant {self.id!r}: d_s = {self.d_s!r}: must be a number of "
                             "seconds >= 0 (e.g. 1e-3 for 1 ms)")
        if self.bytes_per_param is not None and not (_number(self.bytes_per_param)
                                                      and math.isfinite(self.bytes_per_param)):
            raise ValueError(f"variant {self.id!r}: bytes_per_param = {self.bytes_per_param!r}: "
                             "must be a finite number > 0 bytes a parameter")
        if self.payload not in PAYLOADS:
            bad("payload", self.payload, PAYLOADS)
        if self.collective not in COLLECTIVES:
            bad("collective", self.collective, COLLECTIVES)
        if self.link not in ("port", "qsfp"):
            bad("link", self.link, ("port", "qsfp"))
        if not isinstance(self.sites, str) or self.sites not in SITE_RULES:
            raise ValueError(f"variant {self.id!r}: sites = {self.sites!r} is not known; allowed: "
                             f"{', '.join(SITE_RULES)} ('wait': every DC runs H inner steps and the "
                             "sync waits for the slowest; 'scaled': DC i runs H c_max / c_i)")
        if self.steps not in STEPS_SOURCES:
            bad("steps", self.steps, STEPS_SOURCES)
        if (self.steps == "rule") != (self.rule is not None):
            raise ValueError(f"variant {self.id!r}: a rule goes with steps = 'rule', and only there")
        if self.bytes_per_param is not None and not (self.payload == "dense" and self.bytes_per_param > 0):
            raise ValueError(f"variant {self.id!r}: bytes_per_param = {self.bytes_per_param!r}: "
                             "only for a dense payload, and > 0 bytes a parameter")
        if not (math.isfinite(self.d_s) and self.d_s >= 0):
            raise ValueError(f"variant {self.id!r}: d_s = {self.d_s!r}: must be >= 0 s")
        if self.sync_every is not None and not (_whole(self.sync_every) and self.sync_every >= 1):
            raise ValueError(f"variant {self.id!r}: sync_every = {_typed(self.sync_every)}: must be a whole "
                             "number of inner steps >= 1 (or None: the scenario's H)")
        if not (_whole(self.delay) and self.delay >= 0):
            raise ValueError(f"variant {self.id!r}: delay = {_typed(self.delay)}: must be a whole number "
                             "of inner steps >= 0 (and at most H - 1)")
        if not (_whole(self.fragments) and self.fragments >= 1):
            raise ValueError(f"variant {self.id!r}: fragments = {_typed(self.fragments)}: must be a whole "
                             "number >= 1 (and at most H)")
        if self.sync_every is not None:
            check_method(self, self.sync_every)

    @property
    def own_method(self) -> bool:
        """Whether it sets its own H (the scenario's H does not move it)."""
        return self.sync_every is not None

    @property
    def in_transit(self) -> bool:
        """Band bits are the module's ENOB, not the GPU's."""
        return self.payload == "band_transit"

    @property
    def basis_dependent(self) -> bool:
        """Whether its steps differ between the hypothesis and the exact basis."""
        return self.rule is not None and self.rule.basis_dependent


def _typed(x) -> str:
    """A value for a message as typed; an integer of hundreds of digits by its first ones."""
    if isinstance(x, int) and not isinstance(x, bool):
        return _digits(x)
    return repr(x)


def _number(x) -> bool:
    """A real number (an int, float or NumPy scalar or 0-d array), not a boolean."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x[()]
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _whole(x) -> bool:
    if not isinstance(x, (int, float, np.integer, np.floating)) or isinstance(x, (bool, np.bool_)):
        return False
    try:
        return math.isfinite(x) and float(x) == round(float(x))
    except OverflowError:  # an integer past the largest float: no count of steps or colours
        return False


def check_method(v: Variant, H) -> None:
    """Raise ValueError unless tau <= H - 1 and F <= H for variant ``v`` at H (a number or an array
    of the H a sweep or a scenario gives it); the message names the variant, key, value and range."""
    H = np.asarray(H, dtype=float)
    if np.any(v.delay > H - 1):
        raise ValueError(f"variant {v.id!r}: delay = {v.delay!r} with H = {plain(float(np.min(H)))}: must "
                         "be at most H - 1 inner steps")
    if np.any(v.fragments > H):
        raise ValueError(f"variant {v.id!r}: fragments = {v.fragments!r} with H = "
                         f"{plain(float(np.min(H)))}: must be at most H")


_E_PRIME = Rule(hypothesis=("band_pluggable",), exact=("band_pluggable", "band_gpu"))

VARIANTS: tuple[Variant, ...] = (
    Variant("adamw", "AdamW", "AdamW", "dense", "ring_allreduce", d_s=0.0998e-3, colour=0),
    Variant("topk", "top-k", "top-k", "topk", "allgather", d_s=0.0, colour=1),
    Variant("band_gpu", "band on the GPU, all-gathered", "C", "band_gpu", "allgather",
            d_s=0.0408e-3, colour=2),
    Variant("band_gpu_allreduce", "band on the GPU, all-reduced", "C'", "band_gpu",
            "ring_allreduce", d_s=0.1009e-3, colour=3),
    Variant("band_pluggable", "band in the pluggable module, all-gathered", "E", "band_transit",
            "allgather", link="qsfp", module=True, steps="enob", d_s=0.0017e-3, colour=4),
    Variant("band_switch", "band summed in the switch", "E'", "band_transit", "in_network",
            module=True, steps="rule", rule=_E_PRIME, d_s=0.0227e-3, colour=5),
)
"""The study's six variants (docs/model.md section 3), the default registry of a scenario."""

# The field's ways of syncing in rounds (docs/model.md section 14): dense payloads over a ring
# all-reduce, none of them among the study's six (so no study figure moves). Their steps to target
# are not in the study: not measured (NaN) unless a user gives them; step time and compute
# utilisation need none. Add them with ``Scenario.with_variants(METHODS)``.
METHODS: tuple[Variant, ...] = (
    # Data parallel with bf16 gradients: every step a ring all-reduce of 2 B a parameter
    # (mixed-precision training, Micikevicius et al. 2018, arXiv:1710.03740; PyTorch DDP's bf16
    # gradient compression hook).
    Variant("dp_bf16", "data parallel, bf16 gradients", "DP bf16", "dense", "ring_allreduce",
            bytes_per_param=2.0, sync_every=1, colour=6),
    # DiLoCo: H inner steps per DC, then an all-reduce of the outer gradient (Douillard et al.
    # 2023, "DiLoCo: Distributed Low-Communication Training of Language Models", arXiv:2311.08105);
    # outer gradient in bf16, H = 100.
    Variant("diloco", "DiLoCo, H = 100, bf16 outer gradient", "DiLoCo", "dense", "ring_allreduce",
            bytes_per_param=2.0, sync_every=100, colour=7),
    # Streaming DiLoCo: the model synced in F fragments spread over the round (Douillard et al.
    # 2025, "Streaming DiLoCo with overlapping communication: Towards a Distributed Free Lunch",
    # arXiv:2501.18512); F = 16 as in docs/model.md section 14's worked values.
    Variant("streaming_diloco", "Streaming DiLoCo, H = 100, 16 fragments", "S-DiLoCo", "dense",
            "ring_allreduce", bytes_per_param=2.0, sync_every=100, fragments=16, colour=8),
    # Streaming DiLoCo with its outer gradient in FP4 (0.5 B a parameter) and the sync overlapped
    # with one inner step, tau = 1 (the same paper, its "quantised communication" and
    # "overlapping communication"); the delay is assumed not to change steps to target.
    Variant("streaming_diloco_fp4", "Streaming DiLoCo, FP4 sync overlapped one step",
            "S-DiLoCo FP4", "dense", "ring_allreduce", bytes_per_param=0.5, sync_every=100,
            fragments=16, delay=1, colour=9),
    # INTELLECT-1: DiLoCo with the pseudo-gradient all-reduced in int8, 1 B a parameter, H = 100
    # inner steps (Prime Intellect 2024, "INTELLECT-1 Technical Report", arXiv:2412.01152).
    Variant("intellect1_int8", "INTELLECT-1 int8 DiLoCo, H = 100", "int8 DiLoCo", "dense",
            "ring_allreduce", bytes_per_param=1.0, sync_every=100, colour=10),
)
"""Ways of syncing in rounds from the field (docs/model.md section 14), outside the study."""

IDS: tuple[str, ...] = tuple(v.id for v in VARIANTS)
BY_ID: dict[str, Variant] = {v.id: v for v in VARIANTS}
# Pairs the report compares side by side (a, b): the in-network band against the rest.
DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (
    ("band_switch", "adamw"), ("band_switch", "topk"), ("band_switch", "band_gpu_allreduce"),
    ("band_pluggable", "adamw"))


def find(name: str, registry: tuple[Variant, ...] = VARIANTS, *,
         long_label: bool = False) -> str | None:
    """The id of the variant ``name`` names in ``registry`` (its id, or its short label, or with
    ``long_label`` its label, in any case), or None: one matching rule for every caller, each of
    which words its own error."""
    for v in registry:
        names = (v.id.lower(), v.short.lower(), *((v.label.lower(),) if long_label else ()))
        if name == v.id or name.lower() in names:
            return v.id
    return None


def get(variant_id: str, registry: tuple[Variant, ...] = VARIANTS) -> Variant:
    """The variant ``variant_id`` of ``registry``; a clear error for an unknown one."""
    for v in registry:
        if v.id == variant_id:
            return v
    raise ValueError(f"variant = {variant_id!r} is not known; allowed: "
                     f"{', '.join(v.id for v in registry)}")


def ids(registry: tuple[Variant, ...] = VARIANTS) -> tuple[str, ...]:
    return tuple(v.id for v in registry)


def basis_dependent(registry: tuple[Variant, ...] = VARIANTS) -> tuple[str, ...]:
    """Ids of the variants whose steps depend on the basis (they have a basis-dependent rule)."""
    return tuple(v.id for v in registry if v.basis_dependent)


def by_colour(registry: tuple[Variant, ...] = VARIANTS) -> tuple[Variant, ...]:
    """The registry in plot colour order."""
    return tuple(sorted(registry, key=lambda v: v.colour))


def check_shorts(registry: tuple[Variant, ...], added: Variant | None = None) -> None:
    """Short labels unique, in any case: tables and plots name variants by it, and a variant is
    found by its short label in any case (:func:`find`), so "e" beside "E" would name two. The
    message names the later variant (or ``added``, the one being added), the label and the
    variant that has it."""
    first: dict[str, Variant] = {}
    for v in sorted(registry, key=lambda u: u is added):  # stable: ``added`` last
        key = v.short.strip().casefold()
        if key in first:
            u = first[key]
            same = "" if u.short == v.short else f" (as {u.short!r})"
            raise ValueError(f"variant {v.id!r}: short = {v.short!r} is already the short label of "
                             f"variant {u.id!r}{same}; each variant needs its own (tables and plots "
                             "name variants by it)")
        first[key] = v


def check_registry(registry: tuple[Variant, ...], added: Variant | None = None) -> None:
    """Ids unique, at least one variant, short labels unique (:func:`check_shorts`); every rule
    names variants of the registry with steps of their own."""
    seen = [v.id for v in registry]
    if len(set(seen)) != len(seen):
        raise ValueError(f"variant ids must be unique; got {', '.join(seen)}")
    if not registry:
        raise ValueError("variants = (): give at least one variant")
    check_shorts(registry, added)
    for v in registry:
        for src in (v.rule.hypothesis + v.rule.exact) if v.rule else ():
            if src not in seen or get(src, registry).rule is not None:
                raise ValueError(f"variant {v.id!r}: its rule names {src!r}, which is not a variant "
                                 "with steps of its own; allowed: "
                                 + ", ".join(u.id for u in registry if u.rule is None))


def traffic(v: Variant, payload_B, dense_B, n, dcs=2.0, topology=0.0, where=np.where) -> Traffic:
    """Bytes per sync of variant ``v`` with ``payload_B`` bytes of payload per worker.

    Args:
      v: the variant.
      payload_B: its payload per worker, B.
      dense_B: the dense delta G, B (the in-network variant sends it to the switch).
      n: workers per DC; dcs: K, the number of DCs.
      topology: 0 for a ring, 1 for a mesh (index in :data:`TOPOLOGIES`), a number or an array.
      where: the elementwise select (``jnp.where`` inside jit; NumPy's by default).

    Works on floats and arrays alike (the table of the module docstring).
    """
    K = dcs
    mesh = topology == 1
    zero = 0.0 * payload_B
    links = where(mesh, K * (K - 1), K)
    reduce_link = where(mesh, 2 * payload_B / K, 2 * (K - 1) / K * payload_B)
    reduce_hops = where(mesh, 2.0, 2 * (K - 1))
    if v.collective == "ring_allreduce":
        return Traffic(2 * (n - 1) / n * payload_B, zero, reduce_link,
                       2 * (K - 1) / K * payload_B / n, links, reduce_hops)
    if v.collective == "allgather":
        on_link = (K * n - 1) * payload_B
        port, qsfp = (on_link, zero) if v.link == "port" else (zero, on_link)
        return Traffic(port, qsfp, where(mesh, n * payload_B, (K - 1) * n * payload_B), zero,
                       links, where(mesh, 1.0, K - 1))
    # in_network: the dense delta to the switch, the summed band (and the worker's own) back
    return Traffic(dense_B + zero, 2 * payload_B, reduce_link, zero, links, reduce_hops)
