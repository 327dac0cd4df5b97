"""The report's sections as typed objects, and results.json as their JSON.

Each section of a report is computed once into one frozen dataclass below; results.json, results.md,
the figures and the explorer page only render it. :class:`Results` holds one report's sections
and reads a results dict (a results.json) back into them, strictly: a key that a section lacks, or
one it does not know, is an error that names it, never a part silently "not available". A section
that is absent altogether (a report built without it) is ``None``, and the page says so.

Values inside a section are JSON-ready (floats, strings, lists, dicts keyed by variant id, basis or
budget); their units are in the field's name or in the docstring. The JSON Schema
(``results.schema.json``) states the same contract for readers outside Python.

No jax here: reading a results.json back needs none.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, asdict, dataclass, fields
from typing import ClassVar


class Section:
    """What every section shares: its results key, and its JSON both ways.

    ``FLAT`` sections put their fields at the top level of results.json (the core tables and the
    break-evens, as results.json has always held them); the others sit under their ``KEY``.
    """

    KEY: ClassVar[str]
    FLAT: ClassVar[bool] = False

    def to_json(self) -> dict:
        """The section's part of results.json (a deep copy: no value is shared with the object);
        an optional field that is not set (None by default, and None) is left out."""
        optional = {f.name for f in fields(self) if f.default is None}
        d = {k: v for k, v in asdict(self).items() if not (k in optional and v is None)}
        return d if self.FLAT else {self.KEY: d}

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def read(cls, results: dict):
        """The section from a results dict, ``None`` where the results do not hold it.

        Raises ``ValueError`` naming every key that is missing or not known."""
        if cls.FLAT:
            if not any(k in results for k in cls.keys()):
                return None
            src, where = {k: results[k] for k in cls.keys() if k in results}, "results"
        else:
            src, where = results.get(cls.KEY), f"results key {cls.KEY!r}"
            if src is None:
                return None
            if not isinstance(src, dict):
                raise ValueError(f"{where}: expected an object, got {type(src).__name__}")
        required = [f.name for f in fields(cls)
                    if f.default is MISSING and f.default_factory is MISSING]
        missing = [k for k in required if k not in src]
        unknown = [] if cls.FLAT else [k for k in src if k not in cls.keys()]
        if missing or unknown:
            parts = ([f"missing {', '.join(map(repr, missing))}"] if missing else []) + \
                    ([f"not known {', '.join(map(repr, unknown))}"] if unknown else [])
            raise ValueError(f"{where} ({cls.__name__} section): {'; '.join(parts)}")
        return cls(**src)


@dataclass(frozen=True)
class Core(Section):
    """Setup, step times and stages, times to target, hot spots, energy, model size and syncing
    every H steps (docs/model.md sections 2 to 9). Dicts are keyed by variant id, then budget
    ("free", "low", "high") or basis ("hypothesis", "exact"); units are in ``units``."""

    KEY: ClassVar[str] = "core"
    FLAT: ClassVar[bool] = True

    target_loss: float
    setup: dict  # the scenario (as its TOML), workers, WAN in GB/s and Gb/s, budgets, variants
    units: dict
    assumptions: dict
    step_ms: dict  # [variant][budget] ms
    stages_ms: dict  # [stage] ms at [free]; compute [budget] ms; binding [budget] stage
    budget_break_even_GFLOPs: float
    bytes_per_worker: dict  # [variant] B per step
    wan_bytes_per_step: dict  # [variant] B per step
    compute_share: dict  # [variant] share of the step at [free]
    time_to_target_s: dict  # [basis][variant] s (None: none)
    steps_to_target: dict  # [basis][variant] steps ("never", None)
    hot_spots: dict  # [variant][budget][component] share of the step
    energy: dict  # per_step_J [variant][budget][part]; to_target_kJ [basis][variant][budget]
    model_size: dict  # [preset] params, step_ms, time_to_target_s
    sync_every_H: dict  # H, assumption, step_ms, time_to_target_s along H
    by_enob: dict  # enob, step_ms, time_to_target_s, status along the measured ENOBs

    def names(self) -> dict[str, str]:
        """Variant id -> short label, as the report names variants."""
        return {vid: v["short"] for vid, v in self.setup["variants"].items()}


@dataclass(frozen=True)
class BreakEvens(Section):
    """Where variants break even (docs/model.md section 10): bandwidth crossings (GB/s) per pair
    and basis, the same at each budget, the lowest ENOB that still wins, the budget above which
    the module's compute stops binding, elasticities and the smallest change that makes a
    variant win."""

    KEY: ClassVar[str] = "breakeven"
    FLAT: ClassVar[bool] = True

    break_even_range_GBps: list  # [lo, hi]
    break_even_GBps: list  # {a, b, basis, GBps, winner_below, winner_above, winners, status, budget}
    break_even_GBps_by_budget: list
    enob_break_even: list  # {a, b, basis, GBps, enob}
    budget_break_even: dict
    sensitivity: list
    inverse: list


@dataclass(frozen=True)
class Cluster(Section):
    """K data centres and the WAN topology (docs/model.md section 13). ``time_to_target_s[basis]
    [variant]``: [K][topology] in s (None: no time, never reaches the target or not measured);
    ``winner[basis]``: [K][topology] variant ids; ``break_even_GBps``: one entry per compared pair
    and basis with [K][topology] lists of crossings in GB/s."""

    KEY: ClassVar[str] = "cluster"

    dcs: list[int]
    topologies: list[str]
    wan_GBps: float
    latency_ms: float
    time_to_target_s: dict
    winner: dict
    break_even_GBps: list[dict]
    conclusions: list[str]


@dataclass(frozen=True)
class SharedWan(Section):
    """The step on a WAN shared with other jobs, from the event engine (docs/model.md sections 11
    and 13): per variant, lists along ``loads`` (ms; growth against load 0; utilisation shares),
    the queueing approximation beside them, load-0 runs that must sit on the closed forms, and a
    trace of the first steps."""

    KEY: ClassVar[str] = "shared_wan"

    seed: int
    loads: list
    steps: int
    seeds: int
    bandwidth_GBps: float
    dcs: int
    topology: str
    links: int
    step_ms: dict  # [variant] along loads, seed 0
    mean_step_ms: dict | None  # [variant] along loads, mean over seeds
    ci95_ms: dict  # [variant] [lo, hi] along loads
    growth: dict | None  # [variant] mean step / the load-0 closed-form step
    approx_step_ms: dict | None
    p95_ms: dict
    wan_utilisation: dict
    wan_utilisation_max: dict
    approx_accuracy: float | None
    approx_accuracy_basis: str | None
    approx_accuracy_by_cluster: list
    approx_max_rel_err: float | None
    load0_points: list  # {variant, GBps, step_ms, time_to_target_s, basis}
    load0_max_rel_err: float | None
    trace: dict


@dataclass(frozen=True)
class Uncertainty(Section):
    """How sure the answers are: the single-seed steps that rules take and the pairs they decide;
    with uncertain inputs, each compared pair's break-even intervals (GB/s) and the probability
    that its first variant wins along ``bandwidth_GBps``."""

    KEY: ClassVar[str] = "uncertainty"

    point_values: bool
    weakest_input: list
    wan_GBps: float
    short: dict  # variant id -> short label
    inputs: list | None = None  # only with uncertain inputs, as are the fields below
    samples: int | None = None
    seed: int | None = None
    bandwidth_GBps: list | None = None
    break_even_GBps: list | None = None


@dataclass(frozen=True)
class Headline(Section):
    """Who wins at the scenario (s), where the winner changes over bandwidth (GB/s), and the
    smallest change that would make the in-transit band win, per basis."""

    KEY: ClassVar[str] = "headline"

    wan_GBps: float
    winner: dict  # [basis] {variant, time_to_target_s}
    changes: dict  # [basis] [{from, to, GBps}]
    smallest_change: dict  # [basis] {a, b, parameter, current, required, ratio, units, status}


@dataclass(frozen=True)
class Figures(Section):
    """The figures written (paths relative to the report folder) and, per page section, the words
    printed beside them."""

    KEY: ClassVar[str] = "figures"
    FLAT: ClassVar[bool] = True

    figures: list  # {id, section, title, svg, png}
    figure_sections: list | None = None  # {section, title, conclusion, ...}; with figures


SECTION_TYPES: tuple[type[Section], ...] = (Core, BreakEvens, Cluster, SharedWan, Uncertainty,
                                             Headline, Figures)


@dataclass(frozen=True)
class Results:
    """One report's sections; ``None`` for a section the report was built without."""

    schema_version: int | None = None
    core: Core | None = None
    breakeven: BreakEvens | None = None
    cluster: Cluster | None = None
    shared_wan: SharedWan | None = None
    uncertainty: Uncertainty | None = None
    headline: Headline | None = None
    figures: Figures | None = None

    @classmethod
    def of(cls, results: "Results | dict | None") -> "Results":
        """``results`` as typed sections: a :class:`Results` as it is, a results dict (as
        results.json holds it) read strictly, ``None`` as a report with no sections."""
        if isinstance(results, Results):
            return results
        results = results or {}
        if not isinstance(results, dict):
            raise ValueError(f"results: expected an object, got {type(results).__name__}")
        known = {"schema_version"} | {k for t in SECTION_TYPES
                                      for k in (t.keys() if t.FLAT else (t.KEY,))}
        unknown = sorted(k for k in results if k not in known)
        problems = [f"results: keys not known {', '.join(map(repr, unknown))}"] if unknown else []
        sections = {}
        for t in SECTION_TYPES:
            try:
                sections[t.KEY] = t.read(results)
            except ValueError as e:
                problems.append(str(e))
        if problems:
            raise ValueError("; ".join(problems))
        return cls(schema_version=results.get("schema_version"), **sections)

    def sections(self) -> list[Section]:
        return [s for s in (getattr(self, t.KEY) for t in SECTION_TYPES) if s is not None]

    def to_json(self) -> dict:
        out: dict = {} if self.schema_version is None else {"schema_version": self.schema_version}
        for s in self.sections():
            out.update(s.to_json())
        return out

    def names(self) -> dict[str, str]:
        """Variant id -> short label from the core section's setup (empty without it)."""
        return self.core.names() if self.core else {}

    def with_section(self, section: Section) -> "Results":
        return dataclasses.replace(self, **{section.KEY: section})
