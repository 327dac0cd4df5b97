"""Sites that differ: each DC's own workers and GPU compute (docs/model.md section 16). Plain
Python and NumPy: no jax at import.

A :class:`Sites` table holds the DCs' names, each DC's workers n_i and its GPU compute per inner
step *relative* to the scenario's ``gpu_compute_s`` c: c_i = c x ``compute_rel[i]``. So a sweep,
a break-even or a derivative over anything that moves c (the parameters, the tokens, the GPU's peak
or utilisation) scales every site in proportion, as a sweep over ``wan_Bps`` scales every link
(:mod:`bandjax.links`), and ``Scenario.sites`` stays static (no leaf; nothing recompiles when a leaf
changes). :meth:`bandjax.Scenario.with_sites` builds one from GPUs, utilisations or compute times
and sets c to the slowest site's, so that the slowest site's ``compute_rel`` is 1.

With sites, the scenario's ``dcs`` is K and its ``workers_per_dc`` the mean N / K, so every
N = K n of the closed forms stays right; both are then fixed by the table.

Every DC the same (the same workers, ``compute_rel`` 1) is exactly the scenario without sites:
:func:`differ` is then False, and the closed forms take today's path bit for bit.

The closed forms read these static facts (one place for each):

    N            sum_i n_i
    link counts  an all-gather's payloads on each WAN link: ring i -> i+1 carries N - n_(i+1),
                 mesh i -> j carries n_i (:func:`allgather_counts`)
    tokens share sum_i n_i H_i / (N H): 1 under "wait" (H_i = H), sum_i n_i c_max / c_i / N under
                 "scaled" (H_i = H c_max / c_i, not rounded) (:meth:`Sites.tokens_share`)

An outer step's quality is assumed to depend only on the tokens it saw (so a round of H_i inner
steps a DC is worth its tokens, wherever they were computed); sweeps say so in their attrs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .links import _names
from .units import ScenarioError
from .variants import SITE_RULES

ASSUMPTION = ("sites that differ: an outer step's quality is assumed to depend only on the tokens "
              "it saw (steps to target are counted in global batches of N T tokens); under "
              "sites = 'scaled' DC i runs H c_max / c_i inner steps a round, not rounded "
              "(rounding down costs at most one inner step a DC a round)")
SCALING_NOTE = ("per-site values: GPU compute c is the slowest site's; every site's compute "
                "scales in proportion (the table's ratios are kept)")


def _real(value) -> bool:
    """A real number (int, float, NumPy scalar), not a boolean, complex number or text."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def check_workers(value, where: str) -> float:
    """One DC's workers n_i: a whole number >= 1 (as a float); a clear error otherwise."""
    if not _real(value) or not math.isfinite(float(value)) or float(value) < 1 \
            or float(value) != round(float(value)):
        raise ScenarioError(f"{where} workers = {value!r}: must be a whole number of workers >= 1")
    return float(value)


def check_positive(value, where: str, what: str, unit: str) -> float:
    """A finite number > 0 (as a float); a clear error naming ``where`` and ``what`` otherwise."""
    if not _real(value) or not (math.isfinite(float(value)) and float(value) > 0):
        raise ScenarioError(f"{where} {what} = {value!r}: must be a finite number > 0{unit}")
    return float(value)


@dataclass(frozen=True)
class Sites:
    """K named DCs, each with its own workers and GPU compute relative to the scenario's c.

    Attributes:
      names: the DCs (unique, non-empty strings), in the order of ``Scenario.links`` where the
        scenario has one (the ring's order).
      workers: n_i, whole, >= 1.
      compute_rel: c_i / c, finite and > 0 (c: the scenario's ``gpu_compute_s``).
    """

    names: tuple[str, ...]
    workers: tuple[float, ...]
    compute_rel: tuple[float, ...]

    def __post_init__(self):
        if isinstance(self.names, str) or not isinstance(self.names, (tuple, list)):
            raise ScenarioError(f"sites names = {self.names!r}: expected a list of DC names")
        K = len(self.names)
        if K < 2:
            raise ScenarioError(f"sites names = {list(self.names)!r}: {K} DC; sites are K >= 2 DCs")
        names = _names(self.names, K, "sites")
        for what, values in (("workers", self.workers), ("compute_rel", self.compute_rel)):
            if isinstance(values, str) or not isinstance(values, (tuple, list, np.ndarray)) \
                    or len(values) != K:
                raise ScenarioError(f"sites {what} = {values!r}: expected {K} values, one per DC "
                                    f"({', '.join(names)})")
        workers = tuple(check_workers(n, f"[[sites]] {name!r}") for name, n in
                        zip(names, self.workers))
        rel = tuple(check_positive(r, f"[[sites]] {name!r}", "compute_rel", " (c_i / c)")
                    for name, r in zip(names, self.compute_rel))
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "workers", workers)
        object.__setattr__(self, "compute_rel", rel)

    @property
    def K(self) -> int:
        """The number of DCs."""
        return len(self.names)

    @property
    def N(self) -> float:
        """Workers in all, sum_i n_i."""
        return float(sum(self.workers))

    @property
    def equal(self) -> bool:
        """Whether every DC has the same workers and the scenario's compute (``compute_rel`` 1):
        then the sites are the scenario without them, exactly."""
        return len(set(self.workers)) == 1 and all(r == 1.0 for r in self.compute_rel)

    def compute_s(self, gpu_compute_s: float) -> tuple[float, ...]:
        """Each DC's compute per inner step c_i = c x compute_rel[i], s (c a float)."""
        return tuple(float(gpu_compute_s) * r for r in self.compute_rel)

    def steps_rel(self, rule: str) -> tuple[float, ...]:
        """H_i / H: 1 every DC under "wait", c_max / c_i under "scaled" (not rounded)."""
        if rule not in SITE_RULES:
            raise ScenarioError(f"sites = {rule!r}: must be one of {', '.join(map(repr, SITE_RULES))}")
        top = max(self.compute_rel)
        return (1.0,) * self.K if rule == "wait" else tuple(top / r for r in self.compute_rel)

    def tokens_share(self, rule: str) -> float:
        """sum_i n_i H_i / (N H): the round's tokens over N H T (1 under "wait")."""
        return sum(n * h for n, h in zip(self.workers, self.steps_rel(rule))) / self.N

    def useful_rel(self, rule: str) -> float:
        """(sum_i n_i H_i c_i) / (N H c): the useful compute of an inner step over c."""
        return sum(n * h * r for n, h, r in zip(self.workers, self.steps_rel(rule),
                                                 self.compute_rel)) / self.N

    def index(self, name: str) -> int:
        """The position of DC ``name``; a clear error for an unknown one."""
        if name not in self.names:
            raise ScenarioError(f"DC {name!r} is not a site; allowed: {', '.join(self.names)}")
        return self.names.index(name)

    def without(self, name: str) -> "Sites":
        """These sites less DC ``name`` (refused below 2 DCs)."""
        i = self.index(name)
        if self.K <= 2:
            raise ScenarioError(f"without_site({name!r}): {self.K} DCs ({', '.join(self.names)}); "
                                "at least 2 must remain")
        keep = [k for k in range(self.K) if k != i]
        return Sites(tuple(self.names[k] for k in keep), tuple(self.workers[k] for k in keep),
                     tuple(self.compute_rel[k] for k in keep))


def differ(sc) -> bool:
    """Whether a scenario's sites differ (a table whose DCs are not all the scenario's c and the
    same n): a static fact, so the closed forms take the per-site path only where it is needed and
    equal sites are today's figures bit for bit."""
    s = getattr(sc, "sites", None)
    return isinstance(s, Sites) and not s.equal


def workers_of(sc) -> np.ndarray:
    """Each DC's workers, (K,): the sites' n_i (a scenario with sites)."""
    return np.asarray(sc.sites.workers, dtype=float)


def allgather_counts(sites: Sites, pairs) -> np.ndarray:
    """Payloads an all-gather puts on each WAN link of ``pairs`` (index pairs), (link,):

        ring link i -> i+1   N - n_(i+1)   (every DC's payloads but the receiver's own)
        mesh link i -> j     n_i           (the sender's own)

    ``pairs`` is the ring's (:func:`bandjax.links.ring_pairs`) or the mesh's
    (:func:`bandjax.links.mesh_pairs`); which is told by its length (K or K(K-1), equal only at
    K = 2, where both rules give n_i for i -> j)."""
    n = sites.workers
    if len(pairs) == sites.K:
        return np.array([sites.N - n[j] for _, j in pairs])
    return np.array([n[i] for i, _ in pairs])


def scaling_note(sc, swept) -> str | None:
    """What a sweep over ``swept`` (field or argument names) means for per-site compute: a
    sentence where something moving c is swept and the scenario has sites, else None."""
    if getattr(sc, "sites", None) is None:
        return None
    moving = {"model", "gpu", "params", "active_params", "tokens_per_worker",
              "flops_per_param_token", "gpu_peak_FLOPs", "utilisation"}
    return SCALING_NOTE if set(swept) & moving else None
