"""``bandjax report``, ``bandjax explore`` and ``bandjax scenario``.

Only argparse at import time: the report and the explorer (jax, xarray, altair) load inside the
command functions.
"""

from __future__ import annotations

import sys
import time

from ._setup import sig
from .args import load_scenario, scenario_arg

# what each report section computes, for the progress lines, by the name of its module (a new
# section shows its name)
SECTION_WORDS = {
    "core": "step times, times to target, hot spots, energy, model size, sync every H",
    "breakeven": "break-evens, sensitivities and the smallest changes",
    "shared_wan": "shared-WAN event-engine runs (most of the time)",
    "figure_files": "figures (SVG and PNG)",
}


def _progress(out: str):
    """A callable that prints one line on stderr as each report section starts, with the seconds
    since the command began."""
    start = time.monotonic()
    count = [0]

    def section(name: str) -> None:
        count[0] += 1
        print(f"bandjax report: [{count[0]}] {SECTION_WORDS.get(name, name)} "
              f"({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)

    print(f"bandjax report: writing {out}/results.json, results.md and figures/; a line per "
          "section as it starts", file=sys.stderr, flush=True)
    return section


ENGINE_BUDGET_S = 60.0  # the report's bandjax._wan_runs.BUDGET_S (a test keeps the two equal)


def _sections_args(p) -> None:
    """``--sections``, ``--skip`` and ``--engine-budget-s`` (report and explore)."""
    p.add_argument("--sections", nargs="+", metavar="KEY",
                   help="compute only these report sections (keys: core breakeven cluster "
                        "shared_wan uncertainty need failures sites headline figures); the others "
                        "are said to be left out in their place")
    p.add_argument("--skip", nargs="+", metavar="KEY", default=[],
                   help="leave these report sections out (said in their place)")
    p.add_argument("--engine-budget-s", type=float, default=None, metavar="SECONDS",
                   help="seconds of work the shared-WAN event engine may plan for on each of its "
                        f"workers (default: {sig(ENGINE_BUDGET_S)}); it fits its steps, seeds and "
                        "message size to them and says what that costs")


def _sections_ctx(args) -> dict:
    """The report's ctx from ``--sections``, ``--skip`` and ``--engine-budget-s``, each checked
    before any work (a ValueError naming the option and the value as typed)."""
    ctx = _budget_ctx(args)
    ctx.update(_keys_ctx(args))
    return ctx


def _budget_ctx(args) -> dict:
    """``--engine-budget-s`` checked (no jax, no report loaded): the runs' ctx."""
    import math

    b = args.engine_budget_s
    if b is None:
        return {}
    if not (math.isfinite(b) and 0 < b <= 86400):
        raise ValueError(f"--engine-budget-s {sig(b)}: must be a number of seconds in (0, 86400]")
    return {"shared_wan": {"budget_s": b}}


def _keys_ctx(args) -> dict:
    """``--sections`` and ``--skip`` checked against the report's sections."""
    from ..report import check_section_keys, section_keys

    ctx: dict = {}
    if args.sections is not None:
        ctx["only"] = check_section_keys("--sections", args.sections)
    if args.skip:
        ctx["skip"] = check_section_keys("--skip", args.skip)
        left = [k for k in ctx.get("only") or section_keys() if k not in ctx["skip"]]
        if not left:
            given = f"--sections {' '.join(args.sections)} with " if args.sections else ""
            raise ValueError(f"{given}--skip {' '.join(args.skip)}: leaves no section to build; "
                             "skip fewer sections")
    return ctx


def _report(args) -> int:
    import json

    from .. import _wan_runs
    from .._io import check_out

    # no jax yet: a bad scenario, output folder or budget is told at once, in one line
    sc = load_scenario(args)
    check_out(args.out)
    ctx = _budget_ctx(args)
    chosen = args.sections is not None or bool(args.skip)
    if chosen:  # checked against the report's sections (which loads them) before any work
        ctx.update(_keys_ctx(args))
    if args.quiet:
        ctx["shared_wan"] = {**ctx.get("shared_wan", {}), "progress": False}
    else:
        ctx["progress"] = _progress(args.out)
    try:
        if not chosen:
            # the engine's runs start now, in worker processes, while this one loads jax,
            # xarray and altair (about a second of one core)
            _wan_runs.start_early(sc, ctx)
        from ..report import write
        from ..report.sections.headline import lines

        _fewer_collections(args)
        paths = write(args.out, sc, ctx=ctx)
    finally:
        _wan_runs.stop(ctx)  # runs the report did not take (it stopped first)
    for line in lines(json.loads(paths["json"].read_text())):
        print(line)
    for p in paths.values():
        print(f"wrote {p}")
    return 0


GC_THRESHOLDS = (50_000, 50, 50)
"""The cycle collector's thresholds while a report is built: its tracing makes tens of millions
of short-lived objects, and at Python's (700, 10, 10) the collections took 0.7 s of the first
report's interpreter lock (0.24 s with these, the modules frozen first; peak memory the same)."""


def _fewer_collections(args) -> None:
    """From the command line (a process of its own), the loaded modules set apart from the cycle
    collector (they live as long as the process) and the collector run less often
    (:data:`GC_THRESHOLDS`); a caller's own process (``bandjax.cli.main(argv)``) keeps its
    settings."""
    import gc

    if getattr(args, "from_command_line", False):
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)


def _scenario(args) -> int:
    from ..scenario import save, to_toml_dict

    sc = load_scenario(args)
    if args.write is not None:
        if not args.write.strip():
            raise ValueError(f"--write {args.write!r}: empty; give a file to write, or leave "
                             "--write out to print")
        save(sc, args.write)
        print(f"wrote {args.write}")
    else:
        import tomli_w

        sys.stdout.write(tomli_w.dumps(to_toml_dict(sc)))
    return 0


def _explore(args) -> int:
    from ..report.explorer import read_results, write
    from ..units import describe

    sc = load_scenario(args)
    ctx = _sections_ctx(args)
    if args.results and (args.sections is not None or args.skip or args.engine_budget_s):
        raise ValueError("--results reuses a report's sections as written; --sections, --skip "
                         "and --engine-budget-s apply only when the page computes them")
    results, sweeps = (read_results(args.results, sc) if args.results else None), None
    if results is None:
        from ..report import build

        _fewer_collections(args)
        ctx["sweeps"] = None
        results = build(sc, ctx)
        sweeps = ctx["sweeps"]
    path = write(args.out, sc, results, sweeps)
    print(f"wrote {path} ({describe(path.stat().st_size, 'bytes', 3)})")
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser("report", help="write results.json and results.md for a scenario",
                       description="Write the report (results.json, results.md and figures) "
                                   "for the reference scenario or --scenario FILE. A line on "
                                   "stderr as each section starts (about a minute in all).")
    p.add_argument("--out", default="out", metavar="DIR", help="output folder (default: out)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines or bars on stderr")
    _sections_args(p)
    scenario_arg(p)
    p.set_defaults(func=_report)

    p = sub.add_parser("explore", help="write the explorer page (explorer.html), which works offline",
                       description="Write one self-contained explorer.html: time to target against "
                                   "bandwidth with a play button, module stages, break-evens, shared "
                                   "WAN, model size, syncing every H steps and energy. It opens from "
                                   "disk with no network.")
    p.add_argument("--out", default="out", metavar="DIR", help="output folder (default: out)")
    p.add_argument("--results", metavar="FILE",
                   help="a results.json from `bandjax report` for the same scenario, reused "
                        "instead of computed again (the shared-WAN runs take most of a minute)")
    _sections_args(p)
    scenario_arg(p)
    p.set_defaults(func=_explore)

    p = sub.add_parser("scenario", help="print or write a scenario as TOML (with units)",
                       description="Print the scenario as TOML, or write it to a file to edit "
                                   "and pass back with --scenario.")
    p.add_argument("--write", metavar="FILE", help="write to FILE instead of printing")
    scenario_arg(p)
    p.set_defaults(func=_scenario)
