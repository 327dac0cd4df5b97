"""The setup ``need``, ``winner`` and ``breakeven`` print before their answer (compute per step c
and what it came from, the cluster, the overlap, the basis, what "bandwidth" means): its numbers
are the scenario's, to the figures printed; no printed number has more than 6 significant figures;
``winner --methods`` adds the pack as ``need --methods`` does."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

import bandjax as bj
from bandjax.cli import main
from bandjax.cli._setup import plural, sig
from bandjax.scenario import save

GB = 1e9 / 8  # bytes/s per Gbit/s
TIME = re.compile(r"compute per step c = (\S+) (s|ms|us|ns) = ")
UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _setup(out: str) -> list[str]:
    """The setup block: its heading and its indented lines."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("setup ("))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line)
    return block


def _c_s(block: list[str]) -> float:
    m = TIME.search(block[1])
    return float(m[1].replace(",", "")) * UNIT_S[m[2]]


@pytest.fixture(scope="module")
def moe_file(tmp_path_factory):
    """A mixture-of-experts model on H100s at 40% utilisation, 3 DCs of 1 worker each, links that
    differ (the slowest 5 Gbit/s) and an overlap fraction of 0.25: every line of the setup differs
    from the reference's."""
    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * GB
    sc = (bj.reference().at_preset("deepseek-v3").with_gpu("h100", utilisation=0.4)
          .with_links(bandwidth=B, names=("us-east", "us-central", "eu"))
          .replace(workers_per_dc=1.0, overlap_fraction=0.25))
    path = tmp_path_factory.mktemp("setup") / "moe.toml"
    save(sc, path)
    return sc, str(path)


@pytest.mark.parametrize("argv", [["need", "--utilisation", "0.9"],
                                  ["winner", "--points", "20"],
                                  ["breakeven", "E", "adamw"]])
def test_setup_of_the_reference(argv, capsys):
    """c = 6 x P x T / (peak x utilisation) = 0.4918 ms on the study's calibrated GPU
    (docs/model.md section 13), printed to 6 significant figures; 2 DCs of 4 workers, f = 0."""
    assert main(argv) == 0
    out = capsys.readouterr().out
    block = _setup(out)
    sc = bj.reference()
    assert out.startswith(block[0])  # before the answer
    assert _c_s(block) == pytest.approx(float(sc.gpu_compute_s), rel=5e-6)
    assert _c_s(block) == pytest.approx(0.4918e-3, rel=1e-9)  # the study's calibrated c
    assert ("6 FLOP/param/token x 7,916,736 params (dense) x 512 tokens/worker / (the study's "
            "GPU, 49.4514 TFLOP/s effective, calibrated x 100% utilisation)") in block[1]
    assert float(sc.gpu_peak_FLOPs) / 1e12 == pytest.approx(49.4514, rel=5e-6)
    assert "K = 2 DCs of 4 workers each (8 in all), ring; overlap fraction f = 0 " in block[2]
    assert block[4].startswith("  bandwidth: per directed WAN link, every link the same;")
    assert block[4].endswith("the scenario's: 12.5 GB/s = 100 Gbit/s")


@pytest.mark.parametrize("argv, basis, role", [
    (["need", "--utilisation", "0.9"], "none used", "solved for here"),
    (["winner", "--points", "20"], "hypothesis (it sets the steps to target of band_switch)",
     "the table's axis"),
    (["breakeven", "E'", "adamw"], "hypothesis and exact, a block each (it sets the steps to "
                                   "target of band_switch)", "searched for the break-even"),
    (["breakeven", "E", "adamw", "--basis", "exact"], "exact (no variant here depends on it)",
     "searched for the break-even"),
])
def test_setup_of_a_scenario_unlike_the_reference(moe_file, argv, basis, role, capsys):
    """Each line from the scenario file: c from the H100 preset, 40% utilisation, 37e9 active of
    671e9 parameters; 1 worker (singular) in each of 3 DCs; f = 0.25; the bandwidth the slowest
    link's, the others scaled with it."""
    sc, path = moe_file
    assert main([*argv, "--scenario", path]) == 0
    block = _setup(capsys.readouterr().out)
    c = float(sc.gpu_compute_s)
    assert c == pytest.approx(6 * 37e9 * 512 / (989e12 * 0.4), rel=1e-12)  # section 14's c
    assert _c_s(block) == pytest.approx(c, rel=5e-6)
    assert ("6 FLOP/param/token x 37,000,000,000 active params (of 671,000,000,000) x 512 "
            "tokens/worker / (GPU "
            "h100, 989 TFLOP/s dense BF16 peak x 40% utilisation)") in block[1]
    assert "K = 3 DCs of 1 worker each (3 in all), ring; overlap fraction f = 0.25 " in block[2]
    assert block[3].startswith(f"  steps basis: {basis}")
    assert ("bandwidth: per directed WAN link, the slowest link's; every other link scales with "
            f"it (the links table's ratios are kept); {role}; the scenario's slowest link: "
            f"{sig(float(sc.wan_Bps) / 1e9)} GB/s = 5 Gbit/s") in block[4]
    assert float(sc.wan_Bps) == pytest.approx(5 * GB, rel=1e-12)


def test_need_at_the_scenario_with_links_that_differ(moe_file, capsys):
    """The column "at the scenario" is bandjax.sweep's compute utilisation at the scenario's own
    (slowest-link) bandwidth, to its 4 significant figures."""
    sc, path = moe_file
    assert main(["need", "--utilisation", "0.5", "--wide", "--variant", "adamw", "topk",
                 "--scenario", path]) == 0
    out = capsys.readouterr().out
    cu = bj.sweep(sc, variant=["adamw", "topk"], quantities=("compute_utilisation",))
    for vid in ("adamw", "topk"):
        row = next(line for line in out.splitlines() if line.split()[:1] == [vid])
        assert float(row.split()[-1].rstrip("%")) / 100 == pytest.approx(
            float(cu["compute_utilisation"].sel(variant=vid)), rel=5e-4)


def test_plural_forms():
    assert [plural(1, "worker"), plural(2, "worker"), plural(1.0, "DC"), plural(0, "point")] == \
        ["1 worker", "2 workers", "1 DC", "0 points"]
    assert plural(1, "log-spaced point") == "1 log-spaced point"


def test_winner_one_point_is_singular(capsys):
    assert main(["winner", "--points", "1"]) == 0
    out = capsys.readouterr().out
    assert "(1 log-spaced point," in out and "1 log-spaced points" not in out


# a number as printed: digits with an optional fraction and exponent, not inside another number
NUMBER = re.compile(r"(?<![\d.])(\d+)(?:\.(\d+))?(?:e[-+]?\d+)?")


def significant(match: re.Match) -> int:
    """Significant figures of a printed number: its digits less leading zeros, and less trailing
    zeros of a whole number (1000 is 1 figure; 1000.5 is 5)."""
    whole, frac = match[1], match[2]
    if frac is None:
        return len(whole.strip("0")) or 1
    return len((whole + frac).lstrip("0")) or 1


def test_significant_counts_figures():
    counts = [significant(m) for m in NUMBER.finditer(
        "7797.171553758004 0.06953 12.5447 7.91674e6 8000 x1.05 1.56809 GB/s 100%")]
    assert counts == [16, 4, 6, 6, 1, 3, 6, 1]


@pytest.mark.parametrize("argv", [
    ["need"], ["need", "--wide", "--methods"], ["need", "--help"],
    ["winner", "--points", "60", "--methods", "--over", "gpu", "h100", "b200"], ["winner", "--help"],
    ["breakeven", "E'", "adamw", "--sensitivity", "--achieve", "optics_Sps"],
    ["breakeven", "E", "adamw", "--over", "budget"],
    ["breakeven", "E'", "adamw", "--over", "enob", "--basis", "exact"], ["breakeven", "--help"],
    ["MOE", "need", "--methods"], ["MOE", "winner", "--points", "60"],
    ["MOE", "breakeven", "C'", "adamw"],
])
def test_no_number_printed_has_more_than_6_significant_figures(argv, moe_file, capsys):
    if argv[0] == "MOE":
        argv = [*argv[1:], "--scenario", moe_file[1]]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) > 3
    long = [(m[0], line) for line in out.splitlines() for m in NUMBER.finditer(line)
            if significant(m) > 6]
    assert long == []


def test_winner_methods_adds_the_pack_as_need_does(tmp_path, capsys):
    """--methods: the methods compete (the written map's variants and winners are bandjax.winner's
    over the scenario with bandjax.METHODS added); unmeasured ones are said not to be able to win;
    --variant names a method without --methods, as need's does."""
    nc = tmp_path / "map.nc"
    assert main(["winner", "--points", "30", "--methods", "--write", str(nc)]) == 0
    out = capsys.readouterr().out
    sc = bj.reference().with_variants(bj.METHODS)
    direct = bj.winner(sc, bandwidth=np.geomspace(0.1, 1000, 30), variant=list(sc.ids))
    ds = xr.open_dataset(nc)
    assert list(ds["variant"].values) == list(sc.ids)
    np.testing.assert_array_equal(ds["winner"].values, direct["winner"].values)
    assert ("not measured: dp_bf16, diloco, streaming_diloco, streaming_diloco_fp4, "
            "intellect1_int8 (no steps to target") in out
    assert "streaming_diloco_fp4 (tau = 1)" in out
    assert main(["winner", "--points", "5", "--variant", "adamw", "diloco"]) == 0
    out = capsys.readouterr().out
    assert "not measured: diloco " in out and "diloco (H = 100)" in out
    assert main(["winner", "--help"]) == 0
    assert "--methods" in capsys.readouterr().out


def test_setup_names_each_site_where_sites_differ(tmp_path, capsys):
    """Sites that differ (docs/model.md section 16): each site's workers and its compute relative
    to c, c the slowest site's (here the A100 site's: 6 x P x 512 / (312 TFLOP/s x 40%))."""
    sc = bj.reference().with_sites(names=["a", "b", "c"], gpu=["h100", "a100", "h100"],
                                   workers=[8, 2, 1])
    path = tmp_path / "sites.toml"
    save(sc, path)
    assert main(["need", "--utilisation", "0.5", "--variant", "adamw", "--scenario",
                 str(path)]) == 0
    block = _setup(capsys.readouterr().out)
    assert _c_s(block) == pytest.approx(6 * 7_916_736 * 512 / (312e12 * 0.4), rel=5e-6)
    sites = re.findall(r"(\w) (\d+) workers? \(c x (\S+)\)", block[2])
    assert [(name, int(n)) for name, n, _ in sites] == [("a", 8), ("b", 2), ("c", 1)]
    for (_, _, rel), want in zip(sites, sc.sites.compute_rel):
        assert float(rel) == pytest.approx(want, rel=5e-6)
    assert float(sites[0][2]) == pytest.approx(312 / 989, rel=5e-6)  # an H100 site's c_i / c
    assert "c 1 worker (c x" in block[2] and "K = 3 DCs, sites differ" in block[2]
