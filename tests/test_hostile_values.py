"""Hostile values through every door (scenario files, Scenario.replace, with_variant, Variant,
sweep arguments, measurement files, results.json read back, the command line): each is refused
with one clear error naming the parameter and the value as typed, or, for the valid inputs that
used to be refused, accepted. Sizes are refused before work, in well under a second."""

from __future__ import annotations

import json
import math
import socket
import time

import numpy as np
import pytest
import tomli_w

import bandjax as bj
from bandjax import cli
from bandjax.scenario import to_toml_dict

SC = bj.reference()
MINE = dict(payload="dense", collective="ring_allreduce")


def refused(fn, *names, within_s=None):
    """fn() raises ValueError whose message holds each of ``names`` (the parameter, the value)."""
    t = time.perf_counter()
    with pytest.raises(ValueError) as e:
        fn()
    took = time.perf_counter() - t
    for n in names:
        assert n in str(e.value), (n, str(e.value))
    if within_s is not None:
        assert took < within_s, (took, str(e.value))
    return str(e.value)


def cli_refused(argv, capsys, *names):
    rc = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (rc, err)
    for n in names:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def scenario_file(tmp_path, data: dict):
    text = tomli_w.dumps({**to_toml_dict(SC), **data}) if "raw" not in data else data["raw"]
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------ scenario files

FILE_CASES = [  # (what the file changes, names the error must hold)
    ({"steps": {"target_loss": math.nan}}, ["target_loss", "nan"]),
    ({"steps": {"target_loss": -1}}, ["target_loss", "-1"]),
    ({"steps": {"target_loss": math.inf}}, ["target_loss", "inf"]),
    ({"steps": {"adamw": math.inf}}, ["adamw", "inf"]),
    ({"variants": {"mine": {**MINE, "bytes_per_param": math.inf}}}, ["bytes_per_param", "inf"]),
    ({"variants": {"mine": {**MINE, "module": "yes"}}}, ["module", "'yes'"]),
    ({"variants": {"mine": {**MINE, "label": 5}}}, ["label", "5"]),
    ({"variants": {"mine": {**MINE, "short": 5}}}, ["short", "5"]),
    ({"variants": {"mine": {**MINE, "short": ""}}}, ["short", "''"]),
    ({"variants": {"mine": {**MINE, "short": "AdamW"}}}, ["short", "'AdamW'"]),
    ({"variants": {"mine": {**MINE, "steps": "rule", "rule": {"hypothesis": 5, "exact": 5}}}},
     ["rule", "5"]),
    ({"variants": {"mine": {**MINE, "colour": math.inf}}}, ["colour", "inf"]),
    ({"variants": {"mine": {**MINE, "colour": 1.5}}}, ["colour", "1.5"]),
    ({"model": {**to_toml_dict(SC)["model"], "gpu_compute": "0 ms"}}, ["gpu_compute", "0"]),
    ({"model": {**to_toml_dict(SC)["model"], "params": 1e308, "gpu_compute": None}}, ["params", "1e+308"]),
    ({"module": {**to_toml_dict(SC)["module"], "budget_low": "200 GFLOP/s"}}, ["budget_low", "200"]),
    ({"raw": "x = " + "[" * 50_000 + "]" * 50_000 + "\n"}, ["scenario file", "nested"]),
]


@pytest.mark.parametrize("change,names", FILE_CASES, ids=[str(i) for i in range(len(FILE_CASES))])
def test_scenario_file_values(tmp_path, capsys, change, names):
    if "model" in change:
        change["model"] = {k: v for k, v in change["model"].items() if v is not None}
    cli_refused(["scenario", "--scenario", scenario_file(tmp_path, change)], capsys, *names)


def test_never_is_a_documented_steps_value(tmp_path, capsys):
    """`[steps] adamw = "never"` (measured, never reaches the target) is read, not refused."""
    path = scenario_file(tmp_path, {"steps": {**to_toml_dict(SC)["steps"], "adamw": "never"}})
    assert bj.load(path).steps_of("adamw") == math.inf


# ------------------------------------------------------------------ the Python API

@pytest.mark.parametrize("value", ["12 GB/s", None, 1j, np.array([]), True],
                         ids=["str", "None", "complex", "empty", "bool"])
def test_replace_takes_numbers_only(value):
    refused(lambda: SC.replace(wan_Bps=value), "[links] wan", repr(value))


@pytest.mark.parametrize("d", [-1.0, math.nan, "1 ms"])
def test_fixed_times_are_checked(d):
    refused(lambda: SC.replace(fixed_s={**SC.fixed_s, "adamw": d}), "adamw")
    mine = bj.Variant("mine", "mine", "mine", **MINE)
    refused(lambda: SC.with_variant(mine, d_s=d), "mine")


def test_replace_other_values():
    refused(lambda: SC.replace(variants=()), "variants = ()")
    refused(lambda: SC.replace(steps=None), "steps = None")
    refused(lambda: SC.replace(bogus=1), "bogus")
    refused(lambda: SC.replace(params=1e308), "params", "1e+308")
    refused(lambda: SC.replace(budget_low_FLOPs=200e9), "budget_low", "200")
    refused(lambda: SC.replace(gpu_compute_s=0.0), "gpu_compute", "0")


@pytest.mark.parametrize("kw,names", [
    (dict(d_s="1 ms"), ["d_s", "'1 ms'"]), (dict(label=5), ["label", "5"]),
    (dict(module="yes"), ["module", "'yes'"]), (dict(colour=math.inf), ["colour", "inf"]),
    (dict(bytes_per_param=math.inf), ["bytes_per_param", "inf"]), (dict(id="<x>"), ["id", "'<x>'"]),
])
def test_variant_values(kw, names):
    args = dict(id="m", label="m", short="m", **MINE)
    args.update(kw)
    refused(lambda: bj.Variant(**args), *names)


@pytest.mark.parametrize("short,owner", [("E", "band_pluggable"), ("e", "band_pluggable"),
                                          ("E'", "band_switch"), (" AdamW", "adamw")])
def test_short_label_of_another_variant_is_refused(short, owner):
    """A short label another variant has (in any case: a variant is found by it in any case) is
    refused through every door of the Python API, naming the new variant, the label and the
    variant that has it; the scenario file already refuses it."""
    mine = bj.Variant("mine", "mine", short, **MINE)
    for door in (lambda: SC.with_variant(mine), lambda: SC.with_variants([mine]),
                 lambda: SC.replace(variants=SC.variants + (mine,))):
        refused(door, "variant 'mine'", f"short = {short!r}", f"variant {owner!r}")
    # renaming a variant in place to another's label names the renamed one
    import dataclasses

    renamed = dataclasses.replace(SC.variant("adamw"), short=short)
    if owner != "adamw":
        refused(lambda: SC.with_variant(renamed), "variant 'adamw'", f"variant {owner!r}")
    # two new variants with one label: the second is named
    twins = [bj.Variant("a1", "a1", "Z", **MINE), bj.Variant("a2", "a2", "z", **MINE)]
    refused(lambda: SC.with_variants(twins), "variant 'a2'", "short = 'z'", "variant 'a1'")
    # a variant replaced by id keeps its own label, and a label of its own is accepted
    assert SC.with_variant(SC.variant("adamw")).variants == SC.variants
    assert SC.with_variant(bj.Variant("mine", "mine", "Mine", **MINE)).variant("mine").short == "Mine"


def test_short_label_clash_in_a_scenario_file(tmp_path, capsys):
    path = scenario_file(tmp_path, {"variants": {"mine": {**MINE, "label": "mine", "short": "e"}}})
    cli_refused(["scenario", "--scenario", path], capsys, "variant 'mine'", "short = 'e'",
                "variant 'band_pluggable'")


def test_sweep_arguments():
    refused(lambda: bj.sweep(SC, budget=True, bandwidth=[1.0]), "budget", "True")
    refused(lambda: bj.sweep(SC, bandwidth=[1j]), "bandwidth", "1j")
    refused(lambda: bj.sweep(SC, wan_latency_s=[None]), "latency", "None")
    refused(lambda: bj.sweep(SC, wan_latency_s=[1j]), "latency", "1j")
    ds = bj.sweep(SC, bandwidth=np.array(12.5), quantities=["step_s"])  # a 0-d array: one value
    assert float(ds.bandwidth) == 12.5


# ------------------------------------------------------------------ sizes, before work

def test_sizes_refused_at_once(tmp_path):
    big = np.linspace(1.0, 100.0, 10**8)
    refused(lambda: bj.sweep(SC, bandwidth=big), "bandwidth", "100,000,000", within_s=1.0)
    refused(lambda: bj.break_even(SC, "adamw", "band_switch", max_roots=10**9), "max_roots",
            within_s=1.0)
    refused(lambda: bj.break_even(SC, "adamw", "band_switch", grid=10**9), "grid", within_s=1.0)
    store = bj.store  # imported before the clock starts
    many, budgets = np.geomspace(1, 100, 10**7), list(range(1, 100_001))
    refused(lambda: store.write(tmp_path / "s.zarr", SC, bandwidth=many, budget=budgets),
            "grid points", "1,000,000,000,000", within_s=1.0)
    refused(lambda: store.write(tmp_path / "c.zarr", SC, bandwidth=[1.0, 2.0], chunk_B=1e-12),
            "chunk_B", "1e-12", within_s=1.0)


def test_store_takes_a_numpy_chunk_size(tmp_path):
    path = bj.store.write(tmp_path / "s.zarr", SC, bandwidth=[1.0, 2.0], chunk_B=np.int64(10**6),
                          progress=False, quantities=["step_s"])
    assert bj.store.open(path).sizes["bandwidth"] == 2


def test_command_line_sizes_and_empties(tmp_path, capsys):
    cli_refused(["breakeven", "adamw", "band_switch", "--scenario", ""], capsys, "--scenario", "''")
    cli_refused(["scenario", "--write", ""], capsys, "--write", "''")
    cli_refused(["store", tmp_path / "p.zarr", "--points", 300000000], capsys, "--points", "300000000")
    cli_refused(["store", tmp_path / "b.zarr", "--budget", "free", "free", "--points", 2], capsys,
                "--budget", "free")
    cli_refused(["wan", "--dcs", 1000000, "--steps", 1], capsys, "--dcs", "1000000")
    cli_refused(["wan", "--workers", 1024, "--steps", 1], capsys, "--workers", "1024")
    cli_refused(["wan", "--max-sim-s", 0, "--steps", 1], capsys, "--max-sim-s", "0")


def test_store_refuses_a_silent_scheduler(tmp_path, capsys):
    """A port that accepts connections but never answers: refused within the stated 10 s."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(5)
        address = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
        t = time.perf_counter()
        cli_refused(["store", tmp_path / "s.zarr", "--points", 2, "--scheduler", address], capsys,
                    address, "10 s")
        assert time.perf_counter() - t < 20


# ------------------------------------------------------------------ measurement files

BASE = "variant,step_ms,bandwidth\nadamw,40,12.5\nband_switch,5,12.5\nadamw,20,25\nband_switch,4,25\n"


def _with_column(name, value):
    return BASE.replace("bandwidth\n", f"bandwidth,{name}\n").replace(",12.5\n", f",12.5,{value}\n")


@pytest.mark.parametrize("text,names", [
    (_with_column("utilisation", 5), ["utilisation", "5"]),
    (_with_column("dcs", 1.5), ["dcs", "1.5"]),
    (_with_column("workers_per_dc", 0), ["workers_per_dc", "0"]),
    (_with_column("wan_Bps", 0), ["wan_Bps", "0"]),
    (_with_column("band_fraction", 2), ["band_fraction", "2"]),
    (BASE.replace("variant,step_ms,bandwidth", "variant,step_ms,step_ms"), ["step_ms", "more than once"]),
    (BASE.replace("adamw,40,12.5", "adamw,40,12.5,99"), ["row 1", "99"]),
], ids=["utilisation", "dcs", "workers", "wan", "band_fraction", "duplicate header", "extra cells"])
def test_measurement_rows(tmp_path, text, names):
    path = tmp_path / "m.csv"
    path.write_text(text)
    refused(lambda: bj.calibrate(path, fit=["fpga_Bps"]), *names)


BIG = 10**400  # a TOML integer has no bound as Python reads it; past 1.8e308 it is no float


@pytest.mark.parametrize("text,names", [
    ('wan = "12.5 GB/s"', ["[links] wan = 99999999999999999999...(400 digits)", "too large"]),
    ('topk = 400', ["[steps] topk = 99999999999999999999...(400 digits)", "steps must be"]),
], ids=["wan", "steps"])
def test_scenario_integer_past_the_largest_float(tmp_path, capsys, text, names):
    """Found by the campaign: a 400-digit integer in a scenario file was an OverflowError
    traceback (float() of it); one of 5,000 digits, past what Python converts, named no file."""
    ref = tomli_w.dumps(to_toml_dict(SC))
    key = text.split(" = ")[0]
    assert text in ref
    path = tmp_path / "s.toml"
    path.write_text(ref.replace(text, f"{key} = {'9' * 400}"))
    cli_refused(["scenario", "--scenario", path], capsys, *names)
    path.write_text(ref.replace(text, f"{key} = {'9' * 5000}"))
    cli_refused(["scenario", "--scenario", path], capsys, f"scenario file {str(path)!r}", "5000 digits")


@pytest.mark.parametrize("column", ["step_ms", "bandwidth", "budget", "model", "workers_per_dc"])
def test_measurement_integer_past_the_largest_float(column):
    rows = [{"variant": "adamw", "step_ms": 40, column: BIG}, {"variant": "band_switch", "step_ms": 5},
            {"variant": "adamw", "step_ms": 20}]
    refused(lambda: bj.calibrate(rows, fit=["d.adamw"]), f"row 1: {column} = 10000000000000000000...",
            "(401 digits)", "too large")


def test_measurement_boolean_step(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[[run]]\nvariant="adamw"\nstep_ms=true\n[[run]]\nvariant="band_switch"\nstep_ms=5\n')
    refused(lambda: bj.calibrate(path, fit=["fpga_Bps"]), "step_ms", "True")


def test_measurement_zero_d_step_is_one_value():
    from bandjax.calibration import prepare_rows

    rows = prepare_rows([{"variant": "adamw", "step_ms": np.array(40.0)},
                         {"variant": "band_switch", "step_ms": np.array(5.0)}], SC)
    assert rows.y.tolist() == [0.04, 0.005]


def test_measurement_column_missing_in_some_rows():
    """A cell left empty takes the scenario's value for that row."""
    from bandjax.calibration import prepare_rows

    rows = prepare_rows([{"variant": "adamw", "step_ms": 40, "bandwidth": 25},
                         {"variant": "band_switch", "step_ms": 5}], SC)
    assert rows.fields["wan_Bps"].tolist() == [25e9, float(SC.wan_Bps)]


# ------------------------------------------------------------------ results.json read back

@pytest.mark.parametrize("key,value,names", [
    ("schema_version", 999, ["schema_version", "999"]),
    ("break_even_GBps", [], ["break_even_GBps", "[]"]),
    ("break_even_GBps", "x", ["break_even_GBps", '"x"']),
    ("units", 5, ["units", "5"]),
    ("stages_ms", 5, ["stages_ms", "5"]),
    ("shared_wan", [], ["shared_wan", "list"]),
    ("target_loss", "a", ["target_loss", '"a"']),
])
def test_results_read_back(tmp_path, capsys, reference_report, key, value, names):
    results = {**reference_report[1], key: value}
    path = tmp_path / "rep" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(results))
    cli_refused(["explore", "--results", path, "--out", tmp_path / "o"], capsys, *names)


@pytest.mark.parametrize("typed,path", [
    ("NaN", "time_to_target_s.exact.adamw"), ("-Infinity", "step_ms.adamw"),
    ("1e999", "target_loss"), ("1" * 400, "shared_wan.loads.1"),
], ids=["NaN", "-Infinity", "1e999", "400 digits"])
def test_results_numbers_bandjax_never_writes(tmp_path, capsys, reference_report, typed, path):
    """A number that is not a finite float (found by tests/test_hostile_documents.py: read as
    NaN or inf, the schema's "number" took it and the page drew it) is refused by its path and as
    typed; results.json is written with allow_nan=False, null where there is no number."""
    import copy

    results = copy.deepcopy(reference_report[1])
    node, keys = results, path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = "@number@"
    file = tmp_path / "rep" / "results.json"
    file.parent.mkdir()
    file.write_text(json.dumps(results).replace('"@number@"', typed))
    shown = typed if len(typed) <= 40 else f"{typed[:20]}...({len(typed)} digits)"
    cli_refused(["explore", "--results", file, "--out", tmp_path / "o"], capsys, "--results",
                f"{path} = {shown}", "finite numbers only")


def test_results_nested_too_deep(tmp_path, capsys):
    path = tmp_path / "rep" / "results.json"
    path.parent.mkdir()
    path.write_text("[" * 100_000 + "]" * 100_000)
    cli_refused(["explore", "--results", path, "--out", tmp_path / "o"], capsys, "--results", "nested")
