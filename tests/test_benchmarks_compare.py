"""The speed guard (``python -m benchmarks --compare``): which figures it flags, in which order,
what it refuses to compare, and its exit status, on crafted results and on a function slowed on
purpose. No timing is asserted beyond the slowed function being slower than its copy, by far."""

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import common, compare

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results.json"


def _results(**sections):
    return {"quick": False, "machine": {"cpus": 2, "processor": "x86_64"}, **sections}


BASE = _results(
    sweep={"cells_per_s": 1e8, "ratio_numpy": 5.0, "compile_s": 0.25, "scaling_exponent": 0.9,
           "sizes": [{"cells": 1000, "sweep": {"median_s": 1e-3, "min_s": 9e-4, "max_s": 2e-3,
                                               "runs_s": [1e-3] * 5, "n": 5, "cells": 1000,
                                               "cells_per_s": 1e6}}]},
    break_even={"available": True, "roots_per_s": 5e5, "ratio_brentq": 4.5,
                "grad_over_solve": {"median": 0.8, "min": 0.7, "max": 0.9, "runs": 7}},
    compile={"available": True, "elasticities_s": 0.8},
)


def _with(results, path, value):
    out = copy.deepcopy(results)
    *head, last = path
    node = out
    for key in head:
        node = node[key]
    node[last] = value
    return out


def _worse_names(old, new, **kw):
    return [c.name for c in compare.compare(old, new, **kw).worse]


def test_identical_runs_have_nothing_worse():
    c = compare.compare(BASE, BASE)
    assert c.worse == [] and not c.regressed
    assert c.compared == 8  # the 7 figures named above and sizes[cells=1000].sweep.cells_per_s


def test_a_rate_30_percent_lower_is_flagged_10_percent_is_not():
    assert _worse_names(BASE, _with(BASE, ("sweep", "cells_per_s"), 0.7e8)) == ["sweep.cells_per_s"]
    assert _worse_names(BASE, _with(BASE, ("sweep", "cells_per_s"), 0.9e8)) == []
    assert _worse_names(BASE, _with(BASE, ("sweep", "cells_per_s"), 3e8)) == []  # faster


def test_a_time_30_percent_higher_is_flagged_10_percent_is_not():
    assert _worse_names(BASE, _with(BASE, ("compile", "elasticities_s"), 0.8 * 1.3)) == \
        ["compile.elasticities_s"]
    assert _worse_names(BASE, _with(BASE, ("compile", "elasticities_s"), 0.8 * 1.1)) == []
    assert _worse_names(BASE, _with(BASE, ("compile", "elasticities_s"), 0.1)) == []  # faster


def test_a_ratio_lower_is_better_where_it_is_a_cost_over_a_cost():
    # grad_over_solve = (solve + gradient) / solve, given with its spread: its median compared
    new = _with(BASE, ("break_even", "grad_over_solve"), {"median": 1.2, "min": 1.1, "max": 1.3,
                                                          "runs": 7})
    (change,) = compare.compare(BASE, new).worse
    assert change.name == "break_even.grad_over_solve" and change.kind == compare.RATIO_DOWN
    assert change.change == pytest.approx(0.5, rel=1e-12)  # 0.8 -> 1.2


def test_change_and_threshold():
    new = _with(BASE, ("break_even", "roots_per_s"), 3e5)  # 40% lower
    (change,) = compare.compare(BASE, new).worse
    assert change.old == 5e5 and change.new == 3e5
    assert change.change == pytest.approx(-0.4, rel=1e-12)
    assert change.worse_by == pytest.approx(0.4, rel=1e-12)
    assert _worse_names(BASE, new, threshold=0.5) == []
    with pytest.raises(ValueError, match="threshold"):
        compare.compare(BASE, new, threshold=1.0)


def test_ratios_are_listed_before_absolute_figures():
    new = _with(BASE, ("sweep", "cells_per_s"), 1e7)  # 90% worse, absolute
    new = _with(new, ("compile", "elasticities_s"), 8.0)  # 900% worse, absolute
    new = _with(new, ("break_even", "ratio_brentq"), 3.0)  # 33% worse, a ratio
    new = _with(new, ("sweep", "ratio_numpy"), 2.0)  # 60% worse, a ratio
    c = compare.compare(BASE, new)
    assert [w.name for w in c.worse] == ["sweep.ratio_numpy", "break_even.ratio_brentq",
                                         "compile.elasticities_s", "sweep.cells_per_s"]
    text = compare.render(c, "old.json", "new.json")
    at = {name: text.index(f"  {name} ") for name in (w.name for w in c.worse)}
    assert at["break_even.ratio_brentq"] < text.index("absolute figures (machine-dependent")
    assert text.index("absolute figures (machine-dependent") < at["compile.elasticities_s"]
    assert "5 -> 2" in text and "-60.0%" in text and "+900.0%" in text


def test_nulls_are_reported_as_not_compared_with_the_reason():
    new = _with(BASE, ("break_even",), {"available": False, "reason": "benchmarks.breakeven.run "
                                        "failed: RuntimeError: boom", "roots_per_s": None,
                                        "ratio_brentq": None, "grad_over_solve": None})
    old = _with(BASE, ("compile", "elasticities_s"), None)
    c = compare.compare(old, new)
    why = dict(c.not_compared)
    assert why["break_even.roots_per_s"] == ("null in the new run (break_even: "
                                             "benchmarks.breakeven.run failed: RuntimeError: boom)")
    assert why["break_even.ratio_brentq"].startswith("null in the new run (break_even: ")
    new = _with(new, ("break_even",), {"available": False, "reason": "not run"})
    assert dict(compare.compare(BASE, new).not_compared)["break_even.ratio_brentq"] == \
        "absent from the new run (break_even: not run)"
    assert why["compile.elasticities_s"] == "null in the baseline"
    assert c.worse == [] and c.compared == 4
    text = compare.render(c, "old.json", "new.json")
    assert "  compile.elasticities_s: null in the baseline" in text


def test_what_it_cannot_compare_is_listed_never_dropped():
    new = _with(BASE, ("sweep", "mystery_figure"), 3.0)  # no rule names it
    new = _with(new, ("compile", "new_section_s"), 1.0)  # absent from the baseline
    old = _with(BASE, ("sweep", "compile_s"), 0.0)  # no percentage from 0
    why = dict(compare.compare(old, new).not_compared)
    assert why["sweep.mystery_figure"].startswith("not classified")
    assert why["compile.new_section_s"] == "absent from the baseline"
    assert why["sweep.compile_s"].startswith("the baseline's value is 0")
    assert "neither direction is better" in why["sweep.scaling_exponent"]


def test_spreads_sizes_and_the_machine_are_not_figures():
    # a run twice as spread, on other sizes' counts and another machine, is no worse
    new = _with(BASE, ("sweep", "sizes", 0, "sweep", "max_s"), 1.0)
    new = _with(new, ("sweep", "sizes", 0, "sweep", "n"), 50)
    new = _with(new, ("machine", "cpus"), 64)
    c = compare.compare(BASE, new)
    assert c.worse == [] and [name for name, _ in c.not_compared] == ["sweep.scaling_exponent"]
    assert c.not_figures["spreads beside a median"] == 4  # min_s, max_s, runs_s, n
    assert any("cpus (2 -> 64)" in note for note in c.notes)


def test_list_entries_line_up_by_size_not_position():
    # a quick run's sizes differ: the entry at 1000 cells is compared with the one at 1000 cells
    other = {"cells": 10, "sweep": {"median_s": 1e-5, "cells_per_s": 1e6}}
    new = _with(BASE, ("sweep", "sizes"), [other, BASE["sweep"]["sizes"][0]])
    new["quick"] = True
    c = compare.compare(BASE, new)
    assert any(note.startswith("one run is --quick") for note in c.notes)
    why = dict(c.not_compared)
    assert why == {"sweep.scaling_exponent": why["sweep.scaling_exponent"],
                   "sweep.sizes[cells=10].sweep.cells_per_s": "absent from the baseline"}


def test_every_number_of_the_committed_results_is_classified():
    results = json.loads(COMMITTED.read_text())
    unclassified = [n.name for n in compare.numbers(results)
                    if n.what is None and compare.classify(n.path) is None]
    assert unclassified == []
    kinds = {n.name: compare.classify(n.path) for n in compare.numbers(results)}
    assert kinds["sweep.cells_per_s"] == compare.RATE
    assert kinds["sweep.compile_s"] == compare.COST
    assert kinds["sweep.ratio_numpy"] == compare.RATIO_UP
    assert kinds["sweep.fraction_of_floor"] == compare.RATIO_UP
    assert kinds["float32.speedup"] == compare.RATIO_UP
    assert kinds["sweep.wrapper_growth"] == compare.RATIO_DOWN
    assert kinds["need.targets_per_s_min"] == compare.SPREAD
    assert kinds["break_even.max_rel_diff_vs_brentq"] == compare.ACCURACY


# ------------------------------------------------------------ a function slowed on purpose

NAP_S = 0.02  # both functions sleep: a sleep's length hardly moves with the machine's load


def _work():
    time.sleep(NAP_S)
    return sum(range(1000))


def _work_slowed():  # the same, with 40 ms more: 3x the time
    time.sleep(NAP_S)
    time.sleep(2 * NAP_S)
    return sum(range(1000))


def _tiny_run(slowed: bool) -> dict:
    """A results dict of a two-figure benchmark timed as the real ones (common.measure: the
    median of several runs after a warm-up), one of whose functions can be the slowed copy."""
    kept = common.measure(_work)
    changed = common.measure(_work_slowed if slowed else _work)
    return _results(tiny={"available": True, "kept_call_s": kept["median_s"],
                          "changed_call_s": changed["median_s"],
                          "changed_calls_per_s": 1 / changed["median_s"],
                          # the changed function's rate over the kept one's, as ratio_numpy
                          "ratio_kept": kept["median_s"] / changed["median_s"]})


@pytest.fixture(scope="module")
def tiny_runs():
    return _tiny_run(slowed=False), _tiny_run(slowed=True)


def test_compare_flags_exactly_the_slowed_figures(tiny_runs):
    old, new = tiny_runs
    c = compare.compare(old, new)
    # the changed function's time (up), its rate (down) and the ratio of the two functions' times
    # (the figure that holds across machines, listed first); the kept function's time is not
    # (a time 3x is worse by 200%, the rate a third by 67%: worst first)
    assert [w.name for w in c.worse] == ["tiny.ratio_kept", "tiny.changed_call_s",
                                         "tiny.changed_calls_per_s"]
    assert c.compared == 4 and c.not_compared == []


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "benchmarks", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # a hang guard only


def test_the_command_line_exits_1_naming_the_slowed_figure(tiny_runs, tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(tiny_runs[0]))
    new.write_text(json.dumps(tiny_runs[1]))
    p = _cli("--compare", new, "--baseline", old, cwd=tmp_path)
    assert p.returncode == 1, (p.stdout, p.stderr)
    flagged = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("  tiny.")]
    assert flagged == ["tiny.ratio_kept", "tiny.changed_call_s", "tiny.changed_calls_per_s"], \
        p.stdout
    p = _cli("--compare", old, "--baseline", old, cwd=tmp_path)  # nothing worse
    assert p.returncode == 0 and "4 figures compared, 0 worse by more than 20%" in p.stdout, \
        p.stdout


@pytest.mark.parametrize("content, why", [
    ("{\"sweep\": {\"cells_per_s\": 1e8,", "is not JSON"),
    ("[1, 2, 3]", "its top level is list"),
    ("{\"hello\": \"world\"}", "holds no benchmark figure"),
    (None, "does not exist"),
])
def test_a_bad_results_file_exits_2_with_one_line_naming_it(tmp_path, content, why):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    for args in (("--compare", bad, "--baseline", COMMITTED), ("--compare", COMMITTED,
                                                               "--baseline", bad)):
        p = _cli(*args, cwd=tmp_path)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert p.stderr.count("\n") == 1 and str(bad) in p.stderr and why in p.stderr, p.stderr
        assert "Traceback" not in p.stderr and p.stdout == ""


@pytest.mark.parametrize("args", [("--threshold", "0"), ("--threshold", "1.5"),
                                  ("--threshold", "nan"), ("--baseline", "x.json")])
def test_bad_arguments_exit_2(args, tmp_path):
    extra = () if args[0] == "--baseline" else ("--compare", COMMITTED)
    p = _cli(*extra, *args, cwd=tmp_path)
    assert p.returncode == 2 and "error:" in p.stderr and "Traceback" not in p.stderr, p.stderr
