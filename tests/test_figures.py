"""The report's figures: written whole as SVG and PNG, embedded in results.md, drawn from the
results of the sections before them."""

from __future__ import annotations

import json
import re

import pytest

import bandjax as bj
import bandjax.report as report
from bandjax.report import figure_files
from bandjax.report.sections import common

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def written(reference_report):
    """The session's reference report (tests/conftest.py): its folder and the results.md path."""
    out = reference_report[0]
    return out, {"md": out / "results.md"}


def test_figures_are_written_after_every_section():
    assert report._current_sections()[-1] is figure_files


def test_figures_written_whole(written):
    out, _ = written
    results = json.loads((out / "results.json").read_text())
    ids = [e["id"] for e in results["figures"]]
    assert ids == ["bandwidth", "stages", "breakeven", "shared_wan_steps",
                   "shared_wan_trace", "model", "sync_h", "energy", "cluster"]
    for e in results["figures"]:
        svg = (out / e["svg"]).read_text()
        png = (out / e["png"]).read_bytes()
        assert svg.lstrip().startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert png[:8] == PNG_MAGIC and len(png) > 20_000
    assert not list((out / "figures").glob(".*.part"))


def test_figures_carry_axis_titles_with_units(written):
    out, _ = written
    svg = (out / "figures" / "bandwidth.svg").read_text()
    assert "WAN bandwidth per direction (GB/s, log)" in svg and "time to target (s, log)" in svg
    assert "hypothesis basis" in svg and "exact basis" in svg
    stages = (out / "figures" / "stages.svg").read_text()
    assert "140.0 GFLOP/s:" in stages and "module compute budget (GFLOP/s, log)" in stages
    cluster = (out / "figures" / "cluster.svg").read_text()
    for words in ("data centres K", "time to target (s, log)",
                  "break-even WAN bandwidth per link (GB/s, log)", "ring: time to target against K",
                  "mesh: break-evens against K", "fastest to target at this K", "hypothesis basis"):
        assert words in cluster, words
    # the break-evens' colour legend has its own title, not merged with the times' "variant"
    assert ">second variant<" in cluster and ">first variant<" in cluster
    assert "variant, second variant" not in cluster


def test_markdown_embeds_every_figure(written):
    out, paths = written
    md = paths["md"].read_text()
    results = json.loads((out / "results.json").read_text())
    for e in results["figures"]:
        assert f"]({e['svg']})" in md
    assert "## Figures" in md
    assert "Not available yet" not in md  # the reference report has every section's data
    assert re.search(r"compute binds below 140\.0 GFLOP/s", md)


def test_without_an_output_folder_there_are_no_figures():
    assert figure_files.build(bj.reference(), {}).to_json() == {"figures": []}
    assert figure_files.markdown({"figures": []}) == ""


def test_missing_results_are_named_in_the_markdown(tmp_path, reference_report):
    ctx = {"out": tmp_path, "sweeps": reference_report[3]}  # no section built before
    res = report._json_ready(figure_files.build(bj.reference(), ctx).to_json())
    md = figure_files.markdown(res)
    # break-evens (3 parts), shared WAN, load-0 dots, your cluster, how sure
    assert md.count("*Not available yet:*") == 7
    assert "results key cluster" in md and "results key uncertainty" in md
    ids = [e["id"] for e in res["figures"]]
    assert "shared_wan_trace" not in ids and "cluster" not in ids


def test_variant_colours_follow_the_registry():
    """A variant added to the scenario gets its own colour (and legend entry), never another's,
    even when its ``colour`` field repeats an earlier variant's."""
    from dataclasses import replace


    seventh = replace(bj.variants.VARIANTS[0], id="seventh", label="a seventh way", short="G")
    sc = bj.reference().with_variant(seventh, steps=420)
    colors = common.variant_colors(sc.variants)
    assert list(colors) == [v.short for v in sc.variants]
    assert len(set(colors.values())) == len(colors) == 7
    assert colors["AdamW"] == common.PALETTE[0]  # the first keeps its colour
    with common.registry(sc):
        assert "a seventh way" in common._label_expr()
    assert "a seventh way" not in common._label_expr()  # outside, the study's six


def test_names_cover_every_scenario_field():
    """names.py names every field of the scenario, with the unit the scenario files use."""
    from bandjax import names
    from bandjax.scenario import FIELDS

    assert set(FIELDS) <= set(names.NAMES)
    assert names.label("optics_Sps") == "optics sample rate (GS/s)"
    # 7e9 S/s is 7 GS/s (docs/model.md section 2); scale from SI exact to 1e-12
    assert names.value("optics_Sps", 7e9) == "7 GS/s"
    assert names.NAMES["wan_latency_s"].scale == pytest.approx(1e3, rel=1e-12)  # s -> ms
    assert names.label("fixed_s.band_switch") == "fixed time d of E' (ms)"
    assert all(n.name and "_" not in n.name for n in names.NAMES.values())
