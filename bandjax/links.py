"""Links that differ: a bandwidth and a one-way latency per directed link between named DCs
(docs/model.md section 15). Plain Python and NumPy: no jax at import.

A :class:`Links` table holds the DCs' names and, for every ordered pair i != j, the link's bandwidth
and latency *relative* to the scenario's ``wan_Bps`` (the slowest link's bandwidth) and
``wan_latency_s`` (the longest link's latency). So a sweep or a break-even over either leaf scales
every link in proportion. The diagonal (a DC to itself) is ignored: it is stored as 1 and means
nothing.

Under jit a table is static (its values constants of the program), or data where the scenario
holds it as :class:`DataLinks` (:func:`as_data`): its two tables leaves, its names static, so a
new table of the same K runs the program the first one compiled. Traced code reads a table as
(K, K) first, then any axes a tree map appended after it (:func:`bandjax.step.link_values`), or a
sweep over one link's value (:func:`swept_tables`, :func:`parse_link`) placed on its grid axis.

Links in use: a ring uses i -> i+1 (mod K) in the order the DCs are listed (K links); a mesh every
i -> j, i != j (K(K-1) links, row by row). At K = 2 both are the study's two directions.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ._limits import MAX_LINK_BANDWIDTH_RATIO, MAX_LINK_DCS
from .units import DIMENSIONS, ScenarioError, describe, shown
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
    if isinstance(names, str) or (names is not None and not isinstance(names, (list, tuple, np.ndarray))):
        raise ScenarioError(f"{what} names = {names!r}: expected a list of {K} DC names (one "
                            "string each), not a single value")
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


def _rows(value) -> int | None:
    """How many rows a table has, read from its length alone (no array is made of it), or None
    where it has no length."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    try:
        return len(value)
    except TypeError:
        return None


def _square(value, what: str, K: int | None = None) -> np.ndarray:
    """``value`` as a float K x K table, or :class:`ScenarioError` naming ``what``: a table of
    more than :data:`bandjax._limits.MAX_LINK_DCS` rows is refused from its length, before any
    array is made of it; booleans, complex numbers and text are refused, not converted."""
    rows = _rows(value)
    if isinstance(value, (str, bytes)) or rows is None:
        raise ScenarioError(f"{what} = {value!r}: expected a K x K table of numbers")
    if rows > MAX_LINK_DCS:
        raise ScenarioError(f"{what}: a table of {rows:,} rows; at most {MAX_LINK_DCS:,} DCs "
                            "(bandjax._limits.MAX_LINK_DCS)")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged rows
        raise ScenarioError(f"{what} = {value!r}: expected a K x K table of numbers") from None
    if raw.dtype.kind not in "iuf":
        got = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "text"}.get(
            raw.dtype.kind, "values that are not all real numbers")
        raise ScenarioError(f"{what} = {_shown_table(value)}: expected a K x K table of numbers (real "
                            f"ones), got {got}")
    a = raw.astype(float)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ScenarioError(f"{what}: shape {a.shape} is not a square K x K table (one row and one "
                            "column per DC)")
    if a.shape[0] < 2:
        raise ScenarioError(f"{what}: a {a.shape[0]} x {a.shape[0]} table; links join K >= 2 DCs")
    if K is not None and a.shape[0] != K:
        raise ScenarioError(f"{what}: shape {a.shape} does not match the {K} x {K} bandwidth table")
    return a


def link_number(what: str, value) -> float:
    """One link's value as given to :meth:`bandjax.Scenario.with_link`: a real number (its range
    is checked with the table's, by :func:`_check_values`), or :class:`ScenarioError` naming
    ``what`` and the value: a boolean, complex number, text or array is not converted."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                       np.floating)):
        raise ScenarioError(f"{what} = {value!r}: expected one real number")
    try:
        return float(value)
    except OverflowError:  # an integer past the largest float
        raise ScenarioError(f"{what} = {value!r:.40}...: too large for a 64-bit float") from None


def _off_diagonal(a: np.ndarray) -> np.ndarray:
    return a[~np.eye(a.shape[0], dtype=bool)]


def _shown_table(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _shown(value, unit: str) -> str:
    """A link's value with its unit for a message, as :func:`bandjax.units.shown` writes it (as
    typed, or to 6 significant figures where that takes more)."""
    if unit in DIMENSIONS:
        return str(shown(float(value), DIMENSIONS[unit]))
    return f"{shown(float(value), 'count')} {unit}"


def _check_values(a: np.ndarray, what: str, names, positive: bool, unit: str) -> None:
    """Every link's value finite and > 0 (``positive``) or >= 0; the first that is not is named
    by its pair (one vectorised test)."""
    with np.errstate(invalid="ignore"):
        good = np.isfinite(a) & ((a > 0) if positive else (a >= 0))
    np.fill_diagonal(good, True)
    if not np.all(good):
        i, j = np.argwhere(~good)[0]
        raise ScenarioError(f"{what} [{names[i]!r} -> {names[j]!r}] = {_shown(a[i, j], unit)}: "
                            f"must be a finite number {'>' if positive else '>='} 0 {unit}")


def _check_ratio(B: np.ndarray, what: str, names, unit: str) -> None:
    """The fastest link at most :data:`bandjax._limits.MAX_LINK_BANDWIDTH_RATIO` times the
    slowest (the table is kept as ratios to the slowest, and the closed forms take products of
    them)."""
    off = ~np.eye(B.shape[0], dtype=bool)
    lo, hi = np.min(B[off]), np.max(B[off])
    if hi > lo * MAX_LINK_BANDWIDTH_RATIO:  # no division: 1e300 / 1e-300 would overflow
        (i, j), (k, m) = np.argwhere(off & (B == hi))[0], np.argwhere(off & (B == lo))[0]
        decades = math.log10(hi) - math.log10(lo)
        times = f"{10 ** decades:.3g}" if decades < 300 else f"1e{decades:.0f}"
        raise ScenarioError(f"{what}: the fastest link [{names[i]!r} -> {names[j]!r}] = "
                            f"{_shown(hi, unit)} is {times} times the slowest "
                            f"[{names[k]!r} -> {names[m]!r}] = {_shown(lo, unit)}; at most "
                            f"{MAX_LINK_BANDWIDTH_RATIO:.0e} times "
                            "(bandjax._limits.MAX_LINK_BANDWIDTH_RATIO)")


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
    (the scenario holds this as static data under jit; :class:`DataLinks` as leaves).
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
        _check_ratio(B, "links bandwidth", names, "(relative)")
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
        _check_ratio(B, "links bandwidth", names, "B/s")
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


ONE_WAY, BOTH_WAYS = "->", "<->"
"""How a sweep's ``link`` names its links: ``"a -> b"`` the one directed link from DC a to DC b,
``"a <-> b"`` that link and b -> a."""


def _shown_names(names) -> str:
    shown = ", ".join(names[:20])
    return shown if len(names) <= 20 else f"{shown}, ... ({len(names):,} DCs)"


def parse_link(text, names) -> tuple[tuple[int, int], ...]:
    """The directed links a sweep's ``link`` names, as index pairs into ``names``: ``"a -> b"``
    (a -> b alone) or ``"a <-> b"`` (a -> b and b -> a), spaces around the arrow optional; a DC
    name that holds an arrow itself is found by trying each arrow of the text. Anything else is a
    :class:`ScenarioError` naming the link and the DCs allowed."""
    form = "'source -> target' (one direction) or 'a <-> b' (both directions)"
    if not isinstance(text, str):
        raise ScenarioError(f"link = {text!r}: expected one link as text, {form}; DCs: "
                            f"{_shown_names(names)}")
    found = set()
    for arrow in (BOTH_WAYS, ONE_WAY):
        at = text.find(arrow)
        while at >= 0:
            a, b = text[:at].strip(), text[at + len(arrow):].strip()
            if a in names and b in names:
                found.add((a, b, arrow))
            at = text.find(arrow, at + 1)
    if len(found) != 1:
        arrow = BOTH_WAYS if BOTH_WAYS in text else ONE_WAY
        a, _, b = (part.strip() for part in text.partition(arrow))
        unknown = [n for n in (a, b) if n not in names]
        why = ("it reads as more than one link" if found else
               f"{' and '.join(map(repr, unknown))} "
               f"{'is not a DC' if len(unknown) == 1 else 'are not DCs'} of the links table"
               if arrow in text else f"expected {form}")
        raise ScenarioError(f"link = {text!r}: {why}; DCs: {_shown_names(names)}")
    (a, b, arrow), = found
    if a == b:
        raise ScenarioError(f"link = {text!r}: a link joins two different DCs; DCs: "
                            f"{_shown_names(names)}")
    i, j = names.index(a), names.index(b)
    return ((i, j), (j, i)) if arrow == BOTH_WAYS else ((i, j),)


def link_text(pairs, names) -> str:
    """The links ``pairs`` (index pairs) as a reader sees them: ``"a -> b"``, or ``"a -> b and
    b -> a"``."""
    return " and ".join(f"{names[i]} -> {names[j]}" for i, j in pairs)


def swept_tables(table_rel, scale, pairs, values, *, bandwidth: bool, what: str = "",
                 names=(), given=None, unit: str = "B/s") -> tuple[np.ndarray, np.ndarray]:
    """A links table with the links ``pairs`` set to each of ``values`` in turn, every other
    link keeping its own (a sweep over one link, docs/model.md section 15), as a scenario holds
    it: relative to the slowest link's bandwidth (``bandwidth``) or the longest link's latency.

    Args:
      table_rel: (K, K) relative table (``bandwidth_rel`` or ``latency_rel`` of a :class:`Links`).
      scale: its scenario leaf, ``wan_Bps`` (B/s) or ``wan_latency_s`` (s).
      pairs: the swept links, index pairs.
      values: (n,) what they take, B/s or s (each checked before: finite, > 0 or >= 0).
      what, names, given, unit: for the message where a bandwidth would make the fastest link
        more than :data:`bandjax._limits.MAX_LINK_BANDWIDTH_RATIO` times the slowest: the
        argument, the DC names, the values as given (default ``values``) and their unit.

    Returns:
      (scale (n,), tables (K, K, n)): the scenario's leaf and the relative table at each value,
      normalised as :class:`Links` normalises a table (a latency table of zeros: all ones).
    """
    K = table_rel.shape[0]
    values = np.asarray(values, dtype=float)
    rows, cols = np.array(pairs).T
    swept = np.zeros((K, K), dtype=bool)
    swept[rows, cols] = True
    others = ~np.eye(K, dtype=bool) & ~swept
    absolute = np.asarray(table_rel, dtype=float) * float(scale)
    tables = np.repeat(absolute[..., None], values.size, axis=-1)
    tables[rows, cols] = values
    rest = absolute[others]
    if bandwidth:
        if rest.size:
            _check_swept_ratio(values, absolute, others, what, names,
                               np.asarray(values if given is None else given).tolist(), unit)
        new = np.minimum(values, np.min(rest)) if rest.size else values.copy()
        rel = tables / new
    else:
        new = np.maximum(values, np.max(rest)) if rest.size else values.copy()
        rel = np.where(new > 0, tables / np.where(new > 0, new, 1.0), 1.0)
    rel[np.eye(K, dtype=bool)] = 1.0
    return new, rel


def _check_swept_ratio(values, absolute, others, what, names, given, unit) -> None:
    """Every swept bandwidth within :data:`bandjax._limits.MAX_LINK_BANDWIDTH_RATIO` of the
    other links (the fastest at most that many times the slowest), or a :class:`ScenarioError`
    naming the first value that is not and the link it is compared with."""
    rest = np.where(others, absolute, np.nan)
    (k, m), (p, q) = (np.unravel_index(f(rest), rest.shape) for f in (np.nanargmin, np.nanargmax))
    lo, hi = absolute[k, m], absolute[p, q]
    R = MAX_LINK_BANDWIDTH_RATIO
    bad = (values > lo * R) | (values * R < hi)
    if np.any(bad):
        k_bad = int(np.argmax(bad))
        v = float(values[k_bad])
        if v > lo * R:
            why = (f"{v / lo:.3g} times the slowest other link [{names[k]!r} -> {names[m]!r}] = "
                   f"{describe(lo, 'byte_rate')}")
        else:
            why = (f"the fastest other link [{names[p]!r} -> {names[q]!r}] = "
                   f"{describe(hi, 'byte_rate')} is {hi / v:.3g} times it")
        raise ScenarioError(f"{what} = {given[k_bad]!r} {unit}: {why}; at most {R:.0e} times "
                            "(bandjax._limits.MAX_LINK_BANDWIDTH_RATIO)")


def envelope_breaks(slopes, intercepts) -> tuple[np.ndarray, np.ndarray]:
    """The upper envelope of the lines s_l t + b_l over t >= 0 (static NumPy): the t > 0 where the
    line on top changes, ascending, and the indices of the lines on top somewhere."""
    s, b = np.asarray(slopes, dtype=float), np.asarray(intercepts, dtype=float)
    top = lambda t: np.max(s * t + b)  # noqa: E731
    scale = 1.0 + np.max(np.abs(b))
    breaks = set()
    for i in range(len(s)):
        for j in range(i + 1, len(s)):
            if s[i] == s[j]:
                continue
            t = (b[j] - b[i]) / (s[i] - s[j])
            if t > 0 and s[i] * t + b[i] >= top(t) - 1e-12 * scale * (1 + t):
                breaks.add(float(t))
    breaks = np.array(sorted(breaks))
    probes = np.concatenate([[0.0], breaks, 2 * breaks[-1:] + 1.0]) if breaks.size else np.array([0.0, 1.0])
    mids = np.concatenate([probes, (probes[:-1] + probes[1:]) / 2])
    on_top = {int(np.lexsort((b, s))[-1])}  # t -> infinity: the steepest (then the highest)
    on_top |= {int(np.argmax(s * t + b)) for t in mids}
    return breaks, np.array(sorted(on_top))


ENVELOPE_SLOTS = 4
"""The least number of slots a table held as data gives its mesh's envelope (:func:`as_data`
with ``envelope``): the breaks and the lines on top are padded to it, or to the next power of
two, so that tables whose envelopes fit share one program. Of 200 random tables of 6 DCs, 88% fit
4 slots and all fit 8 (at most 4 breaks and 5 lines on top; 10 DCs: 5 and 6). Each slot is a
bracket point of every search: a break-even over a K = 6 mesh first ran in 3.0 s with 4 slots,
4.3 s with 8 (compiling; 3.3 s with the table static), then 3 ms a new table."""


def mesh_envelope(links) -> tuple[np.ndarray, np.ndarray]:
    """Where a mesh's pacing link changes as every link scales with the slowest (docs/model.md
    section 15): link l's WAN term is bytes / (B rb_l) + hops l rl_l, so over y = bytes / (B x
    hops x l) the largest is the upper envelope of the lines y / rb_l + rl_l
    (:func:`envelope_breaks`), links in :func:`mesh_pairs` order. Static NumPy, from a concrete
    table.

    Returns (breaks, on_top): the envelope's breaks in y, ascending, and the links on top
    somewhere (indices)."""
    i, j = np.array(mesh_pairs(int(links.K))).T
    rb = np.asarray(links.bandwidth_rel, dtype=float)[i, j]
    rl = np.asarray(links.latency_rel, dtype=float)[i, j]
    return envelope_breaks(1.0 / rb, rl)


class DataLinks(Links):
    """A :class:`Links` whose tables are data under jit: the relative bandwidths and latencies are
    leaves of the scenario, the names (so K) its static part (:func:`flatten`). A new table of
    the same K then runs the program the first one compiled. :func:`as_data` makes one; the
    questions asked of many tables in turn (:func:`bandjax.required_bandwidth`,
    :func:`bandjax.sweep`, the break-evens and what is built on them) take the scenario so.

    ``envelope``: None, or the mesh's envelope (:func:`mesh_envelope`, NaN and -1 padded to
    :data:`ENVELOPE_SLOTS` entries or the next power of two) as two more leaves, found from the concrete
    table where it became data: the break-even's bracket points where the pacing link changes,
    which a search under jit cannot find from traced tables. A plain :class:`Links` stays static
    (its tables constants of the program)."""

    envelope = None


def as_data(sc, envelope: bool = False):
    """``sc`` with its links table held as data under jit (:class:`DataLinks`), with its mesh's
    envelope (``envelope``, :func:`mesh_envelope`) where asked; ``sc`` itself where it has none
    or already holds one (with the envelope, where asked)."""
    links = sc.links
    if links is None or (isinstance(links, DataLinks)
                         and (not envelope or links.envelope is not None)):
        return sc
    tables = flatten(links)[0][:2]
    if envelope:
        breaks, on_top = mesh_envelope(links)
        slots = max(ENVELOPE_SLOTS, 1 << (max(breaks.size, on_top.size) - 1).bit_length())
        tables += (np.concatenate([breaks, np.full(slots - breaks.size, np.nan)]),
                   np.concatenate([on_top, np.full(slots - on_top.size, -1)]))
    return dataclasses.replace(sc, links=unflatten(links.names, tables))


def flatten(links: Links) -> tuple[tuple, tuple[str, ...]]:
    """((bandwidth_rel, latency_rel[, breaks, on_top]), names) of a :class:`DataLinks`: its
    leaves (the envelope's two where it holds one) and static part."""
    envelope = getattr(links, "envelope", None)
    return (links.bandwidth_rel, links.latency_rel, *(envelope or ())), links.names


def unflatten(names: tuple[str, ...], tables) -> DataLinks:
    """A :class:`DataLinks` of ``names`` holding ``tables`` (two, or four with the envelope) as
    they come (traced values, or what a tree map made of them): checked where a table enters
    (:class:`Links`), not here."""
    out = object.__new__(DataLinks)
    object.__setattr__(out, "names", names)
    object.__setattr__(out, "bandwidth_rel", tables[0])
    object.__setattr__(out, "latency_rel", tables[1])
    if len(tables) > 2:
        object.__setattr__(out, "envelope", tuple(tables[2:]))
    return out


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
