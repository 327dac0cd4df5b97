"""The report section "What bandwidth each method needs" (docs/model.md section 14): its numbers
are bandjax.required_bandwidth's and the sweep's, its words are written from them, and results.md
shows them with their units."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bandjax as bj
from bandjax.report import _json_ready
from bandjax.report.sections import Results, need

# docs/model.md section 14, worked values: Gbit/s for CU 50 / 80 / 90 / 95 / 99 %, printed to the
# digits below (2 DCs of one worker, d = 0, latency 0, f = 2/3, a 10B model at c = 0.8 s)
WORKED_Gbitps = {
    "dp_bf16": [120.0, 218.18, 257.14, 278.05, 295.52],
    "diloco": [1.987, 7.792, 16.981, 33.728, 119.28],
    "streaming_diloco": [1.807, 5.607, 9.184, 12.555, 17.128],
    "streaming_diloco_fp4": [0.395, 0.968, 1.324, 1.566, 1.807],
}


def _typed(section: need.Need) -> need.Need:
    """The section as results.json holds it, read back."""
    return Results.of(json.loads(json.dumps(_json_ready(section.to_json())))).need


@pytest.fixture(scope="module")
def worked():
    sc = bj.reference().replace(dcs=2.0, workers_per_dc=1.0, params=10e9, overlap_fraction=2 / 3,
                                wan_latency_s=0.0).replace(gpu_compute_s=0.8)
    return sc, _typed(need.build(sc, {}))


@pytest.fixture(scope="module")
def ref():
    sc = bj.reference()
    return sc, _typed(need.build(sc, {}))


def test_the_worked_values_of_section_14(worked):
    sc, r = worked
    assert r.utilisation == [0.5, 0.8, 0.9, 0.95, 0.99]
    # the scenario's six variants, then the methods pack it does not hold
    assert list(r.variants) == [*sc.ids, *(m.id for m in bj.METHODS)]
    assert [v["pack"] for v in r.variants.values()] == [False] * 6 + [True] * len(bj.METHODS)
    for vid, printed in WORKED_Gbitps.items():
        for i, p in enumerate(printed):
            digits = len(str(p).split(".")[1])
            if r.status[vid][i] == "below_range":  # the FP4 sync's 50%: 0.395 Gbit/s < 0.1 GB/s
                assert 8 * r.range_GBps[0] > p and (vid, i) == ("streaming_diloco_fp4", 0)
                assert need.cell(r, vid, i) == "0.0493 GB/s (0.395 Gbit/s), below the range"
            else:
                assert r.status[vid][i] == "reached"
            assert r.cap[vid][i] == "none"
            assert abs(8 * r.required_GBps[vid][i] - p) <= 0.5 * 10.0 ** -digits + 1e-12, (vid, i)
    assert r.variants["streaming_diloco_fp4"] | {"label": None} == {
        "short": "S-DiLoCo FP4", "label": None, "sync_every": 100, "fragments": 16, "delay": 1,
        "pack": True}


def test_numbers_are_required_bandwidths_and_the_sweeps(ref):
    sc, r = ref
    full = sc.with_variants(bj.METHODS)
    ds = bj.required_bandwidth(full, r.utilisation).transpose("utilisation", "variant")
    for k, vid in enumerate(ds.variant.values):
        want = ds.required_bandwidth_GBps.values[:, k]
        got = np.array([np.nan if x is None else x for x in r.required_GBps[vid]])
        np.testing.assert_allclose(got, want, rtol=1e-9, equal_nan=True)
    cu = bj.sweep(full, bandwidth=r.wan_GBps, quantities=["compute_utilisation"])
    for vid in r.variants:
        at = float(cu.compute_utilisation.sel(variant=vid))
        assert r.utilisation_at_wan[vid] == pytest.approx(at, rel=1e-9)
        # a target is met at the scenario's bandwidth exactly where it needs no more than it
        for i, u in enumerate(r.utilisation):
            needs = r.required_GBps[vid][i]
            assert (at >= u) == (needs is not None and needs <= r.wan_GBps * (1 + 1e-9)), (vid, u)
        # the curve never falls with bandwidth, and holds the scenario's point
        curve = np.array(r.compute_utilisation[vid])
        assert (np.diff(curve) >= -1e-12).all() and 0 < curve.min() and curve.max() <= 1
        assert curve[r.bandwidth_GBps.index(r.wan_GBps)] == pytest.approx(at, rel=1e-6)
    assert r.bandwidth_GBps[0] == pytest.approx(0.1) and r.bandwidth_GBps[-1] == pytest.approx(1e3)


def test_conclusions_are_written_from_the_numbers(ref):
    sc, r = ref
    i = r.utilisation.index(0.9)
    # the reference: the study's six and data parallel are capped at 90% whatever the bandwidth;
    # DiLoCo-family methods reach it, the FP4 overlapped sync with the least
    met = {vid: g[i] for vid, g in r.required_GBps.items() if r.status[vid][i] != "not_reachable"}
    least = min(met, key=met.get)
    assert r.conclusions[0] == (f"For 90% compute utilisation {r.variants[least]['short']} needs "
                                f"the least WAN bandwidth: {need.Gbps_text(met[least])}.")
    capped = [vid for vid in r.variants if r.status[vid][i] == "not_reachable"]
    assert set(capped) == {*sc.ids, "dp_bf16"}
    for vid in capped:
        cap = need.CAP_WORDS[r.cap[vid][i]]
        assert any(r.variants[vid]["short"] in s and f"the {cap} cap" in s for s in r.conclusions)
    reach = [r.variants[v]["short"] for v in r.variants if r.utilisation_at_wan[v] >= 0.9]
    assert f"At the scenario's 12.5 GB/s (100 Gbit/s), {need._and(reach)} reach 90%." in r.conclusions
    # every number in the words has its unit
    for s in r.conclusions:
        assert "GB/s (" in s or "%" in s, s
    # the delay of the FP4 sync (tau = 1) is said, and so is the H-step assumption
    assert any("S-DiLoCo FP4 (tau = 1 step)" in a and "not to change steps to target" in a
               for a in r.assumptions)
    assert any(a.startswith("Syncing every H steps is assumed not to change") for a in r.assumptions)


def test_markdown_shows_the_table_with_units(ref, reference_report):
    sc, r = ref
    md = need.markdown(Results(need=r))
    assert md.startswith("## What bandwidth each method needs")
    header = next(line for line in md.splitlines() if line.startswith("| variant"))
    assert "for 90%" in header and "utilisation at 12.5 GB/s" in header
    for vid, v in r.variants.items():
        row = next(line for line in md.splitlines() if line.startswith(f"| {v['short']} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[4:9] == [need.cell(r, vid, i) for i in range(5)]
        for c in cells[4:9]:
            assert (c.endswith(" Gbit/s)") or c.endswith(" Gbit/s), below the range")
                    or c.startswith("not reachable: ")), c
    # the reference report holds the section: in results.json, typed, and in results.md
    _, results, report_md, _ = reference_report
    assert Results.of(results).need == r
    assert md in report_md
