"""Timing helpers: steady-state medians of several runs, first-call (compile) time, memory bandwidth.

Every figure is timed ``repeat`` times (at least 5) after the call that compiles; the median is the
figure, min and max show the spread. Results are waited for with ``jax.block_until_ready`` (JAX
dispatches asynchronously, so the clock would otherwise stop before the work is done).
"""

from __future__ import annotations

import math
import os
import platform
import time

import jax
import numpy as np

MIN_REPEAT = 5


def _wait(result):
    return jax.block_until_ready(result)


def stats(runs_s) -> dict:
    """median_s, min_s, max_s and the runs themselves, s."""
    runs = [float(r) for r in runs_s]
    return {"median_s": float(np.median(runs)), "min_s": min(runs), "max_s": max(runs),
            "runs_s": runs, "n": len(runs)}


def measure(fn, *, repeat: int = MIN_REPEAT, warmup: int = 1) -> dict:
    """Steady-state time of ``fn()``: ``warmup`` untimed calls, then ``repeat`` timed ones.

    The previous result is dropped before each call (freed at once by reference counting), so a
    run never shares memory with the last.
    Returns :func:`stats` plus ``first_s``, the wall time of the first (warm-up) call, which for a
    jitted function at a new shape includes tracing and compiling.
    """
    if repeat < MIN_REPEAT:
        raise ValueError(f"repeat = {repeat}: a figure needs at least {MIN_REPEAT} runs")
    first = math.nan
    result = None
    for i in range(warmup):
        result = None
        t0 = time.perf_counter()
        result = _wait(fn())
        if i == 0:
            first = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        result = None
        t0 = time.perf_counter()
        result = _wait(fn())
        runs.append(time.perf_counter() - t0)
    del result
    out = stats(runs)
    out["first_s"] = first
    return out


def memory_bandwidth(nbytes: int = 2**30, repeat: int = MIN_REPEAT) -> dict:
    """This machine's memory bandwidth, measured as a numpy copy of ``nbytes`` (STREAM "copy").

    Bandwidth = 2 x nbytes / time (bytes read + bytes written), B/s. ``warm`` copies into an
    array already touched; ``fresh`` into a new one, so it also pays the page faults of first
    touch, which every new output array pays. Arrays are much larger than the last-level cache.
    """
    n = int(nbytes) // 8
    src = np.ones(n)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    warm = measure(lambda: np.copyto(dst, src), repeat=repeat)
    del dst
    fresh = measure(lambda: src.copy(), repeat=repeat)
    out = {"nbytes": n * 8, "method": "numpy copy, bandwidth = (bytes read + bytes written) / time"}
    for name, t in (("warm", warm), ("fresh", fresh)):
        out[name] = {**t, "Bps": 2 * n * 8 / t["median_s"],
                     "Bps_min": 2 * n * 8 / t["max_s"], "Bps_max": 2 * n * 8 / t["min_s"]}
    return out


def peak_rss_B() -> int:
    """This process's peak resident set size, B (``VmHWM``).

    Not ``ru_maxrss``: a process started by fork + exec inherits its parent's high-water mark
    there, so a child of a large process would report its parent's peak.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmHWM not found in /proc/self/status")


def fit_exponent(cells, seconds) -> float:
    """Least-squares slope of log(time) against log(cells): 1.0 is linear cost."""
    x, y = np.log(np.asarray(cells, float)), np.log(np.asarray(seconds, float))
    if len(x) < 2:
        return math.nan
    return float(np.polyfit(x, y, 1)[0])


def machine() -> dict:
    """What the figures were measured on."""
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        mem = None
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover
        load = None
    return {"cpus": os.cpu_count(), "memory_B": mem, "load_average": load,
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(), "jax": jax.__version__, "numpy": np.__version__,
            "jax_backend": jax.default_backend()}
