"""The ``bandjax`` command as a new user meets it: instant help, a version, every argument checked
before any work (one line, exit status 2), variants by id or label, progress while a report runs."""

import ast
import pickle
import importlib.metadata
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import bandjax
from bandjax.cli import EXIT_ERROR, main

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("report", "explore", "scenario", "breakeven", "wan", "store")


class _Searched(Exception):
    """Raised by a stand-in for the work a command does after its checks."""


def _one_error_line(capsys, *fragments) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


@pytest.mark.slow
def test_help_of_every_command_loads_no_jax():
    # an import hook that refuses jax: any import of it while building the parser or printing
    # help fails the run; and sys.modules after it must hold neither jax nor xarray
    script = f"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('jax', 'jaxlib', 'xarray'):
            raise ImportError('refused: ' + name)
sys.meta_path.insert(0, Refuse())
import contextlib, io
from bandjax.cli import main
for argv in [['--help']] + [[c, '--help'] for c in {COMMANDS!r}]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    assert rc == 0 and 'usage: bandjax' in out.getvalue(), (argv, rc, out.getvalue())
loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'xarray'))
assert not loaded, loaded
print('ok')
"""
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_nothing_below_the_command_imports_it():
    """bandjax.cli imports its command modules plainly; no module outside bandjax/cli/ imports any
    of them."""
    offenders = []
    for path in (ROOT / "bandjax").rglob("*.py"):
        if path.name == "__main__.py" or path.parent == ROOT / "bandjax" / "cli":
            continue
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] \
                    if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                names = [f"{module}.{a.name}" for a in node.names] + [module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if "bandjax.cli" in names:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
    for path in (ROOT / "bandjax" / "cli").glob("*.py"):
        source = path.read_text()
        assert "import_module" not in source and "__import__" not in source, path


def test_version_is_the_package_metadata(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bandjax {importlib.metadata.version('bandjax')}"


@pytest.fixture
def no_search(monkeypatch):
    """Every break-even search raises _Searched: an argument error must come before it."""
    import bandjax.breakeven as be
    from bandjax.cli import _breakeven_out as rb

    def searched(*args, **kwargs):
        raise _Searched

    monkeypatch.setattr(be, "break_even", searched)
    monkeypatch.setattr(be, "enob_break_even", searched)
    calls = []

    def record(sc, a, b, basis, lo, hi):
        calls.append((a, b, basis, lo, hi))

    monkeypatch.setattr(rb, "print_bandwidth", record)
    monkeypatch.setattr(rb, "print_budget", record)
    return calls


@pytest.mark.parametrize("argv, fragments", [
    (["breakeven", "E'", "adamw", "--achieve", "foo"], ["--achieve foo", "not known", "optics_Sps"]),
    (["breakeven", "E'", "adamw", "--range", "10", "1"], ["--range 10 1 GB/s", "0 < lo < hi"]),
    (["breakeven", "E", "C", "--over", "enob", "--range", "10", "1"], ["--range 10 1 GB/s"]),
    (["breakeven", "E", "C", "--over", "budget", "--range", "10", "1"],
     ["--range 10 1 GFLOP/s", "0 < lo < hi"]),
    (["breakeven", "E", "C", "--range", "0", "inf"], ["--range 0 inf GB/s"]),
    (["breakeven", "E", "C", "--over", "enob", "--sensitivity"], ["--sensitivity", "--over enob"]),
    (["breakeven", "E", "nope"], ["B nope", "not known", "band_switch (E')"]),
    (["breakeven", "E", "band_pluggable"], ["A = B = 'band_pluggable'"]),
])
def test_breakeven_arguments_are_checked_before_any_search(no_search, capsys, argv, fragments):
    assert main(argv) == EXIT_ERROR
    line = _one_error_line(capsys, "bandjax breakeven: error:", *fragments)
    assert "Traceback" not in line
    assert no_search == []


@pytest.mark.parametrize("a, b", [("E'", "AdamW"), ("e'", "adamw"), ("band_switch", "adamw")])
def test_breakeven_takes_variants_by_id_or_label(no_search, capsys, a, b):
    assert main(["breakeven", a, b, "--range", "1", "100"]) == 0
    # E' is in the pair: both bases, GB/s typed -> B/s
    assert no_search == [("band_switch", "adamw", basis, 1e9, 100e9)
                         for basis in ("hypothesis", "exact")]


@pytest.fixture
def no_runs(monkeypatch):
    import events

    seen = {}

    def sweep(sc, **kwargs):
        seen.update(kwargs)
        raise _Searched

    monkeypatch.setattr(events, "sweep", sweep)
    return seen


def test_wan_takes_variants_by_id_or_label(no_runs):
    with pytest.raises(_Searched):
        main(["wan", "--variant", "E'", "c", "adamw", "--steps", "5"])
    assert no_runs["variant"] == ["band_switch", "band_gpu", "adamw"]


@pytest.mark.parametrize("variants, fragments", [
    (["E", "band_pluggable"], ["--variant E band_pluggable", "band_pluggable given twice"]),
    (["X"], ["--variant X", "not known", "adamw (AdamW)"]),
])
def test_wan_variant_errors_before_any_run(no_runs, capsys, variants, fragments):
    assert main(["wan", "--variant", *variants, "--steps", "5"]) == EXIT_ERROR
    _one_error_line(capsys, "bandjax wan: error:", *fragments)
    assert no_runs == {}


@pytest.fixture
def one_quick_section(monkeypatch):
    """The report reduced to one section that records what stderr held when it started."""
    import bandjax.report as report

    seen = []
    section = types.ModuleType("quick_section")
    section.KEY = "quick_section"
    section.build = lambda sc, ctx: seen.append(sys.stderr.getvalue()
                                                if hasattr(sys.stderr, "getvalue") else "") or {}
    section.markdown = lambda results: "## Quick"
    monkeypatch.setitem(sys.modules, "quick_section", section)
    monkeypatch.setattr(report, "SECTIONS", (section,))
    return seen


def test_report_tells_each_section_as_it_starts(one_quick_section, tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "out")]) == 0
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 2, cap.err
    assert lines[0].startswith("bandjax report: writing") and str(tmp_path / "out") in lines[0]
    assert lines[1].startswith("bandjax report: [1] quick_section (") and lines[1].endswith(" s)")
    # the section's line was on stderr before the section began
    assert len(one_quick_section) == 1 and "[1] quick_section" in one_quick_section[0]
    assert f"wrote {tmp_path / 'out' / 'results.json'}" in cap.out


def test_report_quiet_prints_nothing_on_stderr(one_quick_section, tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.err == ""
    assert (tmp_path / "out" / "results.json").is_file()


def test_budgets_are_selectable_by_their_names():
    sc = bandjax.reference()
    ds = bandjax.sweep(sc, bandwidth=12.5, budget=["free", "low", "high", 42.0],
                       quantities=["step_s"])
    assert list(ds.budget_label.values) == ["free", "low", "high", "42 GFLOP/s"]
    # the numeric coordinate is the scenario's named budget in GFLOP/s (inf = free), and a name
    # selects the same row as its value (as the README shows)
    for name, flops in [("free", np.inf), ("low", float(sc.budget_low_FLOPs)),
                        ("high", float(sc.budget_high_FLOPs)), ("42 GFLOP/s", 42e9)]:
        by_value = ds.step_s.sel(budget=flops / 1e9)
        np.testing.assert_allclose(ds.step_s.sel(budget=name).values, by_value.values, rtol=0, atol=0)
        assert str(by_value.budget_label.values) == name
    both = ds.step_s.sel(budget=["high", 42.0, "free"])
    np.testing.assert_array_equal(both.budget.values, [float(sc.budget_high_FLOPs) / 1e9, 42.0, np.inf])
    # the name survives slicing, joining along the axis and pickling; the older way, an index on
    # the label coordinate, still works
    low = float(sc.budget_low_FLOPs) / 1e9
    assert float(ds.isel(budget=[1, 3]).budget.sel(budget="low")) == low
    joined = xr.concat([ds.isel(budget=[0]), ds.isel(budget=[1])], "budget")
    assert float(joined.budget.sel(budget="low")) == low
    assert float(pickle.loads(pickle.dumps(ds)).budget.sel(budget="low")) == low
    np.testing.assert_array_equal(ds.set_xindex("budget_label").step_s.sel(budget_label="low").values,
                                  ds.step_s.sel(budget="low").values)
    # budgets differ where a module computes: the names pick different rows
    e = ds.step_s.sel(variant="band_pluggable")
    assert float(e.sel(budget="low")) > float(e.sel(budget="free")) * (1 + 1e-6)


@pytest.mark.parametrize("bad", ["lo", "fast GFLOP/s", ["free", "medium"]])
def test_a_budget_name_that_is_not_on_the_axis_names_what_is(bad):
    ds = bandjax.sweep(bandwidth=12.5, budget=["free", "low"], quantities=["step_s"])
    with pytest.raises(KeyError, match=r"not a budget name of this sweep \(free, low\)"):
        ds.sel(budget=bad)


def test_readme_first_command_installs_what_the_documented_api_imports():
    """`pip install .` (the README's first command) must bring every package the README's Python
    imports need: bandjax.store needs zarr, so zarr is a main dependency."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split(";")[0].split("[")[0].split(">")[0].split("=")[0].strip().lower() for d in deps}
    readme = (ROOT / "README.md").read_text()
    first = next(line for line in readme.splitlines() if "pip install" in line)
    assert "pip install -q ." in first
    needed = {"zarr"} if "bandjax.store" in readme else set()
    assert needed <= names, needed - names


def test_wan_help_states_the_report_defaults(capsys):
    """`bandjax wan --help` names the report's loads and steps a run (it loads no report, so it
    states them in words; this keeps the words true)."""
    # the values as the source sets them (tests/conftest.py shortens the runs)
    source = ast.parse((ROOT / "bandjax" / "_wan_runs.py").read_text())  # the runs' sizes
    value = {t.id: ast.literal_eval(node.value) for node in source.body
             if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
             and t.id in ("LOADS", "STEPS")}
    assert main(["wan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: the report's, {' '.join(f'{x:g}' for x in value['LOADS'])})" in text
    assert f"(default: the report's, {value['STEPS']})" in text


@pytest.fixture
def no_need(monkeypatch):
    """Every needed-bandwidth computation raises _Searched: an argument error must come before."""
    import bandjax.need as need

    def searched(*args, **kwargs):
        raise _Searched

    monkeypatch.setattr(need, "required_bandwidth", searched)


@pytest.mark.parametrize("argv, fragments", [
    (["--utilisation", "1"], ["--utilisation 1:", "(0, 1)"]),
    (["--utilisation", "0.9", "0"], ["--utilisation 0:", "(0, 1)"]),
    (["--utilisation", "nan"], ["--utilisation nan:", "(0, 1)"]),
    (["--utilisation", "0.9", "0.9"], ["--utilisation 0.9 0.9", "given twice"]),
    (["--range", "10", "1"], ["--range 10 1 GB/s", "0 < LO < HI"]),
    (["--range", "0", "10"], ["--range 0 10 GB/s", "positive"]),
    (["--range", "1", "inf"], ["--range 1 inf GB/s", "finite"]),
    (["--variant", "nope"], ["--variant nope", "not known", "diloco (DiLoCo)"]),
    (["--variant", "E", "band_pluggable"], ["band_pluggable given twice"]),
])
def test_need_arguments_are_checked_before_any_work(no_need, capsys, argv, fragments):
    assert main(["need", *argv]) == EXIT_ERROR
    assert "Traceback" not in _one_error_line(capsys, "bandjax need: error:", *fragments)


def _need_table(out: list[str]) -> list[str]:
    """The rows of the printed table: the lines after its heading (``variant ...``), up to the
    assumptions."""
    start = next(i for i, line in enumerate(out) if line.startswith("variant "))
    return [line for line in out[start + 1:] if not line.startswith("assumed")]


def test_need_prints_the_needed_bandwidth_with_its_status(capsys):
    """The printed GB/s and Gbit/s are bandjax.required_bandwidth's (4 significant digits); the
    reference scenario shows each status: E is capped by its module, the FP4 sync's 50% needs
    less than the range's bottom (its exact value, 0.06953 GB/s, said below the range), DiLoCo's
    90% is reached. A method of the pack is named without --methods. "at the scenario" is
    bandjax.sweep's compute utilisation at the scenario's own bandwidth (4 significant digits)."""
    assert main(["need", "--utilisation", "0.5", "0.9", "--variant", "E", "streaming_diloco_fp4",
                 "diloco"]) == 0
    out = capsys.readouterr().out.splitlines()
    sc = bandjax.reference().with_variants(bandjax.METHODS)
    ds = bandjax.required_bandwidth(sc, [0.5, 0.9], variant=["diloco", "streaming_diloco_fp4"])
    cu = bandjax.sweep(sc, variant=["band_pluggable", "streaming_diloco_fp4", "diloco"],
                       quantities=("compute_utilisation",))["compute_utilisation"]
    rows = {(line.split()[0], line.split()[4]): line for line in _need_table(out)}
    assert set(rows) == {(v, u) for v in ("band_pluggable", "streaming_diloco_fp4", "diloco")
                         for u in ("50%", "90%")}
    g = float(ds.required_bandwidth_GBps.sel(variant="diloco", utilisation=0.9))
    assert rows["diloco", "90%"].split()[5:9] == [f"{g:.4g}", f"{8 * g:.4g}",
                                                  f"{100 * float(cu.sel(variant='diloco')):.4g}%",
                                                  "reached"]
    assert rows["diloco", "90%"].split()[1:4] == ["100", "1", "0"]  # H, F, tau
    for (vid, _), line in rows.items():  # the same utilisation on each target's row
        assert float(line.split()[7].rstrip("%")) / 100 == pytest.approx(
            float(cu.sel(variant=vid)), rel=5e-4)
    g = float(ds.required_bandwidth_GBps.sel(variant="streaming_diloco_fp4", utilisation=0.5))
    assert rows["streaming_diloco_fp4", "50%"].split()[5:7] == [f"{g:.4g}", f"{8 * g:.4g}"]
    assert rows["streaming_diloco_fp4", "50%"].split()[8:] == [
        "below", "the", "range", "(met", "at", "0.1", "GB/s", "already)"]
    assert f"{g:.4g}" == "0.06953" and f"{8 * g:.4g}" == "0.5562"
    assert rows["band_pluggable", "90%"].split()[5:7] == ["-", "-"]
    assert rows["band_pluggable", "90%"].endswith(
        "%  not reachable at any bandwidth: capped by the module stages")
    heading = next(line for line in out if line.startswith("WAN bandwidth per directed link"))
    assert "0.1 to 1000 GB/s" in heading and "12.5 GB/s" in heading
    head = next(line for line in out if line.startswith("variant "))
    assert "GB/s" in head and "Gbit/s" in head and "at the scenario" in head
    assert any(line.startswith("assumed: syncing every H steps does not change steps") for line in out)
    assert any("streaming_diloco_fp4 (tau = 1)" in line for line in out if line.startswith("assumed"))


def test_need_wide_has_the_targets_as_columns(capsys):
    """--wide: a row per variant, a column per target and the utilisation at the scenario; the
    cells are the long form's GB/s, or why there is none."""
    argv = ["need", "--utilisation", "0.5", "0.9", "--variant", "E", "streaming_diloco_fp4",
            "diloco"]
    assert main([*argv, "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    sc = bandjax.reference().with_variants(bandjax.METHODS)
    ds = bandjax.required_bandwidth(sc, [0.5, 0.9], variant=["diloco", "streaming_diloco_fp4"])
    cu = bandjax.sweep(sc, variant=["diloco"], quantities=("compute_utilisation",))
    head = next(line for line in wide if line.startswith("variant "))
    assert head.split() == ["variant", "H", "F", "tau", "50%", "90%", "at", "the", "scenario"]
    rows = {line.split()[0]: line for line in _need_table(wide)}
    assert list(rows) == ["band_pluggable", "streaming_diloco_fp4", "diloco"]
    g5, g9 = (float(ds.required_bandwidth_GBps.sel(variant="diloco", utilisation=u))
              for u in (0.5, 0.9))
    cu = float(np.atleast_1d(cu["compute_utilisation"].values)[0])
    assert rows["diloco"].split() == ["diloco", "100", "1", "0", f"{g5:.4g}", f"{g9:.4g}",
                                      f"{100 * cu:.4g}%"]
    g = float(ds.required_bandwidth_GBps.sel(variant="streaming_diloco_fp4", utilisation=0.5))
    assert rows["streaming_diloco_fp4"].split()[4:6] == [f"{g:.4g}", "(below)"]
    assert rows["band_pluggable"].split()[4:8] == ["-", "(module)", "-", "(module)"]
    # the same setup as the long form, before either table
    assert main(argv) == 0
    long = capsys.readouterr().out.splitlines()
    assert [line for line in long if line.startswith(("setup", "  "))] == \
        [line for line in wide if line.startswith(("setup", "  "))]


def test_need_methods_adds_the_pack(capsys):
    assert main(["need", "--utilisation", "0.9", "--methods", "--range", "0.01", "10"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in _need_table(out.splitlines())]
    assert names == [*bandjax.reference().ids, *(m.id for m in bandjax.METHODS)]
    assert "0.01 to 10 GB/s" in out


def test_the_figures_progress_line_says_what_they_are(capsys):
    """The report names a starting section by its module (bandjax.report.build): the figures'
    line says what they are, not the module's name."""
    from bandjax.cli.report import _progress
    from bandjax.report import figure_files

    _progress("out")(figure_files.__name__.rsplit(".", 1)[-1])
    assert "bandjax report: [1] figures (SVG and PNG) (" in capsys.readouterr().err


def test_the_report_sets_the_collector_only_in_a_process_of_its_own(tmp_path, monkeypatch):
    """`bandjax report` from the command line freezes its modules and runs the cycle collector
    less often (cli.report.GC_THRESHOLDS); called in a caller's process (main(argv)) it leaves
    the caller's collector as it is."""
    import gc

    from bandjax.cli import report as cli_report

    calls = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "set_threshold", lambda *t: calls.append(t))
    import argparse

    cli_report._fewer_collections(argparse.Namespace(from_command_line=False))
    assert calls == []
    cli_report._fewer_collections(argparse.Namespace(from_command_line=True))
    assert calls == ["freeze", cli_report.GC_THRESHOLDS]
    before = gc.get_threshold()
    assert main(["report", "--out", str(tmp_path / "r"), "--quiet", "--sections", "core"]) == 0
    assert gc.get_threshold() == before and calls == ["freeze", cli_report.GC_THRESHOLDS]
