"""Hostile input: random scenario files, argument lists and paths through the command line must end
with exit status 0 or 2 and at most one line on stderr, never a traceback and never a hang.

Each in-process case runs under an alarm (CASE_S); a case over it fails as a hang. The tallies of
what was tried are printed at the end of the module (pytest -s shows them)."""

from __future__ import annotations

import collections
import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bandjax import _io, _limits, cli
from bandjax.report import explorer

REPO = Path(__file__).resolve().parents[1]
REFERENCE_TOML = None  # filled once from `bandjax scenario`
CASE_S = 120  # a hang guard, not a speed check: a case past it (on a loaded machine) hangs
TALLY = collections.Counter()


class Hang(Exception):
    pass


@contextlib.contextmanager
def bounded(seconds=CASE_S):
    def on_alarm(signum, frame):
        raise Hang(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def tallied(tally, passes=()):
    """A case run under :func:`bounded`: a hang or any exception but ``passes`` is counted in
    ``tally`` ("hangs", "tracebacks") and raised (the case fails); ``passes`` go by uncounted."""
    try:
        with bounded():
            yield
    except passes:
        raise
    except Hang:
        tally["hangs"] += 1
        raise
    except BaseException:
        tally["tracebacks"] += 1
        raise


def run_main(argv, capsys) -> tuple[int, str]:
    """``cli.main(argv)`` in this process: (exit status, stderr); a traceback or hang fails."""
    TALLY["inputs"] += 1
    with tallied(TALLY):
        rc = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert rc in (0, 2), (argv, rc, err)
    if rc == 2:
        TALLY["clear errors"] += 1
        lines = [x for x in err.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("bandjax"), (argv, err)
        assert "Traceback" not in err
    return rc, err


def reference_toml() -> str:
    global REFERENCE_TOML
    if REFERENCE_TOML is None:
        from bandjax.scenario import reference, to_toml_dict
        import tomli_w

        REFERENCE_TOML = tomli_w.dumps(to_toml_dict(reference()))
    return REFERENCE_TOML


# ------------------------------------------------------------------ hypothesis: scenario files

UNITS = ["GB/s", "Gb/s", "MB/s", "B/s", "ms", "s", "us", "GS/s", "GFLOP/s", "B", "MB", "bits", "",
         "parsecs", "GB/s GB/s"]
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e999999", "-1e999999", "sNaN", "NaN", "-0", "inf", "0x10", "1_000", "",
                     "1e-999999", "4.5.6"]),
    st.integers(-10**30, 10**30).map(str))
VALUES = st.one_of(
    st.tuples(NUMBERS, st.sampled_from(UNITS)).map(lambda t: f'"{t[0]} {t[1]}"'),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),  # TOML's own inf and nan too
    st.integers(-10**20, 10**20).map(str),
    st.sampled_from(["true", '"never"', '"free"', "[]", "{}", '"low"', '"high"', "[1, 2]"]))


def _mutate(text: str, data) -> str:
    lines = text.splitlines()
    keyed = [i for i, x in enumerate(lines) if " = " in x]
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.sampled_from(keyed))
        key = lines[i].split(" = ")[0]
        how = data.draw(st.sampled_from(["value", "key", "drop", "section"]))
        if how == "value":
            lines[i] = f"{key} = {data.draw(VALUES)}"
        elif how == "key":
            lines[i] = f"{data.draw(st.from_regex(r'[a-z_]{1,12}', fullmatch=True))} = 1"
        elif how == "drop":
            lines[i] = ""
        else:
            lines.insert(i, f"[{data.draw(st.from_regex(r'[a-z_]{1,8}', fullmatch=True))}]")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), garbage=st.one_of(st.none(), st.binary(min_size=1, max_size=64)))
def test_random_scenario_files(tmp_path_factory, capsys, data, garbage):
    """A mutated reference scenario (values, units, keys, sections) or one with garbage bytes:
    `bandjax scenario --scenario F` prints it (0) or says what is wrong (2)."""
    path = tmp_path_factory.mktemp("sc") / "s.toml"
    raw = _mutate(reference_toml(), data).encode()
    if garbage is not None:
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + garbage + raw[at:]
    path.write_bytes(raw)
    rc, err = run_main(["scenario", "--scenario", path], capsys)
    if rc == 2:
        assert "scenario" in err or str(path) in err, err


def test_named_scenario_values(tmp_path, capsys):
    """The values a user reported: an overflowing and a signalling-NaN bandwidth, each named."""
    for value in ('"1e999999 GB/s"', '"sNaN GB/s"'):
        path = tmp_path / "s.toml"
        path.write_text(reference_toml().replace('wan = "12.5 GB/s"', f"wan = {value}"))
        rc, err = run_main(["scenario", "--scenario", path], capsys)
        assert rc == 2 and "wan" in err and value.strip('"') in err, err


# ------------------------------------------------------------------ hypothesis: argument lists

OPTIONS = {
    "--load": st.lists(st.sampled_from(["0", "0.5", "0.9", "0.9999", "1", "-0.1", "nan", "inf",
                                        "0.5", "x"]), min_size=1, max_size=3),
    "--steps": st.sampled_from(["0", "-1", "2", "100000000000000", "1e14", "nan"]),
    "--seeds": st.sampled_from(["0", "1", "2", "100000", "-3"]),
    "--seed": st.sampled_from(["0", "-1", "3"]),
    "--bandwidth": st.sampled_from(["0", "-1", "nan", "inf", "1e-300", "12.5", "1e300"]),
    "--max-sim-s": st.sampled_from(["0", "nan", "inf", "1e-9", "10"]),
    "--workers": st.sampled_from(["0", "-1", "1"]),
    "--variant": st.lists(st.sampled_from(["adamw", "topk", "nope"]), min_size=1, max_size=2),
}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_wan_arguments(capsys, data, tmp_path_factory):
    """`bandjax wan` with random options: refused with one line, or run (small sizes only, in
    this process)."""
    argv = ["wan", "--scheduler", "inline"]
    for name in data.draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=4, unique=True)):
        value = data.draw(OPTIONS[name])
        argv += [name, *value] if isinstance(value, list) else [name, value]
    if "--steps" not in argv:
        argv += ["--steps", "2"]  # the default 400 is fine but slow for a fuzz case
    if "--variant" not in argv:
        argv += ["--variant", "adamw"]
    run_main(argv, capsys)


def test_a_bandwidth_whose_bytes_a_second_overflow_is_refused(capsys):
    """1e300 GB/s is a finite float, but 1e309 B/s is not: one line naming the value and the most
    allowed (the largest float over 1e9), not a traceback from the overflow."""
    rc, err = run_main(["wan", "--scheduler", "inline", "--bandwidth", "1e300", "--steps", "2",
                        "--variant", "adamw"], capsys)
    assert rc == 2 and "bandwidth = 1e+300" in err and "at most 1.8e+299 GB/s" in err


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=st.lists(st.sampled_from(
    ["scenario", "report", "explore", "wan", "breakeven", "adamw", "topk", "--range", "10", "1",
     "nan", "--over", "enob", "--out", "/dev/full", "--scenario", "/dev/zero", "/", "--results",
     "--basis", "x", "--write", "-h", "", "\x00", "\udcff"]), max_size=6))
def test_random_argument_lists(capsys, argv):
    """Random words from every command's vocabulary: 0 or 2, one line, no traceback. Lists that
    would start a whole report or page are refused by argparse or by their paths, or skipped."""
    words = set(argv)
    if argv[:1] in (["report"], ["explore"]) and not words & {"/dev/full", "/dev/zero", "/",
                                                              "\x00", "\udcff", "-h", "x"}:
        return  # a real report takes a minute; its failures are covered by test_faults.py
    if argv[:1] == ["breakeven"] and "--range" not in words and "-h" not in words:
        return
    # in a fresh folder: a list such as ["scenario", "--write", "report"] writes a file named by a
    # relative path, which must not land in the repository
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            run_main(argv, capsys)
        except SystemExit:  # pragma: no cover - main never lets one through
            raise AssertionError(argv)
        finally:
            os.chdir(here)


# ------------------------------------------------------------------ the cases a user reported

def test_reported_cases(tmp_path, capsys):
    ref = reference_toml()
    msg1 = tmp_path / "msg1.toml"
    assert 'message_bytes = "1.0 MB"' in ref and 'background_bytes = "1.0 MB"' in ref
    msg1.write_text(ref.replace('message_bytes = "1.0 MB"', "message_bytes = 1"))
    bg = tmp_path / "bg.toml"
    bg.write_text(ref.replace('background_bytes = "1.0 MB"', "background_bytes = 1e-6"))
    tiny = tmp_path / "tiny.toml"  # below the least size bandjax computes with
    tiny.write_text(ref.replace('background_bytes = "1.0 MB"', "background_bytes = 1e-300"))
    bad = tmp_path / "latin1.toml"
    bad.write_bytes('wan = "12.5 GB/s" # caf\xe9\n'.encode("latin-1"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        (["wan", "--scenario", msg1, "--scheduler", "inline"], "link arrivals"),
        (["wan", "--scenario", bg, "--scheduler", "inline"], "link arrivals"),
        (["wan", "--scenario", tiny, "--scheduler", "inline"],
         "background_bytes = '1e-300 B': outside the magnitudes"),
        (["wan", "--load", "0.9999", "--scheduler", "inline"], "max_sim_s = 3600 s"),
        # found by test_random_wan_arguments: the bound was met mid-run, after a progress bar
        (["wan", "--load", "0", "--max-sim-s", "1e-9", "--scheduler", "inline"],
         "max_sim_s = 1e-09 s: a run of"),
        (["wan", "--steps", "100000000000000"], str(_limits.MAX_STEPS)),
        (["wan", "--seeds", "1000000"], str(_limits.MAX_SEEDS)),
        (["wan", "--load", "0.5", "0.5"], "given twice"),
        (["breakeven", "adamw", "topk", "--range", "10", "1"], "--range 10 1 GB/s: must satisfy 0 < lo < hi"),
        (["report", "--scenario", "/dev/zero"], "character device"),
        (["report", "--scenario", tmp_path], "is a directory"),
        (["report", "--scenario", fifo], "named pipe"),
        (["report", "--scenario", bad], f"{str(bad)!r} is not UTF-8"),
        (["explore", "--results", tmp_path], "is a directory"),
        (["report", "--out", "/dev/full"], "not a folder"),
        (["report", "--out", "/etc"], "not a bandjax report"),
        (["wan", "--out", "/dev/full", "--steps", "2"], "character device"),
        (["scenario", "--write", "/dev/full"], "character device"),
    ]
    for argv, says in cases:
        rc, err = run_main(argv, capsys)
        assert rc == 2 and says in err, (argv, err)
    assert Path("/dev/full").is_char_device()


def test_unreachable_scheduler(monkeypatch, capsys):
    """A closed port and a port that accepts but never answers: one line within the timeout."""
    monkeypatch.setattr(_limits, "SCHEDULER_TIMEOUT_S", 1.0)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nothing listens there any more
    accepted = []
    stop = threading.Event()

    def accept():
        silent.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(silent.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        for port in (silent.getsockname()[1], closed_port):
            rc, err = run_main(["wan", "--steps", "2", "--variant", "adamw",
                                "--scheduler", f"tcp://127.0.0.1:{port}"], capsys)
            # the bound is 1 s (the message says so); how long the refusal takes on a loaded
            # machine is not a test's to time
            assert rc == 2 and "within 1 s" in err, err
        assert accepted, "the silent port was never connected to"
    finally:
        stop.set()
        t.join()
        silent.close()
        for c in accepted:
            c.close()


def test_interrupt_is_one_line(monkeypatch, capsys):
    """Ctrl-C in a command: status 130 and one line."""
    from bandjax.cli import report as report_cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_cli, "_scenario", interrupted)
    TALLY["inputs"] += 1
    rc = cli.main(["scenario"])
    err = capsys.readouterr().err
    assert rc == 130 and err == "bandjax scenario: interrupted\n", err


# ------------------------------------------------------------------ files

def test_bounded_reader(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(OSError, match=r"'.*big' is 101 B; at most 100 B"):
        _io.read_bounded_text(big, "input", 100)
    assert _io.read_bounded_text(big, "input", 101) == "x" * 101
    with pytest.raises(OSError, match="character device"):
        _io.read_bounded_text("/dev/zero", "input", 100)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _io.read_bounded_text(tmp_path / "none", "input", 100)
    bad = tmp_path / "bad"
    bad.write_bytes(b"ok\xff")
    with pytest.raises(ValueError, match=r"'.*bad' is not UTF-8 text \(byte 0xff at offset 2\)"):
        _io.read_bounded_text(bad, "input", 100)


def test_atomic_write_refuses_non_regular(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "named pipe"), (tmp_path, "directory"), ("/dev/null", "device")):
        with pytest.raises(OSError, match=kind):
            _io.atomic_write_text(path, "x")
    assert Path("/dev/null").is_char_device() and fifo.is_fifo()


def test_a_killed_write_is_cleaned_by_the_next(tmp_path):
    """A write killed before its rename left `.r.nc.*.part` (up to 109 MB) that no later run
    removed: the next write into that folder, of any file, removes it; a live writer's is kept."""
    import time as _time

    script = ("import os, sys, time\n"
              "from bandjax import _io\n"
              "os.fsync = lambda fd: time.sleep(600)\n"  # held between the write and the rename
              "_io.atomic_write_bytes(sys.argv[1], b'x' * 1000)\n")
    p = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "r.nc")],
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        for _ in range(600):
            parts = list(tmp_path.glob(".r.nc.*.part"))
            if parts:
                break
            _time.sleep(0.1)
        assert parts, "the writer never started"
        _io.atomic_write_text(tmp_path / "other.txt", "x")  # the writer is alive: kept
        assert parts[0].exists()
    finally:
        p.kill()
        p.wait()
    _io.atomic_write_text(tmp_path / "other.txt", "y")
    assert not list(tmp_path.glob(".*.part")) and (tmp_path / "other.txt").read_text() == "y"
    assert not (tmp_path / "r.nc").exists()
    # another program's .part file is never ours to remove
    (tmp_path / ".download.part").write_text("z")
    _io.atomic_write_text(tmp_path / "other.txt", "w")
    assert (tmp_path / ".download.part").exists()


# ------------------------------------------------------------------ the page

def test_page_json_has_no_angle_bracket():
    hostile = {"s": "<!--<script>", "t": "</script><b>&", "u": "\u2028"}
    text = explorer._json_script(hostile)
    assert "<" not in text and ">" not in text and "&" not in text
    import json

    assert json.loads(text) == hostile


# ------------------------------------------------------------------ a few through a subprocess

@pytest.mark.parametrize("argv,says", [
    (["report", "--scenario", "/dev/zero"], "character device"),
    (["wan", "--load", "0.5", "0.5"], "given twice"),
])
def test_subprocess(argv, says):
    TALLY["inputs"] += 1
    p = subprocess.run([sys.executable, "-m", "bandjax", *argv], capture_output=True, text=True,
                       timeout=CASE_S * 3, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and says in p.stderr, p.stderr
    TALLY["clear errors"] += 1


def test_tally():
    """Printed with -s; fails if any case traced back or hung (they fail their own test too)."""
    print("\nhostile inputs:", dict(TALLY))
    assert TALLY["tracebacks"] == 0 and TALLY["hangs"] == 0


# ------------------------------------------------------------------ calibrate and store inputs

CELLS = st.one_of(st.sampled_from(["adamw", "E'", "zz", "", "nan", "inf", "-1", "1e999999",
                                   "4.1 ms", "4.1 parsecs", "12.5 GB/s", "0", "1;2;x", '"']),
                  st.floats(allow_nan=True, allow_infinity=True).map(repr),
                  st.text(max_size=6))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_measurement_tables(tmp_path_factory, capsys, data):
    """Random CSV tables of measurements through `bandjax calibrate`: a fit (0), fields the rows
    cannot tell apart (1, said in a table), or one clear line (2); never a traceback or a hang."""
    header = data.draw(st.lists(st.sampled_from(["variant", "step_ms", "step", "bandwidth",
                                                 "budget", "model", "bogus", "workers_per_dc"]),
                                min_size=1, max_size=4, unique=True))
    rows = data.draw(st.lists(st.lists(CELLS, min_size=len(header), max_size=len(header)),
                              max_size=4))
    path = tmp_path_factory.mktemp("cal") / "runs.csv"
    path.write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n")
    fit = data.draw(st.sampled_from([["d.adamw"], ["gpu"], ["nope"], ["d.adamw", "wan_Bps"]]))
    TALLY["inputs"] += 1
    with bounded():
        rc = cli.main(["calibrate", str(path), "--fit", *fit])
    err = capsys.readouterr().err
    assert rc in (0, 1, 2), (rc, err)
    assert "Traceback" not in err
    if rc == 2:
        TALLY["clear errors"] += 1
        assert len([x for x in err.splitlines() if x.strip()]) == 1, err


def test_calibrate_and_store_named_cases(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    # found by test_random_measurement_tables: a carriage return alone in a field was a csv.Error
    # traceback
    cr = tmp_path / "cr.csv"
    cr.write_bytes(b"variant,step_ms,step,bandwidth\nadamw,adamw,adamw,adamw\nadamw,adamw,adamw,\r0\n")
    cases = [
        (["calibrate", cr, "--fit", "d.adamw"], "exactly one column"),
        (["calibrate", "/dev/zero", "--fit", "d.adamw"], "character device"),
        (["calibrate", tmp_path, "--fit", "d.adamw"], "is a directory"),
        (["calibrate", empty, "--fit", "d.adamw"], "calibrate: error"),
        (["store", tmp_path / "s.zarr", "--points", "0"], "--points"),
        (["store", tmp_path / "s.zarr", "--bandwidth", "10", "1"], "--bandwidth"),
        (["store", "/dev/full", "--points", "10"], "/dev/full"),
    ]
    for argv, says in cases:
        rc, err = run_main(argv, capsys)
        assert rc == 2 and says in err, (argv, err)


def test_sweep_larger_than_memory_is_refused_before_work(monkeypatch):
    """1.8e9 grid points (reported to sit idle forever) and a grid over the memory available are
    refused at once, pointing to the chunked store and the winner map."""
    import numpy as np

    import bandjax
    from bandjax import _limits

    from bandjax import grid

    # refused before any work: no grid is dispatched (counted, not timed)
    calls = []
    monkeypatch.setattr(grid, "dispatch_grid", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError, match=r"bandjax\.store\.write.*bandjax\.winner"):
        bandjax.sweep(bandwidth=np.logspace(-1, 3, 100_000), budget=np.linspace(1, 200, 18_000))
    assert calls == []
    monkeypatch.undo()
    # the estimate is every value a point and variant holds (counted from a small sweep's own
    # arrays, rounded up: the variant-free ones are counted per variant), 8 B each, twice (the
    # arrays and their copy into the dataset): over half of a 9.54 MiB machine
    small = bandjax.sweep(bandwidth=np.logspace(-1, 3, 4))
    per_cell = math.ceil(sum(v.size for v in small.data_vars.values()) / (4 * small.sizes["variant"]))
    mib = 4_000 * small.sizes["variant"] * per_cell * 8 * 2 / 2**20
    assert mib > 10e6 / 2**20 / 2
    monkeypatch.setattr(_limits, "available_memory_bytes", lambda: 10e6)
    with pytest.raises(ValueError, match=rf"{mib:.2f}\d* MiB in memory; 9\.53\d* MiB is available"):
        bandjax.sweep(bandwidth=np.logspace(-1, 3, 4_000))
    assert bandjax.sweep(bandwidth=np.logspace(-1, 3, 4_000), quantities=["step_s"]).step_s.size == 24_000


def test_a_per_link_mesh_counts_its_links_before_a_sweep_starts(monkeypatch):
    import numpy as np

    import bandjax
    from bandjax import _limits, grid

    # a K = 100 mesh of its own links holds 9,900 link times a point: 1e5 bandwidths peaked at
    # 7.7 GB where the outputs alone are 5 MB; the estimate counts them (points x links x 8 B,
    # twice), so the sweep is refused at once on a 16 GiB machine
    K = 100
    table = np.full((K, K), 12.5e9)
    np.fill_diagonal(table, 0.0)
    mesh = bandjax.reference().replace(topology="mesh").with_links(table)
    ring = mesh.replace(topology="ring")
    assert (grid.links_per_point(mesh), grid.links_per_point(ring),
            grid.links_per_point(bandjax.reference())) == (9_900, 100, 0)
    monkeypatch.setattr(_limits, "available_memory_bytes", lambda: 16 * 2**30)
    gib = 2 * (1e5 * 9_900 + 6e5 * 2) * 8 / 2**30  # step_s and its intermediates, and the links'
    with bounded(10), pytest.raises(ValueError, match=rf"each point with the times of 9,900 links\) "
                                                      rf"needs about {gib:.2f}\d* GiB in memory"):
        bandjax.sweep(mesh, bandwidth=np.geomspace(0.1, 1000, 100_000), quantities=["step_s"])
    # the same sweep on a ring holds K link times a point: allowed
    assert bandjax.sweep(ring, bandwidth=np.geomspace(0.1, 1000, 100_000),
                         quantities=["step_s"]).step_s.shape == (100_000, 6)
    # a topology axis that holds the mesh counts the mesh's links
    g = bandjax.sweepargs.parse(ring, topology=["ring", "mesh"], bandwidth=[1.0, 10.0])
    assert grid.links_per_point(ring, g) == 9_900


def test_a_winner_map_counts_a_per_link_meshs_links(monkeypatch):
    import numpy as np

    import bandjax
    from bandjax import _limits

    # 20,000 points of a K = 100 mesh hold 9,900 link times each (8 B, twice): 2.95 GiB; the map's
    # own arrays are 0.38 MiB. On a 4 GiB machine it is refused at once, naming the links; in
    # parts of 1,000 points the link times are held for a part at a time, and it runs
    K = 100
    table = np.full((K, K), 12.5e9)
    np.fill_diagonal(table, 0.0)
    mesh = bandjax.reference().replace(topology="mesh").with_links(table)
    monkeypatch.setattr(_limits, "available_memory_bytes", lambda: 4 * 2**30)
    bandwidth = np.geomspace(0.1, 1000, 20_000)
    gib = (20_000 * 20 + 2 * 8 * 9_900 * 20_000) / 2**30
    with bounded(10), pytest.raises(ValueError, match=rf"each with the times of 9,900 links, needs "
                                                      rf"about {gib:.2f}\d* GiB.*chunk=N"):
        bandjax.winner(mesh, bandwidth=bandwidth)
    assert bandjax.winner(mesh, bandwidth=bandwidth, chunk=1_000).winner.shape == (20_000,)


def test_winner_map_larger_than_memory_is_refused(monkeypatch):
    import numpy as np

    import bandjax
    from bandjax import _limits

    with pytest.raises(ValueError, match=r"of=\"winner\""):
        bandjax.winner(bandwidth=np.logspace(-1, 3, 100_000), budget=np.linspace(1, 200, 30_000))
    # 2,000 points x 20 B (bandjax.winmap.WINNER_BYTES_PER_POINT) = 39.06 KiB: over half of a
    # 50 kB machine
    monkeypatch.setattr(_limits, "available_memory_bytes", lambda: 50e3)
    with pytest.raises(ValueError, match=r"39\.06 KiB in memory"):
        bandjax.winner(bandwidth=np.logspace(-1, 3, 2_000))


# ------------------------------------------------------------------ the engine's time budget

def _sweep_estimate(sc, variants, loads, seeds, steps):
    """(link arrivals, wall s on one worker) of a sweep, from the engine's own estimate of each
    run and the measured rates of bandjax._limits: what the refusal must quote."""
    from events.engine import estimate_events, wall_s
    from events.plan import build

    est = {"messages": 0.0, "background": 0.0, "total": 0.0}
    for v in variants:
        for x in loads:
            e = estimate_events(build(sc, v), x, steps)
            for k in est:
                est[k] += seeds * e[k]
    return est, wall_s(est)


def test_a_sweep_over_its_time_budget_is_refused_at_once(capsys, monkeypatch):
    """A sweep estimated at hours is refused before any run starts (a sweep of 72,000 runs
    included: the estimate is made once per grid point and load, not once per seed), quoting the
    link arrivals, the rates, the time it would need and the budget."""
    import bandjax
    import events
    from events.engine import duration_text

    sc = bandjax.reference()
    est, need_s = _sweep_estimate(sc, ["adamw"], [0.9], 100, 1_000_000)
    assert need_s > _limits.MAX_ENGINE_S * 10  # hours, against the 10 min budget
    from events import engine

    # refused before any run: no simulation starts (counted, not timed)
    runs = []
    real = engine.run_summary
    monkeypatch.setattr(engine, "run_summary", lambda *a, **k: runs.append(a) or real(*a, **k))
    with pytest.raises(ValueError) as e:
        events.sweep(sc, load=0.9, seed=list(range(100)), steps=1_000_000, variant="adamw",
                     scheduler="inline", progress=False)
    assert runs == []
    msg = str(e.value)
    assert f"about {est['total']:.3g} link arrivals" in msg, msg
    assert f"at {_limits.ENGINE_EVENTS_PER_S:.2g}/s" in msg
    assert f"at {_limits.ENGINE_MESSAGES_PER_S:.2g}/s" in msg
    assert f"about {duration_text(need_s)} on 1 worker(s)" in msg, msg
    assert "the budget is 10 min (600 s)" in msg and "--budget-s" in msg
    # many seeds of short runs: 72,000 runs refused before the first
    with pytest.raises(ValueError, match="the sweep's 72000 runs would simulate about"):
        events.sweep(sc, load=[0.5, 0.9], seed=list(range(2000)), steps=400,
                     bandwidth=[1.0, 10.0, 100.0], scheduler="inline", progress=False)
    assert runs == []
    # the command line: one line, the same figures; a LocalCluster of 2 divides the time by 2
    rc, err = run_main(["wan", "--load", "0.9", "--steps", "1000000", "--seeds", "100",
                        "--variant", "adamw"], capsys)
    assert rc == 2 and f"about {duration_text(need_s / min(2, os.cpu_count()))} on " in err, err
    assert "the budget is 10 min" in err


def test_the_budget_is_a_bound_not_a_guess():
    """The estimate scales with the work and the budget is the line: a sweep just under it passes
    the check, the same sweep over it is refused; --budget-s raises it and takes only seconds in
    (0, 86400]; the count bound still holds whatever the budget."""
    import math

    import bandjax
    import events
    from events import engine

    sc = bandjax.reference()
    est, need_s = _sweep_estimate(sc, ["adamw"], [0.9], 3, 400)
    assert engine.check_budget(est, need_s * 1.01) == pytest.approx(need_s, rel=1e-12)
    assert engine.check_budget(est, need_s, workers=2) == pytest.approx(need_s / 2, rel=1e-12)
    with pytest.raises(ValueError, match="the budget is"):
        engine.check_budget(est, need_s * 0.99)
    # messages cost more than other jobs' transfers (a SimPy event each)
    assert _limits.ENGINE_MESSAGES_PER_S < _limits.ENGINE_EVENTS_PER_S
    est2, need2 = _sweep_estimate(sc, ["adamw"], [0.9], 6, 400)
    assert need2 == pytest.approx(2 * need_s, rel=1e-12) and est2["total"] == pytest.approx(2 * est["total"])
    with pytest.raises(ValueError, match="the budget is"):
        events.sweep(sc, load=0.9, seed=[0, 1, 2], steps=400, variant="adamw", scheduler="inline",
                     progress=False, budget_s=need_s * 0.99)
    for bad in (0, -1.0, math.nan, "600", True):
        with pytest.raises(ValueError, match=f"budget_s = {bad!r}"):
            events.sweep(sc, load=0.5, steps=2, variant="adamw", scheduler="inline", budget_s=bad)
    # the count bound holds whatever the budget
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_limits, "MAX_EVENTS", est["total"] / 2)
        with pytest.raises(ValueError, match="MAX_EVENTS"):
            events.sweep(sc, load=0.9, seed=[0, 1, 2], steps=400, variant="adamw",
                         scheduler="inline", progress=False, budget_s=math.inf)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "1e9"])
def test_wan_budget_option_is_checked(capsys, value):
    rc, err = run_main(["wan", "--budget-s", value, "--steps", "2", "--scheduler", "inline"], capsys)
    from bandjax.cli._setup import sig

    assert rc == 2 and f"--budget-s {sig(float(value))}: must be a number of seconds in (0, 86400]" in err


@pytest.mark.parametrize("case", ["reference", "mesh8", "small messages", "long budget"])
def test_the_shared_wan_section_sizes_its_runs_within_the_budget(case):
    """The report's shared-WAN section plans its runs with its own (slower, rounded down) rates;
    the engine's budget check, given the section's budget, must let them through: the sized runs'
    estimate at the measured rates fits the budget on the section's workers."""
    import bandjax
    from events.engine import estimate_events, wall_s
    from events.plan import build

    from bandjax.report.sections import shared_wan

    sc = {"reference": bandjax.reference(),
          "mesh8": bandjax.reference().replace(dcs=8.0, topology=1.0),
          "small messages": bandjax.reference().replace(wan_message_B=1e4),
          "long budget": bandjax.reference()}[case]
    budget_s = 3600.0 if case == "long budget" else shared_wan.BUDGET_S
    workers = 2
    sized = shared_wan.size_runs(sc, list(sc.ids), [0.0, 0.5, 0.9], 8, 400, budget_s, workers)
    at_m = sc.replace(wan_message_B=sized["message_B"])
    est = {"messages": 0.0, "background": 0.0, "total": 0.0}
    for v in sc.ids:
        for x in sized["loads"]:
            e = estimate_events(build(at_m, v), x, sized["steps"])
            for k in est:
                est[k] += sized["seeds"] * e[k]
    assert sized["loads"], sized["notes"]
    assert wall_s(est, min(workers, os.cpu_count())) <= budget_s, (wall_s(est, workers), sized)
