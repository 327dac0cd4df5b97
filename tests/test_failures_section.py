"""The report section "When things fail" (docs/model.md section 17): its numbers are the sweep's,
its words are written from them, results.md and the page show them, and a scenario where nothing
fails has no such section (its report is what it was)."""

from __future__ import annotations

import json

import pytest

import bandjax as bj
from bandjax.report import _json_ready
from bandjax.report.render import collect
from bandjax.report.sections import Results, failures
from bandjax.scenario import FAILURE_RATES


def _typed(section):
    """The section as results.json holds it, read back."""
    return Results.of(json.loads(json.dumps(_json_ready(section.to_json())))).failures


@pytest.fixture(scope="module")
def failing():
    sc = bj.reference().replace(dcs=4.0, workers_per_dc=512.0,
                                failure_rate_per_hour=FAILURE_RATES["llama3"])
    return sc, _typed(failures.build(sc, {}))


def test_numbers_are_the_sweeps(failing):
    sc, r = failing
    full = sc.with_variants(failures.pack(sc))
    ds = bj.sweep(full, quantities=("ettr", "goodput", "compute_utilisation", "mtbf_s"))
    for vid in full.ids:
        assert r.goodput[vid] == pytest.approx(float(ds["goodput"].sel(variant=vid)), rel=1e-9)
        assert r.ettr[vid] == pytest.approx(float(ds["ettr"].sel(variant=vid)), rel=1e-9)
    assert r.mtbf_h == pytest.approx(float(ds["mtbf_s"]) / 3600, rel=1e-9)
    assert r.gpus_at_scenario == 2048
    # the curve: goodput at each size is the sweep's at that many workers per DC
    k = r.gpus.index(4096)
    at = bj.sweep(full, workers_per_dc=1024.0, variant="diloco", quantities=("goodput",))
    assert r.goodput_by_size["diloco"][k] == pytest.approx(float(at["goodput"]), rel=1e-6)
    assert r.variants["adamw"]["rule"] == "restart" and r.variants["diloco"]["rule"] == "replica"


def test_crossover_is_where_rounds_overtake():
    variants = {"a": {"rule": "restart"}, "b": {"rule": "replica"}}
    gpus = [8, 64, 512]
    assert failures.crossover(variants, gpus, {"a": [0.9, 0.8, 0.5], "b": [0.7, 0.79, 0.6]}) == 512
    assert failures.crossover(variants, gpus, {"a": [0.6, 0.6, 0.6], "b": [0.7, 0.8, 0.9]}) is None


def test_markdown_and_page_show_the_typed_numbers(failing):
    sc, r = failing
    res = Results().with_section(r)
    md = failures.markdown(res)
    assert md.startswith("## When things fail")
    row = next(line for line in md.splitlines() if line.startswith("| DiLoCo |"))
    assert f"{100 * r.goodput['diloco']:.3g}%" in row and "replica" in row
    assert "first order" in md and "section 17" in md
    view = failures.view(sc, res, None, {})
    assert view.table["rows"][0][0] == "AdamW"
    assert any("fails every" in s for s in view.conclusion)
    chart = failures.charts(view, sc)
    assert set(chart) == {"failures"}


def test_no_failures_no_section():
    sc = bj.reference()
    assert not failures.applies(sc)
    assert failures.markdown(Results()) == ""
    # the page draws no failures section for it (its view is not made)
    # (the section reads no sweep: a stand-in serves, the other sections are not asked for)
    assert collect(sc, Results(), sweeps=object(), sections=[failures]) == []
    failing = sc.replace(failure_rate_per_hour=1e-5)
    assert [v.key for v in collect(failing, Results(), sweeps=object(), sections=[failures])] == ["failures"]
