"""Report section "Sites and stragglers" (docs/model.md section 16): what the sites of the job and
the workers that straggle cost each way of syncing. Each site's share of the step spent waiting
(for the slowest site, for the slowest worker), compute utilisation against H (1 to 1000) at the
scenario's tail for data parallel and the field's methods, what each site adds (throughput and
compute utilisation with and without it) and the tail each variant tolerates at 90%.

Present only where the scenario has sites that differ or workers that straggle (a family and a
tail > 0): any other scenario gets no section, so its report is what it was. results.json gains
``sites``: the family and tail, each site's name, workers and compute per step (s), each
variant's idle shares per site, its compute utilisation (unit 1), the curves against H, what
each site adds (tokens/s, unit 1; null at 2 DCs, with why), the tolerated tail at 90% with its
status, and the words.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ...grid import sweep
from ...scenario import STRAGGLERS, Scenario
from ...sitevalue import MIN_DCS, site_idle, site_value, sites_differ, sites_of
from ...tolerance import status_names, tolerated_tail
from ...units import describe
from ..passes import Sweeps
from .common import HEIGHT, WIDTH, Results, Section, View, _finish, _num, g3, g4, g6, variant_colors
from .need import pack

KEY = "sites"
TITLE = "Sites and stragglers"
TARGET = 0.9  # the compute utilisation the tolerated tail is asked for
H_GRID = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)  # the curves' inner steps a round
DATA_PARALLEL = "dp_bf16"  # the pack's method that syncs every step


@dataclass(frozen=True)
class SitesStragglers(Section):
    """What sites and stragglers cost.

    ``family`` (none, exponential, lognormal) and ``tail`` (s or sigma, unit 1); per site (in
    ``sites`` order): ``workers``, ``compute_s`` (c_i, s); ``equal_sites``: no sites given, every
    DC the scenario's c and n. ``variants[id]``: short, label, sync_every (H), pack (added from
    bandjax.METHODS). ``waiting_for_site[id]``, ``waiting_for_worker[id]``: per site, the share of
    the step (unit 1). ``compute_utilisation[id]`` (unit 1) at the scenario. ``H`` and
    ``utilisation_by_H[id]`` (unit 1 at each H; None below a method's least H, its fragments or
    delay + 1): data parallel and the methods syncing in rounds at the scenario's tail.
    ``site_value``: None where the scenario has 2 DCs (``site_value_note`` says why), else
    ``throughput_tokens_per_s[id]`` and, per site, ``throughput_without_tokens_per_s[id]``,
    ``throughput_added_tokens_per_s[id]`` and ``compute_utilisation_without[id]``.
    ``tolerated_tail[id]`` at ``target`` (None: missed with no tail) with ``tolerated_status[id]``
    (reached, not_reachable, any) and the family's ``largest_tail`` (None: no family)."""

    KEY: ClassVar[str] = "sites"

    family: str
    tail: float
    sites: list[str]
    workers: list[float]
    compute_s: list[float]
    equal_sites: bool
    variants: dict
    waiting_for_site: dict
    waiting_for_worker: dict
    compute_utilisation: dict
    H: list[int]
    utilisation_by_H: dict
    site_value: dict | None
    site_value_note: str
    target: float
    largest_tail: float | None
    tolerated_tail: dict
    tolerated_status: dict
    assumptions: list[str]
    conclusions: list[str]


def _family(sc: Scenario) -> str:
    return STRAGGLERS[int(float(np.asarray(sc.straggler, dtype=float)))]


def straggles(sc: Scenario) -> bool:
    """Whether the scenario's workers straggle: a family and a tail > 0."""
    return _family(sc) != "none" and float(np.asarray(sc.straggler_s, dtype=float)) > 0


def applies(sc: Scenario) -> bool:
    """Whether the scenario has sites that differ or workers that straggle (the section is built
    and drawn only then)."""
    if np.ndim(sc.straggler) or np.ndim(sc.straggler_s):
        return False  # a report is one point
    return sites_differ(sc) or straggles(sc)


def _curves(sc: Scenario, full: Scenario) -> tuple[list[int], dict]:
    """CU against H for data parallel and each method of the pack syncing in rounds, each with
    its own fragments and delay at every H it allows (H >= F and H >= tau + 1)."""
    methods = [v for v in full.variants if v.id in {m.id for m in pack(sc)} or v.id == DATA_PARALLEL]
    rounds = [dataclasses.replace(v, sync_every=None) for v in methods
              if v.sync_every is not None and v.sync_every > 1]
    least = {v.id: max(int(v.fragments), int(v.delay) + 1) for v in rounds}
    H = sorted(set(H_GRID) | set(least.values()))
    out: dict = {}
    for low in sorted(set(least.values())):
        group = [v for v in rounds if least[v.id] == low]
        base = sc.replace(sync_every_H=float(low)).with_variants(group)
        at = [h for h in H if h >= low]
        cu = sweep(base, H=at, variant=[v.id for v in group],
                   quantities=("compute_utilisation",))["compute_utilisation"].transpose("H", "variant")
        for k, v in enumerate(group):
            values = dict(zip(at, np.asarray(cu)[:, k]))
            out[v.id] = [_num(values[h], 10) if h in values else None for h in H]
    dp = next((v for v in methods if v.id == DATA_PARALLEL), None)
    if dp is not None:
        flat = float(sweep(full, variant=DATA_PARALLEL, quantities=("compute_utilisation",))
                     ["compute_utilisation"])
        out = {DATA_PARALLEL: [_num(flat, 10)] * len(H), **out}
    return H, out


def build(sc: Scenario, ctx: dict) -> SitesStragglers:
    """Sweeps over the scenario's variants and the methods pack: idle shares, the curves against
    H, what each site adds (:func:`bandjax.site_value`) and the tail tolerated at 90%
    (:func:`bandjax.tolerated_tail`)."""
    full = sc.with_variants(pack(sc))
    table = sites_of(sc)
    family = _family(sc)
    idle = site_idle(full)
    H = float(sc.sync_every_H)
    variants, site_wait, worker_wait, cu = {}, {}, {}, {}
    for v in full.variants:
        h = v.sync_every if v.sync_every is not None else H
        variants[v.id] = {"short": v.short, "label": v.label, "sync_every": float(h),
                          "pack": v.id not in sc.ids}
        at = idle.sel(variant=v.id)
        site_wait[v.id] = [_num(x, 10) for x in at.waiting_for_site.values]
        worker_wait[v.id] = [_num(x, 10) for x in at.waiting_for_worker.values]
        cu[v.id] = _num(float(at.compute_utilisation), 10)
    H_values, by_H = _curves(sc, full)
    value, note = None, ""
    if table.K > MIN_DCS:
        ds = site_value(full)
        value = {"throughput_tokens_per_s": {}, "throughput_without_tokens_per_s": {},
                 "throughput_added_tokens_per_s": {}, "compute_utilisation_without": {}}
        for vid in full.ids:
            at = ds.sel(variant=vid)
            value["throughput_tokens_per_s"][vid] = _num(float(at.throughput_tokens_per_s), 10)
            for k in ("throughput_without_tokens_per_s", "throughput_added_tokens_per_s",
                      "compute_utilisation_without"):
                value[k][vid] = [_num(x, 10) for x in at[k].values]
    else:
        note = (f"What each site adds needs {MIN_DCS + 1} DCs or more: without one of "
                f"{table.K} there is no cross-DC job.")
    tolerated, status, top = {}, {}, None
    if family != "none":
        tt = tolerated_tail(full, TARGET).sel(utilisation=TARGET)
        names = status_names(tt.status)
        top = float(tt.attrs["largest_tail"][family])
        for vid in full.ids:
            tolerated[vid] = _num(float(tt.tolerated_tail.sel(variant=vid)), 10)
            status[vid] = str(names.sel(variant=vid).values)
    part = dict(family=family, tail=float(sc.straggler_s), sites=list(table.names),
                workers=[float(x) for x in table.workers],
                compute_s=[_num(x, 10) for x in table.compute_s], equal_sites=table.equal,
                variants=variants, waiting_for_site=site_wait, waiting_for_worker=worker_wait,
                compute_utilisation=cu, H=H_values, utilisation_by_H=by_H, site_value=value,
                site_value_note=note, target=TARGET, largest_tail=top, tolerated_tail=tolerated,
                tolerated_status=status)
    return SitesStragglers(**part, assumptions=assumptions(part), conclusions=conclusions(part))


def _pct(x) -> str:
    return "-" if x is None else f"{g3(100 * x)}%"


def _symbol(family: str) -> str:
    return "s" if family == "exponential" else "sigma"


def _tail_words(r: dict) -> str:
    if r["family"] == "none" or not r["tail"]:
        return "no straggler tail"
    return f"a {r['family']} tail of {_symbol(r['family'])} = {g3(r['tail'])}"


def _rate(x) -> str:
    return "-" if x is None else describe(x, "token_rate", 3)


def assumptions(r: dict) -> list[str]:
    out = ["Steps to target are assumed not to change with the tail or with syncing every H "
           "steps; at H > 1 each DC's round of inner steps is taken as a normal "
           "(docs/model.md section 16).",
           "Waiting for the slowest site: a faster DC idles c_max - c_i an inner step (the rule "
           "'wait'); waiting for the slowest worker: the compute part of an inner step over the "
           "mean compute, c' - c_max, which every site waits for."]
    if r["equal_sites"]:
        out.append("No sites given: every DC is the same site, with the scenario's GPU and "
                   "workers; without one, the others keep theirs.")
    if r["largest_tail"] is not None:
        out.append(f"The tolerated tail is searched from 0 to {_symbol(r['family'])} = "
                   f"{g6(r['largest_tail'])}, the family's largest.")
    out.append("Compute utilisation against H: each method with its own fragments and delay, at "
               "every H they allow; data parallel syncs every step (H = 1).")
    return out


def conclusions(r: dict) -> list[str]:
    out = []
    v = r["variants"]
    cu = {k: x for k, x in r["compute_utilisation"].items() if x is not None}
    if cu:
        best = max(cu, key=cu.get)
        worker = max(r["waiting_for_worker"][best], default=0.0) or 0.0
        site = max(r["waiting_for_site"][best], default=0.0) or 0.0
        words = f"With {_tail_words(r)}, {v[best]['short']} computes {_pct(cu[best])} of the time"
        waits = []
        if worker > 0:
            waits.append(f"{_pct(worker)} of its step waiting for the slowest worker")
        if site > 0:
            slowest = r["sites"][int(np.argmax(r["waiting_for_site"][best]))]
            waits.append(f"up to {_pct(site)} at {slowest} waiting for the slowest site")
        out.append(words + (f", losing {' and '.join(waits)}." if waits else "."))
    curves = {k: xs for k, xs in r["utilisation_by_H"].items() if k != DATA_PARALLEL}
    if curves:
        k = next((k for k, xs in curves.items() if xs[0] is not None), next(iter(curves)))
        xs = r["utilisation_by_H"][k]
        first = next(i for i, x in enumerate(xs) if x is not None)
        out.append(f"Syncing in rounds hides the sync but not the wait inside a DC: "
                   f"{v[k]['short']}'s compute utilisation goes from {_pct(xs[first])} at H = "
                   f"{r['H'][first]} to {_pct(xs[-1])} at H = {r['H'][-1]}"
                   + (f", against {_pct(r['utilisation_by_H'][DATA_PARALLEL][0])} for data "
                      "parallel." if DATA_PARALLEL in r["utilisation_by_H"] else "."))
    if r["largest_tail"] is not None:
        sym = _symbol(r["family"])
        ok = {k: t for k, t in r["tolerated_tail"].items() if r["tolerated_status"][k] != "not_reachable"}
        if ok:
            best = max(ok, key=lambda k: ok[k])
            out.append(f"To keep its GPUs computing {_pct(r['target'])} of the time, "
                       f"{v[best]['short']} tolerates the most: a tail of {sym} = {g3(ok[best])}"
                       + (" or more (any tail searched)" if r["tolerated_status"][best] == "any" else "")
                       + f" (the scenario's is {g3(r['tail'])}).")
        else:
            out.append(f"No variant keeps its GPUs computing {_pct(r['target'])} of the time, "
                       "even with no tail.")
    sv = r["site_value"]
    if sv is not None and cu:
        best = max(cu, key=cu.get)
        added = sv["throughput_added_tokens_per_s"][best]
        total = sv["throughput_tokens_per_s"][best]
        if r["equal_sites"] and added and added[0] is not None:
            out.append(f"Each site adds {_rate(added[0])} to {v[best]['short']}'s "
                       f"{_rate(total)} ({_pct(added[0] / total)} of it).")
        elif added:
            i = int(np.nanargmin([np.nan if a is None else a for a in added]))
            out.append(f"{r['sites'][i]} adds the least to {v[best]['short']}: "
                       f"{_rate(added[i])} of {_rate(total)}.")
    elif sv is None:
        out.append(r["site_value_note"])
    return out


def _variant_table(r: SitesStragglers) -> tuple[list[str], list[list[str]]]:
    sym = _symbol(r.family)
    cols = ["variant", "H", "CU", "waiting for the slowest site", "waiting for the slowest worker"]
    if r.largest_tail is not None:
        cols.append(f"tail ({sym}) tolerated at {_pct(r.target)} CU")
    rows = []
    for vid, d in r.variants.items():
        site = max((x for x in r.waiting_for_site[vid] if x is not None), default=None)
        worker = max((x for x in r.waiting_for_worker[vid] if x is not None), default=None)
        row = [d["short"], g6(d['sync_every']), _pct(r.compute_utilisation[vid]), _pct(site),
               _pct(worker)]
        if r.largest_tail is not None:
            st, t = r.tolerated_status[vid], r.tolerated_tail[vid]
            row.append("missed with no tail" if st == "not_reachable" else
                       f"any (to {g6(r.largest_tail)})" if st == "any" else g3(t))
        rows.append(row)
    return cols, rows


def _site_table(r: SitesStragglers) -> tuple[list[str], list[list[str]]]:
    cols = ["site", "workers", "compute per step"]
    rows = [[s, f"{w:,.0f}", f"{g4(1e3 * c)} ms" if c is not None else "-"]
            for s, w, c in zip(r.sites, r.workers, r.compute_s)]
    return cols, rows


def _value_table(r: SitesStragglers) -> tuple[list[str], list[list[str]]] | None:
    sv = r.site_value
    if sv is None:
        return None
    picks = [0] if r.equal_sites else list(range(len(r.sites)))
    heads = ["one site" if r.equal_sites else r.sites[i] for i in picks]
    cols = ["variant", "throughput", *(f"without {h}" for h in heads), *(f"{h} adds" for h in heads)]
    rows = []
    for vid, d in r.variants.items():
        without = [f"{_rate(sv['throughput_without_tokens_per_s'][vid][i])}, CU "
                   f"{_pct(sv['compute_utilisation_without'][vid][i])}" for i in picks]
        adds = [_rate(sv["throughput_added_tokens_per_s"][vid][i]) for i in picks]
        rows.append([d["short"], _rate(sv["throughput_tokens_per_s"][vid]), *without, *adds])
    return cols, rows


def _md_table(cols, rows) -> list[str]:
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols),
            *("| " + " | ".join(row) + " |" for row in rows)]


def markdown(results: Results | dict) -> str:
    r = Results.of(results).sites
    if r is None:
        return ""
    out = [f"## {TITLE}", "", *r.conclusions, "",
           "The share of each variant's step its GPUs wait, and the straggler tail it tolerates "
           "(docs/model.md section 16):", "", *_md_table(*_variant_table(r)), "",
           "The sites:", "", *_md_table(*_site_table(r))]
    value = _value_table(r)
    if value is not None:
        out += ["", "What each site adds (throughput and compute utilisation with every site and "
                "without it):", "", *_md_table(*value)]
    out += ["", *(f"- {a}" for a in r.assumptions)]
    return "\n".join(out)


def view(sc: Scenario, results: Results, sw: Sweeps, views: dict) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    r = Results.of(results).sites
    v = View(KEY, TITLE)
    if r is None:
        v.lacks("Sites and stragglers", KEY)
        return v
    idle = []
    for vid, d in r.variants.items():
        for i, site in enumerate(r.sites):
            for what, values in (("the slowest site", r.waiting_for_site[vid]),
                                 ("the slowest worker", r.waiting_for_worker[vid])):
                if values[i] is not None:
                    idle.append({"variant": vid, "short": d["short"], "site": site,
                                 "waiting_for": what, "share": values[i]})
    curves = [{"variant": vid, "short": r.variants[vid]["short"], "H": h, "compute_utilisation": x}
              for vid, xs in r.utilisation_by_H.items() for h, x in zip(r.H, xs) if x is not None]
    v.data = {"idle": idle, "curves": curves}
    cols, rows = _variant_table(r)
    v.table = {"columns": cols, "rows": rows, "caption": "Waiting and the tolerated tail"}
    sites_cols, sites_rows = _site_table(r)
    v.data["sites_table"] = {"columns": sites_cols, "rows": sites_rows, "caption": "The sites"}
    value = _value_table(r)
    if value is not None:
        v.data["value_table"] = {"columns": value[0], "rows": value[1],
                                 "caption": "What each site adds"}
    for sentence in r.conclusions:
        v.say(sentence)
    v.assumptions = list(r.assumptions)
    return v


def extra_tables(view: View) -> list[tuple[str, dict]]:
    """The sites, and what each adds (where the scenario has 3 DCs or more)."""
    out = [("The sites", view.data["sites_table"])] if view.data.get("sites_table") else []
    if view.data.get("value_table"):
        out.append(("What each site adds", view.data["value_table"]))
    return out


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets): the idle share of each site's step by variant, and
    compute utilisation against H."""
    if not view.data:
        return {}
    colors = variant_colors(sc.with_variants(pack(sc)).variants)
    width = "container" if interactive else WIDTH - 140
    bars = alt.Chart(alt.NamedData(name="idle")).mark_bar().encode(
        x=alt.X("short:N", title="variant", sort=None),
        xOffset=alt.XOffset("waiting_for:N"),
        y=alt.Y("share:Q", title="share of the step spent waiting (unit 1)", axis=alt.Axis(format="%")),
        color=alt.Color("waiting_for:N", title="waiting for",
                        scale=alt.Scale(domain=["the slowest site", "the slowest worker"],
                                        range=["#e45756", "#4c78a8"])),
        tooltip=[alt.Tooltip("short:N", title="variant"), alt.Tooltip("site:N"),
                 alt.Tooltip("waiting_for:N", title="waiting for"),
                 alt.Tooltip("share:Q", format=".3p")],
    ).properties(width=max(120, (WIDTH - 140) // max(1, len({row["site"] for row in view.data["idle"]}))),
                 height=HEIGHT)
    idle = bars.facet(column=alt.Column("site:N", title="site"))
    names = sorted({row["short"] for row in view.data["curves"]})
    lines = alt.Chart(alt.NamedData(name="curves")).mark_line(point=alt.OverlayMarkDef(size=20)).encode(
        x=alt.X("H:Q", title="inner steps a round, H (log)", scale=alt.Scale(type="log")),
        y=alt.Y("compute_utilisation:Q", title="compute utilisation (unit 1)",
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("short:N", title="variant",
                        scale=alt.Scale(domain=names, range=[colors.get(s, "#888") for s in names]),
                        legend=alt.Legend(labelLimit=0)),
        tooltip=[alt.Tooltip("short:N", title="variant"), alt.Tooltip("H:Q", format=","),
                 alt.Tooltip("compute_utilisation:Q", format=".3g")],
    ).properties(width=width, height=HEIGHT)
    return {f"{KEY}_idle": (_finish(idle), {"idle": view.data["idle"]}),
            f"{KEY}_by_H": (_finish(lines), {"curves": view.data["curves"]})}
