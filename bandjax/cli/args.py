"""Arguments shared by the ``bandjax`` commands: ``--scenario FILE`` and variants by id or label.

The command modules import this one, never :mod:`bandjax.cli` (the command at the top imports
them). Nothing here loads jax: building the parser, and so ``--help``, stays instant.
"""

from __future__ import annotations

import argparse
import math

from ._setup import sig


def scenario_arg(parser: argparse.ArgumentParser) -> None:
    """Add the common ``--scenario FILE`` option."""
    parser.add_argument("--scenario", metavar="FILE",
                        help="scenario TOML file (default: the study's reference scenario; "
                             "`bandjax scenario --write FILE` writes one to edit)")


def load_scenario(args):
    """The scenario of ``--scenario FILE`` (a regular UTF-8 file of at most
    :data:`bandjax._limits.MAX_SCENARIO_BYTES`), or the reference scenario."""
    from .._io import read_bounded_text
    from .._limits import MAX_SCENARIO_BYTES
    from ..scenario import load, reference

    path = getattr(args, "scenario", None)
    if path is None:
        return reference()
    if not path.strip():  # `--scenario ""` (an unset shell variable) must not run the reference
        raise ValueError(f"--scenario {path!r}: empty; give a scenario file, or leave --scenario "
                         "out for the study's reference scenario")
    # checked here, before scenario.load opens it: /dev/zero, a FIFO, a directory or a huge
    # file must not be read, and a file that is not UTF-8 must be named
    read_bounded_text(path, "scenario file", MAX_SCENARIO_BYTES)
    return load(path)


def variant_ids(option: str, names, sc) -> list[str]:
    """The ids of the variants ``names`` (ids or short labels such as ``E'``, any case) in the
    scenario's registry (a user's variants included); a ``ValueError`` naming ``option`` for an
    unknown one or one given twice."""
    from ..breakeven import resolve_variant

    ids = []
    for name in names:
        try:
            ids.append(resolve_variant(name, sc.variants))
        except ValueError as e:
            raise ValueError(f"{option} {name}: {e}") from None
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"{option} {' '.join(names)}: {', '.join(twice)} given twice; give each "
                         "variant once")
    return ids


def methods_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--methods``: the field's ways of syncing in rounds join the scenario's variants."""
    parser.add_argument("--methods", action="store_true",
                        help="add the field's ways of syncing in rounds (bandjax.METHODS: data "
                             "parallel bf16, DiLoCo, Streaming DiLoCo, its FP4 overlapped form, "
                             "int8 DiLoCo)")


def with_methods(sc, names, methods: bool, option: str = "--variant"):
    """(scenario, ids): the variants ``names`` (ids or labels; default the scenario's, and every
    method of :data:`bandjax.METHODS` with ``methods``), and the scenario with the methods among
    them added. A method may be named without ``methods``."""
    from ..variants import METHODS

    pack = [m for m in METHODS if m.id not in sc.ids]
    full = sc.with_variants(pack)
    ids = variant_ids(option, names, full) if names else list(full.ids if methods else sc.ids)
    return sc.with_variants([m for m in pack if m.id in ids or methods]), ids


def check_bandwidth_range(lo: float, hi: float) -> None:
    """``--bandwidth LO HI``: finite GB/s with 0 < LO <= HI (one wording for every command)."""
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise ValueError(f"--bandwidth {sig(lo)} {sig(hi)}: must be GB/s with 0 < LO <= HI, finite")


def check_points(points: int, most: int) -> None:
    """``--points N``: a whole number of points in 1 .. ``most``."""
    if not 1 <= points <= most:
        raise ValueError(f"--points {points}: must be a whole number of points in 1 .. {most:,}")


def check_once(option: str, values, what: str) -> None:
    """A list option names each value once: ``--load 0 0.5 0.5`` is refused, naming the repeat."""
    twice = sorted({x for x in values if list(values).count(x) > 1})
    if twice:
        raise ValueError(f"{option} {' '.join(map(sig, values))}: "
                         f"{', '.join(map(sig, twice))} given twice; give each {what} once")
