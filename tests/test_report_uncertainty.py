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
    assert "Monte Carlo: " in md and "delta method" in md and "GB/s" in md and "`steps.band_pluggable ~ seeds(1800 steps" in md


def _bowley(q):
    return (q[2] + q[0] - 2 * q[1]) / (q[2] - q[0])


def test_each_pair_carries_its_skewness_and_an_unskewed_pair_shows_the_delta_interval_first(uncertain):
    """results.json holds each pair's Bowley skewness of its own Monte Carlo quantiles and the
    flag beside them; a pair within SKEWED shows the delta method's interval first."""
    sc, results = uncertain
    r = results[section.KEY]
    md = section.markdown(Results.of(results))
    unskewed = 0
    for e in r["break_even_GBps"]:
        q = e["monte_carlo_5_50_95"]
        if None in q:
            assert e["skewness"] is None and e["skewed"] is False
            continue
        assert e["skewness"] == pytest.approx(_bowley(q), rel=1e-12, abs=1e-15)
        assert e["skewed"] is (abs(e["skewness"]) > U.SKEWED)
        if not e["skewed"] and None not in e["delta_method_5_50_95"]:
            unskewed += 1
            first, second = section.intervals_in_order(e)
            assert first.startswith("delta method: ") and second.startswith("Monte Carlo: ")
            assert f"| {first} | {second} |" in md
    assert unskewed >= 1


def test_a_skewed_pair_shows_the_monte_carlo_interval_first():
    """E''s d log-normal with sigma 0.8 (a long right tail, as in tests/test_uncertainty.py) skews
    E' vs AdamW's break-evens (Bowley skewness about -0.6 there): the report's table and the page
    show the Monte Carlo interval first, labelled, and the delta method's after it, marked
    symmetric."""
    from bandjax.report.sections.common import _json_ready
    import json

    sc = REF.replace(uncertain=(("fixed_s.band_switch", U.LogNormal(2e-5, 0.8)),))
    results = json.loads(json.dumps(_json_ready(section.build(sc, {"uncertainty_samples": 400}).to_json())))
    (e,) = [e for e in results[section.KEY]["break_even_GBps"]
            if (e["a"], e["b"], e["basis"]) == ("band_switch", "adamw", "hypothesis")]
    mc, dm = e["monte_carlo_5_50_95"], e["delta_method_5_50_95"]
    assert e["skewed"] is True and e["skewness"] == pytest.approx(_bowley(mc), rel=1e-12)
    assert e["skewness"] < -U.SKEWED
    same = U.propagate_break_even(sc, "E'", "adamw", None, 400, section.SEED, basis="hypothesis",
                                  bandwidth=results[section.KEY]["bandwidth_GBps"])
    assert e["skewness"] == pytest.approx(same.skewness, rel=1e-12)
    md = section.markdown(Results.of(results))
    row = next(line for line in md.splitlines() if line.startswith("| E' vs AdamW | hypothesis |"))
    first = f"Monte Carlo: {mc[0]:.3g} to {mc[2]:.3g} GB/s (skewed, {e['skewness']:+.2f})"
    second = f"delta method, symmetric: {dm[0]:.3g} to {dm[2]:.3g} GB/s"
    assert row.index(first) < row.index(second)
    page = section.uncertainty_view(sc, Results.of(results)).table
    (cells,) = [c for c in page["rows"] if c[:2] == ["E' vs AdamW", "hypothesis"]]
    assert cells[3].startswith("Monte Carlo: ") and "skewed" in cells[3]
    assert cells[4].startswith("delta method, symmetric: ")
