"""The winner map: fused against the sweep reduced afterwards; float32 against float64; 1 core
against 2.

A point is one grid point (all variants): the question is "who wins there, with what time".

- ``points_per_s``: :func:`bandjax.winner` (winner, time, runner-up, margin) at :data:`SIZE`
  points (1e8: 1.8 GB of output, comfortably in memory), the study's six variants;
  ``method_pack_points_per_s`` beside it: the same map with the method pack
  (``bandjax.METHODS``, syncs in rounds) competing too, 11 variants.
- ``ratio_sweep_argmin``: its rate over the same question (winner, time, runner-up, margin) asked
  through the materialising sweep, ``sweep(..., quantities=("time_to_target_s",))`` reduced in
  xarray (:func:`through_sweep`), both at :data:`RATIO_GRID` (20,000 bandwidths x 500 budgets,
  1e7 points) in this run (the baseline needs about 6 x 8 B x 3 a point at once, so 1e8 would
  not fit beside the others). ``ratio_winner_time_only``: the same map against half the
  question (argmin and min only). Both answers are checked equal before either is timed.
- ``core_scaling``: rate on 2 cores / rate on 1 (``taskset``), each a fresh process, back to back,
  median of 5; see :func:`core_scaling`.
- ``float32``: speed-up of ``dtype="float32"`` and the worst relative error of every variant's
  time to target against float64 over :data:`REFERENCE_GRID`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import xarray as xr

import bandjax

from . import common

SIZE = 1e8
RATIO_SIZE = 1e7
RATIO_GRID = dict(bandwidth=np.geomspace(0.1, 1000.0, 20_000), budget=np.geomspace(1.0, 1000.0, 500))
QUICK_SIZE = 1e5
SCALING_SIZE = 1e7
# every swept dimension the map supports, ~1.4e6 points
REFERENCE_GRID = dict(bandwidth=np.geomspace(0.1, 1000.0, 1000), budget=np.geomspace(1.0, 1000.0, 20),
                      enob=[8, 6], basis=["hypothesis", "exact"], dcs=[2, 3, 8],
                      topology=["ring", "mesh"])


def grid_for(points: float) -> dict:
    """bandwidth (GB/s) x 100 budgets (GFLOP/s): about ``points`` grid points."""
    n_budget = 100
    return dict(bandwidth=np.geomspace(0.1, 1000.0, max(1, round(points / n_budget))),
                budget=np.geomspace(1.0, 1000.0, n_budget))


def points_of(args: dict) -> int:
    return len(args["bandwidth"]) * len(args["budget"])


def through_sweep(**args):
    """The baseline: the same four answers from the materialised sweep, reduced in xarray as a
    user would: the winner and its time (argmin, min over ``variant``), then the same again with
    the winner masked out for the runner-up, and the margin (runner-up's time / the winner's)."""
    ds = bandjax.sweep(**args, quantities=("time_to_target_s",))
    t = ds["time_to_target_s"].fillna(np.inf)
    first, best = t.argmin("variant"), t.min("variant")
    position = xr.DataArray(np.arange(t.sizes["variant"]), dims="variant")
    rest = t.where(position != first, np.inf)
    return first, best, rest.argmin("variant"), rest.min("variant") / best


def winner_time_only(**args):
    """The baseline for the winner and its time alone (argmin and min): half the question."""
    t = bandjax.sweep(**args, quantities=("time_to_target_s",))["time_to_target_s"].fillna(np.inf)
    return t.argmin("variant"), t.min("variant")


def same_answer(m, base) -> bool:
    """The map ``m`` and :func:`through_sweep`'s answer agree exactly (the baseline's all-inf
    argmin is 0 where the map says -1, and its margin inf/inf is NaN where none reaches)."""
    first, best, runner, ratio = (np.asarray(a) for a in base)
    none, alone = ~np.isfinite(best), ~np.isfinite(ratio)
    return (np.array_equal(np.where(none, -1, first), m["winner"].values)
            and np.array_equal(np.where(none, np.nan, best), m["time_to_target_s"].values,
                               equal_nan=True)
            and np.array_equal(np.where(alone, -1, runner), m["runner_up"].values)
            and np.array_equal(np.where(none, np.nan, ratio), m["margin"].values, equal_nan=True))


def _rate(points, t):
    return {**t, "points": points, "points_per_s": points / t["median_s"]}


def float32_figures(grid: dict, repeat: int) -> dict:
    """Worst relative error of float32 over ``grid`` (every variant's time to target, and the
    winner's), the winners that differ, and the speed-up of the winner map at this size."""
    q = ("time_to_target_s",)
    s64 = bandjax.sweep(**grid, quantities=q)["time_to_target_s"].values
    s32 = bandjax.sweep(**grid, quantities=q, dtype="float32")["time_to_target_s"].values
    ok = np.isfinite(s64)
    if not np.array_equal(ok, np.isfinite(s32)):
        raise AssertionError("float32 and float64 disagree on which times exist")
    err = float(np.max(np.abs(s32[ok].astype(float) / s64[ok] - 1.0)))
    w64, w32 = bandjax.winner(**grid), bandjax.winner(**grid, dtype="float32")
    okw = np.isfinite(w64["time_to_target_s"].values)
    a64, a32 = w64["time_to_target_s"].values[okw], w32["time_to_target_s"].values[okw]
    werr = float(np.max(np.abs(a32 / a64 - 1)))
    t64 = common.measure(lambda: bandjax.winner(**grid), repeat=repeat)
    t32 = common.measure(lambda: bandjax.winner(**grid, dtype="float32"), repeat=repeat)
    return {"max_rel_err": max(err, werr), "max_rel_err_sweep": err, "max_rel_err_winner": werr,
            "winners_differ": int(np.sum(w64["winner"].values != w32["winner"].values)),
            "points": int(w64["winner"].size), "speedup": t64["median_s"] / t32["median_s"],
            "float64": _rate(w64["winner"].size, t64), "float32": _rate(w64["winner"].size, t32),
            "grid": {k: len(v) for k, v in grid.items()}}


# ---------------------------------------------------------------------------------- core scaling

# (CPUs, threads): threads 1 is one call over the whole grid (the default); 2, the grid in 16
# chunks computed two at a time (winner(..., chunk=, threads=2))
CONFIGS = {"1 core": ("0", 1), "2 cores": ("0,1", 1), "2 cores, 2 threads": ("0,1", 2)}


def core_scaling(what: str, points: float = SCALING_SIZE, repeat: int = common.MIN_REPEAT) -> dict:
    """Rate of ``what`` (``"winner"``, ``"sweep"`` or ``"floor"``) on CPU 0 alone and on CPUs 0
    and 1 (``taskset``), each in a fresh process, back to back, ``repeat`` timed runs each.

    The winner map is one call over the grid (XLA splits its loops over the cores it may use); on
    2 cores it is also timed in 16 chunks, two at a time (``threads=2``). The figure is the best
    2-core rate / the 1-core rate. ``floor`` writes fresh outputs of the
    sweep's size and computes nothing: where it does not scale, first-touch page faults (the
    kernel zeroing new pages) bound every materialising computation.
    """
    out = {"what": what, "points": None, "load_average_before": os.getloadavg()}
    for name, (cpus, threads) in CONFIGS.items():
        if threads > 1 and what != "winner":
            continue
        code = ("import sys, json; from benchmarks.winner_bench import _scaling_child; "
                "print(json.dumps(_scaling_child(*sys.argv[1:])))")
        proc = subprocess.run(["taskset", "-c", cpus, sys.executable, "-c", code, what,
                               repr(float(points)), str(threads), str(repeat)],
                              stdout=subprocess.PIPE, text=True, check=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [os.getcwd(), os.environ.get("PYTHONPATH", "")])})
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        out["points"] = out[name]["points"]
    out["load_average_after"] = os.getloadavg()
    two = max(out[k]["points_per_s"] for k in CONFIGS if k != "1 core" and k in out)
    out["scaling"] = two / out["1 core"]["points_per_s"]
    return out


def _scaling_child(what: str, points: str, threads: str, repeat: str) -> dict:
    import jax

    args = grid_for(float(points))
    n = points_of(args)
    if what == "winner" and int(threads) == 1:
        fn = lambda: bandjax.winner(**args)  # noqa: E731  (XLA's threads, one per core)
    elif what == "winner":
        fn = lambda: bandjax.winner(**args, chunk=max(1, len(args["bandwidth"]) // 16),  # noqa: E731
                                    threads=int(threads))
    elif what == "sweep":
        fn = lambda: bandjax.sweep(**args, quantities=("time_to_target_s",))  # noqa: E731
    else:
        import jax.numpy as jnp
        bw = jnp.asarray(args["bandwidth"])[:, None, None]
        floor = jax.jit(lambda x: x + jnp.zeros((1, len(args["budget"]), 6)))
        fn = lambda: floor(bw)  # noqa: E731
    t = common.measure(fn, repeat=int(repeat))
    return {**_rate(n, t), "cpus": len(os.sched_getaffinity(0)), "threads": int(threads)}


def run(quick: bool = False) -> dict:
    """Every figure of the winner section (``quick``: small sizes, same keys)."""
    repeat = common.MIN_REPEAT
    size = QUICK_SIZE if quick else SIZE
    ratio_size = QUICK_SIZE if quick else RATIO_SIZE
    args = grid_for(ratio_size) if quick else RATIO_GRID
    n = points_of(args)
    if not same_answer(bandjax.winner(**args), through_sweep(**args)):
        raise AssertionError("winner map and sweep + argmin disagree")
    w = common.measure(lambda: bandjax.winner(**args), repeat=repeat)
    base = common.measure(lambda: through_sweep(**args), repeat=repeat)
    half = common.measure(lambda: winner_time_only(**args), repeat=repeat)
    big = grid_for(size) if size != ratio_size else args
    head = (_rate(points_of(big), common.measure(lambda: bandjax.winner(**big), repeat=repeat))
            if size != ratio_size else _rate(n, w))
    pack_sc = bandjax.reference().with_variants(bandjax.METHODS)
    pack = _rate(points_of(big), common.measure(lambda: bandjax.winner(pack_sc, **big),
                                                repeat=repeat))
    pack["variants"] = len(pack_sc.variants)
    ref = ({k: (v[:50] if k == "bandwidth" else v) for k, v in REFERENCE_GRID.items()} if quick
           else REFERENCE_GRID)
    f32 = float32_figures(ref, repeat)
    scaling_points = QUICK_SIZE if quick else SCALING_SIZE
    scaling = {k: core_scaling(k, scaling_points, repeat) for k in ("winner", "floor")}
    return {
        "measured": "bandjax.winner(bandwidth=[...], budget=[...]) against sweep(time_to_target_s)"
                    ".fillna(inf).argmin('variant') and .min('variant')",
        "points_per_s": head["points_per_s"], "points": head["points"],
        "ratio_sweep_argmin": base["median_s"] / w["median_s"],
        "ratio_winner_time_only": half["median_s"] / w["median_s"],
        "ratio_points": n, "winner_at_ratio_size": _rate(n, w), "sweep_argmin": _rate(n, base),
        "sweep_argmin_winner_time_only": _rate(n, half),
        "headline": head,
        "method_pack_points_per_s": pack["points_per_s"], "method_pack": pack,
        "core_scaling": scaling["winner"]["scaling"], "core_scaling_detail": scaling["winner"],
        "floor_core_scaling": scaling["floor"]["scaling"], "floor_scaling_detail": scaling["floor"],
        "float32": f32,
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=1, default=str))
