"""The numbers behind the explorer page and the report's figures, one view per section.

Each view is computed from the report's one pass of the closed forms (:mod:`.passes`) and from
its typed sections (:class:`.sections.Results`: break-evens, the shared-WAN engine, the cluster):
nothing here is typed in. A view holds tidy rows for the charts, a table, its conclusion (sentences
written from the numbers), its assumptions, and what is not available yet (a section the report
was built without: that part is said to be missing, never filled in).

Rows carry the page's controls (``basis``, ``enob``, ``budget``) as strings; a row whose numbers do
not depend on a control holds ``"*"`` there, so a chart filters ``datum.basis == '*' || datum.basis
== basis`` and a variant that ignores the control is stored once.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .. import names as _names
from .. import variants as _v
from ..grid import sweep
from ..metrics import NEVER, NOT_MEASURED
from ..scenario import BASES, PRESETS, Scenario
from ..step import STAGES, budget_break_even_FLOPs
from . import passes
from .constants import BANDWIDTH_RANGE_GBps, ENERGY_PARTS, H_VALUES, POINTS_PER_DECADE, STATUS
from .passes import Sweeps, bandwidth_grid_GBps, budget_options, enob_label, scenario_budget
from .sections import Cluster, Results, Uncertainty

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


# ------------------------------------------------------------------------------ the registry
# What the views ask of the variant registry, answered from the variants' fields and the
# scenario's steps, never from a variant's id.


def comparison_pairs() -> list[tuple[str, str]]:
    """Pairs the break-even view compares: each in-transit variant against each that is not."""
    vs = variants()
    return [(a.id, b.id) for a in vs if a.in_transit for b in vs if not b.in_transit]


def baseline() -> str:
    """The variant others are measured against: the first dense one in the registry."""
    return next((v.id for v in variants() if v.payload == "dense"), variants()[0].id)


def basis_dependent(sc: Scenario) -> tuple[str, ...]:
    """Variants whose steps to target depend on the steps basis, read from the scenario's steps."""
    enobs = sc.steps.measured_enobs(registry=sc.variants) or (float(sc.enob),)

    def differs(vid, e):
        a, b = (sc.steps.lookup(vid, float(e), basis, sc.variants) for basis in BASES)
        return not (a == b or (math.isnan(a) and math.isnan(b)))
    return tuple(v.id for v in sc.variants if any(differs(v.id, e) for e in enobs))


def is_band(vid: str) -> bool:
    return variant(vid).payload.startswith("band")


# ------------------------------------------------------------------------------ formatting


def short(vid: str) -> str:
    return variant(vid).short


def name(vid: str) -> str:
    """The legend name of a variant: its short label and what it does."""
    return legend_name(variant(vid))


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
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def count(x) -> str:
    """A parameter count: 7.92 M, 8.03 B."""
    x = float(x)
    for unit, f in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= f:
            return f"{x / f:.3g} {unit}"
    return f"{x:g}"


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


# ------------------------------------------------------------------------------ tidy rows


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
    out = []
    for r in rows:
        if all(r.get(k) in (v, ANY) if k in CONTROLS else r.get(k) == v for k, v in sel.items()):
            out.append(r)
    return out


def _at(sc: Scenario, basis: str = "hypothesis") -> dict:
    return {"enob": enob_label(sc.enob), "budget": scenario_budget(sc), "basis": basis}


def _winner(rows, key="t_s"):
    """(name, value) of the row with the smallest finite ``key``; None if there is none."""
    ok = [r for r in rows if r.get(key) is not None]
    if not ok:
        return None
    r = min(ok, key=lambda r: r[key])
    return r["short"], r[key]


# ------------------------------------------------------------------------------ 1. bandwidth


def _segments(rows_at_setting, grid) -> list[tuple[str, float, float]]:
    """(winner, from GB/s, to GB/s) along the grid."""
    by_i: dict[int, list] = {}
    for r in rows_at_setting:
        by_i.setdefault(r["i"], []).append(r)
    segs: list[list] = []
    for i in range(len(grid)):
        w = _winner(by_i.get(i, []))
        w = w[0] if w else "none"
        if segs and segs[-1][0] == w:
            segs[-1][2] = grid[i]
        else:
            segs.append([w, grid[i], grid[i]])
    return [tuple(s) for s in segs]


def bandwidth_view(sc: Scenario, results: Results | dict | None, sw: Sweeps | None = None) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    sw = passes.compute(sc) if sw is None else sw
    grid = bandwidth_grid_GBps(sc)
    ds = sw.bandwidth
    rows = tidy(sc, ds, ("bandwidth",), {
        "t_s": lambda d: d.time_to_target_s, "status": lambda d: d.status,
        "step_ms": lambda d: d.step_s * 1e3})
    position = {float(g): i for i, g in enumerate(grid)}
    for r in rows:
        r["i"] = position[float(r["bandwidth"])]
        r["GBps"] = _num(r.pop("bandwidth"))
    wan = float(sc.wan_Bps) / 1e9
    i0 = int(np.argmin(np.abs(grid - wan)))
    view = View("bandwidth", "Time to target against WAN bandwidth")
    view.data = {"curves": rows, "grid_GBps": [_num(g) for g in grid], "start": i0,
                 "scenario_GBps": _num(wan), "dots": []}

    _conclude(view, sc, lambda at: _bandwidth_words(rows, grid, i0, at))
    points = results.shared_wan.load0_points if results.shared_wan else None
    if points:
        dots, dev = _load0_dots(sc, points, rows)
        view.data["dots"] = dots
        if dev is not None:
            view.say(
                f"The shared-WAN engine's {len(dots)} runs at load 0 (dots) sit on the curves: "
                f"their step times differ from the closed forms by at most {dev:.2g} (relative).")
    else:
        view.lacks("The shared-WAN engine's runs at load 0 (the dots on the curves)",
                   "shared_wan.load0_points")
    view.assumptions = [
        "Time to target = measured steps to the target loss (single seed) x closed-form step time.",
        "E' takes E's steps on the hypothesis basis and the exact band's on the exact basis.",
        "The fixed time d per variant is calibrated to the study's recorded step times.",
        "The WAN carries only this job (the shared-WAN section drops this).",
        "The conclusions follow the controls; the report's are at the scenario's setting: "
        f"{setting_text(sc)}.",
    ]
    return view


def _bandwidth_words(rows, grid, i0, at) -> list[str]:
    """Who reaches the target first at the scenario's bandwidth, and where the winner changes."""
    ranked = sorted((r for r in pick([r for r in rows if r["i"] == i0], **at) if r["t_s"] is not None),
                    key=lambda r: r["t_s"])
    g = f"the scenario's {fmt_GBps(grid[i0])}"
    if not ranked:
        return [f"At {g} no variant reaches the target."]
    best = ranked[0]
    words = [f"At {g}, {best['short']} reaches the target first ({fmt_s(best['t_s'])})."]
    bands = [r for r in ranked if is_band(r["variant"])]
    if bands and bands[0] is not best:
        words.append(f"The fastest band variant, {bands[0]['short']}, takes {fmt_s(bands[0]['t_s'])} "
                     f"({bands[0]['t_s'] / best['t_s']:.2f}x).")
    for status in (STATUS[NEVER], STATUS[NOT_MEASURED]):
        names = [r["short"] for r in pick([r for r in rows if r["i"] == i0], **at) if r["status"] == status]
        if names:
            words.append(f"{_and(names)}: {STATUS_WORDS[status]} at this ENOB.")
    segs = _segments(pick(rows, **at), grid)
    if len(segs) > 1:
        words.append("Across 0.1 to 1,000 GB/s the winner changes: " + "; ".join(
            f"{w} from {g3(a)} to {g3(b)} GB/s" for w, a, b in segs)
            + f" (on the sweep's grid, {POINTS_PER_DECADE} points a decade).")
    else:
        words.append(f"{segs[0][0]} wins across the whole range, 0.1 to 1,000 GB/s.")
    return words


STATUS_WORDS = {STATUS[NEVER]: "never reaches the target", STATUS[NOT_MEASURED]: "not measured"}


def _and(names: list[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _load0_dots(sc: Scenario, points: list[dict], curve_rows: list[dict]):
    """Dots of the engine's load-0 runs, tagged like the curves, and their largest relative
    step-time deviation from the closed form at the same bandwidth."""
    gbps = sorted({float(p["GBps"]) for p in points})
    ds = sweep(sc, bandwidth=gbps, basis=list(BASES), quantities=["step_s"])
    dep = {}
    for vid in sc.ids:
        rs = [r for r in curve_rows if r["variant"] == vid]
        dep[vid] = {c: any(r[c] != ANY for r in rs) for c in CONTROLS}
    at = _at(sc)
    dots, devs = [], []
    for p in points:
        vid, basis = p["variant"], p.get("basis", "hypothesis")
        t = p.get("time_to_target_s")
        t = None if t in (None, "inf") else float(t)
        row = {"variant": vid, "short": short(vid), "GBps": _num(p["GBps"]),
               "t_s": _num(t) if t is not None else None, "step_ms": _num(p["step_ms"])}
        row["basis"] = basis if dep[vid]["basis"] else ANY
        row["enob"] = at["enob"] if dep[vid]["enob"] else ANY
        row["budget"] = at["budget"] if dep[vid]["budget"] else ANY
        dots.append(row)
        closed = float(ds.step_s.sel(bandwidth=float(p["GBps"]), basis=basis, variant=vid)) * 1e3
        if p.get("step_ms") is not None:
            devs.append(abs(float(p["step_ms"]) - closed) / closed)
    return dots, (max(devs) if devs else None)


# ------------------------------------------------------------------------------ 2. stages


def stages_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    be = float(budget_break_even_FLOPs(sc)) / 1e9
    marks = {"low": float(sc.budget_low_FLOPs) / 1e9, "high": float(sc.budget_high_FLOPs) / 1e9}
    grid = np.asarray(sw.stages.budget, dtype=float)  # GFLOP/s
    st = np.asarray(sw.stages.module_stage_s.transpose("budget", "stage"))
    rows = []
    for j, g in enumerate(grid):
        binding = STAGES[int(np.argmax(st[j]))]
        for k, s in enumerate(STAGES):
            rows.append({"GFLOPs": _num(g), "stage": s, "ms": _num(st[j, k] * 1e3),
                         "binding": s == binding})
        rows.append({"GFLOPs": _num(g), "stage": "module (slowest stage)",
                     "ms": _num(st[j].max() * 1e3), "binding": True})
    free = np.asarray(sw.at(sw.point).module_stage_s.isel(basis=0))
    table_rows = []
    for lab, stages in (("[free] not charged", free),
                        (f"[low] {marks['low']:g} GFLOP/s", st[list(grid).index(marks["low"])]),
                        (f"[high] {marks['high']:g} GFLOP/s", st[list(grid).index(marks["high"])])):
        b = int(np.argmax(stages))
        table_rows.append([lab] + [f"{stages[k] * 1e3:.4g}" + (" (binds)" if k == b else "")
                                   for k in range(len(STAGES))])
    view = View("stages", "The module's four stages against its compute budget")
    view.data = {"stages": rows, "break_even_GFLOPs": _num(be), "marks": marks}
    view.table = {"columns": ["budget"] + [f"{s} (ms)" for s in STAGES], "rows": table_rows,
                  "caption": "Stage times for one worker's dense delta; the slowest binds."}
    low = st[list(grid).index(marks["low"])]
    high = st[list(grid).index(marks["high"])]
    others = [k for k in range(len(STAGES)) if STAGES[k] != "compute"]
    rest = max(others, key=lambda k: free[k])
    c = STAGES.index("compute")
    view.conclusion = [
        f"The module's compute binds below {be:.1f} GFLOP/s; above it the {STAGES[rest]} stage binds "
        f"at {free[rest] * 1e3:.4g} ms per worker's delta, whatever the budget.",
        f"At [low] ({marks['low']:g} GFLOP/s) compute takes {low[c] * 1e3:.5g} ms, "
        f"{low[c] / free[rest]:.3g}x the {STAGES[rest]}; at [high] ({marks['high']:g} GFLOP/s) "
        f"{high[c] * 1e3:.4g} ms, {high[c] / free[rest]:.3g}x.",
    ]
    view.assumptions = [
        "The four stages are pipelined: the slowest sets the module's time.",
        f"The transform costs {float(sc.transform_flops_per_param):g} FLOP per parameter; "
        f"the optics run at {float(sc.optics_Sps) / 1e9:g} GS/s, one sample per parameter.",
    ]
    return view


# ------------------------------------------------------------------------------ 3. break-evens


def _drawn(a: str, b: str) -> bool:
    """Pairs the ratio chart draws: an in-transit variant against one that is not (E and E'
    against AdamW, top-k, C, C'); every pair stays in the conclusion and the tables."""
    return variant(a).in_transit and not variant(b).in_transit


def _ratio_rows(sc: Scenario, pairs, bandwidth: View) -> list[dict]:
    """Ratio of the first's time to target to the second's, at every bandwidth and setting."""
    index: dict = {}
    for r in bandwidth.data["curves"]:
        index.setdefault((r["variant"], r["i"]), []).append(r)
    rows = []
    for a, b in pairs:
        for i in range(len(bandwidth.data["grid_GBps"])):
            for sel in settings(sc):
                ra = pick(index.get((a, i), []), **sel)
                rb = pick(index.get((b, i), []), **sel)
                ta, tb = ra[0]["t_s"], rb[0]["t_s"]
                rows.append({"pair": f"{short(a)} / {short(b)}", "first": short(a), "second": short(b),
                             "i": i, "GBps": ra[0]["GBps"],
                             "ratio": _num(ta / tb, 5) if ta and tb else None, **sel})
    # drop rows repeated across controls the pair does not depend on
    return _collapse(rows, key=("pair", "i"), value="ratio")


def _crossings(sc: Scenario, results: Results, pairs, rows, grid) -> list[dict]:
    """The diamonds: the root finder's crossings where the break-even section gives them (the
    scenario's ENOB, every budget it ran), and elsewhere the crossings of the ratio curves on the
    page, interpolated between grid points (log-log), so a setting of the controls the section did
    not run still shows where its curves cross."""
    entries = results.breakeven.break_even_GBps if results.breakeven else []
    by_budget = results.breakeven.break_even_GBps_by_budget if results.breakeven else []
    per_budget = {(e["a"], e["b"], e["basis"]) for e in by_budget}
    own = scenario_budget(sc)
    out, covered = [], set()
    for e in [e for e in entries if (e["a"], e["b"], e["basis"]) not in per_budget] + by_budget:
        if (e["a"], e["b"]) not in pairs:
            continue
        module = variant(e["a"]).module or variant(e["b"]).module
        in_transit = variant(e["a"]).in_transit or variant(e["b"]).in_transit
        tag = {"enob": enob_label(sc.enob) if in_transit else ANY,
               "budget": e.get("budget", own) if module else ANY, "basis": e.get("basis") or ANY}
        pair = f"{short(e['a'])} / {short(e['b'])}"
        covered |= {(pair, setting_key(at)) for at in settings(sc)
                    if all(tag[c] in (ANY, at[c]) for c in CONTROLS)}
        for g in e.get("GBps") or []:
            if g is not None:
                out.append({"pair": pair, "first": short(e["a"]), "second": short(e["b"]),
                            "GBps": _num(g), "ratio": 1.0, "source": "root finder", **tag})
    for a, b in pairs:
        pair = f"{short(a)} / {short(b)}"
        for at in settings(sc):
            if (pair, setting_key(at)) in covered:
                continue
            line = sorted((r for r in pick([r for r in rows if r["pair"] == pair], **at)),
                          key=lambda r: r["i"])
            for r0, r1 in zip(line, line[1:]):
                q0, q1 = r0["ratio"], r1["ratio"]
                if q0 is None or q1 is None or not (q0 - 1) * (q1 - 1) < 0:
                    continue
                f = math.log(q0) / (math.log(q0) - math.log(q1))
                g = math.exp(math.log(grid[r0["i"]]) + f * (math.log(grid[r1["i"]]) - math.log(grid[r0["i"]])))
                out.append({"pair": pair, "first": short(a), "second": short(b), "GBps": _num(g, 4),
                            "ratio": 1.0, "source": "interpolated on the curves' grid", **at})
    return out


def _breakeven_words(rows, crossings, pairs, wan_i, grid, at, with_crossings) -> list[str]:
    """Short sentences at one setting: how each in-transit variant fares at the scenario's
    bandwidth, then each crossing, then the pairs that do not cross."""
    words = []
    here = pick([r for r in rows if r["i"] == wan_i], **at)
    g = f"{g3(grid[wan_i])} GB/s"
    for first in dict.fromkeys(short(a) for a, _ in pairs):
        rs = [r for r in here if r["first"] == first]
        ok = sorted((r for r in rs if r["ratio"] is not None), key=lambda r: r["ratio"])
        if not ok:
            words.append(f"At {g}, {first} has no ratio: it does not reach the target at this setting.")
            continue
        wins = [r for r in ok if r["ratio"] < 1]
        loses = [r for r in ok if r["ratio"] >= 1]
        if wins:
            words.append(f"At {g}, {first} beats {_and([r['second'] for r in wins])} "
                         f"(ratio {_span(wins)}).")
        if loses:
            words.append(f"At {g}, {first} loses to {_and([r['second'] for r in loses])} "
                         f"(ratio {_span(loses)}).")
    if not with_crossings:
        return words
    at_cross = pick(crossings, **at)
    for a, b in pairs:
        pair = f"{short(a)} / {short(b)}"
        xs = sorted(c["GBps"] for c in at_cross if c["pair"] == pair)
        if not xs:
            continue
        below = [r for r in rows if r["pair"] == pair and r["GBps"] < xs[0] and r["ratio"] is not None]
        below = max(pick(below, **at), key=lambda r: r["GBps"], default=None)
        side = "" if below is None else (
            f"; {short(a) if below['ratio'] < 1 else short(b)} wins below")
        words.append(f"{short(a)} and {short(b)} break even at "
                     f"{_and([fmt_GBps(x) for x in xs])}{side}.")
    flat = [f"{short(a)} / {short(b)}" for a, b in pairs
            if not any(c["pair"] == f"{short(a)} / {short(b)}" for c in at_cross)]
    if flat:
        words.append(f"No break-even in 0.1 to 1,000 GB/s: {_and(flat)}.")
    return words


def _span(rs) -> str:
    lo, hi = rs[0]["ratio"], rs[-1]["ratio"]
    return f"{lo:.3g}" if len(rs) == 1 else f"{lo:.3g} to {hi:.3g}"


def _basis_words(basis) -> str:
    return f" ({basis} basis)" if basis else ""


def breakeven_view(sc: Scenario, results: Results | dict | None, bandwidth: View) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    view = View("breakeven", "Break-even: ratio of times to target against bandwidth")
    be = results.breakeven
    entries = be.break_even_GBps if be else None
    pairs = list(dict.fromkeys((e["a"], e["b"]) for e in entries)) if entries else comparison_pairs()
    pairs = [p for p in pairs if _drawn(*p)] or pairs
    rows = _ratio_rows(sc, pairs, bandwidth)
    view.data = {"ratios": rows, "crossings": []}
    if entries:
        view.data["crossings"] = _crossings(sc, results, pairs, rows, bandwidth.data["grid_GBps"])
        view.data["crossings_table"] = {
            "columns": ["pair (first vs second)", "basis", "break-even", "faster below",
                        "faster above"],
            "rows": [[f"{short(e['a'])} vs {short(e['b'])}", e.get("basis") or "either",
                      ", ".join(fmt_GBps(g) for g in e["GBps"] if g is not None) or "none in range",
                      short(e["winner_below"]) if e.get("winner_below") else "-",
                      short(e["winner_above"]) if e.get("winner_above") else "-"]
                     for e in entries],
            "caption": (f"Every pair's WAN break-evens in 0.1 to 1,000 GB/s per direction, at "
                        f"{setting_text(sc)}; none in range: the variant faster below wins "
                        "throughout. Basis: which steps E' takes; either: E' is not in the pair."),
            "nowrap": [2]}
    else:
        view.lacks("Crossings (bandwidth break-evens found by the root finder)", "break_even_GBps")
    wan_i = bandwidth.data["start"]
    _conclude(view, sc, lambda at: _breakeven_words(rows, view.data["crossings"], pairs, wan_i,
                                                    bandwidth.data["grid_GBps"], at, bool(entries)))
    enob = be.enob_break_even if be else None
    if enob:
        erows, trows = [], []
        grid = sorted({float(g) for e in enob for g in (e.get("GBps") or [])})
        for e in enob:
            by_g = dict(zip((float(g) for g in e.get("GBps") or []), e.get("enob") or []))
            for g, n in by_g.items():
                if n is not None:
                    erows.append({"pair": f"{short(e['a'])} / {short(e['b'])}",
                                  "basis": e.get("basis") or "either", "GBps": _num(g), "enob": _num(n)})
            trows.append([f"{short(e['a'])} vs {short(e['b'])}", e.get("basis") or "either"] + [
                "-" if by_g.get(g) is None else f"{float(by_g[g]):g} bits" for g in grid])
        view.data["enob_break_even"] = erows
        view.data["enob_table"] = {
            "columns": ["pair", "basis"] + [f"{g3(g)} GB/s" for g in grid], "rows": trows,
            "caption": ("Lowest measured ENOB (bits per band coefficient) at which the in-transit "
                        "variant still reaches the target first, at each WAN bandwidth per direction; "
                        "'-': it wins at no measured ENOB. Basis: which steps E' takes; either: E' "
                        "is not in the pair.")}
    else:
        view.lacks("ENOB break-evens (the lowest ENOB at which an in-transit variant still wins)",
                   "enob_break_even")
    sens = be.sensitivity if be else None
    if sens:
        view.data["sensitivity"] = sens
        table = _sensitivity_table(sens)
        if table:
            view.data["sensitivity_table"] = table[0]
            for sentence in table[1]:
                view.say(sentence)
    else:
        view.lacks("Sensitivities of the break-evens", "sensitivity")
    view.assumptions = [
        "Ratio = time to target of the first variant / the second's; below 1 the first wins.",
        "The chart draws each in-transit variant (E, E') against each variant that is not; the "
        "table of every pair's break-evens lists the rest.",
        "Curves are from the same closed forms and steps as the bandwidth explorer; crossings "
        "(diamonds) are the break-even section's root finder's, at the chosen budget.",
    ]
    return view


HARDWARE_GROUPS = ("links", "module")


def _sensitivity_table(sens) -> tuple[dict, list[str]] | None:
    """The sensitivities as a table (largest elasticities of each break-even, and the hardware
    number that moves it most) and a conclusion from them; None for a shape it does not know."""
    from ..scenario import FIELDS

    if not all(isinstance(s, dict) and isinstance(s.get("elasticity"), dict) for s in sens):
        return None
    rows, top_hw, steps_first = [], {}, 0
    bandwidth = [s for s in sens if s.get("quantity") == "bandwidth_break_even"]
    for s in sens:
        # below 1e-9 % per % is rounding (a parameter the break-even does not depend on)
        el = {k: float(v) for k, v in s["elasticity"].items() if v is not None and abs(float(v)) > 1e-9}
        order = sorted(el, key=lambda k: -abs(el[k]))
        hw = [k for k in order if k in FIELDS and FIELDS[k][0] in HARDWARE_GROUPS]
        if s.get("quantity") == "budget_break_even":
            what, at = "budget where compute stops binding", f"{float(s['GFLOPs']):.4g} GFLOP/s"
        else:
            what = f"{short(s['a'])} vs {short(s['b'])}{_basis_words(s.get('basis'))}"
            at = fmt_GBps(float(s["GBps"]))
            if hw:
                top_hw[hw[0]] = top_hw.get(hw[0], 0) + 1
            if order and order[0] in ("steps_a", "steps_b"):
                steps_first += 1
        rows.append([what, at, "; ".join(f"{_names.name(k).name} {el[k]:+.3g}" for k in order[:4]),
                     f"{_names.name(hw[0]).name} {el[hw[0]]:+.3g}" if hw else "none"])
    table = {"columns": ["break-even", "at", "largest elasticities (% per %)",
                         "hardware number that moves it most (% per %)"],
             "rows": rows,
             "caption": ("Elasticity: % change of the break-even per % change of the parameter "
                         "(implicit differentiation at the root); hardware: the links' and the "
                         "module's rates."),
             "nowrap": [1]}
    words = []
    if bandwidth:
        ranked = sorted(top_hw.items(), key=lambda kv: -kv[1])
        words.append(f"The steps to target move {steps_first} of the {len(bandwidth)} bandwidth "
                     "break-evens more than any other number.")
        if ranked:
            words.append("Of the hardware numbers, " + "; ".join(
                f"the {_names.name(k).name} moves {n} of them most" for k, n in ranked) + ".")
    return table, words


def _collapse(rows, key, value):
    """Replace a control by "*" where, for one ``key`` group, ``value`` does not depend on it."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in key), []).append(r)
    out = []
    for _, rs in groups.items():
        for c in CONTROLS:
            by = {}
            for r in rs:
                rest = tuple(r[o] for o in CONTROLS if o != c)
                by.setdefault(rest, set()).add(r[value])
            if all(len(v) == 1 for v in by.values()):
                seen, keep = set(), []
                for r in rs:
                    rest = tuple(r[o] for o in CONTROLS if o != c)
                    if rest not in seen:
                        seen.add(rest)
                        keep.append(dict(r, **{c: ANY}))
                rs = keep
        out.extend(rs)
    return out


# ------------------------------------------------------------------------------ 4. shared WAN


def shared_wan_view(sc: Scenario, results: Results | dict | None) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    view = View("shared_wan", "Shared WAN: the event engine with other jobs' traffic")
    sw = results.shared_wan
    if sw is None or not sw.loads:
        view.lacks("The shared-WAN engine's results", "shared_wan")
        return view
    loads = list(sw.loads)
    # the 95% intervals belong to the mean over seeds, so show that mean beside them
    over_seeds = bool(sw.mean_step_ms)
    step = sw.mean_step_ms or sw.step_ms or {}
    ci = sw.ci95_ms or {}
    approx = sw.approx_step_ms or {}
    rows, table = [], []
    for vid in [v for v in sc.ids if v in step]:
        for j, load in enumerate(loads):
            lo_hi = ci.get(vid, [None] * len(loads))[j] if vid in ci else None
            if lo_hi is not None and lo_hi[0] is None:  # one seed: no interval
                lo_hi = None
            r = {"variant": vid, "short": short(vid), "load": _num(load),
                 "step_ms": _num(step[vid][j]) if step[vid][j] is not None else None,
                 "lo_ms": _num(lo_hi[0]) if lo_hi else None, "hi_ms": _num(lo_hi[1]) if lo_hi else None}
            if vid in approx and approx[vid][j] is not None:
                r["approx_ms"] = _num(approx[vid][j])
            rows.append(r)
    # A 95% interval over few seeds can reach below zero; the log axis cannot draw that, so such
    # a bar is drawn from the smallest step on the chart (the tooltip and table keep the bound).
    floor = min((r[k] for r in rows for k in ("step_ms", "lo_ms", "approx_ms")
                 if r.get(k) is not None and r[k] > 0), default=None)
    for r in rows:
        r["lo_drawn_ms"] = r["lo_ms"] if r["lo_ms"] is None or r["lo_ms"] > 0 else floor
    for j, load in enumerate(loads):
        cells = [f"{float(load):g}"]
        for vid in [v for v in sc.ids if v in step]:
            s = step[vid][j]
            cell = "n/a" if s is None else f"{float(s):.4g}"
            if vid in ci and ci[vid][j] and ci[vid][j][0] is not None:
                lo, hi = ci[vid][j]
                cell += f" [{float(lo):.4g}, {float(hi):.4g}]"
            cells.append(cell)
        table.append(cells)
    view.table = {"columns": ["load"] + [f"{short(v)} (ms)" for v in sc.ids if v in step],
                  "rows": table,
                  "caption": (f"Mean step time by load of other jobs' traffic over "
                              f"{sw.seeds} seeds, with 95% intervals; "
                              f"{sw.steps} steps per run." if over_seeds else
                              f"Mean step time by load of other jobs' traffic; "
                              f"{sw.steps} steps, seed {sw.seed}.")}
    view.data = {"steps": rows}
    tr = sw.trace
    if isinstance(tr, dict) and tr.get("t_ms"):
        trows = []
        for j, t in enumerate(tr["t_ms"]):
            # queues are counted in transfers (messages of up to 1 MB); bytes left in MB
            for key, label, scale, unit in (
                    ("queue_out", "transfers queued, outbound", 1.0, "transfers"),
                    ("queue_in", "transfers queued, inbound", 1.0, "transfers"),
                    ("sync_bytes_left", "sync bytes left (MB)", 1e-6, "MB")):
                if key in tr and tr[key][j] is not None:
                    trows.append({"j": j, "t_ms": _num(t), "series": label, "unit": unit,
                                  "value": _num(float(tr[key][j]) * scale)})
        view.data["trace"] = trows
        view.data["trace_meta"] = {"variant": tr.get("variant"), "load": tr.get("load"),
                                   "GBps": tr.get("bandwidth_GBps"), "n": len(tr["t_ms"])}
    else:
        view.lacks("The engine's trace (queues and the sync's progress)", "shared_wan.trace")
    if loads and step:
        top = max(range(len(loads)), key=lambda j: loads[j])
        parts = []
        for vid in [v for v in sc.ids if v in step]:
            s0, s1 = step[vid][0], step[vid][top]
            if s0 and s1:
                parts.append(f"{short(vid)} {float(s1):.4g} ms ({float(s1) / float(s0):.3g}x load "
                             f"{float(loads[0]):g})")
        if parts:
            view.conclusion.append(f"At load {float(loads[top]):g} the mean steps take " +
                                   ", ".join(parts) + ".")
        best0 = min((v for v in step if step[v][0] is not None), key=lambda v: step[v][0], default=None)
        best1 = min((v for v in step if step[v][top] is not None), key=lambda v: step[v][top], default=None)
        if best0 and best1:
            view.conclusion.append(
                f"Fastest mean step at load {float(loads[0]):g}: {short(best0)}; at load "
                f"{float(loads[top]):g}: {short(best1)}.")
    view.assumptions = [
        "Each WAN direction is one first-come-first-served link; other jobs send 1 MB transfers as "
        "a Poisson process at load x bandwidth.",
        "The sync's WAN bytes go as 1 MB messages, one after another; a run is seeded.",
        "Queues are counted in transfers waiting on the link (other jobs' and the sync's, up to "
        "1 MB each); the sync's bytes left (both directions) in MB (1e6 bytes).",
    ]
    if approx:
        acc = sw.approx_accuracy
        view.assumptions.append(
            "Dashed lines: the queueing approximation of the mean step"
            + (f" (stated accuracy {float(acc):.0%})" if isinstance(acc, (int, float)) else "")
            + "; solid lines with points: the engine's mean, error bars its 95% interval (one that "
            "reaches below zero is drawn from the chart's smallest step).")
    return view


# ------------------------------------------------------------------------------ 5. model size


def _bar_rows(rows):
    """Bars: E' (whose steps depend on the basis) appears once per basis."""
    for r in rows:
        r["bar"] = r["short"] if r["basis"] == ANY else f"{r['short']} ({r['basis'][:3]}.)"
    return rows


def bar_order(sc: Scenario) -> list[str]:
    """Bars in registry order; a variant whose steps depend on the basis has one bar per basis."""
    both = basis_dependent(sc)
    out = []
    for vid in sc.ids:
        out += [f"{short(vid)} (hyp.)", f"{short(vid)} (exa.)"] if vid in both else [short(vid)]
    return out


def _model_words(rows, models, params, at) -> list[str]:
    """Who reaches the target first at the smallest and the largest preset."""
    words = []
    for m in dict.fromkeys((models[0], models[-1])):
        sel = [r for r in pick([r for r in rows if r["model"] == m], **at) if r["t_s"] is not None]
        w = _winner(sel)
        if not w:
            continue
        words.append(f"At {m} ({count(params[m])} parameters) {w[0]} reaches the target first "
                     f"in {fmt_s(w[1])}.")
        band = _winner([r for r in sel if is_band(r["variant"])])
        if band and band[0] != w[0]:
            words.append(f"The fastest band variant there, {band[0]}, takes {fmt_s(band[1])} "
                         f"({band[1] / w[1]:.2f}x).")
    return words


def model_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    models = list(PRESETS)
    ds = sw.model
    rows = _bar_rows(tidy(sc, ds, ("model",), {"t_s": lambda d: d.time_to_target_s,
                                               "status": lambda d: d.status}))
    params = dict(zip(models, np.atleast_1d(ds.params.values)))
    for r in rows:
        r["params"] = float(params[r["model"]])
        r["model_label"] = f"{r['model']}, {count(params[r['model']])}"
    view = View("model", "Model size: time to target at each preset")
    view.data = {"bars": rows, "models": [f"{m}, {count(params[m])}" for m in models]}
    cols = bar_order(sc)
    trows = []
    for m in models:
        sel = pick([r for r in rows if r["model"] == m], enob=enob_label(sc.enob),
                   budget=scenario_budget(sc))
        by = {r["bar"]: r for r in sel}
        trows.append([f"{m} ({count(params[m])})"] + [
            fmt_s(by[c]["t_s"]) if c in by and by[c]["t_s"] is not None else by.get(c, {}).get("status", "n/a")
            for c in cols])
    view.table = {"columns": ["model (parameters)"] + cols, "rows": trows,
                  "caption": f"Time to target at {fmt_GBps(float(sc.wan_Bps) / 1e9)}, "
                             f"{setting_text(sc)}; hyp./exa.: E' on the hypothesis/exact basis."}
    _conclude(view, sc, lambda at: _model_words(rows, models, params, at))
    view.assumptions = [
        "Bytes and GPU compute scale linearly with the parameters; the calibrated d does not.",
        "Steps to target at every size are those measured at the study's size (the only ones "
        "measured).",
        f"WAN at the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}.",
    ]
    return view


# ------------------------------------------------------------------------------ 6. every H


def _h_words(rows, at) -> list[str]:
    """The winner at the smallest and largest H, and how far the baseline falls."""
    at_rows = pick(rows, **at)
    w1 = _winner([r for r in at_rows if r["H"] == H_VALUES[0]])
    wn = _winner([r for r in at_rows if r["H"] == H_VALUES[-1]])
    if not (w1 and wn):
        return []
    base = {r["H"]: r["t_s"] for r in at_rows if r["variant"] == baseline()}
    words = [f"{w1[0]} wins at H = {H_VALUES[0]} ({fmt_s(w1[1])}).",
             f"{wn[0]} wins at H = {H_VALUES[-1]} ({fmt_s(wn[1])})."]
    first, last = base.get(float(H_VALUES[0])), base.get(float(H_VALUES[-1]))
    if first and last:
        words.append(f"{short(baseline())} falls from {fmt_s(first)} to {fmt_s(last)}.")
    return words


def h_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    ds = sw.H
    rows = tidy(sc, ds, ("H",), {"t_s": lambda d: d.time_to_target_s, "status": lambda d: d.status})
    view = View("sync_h", "Syncing every H steps")
    view.data = {"curves": rows}
    _conclude(view, sc, lambda at: _h_words(rows, at))
    view.assumptions = [
        "Syncing every H steps divides each step's communication (ports, module, WAN and d) by H.",
        "Steps to target are assumed unchanged by H: the largest assumption on this page.",
        f"WAN at the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}.",
    ]
    return view


# ------------------------------------------------------------------------------ 7. energy


def _energy_words(per_step, to_target, at) -> list[str]:
    """The variant that uses the least energy per step and to the target, against the baseline."""
    step_tot: dict[str, float] = {}
    for r in pick(per_step, **at):
        step_tot[r["short"]] = step_tot.get(r["short"], 0.0) + (r["J"] or 0.0)
    tgt: dict[str, float] = {}
    for r in pick(to_target, **at):
        if r["kJ"] is not None:
            tgt[r["bar"]] = tgt.get(r["bar"], 0.0) + r["kJ"]
    base = short(baseline())
    words = []
    if step_tot:
        lo = min(step_tot, key=step_tot.get)
        words.append(f"Per step {lo} uses the least energy: {step_tot[lo]:.3g} J, against "
                     f"{step_tot[base]:.3g} J for {base}.")
    if tgt:
        lo = min(tgt, key=tgt.get)
        words.append(f"To the target {lo} uses the least: {tgt[lo]:.3g} kJ"
                     + (f", against {tgt[base]:.3g} kJ for {base}." if base in tgt else "."))
    return words


def energy_view(sc: Scenario, results: Results, sw: Sweeps) -> View:
    ds = sw.point[["energy_per_step_J", "steps_to_target", "status"]]
    parts = list(ENERGY_PARTS)
    idx = [list(ds.energy.values).index(p) for p in parts]
    per_step = tidy(sc, ds, (), {"J": lambda d: d.energy_per_step_J.isel(energy=idx)},
                    extra=("part", parts))
    to_target = tidy(sc, ds, (), {"kJ": lambda d: (d.energy_per_step_J.isel(energy=idx)
                                                   * d.steps_to_target.where(np.isfinite(d.steps_to_target))) / 1e3},
                     extra=("part", parts))
    _bar_rows(to_target)
    view = View("energy", "Energy per step and to target")
    view.data = {"per_step": per_step, "to_target": to_target}
    _conclude(view, sc, lambda at: _energy_words(per_step, to_target, at))
    view.assumptions = [
        f"Compute = GPU static power x step time + energy per FLOP x 6 P tokens, for N workers; "
        f"network = {float(sc.link_J_per_bit) * 1e12:g} pJ/bit on ports and module ports, "
        f"{float(sc.wan_J_per_bit) * 1e12:g} pJ/bit on the WAN (both directions); modules = "
        f"{float(sc.module_W):g} W each for E and E'.",
        f"At the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}; energy to target = measured steps "
        "x energy per step.",
    ]
    return view


# ------------------------------------------------------------------------------ 8. your cluster


def _cluster_rows(sc: Scenario, cl: Cluster) -> tuple[list[dict], list[dict]]:
    """Time to target of each variant against K (rows of the chart; a variant whose times do not
    depend on the basis is stored once, as "*") and the winner at each (K, topology, basis)."""
    times, winners = [], []
    for vid in [v for v in sc.ids if v in cl.time_to_target_s[BASES[0]]]:
        by = [cl.time_to_target_s[b][vid] for b in BASES]
        bases = [ANY] if all(t == by[0] for t in by) else list(BASES)
        for basis, t in zip(bases, by):
            for i, k in enumerate(cl.dcs):
                for j, topo in enumerate(cl.topologies):
                    times.append({"variant": vid, "short": short(vid), "K": k, "topology": topo,
                                  "basis": basis, "t_s": _num(t[i][j]) if t[i][j] is not None else None})
    for basis in BASES:
        for i, k in enumerate(cl.dcs):
            for j, topo in enumerate(cl.topologies):
                w = cl.winner[basis][i][j]
                if w is not None:
                    winners.append({"variant": w, "short": short(w), "K": k, "topology": topo,
                                    "basis": basis, "t_s": _num(cl.time_to_target_s[basis][w][i][j])})
    return times, winners


def _cluster_break_even_rows(cl: Cluster) -> list[dict]:
    """Each compared pair's break-evens (GB/s) against K; a pair the report compares on the
    hypothesis basis only (its steps do not depend on the basis) holds "*"."""
    both = {(e["a"], e["b"]) for e in cl.break_even_GBps if e["basis"] == BASES[1]}
    rows = []
    for e in cl.break_even_GBps:
        basis = e["basis"] if (e["a"], e["b"]) in both else ANY
        for i, k in enumerate(cl.dcs):
            for j, topo in enumerate(cl.topologies):
                for n, g in enumerate(e["GBps"][i][j]):
                    rows.append({"pair": f"{short(e['a'])} / {short(e['b'])}", "first": short(e["a"]),
                                 "second": short(e["b"]), "basis": basis, "K": k, "topology": topo,
                                 "root": n, "GBps": _num(g)})
    return rows


def _cluster_entries(cl: Cluster, basis: str) -> list[dict]:
    """The cluster's break-even entries that hold on ``basis``: a pair's entry on that basis, or
    its only one where the report compares it on one basis (its steps do not depend on it)."""
    both = {(e["a"], e["b"]) for e in cl.break_even_GBps if e["basis"] == BASES[1]}
    return [e for e in cl.break_even_GBps
            if e["basis"] == basis or ((e["a"], e["b"]) not in both and e["basis"] == BASES[0])]


def _cluster_words(cl: Cluster, basis: str) -> list[str]:
    """On one basis, per topology: who reaches the target first along K, then how each compared
    pair's break-even against those winners moves from the smallest K to the largest."""
    words = []
    k0, k1 = cl.dcs[0], cl.dcs[-1]
    for j, topo in enumerate(cl.topologies):
        winners = [cl.winner[basis][i][j] for i in range(len(cl.dcs))]
        runs: list[list] = []
        for w, k in zip(winners, cl.dcs):
            if runs and runs[-1][0] == w:
                runs[-1][2] = k
            else:
                runs.append([w, k, k])
        t0, t1 = (cl.time_to_target_s[basis][w][i][j] if w else None
                  for w, i in ((winners[0], 0), (winners[-1], -1)))
        times = f" ({fmt_s(t0)} at K = {k0}, {fmt_s(t1)} at K = {k1})" if t0 and t1 else ""
        words.append(f"{topo.capitalize()}: " + "; ".join(
            f"{short(w) if w else 'none'} first at K = {a}" + (f" to {b}" if b != a else "")
            for w, a, b in runs) + times + ".")
        for e in _cluster_entries(cl, basis):
            first, last = e["GBps"][0][j], e["GBps"][-1][j]
            if e["b"] in winners and first and last:
                words.append(f"{topo.capitalize()}: {short(e['a'])} and {short(e['b'])} break even "
                             f"at {fmt_GBps(first[0])} at K = {k0}, {fmt_GBps(last[0])} at K = {k1}.")
    return words


def cluster_view(sc: Scenario, results: Results | dict | None) -> View:
    results = Results.of(results)  # typed sections, or a results dict read into them
    view = View("cluster", "Your cluster: K data centres, ring or mesh WAN")
    cl = results.cluster
    if cl is None:
        view.lacks("The cluster section's results (time to target and break-evens against K and the"
                   " WAN topology)", "cluster")
        return view
    times, winners = _cluster_rows(sc, cl)
    rows = _cluster_break_even_rows(cl)
    view.data = {"times": times, "winners": winners, "break_evens": rows, "dcs": list(cl.dcs),
                 "topologies": list(cl.topologies), "wan_GBps": _num(cl.wan_GBps)}
    view.table = _cluster_table(sc, cl)
    _conclude_by_basis(view, sc, {b: _cluster_words(cl, b) for b in BASES})
    lat = float(cl.latency_ms)
    view.assumptions = [
        f"At the scenario's {fmt_GBps(cl.wan_GBps)} on every directed WAN link and "
        f"{lat:g} ms one-way latency per hop, {setting_text(sc)}: the ENOB and budget controls "
        "do not move this section, the basis control does.",
        "K data centres of the scenario's workers each; a ring has K directed WAN links, a mesh "
        "K(K-1); at K = 2 both are the study's two directions (docs/model.md section 13).",
        "Steps to target are those measured for the study's cluster, at every K.",
        f"Break-evens: the WAN bandwidth per link where two variants' times to target are equal, "
        f"searched in {g3(BANDWIDTH_RANGE_GBps[0])} to {g3(BANDWIDTH_RANGE_GBps[1])} GB/s; a K "
        "without a point has none in that range.",
    ]
    return view


def _cluster_table(sc: Scenario, cl: Cluster) -> dict:
    cols = ["K"] + [f"{t}, {b}" for t in cl.topologies for b in BASES]
    rows = []
    for i, k in enumerate(cl.dcs):
        cells = [str(k)]
        for j in range(len(cl.topologies)):
            for b in BASES:
                w = cl.winner[b][i][j]
                cells.append("none" if w is None else
                             f"{short(w)} ({fmt_s(cl.time_to_target_s[b][w][i][j])})")
        rows.append(cells)
    return {"columns": cols, "rows": rows, "nowrap": list(range(1, len(cols))),
            "caption": (f"Fastest to target (time to target in s) at each K, topology and steps "
                        f"basis, at {fmt_GBps(cl.wan_GBps)} per directed link.")}


# ------------------------------------------------------------------------------ 9. how sure


def _pair(e: dict) -> str:
    return f"{short(e['a'])} vs {short(e['b'])}"


def _mc(e: dict):
    """(5%, 50%, 95%) of a pair's Monte Carlo break-evens, GB/s, or None where no sample crossed."""
    q = e["monte_carlo_5_50_95"]
    return None if any(x is None for x in q) else tuple(float(x) for x in q)


def _uncertainty_words(u: Uncertainty, basis: str) -> list[str]:
    bw = list(u.bandwidth_GBps)
    i0 = int(np.argmin([abs(math.log(b / u.wan_GBps)) for b in bw]))
    words = []
    for e in u.break_even_GBps:
        if e["basis"] not in (None, basis):
            continue
        p = float(e["p_a_wins"][i0])
        s = (f"{_pair(e)}: {short(e['a'])} reaches the target first in {100 * p:.0f}% of samples "
             f"at the scenario's {fmt_GBps(bw[i0])}")
        q = _mc(e)
        if q is None:
            s += "; no sample has a break-even in the searched range"
        else:
            share = e["crossing_share"]
            s += (f"; 90% of the break-evens lie between {g3(q[0])} and {g3(q[2])} GB/s, median "
                  f"{g3(q[1])} GB/s ({'every sample crosses' if share == 1 else f'{100 * share:.0f}% of samples cross'})")
        words.append(s + ".")
    return words


def uncertainty_view(sc: Scenario, results: Results | dict | None) -> View:
    """How firm the answers are: with uncertain inputs, each compared pair's probability of
    winning against bandwidth and its break-even's 90% interval; without, a note that every answer
    is a point value and which input is weakest."""
    results = Results.of(results)  # typed sections, or a results dict read into them
    from .uncertainty import weakest_words

    view = View("uncertainty", "How sure: uncertain inputs and the chance of winning")
    u = results.uncertainty
    if u is None:
        view.lacks("The uncertainty section's results (break-even intervals and the probability of "
                   "winning)", "uncertainty")
        return view
    weak = weakest_words(u)
    if u.point_values:
        view.say("Every answer on this page is a point value: the scenario has no uncertain inputs "
                 "(an [uncertain] table in its file, or Scenario.uncertain, adds them; then this "
                 "section draws each pair's probability of winning against bandwidth).")
        if weak:
            view.say("The weakest input is " + "; ".join(weak) + ".")
        return view
    rows, intervals = [], []
    for e in u.break_even_GBps:
        b = e["basis"] or ANY
        rows += [{"pair": _pair(e), "basis": b, "GBps": _num(g), "p": _num(p)}
                 for g, p in zip(u.bandwidth_GBps, e["p_a_wins"])]
        q = _mc(e)
        if q is not None:
            intervals.append({"pair": _pair(e), "basis": b, "lo": _num(q[0]), "mid": _num(q[1]),
                              "hi": _num(q[2]), "p": 0.5})
    view.data = {"p_wins": rows, "intervals": intervals, "wan_GBps": _num(u.wan_GBps),
                 "pairs": list(dict.fromkeys(r["pair"] for r in rows))}
    view.table = {"columns": ["pair", "basis", "break-even (point)", "Monte Carlo 5% to 95%",
                              "delta method 5% to 95%", "samples crossing"],
                  "rows": [[_pair(e), e["basis"] or "either",
                            "-" if e["point"] is None else fmt_GBps(e["point"]),
                            "-" if _mc(e) is None else
                            f"{g3(_mc(e)[0])} to {g3(_mc(e)[2])} GB/s",
                            "-" if None in e["delta_method_5_50_95"] else
                            f"{g3(e['delta_method_5_50_95'][0])} to {g3(e['delta_method_5_50_95'][2])} GB/s",
                            f"{100 * e['crossing_share']:.0f}%"] for e in u.break_even_GBps],
                  "nowrap": [2, 3, 4],
                  "caption": (f"Bandwidth break-evens per WAN direction under the uncertain inputs "
                              f"({u.samples} samples, seed {u.seed}).")}
    _conclude_by_basis(view, sc, {b: _uncertainty_words(u, b) for b in BASES})
    view.assumptions = [
        f"Monte Carlo over {u.samples} samples (seed {u.seed}) of the uncertain inputs: "
        + "; ".join(u.inputs) + ". Every other input is the scenario's value.",
        "The probability is the share of samples in which the first of the pair reaches the "
        "target loss first at that WAN bandwidth; the bar at 50% spans the samples' break-evens "
        "from 5% to 95%, with a diamond at the median.",
        *(["Single-seed steps: " + "; ".join(weak) + "."] if weak else []),
        f"At {setting_text(sc)}: the ENOB and budget controls do not move this section, the "
        "basis control does.",
    ]
    return view


# ------------------------------------------------------------------------------ all


def collect(sc: Scenario, results: Results | dict | None = None,
            sweeps: Sweeps | None = None) -> list[View]:
    """Every view of the page, in the page's order, read from the report's one pass ``sweeps``
    (computed here when not given) and its typed sections ``results`` (a results dict is read
    into them, strictly; an absent section is said to be missing)."""
    results = Results.of(results)
    sw = passes.compute(sc) if sweeps is None else sweeps
    with registry(sc):
        bw = bandwidth_view(sc, results, sw)
        return [bw, stages_view(sc, results, sw), breakeven_view(sc, results, bw),
                shared_wan_view(sc, results), model_view(sc, results, sw), h_view(sc, results, sw),
                energy_view(sc, results, sw), cluster_view(sc, results),
                uncertainty_view(sc, results)]
