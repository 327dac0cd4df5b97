"""results.json against its JSON Schema; one pass of the model behind results.md and the page;
a seventh variant reaches every part of the report."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import jsonschema
import pytest

import bandjax as bj
from bandjax import report
from bandjax.report import explorer, passes
from bandjax.report.sections import cluster, common
from bandjax.units import significant

SCHEMA = json.loads(resources.files("bandjax.report").joinpath("results.schema.json").read_text())


def test_results_follow_the_schema(reference_report):
    _, results, _, _ = reference_report
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(results, SCHEMA)
    assert results["schema_version"] == report.SCHEMA_VERSION == SCHEMA["properties"]["schema_version"]["const"]


def test_schema_rejects_a_renamed_key(reference_report):
    _, results, _, _ = reference_report
    bad = dict(results)
    bad["time_to_target"] = bad.pop("time_to_target_s")
    with pytest.raises(jsonschema.ValidationError, match="time_to_target_s"):
        jsonschema.validate(bad, SCHEMA)


def test_the_report_is_one_pass(monkeypatch, reference_report):
    """Building the report and its page calls `sweep` once per field of the pass, no more: the
    calls made while the session's reference report was written (counted by tests/conftest.py),
    then those of its page."""
    from bandjax.report.sections import bandwidth

    folder, results, _, sweeps = reference_report
    calls = json.loads((folder.parent / "sweep_calls.json").read_text())
    real = bandwidth.sweep
    monkeypatch.setattr(bandwidth, "sweep", lambda *a, **k: calls["views"].append(sorted(k)) or real(*a, **k))
    explorer.page(bj.reference(), results, sweeps)
    # bandwidth (the point at the scenario's WAN read off it), model, H, stages, cluster: the
    # dataset fields of passes.Sweeps but the point
    assert len(calls["passes"]) == len(passes.Sweeps.__dataclass_fields__) - 4 == 5
    # the closed form at the engine's own load-0 bandwidths (the check that the engine equals
    # it), at most once per drawing (figures, page), and nothing else
    assert 1 <= len(calls["views"]) <= 2
    assert all(k == ["bandwidth", "basis", "quantities"] for k in calls["views"])


def test_markdown_and_page_agree(reference_report):
    """Every time to target the page's model table shows (3 significant digits, s) is the one
    results.md shows for the same preset, variant and basis."""
    folder, results, md, sw = reference_report
    sc = bj.reference()
    page = explorer.page(sc, results, sw)
    for preset, r in results["model_size"].items():
        for basis in bj.BASES:
            for vid, t in r["time_to_target_s"][basis].items():
                if t is None:
                    continue
                # results.md: 4 significant figures (reference: core.markdown)
                assert f"| {significant(t, 4)} |" in md
                shown = f"{t:.3g} s" if t < 1000 else f"{t:,.0f} s"
                assert shown in page, (preset, basis, vid, shown)
    # the headline is the same sentences on both
    import html

    from bandjax.report.sections import headline

    lines = headline.lines(results)
    assert lines
    for line in lines:
        assert line in md and html.escape(line) in page
    # so are the cluster's winners: results.md's table cell and the page's table cell
    cl = results["cluster"]
    short = {vid: v["short"] for vid, v in results["setup"]["variants"].items()}
    w = cl["winner"]["hypothesis"][-1][0]
    t = cl["time_to_target_s"]["hypothesis"][w][-1][0]
    assert f"{short[w]} ({t:.3g} s)" in md and html.escape(f"{short[w]} ({t:.3g} s)") in page


def test_headline_and_cluster_from_the_numbers(reference_report):
    _, r, md, _ = reference_report
    h = r["headline"]
    for basis in bj.BASES:
        times = {v: t for v, t in r["time_to_target_s"][basis].items() if t is not None}
        assert h["winner"][basis]["variant"] == min(times, key=times.get)
        for c in h["changes"][basis]:
            assert 0.1 <= c["GBps"] <= 1000.0
    assert md.index("**Headline.**") < md.index("## Setup")
    cl = r["cluster"]
    # K = 2 is the study's cluster: the same times as the core tables (rel 1e-12)
    for basis in bj.BASES:
        for vid, t in r["time_to_target_s"][basis].items():
            for j in range(len(cl["topologies"])):
                got = cl["time_to_target_s"][basis][vid][0][j]
                assert (got is None and t is None) or got == pytest.approx(t, rel=1e-12)
    assert "## Your cluster" in md and "GB/s" in md.split("## Your cluster")[1]


@pytest.mark.slow
def test_a_seventh_variant_reaches_every_part(tmp_path):
    seventh = replace(bj.variants.VARIANTS[0], id="adamw_fp16", label="AdamW, fp16 delta",
                      short="AdamW16", bytes_per_param=2.0, colour=6)
    sc = bj.reference().with_variant(seventh, steps=420)
    ctx: dict = {}
    results = report._json_ready(report.build(sc, ctx))
    assert "adamw_fp16" in results["step_ms"] and "adamw_fp16" in results["time_to_target_s"]["exact"]
    md = report.markdown(results)
    assert md.count("AdamW16 (adamw_fp16)") >= 4  # step time, time to target, energy, model size
    colours = common.variant_colors(sc.variants)
    assert colours["AdamW16"] == common.PALETTE[6] and len(set(colours.values())) == 7
    page = explorer.page(sc, results, ctx["sweeps"])
    assert "AdamW16: AdamW, fp16 delta" in page and common.PALETTE[6] in page
    from bandjax.report import render

    bw = render.collect(sc, results, ctx["sweeps"])[0]
    assert any(r["variant"] == "adamw_fp16" and r["t_s"] is not None for r in bw.data["curves"])
    assert '"variant": "adamw_fp16"' in page or '"variant":"adamw_fp16"' in page


def test_results_json_is_the_typed_sections_json(reference_report):
    """results.json read into the typed sections and written back is the same JSON: every key
    belongs to a section, and every section of the reference report is there (a section that
    applies only to some scenarios, failures' or sites', only where it applies)."""
    import sys

    from bandjax.report.sections import SECTION_TYPES, Results

    _, results, _, _ = reference_report
    typed = Results.of(results)
    assert typed.to_json() == results
    ref = bj.reference()

    def applies(t):
        module = sys.modules[t.__module__]
        return not hasattr(module, "applies") or module.applies(ref)

    expected = [t for t in SECTION_TYPES if applies(t)]
    assert len(expected) < len(SECTION_TYPES)  # the reference has no failures and equal sites
    assert [type(s) for s in typed.sections()] == expected
    assert typed.core.names()["band_switch"] == "E'"


@pytest.mark.parametrize("change, says", [
    (lambda r: r.__setitem__("time_to_target", r.pop("time_to_target_s")),
     "results: keys not known 'time_to_target'"),
    (lambda r: r.pop("time_to_target_s"), "results (Core section): missing 'time_to_target_s'"),
    (lambda r: r["headline"].pop("winner"), "results key 'headline' (Headline section): missing 'winner'"),
    (lambda r: r["uncertainty"].__setitem__("p_wins", []),
     "results key 'uncertainty' (Uncertainty section): not known 'p_wins'"),
])
def test_typed_sections_name_a_renamed_or_missing_key(reference_report, change, says):
    from bandjax.report.sections import Results

    bad = json.loads(json.dumps(reference_report[1]))
    change(bad)
    with pytest.raises(ValueError) as e:
        Results.of(bad)
    assert says in str(e.value)
