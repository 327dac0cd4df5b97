"""Sweep arguments and coordinate labels shared by the closed-form grid and the event engine.

``bandjax.sweep`` and ``events.sweep`` take the same arguments and label their results the same
way, so the two line up with ``xr.align``; both read them from here. Plain Python and NumPy only.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _limits
from .scenario import PRESETS, Scenario, resolve_budget
from .units import _digits

COORD_ATTRS = {
    "bandwidth": {"units": "GB/s", "long_name": "WAN bandwidth per direction"},
    "enob": {"units": "bit", "long_name": "ENOB of the in-transit band"},
    "budget": {"units": "GFLOP/s", "long_name": "module compute budget (inf = free, not charged)"},
    "model": {"long_name": "model size preset"},
    "params": {"units": "1", "long_name": "parameters"},
    "workers_per_dc": {"units": "1", "long_name": "workers per DC (2 DCs)"},
    "H": {"units": "steps", "long_name": "sync every H steps (steps to target assumed unchanged)"},
    "basis": {"long_name": "E' steps basis (hypothesis: E's steps; exact: the exact band's)"},
    "variant": {"long_name": "variant"},
    "load": {"units": "1", "long_name": "other jobs' share of each WAN direction's capacity"},
    "seed": {"units": "1", "long_name": "seed of the background traffic"},
}


def is_dimension(values) -> bool:
    """Whether an argument's values make a dimension: a scalar is a scalar coordinate."""
    return not (isinstance(values, (str, bytes)) or np.ndim(values) == 0)


def as_list(name, values) -> tuple[list, bool]:
    """(values as a list, whether it is a dimension): a scalar is a scalar coordinate."""
    if not is_dimension(values):
        if isinstance(values, np.ndarray):  # a 0-d array is its one value
            values = values.item()
        return [values], False
    _check_count(name, len(values) if isinstance(values, (list, tuple)) else np.size(values))
    values = list(np.asarray(values).tolist()) if not isinstance(values, (list, tuple)) else list(values)
    if not values:
        raise ValueError(f"{name} = []: give at least one value")
    nested = next((x for x in values if isinstance(x, (list, tuple, dict, set, np.ndarray))), None)
    if nested is not None:  # a table where a list was meant: each value is one coordinate
        raise ValueError(f"{name} = {_short(values)}: {_short(nested)} is not one value; give one "
                         "value or a flat list of them")
    check_distinct(name, values)
    return values, True


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


def as_values(name, values) -> tuple[list | np.ndarray, bool]:
    """:func:`as_list`, except that a 1-D NumPy array of floats stays an array (a float64 copy):
    an axis of thousands of values then costs no Python work per value."""
    if not (isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind == "f"):
        return as_list(name, values)
    _check_count(name, values.size)
    if not values.size:
        raise ValueError(f"{name} = []: give at least one value")
    check_distinct(name, values)
    return np.array(values, dtype=float), True


def check_distinct(name, values) -> None:
    """Each value of a dimension once: a repeat would give the same grid point twice (a row
    printed twice, a coordinate xarray cannot select by). A ``ValueError`` names the dimension,
    the values as given and the repeat. An array in order (a linspace, a geomspace) is passed
    by one comparison along it; values that cannot be compared are left to their own checks."""
    if isinstance(values, np.ndarray):
        if values.size < 2 or np.all(values[1:] > values[:-1]) or np.all(values[1:] < values[:-1]):
            return
        kept, counts = np.unique(values[~np.isnan(values)], return_counts=True)
        twice = kept[counts > 1].tolist()
    else:
        seen, twice = set(), []
        for x in values:
            try:
                if x in seen and x not in twice:
                    twice.append(x)
                seen.add(x)
            except TypeError:  # unhashable (a list among the values): its own check names it
                return
    if twice:
        shown = repr(values.tolist() if isinstance(values, np.ndarray) else values)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise ValueError(f"{name} = {shown}: {', '.join(map(repr, twice))} given more than once; "
                         "give each value once")


def _check_count(name, n) -> None:
    most = _limits.MAX_AXIS_VALUES
    if n > most:  # before any copy of them is made
        raise ValueError(f"{name}: {n:,} values; allowed: at most {most:,} along one "
                         "axis (bandjax.store.write takes larger sweeps chunk by chunk along "
                         "several axes)")


def positive(name, values, unit) -> list[float] | np.ndarray:
    """``values`` as floats, each finite and > 0, or an error naming ``name``, the value and ``unit``.
    A float array (:func:`as_values`) comes back as it is."""
    if isinstance(values, np.ndarray):
        if np.all(values > 0) and np.all(np.isfinite(values)):
            return values
        values = values.tolist()  # the error names the value as Python writes it
    if set(map(type, values)) <= {float, int}:  # plain numbers (bool is a type of its own): at once
        try:
            arr = np.asarray(values, dtype=float)
        except OverflowError:  # an integer past the largest float: named below
            arr = np.array([math.nan])
        if np.all(arr > 0) and np.all(np.isfinite(arr)):
            return arr.tolist()
    for x in values:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.number)) or not _finite_positive(x):
            shown = _digits(x) if isinstance(x, int) and not isinstance(x, bool) else repr(x)
            raise ValueError(f"{name} = {shown}: must be a finite number > 0 {unit}".rstrip())
    return [float(x) for x in values]


def _finite_positive(x) -> bool:
    try:
        x = float(x)
    except OverflowError:
        return False
    return x > 0 and math.isfinite(x)


def budgets_FLOPs(sc: Scenario, values) -> list[float] | np.ndarray:
    """Budgets given as 'free', 'low', 'high' or GFLOP/s, in FLOP/s (inf = free). A float array
    (:func:`as_values`) gives an array."""
    if isinstance(values, np.ndarray):
        if np.all(values > 0):  # inf allowed (free), NaN not
            with np.errstate(over="ignore"):  # past 1.8e299 GFLOP/s: inf, 'free'
                return values * 1e9
        values = values.tolist()  # the error names the value as Python writes it
    if set(map(type, values)) <= {float, int}:  # plain numbers (bool is a type of its own): at once
        try:
            arr = np.asarray(values, dtype=float)
        except OverflowError:  # an integer past the largest float: budget_value names it
            arr = np.array([math.nan])
        if np.all(arr > 0):  # inf allowed (free), NaN not
            with np.errstate(over="ignore"):  # past 1.8e299 GFLOP/s: inf, 'free'
                return (arr * 1e9).tolist()
    return [resolve_budget(sc, b) for b in values]


def models(values) -> tuple[list[str], list[float]]:
    """(labels, parameter counts) for presets (by name) or parameter counts."""
    names, params = [], []
    for m in values:
        if isinstance(m, str):
            if m not in PRESETS:
                raise ValueError(f"model = {m!r} is not a preset; allowed: {', '.join(PRESETS)}, "
                                 "or a parameter count > 0")
            names.append(m)
            params.append(PRESETS[m])
        else:
            (p,) = positive("model", [m], "parameters")
            names.append(f"P={p:.4g}")
            params.append(p)
    return names, params


BUDGET_NAMES = ("free", "low", "high")  # a budget's names, first match wins
GFLOPS_SUFFIX = " GFLOP/s"


def budget_labels(sc: Scenario, GFLOPs) -> np.ndarray:
    """The scenario's name of each budget (``"free"``, ``"low"``, ``"high"``) or ``"<g> GFLOP/s"``.

    A budget takes a name when it equals the named one to 1e-12 relative (``free`` is inf).
    Vectorised: the cost is a constant plus array work, whatever the number of budgets; the
    labels of the last few axes of up to :data:`LABELS_KEPT_UP_TO` budgets are kept, so sweeping
    the same budget axis again (another scenario, a chunk of a store) only copies them. Returns a
    string array of ``GFLOPs``'s shape, as wide as its longest label.
    """
    x = np.asarray(GFLOPs, dtype=float)
    named = tuple(resolve_budget(sc, name) / 1e9 for name in BUDGET_NAMES)
    if x.size > LABELS_KEPT_UP_TO:
        return _budget_labels(x, named)
    return _kept_budget_labels(x.tobytes(), x.shape, named).copy()


LABELS_KEPT_UP_TO = 2**14  # budgets: larger axes are labelled anew each time


@functools.lru_cache(maxsize=8)
def _kept_budget_labels(data: bytes, shape: tuple, named: tuple) -> np.ndarray:
    return _budget_labels(np.frombuffer(data).reshape(shape), named)


def _budget_labels(x: np.ndarray, named: tuple) -> np.ndarray:
    """:func:`budget_labels` of ``x`` (GFLOP/s), with the named budgets' values ``named`` in
    :data:`BUDGET_NAMES` order."""
    flat = x.reshape(-1)
    out = format_g(flat, GFLOPS_SUFFIX)
    for name, value in reversed(list(zip(BUDGET_NAMES, named))):  # the first name that matches is kept
        hit = (flat == value) | np.isclose(flat, value, rtol=1e-12, atol=0.0)
        if hit.any():
            out = np.where(hit, name, out)
    width = int(np.strings.str_len(out).max(initial=1))
    return out.astype(f"<U{width}").reshape(x.shape)


# ------------------------------------------------------------------ "%g" with array operations

_SIG = 6  # significant digits of "%g"
_EXP = (-17, 27)  # exponents formatted with arrays: 10**(e - 5) and 10**(5 - e) are exact floats
_POW10 = 10.0 ** np.arange(23)
_TIE = 1e-7  # scaled values this close to a rounding tie are left to Python's exact formatting
_DIGITS3 = np.array([[ord(c) for c in f"{i:03d}"] for i in range(1000)], np.uint32)
_ZEROS3 = np.array([len(f"{i:03d}") - len(f"{i:03d}".rstrip("0")) for i in range(1000)])


@functools.cache
def _layouts(suffix: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Where ``%g`` puts the characters of a value of exponent e with nz significant digits.

    Per layout (e, nz): its fixed characters (``.``, ``0`` of ``0.00ddd``, ``e+XX``, then
    ``suffix``) in a row of UCS-4 codes with a spare last column, and the column of each of the
    six digits (digits beyond nz go to the spare column), as the first three and the last three.
    Read from Python's own formatting of 1.23456 (distinct nonzero digits) at each e and nz.
    """
    lo, hi = _EXP
    texts = {(e, nz): f"{float('1.' + '23456'[:nz - 1] + f'e{e}'):g}"
             for e in range(lo, hi + 1) for nz in range(1, _SIG + 1)}
    width = max(map(len, texts.values())) + len(suffix) + 1  # + the spare column
    chars = np.zeros((len(texts), width), np.uint32)
    where = np.full((len(texts), _SIG), width - 1)  # split in two groups of three below
    for i, text in enumerate(texts.values()):
        mant, sep, exponent = text.partition("e")
        for col, c in enumerate(mant):
            if c in "123456":
                where[i, int(c) - 1] = col
            else:
                chars[i, col] = ord(c)
        tail = sep + exponent + suffix
        chars[i, len(mant):len(mant) + len(tail)] = [ord(c) for c in tail]
    return chars, (np.ascontiguousarray(where[:, :3]), np.ascontiguousarray(where[:, 3:]))


def format_g(x, suffix: str = "") -> np.ndarray:
    """``[f"{v:g}{suffix}" for v in x]`` as a string array, built with array operations.

    Each value is scaled to six significant digits by one exact power of ten (one rounding, at
    most 6e-11 off at that scale) and rounded. Values whose scaled form lies within 1e-7 of a
    rounding tie, of exponent outside -17..27, zeros, negatives, inf and NaN are formatted by
    Python instead, so every label is Python's own. The characters are laid out as
    :func:`_layouts` says for the value's exponent and count of significant digits.
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    n = len(x)
    lo, hi = _EXP
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log10(x))  # NaN or +-inf where x is not finite and > 0
    ok = (e >= lo) & (e <= hi)
    e = np.where(ok, e, 0.0).astype(np.int64)
    scaled = _scaled(x, e)
    for step, off in ((-1, scaled < 10.0 ** (_SIG - 1)), (1, scaled >= 10.0 ** _SIG)):
        if np.any(off & ok):  # log10 one off near a power of ten: rare, fixed where it happens
            e = np.where(off, e + step, e)
            ok &= (e >= lo) & (e <= hi)
            e = np.where(ok, e, 0)
            scaled = _scaled(x, e)
    with np.errstate(invalid="ignore"):
        ok &= np.abs(scaled - np.floor(scaled) - 0.5) >= _TIE
    r = np.rint(np.where(ok, scaled, 10.0 ** (_SIG - 1))).astype(np.int64)
    carry = r == 10 ** _SIG  # 999999.5 and up: one more digit of exponent
    if carry.any():
        r = np.where(carry, 10 ** (_SIG - 1), r)
        e = np.where(carry, e + 1, e)
        ok &= e <= hi
        e = np.where(ok, e, 0)

    high, low = np.divmod(r, 1000)  # the six digits as two groups of three
    # significant digits once trailing zeros are dropped
    nz = np.where(low == 0, 3 - np.take(_ZEROS3, high), _SIG - np.take(_ZEROS3, low))
    chars, where = _layouts(suffix)
    width = chars.shape[1]
    layout = (e - lo) * _SIG + nz - 1
    out = np.take(chars, layout, axis=0)  # (n, width): the fixed characters, a copy
    flat = out.reshape(-1)
    row = (np.arange(n) * width)[:, None]
    for group, cols in zip((high, low), where):  # each group of three digits to its columns
        at = (np.take(cols, layout, axis=0) + row).reshape(-1)
        flat[at] = np.take(_DIGITS3, group, axis=0).reshape(-1)
    out[:, -1] = 0  # the spare column: trailing NULs end a numpy string
    out = out.view(f"<U{width}").reshape(n)
    if not ok.all():
        slow = [f"{s:g}{suffix}" for s in x[~ok].tolist()]
        out = out.astype(f"<U{max(width, *map(len, slow))}")
        out[~ok] = slow
    return out


def _scaled(v, e):
    """``v / 10**(e - 5)`` with one rounding: by exact powers of ten, one of them 1."""
    k = e - (_SIG - 1)
    with np.errstate(invalid="ignore", over="ignore"):
        return v * np.take(_POW10, np.clip(-k, 0, 22)) / np.take(_POW10, np.clip(k, 0, 22))
