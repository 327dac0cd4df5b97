"""Break-evens per second: the vectorised search against ``scipy.optimize.brentq`` in a Python loop.

The problems: every pair of variants (E' on both of its bases: 20 pairs of curves) at every point
of a scenario grid (model size x workers per DC x module port x optics rate x budget), at least
1e5 pairs of curves in the full run. Each is searched over 0.1 to 1,000 GB/s.

Figures (each the median of ``repeats`` runs, with min and max; in each run the jitted calls are
timed back to back, 5 of them (2 in the quick run), like the brentq loop over its sample):

- ``roots_per_s``: crossings found per second by :func:`bandjax.breakeven.bandwidth_crossings`
  (one jitted call, from the scenario grid to the roots; compile time excluded, reported apart);
  pairs without a crossing in range cost time but count for nothing.
- ``ratio_brentq``: ``roots_per_s`` over brentq's roots per second on a sample of the same problems
  that cross. The baseline is given its best case: the search's own residual
  r(u) = n_a (R_a e^u + V_a) / (n_b (R_b e^u + V_b)) - 1 as plain Python floats (coefficients from
  the model, computed before the clock starts), the range's ends as the bracket (it needs no
  bracket search, knowing there is one crossing), and its default tolerances.
- ``ratio_brentq_closed_form``: the same against brentq whose residual calls the jitted closed form
  at each trial bandwidth (what a loop over the model without rewriting it costs).
- ``grad_over_solve``: the time of the solve plus the gradient of all crossings with respect to
  every scenario field and both step counts (``jax.grad`` through the implicit function theorem),
  over the time of the solve alone. Under ``jax.grad`` the scenario is traced, so the gradient is
  given the search's static fact (:func:`bandjax.breakeven.may_kink` of the grid: no variant has
  a kink in range) as any caller inside its own jit gives it; the solve finds it itself.
"""

from __future__ import annotations

import itertools
from functools import partial
import math
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import bandjax
from bandjax import breakeven as be
from bandjax import variants

LO_BPS, HI_BPS = be.BANDWIDTH_RANGE_GBps[0] * 1e9, be.BANDWIDTH_RANGE_GBps[1] * 1e9


def _axis(values, i, ndim):
    shape = [1] * ndim
    shape[i] = -1
    return np.reshape(np.asarray(values, dtype=float), shape)


def problems(quick: bool = False):
    """(scenario grid, ia, ib, steps_a, steps_b, pair labels): pairs on the last axis."""
    sc = bandjax.reference()
    if quick:
        dims = {"params": np.geomspace(1e6, 1e11, 5), "workers_per_dc": [2.0, 4.0],
                "qsfp_port_Bps": [25e9, 50e9], "optics_Sps": [3.5e9, 7e9],
                "budget_FLOPs": [10e9, np.inf]}
    else:
        dims = {"params": np.geomspace(1e6, 1e11, 10), "workers_per_dc": [1.0, 2.0, 4.0, 8.0, 16.0],
                "qsfp_port_Bps": np.linspace(10e9, 50e9, 5), "optics_Sps": [1e9, 3.5e9, 7e9, 14e9],
                "budget_FLOPs": [10e9, 40e9, 99e9, 400e9, np.inf]}
    ndim = len(dims) + 1  # the pair axis last
    fields = {k: _axis(v, i, ndim) for i, (k, v) in enumerate(dims.items())}
    grid = sc.at_model_size(fields.pop("params")).replace(**fields)
    pairs = [(a, b, basis) for a, b in itertools.combinations(variants.IDS, 2)
             for basis in (bandjax.BASES if {a, b} & set(variants.basis_dependent()) else ("hypothesis",))]
    ia = np.array([variants.IDS.index(a) for a, _, _ in pairs])
    ib = np.array([variants.IDS.index(b) for _, b, _ in pairs])
    na = np.array([sc.steps.lookup(a, float(sc.enob), basis) for a, _, basis in pairs])
    nb = np.array([sc.steps.lookup(b, float(sc.enob), basis) for _, b, basis in pairs])
    grid = jax.tree.map(jnp.asarray, grid)
    return grid, ia, ib, na, nb, pairs


def _solve(grid, ia, ib, na, nb):
    return be.bandwidth_crossings(grid, ia, ib, na, nb, LO_BPS, HI_BPS)


def _loss(grid, na, nb, ia, ib, kinks, general):
    # under jax.grad the scenario is traced: the static facts come from outside, as they do for
    # any caller inside its own jit (be.may_kink and be.needs_general_search of the concrete grid)
    x = be.bandwidth_crossings(grid, ia, ib, na, nb, LO_BPS, HI_BPS, kinks=kinks,
                               general=general).x
    return jnp.sum(jnp.where(jnp.isfinite(x), jnp.log(x), 0.0))


_grad = jax.jit(jax.grad(_loss, argnums=(0, 1, 2)), static_argnames=("kinks", "general"))


@jax.jit
def _coefficients(grid, ia, ib, na, nb):
    """The residual's coefficients per problem, as the search computes them."""
    terms = bandjax.step_terms_s(grid)
    step = jnp.sum(terms, -1)
    wan = terms[..., bandjax.COMPONENTS.index("wan")]
    R, V = step - wan, wan * jnp.asarray(grid.wan_Bps)[..., None]
    shape = jnp.broadcast_shapes(R.shape[:-1], jnp.shape(ia))
    out = [jnp.broadcast_to(jnp.asarray(na / nb, dtype=float), shape)]
    for idx in (ia, ib):
        out += [jnp.broadcast_to(be._pick(R, idx), shape), jnp.broadcast_to(be._pick(V, idx), shape)]
    return jnp.stack(out, axis=-1)


def _brentq_roots_per_s(coeffs) -> tuple[float, np.ndarray]:
    from scipy.optimize import brentq

    lo, hi = math.log(LO_BPS), math.log(HI_BPS)
    out = np.empty(len(coeffs))
    start = time.perf_counter()
    for i, (c, Ra, Va, Rb, Vb) in enumerate(coeffs.tolist()):
        def r(u, c=c, Ra=Ra, Va=Va, Rb=Rb, Vb=Vb):
            B = math.exp(u)
            return c * (Ra * B + Va) / (Rb * B + Vb) - 1.0
        out[i] = brentq(r, lo, hi)
    return len(coeffs) / (time.perf_counter() - start), np.exp(out)


@jax.jit
def _closed_form_residual(sc, B, na, nb, ia, ib):
    step = bandjax.step_s(sc.replace(wan_Bps=B))
    return na * step[ia] / (nb * step[ib]) - 1.0


def _brentq_closed_form_roots_per_s(grid, sample, ia, ib, na, nb) -> float:
    """brentq whose residual evaluates the jitted closed form at each trial bandwidth."""
    from scipy.optimize import brentq

    shape = np.broadcast_shapes(*(np.shape(v) for v in jax.tree.leaves(grid)))[:-1]
    points = []
    for flat_index in sample:
        *where, pair = np.unravel_index(flat_index, (*shape, len(ia)))
        point = jax.tree.map(lambda v: jnp.asarray(np.broadcast_to(np.asarray(v), (*shape, 1))[(*where, 0)]), grid)
        points.append((point, float(na[pair]), float(nb[pair]), int(ia[pair]), int(ib[pair])))
    _closed_form_residual(points[0][0], 1e9, *points[0][1:]).block_until_ready()  # compile
    start = time.perf_counter()
    for point, a_steps, b_steps, a, b in points:
        brentq(lambda u: float(_closed_form_residual(point, math.exp(u), a_steps, b_steps, a, b)),
               math.log(LO_BPS), math.log(HI_BPS))
    return len(points) / (time.perf_counter() - start)


def _stats(values) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": len(values)}


def _timed(fn, *args, calls: int = 1):
    """Seconds per call, averaged over ``calls`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(fn(*args))
    return (time.perf_counter() - start) / calls


def run(quick: bool = False) -> dict:
    """Measure; JSON-ready figures (medians of >= 5 runs with min and max)."""
    repeats = 5 if quick else 7
    calls = 2 if quick else 5  # per run, so a run spans about as long as the brentq loop
    grid, ia, ib, na, nb, pairs = problems(quick)
    compile_solve_s = _timed(_solve, grid, ia, ib, na, nb)
    grad = partial(_grad, kinks=be.may_kink(grid, ia, ib), general=be.needs_general_search(grid))
    compile_grad_s = _timed(grad, grid, na, nb, ia, ib)
    c = _solve(grid, ia, ib, na, nb)
    x = np.asarray(c.x)
    count = np.asarray(c.count)
    n_pairs, n_roots = count.size, int(np.sum(np.isfinite(x)))
    crossing = np.flatnonzero(np.isfinite(x[..., 0]).reshape(-1))

    # A sample of the problems that cross, for the baselines.
    rng = np.random.default_rng(0)
    sample = rng.choice(crossing, size=min(len(crossing), 300 if quick else 3000), replace=False)
    coeffs = np.asarray(_coefficients(grid, ia, ib, na, nb)).reshape(-1, 5)[sample]
    cf_sample = sample[: 10 if quick else 100]

    roots_per_s, pairs_per_s, ratio, grad_ratio, brentq_rate, cf_rate, cf_ratio = ([] for _ in range(7))
    for _ in range(repeats):
        solve_s = _timed(_solve, grid, ia, ib, na, nb, calls=calls)
        grad_s = _timed(grad, grid, na, nb, ia, ib, calls=calls)
        rate, brentq_x = _brentq_roots_per_s(coeffs)
        roots_per_s.append(n_roots / solve_s)
        pairs_per_s.append(n_pairs / solve_s)
        brentq_rate.append(rate)
        ratio.append(roots_per_s[-1] / rate)
        grad_ratio.append(grad_s / solve_s)
    for _ in range(repeats):
        solve_s = _timed(_solve, grid, ia, ib, na, nb, calls=calls)
        cf = _brentq_closed_form_roots_per_s(grid, cf_sample, ia, ib, na, nb)
        cf_rate.append(cf)
        cf_ratio.append((n_roots / solve_s) / cf)
    agreement = float(np.max(np.abs(brentq_x / x.reshape(-1)[sample] - 1)))
    return {
        "pairs": n_pairs,
        "roots": n_roots,
        "most_crossings_per_pair": int(count.max()),
        "roots_per_s": _stats(roots_per_s),
        "pairs_per_s": _stats(pairs_per_s),
        "brentq_roots_per_s": _stats(brentq_rate),
        "ratio_brentq": _stats(ratio),
        "brentq_closed_form_roots_per_s": _stats(cf_rate),
        "ratio_brentq_closed_form": _stats(cf_ratio),
        "grad_over_solve": _stats(grad_ratio),
        "compile_solve_s": compile_solve_s,
        "compile_grad_s": compile_grad_s,
        "brentq_sample": int(len(sample)),
        "brentq_closed_form_sample": int(len(cf_sample)),
        "max_rel_diff_vs_brentq": agreement,
        "device": jax.devices()[0].platform,
    }


def _table(results: dict) -> str:
    rows = [("pairs of curves", f"{results['pairs']:,}"), ("crossings found", f"{results['roots']:,}")]
    for key, label, fmt in (
            ("roots_per_s", "vectorised, roots/s", "{:,.0f}"),
            ("pairs_per_s", "vectorised, pairs/s", "{:,.0f}"),
            ("brentq_roots_per_s", "brentq loop, roots/s", "{:,.0f}"),
            ("ratio_brentq", "speed-up per root vs brentq", "{:.1f}x"),
            ("brentq_closed_form_roots_per_s", "brentq on the closed form, roots/s", "{:,.0f}"),
            ("ratio_brentq_closed_form", "speed-up vs brentq on the closed form", "{:.0f}x"),
            ("grad_over_solve", "solve + gradient / solve", "{:.2f}")):
        s = results[key]
        rows.append((label, f"{fmt.format(s['median'])} (min {fmt.format(s['min'])}, "
                            f"max {fmt.format(s['max'])}, {s['runs']} runs)"))
    rows += [("compile: solve / grad", f"{results['compile_solve_s']:.2f} s / {results['compile_grad_s']:.2f} s"),
             ("max |x / x_brentq - 1|", f"{results['max_rel_diff_vs_brentq']:.1e}"),
             ("device", results["device"])]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


if __name__ == "__main__":
    import sys

    print(_table(run(quick="--quick" in sys.argv)))
