"""Hostile values through every door (scenario files, Scenario.replace, with_variant, Variant,
sweep arguments, measurement files, results.json read back, the command line): each is refused
with one clear error naming the parameter and the value as typed, or, for the valid inputs that
used to be refused, accepted. Sizes are refused before work, in well under a second."""

from __future__ import annotations

import json
import math
import socket

import numpy as np
import pytest
import tomli_w

import bandjax as bj
from bandjax import cli
from bandjax.scenario import to_toml_dict
from test_hostile import bounded  # a hang guard, not a speed check

SC = bj.reference()
MINE = dict(payload="dense", collective="ring_allreduce")


def refused(fn, *names):
    """fn() raises ValueError whose message holds each of ``names`` (the parameter, the value),
    under the hostile tests' hang guard (a refusal that came after the work it sizes would hang
    or exhaust memory there, not pass)."""
    with bounded(), pytest.raises(ValueError) as e:
        fn()
    for n in names:
        assert n in str(e.value), (n, str(e.value))
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
    ({"model": {**to_toml_dict(SC)["model"], "gpu_peak": 1e-300, "gpu_compute": None}},
     ["gpu_peak", "1e-300 FLOP/s", "1e-30 FLOP/s"]),  # c would be inf s
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
    # the smallest normal float as the GPU's peak: c = F P T / (peak u) would overflow
    refused(lambda: SC.replace(gpu_peak_FLOPs=2.2250738585072014e-308), "gpu_peak", "2.22507e-308",
            "1e-30 FLOP/s")
    refused(lambda: SC.replace(utilisation=1e-300), "utilisation", "1e-300")
    # a subnormal bandwidth made every step inf s; sizes past the window overflow products
    refused(lambda: SC.replace(wan_Bps=[2.225073858507e-311]), "[links] wan", "2.22507e-311 B/s",
            "1e-30 B/s")
    refused(lambda: SC.replace(params=1e31), "params", "1e+31", "1e+30")
    refused(lambda: SC.replace(topk_fraction=1e300), "topk_fraction", "(0, 1]")
    assert SC.replace(wan_latency_s=0.0).wan_latency_s == 0.0  # 0 where 0 is allowed
    refused(lambda: SC.replace(budget_low_FLOPs=200e9), "budget_low", "200")
    refused(lambda: SC.replace(gpu_compute_s=0.0), "gpu_compute", "0")
    # a checkpoint interval past the window: ETTR 0 for any failure rate, computed as if real
    refused(lambda: SC.replace(checkpoint_every_s=1e300), "checkpoint_every", "1e+30 s")
    refused(lambda: SC.replace(checkpoint_every_s=1e-31), "checkpoint_every", "1e-30 s")
    assert SC.replace(checkpoint_every_s=1e30).checkpoint_every_s == 1e30  # its end is allowed


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
    refused(lambda: bj.sweep(SC, bandwidth=big), "bandwidth", "100,000,000")
    refused(lambda: bj.break_even(SC, "adamw", "band_switch", max_roots=10**9), "max_roots")
    refused(lambda: bj.break_even(SC, "adamw", "band_switch", grid=10**9), "grid")
    store = bj.store  # imported before the clock starts
    many, budgets = np.geomspace(1, 100, 10**7), list(range(1, 100_001))
    refused(lambda: store.write(tmp_path / "s.zarr", SC, bandwidth=many, budget=budgets),
            "grid points", "1,000,000,000,000")
    refused(lambda: store.write(tmp_path / "c.zarr", SC, bandwidth=[1.0, 2.0], chunk_B=1e-12),
            "chunk_B", "1e-12")


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
        # the message names the stated 10 s; a client that waited forever would meet the hang guard
        with bounded():
            cli_refused(["store", tmp_path / "s.zarr", "--points", 2, "--scheduler", address], capsys,
                        address, "10 s")


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


# ------------------------------------------------------------------ the second review's cases

def test_with_link_values_are_not_converted():
    """A NaN bandwidth was a 1 B/s link and a NaN latency 0 s; a boolean, a complex number or
    text is refused as given, naming the link."""
    refused(lambda: SC.with_link("dc0", "dc1", bandwidth=math.nan),
            "links bandwidth ['dc0' -> 'dc1'] = nan", "finite number > 0 B/s")
    refused(lambda: SC.with_link("dc0", "dc1", latency=math.nan),
            "links latency ['dc0' -> 'dc1'] = nan", ">= 0 s")
    for bad in (True, 1e9 + 1j, "10 GB/s", [1e9]):
        refused(lambda: SC.with_link("dc0", "dc1", bandwidth=bad),
                "with_link('dc0', 'dc1') bandwidth", repr(bad), "one real number")
    # a valid change still changes that link alone
    B, L, _ = SC.with_link("dc0", "dc1", bandwidth=1e9, latency=0.01).link_values()
    assert B[0, 1] == 1e9 and B[1, 0] == 12.5e9 and L[0, 1] == 0.01 and L[1, 0] == 0.0


@pytest.mark.parametrize("table,names", [
    (np.ones((2, 2), dtype=bool), ["links bandwidth", "booleans"]),
    (np.array([[0, 1e9 + 1j], [1e9, 0]]), ["links bandwidth", "complex numbers"]),
], ids=["bool", "complex"])
def test_with_links_tables_of_other_types(table, names):
    refused(lambda: SC.with_links(table), *names)


def test_with_links_names_as_one_string():
    refused(lambda: SC.with_links([[0, 1e9], [1e9, 0]], names="ab"), "names = 'ab'",
            "a list of 2 DC names")
    assert SC.with_links([[0, 1e9], [1e9, 0]], names=["a", "b"]).links.names == ("a", "b")


def test_with_links_size_and_ratio_are_bounded():
    """10,000 DCs are refused from the table's length, before an array is made of it (a list of
    lists that big is never converted); a ratio of 1e600 between links is refused at once, not on
    unpickling."""
    from bandjax import _limits
    import pickle

    K = _limits.MAX_LINK_DCS + 1
    rows = [[1.0] * 2] * K  # a ragged table: converting it would fail, its length does not
    refused(lambda: SC.with_links(rows), f"{K:,} rows", f"at most {_limits.MAX_LINK_DCS:,} DCs")
    refused(lambda: SC.with_links(np.zeros((10_000, 10_000), dtype=np.float32)), "10,000 rows")
    refused(lambda: SC.with_links([[0, 1e-300], [1e300, 0]]), "['dc1' -> 'dc0'] = 1e+288 TB/s",
            "1e600 times the slowest", "at most 1e+12 times")
    ok = SC.with_links([[0, 1.0], [1e12, 0]])  # the bound itself: kept, and it survives a copy
    assert pickle.loads(pickle.dumps(ok)).links == ok.links


def test_scenario_file_links_past_the_bound(tmp_path, capsys):
    from bandjax import _limits

    K = _limits.MAX_LINK_DCS + 1
    names = ", ".join(f'"r{i}"' for i in range(K))
    raw = (f"[links]\nnames = [{names}]\n[[links.pairs]]\nfrom = \"r0\"\nto = \"r1\"\n"
           'wan = "1 GB/s"\nlatency = "1 ms"\n')
    cli_refused(["scenario", "--scenario", scenario_file(tmp_path, {"raw": raw})], capsys,
                f"{K:,} DCs named", f"at most {_limits.MAX_LINK_DCS:,}")


def test_a_variant_and_H_are_checked_whichever_changes():
    """A delay of 5 (or 16 fragments) taken at H = 10, then H replaced by 1: refused (the sweep
    answered 1.516 ms, as if there were no delay); a sweep over H and over the field too."""
    delayed = bj.Variant("late", "late", "late", **MINE, delay=5)
    split = bj.Variant("split", "split", "split", **MINE, fragments=16)
    for v, what in ((delayed, "delay = 5 with H = 1"), (split, "fragments = 16 with H = 1")):
        at = SC.replace(sync_every_H=16.0).with_variant(v)
        refused(lambda: at.replace(sync_every_H=1.0), f"[variants.{v.id}]", what)
        refused(lambda: bj.sweep(at, H=[1, 16], quantities=["step_s"]), what)
        refused(lambda: bj.sweep(at, sync_every_H=[1.0, 16.0], quantities=["step_s"]), what)
        refused(lambda: SC.replace(variants=SC.variants + (v,), fixed_s={**SC.fixed_s, v.id: 0.0}),
                what)
    assert float(SC.replace(sync_every_H=16.0).with_variant(delayed).replace(
        sync_every_H=6.0).sync_every_H) == 6.0  # delay 5 fits H = 6


def test_H_must_be_whole_and_at_least_one():
    """H = 0.5 named a delay the user never set; it is H that is wrong."""
    refused(lambda: bj.sweep(SC, H=[0.5]), "H = 0.5", "whole number >= 1")
    refused(lambda: SC.replace(sync_every_H=0.5), "[sync] every_H = 0.5", ">= 1")


@pytest.mark.parametrize("kwargs,names", [
    (dict(variant=["adamw", "adamw"]), ["variant = ['adamw', 'adamw']", "more than once"]),
    (dict(dcs=[2, 2]), ["dcs = [2, 2]", "2 given more than once"]),
    (dict(bandwidth=np.array([1.0, 2.0, 1.0])), ["bandwidth", "1.0 given more than once"]),
    (dict(H=[4, 4.0]), ["H = [4, 4.0]", "more than once"]),
], ids=["variant", "dcs", "bandwidth array", "H"])
def test_repeated_values_are_refused(kwargs, names):
    refused(lambda: bj.sweep(SC, quantities=["step_s"], **kwargs), *names)
    if "bandwidth" not in kwargs:
        refused(lambda: bj.winner(SC, bandwidth=[1.0, 10.0], **kwargs), *names)
    refused(lambda: bj.required_bandwidth(SC, [0.5, 0.5]), "utilisation = [0.5, 0.5]")


@pytest.mark.parametrize("call,names", [
    (lambda: bj.required_bandwidth(SC, True), ["utilisation = True", "not a boolean"]),
    (lambda: bj.required_bandwidth(SC, 1 + 0j), ["utilisation = (1+0j)", "complex"]),
    (lambda: bj.required_bandwidth(SC, 0.9, range_GBps=None), ["range_GBps = None", "lowest"]),
    (lambda: bj.required_bandwidth(SC, 0.9, range_GBps=(0.1, True)), ["range_GBps = (0.1, True)"]),
    (lambda: bj.break_even(SC, None, "adamw"), ["a = None", "variant id or short label"]),
    (lambda: bj.break_even(SC, "adamw", 5), ["b = 5", "variant id or short label"]),
    (lambda: bj.enob_break_even(SC, "band_switch", "adamw", []), ["GBps = []", "empty"]),
    (lambda: bj.budget_break_even(SC, 1e6, 1e3), ["(lo_GFLOPs, hi_GFLOPs) = (1000000.0, 1000.0)",
                                                  "0 < lo < hi"]),
    (lambda: bj.budget_break_even(SC, math.nan, 1e3), ["(nan, 1000.0)", "GFLOP/s"]),
    (lambda: bj.Variant("m", "m", "m", **MINE, sync_every=2**1024),
     ["sync_every = 17976931348623159077...(309 digits)", "whole number"]),
], ids=["bool target", "complex target", "range None", "range bool", "a None", "b int",
        "enob empty", "budget lo > hi", "budget nan", "sync_every overflow"])
def test_entry_point_arguments(call, names):
    refused(call, *names)


def test_budget_break_even_still_answers():
    assert bj.budget_break_even(SC)["numeric_GFLOPs"] == pytest.approx(140.0, rel=1e-9)


def test_required_bandwidth_targets_with_a_swept_H():
    """Two targets with H swept were 'mul got incompatible shapes'; each target's answer is its
    one-target call's (the property over counts and dimensions is in test_hostile_hypothesis)."""
    ds = bj.required_bandwidth(SC, [0.5, 0.9], H=[1, 10, 100])
    assert ds.required_bandwidth_GBps.dims == ("utilisation", "H", "variant")
    for i, u in enumerate([0.5, 0.9]):
        one = bj.required_bandwidth(SC, u, H=[1, 10, 100]).required_bandwidth_GBps
        np.testing.assert_allclose(ds.required_bandwidth_GBps.isel(utilisation=i), one.isel(utilisation=0),
                                   rtol=1e-12, equal_nan=True)


def test_samples_bounded_before_work(monkeypatch):
    from bandjax import _limits
    from bandjax import uncertainty as U

    drawn = []
    monkeypatch.setattr(U.Normal, "sample", lambda self, rng, n: drawn.append(n))
    small = {"steps.E": U.Normal(1800.0, 36.0)}
    for call in (lambda: bj.sweep(SC, samples=10**9, uncertain=small),
                 lambda: bj.break_even(SC, "adamw", "band_switch", samples=10**9, uncertain=small)):
        refused(call, "samples = 1000000000", f"at most {_limits.MAX_SAMPLES:,}")
    assert drawn == []


def test_variants_only_must_be_a_list(tmp_path, capsys):
    cli_refused(["scenario", "--scenario", scenario_file(tmp_path, {"raw": "[variants]\nonly = 5\n"})],
                capsys, "[variants] only = 5", "a list of variant ids")
    cli_refused(["scenario", "--scenario",
                 scenario_file(tmp_path, {"raw": '[variants]\nonly = ["adamw", "adamw"]\n'})],
                capsys, "only = ['adamw', 'adamw']", "adamw given more than once")


ROWS = [{"variant": "adamw", "step_ms": 40, "bandwidth": 12.5},
        {"variant": "band_switch", "step_ms": 5, "bandwidth": 12.5},
        {"variant": "adamw", "step_ms": 20, "bandwidth": 25},
        {"variant": "band_switch", "step_ms": 4, "bandwidth": 25}]


def test_calibration_review_cases(tmp_path):
    three = SC.with_links([[0, 10e9, 5e9], [10e9, 0, 8e9], [3e9, 4e9, 0]])
    refused(lambda: bj.calibrate([{**r, "dcs": 4} for r in ROWS], fit=["d.adamw"], scenario=three),
            "row 1: [cluster] dcs = 4.0", "per-link values for 3 DCs")
    for name in ("sync_every_H", "every_H"):
        refused(lambda: bj.calibrate(ROWS, fit=[name]), "fit 'sync_every_H'", "whole number >= 1")
    refused(lambda: bj.calibrate([{**r, "every_H": 0.5} for r in ROWS], fit=["d.adamw"]),
            "row 1: every_H = 0.5", "whole number >= 1")
    refused(lambda: bj.calibrate(ROWS, fit=["d.adamw"], start={"bogus": 1}), "start 'bogus'",
            "not a parameter being fitted", "d.adamw")
    refused(lambda: bj.calibrate(ROWS, fit=["d.adamw"], start={"d.adamw": True}), "True")
    assert bj.calibrate(ROWS, fit=["d.adamw"], start={"d.adamw": 1e-4}).names == ("fixed_s.adamw",)
    path = tmp_path / "r.csv"
    path.write_text("variant,step_ms,bandwidth\nadamw,4.1;;4.2,12.5\nband_switch,5,12.5\nadamw,20,25\n")
    refused(lambda: bj.calibrate(path, fit=["d.adamw"]), "row 1", "step_ms = '4.1;;4.2'",
            "empty repeat")


@pytest.mark.parametrize("max_sim_s,names", [(0, ["max_sim_s = 0"]), (-1, ["max_sim_s = -1"]),
                                             (math.inf, ["max_sim_s = inf"])])
def test_engine_max_sim_s(max_sim_s, names):
    import events

    refused(lambda: events.sweep(SC, load=0.5, steps=2, variant="adamw", scheduler="inline",
                                 max_sim_s=max_sim_s, progress=False),
            *names, "finite number of seconds > 0")


def test_engine_seed_bound():
    import events

    refused(lambda: events.sweep(SC, load=0.0, seed=2**63, steps=2, variant="adamw",
                                 scheduler="inline", progress=False), "seed = 9223372036854775808",
            "[0, 2**63)")


@pytest.mark.parametrize("argv,names", [
    (["winner", "--over", "dcs", "2", "2"], ["--over: dcs = [2.0, 2.0]", "more than once"]),
    (["winner", "--over", "H", "0.5"], ["--over: H = 0.5: must be a whole number >= 1"]),
    (["winner", "--write", ""], ["--write ''", "empty"]),
    (["report", "--sections", "core", "--skip", "core", "--out", "@tmp/r"],
     ["--sections core with --skip core", "no section"]),
    (["breakeven", "adamw", "band_switch", "--achieve", ""], ["--achieve", "parameter = ''"]),
    (["wan", "--seed", str(2**64), "--out", "@tmp/r.nc", "--steps", "2", "--variant", "adamw",
      "--scheduler", "inline"], ["--seed 18446744073709551616", "2**63"]),
], ids=["winner twice", "winner H", "winner write", "report nothing", "achieve empty", "wan seed"])
def test_review_command_lines(tmp_path, capsys, argv, names):
    argv = [a.replace("@tmp", str(tmp_path)) for a in argv]
    cli_refused(argv, capsys, *names)
    assert not list(tmp_path.iterdir())  # nothing written, no run started
