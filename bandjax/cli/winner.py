"""``bandjax winner``: who wins where over a grid the user names (:func:`bandjax.winner`), printed
as bandwidth regions (an interval, its winner and the margin over the runner-up), optionally
written to zarr or netCDF.

Only argparse at import time: jax and xarray load inside the command.
"""

from __future__ import annotations

import math

from ..units import significant
from ._setup import sig
from .args import (check_bandwidth_range, check_points, load_scenario, methods_arg, scenario_arg,
                   with_methods)

MAX_POINTS = 100_000  # bandwidth points of the printed map


def _value(text: str):
    """A grid value as typed: a number where it reads as one, else a name (ring, h100, low ...)."""
    try:
        return float(text)
    except ValueError:
        return text


def check_winner_args(args) -> None:
    """Refuse ``bandjax winner`` arguments that are not allowed, before any work; each message
    names the option, the value as typed and what is allowed."""
    lo, hi = args.bandwidth
    check_bandwidth_range(lo, hi)
    check_points(args.points, MAX_POINTS)
    seen = set()
    for name, *values in args.over or ():
        if name in ("bandwidth", "wan_Bps"):
            raise ValueError(f"--over {name}: the bandwidth is the table's axis; give its range "
                             "with --bandwidth LO HI")
        if name in ("variant",):
            raise ValueError("--over variant: give the competing variants with --variant")
        if name in seen:
            raise ValueError(f"--over {name} given twice; give each field once")
        seen.add(name)
        if not values:
            raise ValueError(f"--over {name}: give one value or more after the name")
    if args.write is not None:
        from .._io import check_regular_or_absent

        if not args.write.strip():  # an unset shell variable must not skip the write silently
            raise ValueError(f"--write {args.write!r}: empty; give a .zarr or .nc path, or leave "
                             "--write out")
        if not args.write.endswith((".zarr", ".nc")):
            raise ValueError(f"--write {args.write!r}: must end in .zarr (a zarr store) or .nc "
                             "(a netCDF file)")
        if args.write.endswith(".nc"):
            check_regular_or_absent(args.write, "--write")


def regions(winner, margin, bandwidth) -> list[tuple]:
    """Runs of one winner along ``bandwidth`` (1-d arrays): (first GB/s, last GB/s, winner code,
    least margin, largest margin) each, in order."""
    out, start = [], 0
    n = len(bandwidth)
    for i in range(1, n + 1):
        if i == n or winner[i] != winner[start]:
            m = [float(x) for x in margin[start:i] if not math.isnan(float(x))]
            out.append((float(bandwidth[start]), float(bandwidth[i - 1]), int(winner[start]),
                        min(m, default=math.nan), max(m, default=math.nan)))
            start = i
    return out


def _margin_text(lo: float, hi: float) -> str:
    if math.isnan(lo):
        return "-"
    least, most = ("only one reaches the target" if math.isinf(x) else f"x{significant(x)}"
                   for x in (lo, hi))
    return least if least == most else f"{least} to {most}"


def table(ds, names: dict) -> list[str]:
    """The printed lines: per setting of the grid's other dimensions, one line per region."""
    import itertools

    import numpy as np

    others = [d for d in ds["winner"].dims if d != "bandwidth"]
    meanings = ds["winner"].attrs["flag_meanings"].split()  # position 0 is -1, "none"
    lines = []
    for idx in itertools.product(*(range(ds.sizes[d]) for d in others)):
        at = dict(zip(others, idx))
        sub = ds.isel(at)
        if others:
            parts = []
            for d in others:
                c = sub[d]
                label = sub[f"{d}_label"].item() if f"{d}_label" in sub.coords else c.item()
                unit = c.attrs.get("units", "")
                shown = label if isinstance(label, str) else sig(label)
                parts.append(f"{d} = {shown}" + (f" {unit}" if unit not in ("", "1")
                                                   and not isinstance(label, str) else ""))
            lines.append(", ".join(parts) + ":")
        bw = np.asarray(sub["bandwidth"])
        for lo, hi, code, mlo, mhi in regions(np.asarray(sub["winner"]),
                                              np.asarray(sub["margin"]), bw):
            who = meanings[code + 1]
            who = names.get(who, who)
            span = (f"{significant(lo, 4)} - {significant(hi, 4)} GB/s ({significant(8 * lo, 4)} - "
                    f"{significant(8 * hi, 4)} Gb/s)")
            lines.append(f"  {span:<44} {who:<10} {_margin_text(mlo, mhi)}")
    return lines


def _winner(args) -> int:
    check_winner_args(args)
    sc = load_scenario(args)
    import numpy as np

    from ..winmap import winner
    from ._setup import assumption_lines, basis_words, plural, print_setup

    sc, ids = with_methods(sc, args.variant, args.methods)
    lo, hi = args.bandwidth
    grid = {name: (values if len(values) > 1 else values[0])
            for name, *values in ((n, *map(_value, v)) for n, *v in args.over or ())}
    if args.basis:
        grid["basis"] = args.basis
    if args.variant or args.methods:
        grid["variant"] = ids
    bandwidth = np.geomspace(lo, hi, args.points) if args.points > 1 else np.asarray([lo])
    try:
        ds = winner(sc, bandwidth=bandwidth, **grid)
    except (TypeError, ValueError) as e:  # a field or value of --over that is not allowed
        if not args.over:
            raise
        raise ValueError(f"--over: {e}") from None
    names = {v.id: v.short for v in sc.variants}
    swept = [name for name, *_ in args.over or ()]
    basis = grid.get("basis", "hypothesis")
    print_setup(sc, basis=basis_words(sc, basis, ids), bandwidth="the table's axis", swept=swept)
    step = (hi / lo) ** (1 / (args.points - 1)) - 1 if args.points > 1 else 0.0
    print(f"who wins where: the fastest variant to the target loss over {sig(lo)} - {sig(hi)} GB/s "
          f"({plural(args.points, 'log-spaced point')}, {significant(100 * step, 3)}% apart: each edge is a grid "
          "point, the change lies before the next); margin = the runner-up's time to target / "
          "the winner's")
    print(f"  {'bandwidth':<44} {'winner':<10} margin")
    for line in table(ds, names):
        print(line)
    unmeasured = [i for i in ids if math.isnan(sc.steps_of(i))]
    if unmeasured:
        print(f"not measured: {', '.join(unmeasured)} (no steps to target in the scenario's "
              "[steps]: they cannot win)")
    for line in assumption_lines(sc, ids):
        print(line)
    if args.write is not None:
        _write(ds, args.write, sc, {"bandwidth": bandwidth, **grid})
        print(f"wrote {args.write}")
    return 0


def _write(ds, path: str, sc, args: dict) -> None:
    """The map to ``path``, whole or not at all: netCDF bytes through a temporary file and a
    rename (:func:`bandjax._io.atomic_write_bytes`); a zarr store through a new folder swapped in
    (:func:`bandjax.store.write` with ``of="winner"``, the same map computed chunk by chunk)."""
    if path.endswith(".nc"):
        from .._io import atomic_write_bytes

        out = ds.copy()
        for name in out.variables:  # netCDF attributes hold numbers and strings, not lists
            out[name].attrs = {k: (" ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
                               for k, v in out[name].attrs.items()}
        atomic_write_bytes(path, out.to_netcdf())
        return
    from .. import store

    store.write(path, sc, of="winner", progress=False, **args)


def register_cli(sub) -> None:
    p = sub.add_parser(
        "winner", help="who wins where over a grid: bandwidth regions, winner and margin",
        description="The fastest variant to the target loss over a grid you name (bandwidth, "
                    "and any scenario field with --over), printed as bandwidth regions: the "
                    "interval in GB/s and Gb/s, the winner and its margin over the runner-up "
                    "(runner-up's time to target / the winner's), one block per setting of the "
                    "other fields. --write saves the map as zarr (.zarr) or netCDF (.nc).")
    p.add_argument("--bandwidth", nargs=2, type=float, metavar=("LO", "HI"), default=(0.1, 1000.0),
                   help="WAN bandwidth range, GB/s (default 0.1 1000)")
    p.add_argument("--points", type=int, default=400,
                   help="bandwidth points, log-spaced (default 400)")
    p.add_argument("--over", nargs="+", action="append", metavar=("FIELD", "VALUE"),
                   help="another grid axis: a name (budget, enob, dcs, topology, model, gpu, H, "
                        "workers_per_dc or any scenario field) and its values in the sweep's "
                        "units (budget in GFLOP/s or free, low, high); repeat for more axes")
    p.add_argument("--basis", choices=("hypothesis", "exact"),
                   help="the steps basis (default: the scenario's)")
    p.add_argument("--variant", nargs="+", metavar="V",
                   help="the variants that compete, by id or label, the methods' too (default: "
                        "the scenario's, and the methods with --methods); the first wins a tie")
    methods_arg(p)
    p.add_argument("--write", metavar="FILE",
                   help="also write the map: FILE.zarr (a zarr store) or FILE.nc (netCDF), "
                        "whole or not at all")
    scenario_arg(p)
    p.set_defaults(func=_winner)
