"""Entry points that combine a question with uncertain inputs: ``bandjax.break_even`` and
``bandjax.sweep``.

:func:`break_even` is :func:`bandjax.breakeven.break_even` and :func:`sweep` is
:func:`bandjax.grid.sweep`; with ``samples``, each is the same answer under uncertain inputs
(:func:`bandjax.uncertainty.propagate_break_even`, :func:`~bandjax.uncertainty.propagate_sweep`).
This module sits above them all, so that none imports a higher layer.
"""

from __future__ import annotations

from . import breakeven as _be
from . import grid as _grid
from . import uncertainty as _u
from .scenario import Scenario, reference


def break_even(sc: Scenario, a: str, b: str, *, over: str = "bandwidth",
               basis: str = "hypothesis", lo=None, hi=None, grid: int = _be.GRID,
               max_roots: int = _be.MAX_ROOTS, samples=None, seed=0, uncertain=None):
    """Every crossing of a and b over ``over`` for the scenario (scalar or a grid of fields).

    Args:
      sc: the scenario; numeric fields may be arrays (broadcast as a grid).
      a, b: variant ids or short labels.
      over: ``"bandwidth"`` (WAN, B/s), ``"budget"`` (module compute, FLOP/s) or any parameter of
        :func:`bandjax.breakeven.parameter_names` (searched by re-evaluating the closed forms).
      basis: which steps E' takes: ``"hypothesis"`` (E's) or ``"exact"`` (the exact band's).
      lo, hi: the range in SI units; defaults: 0.1 to 1,000 GB/s, 1 to 10,000 GFLOP/s, or the
        parameter's value / 100 to x 100.
      grid: coarse grid points (log-uniform) that find brackets.
      max_roots: crossings refined per point; raised and re-run if any point has more.
      samples, seed, uncertain: with ``samples``, the bandwidth break-even under uncertain inputs
        (``uncertain``, else the scenario's own): :func:`bandjax.uncertainty.propagate_break_even`.

    Returns:
      :class:`bandjax.breakeven.BreakEven` (numpy arrays); with ``samples``, a
      :class:`bandjax.uncertainty.BreakEvenUncertainty`.
    """
    if samples is not None:
        return _u.propagate_break_even(sc, a, b, uncertain, samples, seed, basis=basis, over=over,
                                       lo=lo, hi=hi)
    return _be.break_even(sc, a, b, over=over, basis=basis, lo=lo, hi=hi, grid=grid,
                          max_roots=max_roots)


# bandjax.grid.sweep's arguments other than the scenario, bandwidth, basis and dtype: with
# samples, each must be left unset (propagate_sweep names one that is given)
_OTHERS = ("enob", "budget", "variant", "model", "gpu", "dcs", "topology", "workers_per_dc", "H",
           "quantities")


def sweep(scenario: Scenario | None = None, *, samples=None, seed=0, uncertain=None, **kwargs):
    """:func:`bandjax.grid.sweep` (every closed form over a labelled grid, same arguments), or,
    with ``samples``, Monte Carlo over uncertain inputs (``uncertain``, else the scenario's own)
    over ``bandwidth``: :func:`bandjax.uncertainty.propagate_sweep` (``seed``: the NumPy seed)."""
    if samples is None:
        return _grid.sweep(scenario, **kwargs)
    sc = reference() if scenario is None else scenario
    bandwidth, basis = kwargs.pop("bandwidth", None), kwargs.pop("basis", None)
    kwargs.pop("dtype", None)
    others = {k: kwargs.pop(k, None) for k in _OTHERS}
    return _u.propagate_sweep(sc, uncertain, samples, seed, bandwidth=bandwidth, basis=basis,
                              others={**others, **kwargs})
