"""Report section "Your cluster": the winner against the number of data centres K and the WAN
topology, and the compared pairs' bandwidth break-evens against K (docs/model.md section 13), at the
scenario's WAN bandwidth, latency, budget and ENOB.

results.json gains ``cluster``: ``dcs`` (K), ``topologies``, per basis the winner and every
variant's time to target (s) at each (K, topology), and per compared pair the break-evens (GB/s)
at each (K, topology); ``conclusions``: short sentences written from those numbers.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import breakeven as be
from ..scenario import BASES, Scenario
from . import constants as C
from . import passes
from .breakeven import compared_pairs
from .sections import Cluster, Results

KEY = Cluster.KEY


def _crossings(sc: Scenario) -> list[dict]:
    """Break-evens of the compared pairs over (K, topology) in one vectorised root search."""
    ps = compared_pairs(sc)
    K = np.asarray(C.DCS, dtype=float)
    topo = np.arange(len(C.TOPOLOGIES), dtype=float)
    grid = sc.replace(dcs=K[:, None, None], topology=topo[None, :, None])
    ia = np.array([sc.ids.index(a) for a, _, _ in ps])
    ib = np.array([sc.ids.index(b) for _, b, _ in ps])
    na = np.array([sc.steps_of(a, float(sc.enob), basis) for a, _, basis in ps])
    nb = np.array([sc.steps_of(b, float(sc.enob), basis) for _, b, basis in ps])
    lo, hi = (g * 1e9 for g in C.BANDWIDTH_RANGE_GBps)
    c = be.all_bandwidth_crossings(grid, ia, ib, na, nb, lo, hi)
    x = np.asarray(c.x)  # (K, topology, pair, root)
    out = []
    for p, (a, b, basis) in enumerate(ps):
        cells = [[[float(v) / 1e9 for v in x[i, t, p] if np.isfinite(v)]
                  for t in range(len(C.TOPOLOGIES))] for i in range(len(C.DCS))]
        out.append({"a": a, "b": b, "basis": basis, "GBps": cells})
    return out


def compute(sc: Scenario, sw: passes.Sweeps) -> Cluster:
    ds = sw.cluster.transpose("dcs", "topology", "basis", "variant")
    t = np.asarray(ds.time_to_target_s)
    times = {basis: {vid: [[None if math.isnan(t[i, k, j, v]) else float(t[i, k, j, v])
                            for k in range(len(C.TOPOLOGIES))] for i in range(len(C.DCS))]
                     for v, vid in enumerate(sc.ids)} for j, basis in enumerate(BASES)}
    masked = np.where(np.isnan(t), np.inf, t)
    best = np.argmin(masked, axis=-1)
    winner = {basis: [[sc.ids[int(best[i, k, j])] if np.isfinite(masked[i, k, j]).any() else None
                       for k in range(len(C.TOPOLOGIES))] for i in range(len(C.DCS))]
              for j, basis in enumerate(BASES)}
    crossings = _crossings(sc)
    cl = Cluster(dcs=list(C.DCS), topologies=list(C.TOPOLOGIES),
                 wan_GBps=float(sc.wan_Bps) / 1e9, latency_ms=float(sc.wan_latency_s) * 1e3,
                 time_to_target_s=times, winner=winner, break_even_GBps=crossings, conclusions=[])
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


def conclusions(sc: Scenario, cl: Cluster) -> list[str]:
    """Short sentences from the numbers: who wins along K on each topology, and how the pairs'
    break-evens move from the smallest to the largest K."""
    words = []
    for j, topo in enumerate(cl.topologies):
        for basis in BASES:
            runs = _runs([cl.winner[basis][i][j] for i in range(len(cl.dcs))], cl.dcs)
            text = "; ".join(f"{_short(sc, w)} at K = {a}" + (f" to {b}" if b != a else "")
                             for w, a, b in runs)
            words.append(f"{topo.capitalize()}, {basis} basis, at {cl.wan_GBps:g} GB/s "
                         f"({8 * cl.wan_GBps:g} Gb/s): fastest to target {text}.")
    for e in cl.break_even_GBps:
        for j, topo in enumerate(cl.topologies):
            first, last = e["GBps"][0][j], e["GBps"][-1][j]
            pair = f"{_short(sc, e['a'])} vs {_short(sc, e['b'])} ({e['basis']} basis, {topo})"
            if first and last:
                words.append(f"{pair}: break-even {first[0]:.3g} GB/s ({8 * first[0]:.3g} Gb/s) at "
                             f"K = {cl.dcs[0]}, {last[0]:.3g} GB/s ({8 * last[0]:.3g} Gb/s) at "
                             f"K = {cl.dcs[-1]}.")
            elif not any(cell[j] for cell in e["GBps"]):
                words.append(f"{pair}: no break-even in {C.BANDWIDTH_RANGE_GBps[0]:g} to "
                             f"{C.BANDWIDTH_RANGE_GBps[1]:,g} GB/s at any K.")
    return words


def build(sc: Scenario, ctx: dict) -> Cluster:
    return compute(sc, passes.of(sc, ctx))


def _fmt(xs) -> str:
    return ", ".join(f"{x:.3g}" for x in xs) if xs else "none"


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    cl = results.cluster
    if cl is None:
        return ""
    names = results.names()
    out = ["## Your cluster", "",
           f"K data centres, ring or mesh WAN, at the scenario's {cl.wan_GBps:g} GB/s "
           f"({8 * cl.wan_GBps:g} Gb/s) per directed link and {cl.latency_ms:g} ms one-way "
           "latency per hop; [free] budget unless the scenario names one.", "",
           "### Fastest to target (time in s)", "",
           "| K | " + " | ".join(f"{t}, {b}" for t in cl.topologies for b in BASES) + " |",
           "|---|" + "---|" * (len(cl.topologies) * len(BASES))]
    for i, k in enumerate(cl.dcs):
        cells = []
        for j in range(len(cl.topologies)):
            for b in BASES:
                w = cl.winner[b][i][j]
                cells.append("none" if w is None else
                             f"{names.get(w, w)} ({cl.time_to_target_s[b][w][i][j]:.3g} s)")
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
