"""The report section "Sites and stragglers" (docs/model.md section 16): its numbers are the
sweeps' and the questions', its words are written from them, results.md and the page show it,
and a scenario with equal sites and no tail has no such section (its report is what it was)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import bandjax as bj
from bandjax import report
from bandjax.report import _json_ready
from bandjax.report.render import charts, collect
from bandjax.report.sections import Results, sites
from bandjax.scenario import Scenario
from bandjax.sitevalue import site_idle


def _typed(section):
    """The section as results.json holds it, read back."""
    return Results.of(json.loads(json.dumps(_json_ready(section.to_json())))).sites


@pytest.fixture(scope="module")
def lognormal():
    sc = bj.reference().replace(dcs=3.0, workers_per_dc=64.0, straggler="lognormal", straggler_s=0.1)
    return sc, _typed(sites.build(sc, {}))


def test_numbers_are_the_sweeps(lognormal):
    sc, r = lognormal
    full = sc.with_variants(sites.pack(sc))
    ds = bj.sweep(full, quantities=("compute_utilisation", "hot_spot"))
    for vid in full.ids:
        assert r.compute_utilisation[vid] == pytest.approx(
            float(ds["compute_utilisation"].sel(variant=vid)), rel=1e-9)
        straggle = float(ds["hot_spot"].sel(variant=vid, component="straggle"))
        assert r.waiting_for_worker[vid] == pytest.approx([straggle] * 3, rel=1e-9)
        assert r.waiting_for_site[vid] == [0.0, 0.0, 0.0]  # equal sites wait for none
    assert r.sites == ["dc0", "dc1", "dc2"] and r.workers == [64.0] * 3 and r.equal_sites
    # the curves: DiLoCo at H = 10 is the sweep's at H = 10 with DiLoCo's way of syncing
    k = r.H.index(10)
    at = bj.sweep(full.replace(sync_every_H=10.0).with_variants(
        [dataclasses.replace(full.variant("diloco"), sync_every=None)]),
        variant="diloco", quantities=("compute_utilisation",))
    assert r.utilisation_by_H["diloco"][k] == pytest.approx(float(at["compute_utilisation"]), rel=1e-9)
    # Streaming DiLoCo needs H >= its 16 fragments; data parallel syncs every step (flat)
    assert r.utilisation_by_H["streaming_diloco"][k] is None
    assert len(set(r.utilisation_by_H["dp_bf16"])) == 1
    assert r.utilisation_by_H["dp_bf16"][0] == pytest.approx(r.compute_utilisation["dp_bf16"], rel=1e-9)


def test_site_value_and_tolerated_tail_are_the_questions(lognormal):
    sc, r = lognormal
    full = sc.with_variants(sites.pack(sc))
    value = bj.site_value(full)
    tail = bj.tolerated_tail(full, 0.9).sel(utilisation=0.9)
    for vid in full.ids:
        assert r.site_value["throughput_tokens_per_s"][vid] == pytest.approx(
            float(value.throughput_tokens_per_s.sel(variant=vid)), rel=1e-9)
        assert r.site_value["throughput_added_tokens_per_s"][vid] == pytest.approx(
            list(value.throughput_added_tokens_per_s.sel(variant=vid).values), rel=1e-9)
        t = float(tail.tolerated_tail.sel(variant=vid))
        assert r.tolerated_tail[vid] == (None if np.isnan(t) else pytest.approx(t, rel=1e-9))
    assert r.tolerated_status["adamw"] == "not_reachable"
    assert r.tolerated_status["diloco"] == "reached" and r.largest_tail == 1.0


def test_markdown_and_page_show_the_typed_numbers(lognormal, monkeypatch):
    sc, r = lognormal
    res = Results().with_section(r)
    md = sites.markdown(res)
    assert md.startswith("## Sites and stragglers")
    # the words come first and are written from the numbers
    best = max(r.compute_utilisation, key=r.compute_utilisation.get)
    first = md.split("\n")[2]
    assert r.variants[best]["short"] in first and f"{100 * r.compute_utilisation[best]:.3g}%" in first
    row = next(line for line in md.splitlines() if line.startswith("| DiLoCo |"))
    assert f"{r.tolerated_tail['diloco']:.3g}" in row
    assert f"{100 * r.waiting_for_worker['diloco'][0]:.3g}%" in row
    # results.md of a report holds the section (the report's own path: build, then markdown)
    monkeypatch.setattr(report, "SECTIONS", (sites,))
    results = report.build(sc)
    assert "## Sites and stragglers" in report.markdown(results)
    assert results["sites"]["tolerated_tail"]["diloco"] == pytest.approx(r.tolerated_tail["diloco"], rel=1e-9)
    # the page draws it: its view, its tables and both charts
    views = collect(sc, res, sweeps=object(), sections=[sites])
    assert [v.key for v in views] == ["sites"]
    assert views[0].table["rows"][0][0] == "AdamW"
    assert [h for h, _ in sites.extra_tables(views[0])] == ["The sites", "What each site adds"]
    drawn = charts(views, sc, sections=[sites])
    assert set(drawn) == {"sites_idle", "sites_by_H"}
    assert views[0].missing == []  # both were drawn
    for _, chart, _ in drawn.values():
        assert chart.to_dict()["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    idle = drawn["sites_idle"][2]["idle"]
    assert {row["waiting_for"] for row in idle} == {"the slowest site", "the slowest worker"}


def test_no_tail_and_equal_sites_no_section():
    sc = bj.reference()
    assert not sites.applies(sc)
    assert not sites.applies(sc.replace(straggler="exponential", straggler_s=0.0))
    assert sites.markdown(Results()) == ""
    assert collect(sc, Results(), sweeps=object(), sections=[sites]) == []
    assert sites.applies(sc.replace(straggler="exponential", straggler_s=0.05))


def test_two_dcs_say_why_no_site_value():
    sc = bj.reference().replace(straggler="exponential", straggler_s=0.05)
    r = sites.build(sc, {})
    assert r.site_value is None and "3 DCs or more" in r.site_value_note
    assert r.site_value_note in r.conclusions
    assert "What each site adds (throughput" not in sites.markdown(Results().with_section(r))


@pytest.mark.skipif(not hasattr(Scenario, "with_sites"),
                    reason="sites that differ (Scenario.with_sites) are not in this tree yet")
def test_three_regions_that_differ():
    sc = bj.reference().replace(dcs=3.0, workers_per_dc=64.0).with_sites(
        names=["us", "eu", "asia"], workers=[64, 32, 16], gpu_compute_s=[1.0, 1.5, 2.2])
    assert sites.applies(sc)
    r = _typed(sites.build(sc, {}))
    assert r.sites == ["us", "eu", "asia"] and not r.equal_sites
    idle = site_idle(sc.with_variants(sites.pack(sc)))
    for vid in r.variants:
        assert r.waiting_for_site[vid] == pytest.approx(
            list(idle.waiting_for_site.sel(variant=vid).values), rel=1e-9)
        assert r.waiting_for_site[vid][2] == 0.0  # the slowest site waits for no site
        assert r.waiting_for_site[vid][0] > 0.0
    value = bj.site_value(sc.with_variants(sites.pack(sc)))
    assert r.site_value["throughput_added_tokens_per_s"]["diloco"] == pytest.approx(
        list(value.throughput_added_tokens_per_s.sel(variant="diloco").values), rel=1e-9)
    assert "us" in sites.markdown(Results().with_section(r))
