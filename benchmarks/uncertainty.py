"""Break-evens under uncertain inputs per second: 1e4 Monte Carlo samples of E' vs AdamW in one
jitted, vmapped call, beside ``scipy.optimize.brentq`` on the same samples in a Python loop.

The samples: 2% normal spread on E's steps (E' takes them on the hypothesis basis) and on E''s fixed
time d. Figures (medians of 5 runs after the compiling call, which is reported apart):

- ``uncertainty.roots_per_s``: samples whose crossing is found, per second, by
  :func:`bandjax.uncertainty.sample_roots` (from the drawn parameters to the roots);
- ``uncertainty.brentq_roots_per_s`` and ``uncertainty.ratio_brentq``: brentq given its best case,
  the residual r(u) = T_a / T_b - 1 as Python floats from coefficients computed before the clock
  starts (at most 1,000 samples; the roots are checked equal to the vectorised search's first);
- ``uncertainty.delta_s``: the delta method (one root and its implicit gradient), compiled.

Run: ``python -m benchmarks.uncertainty [--samples N]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

import bandjax
from bandjax import uncertainty as U
from bandjax.breakeven import BANDWIDTH_RANGE_GBps, resolve_variant
from bandjax.step import COMPONENTS, step_terms_s

from .common import measure

LO, HI = BANDWIDTH_RANGE_GBps[0] * 1e9, BANDWIDTH_RANGE_GBps[1] * 1e9


def problem(samples: int, seed: int = 0):
    sc = bandjax.reference()
    d_e = sc.fixed_s[resolve_variant("E'", sc.variants)]  # E' by its label, as a user names it
    uncertain = {"steps.E": U.Normal(1800.0, 36.0), "d.E'": U.Normal(d_e, 0.02 * d_e)}
    d, steps0, static = U.prepare(sc, "E'", "adamw", uncertain, samples, seed, "hypothesis")
    return sc, d, steps0, static


def _brentq(sc, d, steps0, static, limit: int) -> tuple[float, np.ndarray]:
    """brentq's roots per second on the first ``limit`` samples, and its roots (B/s)."""
    from scipy.optimize import brentq

    ia, ib = static["ia"], static["ib"]
    n = min(limit, len(d.samples))
    coeffs = []
    wan = COMPONENTS.index("wan")
    for v in d.samples[:n]:
        s, steps = U._apply(sc, static["fields"], static["steps_index"], steps0, jnp.asarray(v))
        terms = np.asarray(step_terms_s(s))
        step, w = terms.sum(-1), terms[..., wan]
        R, V = step - w, w * float(s.wan_Bps)
        coeffs.append((float(steps[ia] / steps[ib]), R[ia], V[ia], R[ib], V[ib]))
    out = np.empty(n)
    t0 = time.perf_counter()
    for i, (c, Ra, Va, Rb, Vb) in enumerate(coeffs):
        def r(u, c=c, Ra=Ra, Va=Va, Rb=Rb, Vb=Vb):
            B = math.exp(u)
            return c * (Ra * B + Va) / (Rb * B + Vb) - 1.0
        out[i] = math.exp(brentq(r, math.log(LO), math.log(HI)))
    return n / (time.perf_counter() - t0), out


def run(quick: bool = False, samples: int | None = None) -> dict:
    """The section's figures (``python -m benchmarks`` runs it as section ``uncertainty``; keys
    ``roots_per_s`` and ``ratio_brentq`` besides the prefixed ones). ``quick``: 500 samples."""
    samples = (500 if quick else 10_000) if samples is None else samples
    sc, d, steps0, static = problem(samples)
    V, S = jnp.asarray(d.samples), jnp.asarray(steps0)
    call = lambda: U.sample_roots(sc, V, S, LO, HI, **static)  # noqa: E731
    t = measure(call)
    roots = np.asarray(call())
    found = int(np.sum(np.isfinite(roots)))
    rate, brentq_x = _brentq(sc, d, steps0, static, 1000)
    agreement = float(np.max(np.abs(brentq_x / roots[:len(brentq_x)] - 1)))
    delta = measure(lambda: U.propagate_break_even(sc, "E'", "adamw", {
        "steps.E": U.Normal(1800.0, 36.0)}, samples=2, seed=0).delta_sd_GBps, repeat=5)
    ours = found / t["median_s"]
    return {
        "roots_per_s": ours,
        "ratio_brentq": ours / rate,
        "uncertainty.samples": samples,
        "uncertainty.roots_found": found,
        "uncertainty.roots_per_s": ours,
        "uncertainty.call_s": t["median_s"],
        "uncertainty.call_min_s": t["min_s"],
        "uncertainty.call_max_s": t["max_s"],
        "uncertainty.first_call_s": t["first_s"],
        "uncertainty.brentq_roots_per_s": rate,
        "uncertainty.ratio_brentq": ours / rate,
        "uncertainty.max_rel_diff_vs_brentq": agreement,
        "uncertainty.propagate_2_samples_s": delta["median_s"],
        "device": jax.devices()[0].platform,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.uncertainty")
    p.add_argument("--samples", type=int, default=10_000)
    args = p.parse_args(argv)
    print(json.dumps(run(samples=args.samples), indent=2))


if __name__ == "__main__":
    main()
