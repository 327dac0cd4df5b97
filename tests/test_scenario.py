"""Scenario files: round trip, and a clear error for every kind of bad input."""

import math
import re

import pytest

import bandjax
from bandjax import ScenarioError
from bandjax.units import parse


def write(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_round_trip_is_exact(tmp_path):
    sc = bandjax.reference()
    bandjax.save(sc, tmp_path / "ref.toml")
    assert bandjax.load(tmp_path / "ref.toml") == sc


def test_edited_file_changes_the_result(tmp_path):
    sc = bandjax.reference()
    bandjax.save(sc, tmp_path / "s.toml")
    text = (tmp_path / "s.toml").read_text().replace('wan = "12.5 GB/s"', 'wan = "400 Gb/s"')
    loaded = bandjax.load(write(tmp_path, text))
    assert loaded.wan_Bps == 50e9
    # AdamW step at 50 GB/s WAN: c + 1.5 G/50e9 + G/50e9 + d (docs/model.md s5), by hand
    G = 4 * 7_916_736
    expected = 0.4918e-3 + 1.5 * G / 50e9 + G / 50e9 + 0.0998e-3
    assert float(bandjax.step_s(loaded)[0]) == pytest.approx(expected, rel=1e-12)


def test_units_convert_exactly():
    assert parse("k", "0.0227 ms", "time") == 0.0227e-3
    assert parse("k", "100 Gb/s", "byte_rate") == 12.5e9
    assert parse("k", 3.5e9, "sample_rate") == 3.5e9
    assert parse("k", "10 pJ/bit", "energy_per_bit") == 10e-12


@pytest.mark.parametrize("text, words", [
    ('[links]\nwan = "12.5 GHz"\n', ["[links] wan", "12.5 GHz", "GB/s"]),
    ('[links]\nwann = "12.5 GB/s"\n', ["[links] wann", "not a known key", "wan"]),
    ('[linkz]\nwan = 1\n', ["[linkz]", "not a known section", "links"]),
    ('[links]\nwan = "-1 GB/s"\n', ["[links] wan", "must be > 0"]),
    ('[links]\nwan = 0\n', ["[links] wan", "must be > 0"]),
    ('[module]\noptics = "0 GS/s"\n', ["[module] optics", "must be > 0"]),
    ('[band]\nenob = 7\n', ["[band] enob", "7", "outside the steps table", "6, 8"]),
    ('[fixed_time]\nadamx = "1 ms"\n', ["[fixed_time] adamx", "not a variant", "adamw"]),
    ('[steps]\nadamx = 400\n', ["[steps] adamx", "not a variant", "band_gpu"]),
    ('[steps]\nadamw = -4\n', ["[steps] adamw", "-4", "never"]),
    ('[steps]\nband_switch = 4\n', ["band_switch has no steps of its own"]),
    ('[steps.band_pluggable]\n8 = "soon"\n', ["[steps] band_pluggable.8", "soon"]),
    ('[cluster]\nworkers_per_dc = 2.5\n', ["workers_per_dc", "2.5", "whole number"]),
    ('[links]\nwan = "fast"\n', ["[links] wan", "'fast'", "<number> <unit>"]),
    ('[links]\nwan = true\n', ["[links] wan", "boolean"]),
    ('[links\nwan = 1\n', ["not valid TOML"]),
])
def test_bad_input_names_key_value_and_what_is_allowed(tmp_path, text, words):
    with pytest.raises(ScenarioError) as e:
        bandjax.load(write(tmp_path, text))
    for w in words:
        assert w in str(e.value)


def test_missing_file():
    with pytest.raises(ScenarioError, match="does not exist"):
        bandjax.load("/nonexistent/scenario.toml")


def test_partial_file_keeps_reference_values(tmp_path):
    sc = bandjax.load(write(tmp_path, '[module]\nbudget = "10 GFLOP/s"\n'))
    assert sc.budget_FLOPs == 10e9
    assert sc.replace(budget_FLOPs=math.inf) == bandjax.reference()


def test_steps_table_from_file(tmp_path):
    sc = bandjax.load(write(tmp_path, '[band]\nenob = 6\n[steps.band_pluggable]\n8 = 1800\n6 = "never"\n7 = 2100\n'))
    assert sc.steps.lookup("band_pluggable", 7, "hypothesis") == 2100
    assert sc.steps.lookup("band_switch", 7, "hypothesis") == 2100
    assert sc.steps.lookup("band_switch", 7, "exact") == 2667
    assert math.isinf(sc.steps.lookup("band_pluggable", 6, "exact"))
    assert math.isnan(sc.steps.lookup("band_pluggable", 5, "exact"))


def test_unknown_variant_and_basis():
    with pytest.raises(ValueError, match="variant = 'adamx' is not known; allowed: adamw"):
        bandjax.variants.get("adamx")
    with pytest.raises(ValueError, match="basis = 'both' is not known; allowed: hypothesis, exact"):
        bandjax.reference().steps.lookup("adamw", 8, "both")


def test_cli_scenario_round_trip(tmp_path, capsys):
    from bandjax.cli import main

    assert main(["scenario", "--write", str(tmp_path / "s.toml")]) == 0
    assert bandjax.load(tmp_path / "s.toml") == bandjax.reference()
    (tmp_path / "bad.toml").write_text('[links]\nwan = "1 GHz"\n')
    assert main(["report", "--out", str(tmp_path / "o"), "--scenario", str(tmp_path / "bad.toml")]) == 2
    err = capsys.readouterr().err
    assert "[links] wan = '1 GHz'" in err and "GB/s" in err
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_file_names_a_model_preset_and_sizes_with_units(tmp_path):
    """``[model] model = "<preset>"`` sets params as ``gpu = "<preset>"`` sets the GPU; byte sizes
    take units (decimal and binary prefixes); both survive a save and load."""
    from bandjax.scenario import PRESETS, load, save

    p = tmp_path / "s.toml"
    p.write_text('[model]\nmodel = "llama3-8b"\n[shared_wan]\nmessage_bytes = "100 MB"\n'
                 'background_bytes = "1 MiB"\n')
    sc = load(p)
    assert sc.params == PRESETS["llama3-8b"]
    assert sc.wan_message_B == 100e6 and sc.background_B == 2.0 ** 20
    save(sc, p)
    again = load(p)
    assert (again.params, again.wan_message_B, again.background_B) == (sc.params, 100e6, 2.0 ** 20)


@pytest.mark.parametrize("text, words", [
    ('[model]\nmodel = "llama9"\n', "[model] model = 'llama9': expected a preset name; allowed: study"),
    ('[model]\nmodel = "llama3-8b"\nparams = 5\n', "give one"),
    ('[shared_wan]\nmessage_bytes = "100 Mb"\n', "unit 'Mb' is not a bytes unit; allowed: 'MB'"),
])
def test_a_bad_model_preset_or_size_unit_is_named(tmp_path, text, words):
    from bandjax.scenario import load
    from bandjax.units import ScenarioError

    p = tmp_path / "s.toml"
    p.write_text(text)
    with pytest.raises(ScenarioError, match=re.escape(words)):
        load(p)
