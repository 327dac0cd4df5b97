"""``bandjax winner``: who wins where over a named grid, as bandwidth regions."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import xarray as xr

import bandjax
from bandjax import cli
from bandjax.cli.winner import regions

ROW = re.compile(r"^  (\S+) - (\S+) GB/s \((\S+) - (\S+) Gb/s\)\s+(\S+)\s+(.+)$")


def test_regions_are_runs_of_one_winner():
    w = np.array([2, 2, 0, 0, 0, 2])
    m = np.array([1.5, 1.2, 1.0, np.inf, 1.1, np.nan])
    bw = np.array([0.1, 1.0, 2.0, 3.0, 4.0, 5.0])
    got = regions(w, m, bw)
    assert got[:2] == [(0.1, 1.0, 2, 1.2, 1.5), (2.0, 4.0, 0, 1.0, math.inf)]
    lo, hi, code, mlo, mhi = got[2]
    assert (lo, hi, code) == (5.0, 5.0, 2) and math.isnan(mlo) and math.isnan(mhi)


def _rows(out: str) -> dict:
    """{heading: [(lo GB/s, hi GB/s, winner label, margin text)]} of the printed table."""
    blocks, at = {}, None
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["bandwidth", "winner"])
    for line in lines[start + 1:]:  # after the setup and the table's heading
        if line.endswith(":") and not line.startswith(" "):
            at = line[:-1]
            blocks[at] = []
        elif (m := ROW.match(line)) and at is not None:
            lo, hi, lo_bits = (float(m[k].replace(",", "")) for k in (1, 2, 3))  # 1,000 GB/s
            blocks[at].append((lo, hi, m[5], m[6].strip()))
            assert lo_bits == pytest.approx(8 * lo, rel=1e-3)  # Gb/s = 8 x GB/s
    return blocks


def test_winner_regions_bracket_the_break_evens(capsys, tmp_path):
    """Each change of winner printed lies where bandjax.break_even (docs/model.md section 10)
    finds the two variants' crossing: between a region's last grid point and the next one's
    first."""
    sc = bandjax.reference()
    nc = tmp_path / "map.nc"
    assert cli.main(["winner", "--over", "budget", "low", "free", "--points", "120",
                     "--write", str(nc)]) == 0
    out = capsys.readouterr().out
    blocks = _rows(out)
    assert list(blocks) == ["budget = low", "budget = free"]
    ids = {v.short: v.id for v in sc.variants}
    for heading, rows in blocks.items():
        budget = heading.split(" = ")[1]
        assert rows[0][0] == pytest.approx(0.1) and rows[-1][1] == pytest.approx(1000.0)
        for (lo, hi, a, _), (lo2, _, b, _) in zip(rows, rows[1:]):
            assert a != b
            be = bandjax.break_even(sc.replace(budget_FLOPs=float(
                {"low": sc.budget_low_FLOPs, "free": math.inf}[budget])), ids[a], ids[b])
            crossings = np.atleast_1d(np.asarray(be.x, dtype=float)) / 1e9  # B/s to GB/s
            assert any(hi * (1 - 1e-3) <= x <= lo2 * (1 + 1e-3) for x in crossings), \
                (heading, a, b, hi, lo2, crossings)
    # the written map is the one printed: its winner at each region's ends
    ds = xr.open_dataset(nc)
    meanings = ds["winner"].attrs["flag_meanings"].split()
    for j, (heading, rows) in enumerate(blocks.items()):
        for lo, hi, who, _ in rows:
            for x in (lo, hi):
                i = int(np.argmin(abs(ds["bandwidth"].values - x)))
                code = int(ds["winner"].isel(bandwidth=i, budget=j))
                assert sc.variant(meanings[code + 1]).short == who


def test_winner_writes_zarr_whole(tmp_path, capsys):
    path = tmp_path / "map.zarr"
    assert cli.main(["winner", "--over", "dcs", "2", "4", "--points", "20",
                     "--write", str(path)]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    from bandjax import store

    ds = store.open(path)
    direct = bandjax.winner(bandjax.reference(), bandwidth=np.geomspace(0.1, 1000, 20),
                            dcs=[2.0, 4.0])
    np.testing.assert_array_equal(ds["winner"].values, direct["winner"].values)


@pytest.mark.parametrize("argv, says", [
    (["--over", "nope", "1"], "--over: nope is not a sweep argument or scenario field"),
    (["--over", "budget"], "--over budget: give one value or more after the name"),
    (["--over", "bandwidth", "1", "2"], "--over bandwidth: the bandwidth is the table's axis"),
    (["--over", "dcs", "2", "--over", "dcs", "4"], "--over dcs given twice"),
    (["--bandwidth", "0", "1"], "--bandwidth 0 1: must be GB/s with 0 < LO <= HI"),
    (["--points", "0"], "--points 0: must be a whole number of points in 1 .. 100,000"),
    (["--write", "map.csv"], "--write 'map.csv': must end in .zarr"),
    (["--variant", "Z"], "--variant Z:"),
    (["--over", "topology", "star"], "--over: topology = 'star'"),
])
def test_winner_bad_arguments_one_line(argv, says, capsys):
    assert cli.main(["winner", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bandjax winner: error: ") and says in err[0], err
