"""An independent reference for bandwidth break-evens (docs/model.md section 10): every crossing of
two times to target by ``scipy.optimize.brentq`` on a fine log grid plus each variant's kink, and
every tie interval, from :func:`bandjax.step_s` evaluated at those bandwidths.

The kinks here come from each variant's one-fragment communication at two bandwidths (it is affine
in 1/B with equal links): comm_frag = A + S/B, kink at B* = S / ((f + tau) c - A). Between two
consecutive points of the fine grid plus the kinks both times are then linear in 1/B, so a sign
change of their difference is one crossing, and a tie is a run of points where they are equal.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from scipy.optimize import brentq

from bandjax.step import fragment_parts_s, step_s, sum_parts

TIE_RTOL = 1e-12  # as the search's (bandjax.roots.TIE_RTOL), stated here on its own


def point(sc, i):
    """Grid point ``i`` of a scenario whose numeric fields are 1-d arrays over the points."""
    return jax.tree.map(lambda v: np.asarray(v)[i] if np.ndim(v) else v, sc)


@jax.jit
def _steps(sc, B):
    return step_s(sc.replace(wan_Bps=B))


@jax.jit
def _comm_frag(sc, B):
    return sum_parts(fragment_parts_s(sc.replace(wan_Bps=B)))


def kinks_Bps(sc) -> np.ndarray:
    """Each variant's kink (NaN: none), from its communication at 1 and 2 GB/s."""
    B1, B2 = 1e9, 2e9
    f1, f2 = np.asarray(_comm_frag(sc, B1)), np.asarray(_comm_frag(sc, B2))
    S = (f1 - f2) / (1 / B1 - 1 / B2)
    A = f1 - S / B1
    delay = np.array([float(v.delay) for v in sc.variants])
    w = (float(sc.overlap_fraction) + delay) * float(sc.gpu_compute_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        B = S / (w - A)
    return np.where((S > 0) & (w - A > 0), B, np.nan)


def crossings(sc, ia, ib, na, nb, lo, hi, n=4000):
    """(crossings, ties) of variants ia and ib with steps na and nb over [lo, hi] B/s: crossings
    by brentq to 1e-15 relative, ties as [from, to] in B/s."""
    k = kinks_Bps(sc)[[ia, ib]]
    B = np.unique(np.concatenate([np.geomspace(lo, hi, n), k[np.isfinite(k) & (k > lo) & (k < hi)]]))
    s = np.asarray(_steps(sc, B))
    ta, tb = na * s[:, ia], nb * s[:, ib]
    d = ta - tb
    zero = np.abs(d) <= TIE_RTOL * tb
    seg = zero[:-1] & zero[1:]
    ties, j = [], 0
    while j < len(seg):
        if seg[j]:
            e = j
            while e + 1 < len(seg) and seg[e + 1]:
                e += 1
            ties.append([B[j], B[e + 1]])
            j = e + 1
        else:
            j += 1
    in_tie = np.zeros(len(B), bool)
    for t0, t1 in ties:
        in_tie |= (B >= t0) & (B <= t1)

    def gap(b):
        st = np.asarray(_steps(sc, b))
        return na * st[ia] - nb * st[ib]

    out = []
    sign = np.sign(d)
    for j in range(len(B) - 1):
        if in_tie[j] or in_tie[j + 1]:
            continue
        if sign[j] * sign[j + 1] < 0:
            out.append(brentq(gap, B[j], B[j + 1], xtol=1e-300, rtol=1e-15))
        elif sign[j + 1] == 0 and j + 2 < len(B) and sign[j] * sign[j + 2] < 0:
            out.append(B[j + 1])  # exactly on a point
    return out, ties


def with_method(v, id_, **changes):
    return dataclasses.replace(v, id=id_, **changes)
