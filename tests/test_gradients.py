"""Gradients of step time and time to target with respect to every scenario parameter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import bandjax
from bandjax.metrics import steps_to_target, time_to_target_s
from bandjax.scenario import FIELDS
from bandjax.step import step_s

# At [low] the module's compute binds, so the budget has a non-zero derivative. Utilisation,
# overlap, latency and H are moved inside their ranges (utilisation <= 1, the others >= 0, H >= 1)
# so that central differences stay allowed; the GPU peak is doubled to keep c at the study's. Nothing fails
# here: with failures the recovery rule switches at H = 1 (a job that stops, replicas above), so
# the time has no derivative in H there, and at a rate of 0 Young's interval makes its slope in the
# rate infinite; tests/test_failures.py checks the failure fields' gradients at a positive rate.
REF = bandjax.reference()
BASE = REF.replace(budget_FLOPs=10e9, utilisation=0.5, gpu_peak_FLOPs=2 * REF.gpu_peak_FLOPs,
                   overlap_fraction=0.1, wan_latency_s=1e-4, sync_every_H=2.0)
# fields at 0 in BASE whose only side is above 0 (no central difference): the failure rate, and the
# straggler tail (no tail family here; tests/test_stragglers.py checks its gradient inside a tail)
ONE_SIDED = ("failure_rate_per_hour", "straggler_s")
# K, the topology and the straggler family are choices of whole numbers: no derivative.
DISCRETE = ("dcs", "topology", "straggler")
STEPS = jnp.asarray(steps_to_target(BASE))
# Fields the step or the time to target depends on (energy-only and report fields excluded).
STEP_FIELDS = [f for f in FIELDS if f not in (
    "tokens_per_worker", "flops_per_param_token", "budget_low_FLOPs", "budget_high_FLOPs",
    "gpu_static_W", "gpu_J_per_FLOP", "link_J_per_bit", "wan_J_per_bit", "module_W", *DISCRETE,
    *ONE_SIDED)]


def _along(field):
    """Time to target (all variants) as a function of one field's relative change."""
    def f(x):
        value = getattr(BASE, field) * x
        return time_to_target_s(BASE.replace(**{field: value}), STEPS)
    return f


@pytest.mark.parametrize("field", STEP_FIELDS)
def test_time_to_target_gradient_matches_finite_differences(field):
    check_grads(_along(field), (1.0,), order=1, modes=("fwd", "rev"), eps=1e-6, rtol=1e-5, atol=1e-12)


def test_gradient_with_respect_to_every_leaf_at_once():
    def total(sc):
        return jnp.sum(time_to_target_s(sc, STEPS)) + jnp.sum(step_s(sc))

    grads = jax.grad(total)(jax.tree.map(jnp.asarray, BASE))
    for field in (f for f in FIELDS if f not in (*DISCRETE, *ONE_SIDED)):  # fields the times do not depend on must have a zero gradient
        h = 1e-6 * getattr(BASE, field)
        up = total(BASE.replace(**{field: getattr(BASE, field) + h}))
        down = total(BASE.replace(**{field: getattr(BASE, field) - h}))
        fd = float(up - down) / (2 * h)
        g = float(getattr(grads, field))
        assert g == pytest.approx(fd, rel=1e-5, abs=1e-9 * abs(float(total(BASE))) / abs(getattr(BASE, field))), field
    # d is paid once a sync (every H steps): each variant's time to target moves by its steps (plus
    # the step sum's 1) over H per second of d
    for i, v in enumerate(bandjax.variants.IDS):
        assert float(grads.fixed_s[v]) == pytest.approx((float(STEPS[i]) + 1) / BASE.sync_every_H, rel=1e-12)


def test_gradient_with_respect_to_steps():
    g = jax.grad(lambda s: jnp.sum(time_to_target_s(BASE, s)))(STEPS)
    np.testing.assert_allclose(g, np.asarray(step_s(BASE)), rtol=1e-14)


def test_step_derivative_in_P_includes_compute():
    """Everything but d scales with P (docs/model.md s9, s13: c = 6 P T / R too), so at the reference
    d step / dP = (step - d) / P for every variant."""
    sc = jax.tree.map(jnp.asarray, bandjax.reference())
    jac = jax.jacfwd(lambda P: step_s(sc.replace(params=P)))(sc.params)
    step = np.asarray(step_s(sc))
    d = np.array([float(sc.fixed_s[v]) for v in sc.ids])
    np.testing.assert_allclose(np.asarray(jac), (step - d) / float(sc.params), rtol=1e-12)
    # and the compute's own share: dc/dP = c / P
    assert float(jax.grad(lambda P: sc.replace(params=P).gpu_compute_s)(sc.params)) == pytest.approx(
        0.4918e-3 / 7_916_736, rel=1e-14)
