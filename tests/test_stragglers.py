"""Workers that straggle (docs/model.md section 16): the closed forms, the scenario fields, the
step with stragglers, and the no-straggler step unchanged.

Reference values marked "page" are the worked values of /work/shared/model.md section 16 (an
oracle of exact sums and quadrature), printed to 6 decimals: they are compared at that precision
(abs 5e-7, 1e-6 for quadrature where the page rounds). Values marked "sum" come from explicit
sums in this file.
"""

import math

import jax
from jax.test_util import check_grads
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
from bandjax import stragglers as S
from bandjax.scenario import ScenarioError
from bandjax.step import (COMPONENTS, col, fragment_parts_s, inner_compute_s, rounds_step_s,
                          step_s, step_terms_s, sum_parts, sync_method)
from bandjax.variants import METHODS

PRINTED = 5e-7  # half a unit of the page's 6th decimal


# ------------------------------------------------------------------------------ the families


@pytest.mark.parametrize("m", [1, 8, 64, 512, 100_000])
def test_exponential_sums_match_explicit_sums(m):
    k = np.arange(1, m + 1, dtype=float)
    np.testing.assert_allclose(float(S.harmonic(m)), math.fsum(1 / k), rtol=1e-12)  # sum
    np.testing.assert_allclose(float(S.harmonic2(m)), math.fsum(1 / k ** 2), rtol=1e-12)  # sum
    mu, sd = S.exponential_max_moments(0.1, m)
    np.testing.assert_allclose(float(mu), 0.9 + 0.1 * math.fsum(1 / k), rtol=1e-9)
    np.testing.assert_allclose(float(sd), 0.1 * math.sqrt(math.fsum(1 / k ** 2)), rtol=1e-9)


@pytest.mark.parametrize("m, mu", [(8, 1.171786), (64, 1.374389), (256, 1.512434), (512, 1.581652)])
def test_exponential_mu_worked_values(m, mu):
    assert abs(float(S.exponential_max_moments(0.1, m)[0]) - mu) <= PRINTED  # page


@pytest.mark.parametrize("m, sd", [(8, 0.123589), (64, 0.127649)])
def test_exponential_sigma_worked_values(m, sd):
    assert abs(float(S.exponential_max_moments(0.1, m)[1]) - sd) <= PRINTED  # page


@pytest.mark.parametrize("m, mu", [(8, 1.149399), (64, 1.259104), (256, 1.321096)])
def test_lognormal_mu_worked_values(m, mu):
    assert abs(float(S.lognormal_max_moments(0.1, m)[0]) - mu) <= PRINTED  # page


def test_lognormal_moments_of_one_draw_are_the_lognormal_s():
    # m = 1: X itself, mean 1, sd sqrt(exp(sigma^2) - 1) (the lognormal's own moments)
    for sigma in (0.05, 0.3, 1.0):
        mu, sd = S.lognormal_max_moments(sigma, 1.0)
        np.testing.assert_allclose(float(mu), 1.0, rtol=1e-12)
        np.testing.assert_allclose(float(sd), math.sqrt(math.expm1(sigma ** 2)), rtol=1e-11)


def test_lognormal_moments_against_simulation():
    # a seeded simulation of the largest of 64 draws: agrees within 5 standard errors
    rng = np.random.default_rng(1)
    sigma, m, draws = 0.3, 64, 200_000
    x = np.exp(sigma * rng.standard_normal((draws, m)) - sigma ** 2 / 2).max(axis=1)
    mu, sd = S.lognormal_max_moments(sigma, m)
    assert abs(float(mu) - x.mean()) < 5 * x.std() / math.sqrt(draws)
    np.testing.assert_allclose(float(sd), x.std(), rtol=0.01)


@pytest.mark.parametrize("K, e", [(2, 0.564190), (3, 0.846284), (4, 1.029375), (8, 1.423600)])
def test_expected_max_normal_worked_values(K, e):
    assert abs(float(S.expected_max_normal(K)) - e) <= PRINTED  # page


def test_expected_max_of_two_normals_is_exact():
    np.testing.assert_allclose(float(S.expected_max_normal(2)), 1 / math.sqrt(math.pi), rtol=1e-9)
    assert abs(float(S.expected_max_normal(1))) <= 1e-12


def test_nothing_straggles_is_one():
    mu, sd = S.max_moments(0.0, 0.3, 64.0)
    assert float(mu) == 1.0 and float(sd) == 0.0
    for family in (1.0, 2.0):  # a tail of 0 is no tail
        mu, sd = S.max_moments(family, 0.0, 64.0)
        np.testing.assert_allclose([float(mu), float(sd)], [1.0, 0.0], atol=1e-15)


# ------------------------------------------------------------------ the compute part of a step

C4, N4 = jnp.ones(4), jnp.full(4, 64.0)


@pytest.mark.parametrize("family, H, value", [
    (1.0, 1, 1.512434), (1.0, 10, 1.415941), (1.0, 100, 1.387529), (1.0, 1000, 1.378544),
    (2.0, 1, 1.321096), (2.0, 100, 1.265037)])
def test_four_dcs_of_64_worked_values(family, H, value):
    # page: 4 DCs x 64 workers, c = 1 s, tail 0.1
    general = float(S.compute_part_s(C4, N4, family, 0.1, float(H)))
    equal = float(S.equal_sites_factor(family, 0.1, 64.0, 4.0, float(H)))
    assert abs(general - value) <= PRINTED
    assert abs(equal - value) <= PRINTED
    np.testing.assert_allclose(general, equal, rtol=1e-10)  # the general quadrature = closed form


def test_two_sites_that_differ():
    c, n = jnp.array([1.0, 2.2]), jnp.full(2, 64.0)
    assert float(S.compute_part_s(c, n, 0.0, 0.0, 100.0)) == pytest.approx(2.2, rel=1e-15)  # page
    assert abs(float(S.compute_part_s(c, n, 1.0, 0.1, 100.0)) - 3.023656) <= PRINTED  # page


@pytest.mark.parametrize("family, s", [(1.0, 0.1), (1.0, 1.0), (2.0, 0.1), (2.0, 1.0)])
@pytest.mark.parametrize("m", [1.0, 8.0, 1000.0, 100_000.0])
def test_all_workers_quadrature_agrees_with_the_moments(family, s, m):
    # H = 1, one DC: E[max of m draws] by the t-quadrature = mu_m (exact sums, or the z-grid)
    general = float(S.max_all_workers_s(jnp.ones(1), jnp.full(1, m), family, s))
    np.testing.assert_allclose(general, float(S.max_moments(family, s, m)[0]), rtol=1e-10)


def test_per_dc_arrays_broadcast_over_points():
    s = jnp.array([0.0, 0.05, 0.1])
    out = S.compute_part_s(C4, N4, 1.0, s[:, None], jnp.array([1.0, 100.0]))
    assert out.shape == (3, 2)
    np.testing.assert_allclose(np.asarray(out[2]), [1.512434, 1.387529], atol=PRINTED)  # page
    np.testing.assert_allclose(np.asarray(out[0]), [1.0, 1.0], rtol=1e-15)


def test_gradients_against_finite_differences():
    # each function jitted once (its derivatives then compile once each, not op by op)
    check_grads(jax.jit(lambda s: S.equal_sites_factor(2.0, s, 64.0, 4.0, 100.0)), (0.1,),
                order=1, modes=["fwd", "rev"], atol=1e-7, rtol=1e-7)
    check_grads(jax.jit(lambda s: S.equal_sites_factor(1.0, s, 64.0, 4.0, 10.0)), (0.3,),
                order=1, modes=["fwd", "rev"], atol=1e-7, rtol=1e-7)
    check_grads(jax.jit(lambda s: S.compute_part_s(jnp.array([1.0, 2.2]), jnp.full(2, 64.0), 1.0, s, 100.0)),
                (0.1,), order=1, modes=["fwd", "rev"], atol=1e-6, rtol=1e-6)
    check_grads(jax.jit(lambda s: S.compute_part_s(C4, N4, 2.0, s, 1.0)), (0.2,),
                order=1, modes=["fwd", "rev"], atol=1e-6, rtol=1e-6)
    # at sigma = 0 the lognormal's slope is e_m (d/dsigma E[exp(sigma Z_m)] = E[Z_m])
    slope = jax.grad(lambda s: S.lognormal_max_moments(s, 4.0)[0])(0.0)
    np.testing.assert_allclose(float(slope), 1.029375, atol=PRINTED)  # page: e_4


# ------------------------------------------------------------------------- scenario fields


def test_fields_take_words_and_round_trip(tmp_path):
    sc = bandjax.reference().replace(straggler="lognormal", straggler_s=0.2)
    assert float(sc.straggler) == 2.0
    path = tmp_path / "s.toml"
    bandjax.scenario.save(sc, path)
    text = path.read_text()
    assert "[stragglers]" in text and 'family = "lognormal"' in text
    back = bandjax.scenario.load(path)
    assert float(back.straggler) == 2.0 and float(back.straggler_s) == 0.2
    assert float(bandjax.reference().straggler) == 0.0  # default: none


@pytest.mark.parametrize("changes, words", [
    (dict(straggler="weibull"), "[stragglers] family = 'weibull' is not known; allowed: none, exponential, lognormal"),
    (dict(straggler=3.0), "[stragglers] family = 3.0: must be one of 'none', 'exponential', 'lognormal'"),
    (dict(straggler=True), "expected a number, not a boolean"),
    (dict(straggler_s=-0.1), "[stragglers] s = -0.1: must be >= 0"),
    (dict(straggler_s=float("nan")), "[stragglers] s = 'nan'"),
    (dict(straggler_s=1j), "complex"),
    (dict(straggler="exponential", straggler_s=1.5), "[stragglers] s = 1.5 with family = 'exponential'"),
])
def test_bad_values_name_the_field(changes, words):
    with pytest.raises(ScenarioError) as e:
        bandjax.reference().replace(**changes)
    assert words in str(e.value)


def test_relation_is_checked_from_either_side():
    ln = bandjax.reference().replace(straggler="lognormal", straggler_s=1.5)  # sigma 1.5: fine
    with pytest.raises(ScenarioError, match="exponential tail share must be in"):
        ln.replace(straggler="exponential")
    ex = bandjax.reference().replace(straggler="exponential", straggler_s=0.5)
    with pytest.raises(ScenarioError, match="exponential tail share must be in"):
        ex.replace(straggler_s=2.0)
    with pytest.raises(ScenarioError, match="exponential tail share must be in"):
        bandjax.sweep(ex, straggler_s=[0.1, 2.0], bandwidth=[1.0])
    with pytest.raises(ScenarioError, match="is not known"):
        bandjax.sweep(ex, straggler=["none", "gamma"], bandwidth=[1.0])


def test_a_file_with_a_bad_family_names_it(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[stragglers]\nfamily = "pareto"\n')
    with pytest.raises(ScenarioError, match=r"\[stragglers\] family = 'pareto': must be one of"):
        bandjax.scenario.load(path)
    path.write_text('[stragglers]\nfamily = "exponential"\ns = 1.2\n')
    with pytest.raises(ScenarioError, match="exponential tail share"):
        bandjax.scenario.load(path)


# ------------------------------------------------------------------------------- the step

def _cluster():
    """4 DCs of 64, data parallel (H = 1) and DiLoCo (H = 100) beside the study's six."""
    return bandjax.reference().with_variants(METHODS).replace(dcs=4.0, workers_per_dc=64.0,
                                                                overlap_fraction=0.3)


def test_step_with_stragglers_by_hand():
    sc = _cluster().replace(straggler="exponential", straggler_s=0.1)
    m = sync_method(sc)
    H = np.broadcast_to(np.asarray(m.H), (len(sc.ids),))
    c = float(sc.gpu_compute_s)
    mu_n, sd_n = (float(x) for x in S.exponential_max_moments(0.1, 64))
    mu_N = float(S.exponential_max_moments(0.1, 256)[0])
    M = np.where(H == 1, mu_N, mu_n + sd_n * float(S.expected_max_normal(4)) / np.sqrt(H))
    cs = c * M
    comm = np.broadcast_to(np.asarray(sum_parts(fragment_parts_s(sc))), cs.shape)
    F = np.asarray(m.fragments)
    by_hand = cs + F * np.maximum(0.0, comm - (0.3 + np.asarray(m.delay)) * cs) / H
    np.testing.assert_allclose(np.asarray(step_s(sc)), by_hand, rtol=1e-13)
    terms = np.asarray(step_terms_s(sc))
    np.testing.assert_allclose(terms.sum(-1), by_hand, rtol=1e-13)
    np.testing.assert_allclose(terms[..., COMPONENTS.index("straggle")], cs - c, rtol=1e-13)
    shares = np.asarray(bandjax.metrics.hot_spots(terms))
    np.testing.assert_allclose(shares.sum(-1), 1.0, rtol=1e-13)
    cu = np.asarray(bandjax.step.compute_utilisation(sc))
    np.testing.assert_allclose(cu, c / by_hand, rtol=1e-13)  # only the mean compute is useful


def test_jitted_step_takes_the_family_as_a_leaf():
    sc = _cluster().replace(straggler="lognormal", straggler_s=0.1)
    eager, jitted = np.asarray(step_s(sc)), np.asarray(jax.jit(step_s)(sc))
    np.testing.assert_allclose(jitted, eager, rtol=1e-14)
    assert np.all(jitted > np.asarray(step_s(_cluster())))


def test_step_gradient_in_the_tail():
    sc = _cluster().replace(straggler="lognormal", straggler_s=0.1)

    def total(s):
        return jnp.sum(step_s(sc.replace(straggler_s=s)))

    check_grads(total, (0.1,), order=1, modes=["fwd", "rev"], atol=1e-9, rtol=1e-6)
    h = 1e-6
    central = (float(total(0.1 + h)) - float(total(0.1 - h))) / (2 * h)
    np.testing.assert_allclose(float(jax.grad(total)(0.1)), central, rtol=1e-6)


@st.composite
def _scenarios(draw):
    sc = bandjax.reference().with_variants(METHODS)
    return sc.replace(
        wan_Bps=draw(st.floats(1e8, 1e12)), overlap_fraction=draw(st.floats(0.0, 1.0)),
        wan_latency_s=draw(st.floats(0.0, 0.05)), sync_every_H=float(draw(st.sampled_from([1, 3, 10, 100]))),
        dcs=float(draw(st.integers(2, 8))), workers_per_dc=float(draw(st.integers(1, 64))),
        params=draw(st.floats(1e6, 1e11)), topology=draw(st.sampled_from(["ring", "mesh"])))


@settings(max_examples=25, deadline=None)
@given(_scenarios())
def test_no_straggler_step_is_the_step_without_stragglers_bit_for_bit(sc):
    # the step before stragglers existed: rounds_step_s with the mean compute c
    m = sync_method(sc)
    c = col(sc.gpu_compute_s)
    before = rounds_step_s(c, sum_parts(fragment_parts_s(sc, method=m)), col(sc.overlap_fraction), m)
    np.testing.assert_array_equal(np.asarray(inner_compute_s(sc)), np.asarray(c))
    np.testing.assert_array_equal(np.asarray(step_s(sc)), np.asarray(before))

    # and in one compiled call where the family is a traced leaf (0: none)
    def both(sc):
        m = sync_method(sc)
        b = rounds_step_s(col(sc.gpu_compute_s), sum_parts(fragment_parts_s(sc, method=m)),
                          col(sc.overlap_fraction), m)
        return step_s(sc), b, inner_compute_s(sc), jnp.broadcast_to(col(sc.gpu_compute_s), b.shape)

    now, before, cs, c = (np.asarray(x) for x in jax.jit(both)(sc))
    np.testing.assert_array_equal(np.broadcast_to(cs, c.shape), c)
    np.testing.assert_array_equal(now, before)
    terms = np.asarray(jax.jit(step_terms_s)(sc))
    assert np.all(terms[..., COMPONENTS.index("straggle")] == 0.0)


def test_sweep_over_tail_and_H_is_monotone():
    sc = bandjax.reference().with_variants(METHODS).replace(straggler="exponential")
    ds = bandjax.sweep(sc, straggler_s=[0.0, 0.05, 0.1], sync_every_H=[1.0, 10.0, 100.0],
                       bandwidth=[1.0, 12.5])
    cu = ds["compute_utilisation"].transpose("straggler_s", ...).values
    assert np.all(np.diff(cu, axis=0) <= 1e-15)  # CU never rises with the tail
    assert np.all(np.diff(cu, axis=0)[..., 0, :] < 0)  # at 1 GB/s every variant waits longer
    share = ds["hot_spot"].sel(component="straggle")
    assert float(share.sel(straggler_s=0.0).max()) == 0.0
    assert float(share.sel(straggler_s=0.1).min()) > 0.0
    np.testing.assert_allclose(ds["hot_spot"].sum("component").values, 1.0, rtol=1e-12)
    # a point of the sweep equals the step at that point
    point = sc.replace(straggler_s=0.05, sync_every_H=10.0, wan_Bps=12.5e9)
    np.testing.assert_allclose(ds["step_s"].sel(straggler_s=0.05, sync_every_H=10.0, bandwidth=12.5).values,
                               np.asarray(step_s(point)), rtol=1e-13)


def test_sweep_takes_the_family_by_word():
    ds = bandjax.sweep(bandjax.reference().replace(straggler_s=0.1), straggler=["none", "lognormal"],
                       bandwidth=[12.5])
    assert list(ds["straggler"].values) == ["none", "lognormal"]
    steps = ds["step_s"].transpose("straggler", ...).values
    assert np.all(steps[1] > steps[0])
    np.testing.assert_array_equal(steps[0], np.asarray(step_s(bandjax.reference())).reshape(steps[0].shape))
