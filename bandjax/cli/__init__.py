"""The ``bandjax`` command.

One module per command (``report.py``: report, explore and scenario; ``breakeven.py``, ``need.py``,
``winner.py``, ``goodput.py``, ``sites.py``, ``wan.py``, ``store.py``, ``calibrate.py``), each adding its subcommands with
``register_cli(subparsers)`` and importing jax only inside its command functions, so ``bandjax
--help`` and ``bandjax COMMAND --help`` load no jax. They share their arguments through
:mod:`bandjax.cli.args`; none imports this one, and nothing outside this package imports it. A
new command is a module here with ``register_cli`` and one entry in :data:`COMMANDS`.

Every expected failure (a bad argument or scenario value, a file that cannot be read or written,
a simulation over its bound, an unreachable scheduler, a missing optional package) ends the command
with one line ``bandjax <command>: error: ...`` on stderr and exit status 2; Ctrl-C ends it with one
line and status 130. Anything else is a defect and keeps its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..units import ScenarioError
from . import breakeven, calibrate, goodput, need, report, sites, store, wan, winner

# each register_cli(subparsers) adds one or more subcommands, in this order in --help
COMMANDS = (report, breakeven, need, goodput, sites, winner, wan, store, calibrate)

EXIT_ERROR = 2  # as argparse's own usage errors
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line, ``bandjax <command>: error: ...``."""

    def error(self, message):
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _version() -> str:
    """The installed distribution's version (package metadata)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bandjax")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bandjax",
        description="When does computing a band of the gradient in transit pay? "
                    "Closed forms, break-evens, a shared-WAN engine and a report.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register_cli(sub)
    return parser


def _expected_errors() -> tuple[type[BaseException], ...]:
    """Exception types that are a user's or the environment's doing, not a defect."""
    from events.engine import SimulationBoundError

    # OSError covers files, ConnectionError and TimeoutError (an unreachable scheduler);
    # ImportError a missing optional package; MemoryError a request the bounds did not foresee
    return (ScenarioError, ValueError, OSError, SimulationBoundError, ImportError, MemoryError)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, ImportError) and getattr(e, "name", None):
        text += f" (install the package that provides {e.name!r})"
    if isinstance(e, MemoryError):
        text = f"out of memory{': ' + text if text != 'MemoryError' else ''}"
    return text


def _cache_warnings_as_lines(command) -> None:
    """The cache folder's warnings printed as one line each, "bandjax CMD: warning: ...", not
    as Python's warning with its source line; JAX's own about an entry of its cache it could not
    read or write are not printed (it compiles anew)."""
    import warnings

    from .._cache import CacheWarning

    plain = warnings.showwarning
    if getattr(plain, "_bandjax", False):  # installed by an earlier call in this process
        return
    # JAX writes its cache entries in place: one cut short (a process ended while it wrote) is
    # read back as an error that JAX warns of, then compiles anew and writes whole again
    warnings.filterwarnings("ignore", message="Error (reading|writing) persistent compilation "
                                              "cache entry", category=UserWarning)

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, CacheWarning):
            print(f"{command()}: warning: {message}", file=sys.stderr)
        else:
            plain(message, category, filename, lineno, file, line)

    show._bandjax = True
    warnings.showwarning = show


def main(argv=None) -> int:
    """Run ``bandjax`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status (a
    Ctrl-C with ``argv`` None, the command line, ends the process at once with status 130).

    From the command line (``argv`` None) the process then ends at once with that status, its
    output flushed: the interpreter's shutdown (about half a second of tearing XLA down) resets
    the Ctrl-C handling first, so an interrupt landing there ended the process by the signal,
    silently, after the command had finished."""
    status = _main(argv)
    if argv is None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _main(argv) -> int:
    from_command_line = argv is None
    command = "bandjax"
    if from_command_line:  # before jax loads: a Ctrl-C at any moment is one line and 130
        from .._io import install_interrupt, interrupted_line

        install_interrupt()
    _cache_warnings_as_lines(lambda: command)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.from_command_line = from_command_line  # a process of its own, ended by os._exit
        command = f"bandjax {args.command}"
        if from_command_line:
            interrupted_line(f"{command}: interrupted")
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        if from_command_line:
            # leave at once: shutting the interpreter down while XLA compiles on its own threads
            # can crash (SIGSEGV) after the line above
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    except SystemExit as e:  # argparse: --help (0) or a usage error (2), already printed
        return e.code if isinstance(e.code, int) else EXIT_ERROR
    except _expected_errors() as e:
        print(f"{command}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
