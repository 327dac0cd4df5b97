"""Hostile documents, generated: measurement tables (what `bandjax calibrate` and
:func:`bandjax.calibrate` read: CSV and TOML files, rows as dicts) and results.json documents
(what `bandjax explore --results` reads), built from valid ones by mutations -- wrong types,
missing and extra fields, NaN, inf, huge and negative numbers, strings with markup, deep nesting,
duplicate headers and keys, ragged rows, broken bytes.

Each document ends in a clean error (exit status 2 and one line that names what is wrong; a
ValueError through the API) or a valid result, checked against the document: never another
exception, never a hang (each case runs under an alarm of CASE_S). The tallies are printed by the
last test (pytest -s)."""

from __future__ import annotations

import collections
import copy
import csv
import io
import json
import math
import warnings

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bandjax as bj
from bandjax import cli
from bandjax.calibration import CalibrationWarning
from bandjax.units import parse
from bandjax.report import explorer

from test_hostile import CASE_S, bounded, tallied  # one bound on a case: past it, a hang

TALLY = collections.Counter()
SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))


def run_cli(argv, capsys, allowed=(0, 2)) -> tuple[int, str, str]:
    """``cli.main(argv)`` in this process: (exit status, stdout, the error line); a traceback, a
    hang, another status or more than one line on stderr fails."""
    TALLY["cases"] += 1
    with tallied(TALLY), warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc in allowed, (argv, rc, err)
    assert "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    if rc == 2:
        TALLY["clear errors"] += 1
        assert len(lines) == 1 and lines[0].startswith(f"bandjax {argv[0]}: error: "), err
        return rc, out, lines[0]
    TALLY["accepted"] += 1
    return rc, out, ""


# ------------------------------------------------------------------ hostile values

MARKUP = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "</script><!--",
          "=HYPERLINK(\"http://x\")", "${7*7}", "{{7*7}}", "a\u202eb", "\u2028", "'; DROP TABLE x; --"]
NUMBER_TEXT = ["nan", "NaN", "inf", "-inf", "-1", "0", "-0", "1e308", "1e999", "-1e999", "1e-320",
               "0x10", "1_000", "4.5.6", "12.5 GB/s", "4.1 ms", "4.1 parsecs", "1;2;x", "1;;", ";",
               "true", "", " "]
TEXT_CELLS = st.one_of(
    st.sampled_from(NUMBER_TEXT + MARKUP + ["adamw", "E'", "zz", "free", "ring", "7B", "9" * 400]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**30, 10**30).map(str),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))
# values a TOML table or a Python row may hold (types a CSV cannot)
VALUES = st.one_of(
    TEXT_CELLS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-2**63, 2**63 - 1),
    st.sampled_from([10**400, -10**400]),  # TOML integers are unbounded as Python reads them
    st.booleans(),
    st.lists(st.one_of(st.floats(allow_nan=True), st.integers(-5, 5), st.sampled_from(MARKUP)),
             max_size=3),
    st.dictionaries(st.sampled_from(["a", "step_ms", "<b>"]), st.integers(0, 3), max_size=2),
    st.recursive(st.integers(0, 3), lambda inner: st.lists(inner, min_size=1, max_size=2),
                 max_leaves=30))

# ------------------------------------------------------------------ measurement tables

HEADER = ["variant", "step_ms", "bandwidth"]
ROWS = [["adamw", "40", "12.5"], ["band_switch", "5", "12.5"], ["adamw", "20", "25"],
        ["band_switch", "4", "25"]]
COLUMNS = ["bogus", "<b>x</b>", "utilisation", "dcs", "wan", "step", "step_s", "note", "", " ",
           "variant", "step_ms", "bandwidth", "workers_per_dc", "model", "budget", "topology"]


def _mutated_table(data) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, what was done): the valid table above with 1 to 3 mutations."""
    header, rows = list(HEADER), [list(r) for r in ROWS]
    done = []
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        how = data.draw(st.sampled_from(["cell", "cell", "duplicate header", "long row",
                                         "short row", "extra column", "drop column",
                                         "drop rows", "repeat rows"]), label="how")
        done.append(how)
        if how == "cell" and rows:
            i = data.draw(st.integers(0, len(rows) - 1))
            j = data.draw(st.integers(0, max(len(rows[i]) - 1, 0)))
            if rows[i]:
                rows[i][j] = data.draw(TEXT_CELLS)
        elif how == "duplicate header" and header:
            header.append(data.draw(st.sampled_from(header)))
            for r in rows:
                r.append(data.draw(TEXT_CELLS))
        elif how == "long row" and rows:
            data.draw(st.sampled_from(rows)).append(data.draw(TEXT_CELLS))
        elif how == "short row" and rows:
            r = data.draw(st.sampled_from(rows))
            if r:
                r.pop()
        elif how == "extra column":
            header.append(data.draw(st.sampled_from(COLUMNS)))
            for r in rows:
                r.append(data.draw(TEXT_CELLS))
        elif how == "drop column" and header:
            j = data.draw(st.integers(0, len(header) - 1))
            header.pop(j)
            for r in rows:
                if j < len(r):
                    r.pop(j)
        elif how == "drop rows":
            rows = rows[:data.draw(st.integers(0, len(rows)))]
        elif how == "repeat rows" and rows:
            rows = rows * data.draw(st.integers(2, 50))
    return header, rows, done


@pytest.fixture(scope="module")
def compiled():
    """One fit of the valid table before the cases, so that the first case's alarm does not
    count jax's first compile of the fit (seconds on a loaded machine)."""
    rows = [{"variant": v, "step_ms": float(s), "bandwidth": float(b)} for v, s, b in ROWS]
    return bj.calibrate(rows, fit=["d.adamw"])


def _csv_text(header, rows, quoted: bool) -> str:
    if quoted:  # what a spreadsheet writes: quotes where a cell needs them
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()
    return "\n".join(",".join(r) for r in [header, *rows]) + "\n"  # by hand, quotes as typed


def _names_what(line: str, path, header) -> bool:
    """The error line names the file, a row, a column of the table or the fit."""
    return (str(path) in line or "row" in line or "fit" in line or "measurements" in line
            or any(h.strip() and h.strip() in line for h in header))


@settings(max_examples=15, **SETTINGS)
@given(data=st.data(), quoted=st.booleans())
def test_generated_csv_tables(compiled, tmp_path_factory, capsys, data, quoted):
    """CSV tables through `bandjax calibrate FILE --fit d.adamw`: a fit (0, or 1 where the rows do
    not identify d, said in the table) or one line naming what is wrong (2)."""
    header, rows, done = _mutated_table(data)
    path = tmp_path_factory.mktemp("csv") / "runs.csv"
    path.write_text(_csv_text(header, rows, quoted), encoding="utf-8")
    rc, out, line = run_cli(["calibrate", path, "--fit", "d.adamw"], capsys, allowed=(0, 1, 2))
    if rc == 2:
        assert _names_what(line, path, header), (done, line)
    else:  # a table of estimates, each finite
        assert "d.adamw" in out or "fixed_s.adamw" in out, out
        assert "nan" not in out.lower().split("residual scale")[0], (done, out)


def _toml_value(v) -> str:
    """``v`` as a TOML inline value (a table as an inline table)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


def _toml_text(rows: list[dict], data) -> str:
    """The rows as [[run]] tables, then maybe a key written twice or an array nested deeper
    than a parser recurses."""
    text = "".join("[[run]]\n" + "".join(f"{json.dumps(k)} = {_toml_value(v)}\n"
                                         for k, v in r.items()) for r in rows)
    if data.draw(st.integers(0, 3), label="key twice") == 0 and '"step_ms" = ' in text:
        text = text.replace('"step_ms" = ', '"step_ms" = 1\n"step_ms" = ', 1)
    if data.draw(st.integers(0, 3), label="deep") == 0 and '"bandwidth" = ' in text:
        depth = data.draw(st.sampled_from([3, 50, 1000, 20_000]))
        text = text.replace('"bandwidth" = ', f'"bandwidth" = {"[" * depth}1{"]" * depth}\nx = ', 1)
    return text


def _mutated_rows(data) -> tuple[list[dict], list[str]]:
    """Rows as dicts (the valid table's, numbers as numbers) with 1 to 3 mutations of their
    values, keys and count."""
    rows = [{"variant": v, "step_ms": float(s), "bandwidth": float(b)} for v, s, b in ROWS]
    done = []
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        how = data.draw(st.sampled_from(["value", "value", "value", "drop key", "extra key",
                                         "drop rows", "repeats"]), label="how")
        done.append(how)
        if not rows:
            break
        r = data.draw(st.sampled_from(rows))
        if how == "value":
            r[data.draw(st.sampled_from(sorted(r) or ["step_ms"]))] = data.draw(VALUES)
        elif how == "drop key" and r:
            r.pop(data.draw(st.sampled_from(sorted(r))))
        elif how == "extra key":
            r[data.draw(st.sampled_from(COLUMNS))] = data.draw(VALUES)
        elif how == "drop rows":
            rows = rows[:data.draw(st.integers(0, len(rows)))]
        elif how == "repeats":
            r["step_ms"] = data.draw(st.lists(st.one_of(st.floats(0.5, 80), VALUES), max_size=4))
    return rows, done


@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_generated_toml_tables(compiled, tmp_path_factory, capsys, data):
    """TOML tables ([[run]], values of any TOML type, a key written twice, arrays nested deeper
    than a parser recurses) through `bandjax calibrate`."""
    rows, done = _mutated_rows(data)
    path = tmp_path_factory.mktemp("toml") / "runs.toml"
    path.write_text(_toml_text(rows, data), encoding="utf-8")
    rc, out, line = run_cli(["calibrate", path, "--fit", "d.adamw"], capsys, allowed=(0, 1, 2))
    if rc == 2:
        assert _names_what(line, path, ["variant", "step_ms", "bandwidth", *COLUMNS]), (done, line)


STEP_COLUMNS = {"step_ms": 1e-3, "step_s": 1.0, "step_us": 1e-6}  # the unit in the column's name


def _step_s(row: dict) -> list[float] | None:
    """The step times, s, a row gives in its one step column (step_ms, step_s, step_us, or step
    with its unit in the value, read by bandjax.units.parse): None where it gives none, several,
    or one that is not a valid one (then the row must be refused)."""
    given = [k for k in ("step", *STEP_COLUMNS) if k in row]
    if len(given) != 1:
        return None
    key = given[0]
    values = list(row[key]) if isinstance(row[key], (list, tuple)) else [row[key]]
    out = []
    for v in values:
        if isinstance(v, bool):
            return None
        try:
            if key == "step":
                if not (isinstance(v, str) and len(v.split()) > 1):
                    return None  # a step time without its unit
                x = parse("step", v, "time")
            else:
                x = float(v) * STEP_COLUMNS[key]
        except (TypeError, ValueError):
            return None
        if not (math.isfinite(x) and x > 0):
            return None
        out.append(x)
    return out or None


@settings(max_examples=20, **SETTINGS)
@given(data=st.data())
def test_generated_rows_through_the_api(compiled, data):
    """Rows as dicts through :func:`bandjax.calibrate`: a ValueError naming a row, a column or the
    fit, or a fit whose measured steps are exactly the rows' (the mean of each row's repeats; no
    value silently read as another) and whose estimate is a finite d >= 0."""
    rows, done = _mutated_rows(data)
    snapshot = copy.deepcopy(rows)
    TALLY["cases"] += 1
    try:
        with tallied(TALLY, passes=ValueError), warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            cal = bj.calibrate(rows, fit=["d.adamw"])
    except ValueError as e:
        TALLY["clear errors"] += 1
        msg = str(e)
        assert "\n" not in msg and ("row" in msg or "fit" in msg or "measurements" in msg
                                    or "variant" in msg), (done, msg)
        return
    TALLY["accepted"] += 1
    expected = [_step_s(r) for r in snapshot]
    assert all(x is not None for x in expected), (done, snapshot)  # an invalid step was read
    assert cal.measured_s.tolist() == pytest.approx([sum(x) / len(x) for x in expected],
                                                    rel=1e-12), (done, snapshot)
    d = float(cal.estimate[0])
    assert math.isfinite(d) and d >= 0, (done, d)


# ------------------------------------------------------------------ results.json documents

DEEP = "__deep__"


def _pick_path(data, doc) -> list:
    """A path into ``doc``: from the top, down a child at each level with probability 0.8."""
    path, node = [], doc
    while isinstance(node, (dict, list)) and node and (not path or data.draw(
            st.integers(0, 4), label="down") > 0):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict)
                                         else list(range(len(node)))), label="key")
        path.append(key)
        node = node[key]
    return path


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


RESULT_VALUES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1.0, 0, -0.0, 10**400, 2**63, None,
                     True, "", [], {}, [[]], DEEP, "x" * 100_000, *MARKUP]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.text(max_size=12),
    st.lists(st.one_of(st.none(), st.floats(allow_nan=True), st.text(max_size=4)), max_size=3))


def _mutated_results(data, ref: dict) -> tuple[str, list[str]]:
    """A results.json text: the reference report's with 1 to 3 mutations at random paths, then
    maybe a mutation of its text (truncated, a key written twice, a byte that is not UTF-8)."""
    doc = copy.deepcopy(ref)
    done = []
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        path = _pick_path(data, doc)
        how = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "extra key",
                                         "wrap", "duplicate item"]), label="how")
        done.append(f"{how} {'.'.join(map(str, path))}")
        if not path:
            how = "extra key"
        parent = _at(doc, path[:-1]) if path else doc
        key = path[-1] if path else None
        if how == "replace":
            parent[key] = data.draw(RESULT_VALUES)
        elif how == "delete":
            del parent[key]
        elif how == "extra key":
            node = _at(doc, path)
            if isinstance(node, dict):
                node[data.draw(st.sampled_from(["extra", "<script>", "", "time_to_target"]))] = 1
        elif how == "wrap":
            parent[key] = data.draw(st.sampled_from([[parent[key]], {"value": parent[key]}]))
        elif how == "duplicate item":
            node = _at(doc, path)
            if isinstance(node, list) and node:
                node.append(copy.deepcopy(node[0]))
    text = json.dumps(doc)  # NaN and Infinity as JSON's common extension writes them
    if DEEP in text:
        depth = data.draw(st.sampled_from([10, 500, 100_000]))
        text = text.replace(json.dumps(DEEP), "[" * depth + "]" * depth, 1)
    raw = data.draw(st.sampled_from(["as is"] * 4 + ["truncated", "key twice", "bad byte"]),
                    label="text")
    if raw == "truncated":
        text = text[:data.draw(st.integers(0, len(text) - 1))]
    elif raw == "key twice":
        text = text.replace('{"', '{"schema_version": 0, "', 1)
    done.append(raw)
    return text, done


@pytest.fixture(scope="module")
def reference_results(reference_report):
    return reference_report[1]


ACCEPTED: list = []  # documents the reader accepted, for the page test below


@settings(max_examples=60, **SETTINGS)
@given(data=st.data())
def test_generated_results_documents(tmp_path_factory, capsys, monkeypatch, reference_results, data):
    """results.json documents through `bandjax explore --results FILE --out DIR` (the page's
    writing left out here: test_accepted_documents_make_a_page draws it for the ones read): one
    line naming --results and what is wrong (2), or read whole (0)."""
    text, done = _mutated_results(data, reference_results)
    folder = tmp_path_factory.mktemp("rep")
    path = folder / "results.json"
    raw = text.encode()
    if done[-1] == "bad byte":
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff" + raw[at:]
    path.write_bytes(raw)
    read = []
    monkeypatch.setattr(explorer, "write", lambda out, sc, results, sweeps: read.append(results)
                        or folder / "explorer.html")
    (folder / "explorer.html").write_text("")
    rc, out, line = run_cli(["explore", "--results", path, "--out", folder / "page"], capsys)
    if rc == 2:
        assert "--results" in line and str(path) in line, (done, line)
    else:
        assert len(read) == 1, done
        # what was read is the document: its sections written back are its JSON
        assert read[0].to_json() == json.loads(text), done
        if len(ACCEPTED) < 4 and done != ["as is"]:
            ACCEPTED.append((done, read[0]))


def test_accepted_documents_make_a_page(reference_report, tmp_path):
    """Documents the reader accepts draw a page without a traceback, their strings as text: one
    made here (a variant's label in the need section with markup, a time to target of 1e308 s,
    a shared-WAN trace time of -1 ms: valid by the schema) and the first one the generated test
    above accepted, if it ran."""
    sc = bj.reference()
    made = copy.deepcopy(reference_report[1])
    made["need"]["variants"]["topk"]["label"] = MARKUP[0]
    made["time_to_target_s"]["exact"]["adamw"] = 1e308
    if made["shared_wan"].get("trace", {}).get("t_ms"):
        made["shared_wan"]["trace"]["t_ms"][0] = -1.0
    (tmp_path / "results.json").write_text(json.dumps(made, allow_nan=False))
    made = explorer.read_results(tmp_path / "results.json", sc)  # the reader takes it
    for done, results in [(["made here"], made), *ACCEPTED[:1]]:
        TALLY["cases"] += 1
        with bounded(CASE_S * 3):
            page = explorer.page(sc, results, reference_report[3])
        assert page.rstrip().endswith("</html>"), done
        assert MARKUP[0] not in page and MARKUP[1] not in page, done


def test_tally():
    """Printed with -s; fails if any case traced back or hung (they fail their own test too)."""
    print("\nhostile documents:", dict(TALLY))
    assert TALLY["tracebacks"] == 0 and TALLY["hangs"] == 0 and TALLY["cases"] > 0
