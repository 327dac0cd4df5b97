"""What ``need``, ``winner`` and ``breakeven`` print before their answer: the setup the answer
rests on (compute per step c and what it came from, the cluster, the overlap, the steps basis,
what "bandwidth" means), so that no default changes an answer unseen. Also the number formats
those commands share: every number with its unit, at most :data:`SIG` significant figures.

No jax: the scenario's fields are read as plain floats.
"""

from __future__ import annotations

import math

from ..scenario import GPUS, MAGNITUDES, STUDY_GPU_FLOPs
from ..units import MOST_FIGURES as SIG  # significant figures, at most, of any number printed
from ..units import describe, significant
from ..units import plain as sig  # a number to at most SIG significant figures


def check_bandwidth(value: float | None, option: str = "--bandwidth") -> None:
    """A bandwidth option in GB/s, where given: finite, > 0 and within the magnitudes bandjax
    computes with (:data:`bandjax.scenario.MAGNITUDES`, here in GB/s), checked as typed, before
    it is converted to B/s (1e300 GB/s would be inf B/s); ``ValueError`` naming the option."""
    if value is None:
        return
    lo, hi = (m / 1e9 for m in MAGNITUDES)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{option} {sig(value)}: must be a finite bandwidth > 0 GB/s")
    if not lo <= value <= hi:
        raise ValueError(f"{option} {sig(value)} GB/s: outside the magnitudes bandjax computes "
                         f"with, {lo:g} to {hi:g} GB/s")


def plural(n: float, word: str, words: str | None = None) -> str:
    """``1 worker``, ``2 workers``: the count and the word, singular only for exactly 1."""
    return f"{sig(n)} {word if float(n) == 1 else (words or word + 's')}"


def time_text(seconds: float) -> str:
    """A step's duration, as :func:`bandjax.units.describe` shows a time: ms, or where that takes
    an exponent or five whole digits, s, us or ns."""
    return describe(seconds, "time", SIG)


def rate_text(FLOPs: float) -> str:
    """A rate in GFLOP/s, or TFLOP/s from 10,000 GFLOP/s (:func:`bandjax.units.describe`)."""
    return describe(FLOPs, "flop_rate", SIG)


def bandwidth_text(Bps: float) -> str:
    """A WAN bandwidth in GB/s (:func:`bandjax.units.describe`) and Gbit/s."""
    return f"{describe(Bps, 'byte_rate', SIG)} = {sig(8 * Bps / 1e9)} Gbit/s"


def percent(x: float) -> str:
    """A share as a percentage, 4 significant figures (``-`` where it is not a number)."""
    return "-" if not math.isfinite(x) else f"{significant(100 * x, 4)}%"


def gpu_text(sc) -> str:
    """Where the GPU's peak comes from: a preset, the study's calibrated rate, or a number."""
    peak = float(sc.gpu_peak_FLOPs)
    for name, g in GPUS.items():
        if math.isclose(peak, g.peak_FLOPs, rel_tol=1e-12):
            return f"GPU {name}, {rate_text(peak)} dense BF16 peak"
    if math.isclose(peak, STUDY_GPU_FLOPs, rel_tol=1e-12):
        return f"the study's GPU, {rate_text(peak)} effective, calibrated"
    return f"GPU peak {rate_text(peak)}"


def compute_line(sc) -> str:
    """c = FLOP per param-token x active params x tokens / (peak x utilisation), each named."""
    P, synced = float(sc.active), float(sc.params)
    params = (f"{sig(P)} active params (of {sig(synced)})" if P != synced
              else f"{sig(P)} params (dense)")
    return (f"compute per step c = {time_text(float(sc.gpu_compute_s))} = "
            f"{sig(sc.flops_per_param_token)} FLOP/param/token x {params} x "
            f"{plural(sc.tokens_per_worker, 'token')}/worker / ({gpu_text(sc)} x "
            f"{percent(float(sc.utilisation))} utilisation)")


def cluster_line(sc) -> str:
    """K DCs and the workers in each (each site's where sites differ), the topology, the overlap."""
    from ..sites import differ
    from ..variants import TOPOLOGIES

    K, n = float(sc.dcs), float(sc.workers_per_dc)
    topology = TOPOLOGIES[int(float(sc.topology))]
    if differ(sc):
        each = ", ".join(f"{name} {plural(w, 'worker')} (c x {sig(r)})" for name, w, r in
                         zip(sc.sites.names, sc.sites.workers, sc.sites.compute_rel))
        dcs = (f"K = {plural(K, 'DC')}, sites differ: {each}; c is the slowest site's "
               "(`bandjax sites` prints each)")
    else:
        dcs = f"K = {plural(K, 'DC')} of {plural(n, 'worker')} each ({sig(K * n)} in all)"
    return (f"cluster: {dcs}, {topology}; overlap fraction f = {sig(sc.overlap_fraction)} "
            "(the share of c a sync may hide behind)")


def bandwidth_line(sc, role: str) -> str:
    """What "bandwidth" means: per directed WAN link, the slowest link's where links differ."""
    from ..links import differ

    if differ(sc):
        what = ("per directed WAN link, the slowest link's; every other link scales with it "
                "(the links table's ratios are kept)")
        own = f"the scenario's slowest link: {bandwidth_text(float(sc.wan_Bps))}"
    else:
        what = "per directed WAN link, every link the same"
        own = f"the scenario's: {bandwidth_text(float(sc.wan_Bps))}"
    return f"bandwidth: {what}; {role}; {own}"


def setup_lines(sc, *, basis: str, bandwidth: str, swept=()) -> list[str]:
    """The setup block: a heading and one indented line each for the compute, the cluster, the
    steps basis and the bandwidth. ``basis``: the basis used, in words; ``bandwidth``: its role
    in this command (solved for, the table's axis, searched ...); ``swept``: fields a grid
    changes (the values shown are then the scenario's)."""
    lines = ["setup (the scenario's; `bandjax scenario` prints every field):",
             f"  {compute_line(sc)}",
             f"  {cluster_line(sc)}",
             f"  steps basis: {basis}",
             f"  {bandwidth_line(sc, bandwidth)}"]
    if swept:
        lines.append(f"  --over changes {', '.join(swept)}: the values above are the scenario's")
    return lines


def print_setup(sc, **kwargs) -> None:
    """Print :func:`setup_lines`."""
    print("\n".join(setup_lines(sc, **kwargs)))


def basis_words(sc, bases, ids) -> str:
    """The steps basis (or bases, a block each) in words, and which of ``ids`` it matters to."""
    from ..variants import basis_dependent

    bases = [bases] if isinstance(bases, str) else list(bases)
    dependent = [i for i in ids if i in basis_dependent(sc.variants)]
    why = (f"it sets the steps to target of {', '.join(dependent)}" if dependent else
           "no variant here depends on it")
    return (bases[0] if len(bases) == 1 else f"{' and '.join(bases)}, a block each") + f" ({why})"


def sync_every(sc, vid: str) -> float:
    """H of variant ``vid``: its own, or the scenario's where it sets none."""
    v = sc.variant(vid)
    return float(sc.sync_every_H) if v.sync_every is None else float(v.sync_every)


def assumption_lines(sc, ids) -> list[str]:
    """What a variant syncing in rounds or late is assumed not to change: steps to target."""
    lines = []
    H = {i: sync_every(sc, i) for i in ids}
    rounds = [f"{i} (H = {sig(H[i])})" for i in ids if H[i] > 1]
    if rounds:
        lines.append(f"assumed: syncing every H steps does not change steps to target: "
                     f"{', '.join(rounds)}")
    delayed = [f"{i} (tau = {sc.variant(i).delay})" for i in ids if sc.variant(i).delay > 0]
    if delayed:
        lines.append(f"assumed: a sync applied tau steps late does not change steps to target: "
                     f"{', '.join(delayed)}")
    return lines
