"""Uncertain inputs: Monte Carlo against the delta method, win probabilities, distributions.

References: the break-even and its derivatives come from ``bandjax.break_even`` (the closed forms
and their crossings); Monte Carlo and delta method are compared with each other, each computed
from the model on the same seed-fixed samples.
"""

import numpy as np
import pytest

import bandjax
from bandjax.calibration import calibrate
from bandjax import uncertainty as U

REF = bandjax.reference()
IDS = REF.ids
D_SWITCH = REF.fixed_s["band_switch"]
# A small spread: 2% on E's steps (E' takes them on the hypothesis basis) and 10% on E''s d.
SMALL = {"steps.E": U.Normal(1800.0, 36.0), "d.E'": U.Normal(D_SWITCH, 0.1 * D_SWITCH)}


@pytest.fixture(scope="module")
def small():
    return U.propagate_break_even(REF, "E'", "adamw", SMALL, samples=10_000, seed=0)


def test_monte_carlo_and_delta_method_intervals_agree(small):
    """Each end and the median of the 90% interval agree within 5% of its width (measured: within
    2.5% at seed 0; the MC quantiles' own sampling error is ~0.7% of the width)."""
    width = small.quantiles_GBps[2] - small.quantiles_GBps[0]
    assert width > 0
    np.testing.assert_allclose(small.delta_GBps, small.quantiles_GBps, rtol=0, atol=0.05 * width)
    assert small.crossing_share == 1.0


def test_delta_method_centre_and_gradient_match_break_even():
    """The delta method's centre is bandjax.break_even at the means; its d-gradient matches a
    central finite difference of bandjax.break_even (rel 1e-5)."""
    r = U.propagate_break_even(REF, "E'", "adamw", {"d.E'": U.Normal(D_SWITCH, 1e-6)}, samples=100)
    x0 = float(bandjax.break_even(REF, "E'", "adamw").x[0]) / 1e9
    assert r.nominal_GBps == pytest.approx(x0, rel=1e-12)
    h = 1e-3 * D_SWITCH
    xs = [float(bandjax.break_even(REF.replace(fixed_s={**REF.fixed_s, "band_switch": D_SWITCH + s}),
                                   "E'", "adamw").x[0]) / 1e9 for s in (h, -h)]
    assert r.gradient[0] == pytest.approx((xs[0] - xs[1]) / (2 * h), rel=1e-5)
    assert r.delta_sd_GBps == pytest.approx(abs(r.gradient[0]) * 1e-6, rel=1e-12)


def test_probability_a_wins_matches_the_roots(small):
    """E' wins below its single crossing and AdamW above, so P(E' wins at B) = P(root > B): two
    computations (times at each B; the roots) agree to one sample in 10,000."""
    from_roots = np.mean(small.roots_GBps[:, None] > small.bandwidth_GBps[None, :], axis=0)
    np.testing.assert_allclose(small.p_a_wins, from_roots, rtol=0, atol=1e-4)
    assert small.p_a_wins[0] == 1.0 and small.p_a_wins[-1] == 0.0
    assert np.all(np.diff(small.p_a_wins) <= 0)


def test_exact_basis_steps_of_e_do_not_move_e_prime():
    """On the exact basis E' takes the exact band's 2,667 steps (docs/model.md section 6), not E's 1,800:
    a spread on E's steps leaves its break-even with AdamW fixed."""
    r = U.propagate_break_even(REF, "E'", "adamw", {"steps.E": U.Normal(1800.0, 36.0)},
                               samples=1000, basis="exact")
    x0 = float(bandjax.break_even(REF, "E'", "adamw", basis="exact").x[0]) / 1e9
    np.testing.assert_allclose(r.roots_GBps, x0, rtol=1e-12)
    assert r.gradient[0] == 0.0


def test_sweep_quantiles_of_an_affine_step_are_the_inputs_quantiles():
    """AdamW's step is d + (terms without d), affine in its fixed time d, so the quantiles of its
    step over Seeds of d are the quantiles of the drawn d plus the rest (to rounding)."""
    d0 = REF.fixed_s["adamw"]
    seeds = U.Seeds([0.8 * d0, 0.9 * d0, 1.1 * d0, 1.3 * d0])
    ds = U.propagate_sweep(REF, {"d.adamw": seeds}, samples=4000, seed=3, bandwidth=[1.0, 12.5])
    d = U.draw(REF, {"d.adamw": seeds}, 4000, 3).samples[:, 0]
    rest = np.asarray(bandjax.step_s(REF.replace(wan_Bps=np.array([1e9, 12.5e9]))))[:, IDS.index("adamw")] - d0
    expected = np.quantile(d, U.QUANTILES)[:, None] + rest[None, :]
    np.testing.assert_allclose(ds.step_s.sel(variant="adamw").values, expected, rtol=1e-12)
    assert ds.step_s.attrs["units"] == "s" and ds.bandwidth.attrs["units"] == "GB/s"


def test_gpu_is_the_gpu_rate():
    """``gpu`` is the GPU peak rate (at the scenario's utilisation): a faster GPU gives a shorter
    step, so over Seeds of three rates the 5% step quantile is the fastest rate's step and the 95%
    the slowest's, each as bandjax.step_s computes it (rtol 1e-12; 4,000 draws put every quantile
    inside one seed's block of equal values)."""
    R = REF.gpu_peak_FLOPs
    rates = [0.9 * R, R, 1.2 * R]
    ds = U.propagate_sweep(REF, {"gpu": U.Seeds(rates)}, samples=4000, seed=1, bandwidth=[12.5])
    at = [float(bandjax.step_s(REF.replace(gpu_peak_FLOPs=r))[IDS.index("adamw")]) for r in rates]
    np.testing.assert_allclose(ds.step_s.sel(variant="adamw", bandwidth=12.5).values,
                               [at[2], at[1], at[0]], rtol=1e-12)


def test_distributions_moments():
    """Sample mean and variance of 2e5 draws against each distribution's own (4 standard errors)."""
    rng = np.random.default_rng(5)
    n = 200_000
    for dist in (U.Normal(2.0, 0.5), U.LogNormal(3.0, 0.2), U.Uniform(1.0, 4.0),
                 U.Seeds([1.0, 2.0, 4.0])):
        x = dist.sample(rng, n)
        assert abs(x.mean() - dist.center) <= 4 * np.sqrt(dist.variance / n), dist
    # Seeds draw only the measured values, and their variance is the draws' (ddof 0), which the
    # delta method takes too.
    assert set(U.Seeds([1.0, 2.0, 4.0]).sample(rng, 100)) <= {1.0, 2.0, 4.0}
    assert U.Seeds([1.0, 2.0, 4.0]).variance == pytest.approx(np.var([1, 2, 4], ddof=0), rel=1e-15)
    x = U.Seeds([1.0, 2.0, 4.0]).sample(rng, n)
    assert np.var(x) == pytest.approx(U.Seeds([1.0, 2.0, 4.0]).variance, rel=0.01)


def test_a_calibration_is_a_multivariate_normal():
    """Draws from a fit follow its covariance, each parameter on its interval's scale: d (>= 0) is
    drawn normal and cut at 0, so the share of draws at 0 is Phi(-estimate / se) (to 0.01; 2e4
    samples give a standard error of 0.004) and a d whose estimate is 4 standard errors from 0
    keeps the fit's variance (5%); propagate_break_even takes the fit as its uncertain inputs,
    alone or with further inputs (a list, as a mapping failed with AttributeError before)."""
    from scipy.stats import norm

    rng = np.random.default_rng(2)
    bw = np.array([0.5, 2.0, 12.5, 50.0])
    s = np.asarray(bandjax.step_s(REF.replace(wan_Bps=bw * 1e9)))
    rows = [{"variant": v, "bandwidth": b, "step_s": float(s[i, IDS.index(v)] * (1 + 0.01 * rng.standard_normal()))}
            for i, b in enumerate(bw) for v in ("adamw", "band_switch")]
    cal = calibrate(rows, ["d.adamw", "d.E'"])
    d = U.draw(REF, cal, 20_000, 0)
    assert d.names == cal.names and np.all(d.samples >= 0)
    np.testing.assert_allclose(d.cov, cal.cov, rtol=1e-12)
    at_zero = np.mean(d.samples == 0, axis=0)
    np.testing.assert_allclose(at_zero, norm.cdf(-cal.estimate / cal.stderr), rtol=0, atol=0.01)
    assert cal.estimate[0] > 4 * cal.stderr[0]
    assert np.var(d.samples[:, 0]) == pytest.approx(cal.cov[0, 0], rel=0.05)
    r = U.propagate_break_even(REF, "E'", "adamw", cal, samples=2000)
    assert r.names == cal.names and np.isfinite(r.delta_sd_GBps) and r.delta_sd_GBps > 0
    gpu = U.Normal(REF.gpu_peak_FLOPs, 0.02 * REF.gpu_peak_FLOPs)
    for together in ([cal, ("gpu", gpu)], (cal, {"gpu": gpu}), {"fit": cal, "gpu": gpu}):
        r2 = U.propagate_break_even(REF, "E'", "adamw", together, samples=2000)
        assert r2.names == (*cal.names, "gpu_peak_FLOPs")
        # the fit's draws are the same with or without the further input (drawn after them)
        np.testing.assert_allclose(U.draw(REF, together, 50, 1).samples[:, :2], U.draw(REF, cal, 50, 1).samples,
                                   rtol=1e-12)
        assert r2.delta_sd_GBps > r.delta_sd_GBps
    with pytest.raises(ValueError, match=r"uncertain item 3: expected a Calibration, a mapping"):
        U.propagate_break_even(REF, "E'", "adamw", [cal, 3], samples=10)


def test_positive_fit_parameters_are_drawn_on_log_scale():
    """A fitted GPU rate (kind log) is drawn lognormal: every draw > 0, and the log of the draws
    has sd se / estimate (the delta method's image of the covariance; 2e4 draws, 3%)."""
    dist = U.MultiNormal(["gpu_peak_FLOPs"], [5e13], [[(2.5e13) ** 2]], ["log"])
    x = dist.sample(np.random.default_rng(0), 20_000)[:, 0]
    assert np.all(x > 0)
    assert np.std(np.log(x)) == pytest.approx(0.5, rel=0.03)
    assert np.median(x) == pytest.approx(5e13, rel=0.03)


def test_seeds_delta_method_and_monte_carlo_share_one_variance():
    """With only E's steps uncertain (three seeds), the break-even of E' against AdamW moves
    smoothly with them, so the delta method's sd equals the Monte Carlo roots' sd to within 5%
    (before, the delta method took the ddof-1 variance: 1.22x for three seeds)."""
    seeds = U.Seeds([1800, 1650, 2010])
    assert seeds.variance == pytest.approx(np.var([1800, 1650, 2010]), rel=1e-15)
    r = U.propagate_break_even(REF, "E'", "adamw", {"steps.E": seeds}, samples=4000, seed=1)
    assert r.crossing_share == 1.0
    assert r.delta_sd_GBps == pytest.approx(np.std(r.roots_GBps), rel=0.05)


def test_a_skewed_monte_carlo_is_flagged_and_shown_first():
    """A lognormal d of E' (median 0.02 ms, sigma 0.8: a long right tail) makes the Monte Carlo
    break-even's quantiles skewed (Bowley skewness about -0.6, beyond SKEWED = 0.1 in size), and
    the interval to show first is then the Monte Carlo's; a narrow normal d is not skewed (about
    -0.03) and the delta method's interval comes first."""
    wide = U.propagate_break_even(REF, "E'", "adamw", {"d.E'": U.LogNormal(2e-5, 0.8)}, samples=4000)
    narrow = U.propagate_break_even(REF, "E'", "adamw", {"d.E'": U.Normal(2.27e-5, 1e-7)}, samples=4000)
    q = wide.quantiles_GBps
    assert wide.skewness == pytest.approx((q[2] + q[0] - 2 * q[1]) / (q[2] - q[0]), rel=1e-12)
    assert wide.skewed and np.array_equal(wide.interval_GBps, wide.quantiles_GBps)
    assert "skewed" in wide.summary()
    assert not narrow.skewed and np.array_equal(narrow.interval_GBps, narrow.delta_GBps)


@pytest.mark.parametrize("uncertain, samples, match", [
    ({"warp": U.Normal(1.0, 0.1)}, 10, r"'warp' is not a parameter; allowed: a numeric scenario field"),
    ({"steps.X": U.Normal(1.0, 0.1)}, 10, r"steps.X: variant 'X' is not known; allowed: adamw"),
    ({"steps.E'": U.Normal(1.0, 0.1)}, 10, r"band_switch has no steps of its own"),
    ({"gpu": U.Seeds([1e14])}, 10, r"\[uncertain\] gpu: values = \['100 TFLOP/s'\]; must be at least two"),
    ({"gpu": U.Normal(1e14, -1.0)}, 10, r"sd = '-1e-09 GFLOP/s'; must be a finite number >= 0"),
    ({"wan": U.Normal(-1e9, 1e8)}, 10, r"\[links\] wan = '-1.0 GB/s': must be > 0 GB/s"),
    ({"gpu": 3.0}, 10, r"expected Normal, LogNormal, Uniform, Seeds or a Calibration"),
    ({"gpu": U.Normal(1e14, 1e12)}, 1, r"samples = 1: must be a whole number >= 2"),
    ({}, 10, r"no uncertain inputs"),
])
def test_bad_uncertain_input(uncertain, samples, match):
    with pytest.raises(ValueError, match=match):
        U.propagate_break_even(REF, "E'", "adamw", uncertain, samples=samples)


# --------------------------------------------------------------------------- public calls, files


def test_public_calls_take_samples_and_the_scenarios_own_inputs(tmp_path):
    """bandjax.sweep / bandjax.break_even with samples equal the propagation functions on the
    same seed (rtol 1e-12), and a scenario's [uncertain] table is what they use by default."""
    path = tmp_path / "sc.toml"
    bandjax.save(REF, path)
    path.write_text(path.read_text() + '\n[uncertain]\n"steps.band_pluggable" = { seeds = [1800, 1650, 2010] }\n'
                    '"d.band_switch" = { lognormal = ["0.0227 ms", 0.2] }\n')
    sc = bandjax.load(path)
    assert dict(sc.uncertain) == {"steps.band_pluggable": U.Seeds([1800, 1650, 2010]),
                                  "fixed_s.band_switch": U.LogNormal(0.0227e-3, 0.2)}
    r = bandjax.break_even(sc, "E'", "adamw", samples=500, seed=4)
    same = U.propagate_break_even(sc, "E'", "adamw", dict(sc.uncertain), samples=500, seed=4)
    np.testing.assert_allclose(r.roots_GBps, same.roots_GBps, rtol=1e-12)
    assert r.quantiles_GBps[0] < r.nominal_GBps < r.quantiles_GBps[2]
    ds = bandjax.sweep(sc, bandwidth=[1.0, 100.0], samples=300, seed=2)
    ref = U.propagate_sweep(sc, None, 300, 2, bandwidth=[1.0, 100.0])
    np.testing.assert_allclose(ds.time_to_target_s.values, ref.time_to_target_s.values, rtol=1e-12)
    # E' follows E's sampled steps through its rule (hypothesis basis: E' takes E's, docs/model.md
    # section 6): with only E's seeds uncertain, E''s 5% and 95% times to target are its step
    # (bandjax.step_s) times E's fewest and most steps, 1,650 and 2,010.
    only = U.propagate_sweep(REF, {"steps.E": U.Seeds([1800, 1650, 2010])}, 300, 2, bandwidth=[100.0])
    step = float(bandjax.step_s(REF.replace(wan_Bps=100e9))[IDS.index("band_switch")])
    np.testing.assert_allclose(only.time_to_target_s.sel(variant="band_switch", bandwidth=100.0).values,
                               [1650 * step, 1800 * step, 2010 * step], rtol=1e-12)
    with pytest.raises(ValueError, match=r"no uncertain inputs"):
        bandjax.sweep(REF, samples=10)
    with pytest.raises(ValueError, match=r"sweep with samples: enob given; allowed: bandwidth"):
        bandjax.sweep(sc, enob=[6, 8], samples=10)
    with pytest.raises(ValueError, match=r"over = 'budget': under uncertain inputs"):
        bandjax.break_even(sc, "E'", "adamw", over="budget", samples=10)


@pytest.mark.parametrize("entry, match", [
    ('warp = { normal = [1, 2] }', r"\[uncertain\] warp: 'warp' is not a parameter; allowed"),
    ('wan = { gauss = ["1 GB/s", "1 GB/s"] }', r"\[uncertain\] wan = .*expected one of normal = \[mean, sd\]"),
    ('wan = { normal = ["1 GB/s"] }', r"expected one of normal = \[mean, sd\]"),
    ('wan = { normal = ["1 ms", "1 GB/s"] }', r"\[uncertain\] wan.normal\[0\] = '1 ms': unit 'ms' is not a byte rate unit"),
    ('"d.adamw" = { lognormal = ["0.1 ms", "2 ms"] }', r"lognormal\[1\] = '2 ms': unit 'ms' is not a count unit"),
    ('"steps.band_switch" = { seeds = [1, 2] }', r"band_switch has no steps of its own"),
    ('"steps.adamw" = { seeds = [400] }', r"values = \[400\]; must be at least two"),
])
def test_bad_uncertain_table(tmp_path, entry, match):
    path = tmp_path / "sc.toml"
    path.write_text(f"[uncertain]\n{entry}\n")
    with pytest.raises(bandjax.ScenarioError, match=match):
        bandjax.load(path)


def test_the_docs_uncertain_tables_load(tmp_path):
    """Both TOML blocks of docs/calibration.md (the [uncertain] table and a calibration's
    multinormal entry) load as written, appended to a scenario file, with the values they state
    in SI units; propagation draws the multinormal's parameters."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "calibration.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```toml\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 2
    loaded = []
    for k, block in enumerate(blocks):
        path = tmp_path / f"sc{k}.toml"
        bandjax.save(REF, path)
        path.write_text(path.read_text() + "\n" + block)
        loaded.append(dict(bandjax.load(path).uncertain))
    multi, table = loaded
    dist = multi["calibration"]
    assert dist.names == ("fixed_s.adamw", "gpu_peak_FLOPs") and dist.scale == ("linear", "log")
    np.testing.assert_allclose(dist.mean, [9.98e-05, 49451429426596.17], rtol=1e-15)
    assert U.draw(REF, multi, 10, 0).names == dist.names
    assert table == {"wan_Bps": U.Normal(12.5e9, 1e9), "gpu_peak_FLOPs": U.LogNormal(49451e9, 0.1),
                     "fixed_s.adamw": U.LogNormal(0.1e-3, 0.2), "fixed_s.topk": U.Uniform(0.0, 0.01e-3),
                     "steps.band_pluggable": U.Seeds([1800, 1650, 2010])}


def test_a_multinormal_entry_is_checked(tmp_path):
    path = tmp_path / "sc.toml"
    path.write_text('[uncertain.fit.multinormal]\nparameters = ["d.adamw", "wan"]\nmean = [1e-4, 1e10]\n'
                    'cov = [[1e-10, 0.0], [1.0, 1e16]]\n')
    with pytest.raises(bandjax.ScenarioError, match=r"\[uncertain\] fit: cov is not finite and symmetric"):
        bandjax.load(path)
    path.write_text('[uncertain.fit.multinormal]\nparameters = ["d.adamw", "warp"]\nmean = [1e-4, 1e10]\n'
                    'cov = [[1e-10, 0.0], [0.0, 1e16]]\n')
    with pytest.raises(bandjax.ScenarioError, match=r"\[uncertain\] fit.multinormal.parameters: 'warp' is not a parameter"):
        bandjax.load(path)
    path.write_text('[uncertain]\n"d.adamw" = { normal = ["0.1 ms", "0.01 ms"] }\n[uncertain.fit.multinormal]\n'
                    'parameters = ["d.adamw"]\nmean = [1e-4]\ncov = [[1e-10]]\n')
    with pytest.raises(bandjax.ScenarioError, match=r"a parameter is given twice among fixed_s.adamw, fixed_s.adamw"):
        bandjax.load(path)


def test_a_multinormal_is_described_with_units():
    from bandjax.distributions import describe
    from bandjax.scenario import field_table

    dist = U.MultiNormal(["fixed_s.adamw", "wan_Bps"], [9.98e-5, 12.5e9], [[1e-10, 0.0], [0.0, 1e18]],
                         ["linear", "log"])
    assert describe("calibration", dist, field_table()) == (
        "calibration: correlated normal (fixed_s.adamw ~ 0.0998 ms +- 0.01 ms; "
        "wan_Bps ~ 12.5 GB/s +- 1.0 GB/s)")
