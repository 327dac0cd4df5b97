"""The break-even report section and the `bandjax breakeven` command."""

import json

import numpy as np
import pytest

import bandjax
from bandjax import breakeven as be
from bandjax.cli import main
from bandjax.report.sections import breakeven as section

REF = bandjax.reference()


@pytest.fixture(scope="module")
def results(reference_report):
    """The session's reference report (tests/conftest.py), which holds this section's keys."""
    return reference_report[1]


def test_results_are_json_and_list_every_pair(results):
    json.dumps(results, allow_nan=False)
    entries = results["break_even_GBps"]
    # 15 pairs; the 5 with E' twice (one per basis), the others once with basis null.
    assert len(entries) == 20
    assert sum(e["basis"] is None for e in entries) == 10
    assert {e["basis"] for e in entries if "band_switch" in (e["a"], e["b"])} == {"hypothesis", "exact"}


def test_break_even_entries_match_the_search(results):
    for e in results["break_even_GBps"]:
        r = be.break_even(REF, e["a"], e["b"], basis=e["basis"] or "hypothesis")
        at = r.at()
        np.testing.assert_allclose(e["GBps"], np.array(at["x"]) / 1e9, rtol=1e-12)
        assert e["winner_below"] == at["winners"][0]
    e = next(e for e in results["break_even_GBps"]
             if (e["a"], e["b"], e["basis"]) == ("band_switch", "adamw", "exact"))
    assert e["winner_below"] == "band_switch" and e["winner_above"] == "adamw"


def test_enob_and_budget_and_sensitivity(results):
    enob = {(e["a"], e["b"], e["basis"]): e for e in results["enob_break_even"]}
    e = enob[("band_switch", "adamw", "hypothesis")]
    got = dict(zip(e["GBps"], e["enob"]))
    assert got[1.0] == 8.0 and got[12.5] is None  # E' vs AdamW crosses at 1.57 GB/s (hypothesis)
    assert results["budget_break_even"]["numeric_GFLOPs"] == pytest.approx(140.0, rel=1e-12)
    s = [s for s in results["sensitivity"] if s["quantity"] == "bandwidth_break_even"]
    assert len(s) == sum(len(e["GBps"]) for e in results["break_even_GBps"])
    assert all(isinstance(v, float) for x in s for v in x["elasticity"].values())


def test_markdown_states_crossings_with_units_and_basis(results):
    md = section.markdown(results)
    assert "| E' vs AdamW | exact | free | 0.8302 GB/s (6.642 Gb/s) | E' | AdamW |" in md
    assert "hypothesis = E' takes E's steps" in md
    assert "140 GFLOP/s" in md
    # ENOB break-evens in bits under a bandwidth header; elasticities' unit named, rounding left out
    lowest = be.enob_break_even(REF, "E'", "adamw", [1.0, 2.0], basis="hypothesis")
    assert lowest[0] == 8 and np.isnan(lowest[1])
    row = next(r for r in md.splitlines() if r.startswith("| E' vs AdamW | hypothesis | 8 bits"))
    assert row.split(" | ")[5:7] == [f"{lowest[0]:g} bits", "-"]  # 1 GB/s, 2 GB/s
    assert "| 0.1 GB/s | 0.2 GB/s |" in md and "largest elasticities (% per %)" in md
    assert "e-1" not in md.split("### Sensitivities")[1].split("###")[0]


def test_cli_bandwidth_both_bases(capsys):
    assert main(["breakeven", "E'", "adamw"]) == 0
    out = capsys.readouterr().out
    assert "hypothesis basis" in out and "exact basis" in out
    x = be.break_even(REF, "E'", "adamw", basis="exact").x[0] / 1e9
    assert f"{x:.6g} GB/s = {8 * x:.6g} Gb/s" in out
    assert "below: E' faster; above: AdamW faster" in out


def test_cli_budget_enob_sensitivity_and_inverse(capsys):
    assert main(["breakeven", "band_switch", "adamw", "--over", "budget", "--basis", "hypothesis"]) == 0
    assert "GFLOP/s" in capsys.readouterr().out
    assert main(["breakeven", "E'", "adamw", "--over", "enob", "--basis", "hypothesis"]) == 0
    out = capsys.readouterr().out
    assert "1 GB/s =      8 Gb/s: ENOB 8" in out and "12.5 GB/s =    100 Gb/s: none" in out
    assert main(["breakeven", "E'", "C'", "--basis", "exact", "--sensitivity", "--achieve", "steps_a"]) == 0
    out = capsys.readouterr().out
    assert "C' (band_gpu_allreduce) is faster throughout" in out
    # E' ties C' when steps_a x step(E') = 2,667 x step(C') (docs/model.md s6: exact band 2,667 steps)
    import bandjax

    step = bandjax.step_s(REF)
    ids = bandjax.variants.IDS
    tie = 2667 * float(step[ids.index("band_gpu_allreduce")]) / float(step[ids.index("band_switch")])
    assert f"E' beats C' with steps_a below {tie:.0f} steps (now 2,667 steps" in out


def test_cli_errors_name_the_value(capsys):
    assert main(["breakeven", "E'", "E''"]) == 2
    assert "variant = \"E''\" is not known" in capsys.readouterr().err
    assert main(["breakeven", "E'", "adamw", "--range", "10", "1"]) == 2
    assert "0 < lo < hi" in capsys.readouterr().err
