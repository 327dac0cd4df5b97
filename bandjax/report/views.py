"""The numbers behind the explorer page and the report's figures, one view per section.

Each view is computed from the closed forms (:func:`bandjax.sweep`) and from the report's results
dict (break-evens, the shared-WAN engine): nothing here is typed in. A view holds tidy rows for the
charts, a table, its conclusion (sentences written from the numbers), its assumptions, and what is
not available yet (a results key that is absent: that part is said to be missing, never filled in).

Rows carry the page's controls (``basis``, ``enob``, ``budget``) as strings; a row whose numbers do
not depend on a control holds ``"*"`` there, so a chart filters ``datum.basis == '*' || datum.basis
== basis`` and a variant that ignores the control is stored once.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .. import variants as _v
from ..grid import sweep
from ..metrics import NEVER, NOT_MEASURED, OK
from ..scenario import BASES, PRESETS, Scenario
from ..step import STAGES, budget_break_even_FLOPs

ANY = "*"
CONTROLS = ("enob", "budget", "basis")
POINTS_PER_DECADE = 40
BANDWIDTH_RANGE_GBps = (0.1, 1000.0)  # model.md section 10
BUDGET_RANGE_GFLOPs = (1.0, 1000.0)
H_VALUES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
STATUS = {OK: "ok", NEVER: "never reaches the target", NOT_MEASURED: "not measured"}
ENERGY_PARTS = ("compute", "network", "modules")
BUDGET_LABELS = ("free", "low", "high")
# Pairs whose ratio the break-even view draws when the break-even section has not named any:
# each in-transit variant against the dense baseline and the best conventional compressor.
DEFAULT_PAIRS = (("band_switch", "adamw"), ("band_switch", "topk"),
                 ("band_pluggable", "adamw"), ("band_pluggable", "topk"))


@dataclass
class View:
    """One section of the page: data for its charts and the words around them."""

    key: str
    title: str
    data: dict = field(default_factory=dict)  # name -> list of row dicts (or other JSON)
    table: dict | None = None  # {"columns": [...], "rows": [[...], ...], "caption": str}
    conclusion: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ formatting


def short(vid: str) -> str:
    return _v.get(vid).short


def name(vid: str) -> str:
    """The legend name of a variant: its short label and what it does."""
    v = _v.get(vid)
    return v.short if v.short == v.label else f"{v.short}: {v.label}"


NAMES = tuple(name(v) for v in _v.IDS)


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


def budget_options(sc: Scenario) -> list[tuple[str, object, str]]:
    """(label, sweep argument, display) for each budget the page offers; the scenario's own
    budget is added when it is none of [free], [low], [high]."""
    opts = [("free", "free", "[free] not charged"),
            ("low", "low", f"[low] {float(sc.budget_low_FLOPs) / 1e9:g} GFLOP/s"),
            ("high", "high", f"[high] {float(sc.budget_high_FLOPs) / 1e9:g} GFLOP/s")]
    own = float(sc.budget_FLOPs)
    if math.isfinite(own) and own not in (float(sc.budget_low_FLOPs), float(sc.budget_high_FLOPs)):
        opts.append((f"{own / 1e9:g}", own / 1e9, f"{own / 1e9:g} GFLOP/s (the scenario's)"))
    return opts


def scenario_budget(sc: Scenario) -> str:
    own = float(sc.budget_FLOPs)
    if math.isinf(own):
        return "free"
    if own == float(sc.budget_low_FLOPs):
        return "low"
    if own == float(sc.budget_high_FLOPs):
        return "high"
    return f"{own / 1e9:g}"


def enob_label(e) -> str:
    return f"{float(e):g}"


def controls(sc: Scenario) -> dict:
    """The page's controls: options and the scenario's own setting (the default)."""
    enobs = [enob_label(e) for e in sc.steps.measured_enobs()]
    if enob_label(sc.enob) not in enobs:
        enobs.append(enob_label(sc.enob))
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


def _control_sweep(sc: Scenario, quantities, **axes):
    """A sweep over ``axes`` and every control (ENOB, budget, basis), controls after ``axes``."""
    c = controls(sc)
    enobs = [float(e) for e, _ in c["enob"]["options"]]
    budgets = [arg for _, arg, _ in budget_options(sc)]
    return sweep(sc, **axes, enob=enobs, budget=budgets, basis=list(BASES), quantities=quantities)


def _labels(sc: Scenario) -> dict[str, list[str]]:
    c = controls(sc)
    return {k: [o[0] for o in c[k]["options"]] for k in CONTROLS}


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
    for k, vid in enumerate(_v.IDS):
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


def bandwidth_grid_GBps(sc: Scenario) -> np.ndarray:
    lo, hi = BANDWIDTH_RANGE_GBps
    n = int(round(POINTS_PER_DECADE * math.log10(hi / lo))) + 1
    grid = np.concatenate([np.logspace(math.log10(lo), math.log10(hi), n), [float(sc.wan_Bps) / 1e9]])
    return np.unique(np.round(grid, 12))


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


def bandwidth_view(sc: Scenario, results: dict) -> View:
    grid = bandwidth_grid_GBps(sc)
    ds = _control_sweep(sc, bandwidth=grid, quantities=["time_to_target_s", "status", "step_s"])
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

    for basis in BASES:
        at = pick([r for r in rows if r["i"] == i0], **_at(sc, basis))
        ranked = sorted((r for r in at if r["t_s"] is not None), key=lambda r: r["t_s"])
        if not ranked:
            continue
        best = ranked[0]
        bands = [r for r in ranked if _v.get(r["variant"]).payload.startswith("band")]
        text = (f"At the scenario's {fmt_GBps(wan)} on the {basis} basis, {best['short']} reaches "
                f"the target first ({fmt_s(best['t_s'])})")
        if bands and bands[0] is not best:
            text += (f"; the fastest band variant, {bands[0]['short']}, takes {fmt_s(bands[0]['t_s'])}"
                     f" ({bands[0]['t_s'] / best['t_s']:.2f}x)")
        segs = _segments(pick(rows, **_at(sc, basis)), grid)
        if len(segs) > 1:
            text += ". Across 0.1 to 1,000 GB/s the winner changes: " + "; ".join(
                f"{w} from {g3(a)} to {g3(b)} GB/s" for w, a, b in segs)
        else:
            text += f". {segs[0][0]} wins across the whole range, 0.1 to 1,000 GB/s"
        view.conclusion.append(text + f" (on the sweep's grid, {POINTS_PER_DECADE} points a decade).")

    sw = results.get("shared_wan")
    points = sw.get("load0_points") if isinstance(sw, dict) else None
    if points:
        dots, dev = _load0_dots(sc, points, rows)
        view.data["dots"] = dots
        if dev is not None:
            view.conclusion.append(
                f"The shared-WAN engine's {len(dots)} runs at load 0 (dots) sit on the curves: "
                f"their step times differ from the closed forms by at most {dev:.2g} (relative).")
    else:
        view.missing.append("The shared-WAN engine's runs at load 0 (the dots on the curves): "
                            "not available yet (results key shared_wan.load0_points).")
    view.assumptions = [
        "Time to target = measured steps to the target loss (single seed) x closed-form step time.",
        "E' takes E's steps on the hypothesis basis and the exact band's on the exact basis.",
        "The fixed time d per variant is calibrated to the study's recorded step times.",
        "The WAN carries only this job (the shared-WAN section drops this).",
        f"Conclusions are at the scenario's setting: {setting_text(sc)}; the controls change the "
        "curves and the readout.",
    ]
    return view


def _load0_dots(sc: Scenario, points: list[dict], curve_rows: list[dict]):
    """Dots of the engine's load-0 runs, tagged like the curves, and their largest relative
    step-time deviation from the closed form at the same bandwidth."""
    gbps = sorted({float(p["GBps"]) for p in points})
    ds = sweep(sc, bandwidth=gbps, basis=list(BASES), quantities=["step_s"])
    dep = {}
    for vid in _v.IDS:
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


def stages_view(sc: Scenario, results: dict) -> View:
    be = float(budget_break_even_FLOPs(sc)) / 1e9
    marks = {"low": float(sc.budget_low_FLOPs) / 1e9, "high": float(sc.budget_high_FLOPs) / 1e9}
    lo, hi = BUDGET_RANGE_GFLOPs
    grid = np.unique(np.concatenate([np.logspace(math.log10(lo), math.log10(hi), 121),
                                     [be, *marks.values()]]))
    ds = sweep(sc, budget=list(grid), quantities=["module_stage_s"])
    st = np.asarray(ds.module_stage_s)  # (budget, stage)
    rows = []
    for j, g in enumerate(grid):
        binding = STAGES[int(np.argmax(st[j]))]
        for k, s in enumerate(STAGES):
            rows.append({"GFLOPs": _num(g), "stage": s, "ms": _num(st[j, k] * 1e3),
                         "binding": s == binding})
        rows.append({"GFLOPs": _num(g), "stage": "module (slowest stage)",
                     "ms": _num(st[j].max() * 1e3), "binding": True})
    free = np.asarray(sweep(sc, budget="free", quantities=["module_stage_s"]).module_stage_s)
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
    return _v.get(a).in_transit and not _v.get(b).in_transit


def _basis_words(basis) -> str:
    return f" ({basis} basis)" if basis else ""


def breakeven_view(sc: Scenario, results: dict, bandwidth: View) -> View:
    view = View("breakeven", "Break-even: ratio of times to target against bandwidth")
    entries = results.get("break_even_GBps")
    pairs = list(dict.fromkeys((e["a"], e["b"]) for e in entries)) if entries else list(DEFAULT_PAIRS)
    pairs = [p for p in pairs if _drawn(*p)] or pairs
    curves = bandwidth.data["curves"]
    index = {}
    for r in curves:
        index.setdefault((r["variant"], r["i"]), []).append(r)
    labels = _labels(sc)
    rows = []
    for a, b in pairs:
        for i in range(len(bandwidth.data["grid_GBps"])):
            for enob, budget, basis in itertools.product(*(labels[c] for c in CONTROLS)):
                sel = {"enob": enob, "budget": budget, "basis": basis}
                ra = pick(index.get((a, i), []), **sel)
                rb = pick(index.get((b, i), []), **sel)
                ta, tb = ra[0]["t_s"], rb[0]["t_s"]
                rows.append({"pair": f"{short(a)} / {short(b)}", "first": short(a), "second": short(b),
                             "i": i, "GBps": ra[0]["GBps"],
                             "ratio": _num(ta / tb, 5) if ta and tb else None, **sel})
    # drop rows repeated across controls the pair does not depend on
    rows = _collapse(rows, key=("pair", "i"), value="ratio")
    view.data = {"ratios": rows, "crossings": []}
    wan_i = bandwidth.data["start"]
    for basis in BASES:
        at = pick([r for r in rows if r["i"] == wan_i], **_at(sc, basis))
        parts = [f"{r['pair']} = {r['ratio']:.3g}" for r in at if r["ratio"] is not None]
        if parts:
            view.conclusion.append(
                f"At the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)} on the {basis} basis the "
                f"ratios of times to target are " + ", ".join(parts) + " (below 1: the first wins).")
    if entries:
        # Crossings at every budget where the section gives them ([free], [low], [high] for pairs
        # with a module), else at the scenario's; tagged with the controls they depend on.
        by_budget = results.get("break_even_GBps_by_budget") or []
        per_budget = {(e["a"], e["b"], e["basis"]) for e in by_budget}
        own = scenario_budget(sc)
        for e in [e for e in entries if (e["a"], e["b"], e["basis"]) not in per_budget] + by_budget:
            if (e["a"], e["b"]) not in pairs:
                continue
            module = _v.get(e["a"]).module or _v.get(e["b"]).module
            in_transit = _v.get(e["a"]).in_transit or _v.get(e["b"]).in_transit
            for g in e.get("GBps") or []:
                if g is None:
                    continue
                view.data["crossings"].append({
                    "pair": f"{short(e['a'])} / {short(e['b'])}", "first": short(e["a"]),
                    "second": short(e["b"]), "basis": e.get("basis") or ANY, "GBps": _num(g),
                    "ratio": 1.0, "enob": enob_label(sc.enob) if in_transit else ANY,
                    "budget": e.get("budget", own) if module else ANY})
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
                        "throughout. Basis: which steps E' takes; either: E' is not in the pair.")}
        lines = []
        for e in (e for e in entries if (e["a"], e["b"]) in pairs):
            gs = [g for g in (e.get("GBps") or []) if g is not None]
            pair = f"{short(e['a'])} against {short(e['b'])}{_basis_words(e.get('basis'))}"
            if gs:
                lines.append(f"{pair} breaks even at " + ", ".join(f"{g:.3g}" for g in gs) +
                             " GB/s" + (f"; {short(e['winner_below'])} wins below" if e.get("winner_below") else ""))
            else:
                w = e.get("winner_below")
                lines.append(f"{pair}: none in range" + (f", {short(w)} wins throughout" if w else ""))
        view.conclusion.append("; ".join(lines) + ".")
    else:
        view.missing.append("Crossings (bandwidth break-evens found by the root finder): not "
                            "available yet (results key break_even_GBps).")
    enob = results.get("enob_break_even")
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
        view.missing.append("ENOB break-evens (the lowest ENOB at which an in-transit variant still "
                            "wins): not available yet (results key enob_break_even).")
    sens = results.get("sensitivity")
    if sens:
        view.data["sensitivity"] = sens
        table = _sensitivity_table(sens)
        if table:
            view.data["sensitivity_table"] = table[0]
            view.conclusion += table[1]
    else:
        view.missing.append("Sensitivities of the break-evens: not available yet (results key "
                            "sensitivity).")
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
        rows.append([what, at, ", ".join(f"{k} {el[k]:+.3g}" for k in order[:4]),
                     f"{hw[0]} {el[hw[0]]:+.3g}" if hw else "none"])
    table = {"columns": ["break-even", "at", "largest elasticities (% per %)",
                         "hardware number that moves it most (% per %)"],
             "rows": rows,
             "caption": ("Elasticity: % change of the break-even per % change of the parameter "
                         "(implicit differentiation at the root); steps_a / steps_b are the first "
                         "and second variant's steps to target; hardware: the links' and the "
                         "module's rates.")}
    words = []
    if bandwidth:
        ranked = sorted(top_hw.items(), key=lambda kv: -kv[1])
        words.append(f"The steps to target move {steps_first} of the {len(bandwidth)} bandwidth "
                     "break-evens more than any other number" + (
                         "; of the hardware numbers, " + ", ".join(
                             f"{k} moves {n} of them most" for k, n in ranked) if ranked else "")
                     + " (elasticities, % per %).")
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


def shared_wan_view(sc: Scenario, results: dict) -> View:
    view = View("shared_wan", "Shared WAN: the event engine with other jobs' traffic")
    sw = results.get("shared_wan")
    if not isinstance(sw, dict) or not sw.get("loads"):
        view.missing.append("The shared-WAN engine's results: not available yet (results key "
                            "shared_wan).")
        return view
    loads = list(sw["loads"])
    # the 95% intervals belong to the mean over seeds, so show that mean beside them
    over_seeds = bool(sw.get("mean_step_ms"))
    step = sw.get("mean_step_ms") or sw.get("step_ms") or {}
    ci = sw.get("ci95_ms") or {}
    approx = sw.get("approx_step_ms") if isinstance(sw.get("approx_step_ms"), dict) else {}
    rows, table = [], []
    for vid in [v for v in _v.IDS if v in step]:
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
    for j, load in enumerate(loads):
        cells = [f"{float(load):g}"]
        for vid in [v for v in _v.IDS if v in step]:
            s = step[vid][j]
            cell = "n/a" if s is None else f"{float(s):.4g}"
            if vid in ci and ci[vid][j] and ci[vid][j][0] is not None:
                lo, hi = ci[vid][j]
                cell += f" [{float(lo):.4g}, {float(hi):.4g}]"
            cells.append(cell)
        table.append(cells)
    view.table = {"columns": ["load"] + [f"{short(v)} (ms)" for v in _v.IDS if v in step],
                  "rows": table,
                  "caption": (f"Mean step time by load of other jobs' traffic over "
                              f"{sw.get('seeds', 'n/a')} seeds, with 95% intervals; "
                              f"{sw.get('steps', 'n/a')} steps per run." if over_seeds else
                              f"Mean step time by load of other jobs' traffic; "
                              f"{sw.get('steps', 'n/a')} steps, seed {sw.get('seed', 'n/a')}.")}
    view.data = {"steps": rows}
    tr = sw.get("trace")
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
        view.missing.append("The engine's trace (queues and the sync's progress): not available "
                            "yet (results key shared_wan.trace).")
    if loads and step:
        top = max(range(len(loads)), key=lambda j: loads[j])
        parts = []
        for vid in [v for v in _v.IDS if v in step]:
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
        acc = sw.get("approx_accuracy")
        view.assumptions.append(
            "Dashed lines: the queueing approximation of the mean step"
            + (f" (stated accuracy {float(acc):.0%})" if isinstance(acc, (int, float)) else "")
            + "; solid lines with points: the engine's mean, error bars its 95% interval.")
    return view


# ------------------------------------------------------------------------------ 5. model size


def _bar_rows(rows):
    """Bars: E' (whose steps depend on the basis) appears once per basis."""
    for r in rows:
        r["bar"] = r["short"] if r["basis"] == ANY else f"{r['short']} ({r['basis'][:3]}.)"
    return rows


def bar_order() -> list[str]:
    out = []
    for vid in _v.IDS:
        out += [f"{short(vid)} (hyp.)", f"{short(vid)} (exa.)"] if vid == "band_switch" else [short(vid)]
    return out


def model_view(sc: Scenario, results: dict) -> View:
    models = list(PRESETS)
    ds = _control_sweep(sc, model=models, quantities=["time_to_target_s", "status"])
    rows = _bar_rows(tidy(sc, ds, ("model",), {"t_s": lambda d: d.time_to_target_s,
                                               "status": lambda d: d.status}))
    params = dict(zip(models, np.atleast_1d(ds.params.values)))
    for r in rows:
        r["params"] = float(params[r["model"]])
        r["model_label"] = f"{r['model']}, {count(params[r['model']])}"
    view = View("model", "Model size: time to target at each preset")
    view.data = {"bars": rows, "models": [f"{m}, {count(params[m])}" for m in models]}
    cols = bar_order()
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
    for m in models:
        sel = [r for r in pick([r for r in rows if r["model"] == m], **_at(sc)) if r["t_s"] is not None]
        w = _winner(sel)
        if w and m in ("study", "llama3-8b"):
            band = _winner([r for r in sel if _v.get(r["variant"]).payload.startswith("band")])
            view.conclusion.append(
                f"At {m} ({count(params[m])} parameters, hypothesis basis) {w[0]} reaches the target "
                f"first in {fmt_s(w[1])}" + (f"; the fastest band variant, {band[0]}, takes "
                f"{fmt_s(band[1])} ({band[1] / w[1]:.2f}x)" if band and band[0] != w[0] else "") + ".")
    view.assumptions = [
        "Bytes and GPU compute scale linearly with the parameters; the calibrated d does not.",
        "Steps to target at every size are those measured at the study's size (the only ones "
        "measured).",
        f"WAN at the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}.",
    ]
    return view


# ------------------------------------------------------------------------------ 6. every H


def h_view(sc: Scenario, results: dict) -> View:
    ds = _control_sweep(sc, H=list(H_VALUES), quantities=["time_to_target_s", "status"])
    rows = tidy(sc, ds, ("H",), {"t_s": lambda d: d.time_to_target_s, "status": lambda d: d.status})
    view = View("sync_h", "Syncing every H steps")
    view.data = {"curves": rows}
    for basis in BASES:
        at = pick(rows, **_at(sc, basis))
        w1 = _winner([r for r in at if r["H"] == H_VALUES[0]])
        wn = _winner([r for r in at if r["H"] == H_VALUES[-1]])
        if w1 and wn:
            adam = {r["H"]: r["t_s"] for r in at if r["variant"] == "adamw"}
            view.conclusion.append(
                f"On the {basis} basis {w1[0]} wins at H = 1 ({fmt_s(w1[1])}) and {wn[0]} at "
                f"H = {H_VALUES[-1]} ({fmt_s(wn[1])}); AdamW falls from {fmt_s(adam[1.0])} to "
                f"{fmt_s(adam[float(H_VALUES[-1])])}.")
    view.assumptions = [
        "Syncing every H steps divides each step's communication (ports, module, WAN and d) by H.",
        "Steps to target are assumed unchanged by H: the largest assumption on this page.",
        f"WAN at the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}.",
    ]
    return view


# ------------------------------------------------------------------------------ 7. energy


def energy_view(sc: Scenario, results: dict) -> View:
    ds = _control_sweep(sc, quantities=["energy_per_step_J", "steps_to_target", "status"])
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
    at = _at(sc)
    step_tot: dict[str, float] = {}
    for r in pick(per_step, **at):
        step_tot[r["short"]] = step_tot.get(r["short"], 0.0) + (r["J"] or 0.0)
    tgt: dict[str, float] = {}
    for r in pick(to_target, enob=at["enob"], budget=at["budget"]):
        if r["kJ"] is not None:
            tgt[r["bar"]] = tgt.get(r["bar"], 0.0) + r["kJ"]
    if step_tot and tgt:
        lo_step = min(step_tot, key=step_tot.get)
        lo_tgt = min(tgt, key=tgt.get)
        view.conclusion.append(
            f"Per step {lo_step} uses the least energy ({step_tot[lo_step]:.3g} J, against "
            f"{step_tot['AdamW']:.3g} J for AdamW); to the target {lo_tgt} uses the least "
            f"({tgt[lo_tgt]:.3g} kJ, against {tgt['AdamW']:.3g} kJ for AdamW).")
    view.assumptions = [
        f"Compute = GPU static power x step time + energy per FLOP x 6 P tokens, for N workers; "
        f"network = {float(sc.link_J_per_bit) * 1e12:g} pJ/bit on ports and module ports, "
        f"{float(sc.wan_J_per_bit) * 1e12:g} pJ/bit on the WAN (both directions); modules = "
        f"{float(sc.module_W):g} W each for E and E'.",
        f"At the scenario's {fmt_GBps(float(sc.wan_Bps) / 1e9)}; energy to target = measured steps "
        "x energy per step.",
    ]
    return view


# ------------------------------------------------------------------------------ all


def collect(sc: Scenario, results: dict | None = None) -> list[View]:
    """Every view of the page, in the page's order."""
    results = results or {}
    bw = bandwidth_view(sc, results)
    return [bw, stages_view(sc, results), breakeven_view(sc, results, bw),
            shared_wan_view(sc, results), model_view(sc, results), h_view(sc, results),
            energy_view(sc, results)]
