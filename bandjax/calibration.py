"""Fit scenario parameters to measured step times: weighted nonlinear least squares on the closed forms.

A measurement is one run: a variant, the scenario fields that differ from the scenario (bandwidth,
budget, model, workers per DC, any numeric field by name, with units) and its step time, once or
repeated. :func:`calibrate` fits the named parameters (numeric scenario fields, ``fixed_s.<id>``
for a variant's fixed time d) so that :func:`bandjax.step_s` reproduces the rows:

    minimise  sum_i ((step_i(theta) - y_i) / sigma_i)^2

with y_i the mean of row i's repeats and sigma_i its standard error: y_i s_w / sqrt(n_i), with s_w
one run's relative spread pooled over every row's repeats (sum of n_i - 1 degrees of freedom); or,
without repeats, sigma_i = y_i (relative residuals, one common scale estimated from the fit). The
search is ``optimistix.least_squares`` with ``LevenbergMarquardt`` in transformed coordinates that
keep every parameter in its domain: log x for rates and times (> 0), x = scale x softplus(u) for a
fixed time or a latency (>= 0, so a d that fits to 0 approaches it smoothly), a logistic for a
fraction in (0, 1). All rows are evaluated at once: each row's scenario fields are arrays over
the rows, the closed forms broadcast over them, and a one-hot picks each row's variant.

Uncertainty comes from the Jacobian J of the weighted residuals in the parameters' own units at
the optimum: covariance = s^2 (J^T J)^-1 (:func:`statistics`), with s^2 the reduced chi-square
without repeats (the scale is estimated; Student's t on the residual degrees of freedom) and 1
with repeats (the scale is measured; t on the pooled degrees of freedom), unless the lack-of-fit
test (chi-square / dof against F(dof, pooled dof)) fails at :data:`MISFIT_LEVEL`: then s^2 is the
reduced chi-square, t is on the lack-of-fit degrees of freedom and a one-line
:class:`CalibrationWarning` names the worst rows (a second line where Bartlett's test says the
rows' repeats do not share one spread). Intervals keep each parameter in its range
(:func:`intervals`): a positive one on log x, one that may be 0 cut at 0, a fraction on its logit.
Parameters are not identifiable when J^T J, scaled to unit diagonal, is singular to working
precision; the message names the parameters that trade off and the first extra measurement that
would separate them. docs/calibration.md says the same for users.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from . import distributions as _dist
from .parameters import FIXED_PREFIX, scenario_parameter, with_parameters
from .scenario import (FIELDS, LIMITS, PRESETS, Scenario, allowed_text, check_dcs_of_links,
                       check_field, field_table, reference, resolve_budget, save)
from .step import step_s
from .units import UNITS, ScenarioError, parse

MAX_FILE_BYTES = 10_000_000  # a measurement table is rows of runs, not a trace
MAX_ROWS = 100_000
IDENTIFIABLE_MIN_EIGENVALUE = 1e-10  # of J^T J scaled to unit diagonal (condition number 1e10)
LEVEL = 0.95
MISFIT_LEVEL = 0.01  # the lack-of-fit test's level: below it the rows do not fit within their repeats' noise
WORST_ROWS = 3  # rows the misfit warning names
POLISH_STEPS = 4
STEP_UNITS = {"step": None, "step_ms": 1e-3, "step_s": 1.0, "step_us": 1e-6}
ROW_EXTRAS = ("variant", "note", "comment", "run")
# Units a person reads each dimension in (the scenario file's units, the first of each).
DISPLAY = {dim: next(iter(units.items())) for dim, units in UNITS.items()}


class CalibrationError(ScenarioError):
    """A measurement table or a fit request that is not allowed; the message says what is."""


class CalibrationWarning(UserWarning):
    """The rows do not fit within the noise their repeats show (the lack-of-fit test)."""


# --------------------------------------------------------------------------- parameters by name


def numeric_fields(sc: Scenario) -> tuple[str, ...]:
    """The scenario's numeric fields (:data:`bandjax.scenario.FIELDS`), in declaration order."""
    return tuple(FIELDS)


def dimension(name: str) -> str:
    """The dimension of a canonical parameter (a key of :data:`bandjax.units.UNITS`)."""
    return _dist.dimension(name, field_table())


def _file_keys() -> dict[str, str]:
    return {key: name for name, (_, key, _, _) in FIELDS.items()}


def resolve_parameter(sc: Scenario, name: str) -> str:
    """A fittable parameter's canonical name: a numeric field (by name or scenario-file key),
    ``fixed_s.<variant>`` (also ``d.<variant>``, by id or label of the scenario's registry) or
    ``gpu``: the GPU rate ``gpu_peak_FLOPs``, fitted at the scenario's utilisation (the closed
    forms see only their product, so one of the two is fitted)."""
    try:
        return _dist.resolve(name, sc.variants, fields=field_table(), steps=False)
    except ScenarioError as e:
        raise CalibrationError(f"fit {e}" if str(e).startswith(repr(name)) else f"fit {name!r}: {e}") from None


get_parameter = scenario_parameter


def _variant_id(sc: Scenario, name: str, where: str) -> str:
    try:
        return _dist._variant_id(name, sc.variants, where)
    except ScenarioError as e:
        raise CalibrationError(str(e)) from None


# --------------------------------------------------------------------------- transforms


def _kind(name: str) -> str:
    """How a parameter is kept in its domain during the search."""
    if name.startswith(FIXED_PREFIX) or "latency" in name:
        return "softplus"  # >= 0, may fit to 0
    if "overlap" in name or name.endswith("fraction") or name == "utilisation":
        return "logistic"  # in (0, 1)
    return "log"  # > 0


def _to_natural(kind: str, scale: float, u):
    if kind == "softplus":
        return scale * jax.nn.softplus(u)
    if kind == "logistic":
        return jax.nn.sigmoid(u)
    return jnp.exp(u)


def _to_search(kind: str, scale: float, x: float) -> float:
    if kind == "softplus":
        z = max(x / scale, 1e-3)  # a start at exactly 0 sits at u = -inf
        return float(z + math.log(-math.expm1(-z)))
    if kind == "logistic":
        p = min(max(x, 1e-6), 1 - 1e-6)
        return math.log(p / (1 - p))
    if not x > 0:
        raise CalibrationError(f"fit {x!r}: the start of a positive parameter must be > 0")
    return math.log(x)


# --------------------------------------------------------------------------- measurement tables


def read_rows(measurements) -> list[dict]:
    """Rows as dicts from a CSV or TOML path, a list of dicts, a dict of columns or a DataFrame."""
    if isinstance(measurements, (str, os.PathLike)):
        return _read_file(Path(measurements))
    if hasattr(measurements, "to_dict") and not isinstance(measurements, dict):
        measurements = measurements.to_dict(orient="records")
    if isinstance(measurements, dict):
        cols = {k: list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
                for k, v in measurements.items()}
        lengths = {len(v) for v in cols.values()}
        if len(lengths) > 1:
            raise CalibrationError(f"measurements: columns have different lengths {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        measurements = [{k: v[i] for k, v in cols.items()} for i in range(n)]
    rows = list(measurements)
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise CalibrationError(f"measurements row {i + 1} = {r!r}: expected a mapping of column -> value")
    return rows


def _read_file(path: Path) -> list[dict]:
    from ._io import read_bounded_text

    # one bounded reader for every file a user names: a device, a FIFO, a folder or a file over
    # MAX_FILE_BYTES is refused before it is read, and a decode error names the file
    try:
        text = read_bounded_text(path, "measurements file", MAX_FILE_BYTES)
    except FileNotFoundError:
        raise CalibrationError(f"measurements file {str(path)!r} does not exist") from None
    except (OSError, ValueError) as e:
        raise CalibrationError(str(e)) from None
    if path.suffix.lower() == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise CalibrationError(f"measurements file {str(path)!r} is not valid TOML: {e}") from None
        except RecursionError:
            raise CalibrationError(f"measurements file {str(path)!r}: nested too deeply to read") from None
        except ValueError as e:  # an integer of more digits than Python converts (4,300)
            raise CalibrationError(f"measurements file {str(path)!r}: {e}") from None
        tables = [k for k, v in data.items() if isinstance(v, list)]
        if len(tables) != 1:
            raise CalibrationError(f"measurements file {str(path)!r}: expected one array of tables "
                                   f"([[run]], one per run); found {tables or 'none'}")
        return read_rows(data[tables[0]])
    if path.suffix.lower() != ".csv":
        raise CalibrationError(f"measurements file {str(path)!r}: expected a .csv or .toml file")
    # newline="": a carriage return inside a field is the csv module's to judge, as in a file
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        records = list(reader)
    except csv.Error as e:
        raise CalibrationError(f"measurements file {str(path)!r}, line {reader.line_num}: not "
                               f"valid CSV ({e})") from None
    names = [n.strip() for n in reader.fieldnames or ()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CalibrationError(f"measurements file {str(path)!r}, line 1: column {twice[0]!r} is "
                               "named more than once; give each column once")
    for line, r in enumerate(records, start=2):
        if r.get(None):  # more cells than the header names
            raise CalibrationError(f"measurements file {str(path)!r}, row {line - 1}: "
                                   f"{len(names) + len(r[None])} cells, the header names "
                                   f"{len(names)}; extra cells {r[None]!r}")
        row = {}
        for k, v in r.items():
            if k is None or v is None or not str(v).strip():
                continue
            v = v.strip()
            if ";" in v:  # repeats of one run in one cell
                repeats = [x.strip() for x in v.split(";")]
                if not all(repeats):
                    raise CalibrationError(f"measurements file {str(path)!r}, row {line - 1}: "
                                           f"{k.strip()} = {v!r}: an empty repeat between ';'; give "
                                           "each repeat as a number (a ';' only between two)")
                v = repeats
            else:
                try:
                    v = float(v)
                except ValueError:
                    pass
            row[k.strip()] = v
        rows.append(row)
    return rows


def _float(where: str, value, expected: str = "a number") -> float:
    """``float(value)``; a value that is not a number (a list from a TOML array, text), or an
    integer past the largest float (TOML's and Python's are unbounded), is a
    :class:`CalibrationError` naming ``where``, the value and what was ``expected``."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CalibrationError(f"{where} = {value!r}: expected {expected}") from None
    except OverflowError:
        text = str(value)
        shown = text if len(text) <= 40 else f"{text[:20]}...({len(text.lstrip('-'))} digits)"
        raise CalibrationError(f"{where} = {shown}: too large for a 64-bit float") from None


def _step_values(i: int, row: dict) -> list[float]:
    """Row i's measured step times in s (one per repeat)."""
    given = [k for k in STEP_UNITS if k in row]
    if len(given) != 1:
        raise CalibrationError(f"row {i}: give the step time in exactly one column of "
                               f"{', '.join(STEP_UNITS)} (found {given or 'none'})")
    key = given[0]
    raw = row[key]
    if isinstance(raw, np.ndarray) and raw.ndim == 0:  # a 0-d array is one value
        raw = raw.item()
    values = list(raw) if isinstance(raw, (list, tuple, np.ndarray)) else [raw]
    if not values:
        raise CalibrationError(f"row {i}: {key} = []: give at least one step time")
    out = []
    for v in values:
        where = f"row {i}: {key}"
        if STEP_UNITS[key] is None:
            bare = isinstance(v, str) and len(v.split()) == 1
            if bare or isinstance(v, (int, float)) and not isinstance(v, bool):
                raise CalibrationError(f"{where} = {v!r}: missing unit; write e.g. '{v} ms', or use "
                                       "a step_ms column")
            s = parse(where, v, "time")
        else:
            if isinstance(v, (bool, np.bool_)):
                raise CalibrationError(f"{where} = {v!r}: expected a number, not a boolean")
            s = _float(where, v, "a number (the unit is in the column name)") * STEP_UNITS[key]
        if not (math.isfinite(s) and s > 0):
            raise CalibrationError(f"{where} = {v!r}: a step time must be a finite number > 0")
        out.append(s)
    return out


def _row_value(sc: Scenario, i: int, key: str, value) -> dict[str, float]:
    """The scenario fields a row's column sets, in SI units."""
    where = f"row {i}: {key}"
    fields = numeric_fields(sc)
    if key == "bandwidth":
        gbps = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        v = _float(where, gbps) * 1e9 if gbps is not None else parse(where, value, "byte_rate")
        _positive(where, v, value)
        return {"wan_Bps": v}
    if key == "budget":
        if isinstance(value, str) and value in ("free", "low", "high"):
            return {"budget_FLOPs": resolve_budget(sc, value)}
        v = _float(where, value) * 1e9 if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else parse(where, value, "flop_rate")
        _positive(where, v, value)
        return {"budget_FLOPs": v}
    if key == "model":
        if isinstance(value, str) and value in PRESETS:
            return {"params": PRESETS[value]}
        if isinstance(value, str):
            raise CalibrationError(f"{where} = {value!r}: not a preset; allowed: "
                                   f"{', '.join(PRESETS)}, or a parameter count > 0")
        _positive(where, _float(where, value), value)
        return {"params": float(value)}
    if key == "topology":
        from .variants import TOPOLOGIES

        if isinstance(value, str) and value in TOPOLOGIES:
            return {"topology": float(TOPOLOGIES.index(value))}
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
            return {"topology": float(value)}
        raise CalibrationError(f"{where} = {value!r}: not a topology; allowed: "
                               f"{', '.join(TOPOLOGIES)} (or its index 0, 1)")
    name = key if key in fields else _file_keys().get(key)
    if name not in fields:
        raise CalibrationError(
            f"row {i}: column {key!r} is not known; allowed: variant, "
            f"{', '.join(STEP_UNITS)}, bandwidth (GB/s), budget (GFLOP/s or free/low/high), model, "
            f"or a numeric scenario field ({', '.join(fields)})")
    v = parse(where, value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value,
              dimension(name))
    if not (math.isfinite(v) and v >= 0):
        raise CalibrationError(f"{where} = {value!r}: must be a finite number >= 0")
    if name in FIELDS:  # the same range as the scenario file's (utilisation <= 1, whole dcs, ...)
        try:
            check_field(name, v)
        except ScenarioError:
            raise CalibrationError(f"{where} = {value!r}: must be {allowed_text(name)}") from None
    if name == "dcs":  # K of a scenario with per-link values is its table's, as replace(dcs=)
        try:
            check_dcs_of_links(v, sc.links)
        except ScenarioError as e:
            raise CalibrationError(f"row {i}: {e}") from None
    return {name: v}


def _positive(where, v, value):
    if not (math.isfinite(v) and v > 0):
        raise CalibrationError(f"{where} = {value!r}: must be a finite number > 0")


@dataclass(frozen=True)
class Rows:
    """Measurement rows ready for the closed forms (SI units).

    ``variant``: (rows,) index into the scenario's variants (``Scenario.ids``); ``fields``: field -> (rows,)
    values (the scenario's own where a row does not set it); ``y``: (rows,) mean step, s;
    ``sigma``: (rows,) its standard error, ``y x pure_rel_sd / sqrt(repeats)`` (repeats) or the
    mean itself (no repeats); ``repeats``: (rows,) how many runs each row averages;
    ``pure_rel_sd``: the pooled relative spread of one run about its row's mean, on ``pure_dof``
    = sum(repeats - 1) degrees of freedom (NaN and 0 without repeats); ``spread_test``: Bartlett's
    test that the rows share that spread (p-value, the rows with the smallest and largest spread).
    """

    variant: np.ndarray
    fields: dict
    y: np.ndarray
    sigma: np.ndarray
    repeats: np.ndarray
    scale_known: bool
    pure_rel_sd: float = math.nan
    pure_dof: int = 0
    spread_test: tuple = (math.nan, 0, math.nan, 0, math.nan)

    def __len__(self) -> int:
        return len(self.y)


def prepare_rows(measurements, sc: Scenario) -> Rows:
    """Parse and check a measurement table against ``sc``; errors name the row, column and value."""
    rows = read_rows(measurements)
    if not rows:
        raise CalibrationError("measurements: the table is empty; give one row per run")
    if len(rows) > MAX_ROWS:
        raise CalibrationError(f"measurements: {len(rows)} rows; allowed: at most {MAX_ROWS}")
    variant, means, rel_ss, repeats, sets = [], [], [], [], []
    for i, row in enumerate(rows, start=1):
        if "variant" not in row:
            raise CalibrationError(f"row {i}: missing the variant column (an id or label: "
                                   f"{', '.join(sc.ids)})")
        variant.append(sc.ids.index(_variant_id(sc, str(row["variant"]), f"row {i}: variant")))
        steps = np.asarray(_step_values(i, row))
        means.append(float(np.mean(steps)))
        repeats.append(len(steps))
        rel_ss.append(float(np.sum((steps / np.mean(steps) - 1.0) ** 2)))
        changes = {}
        for key, value in row.items():
            if key in ROW_EXTRAS or key in STEP_UNITS:
                continue
            changes.update(_row_value(sc, i, key, value))
        sets.append(changes)
    repeats = np.asarray(repeats)
    # Repeats measure the noise: one relative spread pooled over every row's repeats (sum of
    # (n_i - 1) degrees of freedom), not each row's own few, which are too noisy to weight by.
    pure_dof = int(np.sum(repeats - 1))
    scale_known = pure_dof > 0
    pure_rel_sd = math.sqrt(sum(rel_ss) / pure_dof) if scale_known else math.nan
    if scale_known and not pure_rel_sd > 0:
        raise CalibrationError("measurements: every row's repeats are equal, so the spread of a run "
                               "is 0 and the rows would have infinite weight; give the raw repeats")
    names = sorted({k for s in sets for k in s})
    fields = {k: np.array([s.get(k, float(get_parameter(sc, k))) for s in sets]) for k in names}
    means = np.asarray(means)
    sigma = means * pure_rel_sd / np.sqrt(repeats) if scale_known else means.copy()
    return Rows(np.asarray(variant), fields, means, sigma, repeats, scale_known,
                pure_rel_sd, pure_dof, _spread_test(np.asarray(rel_ss), repeats))


def _spread_test(rel_ss: np.ndarray, repeats: np.ndarray) -> tuple:
    """(Bartlett's p-value that every row's repeats share one relative spread, the row with the
    smallest spread (1-based) and that spread, the row with the largest and its spread): NaN and
    0s with fewer than two rows of repeats, or a row whose repeats are all equal."""
    none = (math.nan, 0, math.nan, 0, math.nan)
    k = repeats > 1
    if k.sum() < 2:
        return none
    dof = repeats[k] - 1
    var = rel_ss[k] / dof
    if not np.all(var > 0):
        return none
    from scipy.stats import chi2

    N, m = dof.sum(), len(dof)
    pooled = rel_ss[k].sum() / N
    stat = (N * math.log(pooled) - np.sum(dof * np.log(var))) / (
        1 + (np.sum(1 / dof) - 1 / N) / (3 * (m - 1)))
    rows, lo, hi = np.flatnonzero(k), int(np.argmin(var)), int(np.argmax(var))
    return (float(chi2.sf(stat, m - 1)), int(rows[lo]) + 1, math.sqrt(var[lo]), int(rows[hi]) + 1,
            math.sqrt(var[hi]))


# --------------------------------------------------------------------------- the model of a row


def predict_s(sc: Scenario, variant, fields: dict):
    """Each row's step time, s: the scenario with the rows' fields (arrays over the rows) set,
    every variant's closed form broadcast over them, each row's variant picked by a one-hot.

    A row that sets the model size scales the GPU compute with it (``Scenario.at_model_size``)."""
    fields = dict(fields)
    if "params" in fields:
        sc = sc.at_model_size(fields.pop("params"))
    s = step_s(with_parameters(sc, fields))  # (rows, variant)
    onehot = jnp.asarray(variant)[:, None] == jnp.arange(s.shape[-1])
    return jnp.sum(jnp.where(onehot, s, 0.0), axis=-1)


# --------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class Problem:
    """One least-squares problem: which parameters, in which coordinates, against which rows.

    :meth:`solve` is a pure function of the data (y, sigma) and the start, so it can be jitted and
    ``vmap``ped over many data sets of the same rows."""

    scenario: Scenario
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    scales: tuple[float, ...]
    rows: Rows

    def natural(self, u):
        return jnp.stack([_to_natural(k, s, u[i]) for i, (k, s) in enumerate(zip(self.kinds, self.scales))])

    def search(self, x) -> np.ndarray:
        return np.array([_to_search(k, s, float(v)) for k, s, v in zip(self.kinds, self.scales, x)])

    def model(self, x):
        """Step time of every row at parameters ``x`` (natural units, SI), s."""
        sc = with_parameters(self.scenario, dict(zip(self.names, x)))
        fields = {k: jnp.asarray(v) for k, v in self.rows.fields.items()}
        return predict_s(sc, self.rows.variant, fields)

    def weighted(self, x, y, sigma):
        return (self.model(x) - y) / sigma

    def solve(self, u0, y, sigma, max_steps: int = 256):
        """(x at the optimum, J^T J at it, chi-square, whether the solver converged): the
        transformed search, then :meth:`polish`."""
        import optimistix as optx

        solver = optx.LevenbergMarquardt(rtol=1e-10, atol=1e-10)
        sol = optx.least_squares(lambda u, _: self.weighted(self.natural(u), y, sigma), solver,
                                 u0, max_steps=max_steps, throw=False)
        x, last = self.polish(self.natural(sol.value), y, sigma)
        J = jax.jacfwd(self.weighted)(x, y, sigma)
        r = self.weighted(x, y, sigma)
        settled = jnp.all(last <= 1e-9 * (jnp.abs(x) + jnp.asarray(self.scales)))
        return x, J.T @ J, jnp.sum(r**2), (sol.result == optx.RESULTS.successful) | settled

    def polish(self, x, y, sigma, steps: int = POLISH_STEPS):
        """Gauss-Newton steps in the parameters' own units from the search's optimum, each
        projected onto the domain (a fixed time or latency at most down to 0).

        The transformed search reaches the optimum's neighbourhood robustly but slowly where a
        parameter sits at its bound (d = 0 is u = -inf for the softplus); in natural units the
        model is nearly linear, so a few steps reach full precision, and d = 0 is a bound."""
        lower = jnp.array([0.0 if k == "softplus" else -jnp.inf for k in self.kinds])
        last = jnp.full(len(self.names), jnp.inf)
        for _ in range(steps):
            J = jax.jacfwd(self.weighted)(x, y, sigma)
            r = self.weighted(x, y, sigma)
            # Column scaling keeps the normal equations well conditioned across units.
            d = jnp.sqrt(jnp.sum(J**2, axis=0))
            d = jnp.where(d > 0, d, 1.0)
            dx = jnp.linalg.lstsq(J / d, -r)[0] / d
            x_new = jnp.maximum(x + dx, lower)
            better = jnp.sum(self.weighted(x_new, y, sigma) ** 2) <= jnp.sum(r**2)
            take = better & jnp.all(jnp.isfinite(x_new))
            last = jnp.where(take, jnp.abs(x_new - x), 0.0)
            x = jnp.where(take, x_new, x)
        return x, last


def _spread(JtJ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(eigenvalues, eigenvectors, column scales) of J^T J scaled to unit diagonal."""
    d = np.sqrt(np.diag(JtJ))
    safe = np.where(d > 0, d, 1.0)
    A = JtJ / np.outer(safe, safe)
    A[d == 0, :] = 0.0
    A[:, d == 0] = 0.0
    w, V = np.linalg.eigh(A)
    return w, V, d


def _null_directions(JtJ) -> list[np.ndarray]:
    w, V, _ = _spread(JtJ)
    return [V[:, k] for k in range(len(w)) if w[k] < IDENTIFIABLE_MIN_EIGENVALUE * max(w.max(), 1e-300)]


def _candidates(problem: Problem, x) -> list[tuple[str, Rows]]:
    """Extra measurements that might separate parameters: the same rows changed in one way."""
    rows, sc = problem.rows, problem.scenario
    fitted = set(problem.names)
    n = len(rows)

    def changed(**fields):
        f = dict(rows.fields)
        f.update({k: np.full(n, v) if np.ndim(v) == 0 else v for k, v in fields.items()})
        return Rows(rows.variant, f, rows.y, rows.y, rows.repeats, False)

    out = []
    base = {k: rows.fields.get(k, np.full(n, float(get_parameter(sc, k)))) for k in
            ("wan_Bps", "params", "workers_per_dc", "budget_FLOPs")}
    if "wan_Bps" not in fitted:
        out.append(("rows at a second bandwidth", changed(wan_Bps=base["wan_Bps"] * 4)))
    if "params" not in fitted:
        out.append(("rows at a second model size", changed(params=base["params"] * 10)))
    measured = {sc.ids[i] for i in np.unique(rows.variant)}
    for i, v in enumerate(sc.variants):
        if v.id not in measured:
            out.append((f"rows of {v.id} ({v.short})",
                        Rows(np.full(n, i), rows.fields, rows.y, rows.y, rows.repeats, False)))
    if "workers_per_dc" not in fitted:
        out.append(("rows at another number of workers per DC",
                    changed(workers_per_dc=base["workers_per_dc"] * 2)))
    if "budget_FLOPs" not in fitted:
        out.append(("rows at a module budget that binds",
                    changed(budget_FLOPs=float(sc.budget_low_FLOPs))))
    return out


def _advice(problem: Problem, x, JtJ) -> str:
    """Which parameters trade off, and which extra rows would separate them."""
    involved: list[str] = []
    for v in _null_directions(JtJ):
        involved += [problem.names[i] for i in np.argsort(-np.abs(v))
                     if abs(v[i]) > 0.05 and problem.names[i] not in involved]
    if len(involved) == 1:
        lines = [f"{involved[0]} does not change any row's step time: these rows cannot fit it"]
    else:
        lines = [f"{', '.join(involved)} trade off: these rows cannot tell them apart"]
    fixes = []
    for label, extra in _candidates(problem, x):
        p = dataclasses.replace(problem, rows=extra)
        Je = np.asarray(jax.jacfwd(p.weighted)(x, jnp.asarray(extra.y), jnp.asarray(extra.sigma)))
        if not _null_directions(JtJ + Je.T @ Je * (np.trace(JtJ) / max(np.trace(Je.T @ Je), 1e-300))):
            fixes.append(label)
    if fixes:
        lines.append(f"a measurement that would identify them: {fixes[0]}"
                     + (f" (or {', '.join(fixes[1:3])})" if len(fixes) > 1 else ""))
    else:
        lines.append("no single extra kind of row (bandwidth, model size, variant, workers, budget) "
                     "separates them; fit fewer parameters")
    return "; ".join(lines)


# --------------------------------------------------------------------------- the result


@dataclass(frozen=True)
class Calibration:
    """A fit: the fitted scenario, each parameter's estimate, standard error and 95% interval (SI
    units), their covariance, every row's residual, and whether the rows identify the parameters.

    ``interval`` is (parameter, 2), each on the scale that keeps it in the parameter's range
    (:func:`intervals`; ``kinds`` says which); ``residual_s`` and ``residual_rel`` are (rows,),
    measured minus fitted (s, and over the measured step). ``message`` says what cannot be told
    apart, if anything. With repeats, ``pure_rel_sd`` is one run's pooled relative spread on
    ``pure_dof`` degrees of freedom, ``misfit_p`` the lack-of-fit test's p-value, ``scaled`` the
    factor the covariance was multiplied by (the reduced chi-square where the test fails, else 1)
    and ``warning`` the one line that says so (also issued as a :class:`CalibrationWarning`).
    """

    scenario: Scenario
    names: tuple[str, ...]
    estimate: np.ndarray
    stderr: np.ndarray
    interval: np.ndarray
    cov: np.ndarray
    start: np.ndarray
    measured_s: np.ndarray
    fitted_s: np.ndarray
    variant: tuple[str, ...]
    repeats: np.ndarray
    chi2: float
    dof: int
    scale_known: bool
    converged: bool
    condition: float
    identifiable: bool
    message: str
    kinds: tuple[str, ...] = ()
    quantile: float = math.nan
    pure_rel_sd: float = math.nan
    pure_dof: int = 0
    misfit_p: float = math.nan
    scaled: float = 1.0
    warning: str = ""

    @property
    def residual_s(self) -> np.ndarray:
        return self.measured_s - self.fitted_s

    @property
    def residual_rel(self) -> np.ndarray:
        return self.residual_s / self.measured_s

    @property
    def reduced_chi2(self) -> float:
        return self.chi2 / self.dof if self.dof > 0 else math.nan

    @property
    def units(self) -> tuple[str, ...]:
        from .units import SI

        return tuple(SI[dimension(n)] for n in self.names)

    def __getitem__(self, name: str) -> dict:
        i = self.names.index(resolve_parameter(self.scenario, name))
        return {"estimate": float(self.estimate[i]), "stderr": float(self.stderr[i]),
                "lo": float(self.interval[i, 0]), "hi": float(self.interval[i, 1]),
                "units": self.units[i]}

    def distribution(self) -> "_dist.MultiNormal":
        """The estimates and their covariance as a :class:`bandjax.distributions.MultiNormal`,
        each parameter drawn on the scale of its interval (log for a positive one)."""
        if not self.identifiable:
            raise CalibrationError("the calibration's parameters are not identifiable, so they have "
                                   f"no covariance: {self.message}")
        scale = {"log": "log", "logistic": "logit"}
        return _dist.MultiNormal(self.names, self.estimate, self.cov,
                                 tuple(scale.get(k, "linear") for k in self.kinds))

    def scenario_with_covariance(self, label: str = "calibration") -> Scenario:
        """The fitted scenario with the estimates' covariance as the ``[uncertain]`` entry
        ``label`` (a multinormal), replacing the scenario's own entries on the fitted parameters."""
        fitted = set(self.names)
        keep = []
        for key, dist in self.scenario.uncertain:
            if isinstance(dist, _dist.MultiNormal):
                if fitted & set(dist.names) or key == label:
                    continue
            elif key in fitted:
                continue
            keep.append((key, dist))
        return dataclasses.replace(self.scenario, uncertain=(*keep, (label, self.distribution())))

    def save(self, path, *, covariance: bool = True) -> None:
        """Write the fitted scenario as a scenario TOML file with units; with ``covariance`` (and
        identifiable parameters) its ``[uncertain]`` table keeps the estimates' covariance, so
        :func:`bandjax.uncertainty.propagate_break_even` and ``propagate_sweep`` draw them
        together by default."""
        save(self.scenario_with_covariance() if covariance and self.identifiable else self.scenario, path)

    def table(self) -> str:
        """The estimates and the residuals as text, every number with its unit."""
        lines = [f"{'parameter':<28}{'start':>14}{'estimate':>14}{'std. error':>14}"
                 f"{'95% interval':>30}  unit"]
        for i, name in enumerate(self.names):
            unit, factor = DISPLAY[dimension(name)]
            f = lambda v: f"{v / factor:.6g}"  # noqa: E731
            lines.append(f"{name:<28}{f(self.start[i]):>14}{f(self.estimate[i]):>14}"
                         f"{f(self.stderr[i]):>14}{f(self.interval[i, 0]) + ' .. ' + f(self.interval[i, 1]):>30}"
                         f"  {unit or '1'}")
        scale = (f"measured from the repeats: one run's spread {self.pure_rel_sd * 100:.3g}% of a step "
                 f"(pooled, {self.pure_dof} degrees of freedom); lack of fit chi-square "
                 f"{self.chi2:.4g} on {self.dof} degrees of freedom"
                 + (f" (p = {self.misfit_p:.2g})" if math.isfinite(self.misfit_p) else "")
                 + (f", errors scaled by {math.sqrt(self.scaled):.3g}" if self.scaled != 1.0 else "")
                 if self.scale_known
                 else f"estimated from the residuals: s = {math.sqrt(self.reduced_chi2) * 100:.3g}% "
                      f"of a step on {self.dof} degrees of freedom")
        lines += ["", f"residual scale {scale}; condition number {self.condition:.3g}", "",
                  f"{'row':>4}  {'variant':<20}{'measured ms':>13}{'fitted ms':>13}{'residual ms':>13}"
                  f"{'residual %':>12}"]
        for i in range(len(self.measured_s)):
            lines.append(f"{i + 1:>4}  {self.variant[i]:<20}{self.measured_s[i] * 1e3:>13.6g}"
                         f"{self.fitted_s[i] * 1e3:>13.6g}{self.residual_s[i] * 1e3:>13.4g}"
                         f"{self.residual_rel[i] * 100:>12.4g}")
        if self.warning:
            lines += ["", f"warning: {self.warning}"]
        if not self.identifiable:
            lines += ["", f"not identifiable: {self.message}"]
        elif not self.converged:
            lines += ["", "warning: the solver did not converge; the estimates are its last iterate"]
        return "\n".join(lines)


def setup(measurements, fit: Sequence[str], scenario: Scenario | None = None,
          start: dict | None = None) -> tuple[Problem, np.ndarray]:
    """(the problem, the start in natural units): everything :func:`calibrate` does before it
    solves, for callers that solve many data sets of the same rows (``jax.vmap(problem.solve)``)."""
    sc = reference() if scenario is None else scenario
    if isinstance(fit, str):
        fit = [fit]
    if not fit:
        raise CalibrationError("fit = []: name at least one parameter to fit")
    names = tuple(resolve_parameter(sc, n) for n in fit)
    if len(set(names)) != len(names):
        raise CalibrationError(f"fit {list(fit)!r}: names a parameter twice")
    rows = prepare_rows(measurements, sc)
    clash = set(names) & set(rows.fields)
    if clash:
        raise CalibrationError(f"fit {sorted(clash)!r}: rows set this field, so it cannot also be "
                               "fitted; fit it from rows that leave it at the scenario's value")
    if "params" in names:
        raise CalibrationError("fit 'params': the model size is given, not fitted")
    if "topology" in names:
        raise CalibrationError("fit 'topology': a topology is a choice (ring or mesh), not fitted; "
                               "set it in the scenario or give it as a column")
    whole = [n for n in names if n in LIMITS and LIMITS[n][4]]
    if whole:
        raise CalibrationError(f"fit {whole[0]!r}: takes {allowed_text(whole[0])} only, which a "
                               "continuous fit cannot give; set it in the scenario or give it as a "
                               "column, and fit the others")
    p = len(names)
    if not rows.scale_known and len(rows) <= p:
        raise CalibrationError(f"measurements: {len(rows)} rows for {p} fitted parameters; without "
                               "repeats the fit needs more rows than parameters")
    start = _starts(sc, start, names, fit)
    x0 = []
    for n in names:
        v = start.get(n, float(get_parameter(sc, n)))
        if not math.isfinite(v) or v < 0:
            raise CalibrationError(f"start {n} = {v!r}: must be a finite number >= 0")
        x0.append(v)
    kinds = tuple(_kind(n) for n in names)
    # A fixed time's softplus scale: a hundredth of the typical step, so d near 0 is reached.
    scales = tuple(max(v, 1e-2 * float(np.median(rows.y))) if k == "softplus" else 1.0
                   for k, v in zip(kinds, x0))
    return Problem(sc, names, kinds, scales, rows), np.asarray(x0)


def _starts(sc: Scenario, start, names, fit) -> dict[str, float]:
    """``start`` (name -> value, SI) by canonical name: each a parameter being fitted (by any name
    :func:`resolve_parameter` takes), given once, a real number."""
    if start is None:
        return {}
    if not isinstance(start, dict):
        raise CalibrationError(f"start = {start!r}: expected a mapping parameter -> value (SI)")
    out: dict[str, float] = {}
    for key, value in start.items():
        try:
            name = resolve_parameter(sc, key) if isinstance(key, str) else None
        except CalibrationError:
            name = None
        if name not in names:
            raise CalibrationError(f"start {key!r}: not a parameter being fitted; allowed: "
                                   f"{', '.join(map(str, fit))}")
        if name in out:
            raise CalibrationError(f"start {key!r}: {name} is given a start twice")
        if isinstance(value, (bool, np.bool_)):
            raise CalibrationError(f"start {key} = {value!r}: expected a number, not a boolean")
        out[name] = _float(f"start {key}", value)
    return out


def covariance(JtJ, chi2, dof, scale_known):
    """(covariance, condition number) of the estimates: s^2 (J^T J)^-1."""
    JtJ = np.asarray(JtJ)
    w, V, d = _spread(JtJ)
    s2 = 1.0 if scale_known else float(chi2) / dof
    tiny = w < IDENTIFIABLE_MIN_EIGENVALUE * max(w.max(), 1e-300)
    inv = (V / np.where(tiny, np.inf, w)) @ V.T
    safe = np.where(d > 0, d, 1.0)
    cov = s2 * inv / np.outer(safe, safe)
    # A parameter along a direction the rows do not fix has no finite error.
    unfixed = np.any(tiny[None, :] & (np.abs(V) > 0.05), axis=1) | (d == 0)
    cov[unfixed, :] = np.inf
    cov[:, unfixed] = np.inf
    cond = float(w.max() / w.min()) if w.min() > 0 else math.inf
    return cov, cond


def intervals(x, se, kinds: Sequence[str], q: float) -> np.ndarray:
    """(parameter, 2) intervals estimate -/+ q standard errors, each on the scale that keeps it in
    the parameter's range: a positive parameter (``"log"``) on log x, x exp(-/+ q se / x); a
    fraction (``"logistic"``) on log(x / (1 - x)); a parameter that may be 0 (``"softplus"``: a
    fixed time, a latency) on x itself, cut at 0. An infinite error gives the whole range."""
    x, se = np.asarray(x, dtype=float), np.asarray(se, dtype=float)
    out = np.stack([x - q * se, x + q * se], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i, k in enumerate(kinds):
            if not np.isfinite(se[i]):
                out[i] = (0.0, 1.0 if k == "logistic" else math.inf)
            elif k == "log" and x[i] > 0:
                out[i] = x[i] * np.exp(np.array([-1.0, 1.0]) * q * se[i] / x[i])
            elif k == "logistic" and 0 < x[i] < 1:
                z = math.log(x[i] / (1 - x[i])) + np.array([-1.0, 1.0]) * q * se[i] / (x[i] * (1 - x[i]))
                out[i] = 1.0 / (1.0 + np.exp(-z))
            else:
                out[i] = np.maximum(out[i], 0.0)
    return out


def lack_of_fit(chi2: float, dof: int, rows: Rows) -> float:
    """The lack-of-fit test's p-value (NaN where it cannot be made): with repeats, chi2 / dof is
    F(dof, pure_dof) distributed when the closed forms fit the rows and the repeats' spread is
    the only noise."""
    if not rows.scale_known or dof <= 0:
        return math.nan
    from scipy.stats import f

    return float(f.sf(float(chi2) / dof, dof, rows.pure_dof))


def statistics(JtJ, chi2, rows: Rows, p: int):
    """(covariance, condition number, the interval's quantile, the lack-of-fit p-value, the
    factor the covariance was scaled by) of a fit of ``p`` parameters to ``rows``.

    Without repeats the scale is the reduced chi-square and the quantile Student's t on the
    residual degrees of freedom. With repeats the weights come from the pooled spread, so the
    covariance is (J^T J)^-1 and the quantile t on the pooled degrees of freedom, unless the
    lack-of-fit test fails at :data:`MISFIT_LEVEL`: then the covariance is scaled by the
    reduced chi-square and the quantile is t on the lack-of-fit degrees of freedom."""
    from scipy.stats import norm, t

    dof = len(rows) - p
    cov, cond = covariance(JtJ, chi2, dof, rows.scale_known)
    misfit_p = lack_of_fit(chi2, dof, rows)
    scaled = 1.0
    if rows.scale_known:
        q_dof = rows.pure_dof
        if misfit_p < MISFIT_LEVEL:
            scaled, q_dof = float(chi2) / dof, dof
            cov = cov * scaled
    else:
        q_dof = dof
    q = float(t.ppf(0.5 + LEVEL / 2, q_dof)) if q_dof > 0 else float(norm.ppf(0.5 + LEVEL / 2))
    return cov, cond, q, misfit_p, scaled


def distinct_rows(rows: Rows) -> int:
    """How many rows differ in their setting (variant and fields): repeats of one setting, in one
    row or in several, measure the noise, not the model."""
    columns = [rows.variant, *(rows.fields[k] for k in sorted(rows.fields))]
    return len({tuple(float(c[i]) for c in columns) for i in range(len(rows))})


def check_enough_rows(rows: Rows, names: Sequence[str], force: bool = False) -> None:
    """Refuse a fit of P parameters to P or fewer distinct settings: it has no degree of freedom
    left to tell the parameters' errors (a fit of 3 parameters to 3 rows passes through them
    exactly, whatever the parameters, and its intervals run from 0 to inf). ``force``: a
    :class:`CalibrationWarning` instead."""
    k = distinct_rows(rows)
    if k > len(names):
        return
    message = (f"{k} distinct row{'s' if k != 1 else ''} cannot fit {len(names)} parameter"
               f"{'s' if len(names) != 1 else ''} ({', '.join(names)}): a fit needs more distinct "
               f"rows (settings of the variant and fields; repeats of one setting count once) than "
               f"parameters, at least {len(names) + 1}; measure more settings or fit fewer "
               "parameters")
    if not force:
        raise CalibrationError(message)
    warnings.warn(message + "; fitted anyway (force), its errors are not to be trusted",
                  CalibrationWarning, stacklevel=3)


def calibrate(measurements, fit: Sequence[str], scenario: Scenario | None = None, *,
              start: dict | None = None, force: bool = False) -> Calibration:
    """Fit scenario parameters to measured step times (weighted nonlinear least squares).

    Args:
      measurements: a CSV or TOML file (one row per run; a TOML file is one array of tables such
        as ``[[run]]``), a list of dicts, a dict of columns or a DataFrame. Columns: ``variant``
        (id or label); the step time as ``step`` with a unit (``"4.1 ms"``) or ``step_ms``,
        ``step_s``, ``step_us`` (a list, or ``;``-separated in a CSV cell, for repeats; their spread is
        pooled over all rows, which may mix single runs and repeats); and the fields that differ
        from the scenario: ``bandwidth`` (GB/s or with a unit), ``budget`` (GFLOP/s or
        free/low/high), ``topology`` (ring or mesh), ``model`` (a preset or a
        parameter count), ``workers_per_dc``, or any numeric field by name or scenario-file key
        (a bare number is SI, or give a unit).
      fit: parameters to fit: numeric field names (``worker_port_Bps``, ``wan_latency_s``),
        scenario-file keys (``wan``), ``fixed_s.<variant>`` / ``d.<variant>``, or ``gpu`` (the
        GPU rate ``gpu_peak_FLOPs`` at the scenario's utilisation: c = F / (peak x utilisation)).
      scenario: everything that is not fitted and the start of what is (default: the reference).
      start: start values (SI units) by parameter, instead of the scenario's.
      force: fit even where the rows have no more distinct settings than there are parameters
        (a :class:`CalibrationWarning` instead of the :class:`CalibrationError`).

    Returns:
      :class:`Calibration`. Issues a :class:`CalibrationWarning` (one line naming the worst rows)
      when repeats show the rows do not fit within their noise; the errors are then scaled.

    Raises:
      CalibrationError: a table that cannot be read or checked, or no more distinct rows than
        parameters (:func:`check_enough_rows`) unless ``force``.
    """
    problem, x0 = setup(measurements, fit, scenario, start)
    rows = problem.rows
    check_enough_rows(rows, problem.names, force)
    x, JtJ, chi2, ok = jax.jit(problem.solve)(jnp.asarray(problem.search(x0)),
                                              jnp.asarray(rows.y), jnp.asarray(rows.sigma))
    x, JtJ = np.asarray(x), np.asarray(JtJ)
    if not np.all(np.isfinite(JtJ)):  # a weight 1/sigma^2 or a derivative past the float range
        raise CalibrationError(
            f"the rows cannot be weighed: the smallest step time is {float(np.min(rows.y)):.3g} s "
            f"and the smallest spread {float(np.min(rows.sigma)):.3g} s, too small for 64-bit "
            "floats; give step times in the rows' real scale (ms columns take milliseconds)")
    dof = len(rows) - len(problem.names)
    cov, cond, q, misfit_p, scaled = statistics(JtJ, chi2, rows, len(problem.names))
    identifiable = bool(np.all(np.isfinite(np.diag(cov))))
    message = "" if identifiable else _advice(problem, x, JtJ)
    warning = ""
    if scaled != 1.0:
        r = np.asarray(problem.weighted(jnp.asarray(x), jnp.asarray(rows.y), jnp.asarray(rows.sigma)))
        worst = np.argsort(-np.abs(r))[:WORST_ROWS]
        warning = (f"the rows do not fit within their repeats' noise (chi-square {float(chi2):.4g} on "
                   f"{dof} degrees of freedom, p = {misfit_p:.2g}); worst rows "
                   + ", ".join(f"{k + 1} ({problem.scenario.ids[rows.variant[k]]}, "
                               f"{-r[k] * rows.sigma[k] / rows.y[k] * 100:+.3g}%)" for k in worst)
                   + f"; errors scaled by {math.sqrt(scaled):.3g}")
        warnings.warn(warning, CalibrationWarning, stacklevel=2)
    spread_p, low, low_sd, high, high_sd = rows.spread_test
    if spread_p < MISFIT_LEVEL:
        line = (f"the rows' repeats do not share one spread (Bartlett p = {spread_p:.2g}; one run's "
                f"spread {low_sd * 100:.3g}% of a step in row {low} to {high_sd * 100:.3g}% in row {high}), "
                "so the pooled spread weights some rows too much and others too little; the "
                "intervals are approximate")
        warnings.warn(line, CalibrationWarning, stacklevel=2)
        warning = f"{warning}; {line}" if warning else line
    se = np.sqrt(np.diag(cov))
    interval = intervals(x, se, problem.kinds, q)
    fitted_sc = with_parameters(problem.scenario, {n: float(v) for n, v in zip(problem.names, x)})
    return Calibration(
        scenario=fitted_sc, names=problem.names, estimate=x, stderr=se, interval=interval, cov=cov,
        start=x0, measured_s=rows.y, fitted_s=np.asarray(problem.model(jnp.asarray(x))),
        variant=tuple(problem.scenario.ids[i] for i in rows.variant), repeats=rows.repeats, chi2=float(chi2),
        dof=dof, scale_known=rows.scale_known, converged=bool(ok), condition=cond,
        identifiable=identifiable, message=message, kinds=problem.kinds, quantile=q,
        pure_rel_sd=rows.pure_rel_sd, pure_dof=rows.pure_dof, misfit_p=misfit_p, scaled=scaled,
        warning=warning)


__all__ = ["Calibration", "CalibrationError", "CalibrationWarning", "Problem", "Rows", "calibrate",
           "covariance", "intervals", "lack_of_fit", "predict_s", "prepare_rows", "read_rows",
           "resolve_parameter", "setup", "statistics", "with_parameters"]
