"""Distinct per-link tables through :func:`bandjax.required_bandwidth`, one process.

The question "what if each of my links were upgraded in turn" asks the same closed form of many
tables of the same K. The tables are leaves of the scenario (data, not part of the compiled
program), so a new table of the same K must reuse the program the first one compiled.

Figures:

- ``tables_per_s``: distinct K = 6 mesh tables answered per second, each one call of
  :func:`bandjax.required_bandwidth` (the first call, which compiles, timed apart as
  ``first_call_s``); the median of ``repeats`` runs, with min and max.
- ``ratio_equal_links``: ``tables_per_s`` over the calls per second of the same question on the
  scenario without a table (equal links, one program throughout), timed in the same run: the
  floor a table adds nothing to.
- ``rss_growth_MB``: growth of the process's resident set (``VmRSS``) over the ``tables`` x
  ``repeats`` calls after the first, MB; a program kept per table would grow it without bound.
- ``compiles``: programs XLA compiled during those calls (JAX's debug log, counted): 0 where the
  first table's program serves them all.
"""

from __future__ import annotations

import logging
import time

import numpy as np

import bandjax

from . import common

K = 6
UTILISATION = [0.1, 0.3]


def tables(n: int, seed: int = 0):
    """``n`` distinct K x K bandwidth (B/s) and latency (s) tables, symmetric, one link upgraded
    each (a new one for every table), on a random base."""
    rng = np.random.default_rng(seed)
    base_B = rng.uniform(5e9, 50e9, (K, K))
    base_B = (base_B + base_B.T) / 2
    base_l = rng.uniform(1e-6, 50e-6, (K, K))
    base_l = (base_l + base_l.T) / 2
    out = []
    for t in range(n):
        B = base_B * rng.uniform(1.0, 1.1, (K, K))
        i, j = divmod(t % (K * K), K)
        if i != j:
            B[i, j] *= 4.0
        out.append((B, base_l * rng.uniform(0.9, 1.1, (K, K))))
    return out


def scenarios(n: int):
    """The reference scenario on a K-DC mesh, once per table."""
    sc = bandjax.reference().replace(topology="mesh")
    return [sc.with_links(B, l) for B, l in tables(n)]


def _rss_B() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


class _Compiles(logging.Handler):
    """Counts XLA compilations from JAX's debug log ("Finished XLA compilation of ...")."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.n = 0

    def emit(self, record):
        if "Finished XLA compilation" in record.getMessage():
            self.n += 1


def count_compiles(fn):
    """(fn(), compiles XLA made during it)."""
    log = logging.getLogger("jax._src.dispatch")
    counter, level = _Compiles(), log.level
    log.addHandler(counter)
    log.setLevel(logging.DEBUG)
    try:
        out = fn()
    finally:
        log.removeHandler(counter)
        log.setLevel(level)
    return out, counter.n


def _ask(sc):
    return bandjax.required_bandwidth(sc, UTILISATION)["required_bandwidth_GBps"].values


def run(quick: bool = False, repeats: int = 3, n: int | None = None) -> dict:
    n = n or (20 if quick else 1000)
    scs = scenarios(n * repeats + 1)  # every call a table not seen before, in every run
    start = time.perf_counter()
    _ask(scs[0])
    first_s = time.perf_counter() - start
    rss0 = _rss_B()

    def all_tables(run):
        start = time.perf_counter()
        for sc in scs[1 + run * n:1 + (run + 1) * n]:
            _ask(sc)
        return n / (time.perf_counter() - start)

    rates, compiles = [], 0
    for r in range(repeats):
        rate, made = count_compiles(lambda: all_tables(r))
        rates.append(rate)
        compiles += made
    rss_growth = _rss_B() - rss0
    equal = bandjax.reference().replace(topology="mesh", dcs=float(K))
    _ask(equal)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            _ask(equal)
        times.append(n / (time.perf_counter() - start))
    equal_rate = float(np.median(times))
    rate = float(np.median(rates))
    return {"tables": n, "K": K, "first_call_s": first_s,
            "tables_per_s": rate, "tables_per_s_min": float(np.min(rates)),
            "tables_per_s_max": float(np.max(rates)),
            "equal_links_per_s": equal_rate, "ratio_equal_links": rate / equal_rate,
            "rss_growth_MB": rss_growth / 1e6, "peak_rss_MB": common.peak_rss_B() / 1e6,
            "compiles": compiles}


if __name__ == "__main__":
    import json
    import sys

    tables_n = next((int(a.split("=")[1]) for a in sys.argv if a.startswith("--tables=")), None)
    print(json.dumps(run(quick="--quick" in sys.argv, repeats=1, n=tables_n), indent=1))
