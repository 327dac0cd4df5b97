"""Workers that straggle (docs/model.md section 16): the compute part of an inner step when each
worker's compute is c_i X, X independent across workers and steps, mean 1. Pure ``jax.numpy``,
written for one point and broadcast; differentiable in the tail's parameter (and in the counts,
which enter as numbers).

The families of X (the scenario's ``straggler``, a leaf 0 / 1 / 2 named by
:data:`bandjax.scenario.STRAGGLERS`; ``s`` its ``straggler_s``):

    none          X = 1
    exponential   X = (1 - s) + s E, E ~ Exp(1), tail share s in [0, 1]
    lognormal     ln X ~ Normal(-s^2 / 2, s^2), s = sigma >= 0

The largest of m draws has mean mu_m and standard deviation sigma_m (:func:`max_moments`):

    exponential   mu_m = 1 - s + s H_m,   sigma_m = s sqrt(sum_{k<=m} 1/k^2)
                  H_m = digamma(m + 1) + gamma,  sum_{k<=m} 1/k^2 = pi^2/6 - polygamma(1, m + 1)
    lognormal     X_max = exp(s Z_m - s^2/2), Z_m the largest of m standard normals, whose
                  density m phi(z) Phi(z)^(m-1) is integrated on a fixed grid of z

The compute part of an inner step (:func:`compute_part_s`), DC i with c_i s and n_i workers:

    H = 1    E[max over every worker of c_i X] = int_0^inf 1 - prod_i F(t / c_i)^(n_i) dt
    H > 1    DC i's H_i inner steps sum to about Normal(H_i c_i mu_(n_i), H_i (c_i sigma_(n_i))^2);
             compute part = E[max of those K normals] / H

With K equal DCs of n workers this is c M (:func:`equal_sites_factor`), M = mu_(K n) at H = 1
and mu_n + sigma_n e_K / sqrt(H) at H > 1, e_K = E[max of K standard normals]
(:func:`expected_max_normal`): rounds dilute the straggle between DCs by sqrt(H), not the
straggle inside a DC.

Quadrature, and why this one. The integrands are smooth and fall off like a normal's or an
exponential's tail, so both rules reach rounding error with nodes that do not depend on the
point, keeping a sweep one compiled call:

- the largest of m standard normals (lognormal moments, e_K): the trapezoid rule on a fixed grid
  of :data:`Z_NODES` points over z in [-10, 10 + 2 s]. On the real line the trapezoid rule
  converges faster than any power for an analytic integrand that vanishes at the ends (the error
  falls like exp(-2 pi^2 w^2 / h^2) for a feature of width w: the density at m = 1e5 is 0.25
  wide, h is 0.01). Dividing by the grid's own total mass cancels what is left. Against sums of
  1e6-point Simpson rules: 1e-13 relative for m from 1 to 1e5 and s up to 1.
- the per-DC integrals (H = 1 over every worker; the largest of K normals): Gauss-Legendre with
  :data:`GL_NODES` nodes on the interval where the integrand moves, [a, b], from the family's
  quantiles: a = max_i c_i Q(eps^(1/n_i)) (below it P(max <= t) <= eps, and the integral from 0
  to a is a to within eps a), b = max_i c_i Q(1 - eps / (K n_i)) (above it 1 - P <= eps). The
  H = 1 integral is taken in log t, where a lognormal's tail is a normal's; a zero-width
  interval (nothing straggles) gives max c_i exactly. Gauss-Legendre rather than a fine grid:
  the interval adapts to each point, and on it the integrand is a smooth step a few widths wide,
  which 256 nodes resolve to 1e-12.

Accuracy (tests/test_stragglers.py): the worked values of docs/model.md section 16 to their
printed 6 decimals; the general per-DC functions agree with the equal-sites closed forms to
1e-10 relative.
"""

from __future__ import annotations

import dataclasses

import math
from statistics import NormalDist

from . import _jax  # noqa: F401  (64-bit floats)
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, log_ndtr, ndtr, ndtri, polygamma

from .scenario import STRAGGLERS

NONE, EXPONENTIAL, LOGNORMAL = (float(STRAGGLERS.index(f)) for f in ("none", "exponential",
                                                                      "lognormal"))
Z_NODES = 2048  # trapezoid points for the largest of m standard normals
Z_LO, Z_HI = -10.0, 10.0  # the grid's ends (the upper one moves up by 2 s for the lognormal)
GL_NODES = 256  # Gauss-Legendre nodes of the per-DC integrals
EPS = 1e-14  # the probability left outside the per-DC integrals' intervals
_GL_X, _GL_W = np.polynomial.legendre.leggauss(GL_NODES)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def harmonic(m):
    """H_m = sum_{k<=m} 1/k = digamma(m + 1) + Euler's gamma (any m >= 0, differentiable)."""
    return digamma(jnp.asarray(m, dtype=float) + 1.0) + np.euler_gamma


def harmonic2(m):
    """sum_{k<=m} 1/k^2 = pi^2/6 - polygamma(1, m + 1)."""
    return math.pi ** 2 / 6.0 - polygamma(1, jnp.asarray(m, dtype=float) + 1.0)


def exponential_max_moments(s, m):
    """(mu_m, sigma_m) of the largest of m draws of X = (1 - s) + s E, E ~ Exp(1): exact sums.

        mu_m = 1 - s + s H_m,   sigma_m = s sqrt(sum_{k<=m} 1/k^2)
    """
    s = jnp.asarray(s, dtype=float)
    return 1.0 - s + s * harmonic(m), s * jnp.sqrt(harmonic2(m))


def _z_grid(upper_shift=0.0):
    """Trapezoid nodes z (..., Z_NODES) over [Z_LO, Z_HI + upper_shift] (the weights are equal
    but for the ends, where the integrands are ~1e-22; every caller divides by the grid's total)."""
    t = jnp.linspace(0.0, 1.0, Z_NODES)
    return Z_LO + (Z_HI - Z_LO + jnp.asarray(upper_shift, dtype=float)[..., None]) * t


def _max_normal_density(z, m):
    """m phi(z) Phi(z)^(m - 1), the density of the largest of m standard normals (m (..., 1))."""
    return m * jnp.exp(-0.5 * z * z - _LOG_SQRT_2PI + (m - 1.0) * log_ndtr(z))


def expected_max_normal(K):
    """e_K = E[max of K standard normals] (K >= 1; e_1 = 0, e_2 = 1/sqrt(pi)), by quadrature."""
    K = jnp.asarray(K, dtype=float)
    z = _z_grid(jnp.zeros_like(K))
    p = _max_normal_density(z, K[..., None])
    return jnp.sum(z * p, axis=-1) / jnp.sum(p, axis=-1)


def lognormal_max_moments(sigma, m):
    """(mu_m, sigma_m) of the largest of m draws of X, ln X ~ Normal(-sigma^2/2, sigma^2), by
    quadrature over Z_m (X_max = exp(sigma Z_m - sigma^2/2)).

    The deviation is taken as sigma x the deviation of expm1(sigma z) / sigma (-> z as sigma -> 0),
    so sigma_m stays exact and differentiable at sigma = 0, where E[X^2] - mu^2 would cancel.
    """
    sigma = jnp.asarray(sigma, dtype=float)
    m = jnp.asarray(m, dtype=float)
    sigma, m = jnp.broadcast_arrays(sigma, m)
    zero = sigma == 0
    safe = jnp.where(zero, 1.0, sigma)[..., None]
    z = _z_grid(2.0 * sigma)
    p = _max_normal_density(z, m[..., None])
    total = jnp.sum(p, axis=-1)
    d = jnp.where(zero[..., None], z, jnp.expm1(safe * z) / safe)  # (e^(sigma z) - 1) / sigma
    mean_d = jnp.sum(d * p, axis=-1) / total
    var_d = jnp.sum((d - mean_d[..., None]) ** 2 * p, axis=-1) / total
    shrink = jnp.exp(-0.5 * sigma * sigma)
    return shrink * (1.0 + sigma * mean_d), shrink * sigma * jnp.sqrt(var_d)


def max_moments(family, s, m):
    """(mu_m, sigma_m) of the largest of m draws of the family ``family`` (0 none, 1 exponential,
    2 lognormal; a leaf, so the choice is a select) with parameter ``s``; none: (1, 0)."""
    family = jnp.asarray(family, dtype=float)
    mu_e, sd_e = exponential_max_moments(s, m)
    mu_l, sd_l = lognormal_max_moments(s, m)
    mu = jnp.where(family == EXPONENTIAL, mu_e, jnp.where(family == LOGNORMAL, mu_l, 1.0))
    sd = jnp.where(family == EXPONENTIAL, sd_e, jnp.where(family == LOGNORMAL, sd_l, 0.0))
    return mu, sd


def equal_sites_factor(family, s, n, K, H):
    """M, the compute part of an inner step over c, for K equal DCs of n workers each:

        M = 1                              nothing straggles
        M = mu_(K n)                       H = 1 (every worker syncs every step)
        M = mu_n + sigma_n e_K / sqrt(H)   H > 1 (normal approximation of each DC's round)

    Every argument broadcasts; ``H`` may be per variant (the last axis)."""
    H = jnp.asarray(H, dtype=float)
    n = jnp.asarray(n, dtype=float)
    mu_N, _ = max_moments(family, s, n * K)
    mu_n, sd_n = max_moments(family, s, n)
    rounds = mu_n + sd_n * expected_max_normal(K) / jnp.sqrt(H)
    return jnp.where(jnp.asarray(family) == NONE, 1.0, jnp.where(H == 1.0, mu_N, rounds))


# ------------------------------------------------------------------------------- per-DC forms


def _quantile(p_log, upper, family, s):
    """The family's quantile at probability exp(p_log) (``upper`` False) or 1 - exp(p_log)
    (``upper`` True), each written to keep its precision near 1."""
    safe = jnp.where(s > 0, s, 1.0)
    if upper:
        e = 1.0 - s - s * p_log  # -log1p(-(1 - q)) = -log q
        z = -ndtri(jnp.exp(p_log))
    else:
        e = 1.0 - s - s * jnp.log(-jnp.expm1(p_log))
        z = ndtri(jnp.exp(p_log))
    lognormal = jnp.exp(-0.5 * safe * safe + safe * z)
    lognormal = jnp.where(s > 0, lognormal, 1.0)
    return jnp.where(family == EXPONENTIAL, e, jnp.where(family == LOGNORMAL, lognormal, 1.0))


def _log_cdf(x, family, s):
    """log P(X <= x) for x > 0 (log 0 = -inf below the support)."""
    safe = jnp.where(s > 0, s, 1.0)
    y = x - (1.0 - s)
    expo = jnp.where(y > 0, jnp.log(-jnp.expm1(-jnp.where(y > 0, y, 1.0) / safe)), -jnp.inf)
    logn = log_ndtr((jnp.log(x) + 0.5 * safe * safe) / safe)
    step = jnp.where(x >= 1.0, 0.0, -jnp.inf)
    out = jnp.where(family == EXPONENTIAL, expo, jnp.where(family == LOGNORMAL, logn, step))
    return jnp.where(s > 0, out, step)


def _gauss_legendre(f, a, b):
    """int_a^b f(x) dx on :data:`GL_NODES` nodes; ``f`` takes x (..., node)."""
    half = 0.5 * (b - a)[..., None]
    x = 0.5 * (a + b)[..., None] + half * _GL_X
    return jnp.sum(f(x) * _GL_W * half, axis=-1)


def max_all_workers_s(c_s, n, family, s):
    """E[max over every worker of c_i X], s: the compute part of a step that every worker syncs
    (H = 1), by quadrature of

        int_0^inf 1 - prod_i F(t / c_i)^(n_i) dt

    ``c_s``, ``n``: per DC, on a trailing DC axis (..., K); ``family``, ``s``: (...)."""
    c_s, n = jnp.broadcast_arrays(jnp.asarray(c_s, dtype=float), jnp.asarray(n, dtype=float))
    family = jnp.asarray(family, dtype=float)[..., None]
    s = jnp.asarray(s, dtype=float)[..., None]
    K = c_s.shape[-1]
    log_eps = math.log(EPS)
    a = jnp.max(c_s * _quantile(log_eps / n, False, family, s), axis=-1)
    b = jnp.max(c_s * _quantile(log_eps - jnp.log(K * n), True, family, s), axis=-1)
    fam, sp = family[..., None], s[..., None]  # against the nodes

    def above(u):  # (1 - P(max <= t)) dt/du at t = e^u
        t = jnp.exp(u)
        log_G = jnp.sum(n[..., None, :] * _log_cdf(t[..., None] / c_s[..., None, :], fam, sp),
                        axis=-1)
        return -jnp.expm1(log_G) * t

    la, lb = jnp.log(a), jnp.log(b)
    return a + _gauss_legendre(above, la, jnp.where(lb > la, lb, la))


def expected_max_normals(mean, sd):
    """E[max_i Y_i], Y_i ~ Normal(mean_i, sd_i^2) independent, on a trailing axis (..., K); sd
    may be 0. By quadrature of L + int_L^U 1 - prod_i Phi((y - mean_i) / sd_i) dy, [L, U] where
    the product moves from EPS to 1 - EPS."""
    mean, sd = jnp.broadcast_arrays(jnp.asarray(mean, dtype=float), jnp.asarray(sd, dtype=float))
    K = mean.shape[-1]
    q = -NormalDist().inv_cdf(EPS / K)  # a constant (K is static): not traced under jit
    lo = jnp.max(mean - sd * q, axis=-1)
    hi = jnp.max(mean + sd * q, axis=-1)
    zero = sd == 0
    safe = jnp.where(zero, 1.0, sd)[..., None, :]

    def above(y):
        y = y[..., None]
        z = (y - mean[..., None, :]) / safe
        log_p = jnp.where(zero[..., None, :], jnp.where(y >= mean[..., None, :], 0.0, -jnp.inf),
                          log_ndtr(z))
        return -jnp.expm1(jnp.sum(log_p, axis=-1))

    return lo + _gauss_legendre(above, lo, jnp.where(hi > lo, hi, lo))


def compute_part_s(c_s, n, family, s, H=1.0, H_dc=None):
    """The compute part of an inner step, s (docs/model.md section 16), for DCs that may differ.

        H = 1 (every H_i = 1)   E[max over every worker of c_i X]          (:func:`max_all_workers_s`)
        otherwise               E[max_i Normal(H_i c_i mu_(n_i), H_i (c_i sigma_(n_i))^2)] / H

    Args:
      c_s: each DC's mean compute of an inner step, s, on a trailing DC axis (..., K).
      n: each DC's workers (..., K).
      family, s: the tail (:func:`max_moments`), broadcast to (...).
      H: inner steps a round (...); the round's compute is divided by it.
      H_dc: each DC's inner steps a round (..., K) where they differ (sites "scaled"); None: H.
    """
    c_s, n = jnp.broadcast_arrays(jnp.asarray(c_s, dtype=float), jnp.asarray(n, dtype=float))
    H = jnp.asarray(H, dtype=float)
    H_i = H[..., None] if H_dc is None else jnp.asarray(H_dc, dtype=float)
    mu, sd = max_moments(jnp.asarray(family)[..., None], jnp.asarray(s)[..., None], n)
    rounds = expected_max_normals(H_i * c_s * mu, jnp.sqrt(H_i) * c_s * sd) / H
    every = max_all_workers_s(c_s, n, family, s)
    return jnp.where(jnp.all(H_i == 1.0, axis=-1) & (H == 1.0), every, rounds)


def may_straggle(sc) -> bool:
    """False where the scenario's straggler family is concretely "none" everywhere (a static
    fact: a caller may then leave the compute part's quadrature out, as c' = c exactly); True
    where it is not, or not known (a traced value)."""
    try:
        return bool(np.any(np.asarray(sc.straggler) != 0))
    except Exception:  # a tracer: not known until run
        return True


def settled(sc, straggles: bool):
    """``sc`` with its straggler family a concrete "none" where ``straggles`` (static, a caller's
    :func:`may_straggle` of the concrete scenario) is False: inside a jitted function the family is
    traced, and the closed forms then take the quadrature of c' (with M = 1 exactly where it is
    "none"); a concrete "none" leaves it out of the program, with the same c' = c bit for bit
    (:func:`bandjax.step.inner_compute_s`). Unchanged where ``straggles`` is True."""
    return sc if straggles else dataclasses.replace(sc, straggler=0.0)
