"""Every valid scenario gets its report: the shared-WAN section sizes its engine runs to a budget
before it starts (falling back to the queueing approximation where a load cannot fit), a section
can be left out (``--sections`` / ``--skip``), and a section that cannot be computed is explained
in its place while the rest is written."""

from __future__ import annotations

import json
import math
import re
import types
from importlib import resources

import jsonschema
import numpy as np
import pytest

import bandjax
from bandjax import cli
from bandjax.report import _json_ready
from bandjax.report.sections import shared_wan
from bandjax.report.sections.common import Results
from bandjax.scenario import load
from test_hostile import bounded  # a hang guard, not a speed check

SCHEMA = json.loads(resources.files("bandjax.report").joinpath("results.schema.json").read_text())

# The user's cluster of docs/results.md ("Any scenario"): 4 DCs on a ring, H100s at 40%, a
# Llama-3-8B-sized model, 40 ms one-way latency, 100 Gb/s a link.
DC4 = """[model]
params = 8030261248
gpu = "h100"
utilisation = 0.4

[cluster]
dcs = 4
topology = "ring"

[links]
wan = "100 Gb/s"
latency = "40 ms"
"""

REPORT_HANG_S = 1800
"""A hang guard, not a speed check (speed is the benchmarks'): a report not ended by then hangs."""


def _dc4() -> bandjax.Scenario:
    from bandjax.scenario import from_toml_dict
    import tomllib

    return from_toml_dict(tomllib.loads(DC4))


def test_sizing_fits_the_budget_and_says_what_it_costs():
    from events.engine import estimate_events
    from events.plan import build

    sc = _dc4()
    ids = list(sc.ids)
    sized = shared_wan.size_runs(sc, ids, [0.0, 0.5, 0.9], 8, 400, 5.0, 1)
    # the sync's messages: at most MAX_MESSAGES a link a sync, so the biggest sync / 1000
    biggest = max(build(sc, v).wan_B for v in ids)
    assert sized["message_B"] == pytest.approx(biggest / shared_wan.MAX_MESSAGES, rel=1e-12)
    assert sized["scenario_message_B"] == 1e6
    # the chosen runs, priced again from the engine's own estimate, fit the budget
    plans = [build(sc.replace(wan_message_B=sized["message_B"]), v) for v in ids]
    cost = sized["seeds"] * sum(shared_wan._cost_s(estimate_events(p, x, sized["steps"], math.inf))
                                for p in plans for x in sized["loads"])
    assert 0 < cost <= 5.0 * (1 + 1e-12)
    assert cost == pytest.approx(sized["estimated_s"], rel=1e-12)
    assert (sized["steps"], sized["seeds"]) < (400, 8)
    assert sorted(sized["loads"] + sized["approx_loads"]) == [0.0, 0.5, 0.9]
    text = " ".join(sized["notes"])
    assert "48.18 MB instead of the scenario's 1 MB" in text and "to fit the budget of 5 s" in text
    # a budget that holds the wanted runs changes nothing and says nothing
    ref = bandjax.reference()
    whole = shared_wan.size_runs(ref, list(ref.ids), [0.0, 0.5, 0.9], 8, 400, 60.0, 2)
    assert (whole["steps"], whole["seeds"], whole["message_B"], whole["notes"]) == (400, 8, 1e6, [])
    assert whole["approx_loads"] == []
    # a run is whole rounds of H, at least one (fewer steps than H would never sync)
    rounds = shared_wan.size_runs(ref.replace(sync_every_H=150.0), list(ref.ids), [0.0, 0.5],
                                  8, 400, 60.0, 2)
    assert rounds["steps"] == 300 and "Runs of whole rounds of H = 150 steps" in rounds["notes"][0]


def test_a_load_that_cannot_fit_is_the_approximations_alone():
    sc = _dc4().replace(dcs=8.0, topology=1.0, wan_Bps=1000e9)  # 56 links of 1,000 GB/s
    r = shared_wan.build(sc, {"shared_wan": {"scheduler": "inline", "progress": False,
                                             "budget_s": 0.5, "seeds": 2, "steps": 20}})
    d = _json_ready(r.to_json())["shared_wan"]
    assert d["sizing"]["approx_loads"], d["sizing"]
    closed = np.asarray(bandjax.step_s(sc)) * 1e3
    for j, x in enumerate(d["loads"]):
        for i, vid in enumerate(sc.ids):
            a = d["approx_step_ms"][vid][j]
            assert a is not None and a > 0
            if x == 0:  # bandjax.queueing: at load 0 the approximation is the closed form
                assert a == pytest.approx(closed[i], rel=1e-9)
            if x in d["sizing"]["approx_loads"]:
                assert d["step_ms"][vid][j] is None and d["ci95_ms"][vid][j] == [None, None]
    md = shared_wan.markdown({"shared_wan": d})
    assert "n/a (approximation only)" in md and "the queueing approximation stands alone" in md
    view = shared_wan.shared_wan_view(sc, Results.of({"shared_wan": d}))
    assert any("The engine's runs, sized to its budget: " in a for a in view.assumptions)
    assert any("approximation" in c for row in view.table["rows"] for c in row[1:])



def test_a_load_that_cannot_fit_with_links_that_differ_is_not_shown():
    # 56 links of 1,000 GB/s, one pair at 500 GB/s: the approximation (identical links) is left
    # out, so a load over the engine's budget has neither engine nor approximation values
    B = np.full((8, 8), 1000e9)
    B[0, 1] = B[1, 0] = 500e9
    L = np.full((8, 8), float(_dc4().wan_latency_s))
    sc = _dc4().replace(topology=1.0).with_links(bandwidth=B, latency=L)
    r = shared_wan.build(sc, {"shared_wan": {"scheduler": "inline", "progress": False,
                                             "budget_s": 0.5, "seeds": 2, "steps": 20}})
    d = _json_ready(r.to_json())["shared_wan"]
    assert d["approx_left_out"] == shared_wan.LINKS_DIFFER and d["approx_step_ms"] is None
    assert d["approx_accuracy"] is None and d["approx_max_rel_err"] is None
    sizing = d["sizing"]
    assert sizing["approx_loads"] == [] and len(sizing["loads"]) < len(d["loads"]), sizing
    jsonschema.validate(d, SCHEMA["properties"]["shared_wan"])
    for j, x in enumerate(d["loads"]):
        for vid in sc.ids:
            assert (d["step_ms"][vid][j] is None) == (x not in sizing["loads"])
    text = " ".join(sizing["notes"])
    assert "approximation assumes identical links, so this load is not shown" in text
    assert "moves the mean step by" not in text  # that note is the approximation's
    md = shared_wan.markdown({"shared_wan": d})
    assert "no approximation: the links differ" in md and "approx." not in md
    assert shared_wan.LINKS_DIFFER in md
    view = shared_wan.shared_wan_view(sc, Results.of({"shared_wan": d}))
    assert shared_wan.LINKS_DIFFER in view.assumptions
    assert any("the links differ" in c for row in view.table["rows"] for c in row[1:])
    shared_wan.charts(view, sc)  # the chart takes a load with no values

def _quick_sections(monkeypatch):
    import bandjax.report as report
    from bandjax.report import figure_files

    def section(key, build):
        m = types.ModuleType(f"quick_{key}")
        m.KEY = key
        m.build = build
        m.markdown = lambda results, key=key: f"## {key}\n\nbuilt"
        return m

    def broken(sc, ctx):
        raise ZeroDivisionError("float division by zero")

    mods = (section("one", lambda sc, ctx: {}), section("two", broken),
            section("three", lambda sc, ctx: {}))
    monkeypatch.setattr(report, "SECTIONS", mods)
    return report


def test_a_section_that_fails_or_is_left_out_is_explained_in_its_place(monkeypatch):
    report = _quick_sections(monkeypatch)
    results = report.build(bandjax.reference(), {"skip": ["three"]})
    assert results["explained"] == {
        "two": {"status": "failed", "why": "Could not be computed for this scenario: "
                                           "ZeroDivisionError: float division by zero"},
        "three": {"status": "skipped", "why": "Not computed: left out by --skip three."}}
    md = report.markdown(results)
    assert "## one\n\nbuilt" in md and "## two\n\nCould not be computed" in md
    assert "## three\n\nNot computed: left out by --skip three." in md
    only = report.build(bandjax.reference(), {"only": ["two"]})
    assert only["explained"]["one"]["why"] == "Not computed: not among --sections two."
    # the explanations go through results.json and back
    assert Results.of(json.loads(json.dumps(results))).explained == results["explained"]


def test_schema_takes_an_explained_section_and_the_page_says_it(reference_report):
    from bandjax.report import render

    _, results, _, sweeps = reference_report
    bad = {k: v for k, v in results.items() if k not in ("cluster", "shared_wan")}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    why = "Not computed: left out by --skip shared_wan."
    bad["explained"] = {"cluster": {"status": "skipped", "why": "Not computed: left out by "
                                                                "--skip cluster."},
                        "shared_wan": {"status": "skipped", "why": why}}
    jsonschema.validate(bad, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**bad, "explained": {"cluster": {"status": "lost", "why": "x"}}},
                            SCHEMA)
    views = {v.key: v for v in render.collect(bandjax.reference(), bad, sweeps)}
    assert views["shared_wan"].missing[0] == why
    # the reference report's own sizing: the wanted runs, nothing changed
    sizing = results["shared_wan"]["sizing"]
    assert (sizing["steps"], sizing["seeds"]) == (results["shared_wan"]["steps"],
                                                  results["shared_wan"]["seeds"])
    assert sizing["approx_loads"] == [] and sizing["message_B"] == 1e6


@pytest.mark.parametrize("argv, says", [
    (["report", "--skip", "nope"], "--skip 'nope': not a report section; allowed: core, "),
    (["report", "--sections", "core", "Headline"], "--sections 'Headline': not a report section"),
    (["report", "--engine-budget-s", "-1"], "--engine-budget-s -1: must be a number of seconds"),
    (["report", "--engine-budget-s", "nan"], "--engine-budget-s nan: must be a number of seconds"),
    (["explore", "--results", "r.json", "--skip", "cluster"], "--results reuses a report's"),
])
def test_section_options_refused_in_one_line(argv, says, tmp_path, capsys):
    assert cli.main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_the_options_name_the_sections_and_the_default_budget():
    import bandjax.report as report
    from bandjax.cli import report as cli_report

    assert cli_report.ENGINE_BUDGET_S == shared_wan.BUDGET_S
    p = cli.build_parser()
    sub = next(a for a in p._actions if a.dest == "command")
    helptext = next(a.help for a in sub.choices["report"]._actions if a.dest == "sections")
    assert f"(keys: {' '.join(report.section_keys())})" in helptext


def _check_report(out, sc) -> dict:
    """results.json of a report folder: valid, every section that applies to the scenario ``sc``
    present or explained (failures' and sites' sections apply only to some scenarios)."""
    import bandjax.report as report
    from bandjax.report import sections

    results = json.loads((out / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    explained = results.get("explained", {})
    typed = Results.of(results)
    applies = {m.KEY: not hasattr(m, "applies") or m.applies(sc) for m in sections.SECTIONS}
    for key in report.section_keys():
        if applies.get(key, True):
            assert getattr(typed, key) is not None or key in explained, key
        else:
            assert getattr(typed, key) is None, key
    md = (out / "results.md").read_text()
    assert not re.search(r"\bnan\b", md, re.IGNORECASE), "a NaN in results.md"
    for e in explained.values():
        assert e["why"] in md
    return results


@pytest.mark.slow
def test_dc4_report_and_page(tmp_path, capsys):
    """The user's 4-DC cluster (DC4): `bandjax report` and `bandjax explore` end with exit 0,
    every section present or explained; the engine's runs sized to a 10 s budget."""
    path = tmp_path / "dc4.toml"
    path.write_text(DC4)
    with bounded(REPORT_HANG_S):
        code = cli.main(["report", "--scenario", str(path), "--out", str(tmp_path / "rep"),
                         "--quiet", "--engine-budget-s", "10"])
    assert code == 0, capsys.readouterr().err
    results = _check_report(tmp_path / "rep", load(path))
    sw = results["shared_wan"]
    assert sw["sizing"]["message_B"] == pytest.approx(48181567.488, rel=1e-9)  # 48.18 GB / 1000
    assert sw["load0_max_rel_err"] < 1e-9  # docs/model.md section 13: load 0 is the closed form
    for vid, means in sw["mean_step_ms"].items():
        for j, x in enumerate(sw["loads"]):
            if means[j] is not None and x > 0:  # other jobs' traffic only slows the step
                assert means[j] >= sw["mean_step_ms"][vid][0] * (1 - 1e-9)
    md = (tmp_path / "rep" / "results.md").read_text()
    assert "The engine's runs, sized to its budget: " in md
    with bounded(REPORT_HANG_S):
        code = cli.main(["explore", "--scenario", str(path), "--out", str(tmp_path / "page"),
                         "--skip", "uncertainty", "--engine-budget-s", "5"])
    assert code == 0
    page = (tmp_path / "page" / "explorer.html").read_text()
    assert "Not computed: left out by --skip uncertainty." in page


# ---------------------------------------------------------------------------- random scenarios


from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _zero_or(most: float):
    """0, or a value up to ``most`` no smaller than a field's non-zero values may be
    (bandjax.scenario.MAGNITUDES: 1e-300 s is refused, not a report's input)."""
    from bandjax.scenario import MAGNITUDES

    return st.one_of(st.just(0.0), st.floats(MAGNITUDES[0], most))


@st.composite
def scenarios(draw):
    from dataclasses import replace

    sc = bandjax.reference()
    gpu = draw(st.sampled_from(["study", *bandjax.GPUS]))
    if gpu != "study":
        sc = sc.with_gpu(gpu, utilisation=draw(st.floats(0.05, 1.0)))
    H = draw(st.integers(1, 1000))
    sc = sc.replace(dcs=float(draw(st.integers(2, 8))),
                    topology=float(draw(st.sampled_from([0, 1]))),
                    params=float(round(10 ** draw(st.floats(6, 12)))),
                    wan_latency_s=draw(_zero_or(0.2)),
                    wan_Bps=10 ** draw(st.floats(-1, 3)) * 1e9,
                    sync_every_H=float(H))
    mine = replace(bandjax.variants.VARIANTS[0], id="mine", label="my AdamW, fp16 delta",
                   short="Mine", bytes_per_param=2.0, colour=6)
    return sc.with_variant(mine, d_s=draw(_zero_or(1e-3)), steps=draw(st.integers(50, 5000)))


@pytest.mark.slow
# no shrinking: each example is a whole report (about a minute), and a failing one is printed
@settings(max_examples=4, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(sc=scenarios())
def test_any_valid_scenario_gets_its_report(sc, tmp_path_factory):
    """`bandjax report` on random valid scenarios (K 2-8, ring or mesh, any GPU preset, 1e6-1e12
    parameters, 0-200 ms, 0.1-1,000 GB/s, H 1-1000, a user's variant): exit 0 (not hanging:
    REPORT_HANG_S), a results.json the schema takes, every section present or explained."""
    from bandjax.scenario import save

    tmp = tmp_path_factory.mktemp("any")
    save(sc, tmp / "sc.toml")
    with bounded(REPORT_HANG_S):
        code = cli.main(["report", "--scenario", str(tmp / "sc.toml"), "--out", str(tmp / "rep"),
                         "--quiet", "--engine-budget-s", "10"])
    assert code == 0
    results = _check_report(tmp / "rep", sc)
    assert "mine" in results["step_ms"]
    # every section is computed: none is explained as not computable
    assert [k for k, e in results.get("explained", {}).items() if e["status"] == "failed"] == []
