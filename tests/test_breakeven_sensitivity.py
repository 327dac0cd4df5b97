"""Sensitivities (implicit differentiation against re-solved finite differences) and the inverse."""

import math

import jax
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bandjax
from bandjax import breakeven as be
from bandjax import inverse, metrics, sensitivity, variants

REF = bandjax.reference()


# Elasticities near 0 are compared within 1e-8: a root re-solved to ~1e-15 over a step h = 1e-6
# leaves ~1e-9 of noise in the difference quotient.
def resolved_elasticity(sc, a, b, name, *, over="bandwidth", basis="hypothesis", h=1e-6):
    """Central difference of log x* against log p, re-solving the break-even at p (1 +- h), with
    the steps held at the scenario's (as the elasticities hold them: ENOB moves only the bytes)."""
    theta = (sc, *(float(n) for n in be.pair_steps(sc, a, b, basis)))
    ia, ib = variants.IDS.index(a), variants.IDS.index(b)
    p = float(be.get_parameter(theta, name))

    def log_root(f):
        sc_f, na, nb = be.with_parameter(theta, name, p * f)
        if over == "bandwidth":
            c = be.bandwidth_crossings(sc_f, ia, ib, na, nb, 0.1e9, 1000e9)
        else:
            c = be.field_crossings(sc_f, ia, ib, na, nb, 1e9, 1e13, field="budget_FLOPs")
        return math.log(float(c.x[0]))

    if name == "sync_every_H" and p == 1.0:
        # H = 1 is the bottom of H's range: a second-order one-sided difference, above it only
        d = math.log1p(h)
        return (-3 * log_root(1.0) + 4 * log_root(1 + h) - log_root((1 + h) ** 2)) / (2 * d)
    return (log_root(1 + h) - log_root(1 - h)) / (math.log1p(h) - math.log1p(-h))


PAIRS = [("band_switch", "adamw", "hypothesis"), ("band_switch", "adamw", "exact"),
         ("band_gpu_allreduce", "topk", "hypothesis"), ("band_pluggable", "band_gpu", "hypothesis")]
NAMES = ["params", "gpu_peak_FLOPs", "workers_per_dc", "worker_port_Bps", "qsfp_port_Bps",
         "optics_Sps", "fpga_Bps", "band_fraction", "enob", "sync_every_H", "steps_a", "steps_b"]


@pytest.mark.parametrize("a, b, basis", PAIRS)
def test_bandwidth_elasticities_match_finite_differences(a, b, basis):
    sc = REF.replace(budget_FLOPs=99e9)  # a budget that is charged, so it has an elasticity
    _, e = sensitivity.elasticities(sc, a, b, basis=basis)
    for name in [*NAMES, "budget_FLOPs", f"fixed_s.{a}", f"fixed_s.{b}"]:
        fd = resolved_elasticity(sc, a, b, name, basis=basis)
        assert float(e[name][0]) == pytest.approx(fd, rel=1e-5, abs=1e-8), name
    # c depends on peak x utilisation only (docs/model.md s13), so their elasticities are equal; the
    # reference utilisation is 1, its upper bound, so it has no central difference of its own.
    assert float(e["utilisation"][0]) == pytest.approx(float(e["gpu_peak_FLOPs"][0]), rel=1e-12, abs=1e-15)


def test_budget_elasticity_is_zero_at_free_and_sums_are_homogeneous():
    _, e = sensitivity.elasticities(REF, "E'", "adamw")
    assert float(e["budget_FLOPs"][0]) == 0.0
    assert float(e["gpu_J_per_FLOP" if "gpu_J_per_FLOP" in e else "steps_a"][0]) != 0.0
    # Scaling both step counts together moves nothing: their elasticities cancel.
    assert float(e["steps_a"][0] + e["steps_b"][0]) == pytest.approx(0.0, abs=1e-12)


def test_elasticities_over_the_budget_match_finite_differences():
    sc = REF.replace(wan_Bps=1e9)
    _, e = sensitivity.elasticities(sc, "E'", "adamw", over="budget")
    for name in ("optics_Sps", "transform_flops_per_param", "params", "wan_Bps", "qsfp_port_Bps"):
        fd = resolved_elasticity(sc, "band_switch", "adamw", name, over="budget")
        assert float(e[name][0]) == pytest.approx(fd, rel=1e-5, abs=1e-8), name


def test_budget_break_even_elasticities():
    value, e = sensitivity.budget_elasticities(REF)
    assert value == pytest.approx(140e9, rel=1e-12)
    # budget* = transform FLOPs x optics rate: elasticity 1 in each, 0 in everything else.
    assert e["optics_Sps"] == pytest.approx(1.0, rel=1e-12)
    assert e["transform_flops_per_param"] == pytest.approx(1.0, rel=1e-12)
    assert max(abs(v) for n, v in e.items() if n not in ("optics_Sps", "transform_flops_per_param")) < 1e-12


FIELDS = st.fixed_dictionaries({
    "params": st.floats(1e6, 1e10),
    "workers_per_dc": st.integers(1, 8).map(float),
    "qsfp_port_Bps": st.floats(10e9, 50e9),
    "optics_Sps": st.floats(1e9, 10e9),
    "sync_every_H": st.sampled_from([1.0, 4.0]),
})


@settings(max_examples=8, deadline=None)
@given(fields=FIELDS, basis=st.sampled_from(bandjax.BASES))
def test_gradients_of_random_crossings_match_finite_differences(fields, basis):
    sc = REF.at_model_size(fields["params"]).replace(
        **{k: v for k, v in fields.items() if k != "params"})
    # Away from kinks: where two module stages tie, the slowest one switches (no derivative).
    stages = np.sort(np.asarray(bandjax.module_stages_s(sc)))
    assume(stages[-1] > stages[-2] * (1 + 1e-3))
    r, e = sensitivity.elasticities(sc, "E'", "C", basis=basis)
    if not np.isfinite(r.x[0]):
        return
    for name in ("optics_Sps", "qsfp_port_Bps", "gpu_peak_FLOPs", "steps_a"):
        fd = resolved_elasticity(sc, "band_switch", "band_gpu", name, basis=basis)
        assert float(e[name][0]) == pytest.approx(fd, rel=1e-5, abs=1e-8), name


def test_reverse_mode_gradient_through_the_search():
    ia, ib = variants.IDS.index("band_switch"), variants.IDS.index("adamw")

    def crossing(optics):
        return be.bandwidth_crossings(REF.replace(optics_Sps=optics), ia, ib, 1800.0, 400.0,
                                      0.1e9, 1000e9).x[0]

    g = jax.grad(crossing)(3.5e9)
    h = 1e-6 * 3.5e9
    fd = (crossing(3.5e9 + h) - crossing(3.5e9 - h)) / (2 * h)
    assert float(g) == pytest.approx(float(fd), rel=1e-5)


# --------------------------------------------------------------------------- the inverse question


def tie(sc, a, b, basis, steps=None):
    n = metrics.steps_to_target(sc, None, basis)
    if steps is not None:
        n = n.copy()
        n[variants.IDS.index(a)] = steps
    T = np.asarray(metrics.time_to_target_s(sc, n))
    return T[variants.IDS.index(a)] / T[variants.IDS.index(b)] - 1


def test_inverse_steps_that_make_the_switch_beat_the_gpu_allreduce_on_the_exact_basis():
    c = inverse.smallest_change(REF, "E'", "C'", "steps_a", basis="exact")
    assert c.status == "found" and c.current == 2667.0
    assert abs(tie(REF, "band_switch", "band_gpu_allreduce", "exact", c.required)) < 1e-9
    # Linear in the steps: n* = 2667 x T_C' / T_E'.
    assert c.required == pytest.approx(2667.0 * c.time_b_s / c.time_a_s, rel=1e-12)


def test_inverse_wan_is_the_bandwidth_break_even():
    c = inverse.smallest_change(REF, "E'", "adamw", "wan_Bps", basis="exact")
    r = be.break_even(REF, "E'", "adamw", basis="exact")
    assert c.status == "found" and c.required == pytest.approx(float(r.x[0]), rel=1e-12)
    assert c.ratio == pytest.approx(c.required / 12.5e9, rel=1e-15)


def test_inverse_optics_rate_for_the_pluggable_module():
    sc = REF.replace(wan_Bps=1e9)
    c = inverse.smallest_change(sc, "E", "C", "optics_Sps")
    # At 1 GB/s E already beats C (their break-even is 1.81 GB/s).
    assert c.status == "already" and c.required == c.current
    sc = REF.replace(wan_Bps=2.5e9)
    c = inverse.smallest_change(sc, "E", "C", "optics_Sps")
    assert c.status == "found" and c.ratio > 1
    assert abs(tie(sc.replace(optics_Sps=c.required), "band_pluggable", "band_gpu", "hypothesis")) < 1e-9


def test_inverse_none_in_range():
    c = inverse.smallest_change(REF, "E'", "C'", "optics_Sps", basis="exact")
    assert c.status == "none_in_range" and math.isnan(c.required)
    assert (c.lo, c.hi) == (3.5e9 / 100, 3.5e9 * 100)


def test_inverse_searches_at_once_give_each_search_alone_bit_for_bit():
    # smallest_changes runs every parameter's search in one compiled search (a select on the
    # searched parameter); each must find what break_even over that parameter alone finds
    sc = REF.replace(wan_Bps=2.5e9)
    targets = [("E", "C", "hypothesis"), ("E'", "C'", "exact")]
    names = ("optics_Sps", "budget_FLOPs", "wan_Bps", "steps_a")
    changes = inverse.smallest_changes(sc, targets, names)
    assert [(c.a, c.b, c.parameter) for c in changes] == [
        (be.resolve_variant(a), be.resolve_variant(b), p) for a, b, _ in targets for p in names]
    for c in changes:
        alone = inverse.smallest_change(sc, c.a, c.b, c.parameter, basis=c.basis)
        assert c.as_dict().keys() == alone.as_dict().keys()
        for k, v in c.as_dict().items():
            assert v == alone.as_dict()[k] or (v != v and alone.as_dict()[k] != alone.as_dict()[k]), k
        over = {"wan_Bps": "bandwidth", "budget_FLOPs": "budget"}.get(c.parameter, c.parameter)
        r = be.break_even(sc, c.a, c.b, over=over, basis=c.basis)
        xs = np.asarray(r.x).reshape(-1)
        if c.status == "found":
            assert c.required in xs[np.isfinite(xs)].tolist()
    assert {c.status for c in changes} >= {"found"}


_B = np.full((3, 3), 12.5e9)
_B[0, 1] = 6.0e9  # one slower link, one farther: a mesh whose pacing link changes with B
_L = np.zeros((3, 3))
_L[1, 2] = 2e-3


@pytest.mark.parametrize("sc", [REF, REF.replace(straggler=2.0, straggler_s=0.5),
                                REF.replace(dcs=3.0, topology=1.0),
                                REF.replace(topology="mesh").with_links(_B, _L)],
                         ids=["reference", "stragglers", "mesh", "links"])
def test_bandwidth_elasticities_at_the_roots_are_those_through_the_search(sc):
    """`elasticities` (and the report) take the implicit function theorem at the crossings the
    search found (sensitivity.quick_elasticities_at), where they once differentiated through a
    second search (sensitivity.crossing_elasticities, kept as the reference here): the same
    derivatives of every pair, within 1e-10 relative (1e-13 absolute where one is near 0)."""
    names = tuple(be.parameters(sc))
    a = sc.ids
    pairs = [(x, y) for i, x in enumerate(a) for y in a[i + 1:]]
    ia = np.array([a.index(x) for x, _ in pairs])
    ib = np.array([a.index(y) for _, y in pairs])
    na = np.array([sc.steps_of(x, float(sc.enob), "hypothesis") for x, _ in pairs])
    nb = np.array([sc.steps_of(y, float(sc.enob), "hypothesis") for _, y in pairs])
    c = be.bandwidth_crossings(sc, ia, ib, na, nb, 0.1e9, 1000e9)
    sd = be.table_as_data(sc)
    through = np.asarray(sensitivity.crossing_elasticities(
        sd, ia, ib, na, nb, 0.1e9, 1000e9, max_roots=c.x.shape[-1],
        general=be.needs_general_search(sc)))
    at = np.asarray(sensitivity.quick_elasticities_at(sd, ia, ib, na, nb, np.asarray(c.x),
                                                      names.index("wan_Bps"), names))
    assert np.isfinite(np.asarray(c.x)).sum() >= 5  # crossings to compare
    np.testing.assert_array_equal(np.isnan(at), np.isnan(through))
    np.testing.assert_allclose(at, through, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("changes", [{}, {"budget_FLOPs": 5e11, "optics_Sps": 3e9},
                                     {"qsfp_port_Bps": 40e9, "params": 2e9}],
                         ids=["reference", "budget", "ports"])
def test_budget_elasticities_at_the_root_are_those_through_the_search(changes):
    """budget_elasticities takes the implicit function theorem at budget_break_even's own root;
    the reference here differentiates through a second search (as it once did, jax.jacfwd of
    log x* with every parameter scaled): the same elasticities within 1e-12 (1e-15 absolute
    near 0) and the same break-even, bit for bit."""
    import dataclasses

    sc = dataclasses.replace(REF.replace(**changes), links=None)
    value, e = sensitivity.budget_elasticities(sc)
    names = tuple(e)
    theta = (sc, 1.0, 1.0)

    def log_root(z):
        sc_z, _, _ = sensitivity._scaled(theta, names, z)
        return jax.numpy.log(be.budget_break_even_search(sc_z, 1e6, 1e18).x[..., 0])

    through = np.asarray(jax.jit(jax.jacfwd(log_root))(jax.numpy.zeros(len(names))))
    assert value / 1e9 == be.budget_break_even(sc)["numeric_GFLOPs"]  # the same search
    np.testing.assert_allclose([e[n] for n in names], through, rtol=1e-12, atol=1e-15)
