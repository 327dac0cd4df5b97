"""Sites that differ and workers that straggle (docs/model.md section 16), in the event engine:
the arguments, the draws, the closed forms that check them, and the normal approximation's
measured error. NumPy only.

**What a run draws.** Each DC i has compute c_i per inner step and n_i workers. A worker's
inner step takes c_i X, X independent across workers and steps, mean 1:

    none          X = 1
    exponential   X = (1 - s) + s E,  E ~ Exp(1),  tail share s in [0, 1]
    lognormal     ln X ~ Normal(-sigma^2 / 2, sigma^2),  sigma >= 0

The workers of a DC meet every inner step (the intra-DC barrier), so DC i's inner step takes
c_i M, M the largest of its n_i draws. X is increasing in E (or in the normal draw), so M is the
same transform of the largest raw draw: a run draws every worker's E or Z and maximises before
transforming. DC i's draws come from its own stream, ``numpy.random.default_rng([seed,
STREAM, i])`` (the links' background uses ``[seed, i]``), in blocks of about :data:`BLOCK`
draws (``BLOCK // n_i`` inner steps at a time), so a seed gives the same run and a draw costs
a few nanoseconds of NumPy, not a Python call: :class:`StepFactors`. The draws of a run are
N = sum n_i a step (:func:`draws_per_round`), and the engine refuses a run over
:data:`MAX_DRAWS` before it starts.

**Rounds.** The DCs meet only at a sync. Under ``sites = "wait"`` every DC does H inner steps a
round; under ``"scaled"`` DC i does H_i = H c_max / c_i, so that every DC computes for H c_max.
A DC only does whole steps; the engine does floor(H_i) of them and then a last step of the
fraction H_i - floor(H_i) of a step's compute (its own draw, its time c_i M x the fraction), so
the engine's time is the closed form's exactly (to rounding) where nothing straggles. What that
fraction stands for is a real DC's choice: rounding H_i down idles it up to c_i a round and
drops up to one inner step of its tokens (1 / H_i of them), rounding up makes the round wait up
to c_i; either way at most one inner step a DC a round, the error "scaled" states.

**The closed forms** (docs/model.md section 16, for the engine's tests and the table below):
:func:`max_moments` (mu_m and sigma_m of the largest of m draws: exact sums for the
exponential, quadrature of F(x)^m for the lognormal), :func:`exact_h1_s` (H = 1: E[max over every
worker of c_i X] by quadrature of prod_i F(t / c_i)^{n_i}), and :func:`approx_s` (H > 1: each
DC's round compute normal with mean H_i c_i mu_{n_i} and sd sqrt(H_i) c_i sigma_{n_i}; the
compute part of an inner step is E[max of those K normals] / H). Quadrature is the trapezoid
rule on 20,001 to 200,001 points, good to about 1e-9 relative against the worked values.

**The approximation's error, measured** (:func:`error_table`, ``python -m events.stragglers``,
seed 0: 288 cells, K = 2, 4, 8 equal DCs of n = 1, 8, 64, 512 workers, c = 1 s, H = 1, 10,
100, 1000, exponential s and lognormal sigma of 0.01, 0.1, 0.3; at least 64 rounds and 4e6
worker draws a cell, 4.3e9 draws in 68 s on one core of the shared 2-core development
machine). The error is approximation / engine - 1 of the compute part of an inner step, the
engine's mean taken over its own draws (:func:`dc_round_compute_s`, the DCs' mean a control
variate); at H = 1 against the exact form mu_{K n} instead, which the engine's draws meet
within 2.8 standard errors in all 72 cells. The largest |error| over K, n and both families:

    H                   1          10         100        1000
    tail 0.01           2.9e-3     4.3e-4     1.3e-4     5.8e-5
    tail 0.1            2.5e-2     4.1e-3     8.3e-4     3.9e-4
    tail 0.3            5.8e-2     1.1e-2     1.6e-3     8.6e-4
    n = 1               5.8e-2     1.1e-2     1.6e-3     2.1e-4
    n >= 8              3.8e-2     5.2e-3     1.4e-3     8.6e-4
    engine's SE, up to  3.0e-3     2.2e-3     1.1e-3     4.7e-4

So for H >= 100 the approximation is within 0.16% of the engine's mean compute part in every
cell, and for H = 1000 within 0.09%, where every difference is inside 3 of the engine's
standard errors (the approximation's own error there is below what 64 rounds resolve); at
H = 10 within 1.1% (0.52% for n >= 8, 0.41% at tails up to 0.1). At H = 1 it errs by up to
5.8% (the closed form uses the exact form there, not this). It is worst at small n, large
tails and many DCs: the sum of H inner steps of one worker is skewed to the right, and the
largest of K of them is further out than the largest of K normals, so the approximation is
low (optimistic) wherever its error is resolved at K >= 4 (exponential 0.3, n = 1, K = 8:
-5.8% at H = 1, -1.1% at H = 10, -0.16% at H = 100); at K = 2 and H = 1 it is high (up to
+1.7%, n = 1). The error falls about as 1 / sqrt(H) from H = 1 to 100, as the skew of the
sums does.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

NONE, EXPONENTIAL, LOGNORMAL = "none", "exponential", "lognormal"
FAMILIES = (NONE, EXPONENTIAL, LOGNORMAL)
"""The families, in the order of the scenario's numeric leaf ``straggler`` (0, 1, 2)."""
WAIT, SCALED = "wait", "scaled"
SITES = (WAIT, SCALED)
STREAM = 0x5354  # tags the stragglers' streams apart from the links' ([seed, i])
BLOCK = 1 << 16  # draws per DC drawn at once
MAX_DRAWS = 2e10
"""Worker draws one engine run may make (N x inner steps): about 7 minutes of one core at
:data:`DRAWS_PER_S`."""
DRAWS_PER_S = 5e7
"""Worker draws per wall second on one core (``python -m benchmarks.events_bench``,
``stragglers.draws_per_s``: blocks of 65,536 exponential draws maximised per step of 64
workers, 5.0e7 on the 2-core development machine shared with other jobs; the error table drew
6.3e7 a second, lognormal included)."""


# --- arguments ---

def family(value) -> str:
    """The family's name from its name or the scenario's numeric code (0, 1, 2), or ValueError
    naming the value and what is allowed."""
    if isinstance(value, str) and value in FAMILIES:
        return value
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
    if number and float(value) in (0.0, 1.0, 2.0):
        return FAMILIES[int(value)]
    raise ValueError(f"straggler = {value!r}: must be one of {', '.join(map(repr, FAMILIES))} "
                     "(or the scenario's code 0, 1, 2)")


def check(compute_s, workers, straggler: str, straggler_s, sites: str
          ) -> tuple[tuple[float, ...], tuple[int, ...], str, float, str]:
    """Each DC's compute and workers, the family, its parameter and the sites' rule, checked:
    ValueError naming the argument, its value and what is allowed. ``compute_s`` and ``workers``
    are tuples of one value a DC (both empty: equal sites, nothing per DC)."""
    compute_s, workers = tuple(compute_s), tuple(workers)
    if len(compute_s) != len(workers):
        raise ValueError(f"dc_compute_s = {compute_s!r}, dc_workers = {workers!r}: {len(compute_s)} "
                         f"and {len(workers)} values; give one of each per DC (or neither)")
    for i, c in enumerate(compute_s):
        if isinstance(c, (bool, np.bool_)) or not isinstance(
                c, (int, float, np.integer, np.floating)) or not (math.isfinite(c) and c > 0):
            raise ValueError(f"dc_compute_s[{i}] = {c!r}: each DC's compute per inner step must be "
                             "a finite number of seconds > 0")
    for i, n in enumerate(workers):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"dc_workers[{i}] = {n!r}: each DC's workers must be a whole number "
                             ">= 1")
    name = family(straggler)
    ok = isinstance(straggler_s, (int, float, np.integer, np.floating)) and not isinstance(
        straggler_s, (bool, np.bool_)) and math.isfinite(straggler_s)
    x = float(straggler_s) if ok else math.nan
    if name == EXPONENTIAL and not (ok and 0 <= x <= 1):
        raise ValueError(f"straggler_s = {straggler_s!r}: the exponential family's tail share s "
                         "must be a number in [0, 1]")
    if name == LOGNORMAL and not (ok and x >= 0):
        raise ValueError(f"straggler_s = {straggler_s!r}: the lognormal family's sigma must be a "
                         "finite number >= 0")
    if name == NONE and not (ok and x >= 0):
        raise ValueError(f"straggler_s = {straggler_s!r}: must be a finite number >= 0 (unused "
                         "when nothing straggles)")
    if sites not in SITES:
        raise ValueError(f"sites = {sites!r}: must be {WAIT!r} (every DC runs H inner steps and "
                         f"the sync waits for the slowest) or {SCALED!r} (DC i runs H c_max / c_i)")
    if name != NONE and not workers:
        raise ValueError(f"straggler = {name!r}: the stragglers need each DC's workers "
                         "(dc_workers) and compute (dc_compute_s)")
    return tuple(float(c) for c in compute_s), tuple(int(n) for n in workers), name, x, sites


def straggles(name: str, param: float) -> bool:
    """Whether X varies at all (a family other than none, with s or sigma > 0)."""
    return name != NONE and param > 0


def steps_per_round(compute_s, H: int, sites: str) -> tuple[float, ...]:
    """H_i: H every DC under "wait", H c_max / c_i under "scaled" (not rounded)."""
    if sites == WAIT:
        return (float(H),) * len(compute_s)
    c_max = max(compute_s)
    return tuple(H * c_max / c for c in compute_s)


def pieces(H_i: float) -> np.ndarray:
    """One DC's round in steps: floor(H_i) whole steps, then the fraction left (if any)."""
    whole = math.floor(H_i)
    frac = H_i - whole
    return np.array([1.0] * whole + ([frac] if frac > 0 else []))


def draws_per_round(workers, H_i) -> int:
    """Worker draws a round makes: sum_i n_i x (inner steps of DC i, a last fraction a step)."""
    return sum(n * math.ceil(h) for n, h in zip(workers, H_i))


# --- the draws ---

class StepFactors:
    """Each DC's stream of inner-step factors M (the largest X of its n_i workers), drawn in
    blocks; :meth:`take` gives the next ones of a DC. The engine and :func:`round_compute_s`
    read them the same way, so they see the same factors for a seed."""

    def __init__(self, workers, name: str, param: float, seed: int):
        self.workers = tuple(int(n) for n in workers)
        self.name, self.param = name, float(param)
        self.on = straggles(name, self.param)
        self._rngs = [np.random.default_rng([int(seed), STREAM, i])
                      for i in range(len(self.workers))]
        self._buf = [np.empty(0)] * len(self.workers)
        self._pos = [0] * len(self.workers)
        self.draws = 0  # worker draws made so far

    def take(self, i: int, m: int) -> np.ndarray:
        """The next ``m`` factors of DC ``i`` (ones when nothing straggles)."""
        if not self.on:
            return np.ones(m)
        parts, need = [], m
        while need:
            buf, pos = self._buf[i], self._pos[i]
            if pos == buf.size:
                buf, pos = self._block(i), 0
                self._buf[i] = buf
            k = min(need, buf.size - pos)
            parts.append(buf[pos:pos + k])
            self._pos[i] = pos + k
            need -= k
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _block(self, i: int) -> np.ndarray:
        """About :data:`BLOCK` draws: ``BLOCK // n`` steps, or one step drawn in chunks of
        BLOCK workers when n is larger (the memory stays a block's)."""
        n = self.workers[i]
        rows = max(1, BLOCK // n)
        rng, p = self._rngs[i], self.param
        self.draws += rows * n
        draw = rng.standard_exponential if self.name == EXPONENTIAL else rng.standard_normal
        if n <= BLOCK:
            top = draw((rows, n)).max(axis=1)
        else:
            top = np.full(1, -np.inf)
            for k in range(0, n, BLOCK):
                top = np.maximum(top, draw(min(BLOCK, n - k)).max())
        if self.name == EXPONENTIAL:  # (1 - s) + s E is increasing in E: maximise first
            return (1 - p) + p * top
        return np.exp(p * top - p * p / 2)


def dc_round_compute_s(compute_s, workers, H: int, name: str, param: float, sites: str = WAIT,
                       rounds: int = 1, seed: int = 0) -> np.ndarray:
    """Each DC's compute in each of ``rounds`` rounds (the sum of its inner steps), s: a NumPy
    Monte Carlo with the engine's draws (:class:`StepFactors`, read in the engine's order).
    Returns (K, rounds) seconds."""
    H_i = steps_per_round(compute_s, H, sites)
    f = StepFactors(workers, name, param, seed)
    out = np.empty((len(H_i), rounds))
    for i, (c, h) in enumerate(zip(compute_s, H_i)):
        p = pieces(h)
        out[i] = (c * f.take(i, rounds * p.size).reshape(rounds, p.size) * p).sum(axis=1)
    return out


def round_compute_s(compute_s, workers, H: int, name: str, param: float, sites: str = WAIT,
                    rounds: int = 1, seed: int = 0) -> np.ndarray:
    """The compute of ``rounds`` rounds, each the slowest DC's (:func:`dc_round_compute_s`), s:
    for a seed, the engine's rounds at load 0 with a sync that costs nothing. Returns (rounds,)
    seconds."""
    return dc_round_compute_s(compute_s, workers, H, name, param, sites, rounds, seed).max(axis=0)


# --- the closed forms, in plain floats and NumPy ---

_erfc = np.frompyfunc(math.erfc, 1, 1)
_SQRT2 = math.sqrt(2.0)


def _log_ndtr(z: np.ndarray) -> np.ndarray:
    """log Phi(z), accurate in both tails (erfc of the far side where Phi is near 1)."""
    z = np.asarray(z, float)
    out = np.empty_like(z)
    lo = z < 0
    with np.errstate(divide="ignore"):
        out[lo] = np.log(0.5 * _erfc(-z[lo] / _SQRT2).astype(float))
    out[~lo] = np.log1p(-0.5 * _erfc(z[~lo] / _SQRT2).astype(float))
    return out


def _ndtr(z: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(-np.asarray(z, float) / _SQRT2).astype(float)


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2)


_EXACT_SUMS = 1_000_000  # above, the sums' asymptotic series (error below 1e-24)


def _harmonic(m: int) -> float:
    """H_m = sum_{k<=m} 1/k (smallest terms first)."""
    if m <= _EXACT_SUMS:
        return float(np.sum(1 / np.arange(m, 0, -1, dtype=float)))
    return math.log(m) + 0.5772156649015329 + 1 / (2 * m) - 1 / (12 * m**2) + 1 / (120 * m**4)


def _harmonic2(m: int) -> float:
    """sum_{k<=m} 1/k^2."""
    if m <= _EXACT_SUMS:
        return float(np.sum(1 / np.arange(m, 0, -1, dtype=float) ** 2))
    return math.pi**2 / 6 - 1 / m + 1 / (2 * m**2) - 1 / (6 * m**3)


@functools.lru_cache(maxsize=4096)
def max_moments(name: str, param: float, m: int) -> tuple[float, float]:
    """(mu_m, sigma_m): mean and sd of the largest of m draws of X.

        exponential  mu_m = 1 - s + s H_m,  sigma_m = s sqrt(sum_{k<=m} 1/k^2)
        lognormal    by quadrature of m phi(z) Phi(z)^(m-1) over z, X = exp(sigma z - sigma^2/2)
    """
    m, p = int(m), float(param)
    if not straggles(name, p):
        return 1.0, 0.0
    if name == EXPONENTIAL:
        return 1 - p + p * _harmonic(m), p * math.sqrt(_harmonic2(m))
    z = np.linspace(-12.0, math.sqrt(2 * math.log(m)) + 10.0 if m > 1 else 12.0, 40_001)
    dens = m * np.exp(-z * z / 2 - 0.5 * math.log(2 * math.pi) + (m - 1) * _log_ndtr(z))
    x = np.exp(p * z - p * p / 2)
    mu = _trapezoid(x * dens, z)
    second = _trapezoid(x * x * dens, z)
    return mu, math.sqrt(max(second - mu * mu, 0.0))


@functools.lru_cache(maxsize=64)
def e_max_normals(K: int) -> float:
    """e_K = E[max of K standard normals], by quadrature."""
    if K == 1:
        return 0.0
    z = np.linspace(-12.0, 12.0, 40_001)
    dens = K * np.exp(-z * z / 2 - 0.5 * math.log(2 * math.pi) + (K - 1) * _log_ndtr(z))
    return _trapezoid(z * dens, z)


def _log_cdf(name: str, p: float, x: np.ndarray) -> np.ndarray:
    """log P(X <= x)."""
    if name == EXPONENTIAL:
        y = (x - (1 - p)) / p
        with np.errstate(divide="ignore"):
            return np.where(y > 0, np.log(-np.expm1(-np.maximum(y, 1e-300))), -np.inf)
    with np.errstate(divide="ignore"):
        return _log_ndtr((np.log(x) + p * p / 2) / p)


def exact_h1_s(compute_s, workers, name: str, param: float, points: int = 200_001) -> float:
    """The compute part of a step at H = 1, s: E[max over every worker of c_i X] =
    integral over t > 0 of 1 - prod_i F(t / c_i)^{n_i}, by the trapezoid rule (docs/model.md
    section 16)."""
    c = np.asarray(compute_s, float)
    n = np.asarray(workers, float)
    p = float(param)
    c_max = float(c.max())
    if not straggles(name, p):
        return c_max
    N = float(n.sum())
    if name == EXPONENTIAL:
        lo = (1 - p) * c_max  # no worker of the slowest DC is done before
        t = np.linspace(lo, c_max * ((1 - p) + p * (math.log(N) + 50)), points)
        w = t
    else:
        u_lo = math.log(c_max) - p * p / 2 - 12 * p
        u_hi = math.log(c_max) - p * p / 2 + p * (math.sqrt(2 * math.log(N)) + 10) if N > 1 \
            else math.log(c_max) - p * p / 2 + 12 * p
        w = np.linspace(u_lo, u_hi, points)  # t = e^u, dt = e^u du
        t = np.exp(w)
        lo = float(t[0])
    logG = sum(ni * _log_cdf(name, p, t / ci) for ci, ni in zip(c, n))
    tail = -np.expm1(logG)
    return lo + _trapezoid(tail * (t if name == LOGNORMAL else 1.0), w)


def approx_s(compute_s, workers, H: int, name: str, param: float, sites: str = WAIT,
             points: int = 20_001) -> float:
    """The normal approximation of an inner step's compute part, s (docs/model.md section 16):
    DC i's round compute normal with mean H_i c_i mu_{n_i} and sd sqrt(H_i) c_i sigma_{n_i};
    E[max of the K normals] / H by quadrature. Equal DCs give c (mu_n + sigma_n e_K / sqrt(H))."""
    H_i = steps_per_round(compute_s, H, sites)
    mom = [max_moments(name, float(param), int(n)) for n in workers]
    mean = np.array([h * c * mu for h, c, (mu, _) in zip(H_i, compute_s, mom)])
    sd = np.array([math.sqrt(h) * c * s for h, c, (_, s) in zip(H_i, compute_s, mom)])
    if not sd.max() > 0:
        return float(mean.max()) / H
    if np.all(mean == mean[0]) and np.all(sd == sd[0]):
        return float(mean[0] + sd[0] * e_max_normals(len(mean))) / H
    lo = float(np.max(mean - 12 * sd))
    t = np.linspace(lo, float(np.max(mean + 12 * sd)), points)
    logG = np.zeros_like(t)
    for m, s in zip(mean, sd):
        logG += np.where(t >= m, 0.0, -np.inf) if s == 0 else _log_ndtr((t - m) / s)
    return (lo + _trapezoid(-np.expm1(logG), t)) / H


# --- the normal approximation's error, measured ---

TABLE_K = (2, 4, 8)
TABLE_N = (1, 8, 64, 512)
TABLE_H = (1, 10, 100, 1000)
TABLE_TAILS = ((EXPONENTIAL, (0.01, 0.1, 0.3)), (LOGNORMAL, (0.01, 0.1, 0.3)))
TABLE_DRAWS = 4_000_000  # worker draws a cell, at least
TABLE_ROUNDS = 64  # rounds a cell, at least


def table_cell(K: int, n: int, H: int, name: str, param: float, draws: int = TABLE_DRAWS,
               min_rounds: int = TABLE_ROUNDS, seed: int = 0) -> dict:
    """The normal approximation (:func:`approx_s`) against the engine's draws for K equal DCs of
    n workers, c = 1 s: {"K", "n", "H", "family", "param", "rounds", "engine" (the mean compute
    part of an inner step, s), "se", "approx", "error" (approx / engine - 1), "error_se",
    "exact" and "exact_error" (H = 1 only: the exact form mu_{K n} and approx / exact - 1),
    "wall_s"}.

    The engine's mean is estimated over R rounds (at least ``min_rounds``, and at least
    ``draws`` worker draws) with the DCs' mean as a control variate: E[max_i S_i] =
    E[max_i S_i - mean_i S_i] + H mu_n exactly, and the difference varies less than the max."""
    t0 = time.perf_counter()
    R = max(int(min_rounds), math.ceil(draws / (K * n * H)))
    S = dc_round_compute_s((1.0,) * K, (n,) * K, H, name, param, WAIT, R, seed) / H
    d = S.max(axis=0) - S.mean(axis=0)
    mu = max_moments(name, float(param), int(n))[0]
    engine = float(d.mean()) + mu
    se = float(d.std(ddof=1) / math.sqrt(R))
    approx = approx_s((1.0,) * K, (n,) * K, H, name, param)
    row = {"K": K, "n": n, "H": H, "family": name, "param": float(param), "rounds": R,
           "engine": engine, "se": se, "approx": approx, "error": approx / engine - 1,
           "error_se": se / engine, "exact": math.nan, "exact_error": math.nan}
    if H == 1:
        row["exact"] = max_moments(name, float(param), K * n)[0]
        row["exact_error"] = approx / row["exact"] - 1
    row["wall_s"] = time.perf_counter() - t0
    return row


def error_table(draws: int = TABLE_DRAWS, min_rounds: int = TABLE_ROUNDS, seed: int = 0,
                Ks=TABLE_K, ns=TABLE_N, Hs=TABLE_H, tails=TABLE_TAILS) -> list[dict]:
    """:func:`table_cell` for every K, n, H, family and tail of the table (288 cells by
    default)."""
    return [table_cell(K, n, H, name, p, draws, min_rounds, seed)
            for name, params in tails for p in params for K in Ks for n in ns for H in Hs]


def summary(rows: list[dict]) -> dict:
    """The largest |error| per H and n (over K, families and tails), per H and family and
    tail (over K and n), and the largest standard error per H: nested dicts of floats."""
    out: dict = {"by_n": {}, "by_tail": {}, "se": {}}
    for r in rows:
        err = abs(r["exact_error"] if r["H"] == 1 else r["error"])
        by_n = out["by_n"].setdefault(r["H"], {})
        by_n[r["n"]] = max(by_n.get(r["n"], 0.0), err)
        key = f"{r['family']} {r['param']:g}"
        by_tail = out["by_tail"].setdefault(r["H"], {})
        by_tail[key] = max(by_tail.get(key, 0.0), err)
        out["se"][r["H"]] = max(out["se"].get(r["H"], 0.0), r["error_se"])
    return out


def print_table(rows: list[dict]) -> None:
    """:func:`error_table`'s cells, one line each, then :func:`summary`."""
    print(f"{'family':11} {'tail':>5} {'K':>2} {'n':>4} {'H':>5} {'rounds':>7} {'engine':>9} "
          f"{'+-se':>8} {'approx':>9} {'error':>9} {'exact err':>9}")
    for r in rows:
        print(f"{r['family']:11} {r['param']:5g} {r['K']:2d} {r['n']:4d} {r['H']:5d} "
              f"{r['rounds']:7d} {r['engine']:9.6f} {r['se']:8.1e} {r['approx']:9.6f} "
              f"{r['error']:+9.2e} {r['exact_error']:+9.2e}")
    s = summary(rows)
    print("largest |error| (H = 1: against the exact form; else against the engine), by n:")
    for H, by_n in s["by_n"].items():
        print(f"  H = {H:<5d} " + "  ".join(f"n={n}: {e:.2e}" for n, e in by_n.items())
              + f"   (engine's se up to {s['se'][H]:.1e})")
    print("by family and tail:")
    for H, by_tail in s["by_tail"].items():
        print(f"  H = {H:<5d} " + "  ".join(f"{k}: {e:.2e}" for k, e in by_tail.items()))


if __name__ == "__main__":
    t0 = time.perf_counter()
    rows = error_table()
    print_table(rows)
    draws = sum(r["rounds"] * r["K"] * r["n"] * r["H"] for r in rows)
    wall = time.perf_counter() - t0
    print(f"{len(rows)} cells, {draws:.3g} worker draws in {wall:.1f} s: {draws / wall:.3g} a second")
