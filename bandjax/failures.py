"""Runs that fail: MTBF, the effective training time ratio (ETTR) and goodput (docs/model.md
section 17), in pure ``jax.numpy``.

Each worker fails as an independent Poisson process at ``failure_rate_per_hour`` r; the cluster's
rate is lambda = N r and its MTBF 1 / lambda. How a job survives a failure depends on how it syncs:

- **a job that stops on any failure** (a variant syncing every step, H = 1): it goes back to its
  last checkpoint, written every tau_c seconds (default Young's interval tau* = sqrt(2 w / lambda))
  at a blocking cost w, and restarts in u0. To first order in lambda (u0 + tau_c):

      ETTR = (1 - lambda (u0 + tau_c / 2)) / (1 + w / tau_c)

- **replicas that meet once a round** (H > 1, one replica per DC): a failure in DC i stops that
  DC's replica alone; it restarts (u0), copies the outer model from a peer (restore_i = P b / B_i,
  B_i its slowest incoming WAN link in use) and rejoins at the next round boundary, losing on
  average half a round and waiting half a round. To first order, round = H x step:

      ETTR = 1 - sum_i (n_i / N) n_i r (u0 + restore_i + round)

Goodput = CU x ETTR, the share of wall time the GPUs spend on work that is kept; time to target
divides by ETTR. Both forms hold to first order: where lambda (u0 + tau_c), or n_i r (u0 +
restore_i + round) for a replica, passes :data:`FIRST_ORDER_LIMIT`, the answer's status says so
(:data:`BEYOND_FIRST_ORDER`). A first-order ETTR at or below 0 is reported as 0 (the job makes no
kept progress to that order) and its time to target as inf, with that status. Energy to target is
not divided by ETTR: the energy of lost work is not modelled.

A failure rate of 0 (the default) gives ETTR = 1 exactly, so every other figure is unchanged bit
for bit. Every function is written for one point and broadcasts like :mod:`bandjax.step`; the
per-variant ones have the variant axis last.
"""

from __future__ import annotations

from . import _jax  # noqa: F401  (64-bit floats, the Scenario PyTree)
import jax.numpy as jnp
import numpy as np

from . import links as _links
from . import sites as _sites
from .scenario import Scenario
from .step import col

SECONDS_PER_HOUR = 3600.0
FIRST_ORDER_LIMIT = 0.1  # docs/model.md section 17: the forms hold while the product stays below
# failure_status: whether the first-order forms hold at a point
FIRST_ORDER, BEYOND_FIRST_ORDER = 0, 1
STATUS_MEANINGS = "first_order_holds beyond_first_order"
RULES = ("stop", "rounds")  # the recovery rule of a variant: H = 1 stops the job, H > 1 a replica


def _safe(x, ok, fill=1.0):
    """``x`` where ``ok``, else ``fill``: keeps a division's other branch finite, so a where over
    it has finite gradients."""
    return jnp.where(ok, x, fill)


def cluster_rate_per_s(sc: Scenario):
    """lambda = N r, failures a second of the whole cluster (N = K n workers)."""
    return sc.dcs * sc.workers_per_dc * sc.failure_rate_per_hour / SECONDS_PER_HOUR


def mtbf_s(sc: Scenario):
    """Mean time between failures of the cluster, 1 / lambda, s (inf where nothing fails)."""
    lam = jnp.asarray(cluster_rate_per_s(sc), dtype=float)
    return jnp.where(lam > 0, 1.0 / _safe(lam, lam > 0), jnp.inf)


def young_interval_s(sc: Scenario):
    """Young's checkpoint interval tau* = sqrt(2 w / lambda), s: the first-order optimum of the
    stop rule's ETTR (inf where nothing fails; 0 where a write costs nothing)."""
    lam = jnp.asarray(cluster_rate_per_s(sc), dtype=float)
    pos = lam > 0
    return jnp.where(pos, jnp.sqrt(2.0 * sc.checkpoint_write_s / _safe(lam, pos)), jnp.inf)


def checkpoint_interval_s(sc: Scenario):
    """tau_c: the scenario's ``checkpoint_every_s``, or Young's interval where it is None."""
    if sc.checkpoint_every_s is None:
        return young_interval_s(sc)
    return jnp.asarray(sc.checkpoint_every_s, dtype=float)


def stop_ettr(sc: Scenario) -> tuple:
    """(ETTR, lambda (u0 + tau_c)) of a job that stops on any failure, each of the grid's shape
    (no variant axis):

        ETTR = (1 - lambda (u0 + tau_c / 2)) / (1 + w / tau_c)

    1 exactly where nothing fails; w / tau_c is 0 where a write costs nothing (tau* = 0 then)."""
    lam = jnp.asarray(cluster_rate_per_s(sc), dtype=float)
    pos = lam > 0
    tau = _safe(checkpoint_interval_s(sc), pos)
    w = jnp.asarray(sc.checkpoint_write_s, dtype=float)
    overhead = jnp.where(w > 0, w / _safe(tau, w > 0), 0.0)
    lam = _safe(lam, pos)
    ettr = jnp.where(pos, (1.0 - lam * (sc.restart_s + tau / 2.0)) / (1.0 + overhead), 1.0)
    return ettr, jnp.where(pos, lam * (sc.restart_s + tau), 0.0)


def _inverse_incoming(K: int, bandwidth_rel, pairs):
    """1 / (relative bandwidth of each DC's slowest incoming link among ``pairs``), shape (..., K):
    ``bandwidth_rel`` a (K, K, ...) table (a leaf under jit), ``pairs`` static."""
    used = np.zeros((K, K), dtype=bool)
    used[tuple(np.array(pairs).T)] = True
    table = jnp.moveaxis(jnp.asarray(bandwidth_rel), (0, 1), (-2, -1))  # (..., from, to)
    return 1.0 / jnp.min(jnp.where(used, table, jnp.inf), axis=-2)


def restore_s(sc: Scenario) -> tuple:
    """(mean over DCs, largest over DCs) of a failed replica's restore, P b / B_i, s, where B_i
    is DC i's slowest incoming WAN link in use (the ring's link into it; on a mesh, every link
    into it). Equal links: P b / B for every DC."""
    base = sc.params * sc.restore_bytes_per_param / sc.wan_Bps
    if sc.links is None:
        return base, base
    K, rel = sc.links.K, sc.links.bandwidth_rel
    ring = _inverse_incoming(K, rel, _links.ring_pairs(K))
    mesh = _inverse_incoming(K, rel, _links.mesh_pairs(K))
    is_mesh = jnp.asarray(sc.topology) == 1
    mean = jnp.where(is_mesh, jnp.mean(mesh, axis=-1), jnp.mean(ring, axis=-1))
    most = jnp.where(is_mesh, jnp.max(mesh, axis=-1), jnp.max(ring, axis=-1))
    return base * mean, base * most


def rounds_ettr(sc: Scenario, round_s, *, variant_axis: bool = True) -> tuple:
    """(ETTR, the largest n_i r (u0 + restore_i + round)) of replicas that meet once a round,
    ``round_s`` (s) a round's wall time, broadcastable to (..., variant) (``variant_axis``: the
    scenario's fields get a trailing variant axis) or to the grid's shape (not ``variant_axis``):

        ETTR = 1 - sum_i (n_i / N) n_i r (u0 + restore_i + round)
             = 1 - n r (u0 + mean_i restore_i + round)              (n workers in every DC)

    1 exactly where nothing fails."""
    at = col if variant_axis else jnp.asarray
    if _sites.differ(sc):
        return _sites_ettr(sc, round_s, variant_axis)
    # linear in r: at r = 0 exactly 1 - 0 = 1, and the slope there is the right one
    per_worker = at(sc.workers_per_dc * sc.failure_rate_per_hour / SECONDS_PER_HOUR)
    mean, most = restore_s(sc)
    base = at(sc.restart_s) + round_s
    return 1.0 - per_worker * (base + at(mean)), per_worker * (base + at(most))


def _restore_rel(sc: Scenario) -> tuple:
    """(ring, mesh): each DC's restore over P b / wan_Bps, (K,): 1 / the relative bandwidth of its
    slowest incoming link in use (ones for equal links)."""
    K = _sites.workers_of(sc).size
    if sc.links is None:
        return np.ones(K), np.ones(K)
    rel = sc.links.bandwidth_rel
    return (_inverse_incoming(K, rel, _links.ring_pairs(K)),
            _inverse_incoming(K, rel, _links.mesh_pairs(K)))


def _sites_ettr(sc: Scenario, round_s, variant_axis: bool) -> tuple:
    """:func:`rounds_ettr` on sites that differ, DC i with n_i workers and its own restore:

        ETTR = 1 - sum_i (n_i / N) n_i r (u0 + restore_i + round)

    and the largest n_i r (u0 + restore_i + round)."""
    at = col if variant_axis else jnp.asarray
    n = _sites.workers_of(sc)
    weight = n * n / np.sum(n)  # (K,): (n_i / N) n_i
    rate = at(sc.failure_rate_per_hour / SECONDS_PER_HOUR)[..., None]
    ring, mesh = _restore_rel(sc)  # (..., K): a table with grid axes has them in front
    if variant_axis:
        ring, mesh = ring[..., None, :], mesh[..., None, :]
    rel = jnp.where(at(sc.topology)[..., None] == 1, mesh, ring)
    each = (at(sc.restart_s) + round_s)[..., None] + at(
        sc.params * sc.restore_bytes_per_param / sc.wan_Bps)[..., None] * rel
    return (1.0 - jnp.sum(rate * weight * each, axis=-1),
            jnp.max(rate * n * each, axis=-1))


def ettr_parts(sc: Scenario, step_s, H, *, variant_axis: bool = True, stop=None) -> tuple:
    """(ETTR, first-order product) of every variant, shape (..., variant): the stop rule where a
    variant syncs every step (H = 1), replicas once a round where H > 1 (round = H x step).
    ``step_s`` and ``H``: each variant's step time and H (:func:`bandjax.step.sync_method`).
    ``variant_axis`` False: ``step_s`` and ``H`` are one variant's, of the grid's shape. ``stop``:
    :func:`stop_ettr`'s, where the caller already has it."""
    at = col if variant_axis else jnp.asarray
    stop, x_stop = stop_ettr(sc) if stop is None else stop
    rounds, x_rounds = rounds_ettr(sc, H * step_s, variant_axis=variant_axis)
    in_rounds = H > 1
    return (jnp.where(in_rounds, rounds, at(stop)), jnp.where(in_rounds, x_rounds, at(x_stop)))


def may_fail(sc: Scenario) -> bool:
    """False where the scenario's failure rate is concretely 0 everywhere (a static fact: a
    caller may then leave ETTR out, which is exactly 1); True where it is not, or not known (a
    traced value)."""
    try:
        return bool(np.any(np.asarray(sc.failure_rate_per_hour) != 0))
    except Exception:  # a tracer: not known until run
        return True


def outputs(sc: Scenario, step_s, gpu_s, H) -> dict:
    """The failure quantities of every variant (shape (..., variant)) from its step time,
    GPU compute per step and H:

        ettr                   the share of wall time on kept work, unit 1, in [0, 1]
        goodput                CU x ETTR, unit 1
        checkpoint_interval_s  tau_c where the variant stops on a failure; NaN where it
                               recovers by replicas (no checkpoint in the model)
        failure_status         FIRST_ORDER or BEYOND_FIRST_ORDER (int8)
        ettr_raw               ETTR as the first-order form gives it (may be <= 0)
    """
    ettr, product = ettr_parts(sc, step_s, H)
    kept = jnp.maximum(ettr, 0.0)
    tau = jnp.where(H > 1, jnp.nan, col(checkpoint_interval_s(sc)))
    status = jnp.where((product > FIRST_ORDER_LIMIT) | (ettr <= 0), BEYOND_FIRST_ORDER,
                       FIRST_ORDER).astype(jnp.int8)
    return {"ettr": kept, "goodput": gpu_s / step_s * kept, "checkpoint_interval_s": tau,
            "failure_status": status, "ettr_raw": ettr}


def time_to_target_s(time_s, ettr):
    """Time to target with failures: time / ETTR (inf where ETTR is 0; time unchanged, bit for
    bit, where ETTR is 1)."""
    return jnp.where(ettr > 0, time_s / _safe(ettr, ettr > 0), jnp.inf)
