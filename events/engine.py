"""The shared-WAN discrete-event engine (docs/model.md sections 11, 13, 14, 15 and 16): SimPy and
NumPy only.

A run simulates a training job whose steps are built phase by phase from a :class:`Plan`:

    every step          GPU compute c
    every H-th step     the sync: in every DC at once, its phases in order (worker port, the
                        module's pipelined stages, the module port, the fixed time d), then on
                        every directed WAN link in use (K on a ring, K(K-1) on a mesh) the link's
                        bytes as messages of ``message_B`` bytes, one after another (each queued
                        when the previous one is done); a link is done ``latency_s`` (hops x
                        one-way latency) after its last message leaves it.

Syncs in rounds (docs/model.md section 14): a round is H c of compute with F fragment syncs, one
at each sync point (every H / F steps). Fragment j's sync starts f c before its sync point (its
gradients are ready during that step's backward) and is due ``delay`` (tau) steps after it; where
it is not done, the compute waits until it is, and the wait pushes everything after it. So at
load 0, while the windows do not overlap (f + tau <= H / F), a step is
c + F max(0, comm_frag - (f + tau) c) / H, the closed form's (comm_frag: a fragment sync's
phases, then its WAN bytes / B_i and latency on every link, the last link done). With F = 1 and tau = 0 the sync starts (H - f) c into its
round and the round ends when both the compute and every link are done.

Each link is one first-come-first-served server of capacity B shared with other jobs, whose
``background_B`` transfers arrive as a Poisson process at ``load`` x B, seeded per link. Links
that differ (docs/model.md section 15) each have their own B_i, background at load x B_i and
latency (:attr:`Plan.link_Bps`, :attr:`Plan.link_latency_s`). A link is a
work-conserving FCFS server with deterministic service (bytes / B): a message arriving at t leaves
at ``max(t, link free) + bytes / B`` (Lindley's recursion), so departures need no event. Nothing
waits on other jobs' transfers, so they need none either: each link applies its own, in order,
when it is next read (a sync message arrives, the run takes its state). SimPy events are the
job's: one per sync message and one per phase, however many links and however loaded.

Sites that differ and workers that straggle (docs/model.md section 16): a plan may give each DC
its own compute c_i and workers n_i, a family of per-worker step factors X (mean 1) and the
sites' rule ("wait": H inner steps every DC; "scaled": H c_max / c_i). Each DC then runs as its
own process, its inner steps c_i times the largest X of its workers (the intra-DC barrier
every inner step), and the DCs meet only at the syncs (:func:`_sites_job`); the draws are
:mod:`events.stragglers`'s, one seeded stream a DC, in blocks. Equal DCs with nothing straggling
run the plain rounds above, unchanged.

This module never imports jax or the closed forms; :mod:`events.plan` builds the plan from a
scenario and :mod:`bandjax.phases`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import simpy

from bandjax.units import significant

from . import stragglers as _st

TRACE_STEPS = 5  # steps recorded in a run's trace (the explorer page animates them)
TRACE_POINTS = 300  # samples of the trace, evenly spaced over those steps
MAX_SIM_S = 3600.0  # default bound on a run's simulated time, s


class SimulationBoundError(RuntimeError):
    """A run did not finish within its bound of simulated time."""


@dataclass(frozen=True)
class Part:
    """One piece of work in a phase: ``amount`` (bytes, samples, FLOP or seconds) at ``rate`` per
    second; it takes amount / rate seconds (rate = inf: no time)."""

    name: str
    amount: float
    rate: float = 1.0

    @property
    def duration_s(self) -> float:
        return 0.0 if math.isinf(self.rate) else self.amount / self.rate


@dataclass(frozen=True)
class Plan:
    """What one DC does per step, in plain floats (SI units); every DC does the same.

    ``sync_phases`` run one after another; the parts of a phase run at once (the module's
    pipelined stages), so a phase lasts as long as its slowest part. Then every one of ``links``
    directed WAN links carries ``wan_B``; each is done ``latency_s`` after its last message.

    Links that differ (docs/model.md section 15): ``link_Bps`` and ``link_latency_s`` give each
    link in use its own capacity and its last message's time to done (empty: every link
    ``wan_Bps`` and ``latency_s``); ``wan_Bps`` is then the slowest link's (the warm-up's).
    """

    variant: str
    compute_s: float  # GPU forward + backward, every step
    sync_phases: tuple[tuple[Part, ...], ...]  # before the WAN, on sync steps
    wan_B: float  # the sync's bytes on each directed WAN link in use
    wan_Bps: float  # capacity of each link
    message_B: float  # the sync's WAN messages
    background_B: float  # other jobs' transfers
    sync_every: int = 1  # H: steps per sync
    links: int = 2  # directed WAN links in use (K on a ring, K(K-1) on a mesh)
    latency_s: float = 0.0  # a link's last message to the link done: hops x one-way latency
    overlap: float = 0.0  # f: share of the GPU compute that hides the sync
    link_Bps: tuple[float, ...] = ()  # each link's capacity (empty: all wan_Bps)
    link_latency_s: tuple[float, ...] = ()  # each link's last message to done (empty: latency_s)
    link_B: tuple[float, ...] = ()  # each link's sync bytes (empty: all wan_B; an all-gather on
    # sites of different sizes puts n_i p on mesh link i -> j and (N - n_(i+1)) p on ring link i)
    fragments: int = 1  # F: fragment syncs a round (sync_phases and wan_B are one fragment's)
    delay: int = 0  # tau: steps after its sync point a fragment sync is due
    dc_compute_s: tuple[float, ...] = ()  # each DC's compute per inner step (empty: all compute_s)
    dc_workers: tuple[int, ...] = ()  # each DC's workers n_i (empty: equal sites)
    straggler: str = "none"  # the step factor's family: none, exponential, lognormal
    straggler_s: float = 0.0  # its tail share s (exponential) or sigma (lognormal)
    sites: str = "wait"  # "wait": H inner steps every DC; "scaled": H c_max / c_i

    def __post_init__(self):
        for name in ("compute_s", "wan_B", "wan_Bps", "message_B", "background_B", "latency_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} = {value!r}: must be a finite number >= 0")
        for name in ("wan_Bps", "message_B", "background_B"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} = {getattr(self, name)!r}: must be > 0"
                                 + (" (WAN bandwidth)" if name == "wan_Bps" else ""))
        if isinstance(self.sync_every, bool) or not isinstance(self.sync_every, int) or self.sync_every < 1:
            raise ValueError(f"sync_every = {self.sync_every!r}: must be a whole number of steps >= 1")
        if isinstance(self.links, bool) or not isinstance(self.links, int) or self.links < 1:
            raise ValueError(f"links = {self.links!r}: must be a whole number of WAN links >= 1")
        if not (isinstance(self.overlap, (int, float)) and 0 <= self.overlap <= 1):
            raise ValueError(f"overlap = {self.overlap!r}: must be a share of the GPU compute in "
                             "[0, 1]")
        for name, positive in (("link_Bps", True), ("link_latency_s", False), ("link_B", False)):
            values = getattr(self, name)
            if values and len(values) != self.links:
                raise ValueError(f"{name}: {len(values)} values for {self.links} links; give one "
                                 "per link in use, or none")
            for x in values:
                if not (isinstance(x, (int, float)) and math.isfinite(x)
                        and (x > 0 if positive else x >= 0)):
                    raise ValueError(f"{name} = {values!r}: {x!r} must be a finite number "
                                     f"{'>' if positive else '>='} 0")
        if isinstance(self.fragments, bool) or not isinstance(self.fragments, int) \
                or not 1 <= self.fragments <= self.sync_every:
            raise ValueError(f"fragments = {self.fragments!r}: must be a whole number from 1 to "
                             f"H = {self.sync_every}")
        if isinstance(self.delay, bool) or not isinstance(self.delay, int) \
                or not 0 <= self.delay <= self.sync_every - 1:
            raise ValueError(f"delay = {self.delay!r}: must be a whole number of steps from 0 to "
                             f"H - 1 = {self.sync_every - 1}")
        _st.check(self.dc_compute_s, self.dc_workers, self.straggler, self.straggler_s, self.sites)
        if self.dc_compute_s:
            K = len(self.dc_compute_s)
            if max(self.dc_compute_s) != self.compute_s:
                raise ValueError(f"compute_s = {self.compute_s!r}: with each DC's compute "
                                 f"(dc_compute_s = {self.dc_compute_s!r}) it must be the slowest "
                                 f"DC's, {max(self.dc_compute_s)!r}")
            if self.links not in (K, K * (K - 1)):
                raise ValueError(f"dc_compute_s = {self.dc_compute_s!r}: {K} DCs, but links = "
                                 f"{self.links} (a ring of {K} DCs uses {K} directed links, a "
                                 f"mesh {K * (K - 1)}); give one value per DC")

    @property
    def per_dc(self) -> bool:
        """Whether a run needs the per-DC rounds: a DC whose compute differs, or a step factor
        that varies (docs/model.md section 16). Otherwise every DC is the plan's one."""
        return bool(self.dc_compute_s) and (
            len(set(self.dc_compute_s)) > 1 or _st.straggles(self.straggler, self.straggler_s))

    def dc_steps(self) -> tuple[float, ...]:
        """H_i, each DC's inner steps a round (H under "wait", H c_max / c_i under "scaled")."""
        return _st.steps_per_round(self.dc_compute_s or (self.compute_s,), self.sync_every,
                                   self.sites)

    def useful_compute_s(self) -> float:
        """The mean useful compute of an inner step, (sum_i n_i H_i c_i) / (N H), s: c with
        equal sites; compute utilisation is this over the mean step (docs/model.md section 16,
        the mean compute c_i only: waiting and straggling are not useful)."""
        if not self.dc_compute_s:
            return self.compute_s
        N = sum(self.dc_workers)
        return sum(n * h * c for n, h, c in zip(self.dc_workers, self.dc_steps(),
                                                self.dc_compute_s)) / (N * self.sync_every)

    def bytes_B(self) -> tuple[float, ...]:
        """Each link's sync bytes, B."""
        return tuple(self.link_B) or (self.wan_B,) * self.links

    def rates_Bps(self) -> tuple[float, ...]:
        """Each link's capacity, B/s."""
        return tuple(self.link_Bps) or (self.wan_Bps,) * self.links

    def latencies_s(self) -> tuple[float, ...]:
        """Each link's time from its last message to done, s."""
        return tuple(self.link_latency_s) or (self.latency_s,) * self.links

    def wan_s(self) -> float:
        """The sync's WAN part on an idle WAN: the last link done, max of bytes / B_i + latency_i."""
        return max(b / r + l for b, r, l in zip(self.bytes_B(), self.rates_Bps(),
                                                 self.latencies_s()))


@dataclass
class RunResult:
    """One run: per-step times and each WAN link's state (one entry per directed link in use;
    at K = 2 the first is DC A to B, the second B to A)."""

    variant: str
    load: float
    seed: int
    step_s: np.ndarray  # (steps,) each step's time, s
    utilisation: tuple[float, ...]  # busy share of each link over the job, 1
    queue_mean: tuple[float, ...]  # time-averaged messages in each link (waiting + in service)
    queue_max: tuple[int, ...]  # most messages in each link during the job
    messages: int  # link arrivals simulated (background and the sync's), warm-up included
    sim_s: float  # simulated time, warm-up included, s
    trace: dict = field(default_factory=dict)
    useful_compute_s: float = math.nan  # mean useful compute of an inner step (Plan.useful_compute_s)
    draws: int = 0  # worker step factors drawn (stragglers), warm-up round included

    @property
    def mean_s(self) -> float:
        return float(np.mean(self.step_s))

    @property
    def compute_utilisation(self) -> float:
        """CU = (sum_i n_i H_i c_i) / (N H mean step): the share of wall time the GPUs do
        useful compute (docs/model.md sections 14 and 16)."""
        return self.useful_compute_s / self.mean_s

    def percentile_s(self, q: float) -> float:
        return float(np.percentile(self.step_s, q))

    def summary(self) -> dict:
        """JSON-ready figures of the run (s, shares, counts)."""
        return {
            "variant": self.variant, "load": self.load, "seed": self.seed,
            "steps": int(self.step_s.size), "mean_s": self.mean_s,
            "p50_s": self.percentile_s(50), "p95_s": self.percentile_s(95),
            "p99_s": self.percentile_s(99),
            "utilisation": list(self.utilisation), "queue_mean": list(self.queue_mean),
            "queue_max": list(self.queue_max), "messages": self.messages, "sim_s": self.sim_s,
            "links": len(self.utilisation),
            "utilisation_mean": float(np.mean(self.utilisation)),
            "utilisation_max": float(np.max(self.utilisation)),
            "queue_mean_mean": float(np.mean(self.queue_mean)),
            "queue_mean_max": float(np.max(self.queue_mean)),
            "queue_max_max": int(np.max(self.queue_max)),
            "compute_utilisation": self.compute_utilisation, "draws": self.draws,
        }


_BATCH = 4096  # background gaps drawn at a time


class _Link:
    """One directed WAN link: a FCFS server of ``rate`` bytes/s (Lindley's recursion).

    ``inflight`` holds the departure times of the messages in the link, in order (FCFS departures
    are monotone), so its length is the queue length seen by an arrival.

    Other jobs' transfers need no SimPy event: nothing waits on them, so the link applies them,
    in order of arrival and by the same recursion, whenever it is next read (a sync message
    arrives, the run takes its state): :meth:`catch_up`. The arrival times are the running sums
    of the link's own seeded exponential gaps.
    """

    __slots__ = ("rate", "free_at", "inflight", "arrivals", "sojourn_s", "work_s", "queue_max",
                 "log", "bg_next", "bg_gaps", "bg_i", "bg_rng", "bg_gap_s", "bg_service_s")

    def __init__(self, rate: float):
        self.rate = rate
        self.free_at = 0.0
        self.inflight: deque = deque()
        self.arrivals = 0
        self.sojourn_s = 0.0  # sum over arrivals of (departure - arrival)
        self.work_s = 0.0  # sum over arrivals of service time
        self.queue_max = 0
        self.log: list | None = None  # (arrival, departure) pairs while tracing
        self.bg_next = math.inf  # the next background arrival, s (inf: none)
        self.bg_gaps: list = []
        self.bg_i = 0
        self.bg_rng = None
        self.bg_gap_s = self.bg_service_s = 0.0

    def background(self, rng: np.random.Generator, mean_gap_s: float, service_s: float) -> None:
        """Other jobs' transfers of ``service_s`` each, Poisson with mean gap ``mean_gap_s``,
        from time 0."""
        self.bg_rng, self.bg_gap_s, self.bg_service_s = rng, mean_gap_s, service_s
        self.bg_gaps = (rng.standard_exponential(_BATCH) * mean_gap_s).tolist()
        self.bg_i = 0
        self.bg_next = 0.0 + self.bg_gaps[0]

    def catch_up(self, now: float) -> None:
        """Apply every background arrival up to ``now``, in order (the body of :meth:`arrive`,
        inlined: this loop is most of a loaded run's time)."""
        t = self.bg_next
        if t > now:
            return
        service = self.bg_service_s
        inflight = self.inflight
        gaps, i = self.bg_gaps, self.bg_i
        free, queue_max, count = self.free_at, self.queue_max, 0
        sojourn, work = self.sojourn_s, self.work_s  # running sums, added to in the same order
        log = self.log
        while t <= now:
            while inflight and inflight[0] <= t:
                inflight.popleft()
            departure = (free if free > t else t) + service
            free = departure
            inflight.append(departure)
            count += 1
            sojourn += departure - t
            work += service
            if len(inflight) > queue_max:
                queue_max = len(inflight)
            if log is not None:
                log.append((t, departure))
            i += 1
            if i == len(gaps):
                gaps = (self.bg_rng.standard_exponential(_BATCH) * self.bg_gap_s).tolist()
                i = 0
            t = t + gaps[i]
        self.free_at, self.queue_max = free, queue_max
        self.arrivals += count
        self.sojourn_s, self.work_s = sojourn, work
        self.bg_gaps, self.bg_i, self.bg_next = gaps, i, t

    def arrive(self, now: float, service_s: float) -> float:
        """Queue a message of ``service_s`` at ``now`` (after the background up to ``now``);
        return its departure time."""
        if self.bg_next <= now:
            self.catch_up(now)
        inflight = self.inflight
        while inflight and inflight[0] <= now:
            inflight.popleft()
        free = self.free_at
        departure = (free if free > now else now) + service_s
        self.free_at = departure
        inflight.append(departure)
        self.arrivals += 1
        self.sojourn_s += departure - now
        self.work_s += service_s
        if len(inflight) > self.queue_max:
            self.queue_max = len(inflight)
        if self.log is not None:
            self.log.append((now, departure))
        return departure

    def state(self, now: float) -> dict:
        """Counters at ``now`` (the background applied up to it), to take differences over the
        job."""
        self.catch_up(now)
        inflight = [d for d in self.inflight if d > now]
        return {"backlog_s": max(self.free_at - now, 0.0), "inflight": inflight,
                "remaining_s": sum(d - now for d in inflight), "sojourn_s": self.sojourn_s,
                "work_s": self.work_s}


def _send(env: simpy.Environment, link: _Link, total_B: float, message_B: float,
          latency_s: float, done: list | None):
    """The sync's bytes on one link, as messages one after another (the last one partial), then
    the latency; while tracing, ``done`` collects (delivery time, bytes)."""
    rate = link.rate
    timeout = env.timeout
    count = math.ceil(total_B / message_B) if total_B > 0 else 0
    for i in range(count):
        size = message_B if i < count - 1 else total_B - (count - 1) * message_B
        now = env.now
        yield timeout(link.arrive(now, size / rate) - now)
        if done is not None:
            done.append((env.now, size))
    if latency_s > 0:
        yield timeout(latency_s)


def _sync(env: simpy.Environment, plan: Plan, links: tuple, delay_s: float, st: dict | None):
    """One sync, ``delay_s`` from now: the phases (every DC at once, so once), then every link's
    bytes; ``st`` (while tracing) records the start and each link's deliveries."""
    if delay_s > 0:
        yield env.timeout(delay_s)
    if st is not None:
        st["syncs"].append(env.now)
    for phase in plan.sync_phases:
        # pipelined stages: the phase ends with the slowest
        longest = max(p.duration_s for p in phase)
        if longest > 0:
            yield env.timeout(longest)
    sends = [env.process(_send(env, link, size, plan.message_B, latency_s,
                               st["delivered"][i] if st is not None else None))
             for i, (link, size, latency_s) in enumerate(zip(links, plan.bytes_B(),
                                                             plan.latencies_s()))]
    yield env.all_of(sends)


MAX_SEED = 2**63
"""Seeds are in [0, 2**63): a run's seed is kept as a signed 64-bit integer (netCDF, xarray)."""


def check_run_args(load, steps, seed=0, max_sim_s=MAX_SIM_S) -> None:
    """Raise ``ValueError`` naming the first argument of a run that is not allowed."""
    if isinstance(load, bool) or not isinstance(load, (int, float, np.integer, np.floating)) \
            or not 0 <= load < 1:
        raise ValueError(f"load = {load!r}: must be a number in [0, 1) (the share of each WAN "
                         "direction's capacity that other jobs use)")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps = {steps!r}: must be a whole number >= 1")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed = {seed!r}: must be a whole number in [0, 2**63)")
    if isinstance(max_sim_s, bool) or not isinstance(max_sim_s, (int, float)) \
            or not 0 < max_sim_s < math.inf:
        raise ValueError(f"max_sim_s = {max_sim_s!r}: must be a finite number of seconds > 0")


def warmup_s(plan: Plan, load: float) -> float:
    """Background-only time before the job starts, so its links are near their stationary state:
    ten relaxation times of the M/D/1 queue, 10 s_bg / (1 - sqrt(load))^2, s (0 at load 0)."""
    if load == 0:
        return 0.0
    return 10 * plan.background_B / plan.wan_Bps / (1 - math.sqrt(load)) ** 2


def max_load(plan: Plan, max_sim_s: float = MAX_SIM_S) -> float:
    """The highest load whose warm-up (:func:`warmup_s`) fits in ``max_sim_s`` of simulated time:
    (1 - sqrt(10 s_bg / max_sim_s))^2, with s_bg = background_B / wan_Bps (0 when none does).
    Above it the queue cannot settle, let alone drain, within the bound."""
    r = 10 * plan.background_B / plan.wan_Bps / max_sim_s
    return (1 - math.sqrt(r)) ** 2 if r < 1 else 0.0


def estimate_events(plan: Plan, load: float, steps: int, max_sim_s: float = MAX_SIM_S) -> dict:
    """Link arrivals a run will simulate, estimated before it starts (both WAN directions).

        sync messages   L ceil(wan_B / message_B) floor(steps / H)
        background      load (sum of the L links' B_i) / background_B x T,
        T = min(max_sim_s, warm-up + steps x (c M + (sync phases + max_i(wan_B / B_i + latency_i)) / H)
                                     / (1 - load))

    with L links, the simulated time T taking the load-0 step without overlap stretched by
    1 / (1 - load) (an M/D/1 queue's stretch is smaller), M the mean largest step factor of the
    largest DC (1 when nothing straggles). With per-DC rounds (:attr:`Plan.per_dc`) also the
    worker draws, N x inner steps (a DC's last fraction of a step a whole draw, the warm-up
    round included: :func:`events.stragglers.draws_per_round`), and the SimPy milestones, K
    (2 F + 1) a round. Returns {"messages", "background", "total", "sim_s", "draws",
    "milestones"}.
    """
    syncs = steps // plan.sync_every * plan.fragments
    messages = sum(math.ceil(b / plan.message_B) for b in plan.bytes_B()) * syncs
    phases_s = sum(max([p.duration_s for p in phase], default=0.0) for phase in plan.sync_phases)
    draws = milestones = 0.0
    factor = 1.0
    if plan.per_dc:
        rounds = -(-steps // plan.sync_every) + (1 if plan.delay > 0 else 0)
        K = len(plan.dc_compute_s)
        milestones = float(K * (2 * plan.fragments + 1) * rounds)
        if _st.straggles(plan.straggler, plan.straggler_s):
            draws = float(_st.draws_per_round(plan.dc_workers, plan.dc_steps()) * rounds)
            factor = _st.max_moments(plan.straggler, plan.straggler_s, max(plan.dc_workers))[0]
    step0 = plan.compute_s * factor + (phases_s + plan.wan_s()) * plan.fragments / plan.sync_every
    sim = warmup_s(plan, load) + steps * step0 / (1 - load)
    sim = min(sim, max_sim_s)
    background = load * sum(plan.rates_Bps()) / plan.background_B * sim
    return {"messages": messages, "background": background, "total": messages + background,
            "sim_s": sim, "draws": draws, "milestones": milestones}


def check_bounds(plan: Plan, load: float, steps: int, max_sim_s: float = MAX_SIM_S,
                 max_events: float = math.inf, max_wall_s: float = math.inf,
                 max_draws: float = _st.MAX_DRAWS) -> dict:
    """Refuse a run that cannot finish within its bounds, before it starts: ``ValueError`` if its
    warm-up alone is longer than ``max_sim_s`` (the load is too close to 1 for the background's
    transfer size), if its steps' compute alone would not fit in ``max_sim_s``, if it would
    simulate more than ``max_events`` link arrivals or draw more than ``max_draws`` worker step
    factors (stragglers, docs/model.md section 16), or if those would take more than
    ``max_wall_s`` wall seconds on one worker (:func:`check_budget`). Returns
    :func:`estimate_events`."""
    warm = warmup_s(plan, load)
    if warm >= max_sim_s:
        raise ValueError(
            f"load = {load:g}: the WAN queue needs {warm:.3g} s of simulated warm-up to settle at "
            f"this load (10 x {plan.background_B:g} B transfers / {plan.wan_Bps / 1e9:g} GB/s / "
            f"(1 - sqrt(load))^2), over the bound max_sim_s = {max_sim_s:g} s; loads up to "
            f"{max_load(plan, max_sim_s):.6g} fit, or raise the bound")
    least = warm + steps * plan.compute_s  # every step computes, whatever the WAN does
    if least >= max_sim_s:
        raise ValueError(
            f"max_sim_s = {max_sim_s:g} s: a run of {steps} steps needs at least {least:.3g} s of "
            f"simulated time ({steps} x the compute time {plan.compute_s:.3g} s, plus "
            f"{warm:.3g} s of warm-up); raise max_sim_s or lower the steps")
    est = estimate_events(plan, load, steps, max_sim_s)
    if est["draws"] > max_draws:
        raise ValueError(
            f"a run of {plan.variant} and {steps} steps would draw about {est['draws']:.3g} "
            f"worker step factors ({sum(plan.dc_workers)} workers x "
            f"{est['draws'] / sum(plan.dc_workers):.3g} inner steps, a DC's fraction of a step "
            f"counted whole), over the bound max_draws = {max_draws:.3g} "
            f"(events.stragglers.MAX_DRAWS); lower the steps or the workers")
    if est["total"] > max_events:
        raise ValueError(
            f"a run of {plan.variant} at load {load:g} and {steps} steps would simulate about "
            f"{est['total']:.3g} link arrivals ({est['messages']:.3g} sync messages of "
            f"{plan.message_B:g} B, {est['background']:.3g} other jobs' transfers of "
            f"{plan.background_B:g} B over {est['sim_s']:.3g} s), over the bound of "
            f"{max_events:.3g}; lower the steps or the load, or raise the message or transfer size")
    if max_wall_s < math.inf:
        check_budget(est, max_wall_s, 1, f"a run of {plan.variant} at load {load:g} and {steps} "
                     "steps", "max_wall_s")
    return est


def wall_s(est: dict, workers: int = 1) -> float:
    """Wall seconds the link arrivals of :func:`estimate_events` (one run's, or a sweep's summed)
    take on ``workers`` workers, each simulating :data:`bandjax._limits.ENGINE_MESSAGES_PER_S` of
    the sync's messages (or per-DC milestones) or :data:`bandjax._limits.ENGINE_EVENTS_PER_S` of
    other jobs' transfers a second, and drawing :data:`events.stragglers.DRAWS_PER_S` worker step
    factors (all measured by ``python -m benchmarks.events_bench``)."""
    from bandjax import _limits

    one = ((est["messages"] + est.get("milestones", 0.0)) / _limits.ENGINE_MESSAGES_PER_S
           + est["background"] / _limits.ENGINE_EVENTS_PER_S
           + est.get("draws", 0.0) / _st.DRAWS_PER_S)
    return one / max(int(workers), 1)


def duration_text(seconds: float) -> str:
    """A wall time for a message, two significant figures or the whole number (three in
    days; :func:`bandjax.units.significant`): "40 s", "6.1 min", "2.3 h", "4,200 days"."""
    for unit, size in (("s", 1.0), ("min", 60.0), ("h", 3600.0)):
        if seconds < 120 * size if unit != "h" else seconds < 48 * size:
            return f"{significant(seconds / size, 2)} {unit}"
    return f"{significant(seconds / 86400, 3)} days"


def check_budget(est: dict, budget_s: float, workers: int = 1, what: str = "the sweep",
                 option: str = "budget_s") -> float:
    """Refuse work whose estimated wall time (:func:`wall_s` of ``est``, one run's or a sweep's
    summed :func:`estimate_events`) passes ``budget_s`` seconds, before it starts: the message
    gives the link arrivals, the rates, the time it would need and the budget (raised by
    ``option``). Returns the estimate, s."""
    from bandjax import _limits

    t = wall_s(est, workers)
    if t > budget_s:
        raise ValueError(
            f"{what} would simulate about {est['total']:.3g} link arrivals ({est['messages']:.3g} "
            f"sync messages at {_limits.ENGINE_MESSAGES_PER_S:.2g}/s and {est['background']:.3g} "
            f"other jobs' transfers at {_limits.ENGINE_EVENTS_PER_S:.2g}/s a worker"
            + (f"; and draw {est['draws']:.3g} worker step factors at {_st.DRAWS_PER_S:.2g}/s"
               if est.get("draws", 0) > 0 else "") + "), about "
            f"{duration_text(t)} on {max(int(workers), 1)} worker(s); the budget is "
            f"{duration_text(budget_s)} ({budget_s:g} s): lower the steps, seeds or loads, raise "
            f"the message or transfer size, or raise the budget ({option})")
    return t


def simulate(plan: Plan, load: float, seed: int = 0, steps: int = 400, *,
             trace_steps: int = TRACE_STEPS, trace_points: int = TRACE_POINTS,
             max_sim_s: float = MAX_SIM_S) -> RunResult:
    """Run ``steps`` training steps of ``plan`` on a WAN that other jobs load to ``load``.

    Background traffic runs alone for :func:`warmup_s` first; times are counted from the job's
    start.

    Args:
      plan: the job (see :func:`events.plan.build`).
      load: other jobs' share of each WAN link's capacity, in [0, 1).
      seed: seeds the background traffic (link i from the sequence [seed, i]); the same seed
        gives the same run.
      steps: training steps (with H-step syncing, a multiple of H makes the mean an average
        over whole sync rounds).
      trace_steps, trace_points: the trace covers the first ``trace_steps`` steps with
        ``trace_points`` evenly spaced samples (0: no trace).
      max_sim_s: bound on simulated time (warm-up included), s; a run that reaches it stops
        with :class:`SimulationBoundError`.

    Returns:
      A :class:`RunResult`.
    """
    check_run_args(load, steps, seed, max_sim_s)
    load = float(load)
    check_bounds(plan, load, steps, max_sim_s)
    env = simpy.Environment()
    links = tuple(_Link(rate) for rate in plan.rates_Bps())
    if load > 0:
        for i, link in enumerate(links):
            service_bg = plan.background_B / link.rate
            mean_gap = service_bg / load  # arrival rate load x B_i / background_B
            link.background(np.random.default_rng([seed, i]), mean_gap, service_bg)
    start = warmup_s(plan, load)
    step_s = np.empty(steps)
    trace_steps = min(trace_steps, steps) if trace_points > 0 else 0
    st: dict = {"done": 0, "syncs": [], "delivered": [[] for _ in links], "step_ends": []}
    H, c = plan.sync_every, plan.compute_s
    # the sync starts f c before the round's end; without overlap, after the round's compute
    lead_s = (H - plan.overlap) * c if plan.overlap > 0 else None

    def job():
        if start > 0:
            yield env.timeout(start)
        st["begin"] = [link.state(env.now) for link in links]
        for link in links:
            link.log = [] if trace_steps else None
        for k0 in range(0, steps, H):
            last = k0 + H - 1  # the round's sync step (none in a last, partial round)
            record = st if last < trace_steps else None
            sync = None
            if last < steps and lead_s is not None:
                sync = env.process(_sync(env, plan, links, lead_s, record))
            for k in range(k0, min(k0 + H, steps)):
                t0 = env.now
                yield env.timeout(c)
                if k == last:
                    if sync is None:
                        sync = env.process(_sync(env, plan, links, 0.0, record))
                    yield sync
                step_s[k] = env.now - t0
                st["done"] = k + 1
                if k < trace_steps:
                    st["step_ends"].append(env.now)
                if k + 1 == trace_steps:
                    st["trace_end"] = env.now
                    for link in links:
                        link.catch_up(env.now)
                    st["logs"] = [link.log for link in links]
                    for link in links:
                        link.log = None

    rounds = plan.fragments > 1 or plan.delay > 0
    factors = None
    if plan.per_dc:
        factors = _st.StepFactors(plan.dc_workers or (1,) * len(plan.dc_compute_s),
                                  plan.straggler, plan.straggler_s, seed)
        proc = env.process(_sites_job(env, plan, links, start, step_s, st, factors))
    else:
        proc = env.process(_rounds_job(env, plan, links, start, step_s, st) if rounds
                           else job())
    env.run(until=env.any_of([proc, env.timeout(max_sim_s)]))
    if not proc.triggered:
        raise SimulationBoundError(
            f"run of {plan.variant} at load {load} (seed {seed}) reached the bound of "
            f"max_sim_s = {max_sim_s} s of simulated time after {st['done']} of {steps} steps; "
            "raise max_sim_s, or lower steps or load")
    end = env.now
    duration = end - start
    utilisation, queue_mean = [], []
    for link, b in zip(links, st["begin"]):
        e = link.state(end)
        busy = b["backlog_s"] + (e["work_s"] - b["work_s"]) - e["backlog_s"]
        area = b["remaining_s"] + (e["sojourn_s"] - b["sojourn_s"]) - e["remaining_s"]
        utilisation.append(busy / duration)
        queue_mean.append(area / duration)
    plain = not rounds and factors is None
    trace = _trace(st, plan, start, trace_points) if trace_steps and plain else {}
    return RunResult(
        variant=plan.variant, load=load, seed=int(seed), step_s=step_s,
        utilisation=tuple(utilisation), queue_mean=tuple(queue_mean),
        queue_max=tuple(link.queue_max for link in links),
        messages=sum(link.arrivals for link in links), sim_s=end, trace=trace,
        useful_compute_s=plan.useful_compute_s(),
        draws=0 if factors is None else factors.draws)


def _rounds_job(env: simpy.Environment, plan: Plan, links: tuple, start: float, step_s: np.ndarray,
                st: dict):
    """The job with fragment syncs or a delay (docs/model.md section 14), on the compute's progress.

    Milestones in compute seconds done: step ends (k + 1) c; fragment j of round r (j = 1..F)
    starts at (r H + j H / F - f) c and is due at (r H + j H / F + tau) c, where the compute waits
    for it. A due fragment is waited for before a step end at the same point (the step holds the
    wait, as a sync at a step's end does); at one point the syncs go in fragment order, each
    started before it is due (a start that meets the previous fragment's due follows its wait). One round
    runs first as a warm-up, so that the syncs a round carries into the next (tau > 0) are there
    from the first counted round on.
    """
    H, c, F, f, tau = plan.sync_every, plan.compute_s, plan.fragments, plan.overlap, plan.delay
    steps = step_s.size
    total = H + steps  # the warm-up round, then the counted steps
    START, DUE, END = 0, 1, 2
    # (progress, order, kind, key): at one point, syncs in fragment order, each started before it
    # is due, then the step's end
    marks = [((k + 1) * c, math.inf, END, k) for k in range(total)]
    for r in range(-(-total // H)):
        for j in range(1, F + 1):
            point = r * H + j * H / F
            n = r * F + j
            marks.append(((point - f) * c, 2 * n, START, (r, j)))
            marks.append(((point + tau) * c, 2 * n + 1, DUE, (r, j)))
    marks.sort(key=lambda m: (m[0], m[1]))
    if start > 0:
        yield env.timeout(start)
    st["begin"] = [link.state(env.now) for link in links]
    for link in links:
        link.log = None  # the trace covers the plain rounds only
    syncs: dict = {}
    progress, step_start = 0.0, env.now
    for at, _, kind, key in marks:
        if at > total * c:
            break
        if at > progress:
            yield env.timeout(at - progress)
            progress = at
        if kind == START:
            syncs[key] = env.process(_sync(env, plan, links, 0.0, None))
        elif kind == DUE:
            if key in syncs:
                yield syncs.pop(key)
        else:
            k = key - H
            if k >= 0:
                step_s[k] = env.now - step_start
                st["done"] = k + 1
            step_start = env.now


def _sites_job(env: simpy.Environment, plan: Plan, links: tuple, start: float,
               step_s: np.ndarray, st: dict, factors: _st.StepFactors):
    """The job with per-DC compute or stragglers (docs/model.md section 16): one process per DC,
    each on its own compute's progress, meeting only at the syncs.

    DC i's progress is counted in its own inner steps: a round is H_i of them
    (:meth:`Plan.dc_steps`; floor(H_i) whole steps and a last fraction, :func:`events.stragglers
    .pieces`), inner step k taking c_i M_k (M_k the largest step factor of its n_i workers,
    drawn a round at a time from :class:`events.stragglers.StepFactors`) and a fraction of a
    step that fraction of it. Within a step, progress runs at an even pace, as in
    :func:`_rounds_job`. Fragment j of round r: DC i is ready f of a step before its sync point
    r H_i + j H_i / F (the gradients of its last step are ready during that step's backward,
    which ends when the DC's slowest worker does: f of the step's actual compute, c_i M f), the
    sync starts when every DC is ready and is due ``delay`` of DC i's own steps after its sync
    point, where DC i waits until it is done. So without stragglers, at load 0 and while the
    windows do not overlap, a step is c_max + F max(0, comm_frag - window) / H with window
    (f + tau) c_max under "wait" (the slowest DC is ready last and due last) and (f + tau) c_min
    under "scaled" (every DC's round is H c_max, so the fastest DC, whose steps are shortest, is
    ready last and due first).

    The DCs meet only at the syncs, so an inner step has no common end: the job's round ends
    when the last DC ends it (its waits at the round's end included), and each of its H steps is
    recorded as the round's time / H (at H = 1 each step's own time). A last, partial round of
    m < H steps runs m / H of every DC's round, without a sync, as the plain job's does. One
    round runs first as a warm-up when tau > 0, as in :func:`_rounds_job`.
    """
    H, F, f, tau = plan.sync_every, plan.fragments, plan.overlap, plan.delay
    c, H_i = plan.dc_compute_s, plan.dc_steps()
    K, steps = len(c), step_s.size
    warm = 1 if tau > 0 else 0
    full, left = divmod(steps, H)
    R = warm + full + (1 if left else 0)
    START, DUE, END = 0, 1, 2
    readies: dict = {}
    syncs: dict = {}
    ends = np.zeros((K, R))
    ended = [0] * R

    def sync(key):
        if key not in syncs:
            readies[key] = [env.event() for _ in range(K)]
            syncs[key] = env.process(_when_ready(env, readies[key], plan, links))
        return syncs[key]

    def dc(i):
        h = H_i[i]
        lengths = _st.pieces(h)
        edges = np.concatenate(([0.0], np.cumsum(lengths)))
        edges[-1] = h
        marks = []
        for r in range(R):
            partial = bool(left) and r == R - 1
            marks.append((r * h + (h * left / H if partial else h), math.inf, END, r))
            if not partial:
                for j in range(1, F + 1):
                    point, n = r * h + j * h / F, r * F + j
                    marks.append((point - f, 2 * n, START, (r, j)))
                    marks.append((point + tau, 2 * n + 1, DUE, (r, j)))
        marks.sort(key=lambda m: (m[0], m[1]))
        cap = max(m[0] for m in marks if m[2] == END)  # the last round's end
        starts, cums = [0.0], []  # compute done at each round's start; within each round

        def compute_at(q):  # compute seconds done at progress q (its own steps)
            r = min(max(int(q // h), 0), R - 1)
            while len(cums) <= r:
                d = c[i] * factors.take(i, lengths.size) * lengths
                cum = np.concatenate(([0.0], np.cumsum(d)))
                cums.append(cum)
                starts.append(starts[-1] + cum[-1])
            return starts[r] + float(np.interp(min(max(q - r * h, 0.0), h), edges, cums[r]))

        done = 0.0
        for q, _, kind, key in marks:
            if q > cap:
                continue
            at = compute_at(q)
            if at > done:
                yield env.timeout(at - done)
                done = at
            if kind == START:
                sync(key)
                readies[key][i].succeed()
            elif kind == DUE:
                yield sync(key)
            else:
                ends[i, key] = env.now
                ended[key] += 1
                if ended[key] == K and key >= warm:
                    st["done"] = min(steps, (key - warm + 1) * H)

    if start > 0:
        yield env.timeout(start)
    st["begin"] = [link.state(env.now) for link in links]
    for link in links:
        link.log = None  # the trace covers the plain rounds only
    t0 = env.now
    yield env.all_of([env.process(dc(i)) for i in range(K)])
    round_end = ends.max(axis=0)
    prev = t0 if warm == 0 else round_end[0]
    for r in range(warm, R):
        k0 = (r - warm) * H
        k1 = min(k0 + H, steps)
        step_s[k0:k1] = (round_end[r] - prev) / (k1 - k0)
        prev = round_end[r]


def _when_ready(env: simpy.Environment, readies: list, plan: Plan, links: tuple):
    """A fragment sync that starts when every DC is ready for it."""
    yield env.all_of(readies)
    yield env.process(_sync(env, plan, links, 0.0, None))


def _trace(st: dict, plan: Plan, start: float, points: int) -> dict:
    """Messages in each link and the sync's bytes not yet delivered (all links), on an even grid
    from the job's start to the end of the traced steps. ``queues`` has one list per link;
    ``queue_out`` and ``queue_in`` are the first two (at K = 2, DC A to B and B to A)."""
    t = np.linspace(start, st["trace_end"], points)
    queues = []
    for log, begin in zip(st["logs"], st["begin"]):
        arrivals = np.array([a for a, _ in log])
        departures = np.sort(np.array([d for _, d in log] + begin["inflight"]))
        q = (len(begin["inflight"]) + np.searchsorted(arrivals, t, side="right")
             - np.searchsorted(departures, t, side="right"))
        queues.append(q.tolist())
    left = np.zeros(points)
    for t_sync in st["syncs"]:
        left += np.where(t >= t_sync, sum(plan.bytes_B()), 0.0)
    for delivered in st["delivered"]:
        for t_done, size in delivered:
            left -= np.where(t >= t_done, size, 0.0)
    return {"t_ms": ((t - start) * 1e3).tolist(), "queues": queues, "queue_out": queues[0],
            "queue_in": queues[-1] if len(queues) > 1 else queues[0],
            "sync_bytes_left": np.maximum(left, 0.0).tolist(),
            "step_end_ms": [(x - start) * 1e3 for x in st["step_ends"]]}


def seed_free(plan: Plan, load: float) -> bool:
    """Whether a run of ``plan`` at ``load`` is the same at every seed: the seed draws only other
    jobs' transfers (none at load 0) and the per-DC step factors (:attr:`Plan.per_dc`)."""
    return float(load) == 0.0 and not plan.per_dc


def run_summary(plan: Plan, load: float, seed: int, steps: int,
                max_sim_s: float = MAX_SIM_S) -> dict:
    """One run without its trace, as :meth:`RunResult.summary` (what a sweep's worker returns;
    it needs only this module, so workers stay light)."""
    return simulate(plan, load, seed, steps, trace_steps=0, max_sim_s=max_sim_s).summary()
