"""Report section: how sure the answers are.

results.json gains ``uncertainty``:

- ``point_values``: true where the scenario has no uncertain inputs (``Scenario.uncertain``, a
  file's ``[uncertain]`` table): every answer of the report is then a point value.
- ``weakest_input``: the single-seed steps that rules take (E' takes E's on the hypothesis
  basis), with the compared pairs whose winner at the scenario's bandwidth they decide (the
  winner differs between the bases).
- with uncertain inputs: ``inputs`` (each with its distribution, in units), ``samples``, ``seed``
  and ``break_even_GBps``: per compared pair (:data:`bandjax.variants.DEFAULT_PAIRS`) and basis,
  the bandwidth break-even's 5%, 50% and 95% quantiles by Monte Carlo and by the delta method
  (GB/s; ``point``: the scenario's own, ``delta_method_centre``: at the inputs' means), the share
  of samples that cross in range, and ``p_a_wins``, the probability that a
  reaches the target first, aligned with ``bandwidth_GBps``.
"""

from __future__ import annotations

import numpy as np

from .. import distributions as _dist
from ..metrics import steps_to_target, time_to_target_s
from ..scenario import BASES, Scenario
from ..variants import DEFAULT_PAIRS
from .sections import Results, Uncertainty

KEY = Uncertainty.KEY
SAMPLES = 2000  # Monte Carlo draws per pair; ctx["uncertainty_samples"] overrides
SEED = 0
# where the probability of winning is computed: 16 points a decade (3 significant digits) from
# 0.1 to 1,000 GB/s, the decades and 12.5 GB/s exactly; the scenario's own bandwidth is added
P_WINS_GRID_GBps = tuple(sorted({float(f"{x:.3g}") for x in np.geomspace(0.1, 1000.0, 65)}
                                | {0.1, 1.0, 10.0, 12.5, 100.0, 1000.0}))


def p_wins_grid(sc: Scenario) -> tuple[float, ...]:
    """:data:`P_WINS_GRID_GBps` with the scenario's WAN bandwidth, GB/s, ascending."""
    return tuple(sorted(set(P_WINS_GRID_GBps) | {float(sc.wan_Bps) / 1e9}))


def _pairs(sc: Scenario) -> list[tuple[str, str]]:
    return [(a, b) for a, b in DEFAULT_PAIRS if a in sc.ids and b in sc.ids]


def weakest_input(sc: Scenario) -> list[dict]:
    """The steps that rules take from a single measurement, and which compared pairs' winners
    they decide: the bandwidths of :data:`P_WINS_GRID_GBps` where the winner differs between the
    bases."""
    grid = np.asarray(P_WINS_GRID_GBps)
    at = sc.replace(wan_Bps=grid * 1e9)
    T = {basis: np.asarray(time_to_target_s(at, steps_to_target(sc, None, basis))) for basis in BASES}
    out = []
    for v in sc.variants:
        if v.rule is None:
            continue
        for src in v.rule.hypothesis:
            decides = []
            for a, b in _pairs(sc):
                ia, ib = sc.ids.index(a), sc.ids.index(b)
                wins = {basis: T[basis][:, ia] < T[basis][:, ib] for basis in BASES}
                differ = wins[BASES[0]] != wins[BASES[1]]
                if v.id in (a, b) and differ.any():
                    decides.append({"a": a, "b": b, "bandwidth_GBps": [float(x) for x in grid[differ]],
                                    **{f"a_wins_{basis}": [bool(x) for x in wins[basis][differ]]
                                       for basis in BASES}})
            out.append({"variant": src, "follower": v.id, "steps": sc.steps_of(src),
                        "enob_bits": float(sc.enob), "decides": decides})
    return out


def build(sc: Scenario, ctx: dict) -> Uncertainty:
    result: dict = {"point_values": not sc.uncertain, "weakest_input": weakest_input(sc),
                    "wan_GBps": float(sc.wan_Bps) / 1e9,
                    "short": {v.id: v.short for v in sc.variants}}
    if sc.uncertain:
        from ..breakeven import break_even
        from ..uncertainty import propagate_break_even

        samples = int(ctx.get("uncertainty_samples", SAMPLES))
        grid = p_wins_grid(sc)
        result.update(inputs=[_dist.describe(n, d) for n, d in sc.uncertain], samples=samples,
                      seed=SEED, bandwidth_GBps=list(grid), break_even_GBps=[])
        for a, b in _pairs(sc):
            basis_dependent = sc.variant(a).basis_dependent or sc.variant(b).basis_dependent
            for basis in BASES if basis_dependent else BASES[:1]:
                r = propagate_break_even(sc, a, b, None, samples, SEED, basis=basis,
                                         bandwidth=grid)
                result["break_even_GBps"].append({
                    "a": a, "b": b, "basis": basis if basis_dependent else None,
                    "point": float(break_even(sc, a, b, basis=basis).x[..., 0]) / 1e9,
                    "delta_method_centre": r.nominal_GBps,
                    "monte_carlo_5_50_95": [float(x) for x in r.quantiles_GBps],
                    "delta_method_5_50_95": [float(x) for x in r.delta_GBps],
                    "crossing_share": r.crossing_share,
                    "p_a_wins": [float(x) for x in r.p_a_wins]})
    return Uncertainty(**result)


def _interval(q) -> str:
    return "-" if q[0] is None else f"{q[0]:.3g} to {q[2]:.3g} GB/s"


def _range(bw) -> str:
    return f"{bw[0]:g} GB/s" if len(bw) == 1 else f"{bw[0]:g} to {bw[-1]:g} GB/s"


def _g(x, unit: str = "GB/s") -> str:
    """``x`` with its unit; "-" for no value (no crossing in the searched range)."""
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.3g} {unit}"


def weakest_words(r: Uncertainty) -> list[str]:
    """The single-seed steps of ``r`` (the section) and what they decide, in words."""
    short = r.short
    weak = []
    for w in r.weakest_input:
        line = (f"{short[w['variant']]}'s steps to target ({w['steps']:,.0f} steps at ENOB "
                f"{w['enob_bits']:g} bits, one seed), which {short[w['follower']]} takes")
        if w["decides"]:
            line += (": they decide whether " + ", ".join(
                f"{short[d['a']]} beats {short[d['b']]} (at {_range(d['bandwidth_GBps'])})"
                for d in w["decides"]) + "; there (of the bandwidths in results.json) the winner differs "
                "between the bases")
        weak.append(line)
    return weak


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    r = results.uncertainty
    if r is None:
        return ""
    short = r.short
    out = ["## Uncertainty", ""]
    weak = weakest_words(r)
    if r.point_values:
        out.append("Every answer of this report is a point value: the scenario has no uncertain "
                   "inputs (add an `[uncertain]` table to its file, e.g. "
                   "`wan = { normal = [\"12.5 GB/s\", \"1 GB/s\"] }`).")
        if weak:
            out += ["", "The weakest input is " + "; ".join(weak) + "."]
        return "\n".join(out)
    out += [f"Uncertain inputs ({r.samples} Monte Carlo samples, seed {r.seed}): "
            + "; ".join(f"`{i}`" for i in r.inputs) + ".", ""]
    if weak:
        out += ["Single-seed steps: " + "; ".join(weak) + ".", ""]
    out += ["Bandwidth break-evens, GB/s per WAN direction: the 5% to 95% interval by Monte Carlo, "
            "with the delta method's beside it.", "",
            "| pair | basis | point | MC median | MC 5% to 95% | delta 5% to 95% | samples crossing |",
            "|---|---|---|---|---|---|---|"]
    for e in r.break_even_GBps:
        mc, dm = e["monte_carlo_5_50_95"], e["delta_method_5_50_95"]
        out.append(f"| {short[e['a']]} vs {short[e['b']]} | {e['basis'] or 'either'} | "
                   f"{_g(e['point'])} | {_g(mc[1])} | {_interval(mc)} | {_interval(dm)} | "
                   f"{100 * e['crossing_share']:.0f}% |")
    bw = r.bandwidth_GBps
    picks = [i for i, b in enumerate(bw) if b in (0.1, 1.0, 12.5, 100.0, 1000.0)]
    out += ["", "Probability that the first of the pair reaches the target first "
            "(results.json: `p_a_wins`, aligned with `bandwidth_GBps`):", "",
            "| pair | basis | " + " | ".join(f"{bw[i]:g} GB/s" for i in picks) + " |",
            "|---|---|" + "---|" * len(picks)]
    for e in r.break_even_GBps:
        out.append(f"| {short[e['a']]} vs {short[e['b']]} | {e['basis'] or 'either'} | "
                   + " | ".join(f"{100 * e['p_a_wins'][i]:.0f}%" for i in picks) + " |")
    return "\n".join(out)
