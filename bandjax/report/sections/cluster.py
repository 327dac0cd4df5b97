"""Report section "Your cluster": the winner against the number of data centres K and the WAN
topology, and the compared pairs' bandwidth break-evens against K (docs/model.md section 13), at the
scenario's WAN bandwidth, latency, budget and ENOB.

results.json gains ``cluster``: ``dcs`` (K), ``topologies``, per basis the winner and every
variant's time to target (s) at each (K, topology), and per compared pair the break-evens (GB/s)
at each (K, topology); ``links``: the scenario's directed WAN links (from, to, GB/s, ms, in use on
a ring / a mesh) and ``pacing``: the link that sets each variant's WAN pace per topology
(docs/model.md section 15); ``conclusions``: short sentences written from those numbers. With
per-link values K is the links table's: only the topology varies.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import altair as alt
import numpy as np

from ... import breakeven as be
from ... import links as _links
from ...scenario import BASES, Scenario
from .. import passes
from .. import constants as C
from ..constants import BANDWIDTH_RANGE_GBps
from .breakeven import compared_pairs
from .common import (ANY, HEIGHT, PADDING_PX, WIDTH, Results, Section, View, _and, _basis_filter,
                     _conclude_by_basis, _finish, _label_expr, _num, _params, _sel, _variant_color,
                     close_ahead, fmt_GBps, fmt_s, g3, g4, g6, setting_text, short, start_ahead,
                     take_ahead, variant_colors)


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
    # the scenario's directed WAN links: {from, to, bandwidth_GBps, latency_ms, ring, mesh}
    # (ring / mesh: whether that topology uses the link)
    links: list[dict] = field(default_factory=list)
    links_differ: bool = False
    pacing: dict = field(default_factory=dict)  # [topology][variant] -> [from DC, to DC]


KEY = Cluster.KEY


def links_rows(sc: Scenario) -> list[dict]:
    """Every directed link of the scenario in the report's units, with the topologies using it."""
    ring = {(r["from"], r["to"]) for r in _links.table(sc.replace(topology=0.0)) if r["in_use"]}
    return [{"from": r["from"], "to": r["to"], "bandwidth_GBps": r["bandwidth_Bps"] / 1e9,
             "latency_ms": r["latency_s"] * 1e3, "ring": (r["from"], r["to"]) in ring, "mesh": True}
            for r in _links.table(sc)]


def pacing(sc: Scenario) -> dict:
    """[topology][variant] -> [from, to]: the link that sets each variant's WAN pace."""
    from ...metrics import pacing_links

    return {t: {vid: list(pair)
                for vid, pair in pacing_links(sc.replace(topology=float(j))).items()}
            for j, t in enumerate(C.TOPOLOGIES)}


def _crossings(sc: Scenario, dcs: list[int]) -> list[dict]:
    """Break-evens of the compared pairs over (K, topology) in one vectorised root search (with
    per-link values, K is the table's and only the topology varies)."""
    ps = compared_pairs(sc)
    topo = np.arange(len(C.TOPOLOGIES), dtype=float)
    over_K = ({} if sc.links is not None
              else {"dcs": np.asarray(dcs, dtype=float)[:, None, None]})
    topology = np.broadcast_to(topo[None, :, None], (len(dcs), len(topo), 1))
    grid = sc.replace(**over_K, topology=topology)
    ia = np.array([sc.ids.index(a) for a, _, _ in ps])
    ib = np.array([sc.ids.index(b) for _, b, _ in ps])
    na = np.array([sc.steps_of(a, float(sc.enob), basis) for a, _, basis in ps])
    nb = np.array([sc.steps_of(b, float(sc.enob), basis) for _, b, basis in ps])
    lo, hi = (g * 1e9 for g in C.BANDWIDTH_RANGE_GBps)
    c = be.all_bandwidth_crossings(grid, ia, ib, na, nb, lo, hi)
    x = np.asarray(c.x).reshape(len(dcs), len(topo), len(ps), -1)  # (K, topology, pair, root)
    out = []
    for p, (a, b, basis) in enumerate(ps):
        cells = [[[float(v) / 1e9 for v in x[i, t, p] if np.isfinite(v)]
                  for t in range(len(C.TOPOLOGIES))] for i in range(len(dcs))]
        out.append({"a": a, "b": b, "basis": basis, "GBps": cells})
    return out


def compute(sc: Scenario, sw: passes.Sweeps, crossings: tuple | None = None) -> Cluster:
    """The section from the report's pass; ``crossings``: (dcs, :func:`_crossings` over them),
    found ahead."""
    ds = sw.cluster.transpose("dcs", "topology", "basis", "variant")
    dcs = [int(k) for k in ds.dcs.values]
    t = np.asarray(ds.time_to_target_s)
    times = {basis: {vid: [[None if math.isnan(t[i, k, j, v]) else float(t[i, k, j, v])
                            for k in range(len(C.TOPOLOGIES))] for i in range(len(dcs))]
                     for v, vid in enumerate(sc.ids)} for j, basis in enumerate(BASES)}
    masked = np.where(np.isnan(t), np.inf, t)
    best = np.argmin(masked, axis=-1)
    winner = {basis: [[sc.ids[int(best[i, k, j])] if np.isfinite(masked[i, k, j]).any() else None
                       for k in range(len(C.TOPOLOGIES))] for i in range(len(dcs))]
              for j, basis in enumerate(BASES)}
    found = crossings is not None and crossings[0] == dcs
    crossings = crossings[1] if found else _crossings(sc, dcs)
    cl = Cluster(dcs=dcs, topologies=list(C.TOPOLOGIES),
                 wan_GBps=float(sc.wan_Bps) / 1e9, latency_ms=float(sc.wan_latency_s) * 1e3,
                 time_to_target_s=times, winner=winner, break_even_GBps=crossings, conclusions=[],
                 links=links_rows(sc), links_differ=_links.differ(sc), pacing=pacing(sc))
    return replace(cl, conclusions=conclusions(sc, cl))


def _short(sc: Scenario, vid) -> str:
    return sc.variant(vid).short if vid else "none"


def _runs(values: list, dcs: list[int]) -> list[tuple[object, int, int]]:
    """(value, first K, last K) of the runs of equal values along K."""
    out: list[list] = []
    for v, k in zip(values, dcs):
        if out and out[-1][0] == v:
            out[-1][2] = k
        else:
            out.append([v, k, k])
    return [tuple(r) for r in out]


def _link_name(pair) -> str:
    return f"{pair[0]} to {pair[1]}"


def _fmt_link(row: dict) -> str:
    return (f"{g3(row['bandwidth_GBps'])} GB/s ({g3(8 * row['bandwidth_GBps'])} Gbit/s), "
            f"{g3(row['latency_ms'])} ms")


def _ring_upgrade(slowest: dict, ring: list[dict]) -> str:
    """How far raising the ring's slowest link shortens its WAN time: up to the next slower link
    (the first one faster than it as written, 3 significant figures), or not at all alone where
    other links are as slow, so the advice never asks for the bandwidth the link already has."""
    if len(ring) < 2 or min(r["bandwidth_GBps"] for r in ring) < slowest["bandwidth_GBps"]:
        return ""
    name = _link_name((slowest["from"], slowest["to"]))
    at = g3(slowest["bandwidth_GBps"])
    as_slow = [r for r in ring if r is not slowest and g3(r["bandwidth_GBps"]) == at]
    faster = sorted((r for r in ring if g3(r["bandwidth_GBps"]) != at),
                    key=lambda r: r["bandwidth_GBps"])
    if as_slow:
        others = _and([_link_name((r["from"], r["to"])) for r in as_slow])
        verb = "is" if len(as_slow) == 1 else "are"
        return (f" A faster {name} link alone does not shorten the ring's WAN time: the {others} "
                f"link{'s' if len(as_slow) > 1 else ''} {verb} as slow ({at} GB/s); raise "
                f"{'both' if len(as_slow) == 1 else 'them all'} together.")
    if not faster:
        return ""
    nxt = faster[0]
    return (f" A faster {name} link shortens the ring's WAN time only up to "
            f"{g3(nxt['bandwidth_GBps'])} GB/s ({g3(8 * nxt['bandwidth_GBps'])} Gbit/s), where the "
            f"{nxt['from']} to {nxt['to']} link paces instead.")


def links_words(sc: Scenario, cl: Cluster) -> list[str]:
    """With links that differ: per topology, which link paces how many variants, and on a ring how
    far that link can be raised before the next slowest link paces instead."""
    if not cl.links_differ:
        return []
    rows = {(r["from"], r["to"]): r for r in cl.links}
    words = []
    for topo in cl.topologies:
        paced = cl.pacing.get(topo, {})
        if not paced:
            continue
        counts: dict = {}
        for pair in paced.values():
            counts[tuple(pair)] = counts.get(tuple(pair), 0) + 1
        top, n = max(counts.items(), key=lambda kv: kv[1])
        text = (f"{topo.capitalize()}: the {_link_name(top)} link ({_fmt_link(rows[top])}) paces "
                f"{n} of {len(paced)} variants")
        others = [f"{_link_name(p)} {k}" for p, k in counts.items() if p != top]
        text += (f" (others: {', '.join(others)})." if others else ".")
        if topo == "ring":
            text += _ring_upgrade(rows[top], [r for r in cl.links if r["ring"]])
        words.append(text)
    return words


def conclusions(sc: Scenario, cl: Cluster) -> list[str]:
    """Short sentences from the numbers: who wins along K on each topology, how the pairs'
    break-evens move from the smallest to the largest K, and which link paces the variants."""
    words = links_words(sc, cl)
    for j, topo in enumerate(cl.topologies):
        for basis in BASES:
            runs = _runs([cl.winner[basis][i][j] for i in range(len(cl.dcs))], cl.dcs)
            text = "; ".join(f"{_short(sc, w)} at K = {a}" + (f" to {b}" if b != a else "")
                             for w, a, b in runs)
            words.append(f"{topo.capitalize()}, {basis} basis, at {g6(cl.wan_GBps)} GB/s "
                         f"({g6(8 * cl.wan_GBps)} Gb/s): fastest to target {text}.")
    for e in cl.break_even_GBps:
        for j, topo in enumerate(cl.topologies):
            first, last = e["GBps"][0][j], e["GBps"][-1][j]
            pair = f"{_short(sc, e['a'])} vs {_short(sc, e['b'])} ({e['basis']} basis, {topo})"
            if first and len(cl.dcs) == 1:
                words.append(f"{pair}: break-even {g3(first[0])} GB/s ({g3(8 * first[0])} Gb/s) "
                             f"(the slowest link's) at K = {cl.dcs[0]}.")
            elif first and last:
                words.append(f"{pair}: break-even {g3(first[0])} GB/s ({g3(8 * first[0])} Gb/s) at "
                             f"K = {cl.dcs[0]}, {g3(last[0])} GB/s ({g3(8 * last[0])} Gb/s) at "
                             f"K = {cl.dcs[-1]}.")
            elif not any(cell[j] for cell in e["GBps"]):
                words.append(f"{pair}: no break-even in {g6(C.BANDWIDTH_RANGE_GBps[0])} to "
                             f"{g3(C.BANDWIDTH_RANGE_GBps[1])} GB/s at any K.")
    return words


def start(sc: Scenario, ctx: dict) -> None:
    """Begin the break-evens over K and topology, which read the scenario alone
    (:func:`.common.start_ahead`)."""
    dcs = [int(k) for k in passes.cluster_dcs(sc)]
    start_ahead(ctx, KEY, lambda: (dcs, _crossings(sc, dcs)))


def close(ctx: dict) -> None:
    close_ahead(ctx, KEY)


def build(sc: Scenario, ctx: dict) -> Cluster:
    started, crossings = take_ahead(ctx, KEY)
    return compute(sc, passes.of(sc, ctx), crossings if started else None)


def _fmt(xs) -> str:
    return ", ".join(g3(x) for x in xs) if xs else "none"


def links_caption(cl: Cluster) -> str:
    """One sentence on the links: every link alike, or where the table below comes from."""
    if not cl.links_differ:
        return (f"Every directed WAN link {g3(cl.wan_GBps)} GB/s ({g3(8 * cl.wan_GBps)} Gbit/s), "
                f"{g3(cl.latency_ms)} ms one-way latency.")
    K = cl.dcs[0]
    return (f"The scenario's {K} DCs and their directed WAN links (the ring runs in the order the "
            f"DCs are listed; a mesh uses every link); K = {K} comes from the links table, so only "
            "the topology varies here. Bandwidth in GB/s and Gbit/s, one-way latency in ms; "
            "[free] budget unless the scenario names one.")


def links_table(cl: Cluster) -> dict | None:
    """The links as a table (columns with units), or None for equal links."""
    if not cl.links_differ:
        return None
    paced = {}
    for topo, by in cl.pacing.items():
        for pair in by.values():
            paced.setdefault(tuple(pair), set()).add(topo)
    rows = [[r["from"], r["to"], g4(r['bandwidth_GBps']), g4(8 * r['bandwidth_GBps']),
             g4(r['latency_ms']), "yes" if r["ring"] else "no", "yes" if r["mesh"] else "no",
             ", ".join(t for t in cl.topologies if t in paced.get((r["from"], r["to"]), ()))
             or "-"]
            for r in cl.links]
    return {"columns": ["from", "to", "bandwidth (GB/s)", "bandwidth (Gbit/s)", "latency (ms)",
                        "in use: ring", "in use: mesh", "paces (topology)"],
            "rows": rows, "nowrap": [2, 3, 4], "caption": links_caption(cl)}


def pacing_table(cl: Cluster, names: dict | None = None) -> dict | None:
    """The link that paces each variant on each topology, or None for equal links."""
    if not cl.links_differ or not cl.pacing:
        return None
    names = names or {}
    ids = list(next(iter(cl.pacing.values())))
    return {"columns": ["variant"] + [f"pacing link, {t}" for t in cl.topologies],
            "rows": [[names.get(v, v)] + [_link_name(cl.pacing[t][v]) for t in cl.topologies]
                     for v in ids],
            "caption": "The link that sets each variant's WAN pace (docs/model.md section 15): a "
                       "ring's slowest link, a mesh's pair that finishes last."}


def links_markdown(cl: Cluster, names: dict | None = None) -> list[str]:
    """The links as markdown lines: one sentence for equal links, else two tables."""
    t = links_table(cl)
    if t is None:
        return [links_caption(cl)]
    out = [t["caption"], "", "| " + " | ".join(t["columns"]) + " |",
           "|" + "---|" * len(t["columns"])] + ["| " + " | ".join(r) + " |" for r in t["rows"]]
    p = pacing_table(cl, names)
    out += ["", "| " + " | ".join(p["columns"]) + " |", "|" + "---|" * len(p["columns"])]
    out += ["| " + " | ".join(r) + " |" for r in p["rows"]]
    return out


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    cl = results.cluster
    if cl is None:
        return ""
    names = results.names()
    out = ["## Your cluster", ""]
    if cl.links_differ:
        out += [*links_markdown(cl, names), ""]
    else:
        out += [f"K data centres, ring or mesh WAN, at the scenario's {g6(cl.wan_GBps)} GB/s "
                f"({g6(8 * cl.wan_GBps)} Gb/s) per directed link and {g6(cl.latency_ms)} ms one-way "
                "latency per hop; [free] budget unless the scenario names one.", ""]
    out += [
           "### Fastest to target (time in s)", "",
           "| K | " + " | ".join(f"{t}, {b}" for t in cl.topologies for b in BASES) + " |",
           "|---|" + "---|" * (len(cl.topologies) * len(BASES))]
    for i, k in enumerate(cl.dcs):
        cells = []
        for j in range(len(cl.topologies)):
            for b in BASES:
                w = cl.winner[b][i][j]
                cells.append("none" if w is None else
                             f"{names.get(w, w)} ({g3(cl.time_to_target_s[b][w][i][j])} s)")
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    out += ["", "### Bandwidth break-evens against K (GB/s)", "",
            "| pair | basis | topology | " + " | ".join(f"K = {k}" for k in cl.dcs) + " |",
            "|---|---|---|" + "---|" * len(cl.dcs)]
    for e in cl.break_even_GBps:
        for j, t in enumerate(cl.topologies):
            out.append(f"| {names.get(e['a'], e['a'])} vs {names.get(e['b'], e['b'])} | {e['basis']} "
                       f"| {t} | " + " | ".join(_fmt(e["GBps"][i][j]) for i in range(len(cl.dcs)))
                       + " |")
    out += ["", *cl.conclusions]
    return "\n".join(out)


# ------------------------------------------------------------------------------ page view and chart


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
        times = (("" if not (t0 and t1) else f" ({fmt_s(t0)})" if k0 == k1
                  else f" ({fmt_s(t0)} at K = {k0}, {fmt_s(t1)} at K = {k1})"))
        words.append(f"{topo.capitalize()}: " + "; ".join(
            f"{short(w) if w else 'none'} first at K = {a}" + (f" to {b}" if b != a else "")
            for w, a, b in runs) + times + ".")
        for e in _cluster_entries(cl, basis):
            first, last = e["GBps"][0][j], e["GBps"][-1][j]
            if e["b"] in winners and first and len(cl.dcs) == 1:
                words.append(f"{topo.capitalize()}: {short(e['a'])} and {short(e['b'])} break even "
                             f"at {fmt_GBps(first[0])} on the slowest link at K = {k0}.")
            elif e["b"] in winners and first and last:
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
                 "topologies": list(cl.topologies), "wan_GBps": _num(cl.wan_GBps),
                 "links": [dict(r) for r in cl.links], "links_differ": cl.links_differ,
                 "pacing": cl.pacing}
    view.table = _cluster_table(sc, cl)
    for sentence in links_words(sc, cl):
        view.say(sentence)
    _conclude_by_basis(view, sc, {b: _cluster_words(cl, b) for b in BASES})
    lat = float(cl.latency_ms)
    where = (f"On the scenario's links (the slowest {fmt_GBps(cl.wan_GBps)}, the longest "
             f"{g6(lat)} ms one-way; the table below)" if cl.links_differ else
             f"At the scenario's {fmt_GBps(cl.wan_GBps)} on every directed WAN link and "
             f"{g6(lat)} ms one-way latency per hop")
    view.assumptions = [
        f"{where}, {setting_text(sc)}: the ENOB and budget controls "
        "do not move this section, the basis control does.",
        "K data centres of the scenario's workers each; a ring has K directed WAN links, a mesh "
        "K(K-1); at K = 2 both are the study's two directions (docs/model.md section 13).",
        "Steps to target are those measured for the study's cluster, at every K.",
        f"Break-evens: the WAN bandwidth per link where two variants' times to target are equal, "
        f"searched in {g3(BANDWIDTH_RANGE_GBps[0])} to {g3(BANDWIDTH_RANGE_GBps[1])} GB/s; a K "
        "without a point has none in that range.",
    ]
    if cl.links_differ:
        view.assumptions.append(
            f"K = {cl.dcs[0]} comes from the links table; a break-even is the slowest link's "
            "bandwidth, every link scaled in proportion (docs/model.md section 15).")
    if len(cl.dcs) == 1:
        view.assumptions.append(f"One K ({cl.dcs[0]}): nothing is drawn against K; the tables "
                                "give its winners and break-evens.")
    return view


def extra_tables(view: View) -> list[tuple[str, dict]]:
    """The break-evens at a single K (drawn against K, they would be one point each), then the
    links table and the pacing links, for links that differ (see :func:`links_table`)."""
    d = view.data
    out = []
    if len(d.get("dcs", ())) == 1 and d.get("break_evens") is not None:
        out.append((f"Break-evens at K = {d['dcs'][0]}", _single_k_break_evens(d)))
    if not d.get("links_differ"):
        return out
    cl = _from_view(d)
    names = {v: short_or(v) for v in next(iter(cl.pacing.values()))}
    return out + [("The WAN's links", links_table(cl)),
                  ("The link that paces each variant", pacing_table(cl, names))]


def _single_k_break_evens(d: dict) -> dict:
    """The break-evens of the view's rows at its one K: a row per pair, basis and topology."""
    cells: dict = {}
    for r in d["break_evens"]:
        key = (r["pair"], "both" if r["basis"] == ANY else r["basis"], r["topology"])
        cells.setdefault(key, []).append(fmt_GBps(r["GBps"]))
    return {"columns": ["pair (first / second)", "basis", "topology", "break-even"],
            "rows": [[*key, "; ".join(v)] for key, v in cells.items()],
            "nowrap": [0],
            "caption": f"Break-evens of each compared pair in {g3(BANDWIDTH_RANGE_GBps[0])} to "
                       f"{g3(BANDWIDTH_RANGE_GBps[1])} GB/s at the scenario's K; a pair not "
                       "listed has none there."}


def short_or(vid: str) -> str:
    try:
        return short(vid)
    except (KeyError, ValueError):
        return vid


def _from_view(d: dict) -> Cluster:
    return Cluster(dcs=d["dcs"], topologies=d["topologies"], wan_GBps=d["wan_GBps"], latency_ms=0.0,
                   time_to_target_s={}, winner={}, break_even_GBps=[], conclusions=[],
                   links=d["links"], links_differ=d["links_differ"], pacing=d["pacing"])


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


WINNER_LEGEND = "fastest to target at this K"


def _k_axis(dcs):
    return alt.X("K:Q", title="data centres K", scale=alt.Scale(domain=[dcs[0], dcs[-1]], nice=False),
                 axis=alt.Axis(format="d", tickMinStep=1, grid=True))


def cluster_time_panel(view: View, sc: Scenario, topology: str, interactive: bool = False):
    """Time to target of each variant against K on one WAN topology; the winner at each K ringed."""
    d = view.data
    sel = _sel(sc, interactive)
    where = f"datum.topology === {json.dumps(topology)} && {_basis_filter(sel)}"
    x = _k_axis(d["dcs"])
    y = alt.Y("t_s:Q", title="time to target (s, log)", axis=alt.Axis(format="~g"),
              scale=alt.Scale(type="log", padding=PADDING_PX, nice=False))
    tooltip = [alt.Tooltip("short:N", title="variant"), alt.Tooltip("K:Q", title="K"),
               alt.Tooltip("t_s:Q", title="time to target (s)", format=".3g")]
    lines = alt.Chart(alt.NamedData(name="times")).transform_filter(where).mark_line(
        strokeWidth=2, point=alt.OverlayMarkDef(size=18)).encode(
        x=x, y=y, color=_variant_color(), tooltip=tooltip)
    ring = alt.Chart(alt.NamedData(name="winners")).transform_filter(where).transform_calculate(
        mark=f"'{WINNER_LEGEND}'").mark_point(size=170, filled=False, strokeWidth=2.5, opacity=1).encode(
        x=x, y=y, color=alt.value("#222"),
        shape=alt.Shape("mark:N", title="winner", scale=alt.Scale(domain=[WINNER_LEGEND],
                                                                  range=["circle"]),
                        legend=alt.Legend(symbolFillColor="transparent", symbolStrokeColor="#222",
                                          symbolStrokeWidth=2, labelLimit=360)),
        tooltip=[alt.Tooltip("short:N", title="fastest"), alt.Tooltip("K:Q", title="K"),
                 alt.Tooltip("t_s:Q", title="time to target (s)", format=".3g")])
    return alt.layer(lines, ring).properties(
        width="container" if interactive else WIDTH - 160, height=HEIGHT - 40,
        title=f"{topology}: time to target against K")


def cluster_break_even_panel(view: View, sc: Scenario, topology: str,
                             interactive: bool = False):
    """The compared pairs' bandwidth break-evens against K on one WAN topology, beside the
    scenario's WAN bandwidth."""
    d = view.data
    sel = _sel(sc, interactive)
    where = f"datum.topology === {json.dumps(topology)} && {_basis_filter(sel)}"
    x = _k_axis(d["dcs"])
    y = alt.Y("GBps:Q", title="break-even WAN bandwidth per link (GB/s, log)",
              axis=alt.Axis(format="~g"), scale=alt.Scale(type="log", padding=PADDING_PX, nice=False))
    colors = variant_colors()
    seconds = [v for v in colors if any(r["second"] == v for r in d["break_evens"])]
    firsts = list(dict.fromkeys(r["first"] for r in d["break_evens"]))
    color = alt.Color("second:N", title="second variant", scale=alt.Scale(
        domain=seconds, range=[colors[v] for v in seconds]),
        legend=alt.Legend(labelExpr=_label_expr(), labelLimit=360))
    dash = alt.StrokeDash("first:N", title="first variant", scale=alt.Scale(
        domain=firsts, range=[[1, 0], [6, 3], [2, 2], [8, 2, 2, 2]][:len(firsts)]),
        legend=alt.Legend(symbolStrokeColor="#333", labelExpr=_label_expr(), labelLimit=360))
    lines = alt.Chart(alt.NamedData(name="break_evens")).transform_filter(where).transform_calculate(
        line="datum.pair + ' ' + datum.root").mark_line(
        strokeWidth=2, point=alt.OverlayMarkDef(size=22)).encode(
        x=x, y=y, color=color, strokeDash=dash, detail="line:N",
        tooltip=["pair:N", alt.Tooltip("K:Q", title="K"),
                 alt.Tooltip("GBps:Q", title="break-even (GB/s)", format=".3g")])
    wan = alt.Chart(alt.NamedData(name="scenario"))
    layers = [wan.mark_rule(strokeDash=[4, 4], color="#666").encode(y=alt.Y("GBps:Q")),
              wan.mark_text(align="left", dx=4, dy=-3, baseline="bottom", color="#444",
                            fontSize=11).encode(y=alt.Y("GBps:Q"), x=alt.value(0), text="label:N"),
              lines]
    return alt.layer(*layers).properties(
        width="container" if interactive else WIDTH - 160, height=HEIGHT - 40,
        title=f"{topology}: break-evens against K")


def cluster_charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """On the page, one chart per topology and kind (they wrap on a narrow screen); as a figure,
    all four in one, on the hypothesis basis."""
    d = view.data
    if not d.get("times") or len(d["dcs"]) < 2:
        return {}  # against a single K each line would be one point: the tables hold it
    data = {"times": d["times"], "winners": d["winners"], "break_evens": d["break_evens"],
            "scenario": [{"GBps": _num(d["wan_GBps"]),
                          "label": f"scenario: {g3(d['wan_GBps'])} GB/s"}]}
    kinds = [("time", cluster_time_panel)]
    if d["break_evens"]:
        kinds.append(("break_even", cluster_break_even_panel))
    if interactive:
        # the basis only: the section is at the scenario's ENOB and budget
        params = [p for p in _params(True, sc) if p.name == "basis"]
        return {f"cluster_{kind}_{t}": (_finish(build(view, sc, t, True).add_params(*params),
                                                legend="bottom"), data)
                for kind, build in kinds for t in d["topologies"]}
    rows = [alt.hconcat(*(build(view, sc, t) for t in d["topologies"]), spacing=30)
            for _, build in kinds]
    # each row keeps its own colour legend: "variant" above, the break-evens' "second variant"
    # below (one shared legend would be titled with both)
    chart = alt.vconcat(*rows, spacing=24).resolve_scale(
        color="independent", strokeDash="independent").properties(
        title=f"Your cluster at {fmt_GBps(d['wan_GBps'])}, {BASES[0]} basis")
    return {"cluster": (_finish(chart), data)}


PAGE_AFTER = "energy"  # on the page after the energy; in results.json before the shared WAN
CHART_GRID = True  # the page sets its charts side by side where the window is wide enough


def view(sc: Scenario, results: Results, sw, views: dict[str, View]) -> View:
    """The page section (see :mod:`bandjax.report.sections`)."""
    return cluster_view(sc, results)


def charts(view: View, sc: Scenario, interactive: bool = False) -> dict:
    """Chart id -> (Altair chart, datasets): a time and a break-even panel per topology."""
    return cluster_charts(view, sc, interactive)
