"""Ctrl-C at any moment of `bandjax breakeven`, `report`, `store` and `explore`: exit status 130
and one line on stderr (or 0 if the command had finished), and every output either absent (as it
was) or complete. Subprocesses, outputs under tmp_path; a handful of moments per command, from
0.1 s (the interpreter's own start takes the first few tens of milliseconds, before any of
bandjax's code runs) to past the command's end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MOMENTS_S = (0.1, 0.3, 0.7, 1.5, 3.0, 6.0, 12.0)


def _run(argv, at_s, cwd):
    """The status of ``argv`` sent SIGINT at ``at_s``: a moment that falls in the interpreter's
    own start (a slow machine can take a few hundred ms there) is tried again, up to 3 times."""
    for _ in range(3):
        rc = _run_once(argv, at_s, cwd)
        if rc is not None:
            return rc
    pytest.skip(f"SIGINT at {at_s} s fell in the interpreter's own start 3 times")


@contextlib.contextmanager
def _children_start_with_default_sigint():
    """Around starting a command: SIGINT handled (not ignored) in this process, so the command
    starts with SIGINT at its default action (an exec resets a handled signal to its default but
    keeps an ignored one ignored). A test run started in the background of a shell without job
    control (a CI step's `cmd &`, nohup) inherits SIGINT ignored; its commands would too, Python
    would then install no KeyboardInterrupt handler, and a SIGINT before bandjax installs its own
    would be ignored and the command run to its end (a whole report, past the 120 s below on a
    loaded machine): the shell's wish, not what this tests. (No preexec_fn: a fork of this
    process, which runs jax's threads, warns and may deadlock.)"""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # the int 1 where inherited
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupted(argv, at_s, cwd, env) -> subprocess.Popen:
    """``bandjax argv`` sent SIGINT at ``at_s``, waited for (its ``err``: stderr, decoded)."""
    with _children_start_with_default_sigint():
        p = subprocess.Popen([sys.executable, "-m", "bandjax", *map(str, argv)], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(at_s)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # pragma: no cover - a hang is the failure
        p.kill()
        p.communicate()
        pytest.fail(f"{argv} interrupted at {at_s} s did not end within 120 s")
    p.err = err.decode()
    return p


def _run_once(argv, at_s, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO), "BANDJAX_REPORT_TEST_SIZE": "small"}
    p = _interrupted(argv, at_s, cwd, env)
    err = p.err
    before_python = p.returncode == -signal.SIGINT and not err.strip()  # no handler at all yet
    if before_python or (p.returncode != 130 and "KeyboardInterrupt" in err and "/bandjax/" not in err):
        return None  # the interpreter's own start (site-packages, runpy), before bandjax's code
    assert p.returncode in (0, 130), (argv, at_s, p.returncode, err)
    if p.returncode == 130:
        assert err.count("\n") == 1 and err.endswith(": interrupted\n") and err.startswith("bandjax"), \
            (argv, at_s, err)
    return p.returncode


def _report_complete(out: Path) -> bool:
    if not out.exists():
        return False
    json.loads((out / "results.json").read_text())  # whole JSON, or this raises
    assert (out / "results.md").read_text().startswith("# ")
    return True


@pytest.mark.slow
@pytest.mark.parametrize("at_s", MOMENTS_S)
def test_breakeven(tmp_path, at_s):
    _run(["breakeven", "adamw", "band_switch"], at_s, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("at_s", MOMENTS_S)
def test_report(tmp_path, at_s):
    out = tmp_path / "rep"
    rc = _run(["report", "--quiet", "--out", out], at_s, tmp_path)
    complete = _report_complete(out)  # raises if a file there is not whole
    assert complete or rc == 130


@pytest.mark.slow
@pytest.mark.parametrize("at_s", MOMENTS_S)
def test_store(tmp_path, at_s):
    out = tmp_path / "s.zarr"
    rc = _run(["store", out, "--points", 3000, "--quiet"], at_s, tmp_path)
    if rc == 0 or out.exists():
        import bandjax as bj

        ds = bj.store.open(out)  # complete: opens, every value present
        assert ds.sizes["bandwidth"] == 3000 and bool(ds.step_s.notnull().all())


@pytest.mark.slow
@pytest.mark.parametrize("at_s", MOMENTS_S)
def test_explore(tmp_path, at_s, reference_report):
    results = reference_report[0] / "results.json"
    out = tmp_path / "page"
    rc = _run(["explore", "--results", results, "--out", out], at_s, tmp_path)
    page = out / "explorer.html"
    if rc == 0 or page.exists():
        assert page.read_text().rstrip().endswith("</html>")


def test_a_command_started_with_sigint_ignored_keeps_ignoring_it(tmp_path):
    # a background job of a shell without job control: Ctrl-C is not meant for it
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the command's exec
    try:
        p = subprocess.Popen([sys.executable, "-m", "bandjax", "breakeven", "adamw", "band_switch"],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        signal.signal(signal.SIGINT, before)
    for _ in range(5):  # through the interpreter's start, bandjax's imports and the search
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and err.decode() == "", (p.returncode, err)
    assert "GB/s" in out.decode()


# Ctrl-C after the interpreter's own start of the installed `bandjax` script: from 1 s on the
# command is past that start even on a loaded machine (its imports, then its work), so those
# moments must reach bandjax's code every time
CONSOLE_MOMENTS_S = (0.05, 0.15, 0.3, 0.6, 1.0, 1.5, 2.0)
PAST_START_S = 1.0


def _console_script() -> Path | None:
    """The installed ``bandjax`` script of this interpreter's environment (or, failing that, the
    one on PATH); None if bandjax is not installed with its script."""
    beside = Path(sys.executable).with_name("bandjax")
    if beside.is_file():
        return beside
    found = shutil.which("bandjax")
    return Path(found) if found else None


def _console_once(script: Path, argv, at_s, cwd):
    """(status, stderr, whether the command was still running when SIGINT was sent)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "BANDJAX_REPORT_TEST_SIZE": "small"}
    with _children_start_with_default_sigint():
        p = subprocess.Popen([str(script), *map(str, argv)], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(at_s)
    running = p.poll() is None
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=120)  # a hang guard, not a speed check
    except subprocess.TimeoutExpired:  # pragma: no cover - a hang is the failure
        p.kill()
        p.communicate()
        pytest.fail(f"bandjax {argv} interrupted at {at_s} s did not end within 120 s")
    return p.returncode, err.decode(), running


def _in_interpreter_start(rc: int, err: str) -> bool:
    """SIGINT landed before any of bandjax's code ran: before Python had a handler (killed by the
    signal, silently) or while site-packages or the script's own first line loaded (a traceback
    with no frame in the bandjax package)."""
    return (rc == -signal.SIGINT and not err.strip()) or (
        "KeyboardInterrupt" in err and "/bandjax/" not in err)


@pytest.mark.slow
def test_console_script_interrupted_at_any_moment_on_busy_cores(tmp_path):
    # The installed script imports bandjax.cli (every command module, the units) before main()
    # runs; a Ctrl-C during those imports must already be one line and status 130. Both cores
    # are kept busy so the imports take long enough for several moments to land in them.
    script = _console_script()
    if script is None:
        pytest.skip("no installed `bandjax` script beside this interpreter or on PATH")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for at_s in CONSOLE_MOMENTS_S:
            for attempt in range(3):
                out = tmp_path / f"out-{at_s}-{attempt}"
                rc, err, running = _console_once(script, ["report", "--quiet", "--out", out], at_s,
                                                 tmp_path)
                if not _in_interpreter_start(rc, err):
                    break
                assert at_s < PAST_START_S, (at_s, rc, err)
            else:
                continue  # three times in the interpreter's own start: nothing of bandjax's ran
            assert running, f"the small report ended before {at_s} s: move the moments earlier"
            assert rc == 130, (at_s, rc, err)
            assert "Traceback" not in err and err.count("\n") == 1 and err.endswith("interrupted\n"), \
                (at_s, err)
    finally:
        for p in busy:
            p.kill()
            p.wait()


def _marked(mark: str) -> list[int]:
    """Processes whose environment holds ``mark`` (Linux /proc), this one's children included."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                pass
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
@pytest.mark.parametrize("at_s", (0.4, 1.0, 2.5))
def test_report_interrupted_while_its_engine_runs_ahead_leaves_no_worker(tmp_path, at_s):
    """The full-size report starts the shared-WAN engine's workers before it loads jax (not the
    small in-process runs of the other cases here): a Ctrl-C then is 130 and one line, the output
    absent, and no worker left running."""
    mark = f"BANDJAX_TEST_MARK={os.getpid()}-{at_s}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BANDJAX_CACHE_DIR": str(tmp_path / "cache"),
           mark.split("=")[0]: mark.split("=")[1]}
    env.pop("BANDJAX_REPORT_TEST_SIZE", None)
    p = _interrupted(["report", "--out", tmp_path / "out", "--quiet"], at_s, tmp_path, env)
    err = p.err
    if p.returncode == -signal.SIGINT and not err.strip():
        pytest.skip("the SIGINT fell in the interpreter's own start")
    assert p.returncode == 130 and err == "bandjax report: interrupted\n", (p.returncode, err)
    assert not (tmp_path / "out").exists()
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == []
