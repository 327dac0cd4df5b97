"""The report's figures: written whole as SVG and PNG, embedded in results.md, drawn from the
results of the sections before them."""

from __future__ import annotations

import json
import os
import re

import pytest

import bandjax as bj
import bandjax.report as report
from bandjax.report import figure_files, render
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
                   "shared_wan_trace", "model", "sync_h", "energy", "cluster", "need"]
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
    # break-evens (3 parts), shared WAN, load-0 dots, your cluster, how sure, what bandwidth each
    # method needs
    assert md.count("*Not available yet:*") == 8
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


def _small_spec(title: str) -> dict:
    """A Vega-Lite spec with text, a legend and marks: what a figure's PNG must keep."""
    return {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "title": title,
            "data": {"values": [{"x": 1, "y": 2, "v": "A"}, {"x": 2, "y": 5, "v": "B"}]},
            "mark": {"type": "line", "point": True},
            "encoding": {"x": {"field": "x", "type": "quantitative", "title": "x (s)"},
                         "y": {"field": "y", "type": "quantitative", "title": "y (GB/s)"},
                         "color": {"field": "v", "type": "nominal"}}}


def test_the_png_is_what_vl_convert_draws_from_the_spec():
    """render rasterises its SVG for the PNG: the same bytes as vl-convert's own PNG of the spec."""
    import vl_convert as vlc

    spec = _small_spec("a title")
    svg, png = render.render(spec)
    assert svg == vlc.vegalite_to_svg(spec, vl_version=common.vl_version()).encode("utf-8")
    assert png == vlc.vegalite_to_png(spec, vl_version=common.vl_version(),
                                      scale=render.PNG_SCALE)


def test_a_figure_drawn_before_is_read_back_from_the_cache(tmp_path, monkeypatch):
    import vl_convert as vlc

    spec = _small_spec("kept")
    drawn = render.render(spec, tmp_path)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".png", ".svg"]

    def no_drawing(*args, **kwargs):
        raise AssertionError("drawn again")

    monkeypatch.setattr(vlc, "vegalite_to_svg", no_drawing)
    assert render.render(spec, tmp_path) == drawn  # the same bytes, not drawn again
    with pytest.raises(AssertionError, match="drawn again"):  # another spec is drawn
        render.render(_small_spec("another title"), tmp_path)
    # a cache written by another vl-convert is not read
    monkeypatch.setattr(vlc, "__version__", "0.0.0")
    with pytest.raises(AssertionError, match="drawn again"):
        render.render(spec, tmp_path)


def test_the_cache_keeps_the_most_recently_used_figures(tmp_path, monkeypatch):
    import vl_convert as vlc

    monkeypatch.setattr(render, "CACHE_KEEP", 2)
    specs = [_small_spec(f"figure {i}") for i in range(3)]
    keys = [render._cache_key(s, vlc.__version__) for s in specs]
    for i in (0, 1):  # figure 0 drawn long ago, figure 1 later
        render.render(specs[i], tmp_path)
        for suffix in (".svg", ".png"):
            os.utime(tmp_path / f"{keys[i]}{suffix}", (1e9 + i, 1e9 + i))
    render.render(specs[0], tmp_path)  # read back: now the most recently used
    render.render(specs[2], tmp_path)  # a third figure: the least recently used, 1, goes
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{k}{suffix}" for k in (keys[0], keys[2]) for suffix in (".svg", ".png"))


def test_the_figure_cache_folder_follows_bandjax_cache_settings(tmp_path):
    assert render.figure_cache_dir({"BANDJAX_CACHE_DIR": str(tmp_path)}) == tmp_path / "figures"
    assert render.figure_cache_dir({"BANDJAX_CACHE_DIR": str(tmp_path),
                                    "BANDJAX_NO_CACHE": "1"}) is None
    assert render.figure_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "bandjax" / "figures")


def test_the_drawer_draws_in_a_helper_process_what_render_draws(tmp_path):
    """The figures are drawn in a helper process (vl-convert holds the interpreter lock): the
    same bytes as render in this process, the same error for a spec vl-convert rejects."""
    specs = [_small_spec("one"), _small_spec("two")]
    bad = {"mark": "no such mark", "data": {"values": []}}
    with render.Drawer(tmp_path) as drawer:
        handles = [drawer.submit(s) for s in (*specs, bad)]
        [helper] = drawer._procs
        assert helper.poll() is None  # started at the first figure not in the cache
        assert [h.result() for h in handles[:2]] == [render.render(s) for s in specs]
        with pytest.raises(ValueError) as drawn_there:
            handles[2].result()
    assert helper.returncode == 0  # ended with the drawer
    with pytest.raises(ValueError) as drawn_here:
        render.render(bad)
    assert str(drawn_there.value) == str(drawn_here.value)
    assert "conversion failed" in str(drawn_there.value)
    # what the helper drew is in the cache: a second drawer reads it and starts no helper
    with render.Drawer(tmp_path) as drawer:
        assert [drawer.submit(s).result() for s in specs] == [render.render(s) for s in specs]
        assert drawer._procs is None


def test_figures_are_drawn_here_when_the_helper_ends_early():
    spec, later = _small_spec("before"), _small_spec("after")
    with render.Drawer() as drawer:
        assert drawer.submit(spec).result() == render.render(spec)
        [helper] = drawer._procs
        helper.kill()
        helper.wait()
        assert drawer.submit(later).result() == render.render(later)


def test_a_helper_started_ahead_and_given_nothing_is_stopped_at_once(tmp_path):
    import signal

    spec = _small_spec("cached")
    render.render(spec, tmp_path)
    with render.Drawer(tmp_path, start=True) as drawer:
        [helper] = drawer._procs
        assert helper.poll() is None
        assert drawer.submit(spec).result() == render.render(spec)  # read from the cache
    # stopped, not waited for: it may still be starting vl-convert
    assert helper.returncode == -signal.SIGKILL


def test_two_helpers_draw_what_render_draws_each_taking_the_next_figure_when_free(tmp_path):
    """With two helpers each figure goes to whichever is free (a long figure holds up no other):
    the same bytes as render here, each figure's own, whatever order they finish in; a figure
    the one helper left holds is drawn by the other or here."""
    specs = [_small_spec(f"figure {i}") for i in range(6)]
    with render.Drawer(None, helpers=2) as drawer:
        handles = [drawer.submit(s) for s in specs]
        assert len(drawer._procs) == 2
        assert [h.result() for h in handles] == [render.render(s) for s in specs]
        assert len(drawer._given) == 2  # both drew
        first, second = drawer._procs
        first.kill()
        first.wait()
        more = [_small_spec(f"after {i}") for i in range(3)]
        assert [drawer.submit(s).result() for s in more] == [render.render(s) for s in more]
        second.kill()
        second.wait()
        last = _small_spec("no helper left")
        assert drawer.submit(last).result() == render.render(last)  # drawn here


def test_drawer_refuses_a_bad_helper_count_or_niceness():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="helpers"):
            render.Drawer(helpers=bad)
    for bad in (-1, 20, 2.0, True):
        with pytest.raises(ValueError, match="nice"):
            render.Drawer(nice=bad)
