"""The report's headline: what a planner came for, for any scenario, then the study's question.

First the fastest way to train at the scenario's bandwidth among every variant it holds, each
variant's compute utilisation there and the bandwidth each needs for 90% and 95% (the ``need``
section's), and, where the WAN links differ, the link that paces the run and how far its upgrade
goes (the ``cluster`` section's); then where the winner changes over bandwidth and the smallest
change that would make the in-transit band win, each with its steps basis. A sentence that is the
same on both bases is said once.

Read from the other sections' results and the report's one pass; nothing is computed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...scenario import BASES, Scenario
from .. import passes
from ..constants import TOPOLOGIES
from .breakeven import BreakEvens
from .common import Results, Section, _and, fmt_value, g3, g6
from .need import CAP_WORDS, cell, pct


@dataclass(frozen=True)
class Headline(Section):
    """Who wins at the scenario (s), each variant's compute utilisation there and the bandwidth it
    needs (GB/s), the link that paces the run, where the winner changes over bandwidth (GB/s), and
    the smallest change that would make the in-transit band win, per basis.

    ``unranked``: the scenario's variants with no time to target (no steps measured).
    ``utilisation[id]``: the ``need`` section's, for every variant it holds (the scenario's and
    the methods it adds, ``pack``), named by ``short``: ``at_wan`` (unit 1), ``required_GBps``, ``status`` and ``cap``
    per target of ``need_targets``, ``sync_every`` (H) and ``delay`` (tau, steps); ``range_GBps``
    the range searched. ``pacing``: where the links differ, at the scenario's ``topology`` the
    ``link`` [from, to] that paces the fastest variant (``variant``; GB/s, ms), how many of the
    variants it paces (``paces`` of ``of``), and on a ring the ``next`` link that would pace
    instead ([from, to], GB/s), the ceiling of what that link's upgrade gains."""

    KEY: ClassVar[str] = "headline"

    wan_GBps: float
    winner: dict  # [basis] {variant, time_to_target_s}
    changes: dict  # [basis] [{from, to, GBps}]
    smallest_change: dict  # [basis] {a, b, parameter, current, required, ratio, units, status}
    unranked: list | None = None
    need_targets: list | None = None
    range_GBps: list | None = None
    utilisation: dict | None = None
    pacing: dict | None = None


KEY = Headline.KEY
LEAD = True  # results.md shows it right after the title
NEED_AT = (0.9, 0.95)  # the compute-utilisation targets it speaks of


def _segments(sw: passes.Sweeps, basis: str, own: str) -> list[tuple[str, float, float]]:
    """(winner id, from GB/s, to GB/s) along the curves' grid at the scenario's setting."""
    import numpy as np

    ds = sw.at(sw.bandwidth, own).sel(basis=basis).transpose("bandwidth", "variant")
    t = np.where(np.isnan(ds.time_to_target_s.values), np.inf, ds.time_to_target_s.values)
    grid, ids = ds.bandwidth.values, list(ds.variant.values)
    segs: list[list] = []
    for i, g in enumerate(grid):
        w = ids[int(np.argmin(t[i]))] if np.isfinite(t[i]).any() else None
        if segs and segs[-1][0] == w:
            segs[-1][2] = float(g)
        else:
            segs.append([w, float(g), float(g)])
    return [tuple(s) for s in segs]


def build(sc: Scenario, ctx: dict) -> Headline:
    """The headline from the sections built before it (``ctx["sections"]``: core, and where
    they were built, break-evens, cluster and need) and the report's one pass."""
    done = ctx["sections"]
    if done.core is None:
        raise ValueError("the headline reads the core section; build it first")
    sw = passes.of(sc, ctx)
    own = passes.scenario_budget(sc)
    wan = float(sc.wan_Bps) / 1e9
    winners, changes = {}, {}
    for basis in BASES:
        times = {v: t for v, t in done.core.time_to_target_s[basis].items() if not _none(t)}
        best = min(times, key=times.get) if times else None
        winners[basis] = {"variant": best, "time_to_target_s": times.get(best)}
        segs = _segments(sw, basis, own)
        # a change of winner lies between two grid points: its root-finder value where a
        # break-even of the two is known, else the midpoint (log) of the two grid points
        changes[basis] = [{"from": a[0], "to": b[0],
                           "GBps": _crossing(done.breakeven, a[0], b[0], basis, a[2], b[1])}
                          for a, b in zip(segs, segs[1:])]
    transit = {v.id for v in sc.variants if v.in_transit}
    inverse = done.breakeven.inverse if done.breakeven else []
    change = [c for c in inverse if c["a"] in transit and c["status"] in ("found", "already")]
    smallest = {}
    for basis in BASES:
        ok = [c for c in change if c["basis"] == basis and c.get("ratio") is not None]
        if ok:
            c = min(ok, key=lambda c: abs(_log(c["ratio"])))
            smallest[basis] = {k: c[k] for k in ("a", "b", "parameter", "current", "required",
                                                 "ratio", "units", "status")}
    # no time on either basis (None in results.json, NaN as the core section builds it)
    unranked = [v for v in sc.ids
                if all(_none(done.core.time_to_target_s[b].get(v)) for b in BASES)]
    targets, range_GBps, utilisation = _utilisation(done.need)
    return Headline(wan_GBps=wan, winner=winners, changes=changes, smallest_change=smallest,
                    unranked=unranked, need_targets=targets, range_GBps=range_GBps,
                    utilisation=utilisation, pacing=_pacing(sc, done.cluster, winners))


def _none(t) -> bool:
    return t is None or t != t


def _utilisation(r) -> tuple:
    """(targets, range GB/s, per variant: utilisation at the scenario's bandwidth and the
    bandwidth each of :data:`NEED_AT` needs), from the need section; Nones without it."""
    if r is None:
        return None, None, None
    at = [i for i, u in enumerate(r.utilisation) if any(abs(u - x) < 1e-12 for x in NEED_AT)]
    out = {vid: {"at_wan": r.utilisation_at_wan[vid],
                 "required_GBps": [r.required_GBps[vid][i] for i in at],
                 "status": [r.status[vid][i] for i in at], "cap": [r.cap[vid][i] for i in at],
                 "sync_every": v["sync_every"], "delay": v["delay"], "pack": v["pack"],
                 "short": v["short"]}
           for vid, v in r.variants.items()}
    return [r.utilisation[i] for i in at], list(r.range_GBps), out


def _pacing(sc: Scenario, cl, winners: dict) -> dict | None:
    """The link that paces the fastest variant at the scenario's topology, from the cluster
    section, where the links differ; on a ring, the next slowest ring link, which paces once
    that one is raised past it."""
    if cl is None or not cl.links_differ:
        return None
    topology = TOPOLOGIES[int(float(sc.topology))]
    paced = cl.pacing.get(topology) or {}
    if not paced:
        return None
    first = winners[BASES[0]]["variant"]
    vid = first if first in paced else next(iter(paced))
    link = list(paced[vid])
    row = next(r for r in cl.links if [r["from"], r["to"]] == link)
    out = {"topology": topology, "variant": vid, "link": link,
           "bandwidth_GBps": row["bandwidth_GBps"], "latency_ms": row["latency_ms"],
           "paces": sum(1 for p in paced.values() if list(p) == link), "of": len(paced),
           "next": None}
    if topology == "ring":
        ring = sorted((r for r in cl.links if r["ring"] and [r["from"], r["to"]] != link),
                      key=lambda r: r["bandwidth_GBps"])
        if ring:
            out["next"] = {"link": [ring[0]["from"], ring[0]["to"]],
                           "bandwidth_GBps": ring[0]["bandwidth_GBps"]}
    return out


def _log(x):
    import math

    return math.log(x) if x and x > 0 else float("inf")


def _crossing(r: BreakEvens | None, a, b, basis, lo, hi) -> float:
    for e in (r.break_even_GBps if r else []):
        if {e["a"], e["b"]} == {a, b} and e["basis"] in (basis, None):
            inside = [x for x in e["GBps"] if lo <= x <= hi]
            if inside:
                return inside[0]
    return (lo * hi) ** 0.5


def lines(results: Results | dict) -> list[str]:
    """The headline as sentences (for results.md, the page and ``bandjax report``): the fastest
    variant, compute utilisation and the bandwidth each needs, the pacing link, where the winner
    changes, then the smallest change for the in-transit band to win."""
    results = Results.of(results)
    h = results.headline
    if h is None or results.core is None:
        return []
    # the methods the need section adds are named by its own table
    names = {**{v: x["short"] for v, x in (h.utilisation or {}).items()}, **results.names()}
    n = lambda v: names.get(v, v) if v else "none"  # noqa: E731
    wan = f"{g6(h.wan_GBps)} GB/s ({g6(8 * h.wan_GBps)} Gb/s)"
    if h.pacing:
        wan += " on the slowest link"
    out = []
    for bases, w in _by_bases(h.winner, _same_winner):
        t = w["time_to_target_s"]
        out.append(f"At {wan}, {n(w['variant'])} reaches the target first"
                   + (f" in {g3(t)} s" if t is not None else "") + f" ({bases}).")
    if h.unranked:
        out.append(f"Not ranked by time to target (no steps to target measured): "
                   f"{_and([n(v) for v in h.unranked])}.")
    out += _utilisation_lines(h, n)
    if h.pacing:
        out.append(_pacing_line(h.pacing, n))
    for bases, ch in _by_bases(h.changes, _same_changes):
        if ch:
            out.append("Over bandwidth the winner changes " + "; ".join(
                f"from {n(c['from'])} to {n(c['to'])} at {g3(c['GBps'])} GB/s "
                f"({g3(8 * c['GBps'])} Gb/s)" for c in ch) + f" ({bases}).")
        else:
            out.append(f"The winner is the same across 0.1 to 1,000 GB/s ({bases}).")
    small = h.smallest_change
    both = set(small) == set(BASES) and _by_bases(small, _same_change)[0][0] == "both bases"
    for basis, c in ({"both": small[BASES[0]]} if both else small).items():
        basis = "both bases" if both else f"{basis} basis"
        if c["status"] == "already":
            out.append(f"{n(c['a'])} already beats {n(c['b'])} ({basis}).")
        else:
            # display names (names.py); the pair's steps are named after the variant
            what = (f"steps to target of {n(c['a'])}" if c["parameter"] == "steps_a" else
                    f"steps to target of {n(c['b'])}" if c["parameter"] == "steps_b" else
                    _display_name(c["parameter"]))
            out.append(f"Smallest change for {n(c['a'])} to beat {n(c['b'])}: {what} from "
                       f"{fmt_value(c['current'], c['units'])} to {fmt_value(c['required'], c['units'])} "
                       f"(x {g3(c['ratio'])}; {basis}).")
    return out


def _by_bases(by_basis: dict, same) -> list[tuple[str, object]]:
    """[(words, value)]: one entry for "both bases" where the bases agree, else one a basis."""
    first, *rest = BASES
    if all(same(by_basis[first], by_basis[b]) for b in rest):
        return [("both bases", by_basis[first])]
    return [(f"{b} basis", by_basis[b]) for b in BASES]


def _close(a, b) -> bool:
    return a == b or (a is not None and b is not None and abs(a - b) <= 1e-9 * abs(a))


def _same_winner(a: dict, b: dict) -> bool:
    return a["variant"] == b["variant"] and _close(a["time_to_target_s"], b["time_to_target_s"])


def _same_changes(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x["from"] == y["from"] and x["to"] == y["to"]
                                    and _close(x["GBps"], y["GBps"]) for x, y in zip(a, b))


def _same_change(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in ("a", "b", "parameter", "status", "units")) and all(
        _close(a[k], b[k]) if isinstance(a[k], (int, float)) else a[k] == b[k]
        for k in ("current", "required", "ratio"))


def _utilisation_lines(h: Headline, n) -> list[str]:
    """Compute utilisation at the scenario's bandwidth, the bandwidth for each target, and what
    those rest on (syncing every H steps, a late sync, methods added with no steps measured)."""
    u = h.utilisation
    if not u:
        return []
    wan = f"{g6(h.wan_GBps)} GB/s ({g6(8 * h.wan_GBps)} Gbit/s)"
    # with links that differ the bandwidth is the slowest link's, every link scaled with it
    slowest = " (the slowest link's, every link in proportion)" if h.pacing else ""
    out = [f"Compute utilisation at {wan}{slowest}: " + "; ".join(
        f"{n(v)} {'not available' if x['at_wan'] is None else pct(x['at_wan'])}"
        for v, x in u.items()) + "."]
    bodies: list[tuple[list[float], str]] = []  # targets with the same answer, said once
    for i, target in enumerate(h.need_targets or []):
        table = {"status": {v: x["status"] for v, x in u.items()},
                 "required_GBps": {v: x["required_GBps"] for v, x in u.items()},
                 "cap": {v: x["cap"] for v, x in u.items()}, "range_GBps": h.range_GBps}
        shown = [f"{n(v)} {cell(table, v, i)}" for v, x in u.items()
                 if x["status"][i] != "not_reachable"]
        capped: dict[str, list[str]] = {}
        for v, x in u.items():
            if x["status"][i] == "not_reachable":
                capped.setdefault(CAP_WORDS.get(x["cap"][i], x["cap"][i]), []).append(n(v))
        shown += [f"not reachable at any bandwidth ({cap}): {', '.join(vs)}"
                  for cap, vs in capped.items()]
        body = "; ".join(shown)
        if bodies and bodies[-1][1] == body:
            bodies[-1][0].append(target)
        else:
            bodies.append(([target], body))
    out += [f"WAN bandwidth per directed link{slowest} for {_and([pct(t) for t in targets])} "
            f"compute utilisation: {body}." for targets, body in bodies]
    rounds = [f"{n(v)} (H = {g6(x['sync_every'])}" + (f", tau = {x['delay']}" if x["delay"] else "")
              + ")" for v, x in u.items() if x["sync_every"] > 1 or x["delay"] > 0]
    if rounds:
        out.append(f"Those figures take syncing every H steps (a late sync: tau steps) not to "
                   f"change steps to target: {_and(rounds)}.")
    pack = [n(v) for v, x in u.items() if x["pack"]]
    if pack:
        out.append(f"Added for comparison from the field's methods (bandjax.METHODS), steps to "
                   f"target not measured: {_and(pack)}.")
    return out


def _pacing_line(p: dict, n) -> str:
    """The link that paces the run, and how far its upgrade goes."""
    link = f"{p['link'][0]} to {p['link'][1]}"
    share = ("every variant" if p["paces"] == p["of"] else
             f"{p['paces']} of the {p['of']} variants")
    text = (f"On this {p['topology']} the {link} link ({g3(p['bandwidth_GBps'])} GB/s, "
            f"{g3(8 * p['bandwidth_GBps'])} Gbit/s; {g3(p['latency_ms'])} ms) paces "
            f"{n(p['variant'])}, the fastest ({share}): raising it is the upgrade that gains most")
    nxt = p.get("next")
    if nxt is None:
        return text + "."
    other = f"{nxt['link'][0]} to {nxt['link'][1]}"
    # as slow as written, too: "up to 3.12 GB/s" of a link at 3.12 GB/s asks for what is there
    if (nxt["bandwidth_GBps"] <= p["bandwidth_GBps"] * (1 + 1e-9)
            or g3(nxt["bandwidth_GBps"]) == g3(p["bandwidth_GBps"])):
        return (text + f", with the {other} link, which is as slow: the ring's WAN time falls "
                "only when both are raised.")
    return (text + f", up to {g3(nxt['bandwidth_GBps'])} GB/s ({g3(8 * nxt['bandwidth_GBps'])} "
            f"Gbit/s), where the {other} link paces instead.")


def _display_name(parameter: str) -> str:
    from ...names import NAMES

    entry = NAMES.get(parameter)
    return entry.name if entry is not None else parameter


def markdown(results: Results | dict) -> str:
    ls = lines(results)
    return "\n".join(["**Headline.**", "", *(f"- {s}" for s in ls)]) if ls else ""
