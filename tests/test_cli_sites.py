"""``bandjax sites`` (docs/cli.md): its numbers are those of site_idle, site_value and
tolerated_tail, to the 4 significant figures printed; bad input is one line and exit 2."""

from __future__ import annotations

import pytest

import bandjax as bj
from bandjax.cli import EXIT_ERROR, main
from bandjax.scenario import save
from bandjax.sitevalue import site_idle
from bandjax.units import UNITS
from test_hostile import bounded  # a hang guard, not a speed check


def _rows(out: str, vid: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.split()[:1] == [vid]]


def _tokens_per_s(number: str, unit: str) -> float:
    """A throughput as printed (bandjax.units.describe: 984.7 ktokens/s), in tokens/s."""
    return float(number.replace(",", "")) * UNITS["token_rate"][unit]


def test_sites_prints_the_typed_numbers(capsys):
    assert main(["sites", "--dcs", "3", "--workers", "8", "--straggler", "exponential",
                 "--tail", "0.1", "--variant", "adamw", "diloco", "--target", "0.5", "0.9"]) == 0
    out = capsys.readouterr().out
    sc = bj.reference().replace(dcs=3.0, workers_per_dc=8.0, straggler="exponential",
                                straggler_s=0.1).with_variants(bj.METHODS)
    ids = ["adamw", "diloco"]
    idle = site_idle(sc, ids)
    value = bj.site_value(sc, ids)
    tail = bj.tolerated_tail(sc, [0.5, 0.9], variant=ids)
    for vid in ids:
        idle_row, value_row, tail_row = _rows(out, vid)
        # variant H step unit CU slowest-site slowest-worker
        seconds = float(idle_row[2]) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[idle_row[3]]
        assert seconds == pytest.approx(float(idle.step_s.sel(variant=vid)), rel=5e-4)
        assert float(idle_row[4].rstrip("%")) / 100 == pytest.approx(
            float(idle.compute_utilisation.sel(variant=vid)), rel=5e-4)
        assert float(idle_row[6].rstrip("%")) / 100 == pytest.approx(
            float(idle.hot_spot_straggle.sel(variant=vid)), rel=5e-4)
        at = value.sel(variant=vid, site="dc0")
        # with: tokens/s CU; without: tokens/s CU; adds: tokens/s
        for (number, unit), name in zip((value_row[1:3], value_row[4:6], value_row[7:9]),
                                        ("throughput_tokens_per_s",
                                         "throughput_without_tokens_per_s",
                                         "throughput_added_tokens_per_s")):
            assert _tokens_per_s(number, unit) == pytest.approx(float(at[name]), rel=5e-4)
        for u in (0.5, 0.9):
            cell = tail.sel(utilisation=u, variant=vid)
            if int(cell.status) == 0:
                assert f"s = {float(cell.tolerated_tail):.4g}" in " ".join(tail_row)
    assert "missed with no tail" in " ".join(_rows(out, "adamw")[2])  # AdamW misses 90% outright
    assert "the slowest worker" in out and "tokens/s" in out and "section 16" in out


def test_two_dcs_say_what_each_site_adds_needs(capsys):
    assert main(["sites", "--variant", "dp_bf16"]) == 0
    out = capsys.readouterr().out
    assert "needs 3 DCs or more" in out and "every DC is the same site" in out


@pytest.mark.parametrize("argv, fragment", [
    (["--target", "0.9"], "--target 0.9: the tolerated tail needs a straggler family"),
    (["--straggler", "exponential", "--target", "1.5"], "--target 1.5: must be a compute-utilisation target"),
    (["--straggler", "exponential", "--tail", "2"], "an exponential tail share must be in [0, 1]"),
    (["--tail", "-1"], "--tail -1: must be a tail >= 0"),
    (["--dcs", "1"], "--dcs 1: must be a whole number of DCs in 2 .. 1,000"),
    (["--dcs", "1001"], "--dcs 1001: must be a whole number of DCs in 2 .. 1,000"),
    (["--straggler", "weibull"], "invalid choice: 'weibull'"),
    (["--variant", "nope"], "--variant nope"),
    (["--bandwidth", "1e300"], "--bandwidth 1e+300 GB/s: outside the magnitudes bandjax computes "
                               "with, 1e-39 to 1e+21 GB/s"),
    (["--bandwidth", "0"], "--bandwidth 0: must be a finite bandwidth > 0 GB/s"),
])
def test_sites_bad_input(capsys, argv, fragment):
    assert main(["sites", *argv]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_more_dcs_than_the_sites_take_are_refused_before_any_array(tmp_path, capsys):
    """A scenario of 10^8 equal DCs: one line at once (it ran out of memory making 10^8 names)."""
    path = tmp_path / "dcs.toml"
    save(bj.reference().replace(dcs=1e8), path)
    with bounded():
        assert main(["sites", "--scenario", str(path)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "dcs = 100,000,000: the sites of a job are taken one by one; at most 1,000 DCs" in err
    assert len(err.strip().splitlines()) == 1
