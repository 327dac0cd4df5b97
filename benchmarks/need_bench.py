"""Needed bandwidths per second: :func:`bandjax.need.needed_Bps` against ``scipy.optimize.brentq``.

The problems: the method pack (docs/model.md section 14) and the study's six variants at every
point of a grid (model size x workers per DC x WAN latency x overlap) and five compute-utilisation
targets (50 / 80 / 90 / 95 / 99 %), each solved over 0.1 to 1,000 GB/s (at least 1e5 targets in the
full run).

Figures (each the median of ``repeats`` runs, with min and max):

- ``targets_per_s``: targets solved per second by one jitted call of
  :func:`bandjax.need.needed_Bps` (compile time excluded, reported apart as ``compile_s``);
  every target counts, reached or not.
- ``ratio_brentq``: ``targets_per_s`` over brentq's targets per second on a sample of the same
  problems that are reached in range. The baseline is given its best case: the compute
  utilisation c / (c + F max(0, A + W/B - w) / H) as plain Python floats (coefficients from the
  model, computed before the clock starts) and the range's ends as the bracket.
- ``max_rel_diff``: the largest relative difference between the two on the sample (they are proven
  equal, to 1e-9, before anything is timed).
"""

from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np

import bandjax
from bandjax import need
from bandjax.step import col, sync_method, window_s

from . import common

TARGETS = np.array([0.5, 0.8, 0.9, 0.95, 0.99])
LO_BPS, HI_BPS = need.DEFAULT_RANGE_GBps[0] * 1e9, need.DEFAULT_RANGE_GBps[1] * 1e9


def problems(quick: bool = False):
    """The scenario grid (variants on the last axis, every field an array)."""
    sc = bandjax.reference().with_variants(bandjax.METHODS)
    if quick:
        dims = {"params": np.geomspace(1e8, 1e11, 4), "workers_per_dc": [1.0, 8.0],
                "wan_latency_s": [0.0, 0.01], "overlap_fraction": [0.0, 2 / 3]}
    else:
        dims = {"params": np.geomspace(1e8, 1e12, 40), "workers_per_dc": [1.0, 2.0, 4.0, 8.0, 16.0],
                "wan_latency_s": [0.0, 1e-3, 0.01, 0.05], "overlap_fraction": np.linspace(0, 1, 5)}
    ndim = len(dims) + 1  # the variant axis last
    fields = {}
    for i, (k, v) in enumerate(dims.items()):
        shape = [1] * ndim
        shape[i] = -1
        fields[k] = np.reshape(np.asarray(v, dtype=float), shape)
    return jax.tree.map(jnp.asarray, sc.replace(**fields))


@jax.jit
def _coefficients(sc):
    """(c, H, F, w, A, W) per problem, as the closed form composes them."""
    m, W, groups = need._split(sc)
    c = col(sc.gpu_compute_s)
    A = sum(groups.values())
    w = window_s(c, col(sc.overlap_fraction), m.delay)
    out = [c, m.H, m.fragments, w, A, W]
    shape = jnp.broadcast_shapes(*(jnp.shape(x) for x in out))
    return jnp.stack([jnp.broadcast_to(x, shape) for x in out], axis=-1)


def _brentq(coeffs, targets):
    from scipy.optimize import brentq

    lo, hi = math.log(LO_BPS), math.log(HI_BPS)
    out = np.empty(len(coeffs))
    start = time.perf_counter()
    for i, ((c, H, F, w, A, W), u) in enumerate(zip(coeffs.tolist(), targets.tolist())):
        def gap(x, c=c, H=H, F=F, w=w, A=A, W=W, u=u):
            return c / (c + F * max(0.0, A + W / math.exp(x) - w) / H) - u
        out[i] = math.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-15))
    return len(coeffs) / (time.perf_counter() - start), out


def run(quick: bool = False) -> dict:
    sc = problems(quick)
    targets = jnp.asarray(TARGETS)

    def solve():
        return need.needed_Bps(sc, targets, LO_BPS, HI_BPS)

    t0 = time.perf_counter()
    B, status, _ = jax.block_until_ready(solve())
    compile_s = time.perf_counter() - t0
    B, status = np.asarray(B), np.asarray(status)
    n = B.size
    # the baseline on a sample of reached targets, proven equal first
    coeffs = np.asarray(_coefficients(sc))
    u_all = np.broadcast_to(TARGETS.reshape((-1,) + (1,) * coeffs[..., 0].ndim), B.shape)
    coeffs_all = np.broadcast_to(coeffs, B.shape + (coeffs.shape[-1],))
    reached = np.flatnonzero(status.ravel() == need.REACHED)
    sample = np.random.default_rng(0).choice(reached, size=min(len(reached), 200 if quick else 2000),
                                             replace=False)
    rate_brentq, roots = _brentq(coeffs_all.reshape(-1, coeffs.shape[-1])[sample],
                                 u_all.ravel()[sample])
    rel = np.abs(roots / B.ravel()[sample] - 1)
    if not rel.max() < 1e-9:
        raise AssertionError(f"needed_Bps and brentq differ by {rel.max():.3g} relative")
    timing = common.measure(solve, repeat=common.MIN_REPEAT)
    return {
        "targets": int(n), "reached": int(len(reached)),
        "targets_per_s": n / timing["median_s"],
        "targets_per_s_min": n / timing["max_s"], "targets_per_s_max": n / timing["min_s"],
        "compile_s": compile_s,
        "brentq_targets_per_s": rate_brentq,
        "ratio_brentq": n / timing["median_s"] / rate_brentq,
        "max_rel_diff": float(rel.max()), "sample": int(len(sample)),
        "timing": timing,
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps({k: v for k, v in run("--quick" in sys.argv).items() if k != "timing"},
                     indent=1))
