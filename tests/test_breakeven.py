"""Break-evens: crossings, statuses, the multi-root path, budget, ENOB, gradients."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
from bandjax import breakeven as be
from bandjax import metrics, roots, variants
from bandjax.scenario import BASES

REF = bandjax.reference()
LO, HI = 0.1e9, 1000e9


def times_at(sc, B, basis):
    """Times to target of all variants at WAN bandwidth B, straight from the closed forms."""
    steps = metrics.steps_to_target(sc, None, basis)
    return np.asarray(metrics.time_to_target_s(sc.replace(wan_Bps=B), steps))


# --------------------------------------------------------------------------- reference scenario


@pytest.mark.parametrize("basis", BASES)
def test_reference_switch_vs_adamw_times_agree_at_the_crossing(basis):
    r = be.break_even(REF, "E'", "adamw", basis=basis)
    at = r.at()
    assert at["status"] == "crosses" and len(at["x"]) == 1
    x = at["x"][0]
    T = times_at(REF, x, basis)
    ia, ib = variants.IDS.index("band_switch"), variants.IDS.index("adamw")
    assert T[ia] == pytest.approx(T[ib], rel=1e-9)
    # E' is faster below (the WAN is dear), AdamW above.
    assert at["winners"] == ["band_switch", "adamw"]
    below, above = times_at(REF, x / 1.01, basis), times_at(REF, x * 1.01, basis)
    assert below[ia] < below[ib] and above[ia] > above[ib]


def test_reference_switch_vs_adamw_values():
    # Closed form of the crossing for T = n (R + V/B): B* = (n_a V_a - n_b V_b) / (n_b R_b - n_a R_a).
    for basis in BASES:
        terms = np.asarray(bandjax.step_terms_s(REF))
        step, wan = terms.sum(-1), terms[:, bandjax.COMPONENTS.index("wan")]
        R, V = step - wan, wan * REF.wan_Bps
        n = metrics.steps_to_target(REF, None, basis)
        a, b = variants.IDS.index("band_switch"), variants.IDS.index("adamw")
        expected = (n[a] * V[a] - n[b] * V[b]) / (n[b] * R[b] - n[a] * R[a])
        got = be.break_even(REF, "band_switch", "adamw", basis=basis).x[0]
        assert got == pytest.approx(expected, rel=1e-12)


def test_hypothesis_basis_moves_only_pairs_with_the_switch():
    for a, b in (("band_gpu_allreduce", "adamw"), ("band_pluggable", "band_gpu")):
        h = be.break_even(REF, a, b, basis="hypothesis").x
        e = be.break_even(REF, a, b, basis="exact").x
        np.testing.assert_array_equal(h, e)
    h = be.break_even(REF, "E'", "adamw", basis="hypothesis").x[0]
    e = be.break_even(REF, "E'", "adamw", basis="exact").x[0]
    assert e < h  # more steps on the exact basis: the WAN must be dearer for E' to win


def test_no_crossing_says_who_wins_throughout():
    r = be.break_even(REF, "topk", "adamw")
    assert r.at() == {"x": [], "ties": [], "winners": ["topk"], "cuts": [], "status": "a_wins_throughout"}
    T_lo, T_hi = times_at(REF, LO, "hypothesis"), times_at(REF, HI, "hypothesis")
    assert T_lo[1] < T_lo[0] and T_hi[1] < T_hi[0]
    assert np.isnan(r.x).all()


def test_never_and_not_measured_statuses():
    at6 = REF.replace(enob=6.0)  # E at ENOB 6 never reaches the loss (docs/model.md section 6)
    assert be.break_even(at6, "E", "adamw").at()["status"] == "b_wins_throughout"
    assert be.break_even(at6, "adamw", "E").at()["status"] == "a_wins_throughout"
    assert be.break_even(at6, "E", "E'", basis="hypothesis").at()["status"] == "neither_reaches_target"
    at7 = REF.replace(enob=7.0)  # not measured: no answer
    assert be.break_even(at7, "E", "adamw").at()["status"] == "not_available"
    # On the exact basis E' takes max(E's, the exact band's) (amended docs/model.md s6): never at 6,
    # not available at 7, and at 8 the exact band's 2,667, so it still crosses AdamW.
    assert be.break_even(at6, "E'", "adamw", basis="exact").at()["status"] == "b_wins_throughout"
    assert be.break_even(at7, "E'", "adamw", basis="exact").at()["status"] == "not_available"
    assert be.break_even(REF, "E'", "adamw", basis="exact").at()["status"] == "crosses"


def test_vectorised_over_a_grid_matches_point_by_point():
    sizes = np.array([1e6, 7.9e6, 1e8, 8.03e9])
    grid = REF.replace(params=sizes, gpu_compute_s=REF.gpu_compute_s * sizes / REF.params,
                       sync_every_H=np.array([1.0, 4.0])[:, None])
    r = be.break_even(grid, "E'", "adamw", basis="exact")
    assert r.x.shape == (2, 4, 1)
    for i, H in enumerate([1.0, 4.0]):
        for j, P in enumerate(sizes):
            point = REF.at_model_size(P).replace(sync_every_H=H)
            one = be.break_even(point, "E'", "adamw", basis="exact").x[0]
            np.testing.assert_allclose(r.x[i, j, 0], one, rtol=1e-12, equal_nan=True)


# --------------------------------------------------------------------------- property tests

FIELDS = st.fixed_dictionaries({
    "params": st.floats(1e6, 1e11),
    "workers_per_dc": st.integers(1, 16).map(float),
    "qsfp_port_Bps": st.floats(5e9, 100e9),
    "worker_port_Bps": st.floats(10e9, 400e9),
    "optics_Sps": st.floats(0.5e9, 20e9),
    "budget_FLOPs": st.sampled_from([5e9, 10e9, 99e9, 300e9, math.inf]),
    "sync_every_H": st.sampled_from([1.0, 2.0, 8.0, 32.0]),
    "enob": st.sampled_from([6.0, 8.0]),
})


def scenario(fields):
    sc = REF.at_model_size(fields["params"])
    return sc.replace(**{k: v for k, v in fields.items() if k != "params"})


@settings(max_examples=30, deadline=None)
@given(fields=FIELDS, pair=st.sampled_from(list(range(15))), basis=st.sampled_from(BASES))
def test_crossings_tie_and_dense_scan_agrees(fields, pair, basis):
    sc = scenario(fields)
    a, b = [(a, b) for i, a in enumerate(variants.IDS) for b in variants.IDS[i + 1:]][pair]
    r = be.break_even(sc, a, b, basis=basis)
    at = r.at()
    ia, ib = variants.IDS.index(a), variants.IDS.index(b)
    for x in at["x"]:
        T = times_at(sc, x, basis)
        assert T[ia] == pytest.approx(T[ib], rel=1e-9)
    # A dense scan of the range: its sign changes are exactly the crossings returned.
    B = np.geomspace(LO, HI, 4001)
    T = times_at(sc, B, basis)  # (B, variant)
    with np.errstate(invalid="ignore"):  # inf - inf where neither reaches the target
        d = np.log(T[:, ia]) - np.log(T[:, ib])
    ok = np.isfinite(d)
    if not ok.all():
        assert at["x"] == [] and at["status"] != "crosses"
        return
    changes = np.flatnonzero(np.diff(d >= 0))
    assert len(changes) == len(at["x"])
    for k, x in zip(changes, at["x"]):
        assert B[k] <= x <= B[k + 1]
    if not at["x"]:
        expected = "a_wins_throughout" if d[0] < 0 else "b_wins_throughout"
        assert at["status"] == expected


@settings(max_examples=15, deadline=None)
@given(fields=FIELDS, basis=st.sampled_from(BASES))
def test_fast_bandwidth_path_equals_re_evaluating_the_closed_forms(fields, basis):
    sc = scenario(fields)
    fast = be.break_even(sc, "E'", "adamw", basis=basis)
    slow = be.break_even(sc, "E'", "adamw", basis=basis, over="wan_Bps", lo=LO, hi=HI)
    np.testing.assert_allclose(fast.x, slow.x, rtol=1e-11, equal_nan=True)
    assert fast.at()["status"] == slow.at()["status"]


# --------------------------------------------------------------------------- several crossings


def wiggly(x, theta):
    """A synthetic pair: T_b = T_a (1 + amp sin(3 log(x / x0))), crossing wherever the sine is 0."""
    amp, x0 = theta
    return 1.0 + amp * jnp.sin(3.0 * jnp.log(x / x0))


def test_every_crossing_of_a_curve_pair_that_crosses_many_times():
    theta = (jnp.asarray(0.2), jnp.asarray(1e9))
    c = jax.jit(lambda th: roots.time_crossings(lambda x, _: jnp.ones_like(x), wiggly, th, LO, HI,
                                                max_roots=10))(theta)
    # 3 log(x / 1e9) = k pi with log(x / 1e9) in [log 0.1, log 1000] = [-2.30, 6.91]: k = -2 .. 6
    k = np.arange(-2, 7)
    expected = 1e9 * np.exp(k * np.pi / 3)
    assert int(c.count) == 9
    np.testing.assert_allclose(np.asarray(c.x)[:9], expected, rtol=1e-13)
    assert np.isnan(np.asarray(c.x)[9])
    # T_a = 1 wins (is smaller) where sin > 0; the winners alternate.
    below = np.asarray(c.a_wins_below)[:9]
    np.testing.assert_array_equal(below, np.sin(3 * np.log(expected / 1.001 / 1e9)) > 0)
    assert np.all(below[1:] != below[:-1])
    np.testing.assert_allclose(np.asarray(c.residual)[:9], 0.0, atol=1e-14)


def test_more_crossings_than_slots_are_counted_and_the_first_returned():
    theta = (jnp.asarray(0.2), jnp.asarray(1e9))
    c = roots.time_crossings(lambda x, th: jnp.ones_like(x), wiggly, theta, LO, HI, max_roots=2)
    assert int(c.count) == 9
    np.testing.assert_allclose(np.asarray(c.x), 1e9 * np.exp(np.array([-2, -1]) * np.pi / 3), rtol=1e-13)


def test_multi_root_search_is_vectorised_and_differentiable():
    amp = jnp.array([0.1, 0.2, 0.4])
    x0 = jnp.array([1e9, 2e9, 5e9])

    def first_crossing(x0):
        return roots.time_crossings(lambda x, th: jnp.ones_like(x), wiggly, (amp, x0), LO, HI,
                                    max_roots=10).x[..., 0]

    x = jax.jit(first_crossing)(x0)
    np.testing.assert_allclose(x, x0 * np.exp(np.floor(3 * np.log(LO / x0) / np.pi + 1) * np.pi / 3), rtol=1e-13)
    # Each crossing scales with x0: dx/dx0 = x / x0.
    grad = jax.jit(jax.jacfwd(first_crossing))(x0)
    np.testing.assert_allclose(np.diag(grad), x / x0, rtol=1e-10)


def test_a_residual_that_is_zero_over_grid_points_is_a_tie_not_a_crossing():
    # < 0 below 1 GB/s, 0 from 1 to 10 GB/s (several grid points), > 0 above: equal over a range is
    # a tie with a faster below and b above (docs/model.md section 10), never a crossing. Its ends
    # are bracket points: the grid's nearest inside it, or exact where they are given as extra.
    def step(x, th):
        return jnp.minimum(0.0, jnp.log(x / th[0])) + jnp.maximum(0.0, jnp.log(x / th[1]))

    th = (jnp.asarray(1e9), jnp.asarray(10e9))
    grid = np.exp(np.linspace(np.log(LO), np.log(HI), 32))
    for extra, ends in ((None, (grid[grid >= 1e9][0], grid[grid <= 10e9][-1])), ([1e9, 10e9], (1e9, 10e9))):
        c = roots.find_crossings(step, th, LO, HI, extra=extra)
        assert int(c.count) == 0 and int(c.tie_count) == 1 and int(c.status) == roots.TIE_PART
        np.testing.assert_allclose([float(c.tie_lo[0]), float(c.tie_hi[0])], ends, rtol=1e-12)
        assert int(c.tie_below[0]) == -1 and int(c.tie_above[0]) == 1
        assert np.isnan(float(c.tie_lo[1]))


def test_a_crossing_on_a_bracket_point_is_found_once_not_as_a_tie():
    # r = log(x / 1 GB/s) is 0 at 1 GB/s, given twice (as a repeated extra point): one crossing
    c = roots.find_crossings(lambda x, th: jnp.log(x / th), jnp.asarray(1e9), LO, HI,
                             extra=[1e9, 1e9])
    assert int(c.count) == 1 and int(c.tie_count) == 0
    assert float(c.x[0]) == pytest.approx(1e9, rel=1e-15)


def test_identical_curves_tie_throughout():
    c = roots.time_crossings(lambda x, th: th + 0 * x, lambda x, th: th + 0 * x, jnp.asarray(2.0), LO, HI)
    assert int(c.status) == roots.TIE and int(c.count) == 0
    assert int(c.tie_count) == 1 and int(c.tie_below[0]) == int(c.tie_above[0]) == 0
    np.testing.assert_allclose([float(c.tie_lo[0]), float(c.tie_hi[0])], [LO, HI], rtol=1e-14)


# --------------------------------------------------------------------------- budget and ENOB


def test_budget_break_even_reference():
    # docs/model.md section 4: budget* = 40 x 3.5e9 = 140.0 GFLOP/s, independent of P.
    for P in (REF.params, 8.03e9):
        out = be.budget_break_even(REF.at_model_size(P))
        assert out["numeric_GFLOPs"] == pytest.approx(140.0, rel=1e-12)
        assert out["closed_form_GFLOPs"] == pytest.approx(140.0, rel=1e-15)
        assert out["binding_above"] == "optics"


def test_budget_break_even_when_the_port_is_the_next_slowest_stage():
    # A 10 GB/s module port takes G / 10e9 = 4P / 1e10 > P / 3.5e9: compute = port at 40P / (4P/1e10).
    out = be.budget_break_even(REF.replace(qsfp_port_Bps=10e9))
    assert out["numeric_GFLOPs"] == pytest.approx(100.0, rel=1e-12)
    assert out["closed_form_GFLOPs"] == pytest.approx(140.0, rel=1e-15)
    assert out["binding_above"] == "port"


def test_pair_crossing_over_the_budget():
    r = be.break_even(REF.replace(wan_Bps=1e9), "E'", "adamw", over="budget")
    (x,) = r.at()["x"]
    a, b = variants.IDS.index("band_switch"), variants.IDS.index("adamw")
    T = np.asarray(metrics.time_to_target_s(REF.replace(wan_Bps=1e9, budget_FLOPs=x),
                                            metrics.steps_to_target(REF)))
    assert T[a] == pytest.approx(T[b], rel=1e-9)
    assert r.at()["winners"] == ["adamw", "band_switch"]  # a bigger budget helps E'


def test_enob_break_even_against_brute_force():
    GBps = np.array([0.1, 0.5, 1.0, 2.0, 12.5, 100.0])
    for basis in BASES:
        got = be.enob_break_even(REF, "E'", "adamw", GBps, basis=basis)
        a, b = variants.IDS.index("band_switch"), variants.IDS.index("adamw")
        for g, e in zip(GBps, got):
            wins = [enob for enob in (6, 8)
                    if (lambda T: T[a] < T[b])(times_at(REF.replace(enob=float(enob)), g * 1e9, basis))]
            assert (np.isnan(e) and not wins) or e == min(wins)
    # At ENOB 6 E never reaches the loss: on the hypothesis basis E' needs ENOB 8.
    np.testing.assert_array_equal(be.enob_break_even(REF, "E'", "adamw", [1.0], basis="hypothesis"), [8.0])
    np.testing.assert_array_equal(be.enob_break_even(REF, "E'", "adamw", [12.5]), [np.nan])


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, message", [
    (lambda: be.break_even(REF, "E''", "adamw"), "a = \"E''\" is not known; allowed: adamw"),
    (lambda: be.break_even(REF, "adamw", "AdamW"), "two different variants"),
    (lambda: be.break_even(REF, "E'", "adamw", basis="optimistic"), "basis = 'optimistic'"),
    (lambda: be.break_even(REF, "E'", "adamw", lo=5e9, hi=1e9), "0 < lo < hi"),
    (lambda: be.break_even(REF, "E'", "adamw", over="optics"), "parameter = 'optics' is not known"),
    (lambda: be.break_even(REF, "E'", "adamw", over="enob"), "ENOB is discrete"),
    (lambda: be.enob_break_even(REF, "adamw", "topk", [1.0]), "not an in-transit variant"),
    (lambda: be.enob_break_even(REF, "E'", "topk", [0.0]), "must be finite and > 0 GB/s"),
    (lambda: roots.find_crossings(lambda x, t: x, 1.0, 0.0, 1.0), "lo = 0.0: the range"),
])
def test_bad_input_names_the_parameter(call, message):
    with pytest.raises(ValueError, match=None) as err:
        call()
    assert message in str(err.value)
