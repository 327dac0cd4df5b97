"""``bandjax calibrate FILE --fit ...``: fit scenario parameters to a table of measured step times."""

from __future__ import annotations

import sys


def register_cli(sub) -> None:
    from .args import scenario_arg

    p = sub.add_parser(
        "calibrate", help="fit scenario parameters (d per variant, GPU compute, link rates) to "
                          "measured step times",
        description="Fit the named parameters so the closed forms reproduce measured step times "
                    "(weighted least squares), and print each estimate with its standard error, "
                    "95% interval and every row's residual, in units. FILE is a CSV or TOML "
                    "table, one row per run: variant, step time (step = '4.1 ms', or a step_ms "
                    "column; repeats as a list or ';'-separated), and the fields that differ from "
                    "the scenario (bandwidth in GB/s, budget, model, topology, workers_per_dc, any field).")
    p.add_argument("file", metavar="FILE", help="measurements, .csv or .toml")
    p.add_argument("--fit", nargs="+", required=True, metavar="PARAM",
                   help="parameters to fit: d.<variant> (id or label), gpu, a scenario field "
                        "(worker_port_Bps, wan_Bps, ...) or its file key (wan, worker_port)")
    p.add_argument("--write", metavar="FILE", help="write the fitted scenario as TOML with units, "
                   "the estimates' covariance in its [uncertain] table (refused when the rows do "
                   "not identify the parameters, unless --force)")
    p.add_argument("--force", action="store_true",
                   help="fit even with no more distinct rows than parameters (a warning instead of "
                        "an error); with --write: write the fitted scenario even when the "
                        "parameters are not identifiable (then without a covariance)")
    scenario_arg(p)
    p.set_defaults(func=_calibrate_cli)


def _calibrate_cli(args) -> int:
    import warnings

    from ..calibration import CalibrationError, CalibrationWarning, calibrate
    from .args import load_scenario

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibrationWarning)
        cal = calibrate(args.file, args.fit, load_scenario(args), force=getattr(args, "force", False))
    print(cal.table())
    for w in caught:  # the table prints the fit's own warning; any other is printed here
        if issubclass(w.category, CalibrationWarning) and str(w.message) not in cal.warning:
            print(f"warning: {w.message}")
    if args.write and not cal.identifiable and not getattr(args, "force", False):
        raise CalibrationError(f"--write {args.write}: not written, the rows do not identify "
                               f"{', '.join(cal.names)} (see above); give --force to write it anyway")
    if args.write:
        cal.save(args.write)
        print(f"\nwrote the fitted scenario to {args.write}")
    if not cal.identifiable:
        return 1
    return 0


def main(argv=None) -> int:
    """Run ``bandjax calibrate`` alone (as ``bandjax.cli.main`` would): exit 2 and one line on
    bad input."""
    import argparse

    from ..units import ScenarioError

    parser = argparse.ArgumentParser(prog="bandjax")
    sub = parser.add_subparsers(dest="command", required=True)
    register_cli(sub)
    args = parser.parse_args(["calibrate", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except (ScenarioError, ValueError) as e:
        print(f"bandjax calibrate: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
