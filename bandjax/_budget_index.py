"""The ``budget`` axis of a sweep, selectable by the scenario's names as well as by GFLOP/s.

No jax here: :mod:`bandjax.store` gives a dataset read back from disk the same axis.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from xarray.indexes import PandasIndex


def budget_indexed(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its ``budget`` axis selectable by name (:class:`BudgetIndex`); the names are
    read from its ``budget_label`` coordinate, so a dataset read back from a store gets them too."""
    if "budget" not in ds.dims or "budget_label" not in ds.coords:
        return ds
    names = budget_names(ds.budget_label.values, ds.budget.values)
    return ds.drop_indexes("budget").set_xindex("budget", BudgetIndex, names=names)


def budget_names(labels, GFLOPs, named=None) -> dict:
    """The names a :class:`BudgetIndex` selects by: ``free`` (inf) and each named label of the
    axis (``labels``, as :func:`bandjax.labels.budget_labels` gives them) with its GFLOP/s.
    ``named``: which labels are names, if known (else those that do not end in GFLOP/s)."""
    names = {"free": math.inf}
    labels = np.asarray(labels)
    if named is None:
        text = labels if labels.dtype.kind == "U" else labels.astype(str)  # a store's: converted
        named = ~np.strings.endswith(text, "GFLOP/s")
    for label, value in zip(labels[named].tolist(), np.asarray(GFLOPs)[named].tolist()):
        names[label] = float(value)
    return names


class BudgetIndex(PandasIndex):
    """The ``budget`` axis of a sweep: values in GFLOP/s (inf for [free]), selectable by number or
    by the scenario's name, so ``ds.sel(budget="low")``, ``ds.sel(budget=["free", 25.0])`` and a
    label of the ``budget_label`` coordinate (``"42 GFLOP/s"``) all work.

    Written by hand because xarray selects a float axis by floats only; everything but ``sel``
    is :class:`xarray.indexes.PandasIndex`'s (a store reads the axis back as a plain float index).
    """

    __slots__ = ("names",)

    def __init__(self, array, dim, coord_dtype=None, *, fastpath=False, names=None):
        super().__init__(array, dim, coord_dtype, fastpath=fastpath)
        self.names = dict(names or {})

    @classmethod
    def from_variables(cls, variables, *, options):
        idx = super().from_variables(variables, options={})
        idx.names = dict(options.get("names") or {})
        return idx

    @classmethod
    def concat(cls, indexes, dim, positions=None):
        idx = super().concat(indexes, dim, positions)
        idx.names = {k: v for i in indexes for k, v in i.names.items()}
        return idx

    def _replace(self, index, dim=None, coord_dtype=None):
        idx = super()._replace(index, dim, coord_dtype)
        idx.names = self.names
        return idx

    def join(self, other, how="inner"):
        idx = super().join(other, how)
        idx.names = {**getattr(other, "names", {}), **self.names}
        return idx

    def _number(self, label):
        if not isinstance(label, str):
            return label
        text = label.strip()
        if text in self.names:
            return self.names[text]
        number = text.removesuffix("GFLOP/s").strip()
        try:
            return float(number)
        except ValueError:
            have = ", ".join(self.names) or "none"
            raise KeyError(f"budget {label!r}: not a budget name of this sweep ({have}) nor a "
                           "number in GFLOP/s such as 25 or '25 GFLOP/s'") from None

    def sel(self, labels, method=None, tolerance=None):
        (name, label), = labels.items()
        if isinstance(label, str):
            label = self._number(label)
        elif isinstance(label, (list, tuple)) or (isinstance(label, np.ndarray)
                                                  and label.dtype.kind in "OUS"):
            label = np.asarray([self._number(x) for x in np.ravel(label)], dtype=float)
        return super().sel({name: label}, method, tolerance)
