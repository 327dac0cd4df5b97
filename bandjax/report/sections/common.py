"""What every report section shares: the typed-section base and the results container, the page's
:class:`View`, formatting, tidy rows, the variant registry's questions, colours and chart helpers.

Section modules (:mod:`bandjax.report.sections`) import this one; it imports none of them.

Views
-----
Each view is computed from the report's one pass of the closed forms (:mod:`bandjax.report.passes`)
and from its typed sections (:class:`Results`): nothing here is typed in. A view holds tidy rows
for the charts, a table, its conclusion (sentences written from the numbers), its assumptions, and
what is not available yet (a section the report was built without: that part is said to be
missing, never filled in).

Rows carry the page's controls (``basis``, ``enob``, ``budget``) as strings; a row whose numbers do
not depend on a control holds ``"*"`` there, so a chart filters ``datum.basis == '*' || datum.basis
== basis`` and a variant that ignores the control is stored once.

Charts
------
Every chart is an Altair (Vega-Lite) spec built from a :class:`View`. The same builder serves both
uses: ``interactive=False`` fixes the page's controls at the scenario's setting (and draws both
steps bases side by side) for a static figure; ``interactive=True`` reads them from Vega signals
(``basis``, ``enob``, ``budget``, and the play position) that the page sets.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import json
import math
from dataclasses import asdict, dataclass, field, fields, MISSING
from typing import ClassVar

import altair as alt
import numpy as np

from ... import variants as _v
from ...metrics import NEVER, NOT_MEASURED
from ...scenario import BASES, Scenario
from ...units import describe_si, significant
from ...units import plain as g6  # a setting as it reads: at most six significant digits
from .. import passes
from ..constants import STATUS
from ..passes import budget_options, enob_label, scenario_budget


# ------------------------------------------------------------------- work started ahead

def start_ahead(ctx: dict, key: str, fn, *args) -> None:
    """Run ``fn(*args)`` in a thread of its own from now on, for :func:`take_ahead` to collect:
    a section's ``start`` hook (called before the report's first section) uses it for work that
    needs nothing from the sections before it. XLA compiles outside Python's lock, so a report
    compiles on both cores where it would compile on one."""
    from concurrent.futures import ThreadPoolExecutor

    close_ahead(ctx, key)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"report-{key}")
    ctx.setdefault("ahead", {})[key] = (executor, executor.submit(fn, *args))


def take_ahead(ctx: dict, key: str):
    """(True, what ``fn`` returned) for work :func:`start_ahead` began (its exception raised
    here), or (False, None) where none was started."""
    started = ctx.get("ahead", {}).pop(key, None)
    if started is None:
        return False, None
    executor, future = started
    try:
        return True, future.result()
    finally:
        executor.shutdown(wait=False)


def close_ahead(ctx: dict, key: str) -> None:
    """Drop work :func:`start_ahead` began and :func:`take_ahead` did not collect (the report
    ended first): not started yet, it never starts; running, it finishes in its thread."""
    started = ctx.get("ahead", {}).pop(key, None)
    if started is not None:
        started[0].shutdown(wait=False, cancel_futures=True)


class Section:
    """What every section shares: its results key, and its JSON both ways.

    ``FLAT`` sections put their fields at the top level of results.json (the core tables and the
    break-evens, as results.json has always held them); the others sit under their ``KEY``.
    """

    KEY: ClassVar[str]
    FLAT: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "KEY" in cls.__dict__:  # a section type: Results knows it from now on
            _TYPES[cls.KEY] = cls

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

        Raises :class:`ResultsFieldError` (a ``ValueError``) naming every key that is missing or
        not known, or the first field that is not what bandjax writes there (its type, a number
        that is not finite, a key or a status not known, a list of another length), with its
        path, its value and what is allowed (:func:`check_fields`, :meth:`inconsistent`)."""
        if cls.FLAT:
            if not any(k in results for k in cls.keys()):
                return None
            src, where = {k: results[k] for k in cls.keys() if k in results}, "results"
        else:
            src, where = results.get(cls.KEY), f"results key {cls.KEY!r}"
            if src is None:
                return None
            if not isinstance(src, dict):
                raise ResultsFieldError(f"{where}: expected an object, got {type(src).__name__}")
        required = [f.name for f in fields(cls)
                    if f.default is MISSING and f.default_factory is MISSING]
        missing = [k for k in required if k not in src]
        unknown = [] if cls.FLAT else [k for k in src if k not in cls.keys()]
        if missing or unknown:
            parts = ([f"missing {', '.join(map(repr, missing))}"] if missing else []) + \
                    ([f"not known {', '.join(map(repr, unknown))}"] if unknown else [])
            raise ResultsFieldError(f"{where} ({cls.__name__} section): {'; '.join(parts)}")
        check_fields(src if cls.FLAT else {cls.KEY: src})
        for problem in cls.inconsistent(src):
            raise ResultsFieldError(f"results field {problem}")
        return cls(**src)

    @classmethod
    def inconsistent(cls, src: dict):
        """Sentences (each "path = value: what is allowed") for fields of ``src`` (this section's
        part of results.json, its types already checked) that disagree with one another: a list
        whose length is not its axis's. None by default."""
        return ()


class ResultsFieldError(ValueError):
    """A results.json field that is not what bandjax writes there (a type, a number that is not
    finite, an unknown key, a status not known, a list of another length)."""


def _schema_words(error) -> str:
    """What a results.json field must be, in words, from the schema rule ``error`` broke."""
    rule, value = error.validator, error.validator_value
    types = {"number": "a number", "integer": "a whole number", "string": "text",
             "boolean": "true or false", "array": "a list", "object": "an object", "null": "null"}
    if rule == "type":
        allowed = [value] if isinstance(value, str) else value
        return "must be " + " or ".join(types.get(v, v) for v in allowed)
    if rule in ("enum", "const"):
        allowed = value if rule == "enum" else [value]
        return "must be one of " + ", ".join(json.dumps(v) for v in allowed)
    if rule in ("minItems", "maxItems"):
        return f"must hold {'at least' if rule == 'minItems' else 'at most'} {value} items"
    bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if rule in bounds:
        return f"must be {bounds[rule]} {g6(value)}"
    return error.message[:160]


def check_fields(values: dict, where: str = "results field") -> None:
    """Raise :class:`ResultsFieldError` naming the first of ``values`` (results.json keys and their
    values, as read) that ``results.schema.json`` does not allow, or that holds a number that is
    not finite (bandjax writes null where there is no number): the field's path, its value as
    given, and what is allowed there. Keys the schema does not describe are not checked here
    (:meth:`Section.read` names an unknown section key)."""
    bad = _not_finite(values, "")
    if bad is not None:
        path, x = bad
        raise ResultsFieldError(f"{where} {path} = {x!r}: must be a finite number "
                                "(null where there is none)")
    validators = _field_validators()
    for key, value in values.items():
        validator = validators.get(key)
        if validator is None:
            continue
        error = _best_error(validator, value)
        if error is None:
            continue
        path = ".".join(str(p) for p in (key, *error.absolute_path))
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = set(error.schema.get("properties", {}))
            extra = sorted(k for k in error.instance if k not in known)
            raise ResultsFieldError(f"{where} {path}.{extra[0]}: not a known key (known: "
                                    f"{', '.join(sorted(known))})")
        if error.validator == "required":
            raise ResultsFieldError(f"{where} {path}: {error.message[:160]}")
        shown = json.dumps(error.instance)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise ResultsFieldError(f"{where} {path} = {shown}: {_schema_words(error)}")


def list_lengths(src: dict, axis: str, tables: tuple[str, ...], prefix: str = ""):
    """Sentences for :meth:`Section.inconsistent`: each list in the tables at ``tables`` (dotted
    paths into ``src``; objects of lists, by variant or by basis and variant) whose length is not
    that of the list at ``axis`` (one item per value along it). A path ``src`` lacks is not
    checked (an optional field)."""
    def at(path):
        x = src
        for k in path.split("."):
            if not isinstance(x, dict) or k not in x:
                return None
            x = x[k]
        return x

    def walk(x, path, n):
        if isinstance(x, list):
            if len(x) != n:
                shown = json.dumps(x)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                yield (f"{prefix}{path} = {shown}: must hold {n} items, one for each of "
                       f"{prefix}{axis} (it holds {len(x)})")
        elif isinstance(x, dict):
            for k, v in x.items():
                yield from walk(v, f"{path}.{k}", n)

    values = at(axis)
    if not isinstance(values, list):
        return
    for path in tables:
        yield from walk(at(path), path, len(values))


def _not_finite(x, path: str):
    """(path, value) of the first float in ``x`` that is NaN or infinite, or None."""
    if isinstance(x, float):
        return None if math.isfinite(x) else (path, x)
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, (list, tuple)) else ()
    for k, v in items:
        hit = _not_finite(v, f"{path}.{k}" if path else str(k))
        if hit is not None:
            return hit
    return None


def _best_error(validator, value):
    import jsonschema

    return jsonschema.exceptions.best_match(validator.iter_errors(value))


@functools.lru_cache(maxsize=1)
def _field_validators() -> dict:
    """results.json key -> a validator of its value, from ``results.schema.json``."""
    import jsonschema

    from importlib import resources

    schema = json.loads(resources.files("bandjax.report").joinpath("results.schema.json")
                        .read_text(encoding="utf-8"))
    return {k: jsonschema.Draft202012Validator({"$defs": schema["$defs"], **sub})
            for k, sub in schema["properties"].items() if k not in ("schema_version", "explained")}


def _json_ready(x):
    """Floats that JSON cannot hold become null (NaN) or the string "inf"."""
    if isinstance(x, dict):
        return {str(k): _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:
        x = x.item()
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


class Results:
    """One report's typed sections, by key; ``None`` for a known section the report was built
    without (``results.cluster`` is the cluster section or None).

    The known sections are every :class:`Section` subclass defined so far, in the order they were
    defined (the order of :data:`bandjax.report.sections.SECTIONS`).
    """

    __slots__ = ("schema_version", "_by_key", "explained")

    def __init__(self, schema_version: int | None = None, *, explained: dict | None = None,
                 **sections):
        unknown = sorted(k for k in sections if k not in _TYPES)
        if unknown:
            raise TypeError(f"Results: no section type with key {', '.join(map(repr, unknown))}")
        object.__setattr__(self, "schema_version", schema_version)
        object.__setattr__(self, "_by_key", {k: v for k, v in sections.items() if v is not None})
        # section key -> {"status": "skipped" | "failed", "why": a sentence}: a section the
        # report holds no results for, and why (results.json's "explained")
        object.__setattr__(self, "explained", dict(explained or {}))

    def __getattr__(self, key):
        if key in _TYPES:
            return self._by_key.get(key)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key, value):
        raise AttributeError("Results is frozen; use with_section")

    def __eq__(self, other):
        return (isinstance(other, Results) and self.schema_version == other.schema_version
                and self._by_key == other._by_key and self.explained == other.explained)

    def __repr__(self):
        return f"Results(schema_version={self.schema_version!r}, sections={list(self._by_key)})"

    @classmethod
    def of(cls, results: "Results | dict | None") -> "Results":
        """``results`` as typed sections: a :class:`Results` as it is, a results dict (as
        results.json holds it) read strictly (each section's :meth:`Section.read`: every field
        checked against results.schema.json before any view draws it), ``None`` as a report with
        no sections."""
        if isinstance(results, Results):
            return results
        results = results or {}
        if not isinstance(results, dict):
            raise ValueError(f"results: expected an object, got {type(results).__name__}")
        types = section_types()
        known = {"schema_version", "explained"} | {k for t in types
                                      for k in (t.keys() if t.FLAT else (t.KEY,))}
        unknown = sorted(k for k in results if k not in known)
        problems = [f"results: keys not known {', '.join(map(repr, unknown))}"] if unknown else []
        sections = {}
        for t in types:
            try:
                sections[t.KEY] = t.read(results)
            except ValueError as e:
                problems.append(str(e))
        explained = results.get("explained") or {}
        if not isinstance(explained, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("why"), str) for v in explained.values()):
            problems.append("results key 'explained': expected an object of "
                            "{section: {\"status\", \"why\"}}")
        else:
            problems += [f"results field explained.{k}.status = {json.dumps(v.get('status'))}: "
                         "must be one of \"skipped\", \"failed\""
                         for k, v in explained.items() if v.get("status") not in ("skipped", "failed")]
        if problems:
            raise ValueError("; ".join(problems))
        return cls(schema_version=results.get("schema_version"), explained=explained, **sections)

    def sections(self) -> list[Section]:
        return [s for s in (self._by_key.get(t.KEY) for t in section_types()) if s is not None]

    def to_json(self) -> dict:
        out: dict = {} if self.schema_version is None else {"schema_version": self.schema_version}
        for s in self.sections():
            out.update(s.to_json())
        if self.explained:
            out["explained"] = {k: dict(v) for k, v in self.explained.items()}
        return out

    def names(self) -> dict[str, str]:
        """Variant id -> short label from the core section's setup (empty without it)."""
        core = self._by_key.get("core")
        return core.names() if core else {}

    def with_section(self, section: Section) -> "Results":
        return Results(self.schema_version, explained=self.explained,
                       **{**self._by_key, section.KEY: section})

    def with_explained(self, key: str, status: str, why: str) -> "Results":
        """These results with section ``key`` said to be ``status`` ("skipped" or "failed")
        for the reason ``why`` (a sentence), in its place."""
        return Results(self.schema_version, explained={**self.explained,
                                                       key: {"status": status, "why": why}},
                       **self._by_key)


_TYPES: dict[str, type[Section]] = {}


def section_types() -> tuple[type[Section], ...]:
    """Every typed section defined so far, in the order defined."""
    return tuple(_TYPES.values())


ANY = "*"

CONTROLS = ("enob", "budget", "basis")


_REGISTRY: contextvars.ContextVar = contextvars.ContextVar("registry", default=_v.VARIANTS)


@contextlib.contextmanager
def registry(sc: Scenario):
    """Names and colours are looked up in ``sc``'s variants while the block runs."""
    token = _REGISTRY.set(sc.variants)
    try:
        yield
    finally:
        _REGISTRY.reset(token)


def variants() -> tuple[_v.Variant, ...]:
    """The variants of the scenario being drawn (see :func:`registry`)."""
    return _REGISTRY.get()


def variant(vid: str) -> _v.Variant:
    return _v.get(vid, variants())


@dataclass
class View:
    """One section of the page: data for its charts and the words around them."""

    key: str
    title: str
    data: dict = field(default_factory=dict)  # name -> list of row dicts (or other JSON)
    table: dict | None = None  # {"columns": [...], "rows": [[...], ...], "caption": str}
    conclusion: list[str] = field(default_factory=list)  # at the scenario's setting
    # the conclusion at each setting of the controls ("enob|budget|basis" -> sentences), for a
    # section whose conclusion depends on them; the page shows the one the controls select
    by_setting: dict[str, list[str]] = field(default_factory=dict)
    settled: list[str] = field(default_factory=list)  # sentences that hold at every setting

    def say(self, sentence: str) -> None:
        """A conclusion that does not depend on the controls."""
        self.conclusion.append(sentence)
        self.settled.append(sentence)

    def lacks(self, what: str, key: str) -> None:
        """``what`` is missing: the results have no ``key`` (said, never filled in)."""
        self.missing.append(f"{what}: not available yet (results key {key}).")
    assumptions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # under the charts: what a chart hides


def coinciding(rows: list[dict], x: str, y: str, by: str = "short",
               rel: float = 1e-12) -> list[list[str]]:
    """Groups of ``by`` (variants, in the rows' order) whose curves ``y`` against ``x`` coincide:
    the same ``x`` values and ``y`` equal within ``rel`` (relative) at every one, so one line
    is drawn over the others. Groups of two or more only."""
    curves: dict = {}
    for r in rows:
        curves.setdefault(r[by], {})[r[x]] = r[y]
    groups: list[list[str]] = []
    for name, c in curves.items():
        for g in groups:
            other = curves[g[0]]
            if other.keys() == c.keys() and all(
                    abs(c[k] - other[k]) <= rel * max(abs(c[k]), abs(other[k])) for k in c):
                g.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]


def coinciding_note(groups: list[list[str]], along: str) -> list[str]:
    """A sentence per group of :func:`coinciding`: which curves one line shows."""
    return [f"{_and(g)} coincide (equal at every {along} drawn): one line shows "
            f"{'both' if len(g) == 2 else 'all of them'}." for g in groups]


def baseline() -> str:
    """The variant others are measured against: the first dense one in the registry."""
    return next((v.id for v in variants() if v.payload == "dense"), variants()[0].id)


def is_band(vid: str) -> bool:
    return variant(vid).payload.startswith("band")


def short(vid: str) -> str:
    return variant(vid).short


def name(vid: str) -> str:
    """The legend name of a variant: its short label and what it does."""
    return legend_name(variant(vid))


# Characters that mean something in markdown or HTML; text from a scenario (variant names) that
# holds one is escaped before it goes into results.md (the page escapes its own, see explorer).
MD_SIGNIFICANT = "\\`*_[]<>|~&"


def md_text(text: str) -> str:
    """``text`` as results.md shows it literally: ``&``, ``<``, ``>`` as HTML entities (no tag or
    comment can open), the other markdown characters of :data:`MD_SIGNIFICANT` backslashed."""
    out = []
    for ch in text:
        if ch in "&<>":
            out.append({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[ch])
        elif ch in MD_SIGNIFICANT:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def user_names(results: dict) -> list[str]:
    """Every text a scenario's author chose that results.json repeats in its sentences and
    tables: variant short labels and labels, and DC names (the links table's and the cluster
    section's rows). Each output escapes these at its own boundary (:func:`md_escaped`)."""
    setup = results.get("setup") if isinstance(results.get("setup"), dict) else {}
    variants = setup.get("variants") if isinstance(setup.get("variants"), dict) else {}
    names = [v.get(k) for v in variants.values() if isinstance(v, dict) for k in ("short", "label")]
    scenario = setup.get("scenario") if isinstance(setup.get("scenario"), dict) else {}
    links = scenario.get("links") if isinstance(scenario.get("links"), dict) else {}
    names += links.get("names") or [] if isinstance(links.get("names"), list) else []
    for table in (links.get("pairs"), (results.get("cluster") or {}).get("links")
                  if isinstance(results.get("cluster"), dict) else None):
        for row in table if isinstance(table, list) else ():
            if isinstance(row, dict):
                names += [row.get("from"), row.get("to")]
    return [n for n in names if isinstance(n, str)]


def md_escaped(results: dict, names) -> dict:
    """A copy of a results dict in which every occurrence of one of ``names`` (variant labels and
    DC names from a scenario, :func:`user_names`) that holds a markdown or HTML character is :func:`md_text`-escaped, in every
    string value (keys are left: they are ids, which hold none)."""
    names = sorted({n for n in names if isinstance(n, str) and any(c in MD_SIGNIFICANT for c in n)},
                   key=len, reverse=True)
    if not names:
        return results
    import re

    pattern = re.compile("|".join(re.escape(n) for n in names))

    def walk(x):
        if isinstance(x, str):
            return pattern.sub(lambda m: md_text(m.group(0)), x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return walk(results)


def legend_name(v: _v.Variant) -> str:
    return v.short if v.short == v.label else f"{v.short}: {v.label}"


def fmt_s(x) -> str:
    """Seconds with three significant digits (ms below one second would hide the scale)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "not available"
    if x == math.inf or x == "inf":
        return "never"
    return f"{g3(x)} s"


def fmt_ms(x, digits: int = 4) -> str:
    return f"{float(x) * 1e3:.{digits}g} ms"


def g3(x) -> str:
    """Three significant digits, thousands written out (1,000 rather than 1e+03)."""
    return significant(x, 3)


def g4(x) -> str:
    """Four significant digits (a table's), thousands written out."""
    return significant(x, 4)


def count(x) -> str:
    """A parameter count: 7.92 M, 8.03 B."""
    x = float(x)
    for unit, f in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= f:
            return f"{g3(x / f)} {unit}"
    return g6(x)


def fmt_value(x, units: str) -> str:
    """A parameter's value in SI ``units`` (an inverse change's current or needed value), 4
    significant figures in the unit a reader reads it in; ``-`` where there is none, ``[free]``
    for an infinite budget."""
    if x is None:
        return "-"
    if x in ("inf", math.inf):
        return "[free]"
    return x if isinstance(x, str) else describe_si(x, units)


def fmt_GBps(x) -> str:
    return f"{g3(x)} GB/s ({g3(8 * float(x))} Gb/s)"


def _num(x, sig: int = 7):
    """A JSON number rounded to ``sig`` significant digits, or None for NaN/inf."""
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{sig}g}")


def controls(sc: Scenario) -> dict:
    """The page's controls: options and the scenario's own setting (the default)."""
    enobs = passes.enob_options(sc)
    return {
        "basis": {"options": [[b, f"{b} basis"] for b in BASES], "value": "hypothesis"},
        "enob": {"options": [[e, f"ENOB {e} bits"] for e in enobs], "value": enob_label(sc.enob)},
        "budget": {"options": [[lab, disp] for lab, _, disp in budget_options(sc)],
                   "value": scenario_budget(sc)},
    }


def setting_text(sc: Scenario) -> str:
    disp = dict((lab, d) for lab, _, d in budget_options(sc))[scenario_budget(sc)]
    return f"ENOB {enob_label(sc.enob)} bits, module budget {disp}"


def _labels(sc: Scenario) -> dict[str, list[str]]:
    c = controls(sc)
    return {k: [o[0] for o in c[k]["options"]] for k in CONTROLS}


def settings(sc: Scenario) -> list[dict]:
    """Every setting of the controls, as {"enob", "budget", "basis"} labels."""
    labels = _labels(sc)
    return [dict(zip(CONTROLS, combo)) for combo in itertools.product(*(labels[c] for c in CONTROLS))]


def setting_key(at: dict) -> str:
    return "|".join(at[c] for c in CONTROLS)


def _conclude(view: View, sc: Scenario, words) -> None:
    """Fill ``view.by_setting`` with ``words(at)`` at every setting, and ``view.conclusion`` with
    the words at the scenario's setting: the hypothesis basis's, then the exact basis's that differ."""
    view.by_setting = {setting_key(at): words(at) for at in settings(sc)}
    hyp = view.by_setting[setting_key(_at(sc, "hypothesis"))]
    exa = view.by_setting[setting_key(_at(sc, "exact"))]
    view.conclusion += ([s if s in exa else _tagged(s, "hypothesis basis") for s in hyp]
                        + [_tagged(s, "exact basis") for s in exa if s not in hyp])


def _conclude_by_basis(view: View, sc: Scenario, words: dict[str, list[str]]) -> None:
    """As :func:`_conclude` for a section only the basis control moves: ``words`` per basis."""
    view.by_setting = {setting_key(at): words[at["basis"]] for at in settings(sc)}
    view.conclusion = ([s if s in words[BASES[1]] else _tagged(s, f"{BASES[0]} basis")
                        for s in words[BASES[0]]]
                       + [_tagged(s, f"{BASES[1]} basis") for s in words[BASES[1]]
                          if s not in words[BASES[0]]])


def _tagged(sentence: str, tag: str) -> str:
    """``sentence`` with ``tag`` in its closing parenthesis, or a new one."""
    if sentence.endswith(")."):
        return f"{sentence[:-2]}; {tag})."
    return f"{sentence[:-1]} ({tag})."


def _depends(arrays: list[np.ndarray], axis: int) -> bool:
    for a in arrays:
        first = np.take(a, [0], axis=axis)
        if not np.array_equal(a, np.broadcast_to(first, a.shape), equal_nan=True):
            return True
    return False


def tidy(sc: Scenario, ds, x_dims: tuple[str, ...], values: dict, extra=None) -> list[dict]:
    """Rows of ``ds`` (dims ``x_dims`` + enob, budget, basis, variant [+ inner]) for the charts.

    ``values``: row key -> function(dataset at one variant) returning an array over x_dims +
    controls (+ inner dims, enumerated into the rows by ``extra``: name -> coordinate values).
    A control the variant's numbers do not depend on is stored once, as ``"*"``.
    """
    labels = _labels(sc)
    ds = ds.transpose(*x_dims, *CONTROLS, "variant", ...)
    rows = []
    nx = len(x_dims)
    for k, vid in enumerate(sc.ids):
        dv = ds.isel(variant=k)
        arrays = {key: np.asarray(fn(dv)) for key, fn in values.items()}
        dep = [_depends(list(arrays.values()), nx + j) for j in range(len(CONTROLS))]
        ctl_ranges = [range(len(labels[c])) if d else [0] for c, d in zip(CONTROLS, dep)]
        for xi in itertools.product(*(range(ds.sizes[d]) for d in x_dims)):
            for ci in itertools.product(*ctl_ranges):
                row = {"variant": vid, "short": short(vid)}
                for d, i in zip(x_dims, xi):
                    row[d] = ds[d].values[i].item() if ds[d].ndim else ds[d].item()
                for c, d, i in zip(CONTROLS, dep, ci):
                    row[c] = labels[c][i] if d else ANY
                if extra:
                    inner_name, inner_values = extra
                    for j, inner in enumerate(inner_values):
                        r = dict(row, **{inner_name: inner})
                        for key, a in arrays.items():
                            r[key] = _num(a[(*xi, *ci, j)])
                        rows.append(r)
                else:
                    for key, a in arrays.items():
                        val = a[(*xi, *ci)]
                        row[key] = STATUS[int(val)] if key == "status" else _num(val)
                    rows.append(row)
    return rows


def pick(rows, **sel) -> list[dict]:
    """Rows matching ``sel``; a row holding ``"*"`` for a control matches any value of it."""
    # (a loop over the tests rather than all() of a generator: a page's words scan some hundred
    # thousand rows' values, and the generator's frames were most of it)
    tests = [(k, v, k in CONTROLS) for k, v in sel.items()]
    out = []
    for r in rows:
        for k, v, control in tests:
            x = r.get(k)
            if not (x == v or (control and x == ANY)):
                break
        else:
            out.append(r)
    return out


class Picker:
    """:func:`pick` over the same rows many times: ``first(**sel)`` is ``pick(rows, **sel)[0]``
    (None where none matches) for ``sel`` naming every control, from an index of the rows by
    their controls' values (a row holding ``"*"`` matches any value) built once."""

    def __init__(self, rows):
        self._rows = list(rows)
        self._index: dict = {}
        for n, r in enumerate(self._rows):
            self._index.setdefault(tuple(r.get(c) for c in CONTROLS), n)

    def first(self, **sel):
        if set(sel) != set(CONTROLS):  # not every control named: the plain scan
            found = pick(self._rows, **sel)
            return found[0] if found else None
        at = [n for key in itertools.product(*((sel[c], ANY) for c in CONTROLS))
              if (n := self._index.get(key)) is not None]
        return self._rows[min(at)] if at else None


def _at(sc: Scenario, basis: str = "hypothesis") -> dict:
    return {"enob": enob_label(sc.enob), "budget": scenario_budget(sc), "basis": basis}


def _winner(rows, key="t_s"):
    """(name, value) of the row with the smallest finite ``key``; None if there is none."""
    ok = [r for r in rows if r.get(key) is not None]
    if not ok:
        return None
    r = min(ok, key=lambda r: r[key])
    return r["short"], r[key]


STATUS_WORDS = {STATUS[NEVER]: "never reaches the target", STATUS[NOT_MEASURED]: "not measured"}


def _and(names: list[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _bar_rows(rows):
    """Bars: E' (whose steps depend on the basis) appears once per basis."""
    for r in rows:
        r["bar"] = r["short"] if r["basis"] == ANY else f"{r['short']} ({r['basis'][:3]}.)"
    return rows


WIDTH = 560  # one panel, px


HEIGHT = 300


# Variant colours, by position in the registry, the same on every chart: Tableau 10's, then
# Tableau 20's lighter ones, so twenty variants each get their own.
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b79a20", "#e45756", "#b279a2", "#72b7b2", "#ff9da6",
           "#9d755d", "#bab0ac", "#9ecae9", "#ffbf79", "#88d27a", "#f2cf5b", "#ff9d98", "#d6a5c9",
           "#83bcb6", "#fcbfd2", "#d8b5a5", "#79706e")


PADDING_PX = 10


def variant_colors(registry: tuple[_v.Variant, ...] | None = None) -> dict[str, str]:
    """Short label -> colour, in the registry's order: each variant's own ``colour`` (a position in
    :data:`PALETTE`), or, where an earlier variant holds that one, the next one free."""
    taken, out = set(), {}
    for v in variants() if registry is None else registry:
        k = v.colour % len(PALETTE)
        while k in taken and len(taken) < len(PALETTE):
            k = (k + 1) % len(PALETTE)
        taken.add(k)
        out[v.short] = PALETTE[k]
    return out


def vl_version() -> str:
    """The Vega-Lite version Altair writes specs for, as vl-convert names it ("6.4")."""
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


def _sel(sc: Scenario, interactive: bool, basis: str | None = None) -> dict:
    """Control -> Vega expression: a signal name on the page, a literal in a static figure."""
    if interactive:
        return {c: c for c in CONTROLS}
    at = _at(sc, basis or "hypothesis")
    return {c: json.dumps(at[c]) for c in CONTROLS}


def _filter(sel: dict, controls=CONTROLS) -> str:
    return " && ".join(f"(datum.{c} === '*' || datum.{c} === {sel[c]})" for c in controls)


def _params(interactive: bool, sc: Scenario, extra=()):
    if not interactive:
        return []
    ctl = controls(sc)
    return [alt.param(name=c, value=ctl[c]["value"]) for c in CONTROLS] + list(extra)


def _variant_color(field="short"):
    """Colour by variant; every layer carries the same legend definition, so Vega-Lite merges
    them into one legend."""
    colors = variant_colors()
    return alt.Color(f"{field}:N", title="variant",
                     scale=alt.Scale(domain=list(colors), range=list(colors.values())),
                     legend=alt.Legend(labelExpr=_label_expr(), labelLimit=360))


def _label_expr() -> str:
    """Legend labels: the short name expanded to what the variant does."""
    names = {v.short: legend_name(v) for v in variants()}
    return f"{json.dumps(names)}[datum.label] || datum.label"


def _fitted(rows, key, sc: Scenario, interactive: bool, basis: str | None = None,
            include=()) -> alt.Scale:
    """A log scale whose domain is [min, max] of ``key`` over the rows the controls select (and
    ``include``), padded so no mark sits on an edge. On the page the domain is looked up by the
    controls' signals from a table of every setting's, so a setting with nothing to draw (a variant
    that never reaches the target) gets the axes of [1/2, 2] x a lone value rather than an empty extent."""
    def domain(at):
        values = [r[key] for r in pick(rows, **at) if r.get(key) is not None and r[key] > 0]
        values += list(include)
        lo, hi = (min(values), max(values)) if values else (1.0, 1.0)
        return [lo, hi] if hi > lo else [lo / 2, hi * 2]

    if interactive:
        table = {setting_key(at): domain(at) for at in settings(sc)}
        key = " + '|' + ".join(CONTROLS)  # the signals, joined as setting_key does
        expr = f"{json.dumps(table)}[{key}]"
        return alt.Scale(type="log", domain=alt.ExprRef(expr=expr), nice=False, padding=PADDING_PX)
    return alt.Scale(type="log", domain=domain(_at(sc, basis or "hypothesis")), nice=False,
                     padding=PADDING_PX)


def _log_x(title, domain=None):
    return alt.X("GBps:Q", title=title,
                 scale=alt.Scale(type="log", domain=list(domain) if domain else alt.Undefined),
                 axis=alt.Axis(format="~g", grid=True))


def _finish(chart, title: str | None = None, legend: str = "right"):
    """``chart``, just built, with the figures' fonts and its legends' place (set here only, so
    the page can move them below a narrow chart), set on it in place: Altair's ``configure_*``
    copy a chart, and a copy of a layered or concatenated chart copies all its parts again."""
    chart.config = alt.Config(
        axis=alt.AxisConfig(labelFontSize=13, titleFontSize=14),
        legend=alt.LegendConfig(labelFontSize=13, titleFontSize=13, orient=legend,
                                **({"direction": "vertical"} if legend == "bottom" else {})),
        header=alt.HeaderConfig(labelFontSize=13),
        title=alt.TitleConfig(fontSize=15, anchor="start"))
    if title:
        chart = chart.properties(title=title)
    return chart


def _hconcat_bases(build) -> alt.HConcatChart:
    """``build(basis)`` for each steps basis, side by side, each titled with its basis (set in
    place on the chart just built: ``properties`` would copy it, parts and all)."""
    panels = []
    for b in BASES:
        panel = build(b)
        panel.title = f"{b} basis"
        panels.append(panel)
    return alt.hconcat(*panels, spacing=30)


def to_spec(chart, datasets: dict) -> dict:
    """The Vega-Lite spec of ``chart`` with its named datasets filled in.

    Not checked against Vega-Lite's JSON schema here (that check took half the time of making
    the spec): the charts are ours, and the figure and page tests draw every one of them."""
    spec = chart.to_dict(validate=False)
    spec["datasets"] = {k: v for k, v in datasets.items()}
    return spec


def _basis_filter(sel: dict) -> str:
    return f"(datum.basis === '*' || datum.basis === {sel['basis']})"


def basis_dependent(sc: Scenario) -> tuple[str, ...]:
    """Variants whose steps to target depend on the steps basis, read from the scenario's steps."""
    enobs = sc.steps.measured_enobs(registry=sc.variants) or (float(sc.enob),)

    def differs(vid, e):
        a, b = (sc.steps.lookup(vid, float(e), basis, sc.variants) for basis in BASES)
        return not (a == b or (math.isnan(a) and math.isnan(b)))
    return tuple(v.id for v in sc.variants if any(differs(v.id, e) for e in enobs))


def bar_order(sc: Scenario) -> list[str]:
    """Bars in registry order; a variant whose steps depend on the basis has one bar per basis."""
    both = basis_dependent(sc)
    out = []
    for vid in sc.ids:
        out += [f"{short(vid)} (hyp.)", f"{short(vid)} (exa.)"] if vid in both else [short(vid)]
    return out
