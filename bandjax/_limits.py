"""Bounds on what one command may ask for, so that a mistyped argument fails at once with a clear
message instead of running for hours or filling the memory.

Each bound is named once here; the checks that use it put the asked-for value and the bound in
their message, in the user's units. This module imports nothing, so that any module (the event
engine's workers included) may read it cheaply.
"""

from __future__ import annotations

# Event engine (events/): what a `bandjax wan` call or the report's shared-WAN section may run.
MAX_EVENTS = 10**11
"""Link arrivals (the sync's messages plus other jobs' transfers, both WAN directions) estimated
over every run of one sweep, whatever its time budget (:data:`MAX_ENGINE_S` is the bound that
usually binds first): 8 hours of one core at :data:`ENGINE_EVENTS_PER_S`."""

ENGINE_EVENTS_PER_S = 3.3e6
"""Other jobs' transfers the engine simulates per wall second on one core, from
``python -m benchmarks.events_bench`` (``events.events_per_s``: AdamW on the reference scenario at
load 0.9, 400 steps, where other jobs' transfers are 92% of the link arrivals): 3.2e6 to 3.4e6 on
the 2-core development machine (median 3.17e6, max 3.38e6 over 5 runs, Dec 2026)."""

ENGINE_MESSAGES_PER_S = 8e5
"""The sync's messages the engine simulates per wall second on one core (each is a SimPy event,
so they cost about 4x a transfer of other jobs): the same benchmark run at load 0, where every
link arrival is a message (``_throughput(events.build(reference(), "adamw"), 0.0, 400, 5)`` in
benchmarks/events_bench.py): 8.8e5 on the quiet development machine, 4.5e5 with four other jobs
on its two cores."""

MAX_ENGINE_S = 600.0
"""Wall time, s, one `bandjax wan` call or :func:`events.sweep` may be estimated to take before it
is refused (``--budget-s`` / ``budget_s`` raise it): the sweep's link arrivals at
:data:`ENGINE_MESSAGES_PER_S` and :data:`ENGINE_EVENTS_PER_S` per worker. The estimate is for a
machine with a core free per worker; a loaded one takes up to about twice as long."""

MAX_STEPS = 10_000_000
"""Training steps in one run (each run keeps one float per step: 80 MB at the bound)."""

MAX_SEEDS = 10_000
"""Seeds in one sweep."""

MAX_RUNS = 100_000
"""Runs (grid points) in one sweep."""

MAX_DCS = 1_000
"""Data centres in one `bandjax wan` run (every directed WAN link is simulated: 999,000 on a mesh
of 1,000)."""

MAX_SITES = 1_000
"""DCs the site questions (`bandjax sites`, the report's sites section) take one by one: each a
row, a column of every per-site array and, where sites differ, a sweep without it (10,000 equal
DCs took over a minute and 10^8 ran out of memory before)."""

MAX_LOCAL_WORKERS = 64
"""Worker processes of a LocalCluster made for one command (each a few hundred MB)."""

# Links that differ (Scenario.with_links, [[links.pairs]], docs/model.md section 15)
MAX_LINK_DCS = 1_000
"""DCs in one links table (K): a mesh has K(K-1) directed links, so 999,000 at the bound, each
a column of every per-link product; a larger table is refused from its length, before any array is
made of it (10,000 DCs took 111 s and 7 GB before)."""

MAX_LINK_BANDWIDTH_RATIO = 1e12
"""Largest ratio of the fastest link's bandwidth to the slowest's in one table (1 kB/s beside
1 PB/s). The table is kept as ratios to the slowest link and the closed forms take products of
those ratios with byte counts of up to 1e200 B (bandjax.scenario.MAX_BYTES) and with times; 1e12
leaves those products some 90 orders of magnitude inside a 64-bit float."""

# dask scheduler given by address
SCHEDULER_TIMEOUT_S = 10.0
"""How long to wait for a dask scheduler given by address to answer, s."""

# The chunked store (bandjax.store.write, `bandjax store`)
MAX_STORE_POINTS = 10**11
"""Grid points in one store (at 18 B a point for a winner map, 1.8 TB: a bound on hours of work)."""

MAX_CHUNKS = 100_000
"""Chunks in one store (each is a task, a zarr chunk and a progress step)."""

MIN_CHUNK_B = 1
"""Smallest chunk a store may ask for, B (a chunk holds at least one value whatever it is; the
number of chunks is what MAX_CHUNKS bounds)."""

# Root finding (bandjax.break_even)
MAX_ROOT_GRID = 100_000
"""Points of the coarse grid that brackets crossings (the default is 32; each point is one
evaluation of the closed forms at every grid point of the scenario)."""

# Uncertain inputs (bandjax.sweep and bandjax.break_even with samples)
MAX_SAMPLES = 1_000_000
"""Monte Carlo samples in one call (the default is 10,000). Each sample is a row of every
uncertain parameter and, in the jitted pass, of every bandwidth and variant: at the bound a
sweep's default 5 bandwidths x 6 variants hold 3e7 values per intermediate, a few GB in all.
Checked before any sample is drawn (1e9 grew to 6 GB first)."""

# Files read by the command line
MAX_SCENARIO_BYTES = 1_000_000
"""A scenario TOML file (the reference scenario is about 3 kB)."""

MAX_RESULTS_BYTES = 200_000_000
"""A results.json read back by `bandjax explore --results` (a full report's is under 1 MB)."""


# Closed-form sweeps (bandjax.sweep): what one materialising call may produce
SWEEP_MEMORY_SHARE = 0.5
"""Share of the memory available when a sweep starts that its outputs and the jitted pass's
intermediates may take; past it the sweep is refused before compiling, pointing to the chunked
store and the fused winner map."""

MAX_AXIS_VALUES = 10_000_000
"""Values along one axis of a sweep (checked before they are copied: 1e8 bandwidths would take
gigabytes as a list before the sweep's own size check could refuse them)."""

MAX_ARRAY_ELEMENTS = 2**31 - 1
"""Elements in one output array: XLA's CPU kernels index with 32-bit integers past which a call
stalls rather than fails."""


def available_memory_bytes() -> float:
    """Memory the system can give without swapping (Linux ``MemAvailable``), or inf if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


def describe_bytes(n: float) -> str:
    """``n`` bytes with a binary prefix, for messages: 1.5 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.4g} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return f"{n:.4g} TiB"  # pragma: no cover
