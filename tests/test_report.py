"""bandjax report: the documented keys, both bases, units and assumptions named, whole files."""

import json

import pytest

import bandjax
from bandjax import report
from bandjax.cli import main

IDS = bandjax.variants.IDS


@pytest.fixture(scope="module")
def results(reference_report):
    return reference_report[1]


def test_documented_keys(results):
    r = results
    for vid in IDS:
        assert set(r["step_ms"][vid]) == {"free", "low", "high"}
        assert set(r["hot_spots"][vid]) == {"free", "low", "high"}
        for b in ("free", "low", "high"):
            assert sum(r["hot_spots"][vid][b].values()) == pytest.approx(1.0, rel=1e-12)
            e = r["energy"]["per_step_J"][vid][b]
            assert e["total"] == pytest.approx(e["compute"] + e["network"] + e["modules"], rel=1e-12)
        for basis in ("hypothesis", "exact"):
            assert r["time_to_target_s"][basis][vid] > 0
            assert set(r["energy"]["to_target_kJ"][basis][vid]) == {"free", "low", "high"}
            for preset in ("study", "llama3-8b"):
                assert r["model_size"][preset]["time_to_target_s"][basis][vid] > 0
            assert len(r["sync_every_H"]["time_to_target_s"][basis][vid]) == len(r["sync_every_H"]["H"])
        assert r["bytes_per_worker"][vid] > 0 and 0 < r["compute_share"][vid] < 1
    assert set(r["stages_ms"]) >= {"port", "optics", "fpga", "compute"}
    assert set(r["stages_ms"]["compute"]) == {"free", "low", "high"}
    assert {1, 10, 100} <= set(r["sync_every_H"]["H"])
    assert r["budget_break_even_GFLOPs"] > 0


def test_bases_differ_only_for_the_switch(results):
    t = results["time_to_target_s"]
    for vid in IDS:
        if vid != "band_switch":
            assert t["hypothesis"][vid] == t["exact"][vid]
    # exact basis: E' takes the exact band's 2,667 steps (docs/model.md s6) instead of E's 1,800
    assert results["steps_to_target"]["exact"]["band_switch"] == 2667
    assert results["steps_to_target"]["hypothesis"]["band_switch"] == 1800
    ratio = t["exact"]["band_switch"] / t["hypothesis"]["band_switch"]
    assert ratio == pytest.approx(2667 / 1800, rel=1e-12)


def test_model_size_scales_with_P_except_d(results):
    # T(P) = steps (k (step - d) + d), k = P / P_study (docs/model.md s9)
    k = 8.03e9 / 7_916_736
    d = bandjax.reference().fixed_s
    for vid in IDS:
        steps = results["steps_to_target"]["exact"][vid]
        small = results["time_to_target_s"]["exact"][vid] / steps
        big = results["model_size"]["llama3-8b"]["time_to_target_s"]["exact"][vid] / steps
        assert big == pytest.approx(k * (small - d[vid]) + d[vid], rel=1e-12)


def test_markdown_names_units_and_assumptions(results):
    md = report.markdown(results)
    for words in ("(ms)", "(s)", "(J)", "(kJ)", "GB/s", "GFLOP/s", "hypothesis", "exact",
                  "calibrated", "single seed", "steps to target are unchanged",
                  "## Hot spots", "## Energy", "## Model size", "## Syncing every H steps"):
        assert words in md, words
    assert "4.075" in md  # the AdamW step of docs/model.md s12, rendered from the results


def test_write_is_whole_or_nothing(tmp_path, monkeypatch, results):
    out = tmp_path / "rep"
    monkeypatch.setattr(report, "build", lambda scenario=None, ctx=None: results)

    def broken(results):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(report, "markdown", broken)
    with pytest.raises(RuntimeError):
        report.write(out)
    assert not (out / "results.json").exists() and not (out / "results.md").exists()
    assert list(out.glob("*.part")) == []


def test_cli_report(tmp_path, capsys, monkeypatch, results):
    """The command writes the report it builds and prints its headline; the build itself is the
    session's reference report (tests/conftest.py), written by the same `report.write`."""
    from bandjax.report.sections import headline

    built = []
    monkeypatch.setattr(report, "build", lambda scenario=None, ctx=None: built.append(scenario) or results)
    assert main(["report", "--out", str(tmp_path)]) == 0
    assert len(built) == 1 and built[0] == bandjax.reference()
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["schema_version"] == report.SCHEMA_VERSION
    assert r["step_ms"]["adamw"]["free"] == pytest.approx(4.075, abs=5e-4)  # docs/model.md s12
    assert (tmp_path / "results.md").read_text().startswith("# When does")
    out = capsys.readouterr().out
    assert all(line in out for line in headline.lines(results)) and headline.lines(results)


def test_written_files_have_ordinary_permissions(tmp_path):
    import os

    from bandjax._io import atomic_write_text

    umask = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(umask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
