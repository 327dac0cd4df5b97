"""The reference scenario reproduces the figures of docs/model.md section 12, computed by the model.

Each expected value is quoted from docs/model.md (section and wording beside it) and checked to
the precision it was printed with: a figure printed as 4.075 ms is checked to half a unit of its
last digit.
"""

import numpy as np
import pytest

import bandjax
from bandjax import variants
from bandjax.metrics import steps_to_target, time_to_target_s
from bandjax.step import COMPONENTS, budget_break_even_FLOPs, module_stages_s, step_s, step_terms_s

SC = bandjax.reference()
IDX = {v: i for i, v in enumerate(variants.IDS)}


def printed(value, expected, decimals):
    """|value - expected| within half a unit in the last printed decimal."""
    assert abs(value - expected) <= 0.5 * 10.0 ** (-decimals) + 1e-12, (value, expected)


def step_ms(variant, sc=SC):
    return float(step_s(sc)[IDX[variant]]) * 1e3


def test_adamw_step_and_compute_share():
    # docs/model.md s12: "AdamW step 4.075 ms, of which GPU compute is 12.1%"
    printed(step_ms("adamw"), 4.075, 3)
    terms = step_terms_s(SC)[IDX["adamw"]]
    share = float(terms[COMPONENTS.index("gpu_compute")] / terms.sum())
    printed(100 * share, 12.1, 1)


def test_bytes_per_worker():
    # docs/model.md s12: "AdamW sends 55,417,152 bytes per worker ... an all-gather of the band
    # 13,854,288 ((N-1) b, 0.25 of it)"
    from bandjax.metrics import bytes_per_worker_B

    b = np.asarray(bytes_per_worker_B(SC))
    assert b[IDX["adamw"]] == pytest.approx(55_417_152, abs=0.5)
    assert b[IDX["band_gpu"]] == pytest.approx(13_854_288, abs=0.5)
    assert b[IDX["band_gpu"]] / b[IDX["adamw"]] == pytest.approx(0.25, abs=5e-3)
    # the same as a flat ring's 2(N-1)/N G (docs/model.md s12)
    G = 4 * SC.params
    assert b[IDX["adamw"]] == pytest.approx(2 * 7 / 8 * G, rel=1e-15)


def test_times_to_target_at_100GbE():
    # docs/model.md s12: "top-k 0.93 s, AdamW 1.63 s (400 steps each), band on the GPU (C) 3.85 s
    # (2,667 steps), step 1.443 ms"
    t = np.asarray(time_to_target_s(SC, steps_to_target(SC)))
    printed(t[IDX["topk"]], 0.93, 2)
    printed(t[IDX["adamw"]], 1.63, 2)
    printed(t[IDX["band_gpu"]], 3.85, 2)
    printed(step_ms("band_gpu"), 1.443, 3)
    steps = steps_to_target(SC)
    assert (steps[IDX["topk"]], steps[IDX["adamw"]], steps[IDX["band_gpu"]]) == (400, 400, 2667)


def test_pluggable_at_low_budget():
    # docs/model.md s12: "E at [low]: 33.348 ms a step, module compute 95.0% of it"
    low = SC.replace(budget_FLOPs=SC.budget_low_FLOPs)
    printed(step_ms("band_pluggable", low), 33.348, 3)
    terms = step_terms_s(low)[IDX["band_pluggable"]]
    printed(100 * float(terms[COMPONENTS.index("module_compute")] / terms.sum()), 95.0, 1)


def test_switch_at_free_budget():
    # docs/model.md s12: "E' at [free]: 3.726 ms a step"
    printed(step_ms("band_switch"), 3.726, 3)


@pytest.mark.parametrize("budget, compute_ms", [(10e9, 31.667), (99e9, 3.199), (np.inf, 0.0)])
def test_module_stages(budget, compute_ms):
    # docs/model.md s4: port 1.267 ms, optics 2.262 ms, compute 31.667 / 3.199 / 0 ms, fpga 0.792 ms
    port, optics, compute, fpga = np.asarray(module_stages_s(SC.replace(budget_FLOPs=budget))) * 1e3
    printed(port, 1.267, 3)
    printed(optics, 2.262, 3)
    printed(compute, compute_ms, 3)
    printed(fpga, 0.792, 3)


def test_budget_break_even():
    # docs/model.md s4 and s12: "budget break-even 140.0 GFLOP/s", independent of P
    printed(float(budget_break_even_FLOPs(SC)) / 1e9, 140.0, 1)
    assert float(budget_break_even_FLOPs(SC.at_model_size(8.03e9))) == float(budget_break_even_FLOPs(SC))
    # at the break-even, compute and optics tie and the tie goes to optics (the earlier stage)
    at = SC.replace(budget_FLOPs=budget_break_even_FLOPs(SC))
    stages = np.asarray(module_stages_s(at))
    assert stages[2] == pytest.approx(stages[1], rel=1e-12)
    from bandjax.step import binding_stage

    assert np.asarray(binding_stage(module_stages_s(at))).tolist() == [False, True, False, False]


def test_report_json_matches_section_12(reference_report):
    # The same figures, read back from results.json as a user would: the reference report that
    # `bandjax report` writes, built once for the test run (tests/conftest.py).
    import json

    folder = reference_report[0]
    r = json.loads((folder / "results.json").read_text())
    printed(r["step_ms"]["adamw"]["free"], 4.075, 3)
    printed(100 * r["compute_share"]["adamw"], 12.1, 1)
    assert r["bytes_per_worker"]["adamw"] == pytest.approx(55_417_152, abs=0.5)
    printed(r["time_to_target_s"]["hypothesis"]["topk"], 0.93, 2)
    printed(r["time_to_target_s"]["exact"]["adamw"], 1.63, 2)
    printed(r["time_to_target_s"]["exact"]["band_gpu"], 3.85, 2)
    printed(r["step_ms"]["band_pluggable"]["low"], 33.348, 3)
    printed(100 * r["hot_spots"]["band_pluggable"]["low"]["module_compute"], 95.0, 1)
    printed(r["step_ms"]["band_switch"]["free"], 3.726, 3)
    printed(r["stages_ms"]["compute"]["low"], 31.667, 3)
    printed(r["stages_ms"]["compute"]["high"], 3.199, 3)
    printed(r["budget_break_even_GFLOPs"], 140.0, 1)
