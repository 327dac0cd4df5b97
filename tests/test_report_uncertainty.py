"""The report's uncertainty section: point values without uncertain inputs, intervals with them.

References: the break-evens come from bandjax.break_even (closed forms); the intervals and the
win probabilities from bandjax.uncertainty on the same seed; the weakest input from the
scenario's own steps (docs/model.md section 6: E' takes E's steps on the hypothesis basis, the exact
band's 2,667 on the exact basis).
"""


import numpy as np
import pytest

import bandjax
from bandjax import uncertainty as U
from bandjax.report.sections import uncertainty as section
from bandjax.report.sections import Results
from bandjax.variants import DEFAULT_PAIRS

REF = bandjax.reference()


def test_without_uncertain_inputs_answers_are_point_values_and_e_steps_are_weakest():
    typed = section.build(REF, {})
    r = typed.to_json()[section.KEY]
    assert r["point_values"] is True and "break_even_GBps" not in r
    (w,) = r["weakest_input"]
    assert (w["variant"], w["follower"], w["steps"]) == ("band_pluggable", "band_switch", 1800.0)
    # E' vs C': at the listed bandwidths E' (E's 1,800 steps) wins on the hypothesis basis and
    # loses on the exact one (2,667 steps); checked here against time_to_target_s directly.
    (d,) = [d for d in w["decides"] if (d["a"], d["b"]) == ("band_switch", "band_gpu_allreduce")]
    assert d["bandwidth_GBps"] and all(d["a_wins_hypothesis"]) and not any(d["a_wins_exact"])
    at = REF.replace(wan_Bps=np.asarray(d["bandwidth_GBps"]) * 1e9)
    T = {b: np.asarray(bandjax.time_to_target_s(at, bandjax.steps_to_target(REF, None, b))) for b in bandjax.BASES}
    i, j = REF.ids.index("band_switch"), REF.ids.index("band_gpu_allreduce")
    assert np.all(T["hypothesis"][:, i] < T["hypothesis"][:, j]) and np.all(T["exact"][:, i] > T["exact"][:, j])
    md = section.markdown(Results(uncertainty=typed))
    assert "point value" in md and "E's steps to target (1,800 steps at ENOB 8 bits, one seed)" in md
    assert "decide whether E' beats AdamW" in md and "E' beats C' (at " in md


@pytest.fixture(scope="module")
def uncertain(uncertain_section):
    """E's steps as three seeds and E''s d log-normal, 200 samples (tests/conftest.py)."""
    return uncertain_section


def test_with_uncertain_inputs_break_evens_carry_intervals(uncertain):
    sc, results = uncertain
    r = results[section.KEY]
    assert r["point_values"] is False and r["samples"] == 200
    pairs = {(e["a"], e["b"]) for e in r["break_even_GBps"]}
    assert pairs == set(DEFAULT_PAIRS)
    for e in r["break_even_GBps"]:
        assert len(e["p_a_wins"]) == len(r["bandwidth_GBps"])
        same = U.propagate_break_even(sc, e["a"], e["b"], None, 200, section.SEED,
                                      basis=e["basis"] or "hypothesis", bandwidth=r["bandwidth_GBps"])
        np.testing.assert_allclose(e["p_a_wins"], same.p_a_wins, rtol=0, atol=0)
        point = bandjax.break_even(sc, e["a"], e["b"], basis=e["basis"] or "hypothesis").x[0] / 1e9
        if np.isfinite(point):
            assert e["point"] == pytest.approx(point, rel=1e-12)
            lo, mid, hi = e["monte_carlo_5_50_95"]
            assert lo <= mid <= hi and lo < hi
    md = section.markdown(Results.of(results))
    assert "MC 5% to 95%" in md and "GB/s" in md and "`steps.band_pluggable ~ seeds(1800 steps" in md
