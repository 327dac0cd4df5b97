"""Runs that fail (docs/model.md section 17): failures injected per worker, both recovery rules,
SimPy and NumPy only.

Each worker fails as an independent Poisson process at r per hour. A run draws one process per
DC at n_i r instead of one per worker: the superposition of n_i independent Poisson processes of
rate r is a Poisson process of rate n_i r, and neither rule cares which worker of a DC failed, so
the law is the same with N / K times fewer draws. DC i's gaps come from its own stream,
``numpy.random.default_rng(seed).spawn(K)[i]``, so a seed gives the same run every time.

The run moves from failure to failure, not step to step (failures come every hours, steps every
seconds): between two failures a unit's schedule is fixed, so the work it keeps is counted when
the next failure ends that stretch. The SimPy processes are one failure process per DC and one
process per unit that can stop (the whole job, or each DC's replica), interrupted by a failure.

**Stop on any failure** (``rule="stop"``, H = 1): the job works ``checkpoint_every_s`` (tau_c;
Young's tau* = sqrt(2 w / lambda) by default), writes a checkpoint for ``checkpoint_write_s`` (w,
blocking), and again. A failure anywhere (also during a write or a restart) stops it: the work
since the last finished write is lost and the job restarts (``restart_s``, u0) from that
checkpoint; a failure during a restart starts it again. Between failures the job keeps
floor(up time / (tau_c + w)) x tau_c of work.

**Replicas that meet once a round** (``rule="rounds"``, H > 1, K >= 2 DCs): rounds of ``round_s``
start at 0, round_s, 2 round_s, ... for every DC. A failure in DC i stops its replica: the
round's work so far is lost (that round is not kept: DC i has no outer gradient to send at the
boundary, and the sync proceeds with the DCs that are up, whose round is kept); DC i restarts
(u0), copies the current outer model from a peer (``restore_s``, restore_i) and rejoins at the
next round boundary. A failure while it restarts, restores or waits for the boundary starts its
recovery again. DCs do not wait for each other, so each replica's run is independent of the
others'. If every DC were down at once the outer model is still the last sync's, which each
restores the same way (the run needs no special case).

**What is measured.** ETTR: the share of wall time in [0, duration_s], weighted by workers, spent
on work that is kept: sum_i n_i (kept work of unit i) / (N x duration_s). Whether the work just
before duration_s is kept is settled by running one more cycle (tau_c + w, or a round) past it;
work after duration_s is not counted, nor are the failures then. Its standard error comes from
batch means: duration_s cut into :data:`BATCHES` equal batches, the work kept in each counted
where it was done; with many failures a batch (each spans many failures and recoveries) is nearly
independent of the next.

**The first-order forms' error, measured** (:func:`error_table`, ``python -m events.failures``,
seed 0, 150,000 failures a cell, 42 cells, 63 s on one core). x is lambda (u0 + tau_c) for the
stop rule (Young's tau*, w = 60 s; u0 = 60, 600 and 3600 s; 64, 16,384 and 131,072 GPUs) and the
largest n_i r (u0 + restore_i + round) for the rounds rule (u0 = 600 s, restore 3.2 s; 2 x 32,
4 x 4,096, 8 x 16,384 and 1,024 + 3,072 GPUs; rounds of 10 s, 120 s, 10 min and 1 h). The
largest |first order - engine| over each x's cells (the engine's standard error beside it):

    x                0.001      0.01       0.03       0.1        0.2        0.3
    stop             1.2e-6     6.1e-6     1.5e-4     2.5e-3     1.2e-2     2.8e-2
    rounds           2.1e-6     4.4e-5     4.3e-4     4.8e-3     1.9e-2     4.1e-2
    engine's SE      1.4e-6 to 3.8e-6 at 0.001 ... 3.6e-4 to 8.6e-4 at 0.3

So where x <= 0.01 both first-order forms are within 5e-5 of the engine (at the noise for the
stop rule); at x = 0.1 within 5e-3; at 0.3 the stop rule's errs by up to 0.028 and the rounds
rule's by up to 0.041. From x = 0.01 on every cell is within x^2 / 2 (at 0.001 the differences,
at most 2.1e-6, are the engine's noise); the tests check x^2 / 2 plus 4 standard errors. The
stop rule's error is within 0.31 x^2 from x = 0.03 on, the rounds rule's within 0.49 x^2. From
x = 0.01 on the rounds rule's first order is below the engine in every cell (pessimistic: it
charges a second failure during a recovery a whole u0 + restore + round); in the long run the
engine gives sum_i (n_i / N) exp(-x_i) (:func:`ettr_rounds_exact`), and so the first-order error
is sum_i (n_i / N) (exp(-x_i) - 1 + x_i), between 0 and x^2 / 2. The stop rule's errs on either
side: below the engine where the restart dominates x (u0 = 600 and 3600 s: first order low by up
to 0.31 x^2), above it where tau* does (u0 = 60 s: high by up to 0.11 x^2; it leaves out failures
during writes); its long-run value is :func:`ettr_stop_exact`. In every cell the engine is within
1.5 standard errors of the exact form. N and K enter only through x: cells
of 64 to 131,072 GPUs and 2 to 8 DCs at one x agree within their noise.

SimPy events are not the bound: a run of F failures makes about 4 F of them, in a wall time of
about F / :data:`FAILURES_PER_S`. :func:`simulate_failures` refuses, before any SimPy environment
exists, a run whose expected failures (lambda x (duration_s + one cycle)) pass ``max_failures``
(:class:`FailureBoundError`); :func:`fit_duration_s` shortens a run to fit and says so.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import simpy

from .engine import SimulationBoundError, duration_text

STOP, ROUNDS = "stop", "rounds"
RULES = (STOP, ROUNDS)
BATCHES = 20  # batch means for a run's standard error
HOUR_S = 3600.0
MAX_FAILURES = 2_000_000
"""Failures (expected, over duration_s and the settling cycle) one run may simulate."""
FAILURES_PER_S = 1e5
"""Failures a run simulates per wall second on one core: ``python -m events.failures`` drew
6.3e6 in 63 s on the 2-core development machine, shared with other jobs."""
_DRAWS = 512  # exponential gaps drawn at once per DC


class FailureBoundError(ValueError):
    """A failure run that would simulate more failures than its bound, refused before it
    starts."""


# --- the first-order forms (docs/model.md section 17), in plain floats: the engine's oracle ---

def cluster_rate_per_s(workers, failure_rate_per_hour: float) -> float:
    """lambda = N r / 3600: failures a second of the whole cluster (``workers``: n_i per DC, or
    N)."""
    return sum(_as_tuple(workers)) * float(failure_rate_per_hour) / HOUR_S


def young_interval_s(workers, failure_rate_per_hour: float, checkpoint_write_s: float) -> float:
    """Young's checkpoint interval tau* = sqrt(2 w / lambda), s (inf when nothing fails)."""
    lam = cluster_rate_per_s(workers, failure_rate_per_hour)
    return math.inf if lam == 0 else math.sqrt(2 * float(checkpoint_write_s) / lam)


def ettr_stop_first_order(workers, failure_rate_per_hour: float, restart_s: float,
                          checkpoint_write_s: float = 0.0,
                          checkpoint_every_s: float | None = None) -> float:
    """ETTR of a job that stops on any failure, to first order in lambda (u0 + tau_c):

        ETTR = (1 - lambda (u0 + tau_c / 2)) / (1 + w / tau_c),   tau_c = tau* by default

    (w / tau_c is 0 when w = 0; lambda = 0 gives 1 / (1 + w / tau_c))."""
    lam = cluster_rate_per_s(workers, failure_rate_per_hour)
    tau = (young_interval_s(workers, failure_rate_per_hour, checkpoint_write_s)
           if checkpoint_every_s is None else float(checkpoint_every_s))
    w = float(checkpoint_write_s)
    lost = 0.0 if lam == 0 else lam * (float(restart_s) + tau / 2)
    return (1 - lost) / (1 + (0.0 if w == 0 else w / tau))


def ettr_stop_exact(workers, failure_rate_per_hour: float, restart_s: float,
                      checkpoint_write_s: float = 0.0,
                      checkpoint_every_s: float | None = None) -> float:
    """ETTR of the stop rule as the engine runs it, to every order (renewal reward): a cycle of
    P = tau_c + w needs e^(lambda u0) (e^(lambda P) - 1) / lambda seconds on average when a failure
    during a restart starts it again, and keeps tau_c, so

        ETTR = lambda tau_c e^(-lambda u0) / (e^(lambda P) - 1)

    (tau_c / P when lambda = 0). Its first-order expansion is :func:`ettr_stop_first_order` but
    for a lambda w / 2 the first-order form leaves out (a failure during a write)."""
    lam = cluster_rate_per_s(workers, failure_rate_per_hour)
    tau = (young_interval_s(workers, failure_rate_per_hour, checkpoint_write_s)
           if checkpoint_every_s is None else float(checkpoint_every_s))
    P = tau + float(checkpoint_write_s)
    if lam == 0:
        return 1.0 if math.isinf(tau) else tau / P
    if tau == 0:  # w = 0 at Young's: every moment checkpointed, only the restarts lose time
        return math.exp(-lam * float(restart_s))
    return lam * tau * math.exp(-lam * float(restart_s)) / math.expm1(lam * P)


def ettr_rounds_exact(workers, failure_rate_per_hour: float, restart_s: float, restore_s,
                      round_s: float) -> float:
    """ETTR of the rounds rule as the engine runs it, to every order, in the long run:

        ETTR = sum_i (n_i / N) exp(-n_i r (u0 + restore_i + round))

    DC i's round from kR to (k + 1) R is kept exactly when DC i has no failure in
    [kR - u0 - restore_i, (k + 1) R): it is ready at kR if and only if its last failure before
    kR came at least u0 + restore_i before it (a failure restarts the recovery), and it must then
    last the round. :func:`ettr_rounds_first_order` is its linearisation, so the first-order
    form is never above it and errs by at most sum_i (n_i / N) x_i^2 / 2,
    x_i = n_i r (u0 + restore_i + round). (The first rounds of a run, before u0 + restore_i has
    passed, keep a little more: every DC starts up.)"""
    n = _as_tuple(workers)
    N = sum(n)
    restore = _per_dc(restore_s, len(n))
    r = float(failure_rate_per_hour) / HOUR_S
    return sum((ni / N) * math.exp(-ni * r * (float(restart_s) + ri + float(round_s)))
               for ni, ri in zip(n, restore))


def ettr_rounds_first_order(workers, failure_rate_per_hour: float, restart_s: float,
                            restore_s, round_s: float) -> float:
    """ETTR of replicas that meet once a round, to first order in n_i r (u0 + restore_i + round):

        ETTR = 1 - sum_i (n_i / N) n_i r (u0 + restore_i + round)

    (``restore_s``: one value or one per DC, s; ``round_s`` = H x step, s)."""
    n = _as_tuple(workers)
    N = sum(n)
    restore = _per_dc(restore_s, len(n))
    r = float(failure_rate_per_hour) / HOUR_S
    return 1 - sum((ni / N) * ni * r * (float(restart_s) + ri + float(round_s))
                   for ni, ri in zip(n, restore))


def _as_tuple(workers) -> tuple:
    return (workers,) if isinstance(workers, (int, np.integer)) else tuple(workers)


def _per_dc(value, K: int) -> tuple[float, ...]:
    if isinstance(value, (int, float, np.integer, np.floating)):
        return (float(value),) * K
    return tuple(float(x) for x in value)


# --- a run's arguments, checked once ---

def _number(name, value, *, low=0.0, strict=False, allow_none=False, allow_inf=False,
            what="a number"):
    """``value`` as a finite float >= ``low`` (> when ``strict``; inf too with ``allow_inf``), or
    ValueError naming it."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
    if ok:
        x = float(value)
        ok = (math.isfinite(x) or (allow_inf and x == math.inf)) and (
            x > low if strict else x >= low)
    if not ok:
        raise ValueError(f"{name} = {value!r}: must be {what} {'>' if strict else '>='} {low:g}"
                         + (" (math.inf for no bound)" if allow_inf else " and finite"))
    return x


@dataclass(frozen=True)
class _Args:
    rule: str
    workers: tuple[int, ...]
    rate_per_hour: float  # r, per worker
    restart_s: float
    write_s: float
    tau_s: float  # the checkpoint interval used (stop rule; nan for rounds)
    restore_s: tuple[float, ...]
    round_s: float  # rounds rule; nan for stop
    duration_s: float
    seed: int
    max_failures: float

    @property
    def N(self) -> int:
        return sum(self.workers)

    @property
    def dc_rates_s(self) -> tuple[float, ...]:  # n_i r, per second
        return tuple(n * self.rate_per_hour / HOUR_S for n in self.workers)

    @property
    def cycle_s(self) -> float:
        """A unit's schedule repeats every cycle: tau_c + w (0: checkpointed every moment), or a
        round. Inf when the job never checkpoints (nothing fails)."""
        return self.round_s if self.rule == ROUNDS else self.tau_s + self.write_s

    @property
    def work_s(self) -> float:  # work done in a cycle
        return self.round_s if self.rule == ROUNDS else self.tau_s

    @property
    def settle_s(self) -> float:  # run past duration_s to settle whether its last work is kept
        return self.cycle_s if math.isfinite(self.cycle_s) else 0.0

    @property
    def expected_failures(self) -> float:
        return sum(self.dc_rates_s) * (self.duration_s + self.settle_s)

    @property
    def expansion(self) -> float:
        """The small quantity of the first-order forms: lambda (u0 + tau_c), or the largest
        n_i r (u0 + restore_i + round)."""
        if self.rule == STOP:
            lam = sum(self.dc_rates_s)
            return 0.0 if lam == 0 else lam * (self.restart_s + self.tau_s)
        return max(q * (self.restart_s + b + self.round_s)
                   for q, b in zip(self.dc_rates_s, self.restore_s))

    def first_order(self) -> float:
        if self.rule == STOP:
            return ettr_stop_first_order(self.workers, self.rate_per_hour, self.restart_s,
                                         self.write_s, self.tau_s)
        return ettr_rounds_first_order(self.workers, self.rate_per_hour, self.restart_s,
                                       self.restore_s, self.round_s)

    def exact(self) -> float:
        if self.rule == STOP:
            return ettr_stop_exact(self.workers, self.rate_per_hour, self.restart_s,
                                   self.write_s, self.tau_s)
        return ettr_rounds_exact(self.workers, self.rate_per_hour, self.restart_s,
                                 self.restore_s, self.round_s)


def _parse(rule, workers, failure_rate_per_hour, restart_s, checkpoint_write_s,
           checkpoint_every_s, restore_s, round_s, duration_s, seed, max_failures) -> _Args:
    """Every argument of a run checked, each error naming the argument, its value and what is
    allowed; Young's interval filled in."""
    if rule not in RULES:
        raise ValueError(f"rule = {rule!r}: must be {STOP!r} (the job stops on any failure and "
                         f"restarts from its checkpoint) or {ROUNDS!r} (replicas that meet once "
                         "a round)")
    if isinstance(workers, (int, np.integer)) and not isinstance(workers, (bool, np.bool_)):
        workers = (workers,)
    try:
        n = tuple(workers)
    except TypeError:
        n = None
    if not n or any(isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer))
                    or x < 1 for x in n):
        raise ValueError(f"workers = {workers!r}: must be a non-empty tuple of whole numbers "
                         ">= 1, the workers of each DC (e.g. (4096, 4096, 4096, 4096))")
    n = tuple(int(x) for x in n)
    if rule == ROUNDS and len(n) < 2:
        raise ValueError(f"workers = {workers!r}: the rounds rule needs at least 2 DCs (a "
                         "failed replica copies the outer model from a peer); one DC stops on "
                         "any failure: rule='stop'")
    rate = _number("failure_rate_per_hour", failure_rate_per_hour,
                   what="a failure rate per worker-hour")
    u0 = _number("restart_s", restart_s, what="a number of seconds")
    w = _number("checkpoint_write_s", checkpoint_write_s, what="a number of seconds")
    tau = _number("checkpoint_every_s", checkpoint_every_s, strict=True, allow_none=True,
                  what="None (Young's interval) or a number of seconds")
    T = _number("duration_s", duration_s, strict=True, what="a number of seconds")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) \
            or not 0 <= seed < 2**63:
        raise ValueError(f"seed = {seed!r}: must be a whole number >= 0 and < 2**63")
    budget = _number("max_failures", max_failures, strict=True, allow_inf=True,
                     what="a number of failures")
    if isinstance(restore_s, (int, float, np.integer, np.floating)):
        restore = (_number("restore_s", restore_s, what="a number of seconds"),) * len(n)
    else:
        try:
            restore = tuple(restore_s)
        except TypeError:
            raise ValueError(f"restore_s = {restore_s!r}: must be a number of seconds >= 0, or "
                             "one per DC") from None
        if len(restore) != len(n):
            raise ValueError(f"restore_s = {restore_s!r}: {len(restore)} values for {len(n)} "
                             "DCs; give one per DC, or one number for all")
        restore = tuple(_number(f"restore_s[{i}]", x, what="a number of seconds")
                        for i, x in enumerate(restore))
    if rule == STOP:
        if any(restore):
            raise ValueError(f"restore_s = {restore_s!r}: the stop rule restarts from its "
                             "checkpoint, so its restore is part of restart_s; leave it 0")
        if round_s is not None:
            raise ValueError(f"round_s = {round_s!r}: the stop rule has no rounds; leave it "
                             "None")
        if tau is None:
            tau = young_interval_s(n, rate, w)
        return _Args(STOP, n, rate, u0, w, tau, restore, math.nan, T, int(seed), budget)
    if w != 0 or tau is not None:
        raise ValueError(f"checkpoint_write_s = {checkpoint_write_s!r}, checkpoint_every_s = "
                         f"{checkpoint_every_s!r}: the rounds rule recovers from a peer's outer "
                         "model, not a checkpoint; leave them 0 and None")
    rnd = _number("round_s", round_s, strict=True,
                  what="a round's length (H x step) in seconds") if round_s is not None else None
    if rnd is None:
        raise ValueError("round_s = None: the rounds rule needs the round's length, H x step, in "
                         "seconds > 0")
    return _Args(ROUNDS, n, rate, u0, 0.0, math.nan, restore, rnd, T, int(seed), budget)


# --- bounds, before any work ---

def estimate_failures(a: _Args) -> dict:
    """What a run will simulate, before it starts: {"failures" (expected, duration_s and the
    settling cycle), "events" (SimPy events, about 4 a failure), "wall_s" (at
    :data:`FAILURES_PER_S` on one core), "sim_s"}."""
    f = a.expected_failures
    return {"failures": f, "events": 4 * f + 2 * len(a.workers), "wall_s": f / FAILURES_PER_S,
            "sim_s": a.duration_s + a.settle_s}


def _check_budget(a: _Args) -> dict:
    est = estimate_failures(a)
    if est["failures"] > a.max_failures:
        fit = a.max_failures / sum(a.dc_rates_s) - a.settle_s
        raise FailureBoundError(
            f"a {a.rule} run of duration_s = {a.duration_s:g} s ({duration_text(a.duration_s)}) "
            f"on {a.N} workers at {a.rate_per_hour:g} failures per worker-hour would simulate "
            f"about {est['failures']:.3g} failures ({est['events']:.3g} SimPy events, about "
            f"{duration_text(est['wall_s'])} of wall time), over the bound max_failures = "
            f"{a.max_failures:.3g}; "
            + (f"duration_s up to {fit:.4g} s fits (fit_duration_s), or raise max_failures"
               if fit > 0 else "raise max_failures"))
    return est


def fit_duration_s(rule: str, *, workers, failure_rate_per_hour: float, duration_s: float,
                   round_s: float | None = None, checkpoint_write_s: float = 0.0,
                   checkpoint_every_s: float | None = None,
                   max_failures: float = MAX_FAILURES) -> tuple[float, str | None]:
    """The longest run up to ``duration_s`` whose expected failures fit ``max_failures``, and a
    sentence saying what was shortened and why (None when the asked run fits). Raises
    :class:`FailureBoundError` when not even one cycle fits."""
    a = _parse(rule, workers, failure_rate_per_hour, 0.0, checkpoint_write_s, checkpoint_every_s,
               0.0, round_s, duration_s, 0, max_failures)
    if a.expected_failures <= a.max_failures:
        return a.duration_s, None
    fit = a.max_failures / sum(a.dc_rates_s) - a.settle_s
    if not fit > 0:
        _check_budget(a)
    return fit, (f"duration_s {fit:.4g} s ({duration_text(fit)}) instead of {a.duration_s:g} s, "
                 f"so that the run's expected failures ({a.max_failures:.3g}) fit max_failures")


# --- the run ---

@dataclass(frozen=True)
class FailureRun:
    """One seeded run of a recovery rule (times in seconds).

    ``ettr`` is the measured share of wall time spent on work that is kept, weighted by workers;
    ``ettr_se`` its standard error from :data:`BATCHES` batch means (a 95% interval is about
    +-1.96 of it); ``ettr_first_order`` the section's first-order form for the same inputs,
    ``expansion`` the quantity it is first order in (past 0.1, say so beside it), and
    ``ettr_exact`` the long-run value of the model the engine runs (:func:`ettr_stop_exact`,
    :func:`ettr_rounds_exact`), which a long run approaches."""

    rule: str
    workers: tuple[int, ...]
    duration_s: float  # wall time measured, [0, duration_s]
    kept_work_s: float  # work kept, worker-weighted mean over workers
    ettr: float
    ettr_se: float
    batches: int
    failures: int  # failures in [0, duration_s], all DCs
    failures_expected: float  # lambda x duration_s
    ettr_first_order: float
    expansion: float
    ettr_exact: float
    checkpoint_every_s: float  # tau_c used (stop rule), nan for the rounds rule
    seed: int

    @property
    def first_order_error(self) -> float:
        """First-order ETTR minus the measured one."""
        return self.ettr_first_order - self.ettr

    def goodput(self, cu: float) -> float:
        """Goodput = CU x ETTR (``cu``: the compute utilisation, c / step)."""
        return float(cu) * self.ettr


def simulate_failures(rule: str, *, workers, failure_rate_per_hour: float, restart_s: float,
                      duration_s: float, checkpoint_write_s: float = 0.0,
                      checkpoint_every_s: float | None = None, restore_s=0.0,
                      round_s: float | None = None, seed: int = 0,
                      max_failures: float = MAX_FAILURES) -> FailureRun:
    """Run a job on ``workers`` whose workers fail at ``failure_rate_per_hour``, recovering by
    ``rule``, for ``duration_s`` seconds of wall time; measure its ETTR.

    Args:
      rule: "stop" (any failure stops the job, which restarts from its last checkpoint) or
        "rounds" (a failed DC's replica restarts, restores from a peer and rejoins at the next
        round boundary; the others go on).
      workers: the workers of each DC, n_i (a tuple of whole numbers >= 1; an int is one DC).
      failure_rate_per_hour: r, failures per worker-hour (>= 0).
      restart_s: u0, s.
      duration_s: the wall time measured, s (> 0).
      checkpoint_write_s: w, s; the stop rule only.
      checkpoint_every_s: tau_c, work between checkpoints, s (> 0); None for Young's
        sqrt(2 w / lambda). The stop rule only.
      restore_s: restore_i (P x b / B over DC i's slowest incoming WAN link), s: one value or
        one per DC. The rounds rule only.
      round_s: a round, H x step, s (> 0). The rounds rule only.
      seed: seeds the failures (a whole number in [0, 2**63)).
      max_failures: the most failures the run may be expected to draw; a longer run is refused
        before it starts (:class:`FailureBoundError`; :func:`fit_duration_s` shortens it).

    Returns:
      A :class:`FailureRun`.
    """
    a = _parse(rule, workers, failure_rate_per_hour, restart_s, checkpoint_write_s,
               checkpoint_every_s, restore_s, round_s, duration_s, seed, max_failures)
    _check_budget(a)
    spans, failures = _run(a)
    T = a.duration_s
    edges = T * np.arange(BATCHES + 1) / BATCHES
    edges[-1] = T
    weights = (1,) if a.rule == STOP else a.workers
    kept_at = sum(w * _kept_before(s, a.cycle_s, a.work_s, edges) for w, s in zip(weights, spans))
    total = sum(weights)
    ettr = float(kept_at[-1]) / (total * T)
    batch = np.diff(kept_at) / (total * np.diff(edges))
    return FailureRun(
        rule=a.rule, workers=a.workers, duration_s=T, kept_work_s=float(kept_at[-1]) / total,
        ettr=ettr, ettr_se=float(np.std(batch, ddof=1) / math.sqrt(BATCHES)), batches=BATCHES,
        failures=failures, failures_expected=sum(a.dc_rates_s) * T,
        ettr_first_order=a.first_order(), expansion=a.expansion, ettr_exact=a.exact(),
        checkpoint_every_s=a.tau_s, seed=a.seed)


def _run(a: _Args) -> tuple[list, int]:
    """The SimPy run: each unit's up stretches as arrays (start, end), end = inf for one still up
    when the run ends; and the failures in [0, duration_s]."""
    env = simpy.Environment()
    K = len(a.workers)
    stop = a.rule == STOP
    units = 1 if stop else K
    recovery_s = (a.restart_s,) if stop else tuple(a.restart_s + b for b in a.restore_s)
    round_s = None if stop else a.round_s
    up_since: list = [0.0] * units
    starts: list = [[] for _ in range(units)]
    ends: list = [[] for _ in range(units)]
    counts = {"in": 0, "all": 0}
    cap = 2 * a.max_failures + 100  # far past any Poisson draw of at most max_failures expected

    def unit(u):
        while True:
            up_since[u] = env.now
            try:
                yield env.event()  # up until a failure interrupts
            except simpy.Interrupt:
                starts[u].append(up_since[u])
                ends[u].append(env.now)
                up_since[u] = None
            while True:  # down; a failure starts the recovery again
                try:
                    if recovery_s[u] > 0:
                        yield env.timeout(recovery_s[u])
                    if round_s is not None:
                        wait = math.ceil(env.now / round_s) * round_s - env.now
                        if wait > 0:
                            yield env.timeout(wait)
                    break
                except simpy.Interrupt:
                    pass

    procs = [env.process(unit(u)) for u in range(units)]

    def failures(i, gen, rate_s):
        mean = 1 / rate_s
        while True:
            for gap in gen.exponential(mean, _DRAWS).tolist():
                yield env.timeout(gap)
                counts["all"] += 1
                if env.now <= a.duration_s:
                    counts["in"] += 1
                if counts["all"] > cap:
                    raise SimulationBoundError(
                        f"the run drew {counts['all']} failures by {env.now:.6g} s, past twice "
                        f"its bound max_failures = {a.max_failures:.3g}")
                procs[0 if stop else i].interrupt()

    for i, (gen, rate_s) in enumerate(zip(np.random.default_rng(a.seed).spawn(K), a.dc_rates_s)):
        if rate_s > 0:
            env.process(failures(i, gen, rate_s))
    env.run(until=a.duration_s + a.settle_s)
    spans = []
    for u in range(units):
        if up_since[u] is not None:  # up since, and no failure before the end: all kept
            starts[u].append(up_since[u])
            ends[u].append(math.inf)
        spans.append((np.asarray(starts[u], float), np.asarray(ends[u], float)))
    return spans, counts["in"]


def _kept_before(span: tuple, cycle_s: float, work_s: float, edges: np.ndarray) -> np.ndarray:
    """Work kept before each of ``edges``, summed over one unit's up stretches (start, end).

    A stretch keeps its whole cycles (cycle_s: tau_c + w, or a round), each cycle's work_s
    at its start; a stretch still up at the end keeps all (cycle_s = 0: every moment kept)."""
    start, end = span
    up = end - start
    done = np.isinf(up)
    if cycle_s == 0 or math.isinf(cycle_s):
        kept_span = up
    else:
        kept_span = np.where(done, np.inf, np.floor(np.where(done, 0.0, up) / cycle_s) * cycle_s)
    out = np.empty(edges.size)
    for k, t in enumerate(edges):
        s = np.clip(t - start, 0.0, kept_span)
        if work_s == cycle_s or cycle_s == 0:
            out[k] = s.sum()
        else:
            q = np.floor(s / cycle_s)
            out[k] = (q * work_s + np.minimum(s - q * cycle_s, work_s)).sum()
    return out


# --- the first-order forms' error, measured ---

def _stop_rate(x: float, restart_s: float, write_s: float, N: int) -> float:
    """r per worker-hour at which lambda (u0 + tau*) = x on N workers (tau* Young's):
    u0 lambda + sqrt(2 w lambda) = x, a quadratic in sqrt(lambda)."""
    a, b = restart_s, math.sqrt(2 * write_s)
    s = (x / b if a == 0 else (-b + math.sqrt(b * b + 4 * a * x)) / (2 * a))
    return s * s * HOUR_S / N


TABLE_X = (0.001, 0.01, 0.03, 0.1, 0.2, 0.3)
TABLE_STOP = (((64,), 600.0, 60.0), ((16384,), 60.0, 60.0), ((131072,), 3600.0, 60.0))
"""(workers, u0, w) of the stop rule's cells, each at every x (the stop rule sees N only in
lambda; u0 against tau* decides the sign of its error)."""
TABLE_ROUNDS = (((32, 32), 10.0), ((4096,) * 4, 120.0), ((16384,) * 8, 3600.0),
                ((1024, 3072), 600.0))
"""(workers, round_s) of the rounds rule's cells, each at every x, u0 = 600 s, restore 3.2 s:
K 2 to 8, 64 to 131,072 GPUs, rounds of 10 s to 1 h, one uneven pair of DCs."""
TABLE_FAILURES = 150_000  # expected failures a cell, over all DCs


def error_table(failures_per_cell: int = TABLE_FAILURES, seed: int = 0,
                restore_s: float = 3.2) -> list[dict]:
    """Long seeded runs over the table, each beside the first-order and the exact ETTR: a dict a
    cell ({"rule", "workers", "restart_s", "checkpoint_write_s", "round_s", "x", "ettr", "se",
    "first_order", "exact", "error" (first order minus engine), "failures", "wall_s"}).

    x is lambda (u0 + tau*) for the stop rule (Young's tau*), every cell of :data:`TABLE_STOP`
    at every x of :data:`TABLE_X`, and the largest n_i r (u0 + restore + round) for the rounds
    rule, every cell of :data:`TABLE_ROUNDS` at every x; each run long enough for
    ``failures_per_cell`` expected failures over all its DCs."""
    rows = []
    for n, u0, w in TABLE_STOP:
        for x in TABLE_X:
            r = _stop_rate(x, u0, w, sum(n))
            rows.append(_cell(STOP, n, x, failures_per_cell, dict(
                failure_rate_per_hour=r, restart_s=u0, checkpoint_write_s=w, seed=seed)))
    for n, rnd in TABLE_ROUNDS:
        for x in TABLE_X:
            r = x / (max(n) * (600.0 + restore_s + rnd)) * HOUR_S
            rows.append(_cell(ROUNDS, n, x, failures_per_cell, dict(
                failure_rate_per_hour=r, restart_s=600.0, restore_s=restore_s, round_s=rnd,
                seed=seed)))
    return rows


def _cell(rule, workers, x, failures, kwargs) -> dict:
    lam = cluster_rate_per_s(workers, kwargs["failure_rate_per_hour"])
    t0 = time.perf_counter()
    run = simulate_failures(rule, workers=workers, duration_s=failures / lam,
                            max_failures=math.inf, **kwargs)
    return {"rule": rule, "workers": workers, "restart_s": kwargs["restart_s"],
            "checkpoint_write_s": kwargs.get("checkpoint_write_s", 0.0),
            "round_s": kwargs.get("round_s"), "x": x, "ettr": run.ettr, "se": run.ettr_se,
            "first_order": run.ettr_first_order, "exact": run.ettr_exact,
            "error": run.first_order_error, "failures": run.failures,
            "wall_s": time.perf_counter() - t0}


def print_table(rows: list[dict]) -> None:
    """:func:`error_table`'s cells, one line each."""
    print(f"{'rule':6} {'workers':>9} {'u0/w|round':>10} {'x':>5} {'engine':>8} {'+-se':>7} "
          f"{'exact':>8} {'1st order':>9} {'1st - eng':>9} {'/x^2':>6}")
    for c in rows:
        n = c["workers"]
        w = f"{len(n)}x{n[0]}" if len(set(n)) == 1 else "+".join(map(str, n))
        how = (f"{c['restart_s']:g}/{c['checkpoint_write_s']:g}" if c["round_s"] is None
               else f"{c['round_s']:g}")
        print(f"{c['rule']:6} {w:>9} {how:>10} {c['x']:5g} {c['ettr']:8.6f} {c['se']:7.1e} "
              f"{c['exact']:8.6f} {c['first_order']:9.6f} {c['error']:+9.2e} "
              f"{c['error'] / c['x'] ** 2:+6.3f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    rows = error_table()
    print_table(rows)
    failures = sum(c["failures"] for c in rows)
    wall = time.perf_counter() - t0
    print(f"{len(rows)} cells, {failures} failures in {wall:.1f} s: {failures / wall:.3g} a second")
