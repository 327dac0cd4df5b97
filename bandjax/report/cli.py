"""``bandjax report`` and ``bandjax scenario``."""

from __future__ import annotations

import sys

from ..cli import load_scenario, scenario_arg


def _report(args) -> int:
    from . import write

    import json

    from .headline import lines

    paths = write(args.out, load_scenario(args))
    for line in lines(json.loads(paths["json"].read_text())):
        print(line)
    for p in paths.values():
        print(f"wrote {p}")
    return 0


def _scenario(args) -> int:
    from ..scenario import save, to_toml_dict

    sc = load_scenario(args)
    if args.write:
        save(sc, args.write)
        print(f"wrote {args.write}")
    else:
        import tomli_w

        sys.stdout.write(tomli_w.dumps(to_toml_dict(sc)))
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser("report", help="write results.json and results.md for a scenario",
                       description="Write the report (results.json, results.md and figures) "
                                   "for the reference scenario or --scenario FILE.")
    p.add_argument("--out", default="out", metavar="DIR", help="output folder (default: out)")
    scenario_arg(p)
    p.set_defaults(func=_report)

    p = sub.add_parser("scenario", help="print or write a scenario as TOML (with units)",
                       description="Print the scenario as TOML, or write it to a file to edit "
                                   "and pass back with --scenario.")
    p.add_argument("--write", metavar="FILE", help="write to FILE instead of printing")
    scenario_arg(p)
    p.set_defaults(func=_scenario)
