"""The step on a shared WAN, from queueing theory (model.md section 11): pure ``jax.numpy``.

The event engine (:mod:`events`) simulates each WAN direction as a FCFS link of capacity B that
other jobs load with Poisson transfers of s_bg = background bytes / B each, at utilisation rho.
This module estimates the engine's mean step analytically, so the grids can draw a shared-WAN
curve. With k = ceil(w / m) messages of s = m / B (the last one s_k) per direction and V the
other jobs' work queued when the sync starts:

    message j enters when j-1 is done and waits for everything queued before it, so by Wald
        E[end_j] = V + s_1 + ... + s_j + rho E[end_(j-1)]
    =>  T = E[end_k] = V (1 - rho^k) / (1 - rho) + s sum_i rho^i (k - i) - (s - s_k)

The two directions finish at max(T_out, T_in): for two independent normals of mean T and
standard deviation sigma that is T + sigma / sqrt(pi), with (linearised, Poisson work of
variance rho s_bg per second, amplified by the messages still to come)

    sigma^2 = g_k^2 Var V + rho s_bg T <g^2>,   g_j = (1 - rho^j) / (1 - rho)

V is the backlog the last message left (rho (E[end_k] - E[end_(k-1)])), drained at 1 - rho over
the gap until the next sync (the other direction's lag and the next round's non-WAN time), but not
below the stationary M/D/1 workload rho s_bg / (2 (1 - rho)); the two are solved as a fixed point.
A round of H steps takes H c + H (communication but the WAN) + T + sigma / sqrt(pi); the step is
the round / H. At load 0 this is the closed form exactly.

Accuracy against the engine's mean (:data:`ACCURACY`) is checked in ``tests/test_queueing.py`` and
shown in the report.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr, ndtr

from .scenario import Scenario
from .step import COMPONENTS, col, step_terms_s, traffic_B

# Stated relative accuracy of shared_wan_step_s against the event engine's mean step over seeds:
# loads up to 0.9, every variant, budgets [free] and [low], H = 1 and 4, 0.5 to 500 GB/s. It is
# within 5% at 12.5 GB/s and above; the largest deviations (about -12%) are at load 0.9 where
# one background transfer lasts longer than the variant's whole sync (0.5 GB/s, C' and E').
ACCURACY = 0.15

_FIXED_POINT_ITERATIONS = 40
# Gauss-Laguerre nodes and weights: the backlog a sync leaves is taken as exponential.
_LAGUERRE_X, _LAGUERRE_W = (jnp.asarray(a) for a in np.polynomial.laguerre.laggauss(24))


def _geometric(rho, k):
    """g_k = 1 + rho + ... + rho^(k-1)."""
    return jnp.where(rho > 0, (1 - rho ** k) / jnp.where(rho > 0, 1 - rho, 1.0), k)


def _ramp(rho, k):
    """sum_{i=0}^{k-1} rho^i (k - i) = (k - (k+1) rho + rho^(k+1)) / (1 - rho)^2."""
    safe = jnp.where(rho > 0, 1 - rho, 1.0)
    return jnp.where(rho > 0, (k - (k + 1) * rho + rho ** (k + 1)) / safe ** 2, k)


def _mean_g2(rho, k):
    """<g^2>: the mean of g_j^2 over j = 1 .. k-1 (0 for a single message)."""
    n = jnp.maximum(k - 1, 1)
    safe = jnp.where(rho > 0, 1 - rho, 1.0)
    total = (n - 2 * rho * _geometric(rho, n) + rho ** 2 * _geometric(rho ** 2, n)) / safe ** 2
    return jnp.where(k > 1, jnp.where(rho > 0, total / n, 1.0), 0.0)


def sync_s(wan_B, wan_Bps, message_B, background_B, load, backlog_s):
    """Mean and variance of one direction's sync time on a shared FCFS link (formulas above).

    Args:
      wan_B: the sync's bytes on the direction, B.
      wan_Bps: capacity, B/s. message_B, background_B: message and background transfer size, B.
      load: other jobs' utilisation rho in [0, 1).
      backlog_s: mean other jobs' work queued when the sync starts, s.

    Returns:
      (mean s, variance s^2, mean of the backlog left behind the last message s).
    """
    rho = load
    k = jnp.maximum(jnp.ceil(wan_B / message_B), 1.0)
    s = message_B / wan_Bps
    s_last = (wan_B - (k - 1) * message_B) / wan_Bps
    g = _geometric(rho, k)
    end_k = backlog_s * g + s * _ramp(rho, k) - (s - s_last)
    end_before = backlog_s * _geometric(rho, k - 1) + s * _ramp(rho, k - 1)
    s_bg = background_B / wan_Bps
    var = g ** 2 * backlog_s ** 2 + rho * s_bg * end_k * _mean_g2(rho, k)
    return end_k, var, rho * (end_k - end_before)


def _stationary_backlog_s(rho, s_bg):
    """Mean work in an M/D/1 queue (Pollaczek-Khinchine): rho s_bg / (2 (1 - rho))."""
    return rho * s_bg / (2 * jnp.where(rho < 1, 1 - rho, 1.0))


def idle_s(gap_s, backlog_s, load, background_s):
    """Mean idle time of a link over ``gap_s`` that starts with ``backlog_s`` of work and gets
    only other jobs' Poisson work (utilisation rho, transfers of ``background_s``), s.

    The idle time is the running maximum's excess, E[(M - x)^+], of u - A(u) (drift mu = 1 - rho,
    variance rate v = rho s_bg) taken as Brownian: with S = sqrt(v G), k = 2 mu / v,
    z1 = (x - mu G) / S and z2 = (x + mu G) / S,

        E[(M - x)^+] = S psi(z1) + (1 - exp(k x) Phi(-z2)) / k - Phi(z1) / k ...

    written with the normal loss function psi(z) = phi(z) - z (1 - Phi(z)). At load 0 it is
    max(G - x, 0).
    """
    mu = 1 - load
    v = load * background_s
    S2 = v * gap_s
    ok = S2 > 0
    S = jnp.sqrt(jnp.where(ok, S2, 1.0))
    k = 2 * mu / jnp.where(ok, v, 1.0)
    z1 = (backlog_s - mu * gap_s) / S
    z2 = (backlog_s + mu * gap_s) / S
    loss = jnp.exp(-0.5 * z1 ** 2) / jnp.sqrt(2 * jnp.pi) - z1 * ndtr(-z1)
    tail = jnp.exp(k * backlog_s + log_ndtr(-z2))
    brownian = S * loss + (ndtr(-z1) - tail) / k
    return jnp.where(ok, brownian, jnp.maximum(mu * gap_s - backlog_s, 0.0))


@jax.jit
def shared_wan_step_s(sc: Scenario, load):
    """Approximate mean step of every variant with other jobs loading each WAN direction to
    ``load``, shape (..., variant), s.

        step = (H c + H (communication but the WAN) + T + sigma / sqrt(pi)) / H

    with T, sigma from :func:`sync_s` and the backlog V at a sync's start from the fixed point
    V = max(R - (1 - rho) gap, rho s_bg / (2 (1 - rho))), gap = H c + H comm + sigma / sqrt(pi).

    Args:
      sc: the scenario (WAN capacity ``wan_Bps``, ``wan_message_B``, ``background_B``).
      load: other jobs' share of each direction's capacity, in [0, 1); broadcasts against the
        scenario's batch shape.
    """
    terms = step_terms_s(sc)
    H = col(sc.sync_every_H)
    gpu = terms[..., COMPONENTS.index("gpu_compute")]
    wan_term = terms[..., COMPONENTS.index("wan")]
    other = jnp.sum(terms, axis=-1) - gpu - wan_term  # communication but the WAN, / H
    gap = H * (gpu + other)  # from one sync's end to the next one's start, at load 0
    wan_B = traffic_B(sc).wan_B
    rho = col(jnp.asarray(load, dtype=float))
    B, m, m_bg = col(sc.wan_Bps), col(sc.wan_message_B), col(sc.background_B)
    w0 = _stationary_backlog_s(rho, m_bg / B)
    lag_per_sigma = 1 / jnp.sqrt(jnp.pi)

    def update(backlog):
        mean, var, residual = sync_s(wan_B, B, m, m_bg, rho, backlog)
        lag = jnp.sqrt(var) * lag_per_sigma
        G = gap + lag
        idle = jnp.sum(_LAGUERRE_W * idle_s(G[..., None], residual[..., None] * _LAGUERRE_X,
                                              rho[..., None], (m_bg / B)[..., None]), axis=-1)
        return residual - (1 - rho) * G + idle, mean, lag

    shape = jnp.broadcast_shapes(rho.shape, gap.shape, wan_B.shape, B.shape)
    backlog = jax.lax.fori_loop(0, _FIXED_POINT_ITERATIONS, lambda _, v: update(v)[0],
                                jnp.broadcast_to(w0, shape))
    _, mean, lag = update(backlog)
    return (gap + mean + lag) / H
