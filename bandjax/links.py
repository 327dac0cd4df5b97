"""Links that differ: a bandwidth and a one-way latency per directed link between named DCs
(docs/model.md section 15). Plain Python and NumPy: no jax at import.

A :class:`Links` table holds the DCs' names and, for every ordered pair i != j, the link's bandwidth
and latency *relative* to the scenario's ``wan_Bps`` (the slowest link's bandwidth) and
``wan_latency_s`` (the longest link's latency). So a sweep or a break-even over either leaf scales
every link in proportion, and ``Scenario.links`` stays static (no leaf, nothing recompiles when a
leaf changes). The diagonal (a DC to itself) is ignored: it is stored as 1 and means nothing.

Links in use: a ring uses i -> i+1 (mod K) in the order the DCs are listed (K links); a mesh every
i -> j, i != j (K(K-1) links, row by row). At K = 2 both are the study's two directions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .units import ScenarioError
from .variants import TOPOLOGIES


def default_names(K: int) -> tuple[str, ...]:
    """``("dc0", "dc1", ...)``: the names of K DCs nobody named."""
    return tuple(f"dc{i}" for i in range(K))


def _topology_index(topology) -> int:
    if isinstance(topology, str):
        if topology not in TOPOLOGIES:
            raise ScenarioError(f"topology = {topology!r} is not known; allowed: "
                                f"{', '.join(TOPOLOGIES)}")
        return TOPOLOGIES.index(topology)
    t = float(topology)
    if t not in (0.0, 1.0):
        raise ScenarioError(f"topology = {topology!r}: must be 0 (ring) or 1 (mesh)")
    return int(t)


def ring_pairs(K: int) -> tuple[tuple[int, int], ...]:
    """The ring's directed links i -> i+1 (mod K), in the order the DCs are listed."""
    return tuple((i, (i + 1) % K) for i in range(K))


def mesh_pairs(K: int) -> tuple[tuple[int, int], ...]:
    """Every directed link i -> j, i != j, row by row."""
    return tuple((i, j) for i in range(K) for j in range(K) if i != j)


def pairs_in_use(K: int, topology) -> tuple[tuple[int, int], ...]:
    """The directed links a topology ("ring"/"mesh", or 0/1) uses on K DCs."""
    return ring_pairs(K) if _topology_index(topology) == 0 else mesh_pairs(K)


def _names(names, K: int, what: str) -> tuple[str, ...]:
    names = default_names(K) if names is None else tuple(names)
    if len(names) != K:
        raise ScenarioError(f"{what} names = {list(names)!r}: {len(names)} names for a {K} x {K} "
                            f"table; give one name per DC")
    for n in names:
        if not isinstance(n, str) or not n.strip():
            raise ScenarioError(f"{what} names = {list(names)!r}: {n!r} is not a name; every DC "
                                "needs a non-empty string")
    if len(set(names)) != K:
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ScenarioError(f"{what} names = {list(names)!r}: {', '.join(map(repr, twice))} given "
                            "twice; DC names must be unique")
    return names


def _square(value, what: str, K: int | None = None) -> np.ndarray:
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(f"{what} = {value!r}: expected a K x K table of numbers") from None
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ScenarioError(f"{what}: shape {a.shape} is not a square K x K table (one row and one "
                            "column per DC)")
    if a.shape[0] < 2:
        raise ScenarioError(f"{what}: a {a.shape[0]} x {a.shape[0]} table; links join K >= 2 DCs")
    if K is not None and a.shape[0] != K:
        raise ScenarioError(f"{what}: shape {a.shape} does not match the {K} x {K} bandwidth table")
    return a


def _off_diagonal(a: np.ndarray) -> np.ndarray:
    return a[~np.eye(a.shape[0], dtype=bool)]


def _check_values(a: np.ndarray, what: str, names, positive: bool, unit: str) -> None:
    K = a.shape[0]
    for i in range(K):
        for j in range(K):
            if i == j:
                continue
            x = a[i, j]
            ok = math.isfinite(x) and (x > 0 if positive else x >= 0)
            if not ok:
                raise ScenarioError(f"{what} [{names[i]!r} -> {names[j]!r}] = {float(x)!r}: must be a finite "
                                    f"number {'>' if positive else '>='} 0 {unit}")


@dataclass(frozen=True, eq=False)
class Links:
    """The WAN's directed links between K named DCs, relative to the scenario's leaves.

    Attributes:
      names: the DCs, in ring order (unique, non-empty strings).
      bandwidth_rel: (K, K), B_ij / the slowest link's B (>= 1 off the diagonal).
      latency_rel: (K, K), l_ij / the longest link's l (in [0, 1]; all 1 when every latency is 0).

    Built from absolute values by :meth:`from_absolute` (or :meth:`bandjax.Scenario.with_links`).
    Given relative tables, they are normalised here (divided by the smallest bandwidth and by the
    largest latency), so the meaning of ``wan_Bps`` and ``wan_latency_s`` always holds. The
    diagonal is ignored (stored as 1). Arrays are read-only; equal tables compare and hash equal
    (the scenario holds this as static data under jit).
    """

    names: tuple[str, ...]
    bandwidth_rel: np.ndarray
    latency_rel: np.ndarray

    def __post_init__(self):
        B = _square(self.bandwidth_rel, "links bandwidth")
        K = B.shape[0]
        L = _square(self.latency_rel, "links latency", K)
        names = _names(self.names, K, "links")
        _check_values(B, "links bandwidth", names, True, "(relative)")
        _check_values(L, "links latency", names, False, "(relative)")
        B = B / np.min(_off_diagonal(B))
        top = np.max(_off_diagonal(L))
        L = L / top if top > 0 else np.ones_like(L)
        np.fill_diagonal(B, 1.0)
        np.fill_diagonal(L, 1.0)
        B.flags.writeable = False
        L.flags.writeable = False
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "bandwidth_rel", B)
        object.__setattr__(self, "latency_rel", L)

    def __eq__(self, other):
        return (isinstance(other, Links) and self.names == other.names
                and np.array_equal(self.bandwidth_rel, other.bandwidth_rel)
                and np.array_equal(self.latency_rel, other.latency_rel))

    def __hash__(self):
        return hash((self.names, self.bandwidth_rel.tobytes(), self.latency_rel.tobytes()))

    def __reduce__(self):  # through __post_init__: the copy's arrays are read-only too
        return (Links, (self.names, self.bandwidth_rel, self.latency_rel))

    def __repr__(self):
        return (f"Links(names={self.names!r}, bandwidth_rel={self.bandwidth_rel.tolist()!r}, "
                f"latency_rel={self.latency_rel.tolist()!r})")

    @classmethod
    def from_absolute(cls, bandwidth_Bps, latency_s=None, names=None) -> tuple["Links", float, float]:
        """A table from absolute K x K values in SI, and the scale it is relative to.

        Args:
          bandwidth_Bps: (K, K) B_ij, B/s (diagonal ignored), finite and > 0.
          latency_s: (K, K) one-way l_ij, s (diagonal ignored), finite and >= 0; None: all 0.
          names: K DC names; default ``dc0``, ``dc1``, ...

        Returns:
          (links, wan_Bps, wan_latency_s): the table, the slowest link's bandwidth and the longest
          link's latency (the scenario's leaves).
        """
        B = _square(bandwidth_Bps, "links bandwidth")
        K = B.shape[0]
        L = np.zeros((K, K)) if latency_s is None else _square(latency_s, "links latency", K)
        names = _names(names, K, "links")
        _check_values(B, "links bandwidth", names, True, "B/s")
        _check_values(L, "links latency", names, False, "s")
        return cls(names, B, L), float(np.min(_off_diagonal(B))), float(np.max(_off_diagonal(L)))

    @property
    def K(self) -> int:
        """The number of DCs."""
        return len(self.names)

    @property
    def equal(self) -> bool:
        """Whether every link has the same bandwidth and latency (section 13's equal links)."""
        off = ~np.eye(self.K, dtype=bool)
        return bool(np.all(self.bandwidth_rel[off] == 1.0) and np.all(self.latency_rel[off] == 1.0))

    def bandwidth_Bps(self, wan_Bps) -> np.ndarray:
        """(K, K) absolute bandwidths, B/s, given the slowest link's ``wan_Bps`` (diagonal NaN)."""
        out = self.bandwidth_rel * float(wan_Bps)
        np.fill_diagonal(out, np.nan)
        return out

    def latency_s(self, wan_latency_s) -> np.ndarray:
        """(K, K) absolute one-way latencies, s, given the longest link's ``wan_latency_s``
        (diagonal NaN)."""
        out = self.latency_rel * float(wan_latency_s)
        np.fill_diagonal(out, np.nan)
        return out

    def ring(self) -> tuple[tuple[int, int], ...]:
        """The ring's links i -> i+1 (mod K), as index pairs."""
        return ring_pairs(self.K)

    def in_use(self, topology) -> tuple[tuple[int, int], ...]:
        """The links a topology ("ring"/"mesh", or 0/1) uses, as index pairs."""
        return pairs_in_use(self.K, topology)

    def index(self, name: str) -> int:
        """The position of DC ``name``; a clear error for an unknown one."""
        if name not in self.names:
            raise ScenarioError(f"DC {name!r} is not known; allowed: {', '.join(self.names)}")
        return self.names.index(name)


def names_of(sc) -> tuple[str, ...]:
    """The DC names of a scenario: its links' names, or ``dc0``... for K equal links."""
    return sc.links.names if sc.links is not None else default_names(int(float(sc.dcs)))


def differ(sc) -> bool:
    """Whether a scenario's links differ from one another (a table that is not all equal); equal
    links, given as a table or not, are section 13's WAN."""
    return sc.links is not None and not sc.links.equal


def table(sc) -> list[dict]:
    """Every directed link of a scenario (a point, not a grid) as tidy rows, SI units.

    Each row: ``from``, ``to`` (DC names), ``bandwidth_Bps``, ``latency_s``, ``in_use`` (whether
    the scenario's topology uses it). Equal links (``sc.links`` None) give K(K-1) equal rows named
    ``dc0``... For the report's links table; the pacing link of each variant is
    :func:`bandjax.metrics.pacing_links`.
    """
    K = int(float(sc.dcs))
    names = names_of(sc)
    B = (np.full((K, K), float(sc.wan_Bps)) if sc.links is None
         else sc.links.bandwidth_Bps(sc.wan_Bps))
    L = (np.full((K, K), float(sc.wan_latency_s)) if sc.links is None
         else sc.links.latency_s(sc.wan_latency_s))
    used = set(pairs_in_use(K, sc.topology))
    return [{"from": names[i], "to": names[j], "bandwidth_Bps": float(B[i, j]),
             "latency_s": float(L[i, j]), "in_use": (i, j) in used}
            for i, j in mesh_pairs(K)]


SCALING_NOTE = ("per-link values: {what} is the {which} link's; every link's {kind} scales in "
                "proportion (the table's ratios are kept)")


def scaling_note(sc, swept) -> str | None:
    """What a sweep or break-even over ``swept`` (names of fields or sweep arguments) means for a
    scenario with per-link values: a sentence, or None when it does not apply (equal links, or
    neither the bandwidth nor the latency swept)."""
    if getattr(sc, "links", None) is None:
        return None
    swept = set(swept)
    parts = []
    if swept & {"bandwidth", "wan_Bps"}:
        parts.append(SCALING_NOTE.format(what="bandwidth", which="slowest", kind="bandwidth"))
    if swept & {"wan_latency_s", "latency"}:
        parts.append(SCALING_NOTE.format(what="latency", which="longest", kind="latency"))
    return "; ".join(parts) or None
