"""The ``bandjax`` command.

Each subcommand lives beside the code it drives and registers itself through a
``register_cli(subparsers)`` function listed in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .units import ScenarioError

# module path -> its register_cli(subparsers) adds one or more subcommands
COMMANDS = (
    "bandjax.report.cli",
    "bandjax.report.explorer",
    "bandjax.report.shared_wan",
    "bandjax.report.breakeven",
)


def scenario_arg(parser: argparse.ArgumentParser) -> None:
    """Add the common ``--scenario FILE`` option."""
    parser.add_argument("--scenario", metavar="FILE",
                        help="scenario TOML file (default: the study's reference scenario; "
                             "`bandjax scenario --write FILE` writes one to edit)")


def load_scenario(args):
    from .scenario import load, reference

    return load(args.scenario) if getattr(args, "scenario", None) else reference()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bandjax",
        description="When does computing a band of the gradient in transit pay? "
                    "Closed forms, break-evens, a shared-WAN engine and a report.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for path in COMMANDS:
        importlib.import_module(path).register_cli(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ScenarioError, ValueError) as e:
        print(f"bandjax {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
