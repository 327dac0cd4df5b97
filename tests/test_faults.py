"""The report folder is one unit: killed or interrupted at any moment, `bandjax report --out DIR`
leaves DIR as the old whole report or the new whole one (bandjax.report.write's swap)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bandjax import _wan_runs, report
from bandjax.report import explorer

REPO = Path(__file__).resolve().parents[1]
SEED = 20240611  # the kill moments are drawn from this seed
KILLS = 3  # subprocess runs killed at random moments


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def old_report(folder: Path) -> dict[str, bytes]:
    """A whole report as an earlier run would have left it (marked old in every file)."""
    (folder / "figures").mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"schema_version": 1, "old": True}))
    (folder / "results.md").write_text("old report\n")
    for name in ("bandwidth.svg", "bandwidth.png", "stages.svg"):
        (folder / "figures" / name).write_text(f"old {name}")
    return snapshot(folder)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}."))


def is_new_whole(folder: Path) -> bool:
    """results.json of a new run whose every figure is in figures/."""
    r = json.loads((folder / "results.json").read_text())
    if r.get("old"):
        return False
    return all((folder / e[k]).is_file() for e in r.get("figures", []) for k in ("svg", "png"))


def fake_build(stop_after: int | None):
    """A stand-in for report.build that writes figures into the folder it is given, one at a
    time, and is interrupted (Ctrl-C) after ``stop_after`` of them."""
    def build(scenario=None, ctx=None):
        folder = Path(ctx["out"]) / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        entries = []
        for i, name in enumerate(("bandwidth", "stages", "energy")):
            if stop_after is not None and i == stop_after:
                raise KeyboardInterrupt
            (folder / f"{name}.svg").write_text(f"new {name}")
            (folder / f"{name}.png").write_text(f"new {name}")
            entries.append({"svg": f"figures/{name}.svg", "png": f"figures/{name}.png"})
        return {"schema_version": 1, "figures": entries}
    return build


def test_interrupted_after_two_figures_keeps_old(tmp_path, monkeypatch):
    out = tmp_path / "out"
    before = old_report(out)
    monkeypatch.setattr(report, "build", fake_build(stop_after=2))
    monkeypatch.setattr(report, "markdown", lambda r: "new\n")
    with pytest.raises(KeyboardInterrupt):
        report.write(out)
    assert snapshot(out) == before and leftovers(out) == []


def test_finished_replaces_whole_and_keeps_page(tmp_path, monkeypatch):
    out = tmp_path / "out"
    old_report(out)
    (out / "explorer.html").write_text("page")
    monkeypatch.setattr(report, "build", fake_build(stop_after=None))
    monkeypatch.setattr(report, "markdown", lambda r: "new\n")
    report.write(out)
    assert is_new_whole(out) and leftovers(out) == []
    # the old report's figure that the new one does not draw is gone; the page stays
    assert not (out / "figures" / "stages.svg").read_text().startswith("old")
    assert (out / "explorer.html").read_text() == "page"


def test_killed_between_the_renames_recovers(tmp_path, monkeypatch):
    """SIGKILL after the old folder was renamed aside and before the new one was renamed in: the
    next run, or a reader of results.json, finds the old whole report back."""
    out = tmp_path / "out"
    before = old_report(out)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs, as a killed writer's
    os.rename(out, tmp_path / f".out.bandjax-old-{dead.pid}")
    (tmp_path / f".out.bandjax-new-{dead.pid}").mkdir()  # its half-built new report
    assert not out.exists()
    with pytest.raises(ValueError, match="schema_version = 1; this bandjax reads version"):  # the old report is restored, read
        explorer.read_results(out / "results.json", None)
    assert snapshot(out) == before and leftovers(out) == []


def test_interrupt_between_the_renames_restores(tmp_path, monkeypatch):
    out = tmp_path / "out"
    before = old_report(out)
    monkeypatch.setattr(report, "build", fake_build(stop_after=None))
    monkeypatch.setattr(report, "markdown", lambda r: "new\n")
    real = os.rename
    calls = []

    def rename(src, dst):
        calls.append(dst)
        real(src, dst)
        if len(calls) == 1:  # the old folder is aside: Ctrl-C now
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(KeyboardInterrupt):
        report.write(out)
    monkeypatch.setattr(os, "rename", real)
    assert snapshot(out) == before and leftovers(out) == []


def test_refuses_what_is_not_a_report(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(OSError, match="not a bandjax report"):
        report.write(mine)
    assert (mine / "thesis.tex").read_text() == "years of work"
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(OSError, match="not a folder"):
        report.write(afile)
    assert afile.read_text() == "x"


@pytest.mark.slow
@pytest.mark.parametrize("k", range(KILLS))
def test_killed_report_subprocess(tmp_path, k):
    """`bandjax report` (small shared-WAN section) killed by SIGKILL or SIGINT at a seeded random
    moment: the folder is the old whole report, or the new whole one; the next start cleans up."""
    rng = random.Random(SEED + k)
    sig = (signal.SIGKILL, signal.SIGINT, signal.SIGKILL)[k % 3]
    # SIGINT after the imports (about 4 s here): an interrupt while Python imports jax is
    # outside bandjax's hands
    delay = rng.uniform(6.0, 10.0) if sig == signal.SIGINT else rng.uniform(1.0, 10.0)
    out = tmp_path / "out"
    before = old_report(out)
    env = {**os.environ, "PYTHONPATH": str(REPO), _wan_runs.TEST_SIZE_ENV: "small"}
    p = subprocess.Popen([sys.executable, "-m", "bandjax", "report", "--out", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    time.sleep(delay)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    err = err.decode(errors="replace")
    assert out.is_dir() or leftovers(out), "the report folder vanished"
    report.recover(out)
    assert snapshot(out) == before or is_new_whole(out), (delay, sig)
    assert leftovers(out) == []
    if sig == signal.SIGINT and p.returncode != 0:
        assert p.returncode == 130 and "Traceback" not in err, err
        assert err.strip().splitlines()[-1] == "bandjax report: interrupted", err
