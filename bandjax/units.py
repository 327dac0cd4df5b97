"""Quantities with units, as a person writes them in a scenario file.

A value is either a bare number (taken in SI) or a string such as ``"12.5 GB/s"``. Each scenario
field has a dimension; only the units of that dimension are accepted, so ``"12.5 GHz"`` for a
bandwidth is an error that names the key, the value and the units allowed.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from sys import float_info

# dimension -> {unit: factor to SI}. The first unit of each is the one files are written in.
UNITS: dict[str, dict[str, float]] = {
    "byte_rate": {"GB/s": 1e9, "B/s": 1.0, "kB/s": 1e3, "MB/s": 1e6, "TB/s": 1e12,
                  "Gb/s": 1e9 / 8, "Mb/s": 1e6 / 8, "Tb/s": 1e12 / 8},
    "time": {"ms": 1e-3, "s": 1.0, "us": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0},
    "flop_rate": {"GFLOP/s": 1e9, "FLOP/s": 1.0, "TFLOP/s": 1e12},
    "sample_rate": {"GS/s": 1e9, "S/s": 1.0, "MS/s": 1e6},
    "power": {"W": 1.0, "mW": 1e-3, "kW": 1e3},
    "energy_per_flop": {"pJ/FLOP": 1e-12, "J/FLOP": 1.0, "fJ/FLOP": 1e-15, "nJ/FLOP": 1e-9},
    "energy_per_bit": {"pJ/bit": 1e-12, "J/bit": 1.0, "fJ/bit": 1e-15, "nJ/bit": 1e-9},
    "bytes": {"MB": 1e6, "B": 1.0, "kB": 1e3, "GB": 1e9, "KiB": 1024.0, "MiB": 1024.0 ** 2,
              "GiB": 1024.0 ** 3},
    "count": {"": 1.0},
    # a rate of events per hour (failures of one worker): the field's unit is in its name
    "per_hour": {"/h": 1.0, "/day": 1 / 24},
    # a throughput (no scenario field has it; the sites' questions answer in it)
    "token_rate": {"tokens/s": 1.0, "ktokens/s": 1e3, "Mtokens/s": 1e6, "Gtokens/s": 1e9},
}

# dimension -> its SI unit, as written in attrs["units"]
SI = {"byte_rate": "B/s", "time": "s", "flop_rate": "FLOP/s", "sample_rate": "S/s", "power": "W",
      "energy_per_flop": "J/FLOP", "energy_per_bit": "J/bit", "bytes": "B", "count": "1",
      "per_hour": "1/h", "token_rate": "tokens/s"}
# an SI unit as attrs["units"] and results.json write it -> its dimension
DIMENSIONS = {unit: dimension for dimension, unit in SI.items()}

MOST_FIGURES = 6  # significant figures, at most, of a computed number a reader is shown


class ScenarioError(ValueError):
    """A scenario value or key that is not allowed; the message names key, value and what is allowed."""


def _digits(value: int) -> str:
    """A long integer for a message: its first digits and how many there are."""
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text.lstrip('-'))} digits)"


def parse(key: str, value, dimension: str) -> float:
    """Return ``value`` in SI units, or raise :class:`ScenarioError` naming ``key``.

    ``value`` is a number (SI) or ``"<number> <unit>"`` with a unit of ``dimension``.
    """
    units = UNITS[dimension]
    if isinstance(value, bool):
        raise ScenarioError(f"{key} = {value!r}: expected a number, not a boolean")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer past the largest float (TOML's are unbounded)
            raise ScenarioError(f"{key} = {_digits(value)}: too large for a 64-bit float (at most "
                                f"{float_info.max:.4g} in SI units)") from None
    if not isinstance(value, str):
        raise ScenarioError(f"{key} = {value!r}: expected a number or a string like "
                            f"'1.5 {next(iter(units))}'")
    parts = value.strip().split(None, 1)
    try:
        number = Decimal(parts[0])
    except (InvalidOperation, IndexError):
        raise ScenarioError(f"{key} = {value!r}: expected '<number> <unit>'") from None
    if number.is_nan():
        raise ScenarioError(f"{key} = {value!r}: not a number; give a finite number (or inf where "
                            "a bound may be absent)")
    unit = parts[1].strip() if len(parts) > 1 else ""
    if unit not in units:
        allowed = ", ".join(repr(u) for u in units) if dimension != "count" else "a bare number"
        raise ScenarioError(f"{key} = {value!r}: unit {unit!r} is not a {dimension.replace('_', ' ')}"
                            f" unit; allowed: {allowed}")
    # Exact decimal arithmetic, so "0.0227 ms" is the same float as 0.0227e-3.
    try:
        si = float(number * Decimal(repr(units[unit])))
    except ArithmeticError:  # decimal's Overflow beyond its exponent range
        si = math.inf
    if number.is_finite() and not math.isfinite(si):
        raise ScenarioError(f"{key} = {value!r}: too large for a 64-bit float (at most "
                            f"{float_info.max:.4g} in SI units)")
    return si


def significant(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures as a person reads it: 0.0665, 3.12, 1,613 (whole
    numbers at and above ``10**(digits - 1)`` are written out, with thousands separators, rather
    than as 1.61e+03) below 1e15, with an exponent from there (1e+30, not 31 digits); inf, -inf
    and nan as those words."""
    x = float(x)
    if not math.isfinite(x):
        return repr(x)
    if 10 ** (digits - 1) <= abs(x) < 1e15:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def plain(x: float) -> str:
    """A number as a message gives one it was given, or a setting: at most :data:`MOST_FIGURES`
    significant figures (12.5, 0.001, 1e-09; 100,000 written out), by :func:`significant`."""
    return significant(x, MOST_FIGURES)


def describe(value: float, dimension: str, digits: int = 4) -> str:
    """A value in SI as a reader sees it: ``digits`` significant figures in the dimension's file
    unit (``"66.46 ms"``), or, where that would take an exponent, in the decimal unit of the
    dimension that keeps it at or above 1, smallest number first (``"66.46 us"`` rather than
    ``"6.646e-05 ms"``, ``"1,613 s"`` rather than ``"1,612,854 ms"``).
    For files use :func:`format_quantity`, which round-trips exactly."""
    value = float(value)
    if dimension == "count":
        return significant(value, digits)
    units = UNITS[dimension]
    unit, factor = next(iter(units.items()))
    text = significant(value / factor, digits)
    # the file's unit, unless the number would take an exponent or five whole digits there
    if ("e" in text or abs(value / factor) >= 1e4) and value != 0 and math.isfinite(value):
        decimal = [(u, f) for u, f in units.items() if math.log10(f).is_integer()]
        fitting = [(u, f) for u, f in decimal if f <= abs(value)]
        unit, factor = (max(fitting, key=lambda uf: uf[1]) if fitting
                        else min(decimal, key=lambda uf: uf[1]))
        text = significant(value / factor, digits)
    return f"{text} {unit}"


def describe_si(value: float, unit: str, digits: int = 4) -> str:
    """A value labelled with its SI unit (``attrs["units"]``, a results.json ``units`` key), as
    :func:`describe` shows its dimension (``"B/s"``: ``"12.5 GB/s"``); a unit of no dimension
    here (``"steps"``) stays beside the number."""
    if unit in DIMENSIONS:
        return describe(value, DIMENSIONS[unit], digits)
    return f"{significant(value, digits)} {unit}".rstrip()


# the units a duration is read in, largest first: hours and minutes too, unlike describe's
_DURATION = (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6))


def duration(seconds: float, digits: int = 4) -> str:
    """A duration in the largest of h, min, s, ms and us that keeps the number at or above 1, to
    ``digits`` significant figures (``"2.5 h"``, ``"40 s"``, ``"66.46 ms"``), in ns below 1 us;
    0, inf and nan in s."""
    seconds = float(seconds)
    if seconds == 0 or not math.isfinite(seconds):
        return f"{significant(seconds)} s"
    for unit, size in _DURATION:
        if abs(seconds) >= size:
            return f"{significant(seconds / size, digits)} {unit}"
    return f"{significant(seconds * 1e9, digits)} ns"


def shown(value: float, dimension: str) -> str | float | int:
    """A value for a message: as a file writes it (:func:`format_quantity`) where that takes at
    most :data:`MOST_FIGURES` significant figures, so a value as typed reads back as typed; a
    computed value with more, to :data:`MOST_FIGURES` (:func:`describe`)."""
    text = format_quantity(value, dimension)
    number = str(text).split(" ", 1)[0]
    if len(number.split("e")[0].replace("-", "").replace(".", "").lstrip("0")) <= MOST_FIGURES:
        return text
    return describe(value, dimension, MOST_FIGURES)


def format_quantity(value: float, dimension: str) -> str | float | int:
    """The inverse of :func:`parse` in the dimension's first unit (what files are written in)."""
    if dimension == "count":
        return int(value) if float(value).is_integer() else float(value)
    unit, factor = next(iter(UNITS[dimension].items()))
    number = value / factor
    text = repr(round(number, 12)) if math.isfinite(number) else repr(number)
    if math.isfinite(number) and parse("", f"{text} {unit}", dimension) != value:
        # Not exact in the file's unit (a calibrated value): SI, which is.
        unit = next(u for u, f in UNITS[dimension].items() if f == 1.0)
        text = repr(float(value))
    return f"{text} {unit}"
