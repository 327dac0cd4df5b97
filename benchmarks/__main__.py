"""``python -m benchmarks``: every throughput figure, printed as a table and written to results.json.

    python -m benchmarks                 # sweeps of 1e4 to 1e7 cells, break-even, events
    python -m benchmarks --big           # also the 1e8-cell sweep (a few GB of memory, minutes)
    python -m benchmarks --disk          # also stream a 1e9-cell sweep to disk (24 GB, deleted after)
    python -m benchmarks --quick         # smoke run of seconds (CI): small sizes, same keys
    python -m benchmarks --compare       # run, then compare with results.json (the speed guard)
    python -m benchmarks --compare NEW.json [--baseline OLD.json]   # compare two written runs

Sections that are not present on this checkout, or that fail, are recorded as not available with
the reason; their figures are null, never made up.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

# First calls are timed as compiling: bandjax's persistent compilation cache (bandjax._jax) would
# make them read a previous run's work from disk instead. Set before bandjax configures jax.
os.environ.setdefault("BANDJAX_NO_CACHE", "1")

from bandjax._io import atomic_write_text  # noqa: E402

from . import compare  # noqa: E402

DEFAULT_OUT = Path(__file__).with_name("results.json")
RUN = "run"  # --compare with no file: run the benchmarks, then compare
EXIT_WORSE = 1  # a figure worse than the threshold (so a CI step can gate on it)
EXIT_BAD_INPUT = 2  # a results file that cannot be read, as argparse's own usage errors

# section -> (module, figures it must provide)
EXTERNAL = {
    "break_even": ("benchmarks.breakeven", ("roots_per_s", "ratio_brentq")),
    "events": ("benchmarks.events_bench", ("events_per_s", "ratio_bare_simpy")),
    "compile": ("benchmarks.compile_bench", ("break_even_budget_s", "elasticities_s")),
    "store": ("benchmarks.store_bench", ("distributed_speedup",)),
    "winner": ("benchmarks.winner_bench", ("points_per_s", "ratio_sweep_argmin", "core_scaling")),
    "uncertainty": ("benchmarks.uncertainty", ("roots_per_s", "ratio_brentq")),
    "need": ("benchmarks.need_bench", ("targets_per_s", "ratio_brentq")),
    "links": ("benchmarks.links_bench", ("tables_per_s", "ratio_equal_links", "rss_growth_MB",
                                         "compiles")),
    "stragglers": ("benchmarks.straggler_bench", ("cells_per_s", "cells_per_s_no_straggler",
                                                  "time_over_no_straggler")),
}
KEYS = {
    "sweep": ("cells_per_s", "ratio_numpy", "ratio_python", "compile_s", "scaling_exponent",
              "fraction_of_memory_bw", "fraction_of_floor", "wrapper_s", "core_scaling"),
    "float32": ("speedup", "max_rel_err"),
    **{name: figures for name, (_, figures) in EXTERNAL.items()},
}


def external(name: str, quick: bool) -> dict:
    """Run ``benchmarks.<module>.run(quick)`` if present; otherwise say why it is not available."""
    module, figures = EXTERNAL[name]
    missing = {k: None for k in figures}
    if importlib.util.find_spec(module) is None:
        return {"available": False, "reason": f"{module} is not present on this checkout", **missing}
    try:
        result = importlib.import_module(module).run(quick)
    except Exception as e:  # recorded, not hidden: the other sections still run
        traceback.print_exc()
        return {"available": False, "reason": f"{module}.run failed: {type(e).__name__}: {e}",
                **missing}
    if not isinstance(result, dict):
        return {"available": False, "reason": f"{module}.run returned {type(result).__name__}, "
                                               "not a dict", **missing}
    absent = [k for k in figures if k not in result]
    out = {"available": not absent, **result}
    for k in figures:
        # a figure given with its spread ({median, min, max, ...}) is reported as its median,
        # the spread beside it
        if isinstance(out.get(k), dict) and "median" in out[k]:
            out[f"{k}_stats"] = out[k]
            out[k] = out[k]["median"]
        out.setdefault(k, None)
    if absent:
        out["reason"] = f"{module}.run did not report {', '.join(absent)}"
    return out


def float32_section(winner: dict) -> dict:
    """The float32 figures, measured by the winner section (on the winner map and the sweep)."""
    f = winner.get("float32") if winner.get("available") else None
    if not f:
        return {"available": False, "reason": "the winner section did not run", "speedup": None,
                "max_rel_err": None}
    return {"available": True, **f}


def _fmt(x, unit="", digits=3) -> str:
    if isinstance(x, dict) and "median" in x:  # a figure with its spread: show the median
        x = x["median"]
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}g}{unit}"


def table(results: dict) -> str:
    from . import common

    s = results["sweep"]
    lines = ["", "Dense sweep (a cell = one variant at one grid point; cells/s, median of "
             f"{common.MIN_REPEAT}; ratios = bandjax.sweep's rate / baseline's rate)", "",
             f"{'cells':>10} {'sweep':>10} {'core':>10} {'floor':>10} {'numpy':>10} {'python':>10} "
             f"{'x floor':>8} {'x numpy':>8} {'x python':>9} {'compile s':>9}"]
    for r in s["sizes"]:
        lines.append(f"{r['cells']:>10.3g} {r['sweep']['cells_per_s']:>10.3g} "
                     f"{r['core']['cells_per_s']:>10.3g} {r['floor']['cells_per_s']:>10.3g} "
                     f"{r['numpy']['cells_per_s']:>10.3g} {r['python']['cells_per_s']:>10.3g} "
                     f"{r['sweep']['cells_per_s'] / r['floor']['cells_per_s']:>8.3g} "
                     f"{r['sweep']['ratio_numpy']:>8.3g} "
                     f"{r['sweep']['ratio_python']:>9.3g} {r['sweep']['compile_s']:>9.3g}")
    mb = s["memory_bw"]
    lines += ["",
              f"cost curve exponent (from {s['fit_from_cells']:.3g} cells up): sweep {_fmt(s['scaling_exponent'])}, "
              f"core {_fmt(s['core']['scaling_exponent'])}",
              f"memory bandwidth (numpy copy, read + write): warm {mb['warm']['Bps'] / 1e9:.3g} GB/s, "
              f"fresh pages {mb['fresh']['Bps'] / 1e9:.3g} GB/s",
              f"at {s['headline_cells']:.3g} cells: sweep {_fmt(100 * s['fraction_of_memory_bw'], '%')} "
              f"of memory bandwidth, core {_fmt(100 * s['core']['fraction_of_memory_bw'], '%')}, "
              f"floor {_fmt(100 * s['floor']['fraction_of_memory_bw'], '%')}; sweep "
              f"{_fmt(100 * s['fraction_of_floor'], '%')} of the floor's cells/s, core "
              f"{_fmt(100 * s['core']['fraction_of_floor'], '%')}"]
    w = s.get("wrapper")
    if w:
        lines.append("sweep wrapper (sweep - core, paired median) at "
                     f"{next(iter(w.values()))['cells']:.3g} cells: "
                     + ", ".join(f"{b} budgets {1e3 * x['wrapper_s']['median_s']:.2f} ms "
                                 f"(core/sweep {x['fraction_of_core']:.2f})" for b, x in w.items()))
    pf = s.get("page_faults")
    if pf:
        d, r = pf["default"], pf["reuse_pages"]
        lines.append(f"page faults at {pf['cells']:.3g} cells (median ms, as run / pages reused): "
                     + ", ".join(f"{w} {1e3 * d[w]['median_s']:.0f} / {1e3 * r[w]['median_s']:.0f}"
                                 for w in ("core", "floor", "numpy")))
    lines.append(f"sweep core scaling (2 cores / 1, taskset, median of {common.MIN_REPEAT}): "
                 f"{_fmt(s.get('core_scaling'))}")
    for name in (*EXTERNAL, "float32"):
        sec = results[name]
        figs = ", ".join(f"{k} {_fmt(sec.get(k))}" for k in KEYS[name])
        lines.append(f"{name}: {figs}" if sec.get("available") else
                     f"{name}: not available ({sec.get('reason')})")
    d = results.get("disk")
    if d and d.get("available"):
        lines.append(f"disk: {d['cells']:.3g} cells in {d['wall_s']:.1f} s, peak RSS "
                     f"{d['peak_rss_B'] / 2**30:.2f} GiB, {d['bytes_on_disk'] / 1e9:.1f} GB on disk")
    elif d:
        lines.append(f"disk: not run ({d.get('reason')})")
    return "\n".join(lines)


def _threshold(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < x < 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text}: must be a fraction in (0, 1), e.g. 0.2 for 20%")
    return x


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run of seconds (CI)")
    p.add_argument("--big", action="store_true", help="add the 1e8-cell sweep (about 8 GB of memory)")
    p.add_argument("--disk", action="store_true",
                   help="stream a 1e9-cell sweep to a zarr store (about 12 GB on disk, deleted after)")
    p.add_argument("--disk-cells", type=float, default=None,
                   help="cells of the disk sweep (default 1e9)")
    p.add_argument("--disk-dir", default=None, help="folder for the disk sweep (default: the temp folder)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"results file (JSON; default {DEFAULT_OUT}, or a temporary file with "
                        "--compare, so the baseline stays as committed)")
    p.add_argument("--compare", nargs="?", const=RUN, default=None, metavar="NEW.json",
                   help="compare figure by figure with the baseline: this run's (no file) or the "
                        "results in NEW.json (nothing is run); exit status 1 if a figure is worse "
                        "by more than the threshold")
    p.add_argument("--baseline", type=Path, default=None, metavar="OLD.json",
                   help=f"the baseline of --compare (default {DEFAULT_OUT}, the committed run)")
    p.add_argument("--threshold", type=_threshold, default=None,
                   help=f"with --compare: report figures worse by more than this fraction "
                        f"(default {compare.THRESHOLD})")
    args = p.parse_args(argv)
    if args.disk_cells is not None and not args.disk_cells > 0:
        p.error(f"--disk-cells = {args.disk_cells}: must be > 0")
    if args.compare is None and (args.baseline or args.threshold):
        p.error("--baseline and --threshold go with --compare")
    if args.compare not in (None, RUN):
        run_only = [f"--{k.replace('_', '-')}" for k in ("quick", "big", "disk", "disk_cells",
                                                         "disk_dir", "out")
                    if getattr(args, k) not in (None, False)]
        if run_only:
            p.error(f"--compare {args.compare} compares a run already written; "
                    f"{', '.join(run_only)} apply only to a run")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.compare is None:
        run(args, args.out or DEFAULT_OUT)
        return 0
    baseline_path = args.baseline or DEFAULT_OUT
    try:  # before a run of minutes: a baseline that cannot be read fails now
        baseline = compare.load(baseline_path, "baseline")
        if args.compare == RUN:
            new_path = args.out or Path(tempfile.mkdtemp(prefix="bandjax-benchmarks-"),
                                        "results.json")
            new = run(args, new_path)
        else:
            new_path = args.compare
            new = compare.load(new_path, "new results")
    except compare.ResultsFileError as e:
        print(f"python -m benchmarks: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = compare.compare(baseline, new, args.threshold or compare.THRESHOLD)
    print(compare.render(result, str(baseline_path), str(new_path)))
    return EXIT_WORSE if result.regressed else 0


def run(args, out: Path) -> dict:
    """Run every section, print the table, write ``out``; return the results (as written)."""
    from . import common
    from . import sweep as sweep_bench

    t0 = time.perf_counter()
    results = {"quick": args.quick, "machine": common.machine(),
               "note": "timings on a shared machine are noisy; see BENCHMARKS.md"}
    results["sweep"] = sweep_bench.run(quick=args.quick, big=args.big)
    for name in EXTERNAL:
        print(f"  {name} ...", file=sys.stderr, flush=True)
        results[name] = external(name, args.quick)
    results["float32"] = float32_section(results["winner"])
    if args.disk:
        cells = sweep_bench.DISK_CELLS if args.disk_cells is None else args.disk_cells
        results["disk"] = {"available": True, **sweep_bench.disk_run(cells, args.disk_dir)}
    else:
        results["disk"] = {"available": False, "reason": "not run: pass --disk"}
    results["wall_s"] = time.perf_counter() - t0
    results = finite(results)
    atomic_write_text(out, json.dumps(results, indent=1, allow_nan=False, default=str) + "\n")
    print(table(results))
    print(f"\nwrote {out}")
    return json.loads(json.dumps(results, default=str))  # as a file would read back


def finite(x):
    """``x`` with every NaN or infinite float as None, so the file is valid JSON."""
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


if __name__ == "__main__":
    sys.exit(main())
