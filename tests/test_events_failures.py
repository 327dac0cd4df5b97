"""Runs that fail (events/failures.py): the worked values of docs/model.md section 17, rate 0 gives
ETTR 1, the engine's accounting against a plain walk over the same draws, long runs against the
exact and first-order forms within the module's stated bound, seeds, bad input, and the bound on
a run's failures checked before any SimPy environment exists."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import events
from events import failures as F
from events.failures import FailureBoundError, fit_duration_s, simulate_failures

ROOT = Path(__file__).resolve().parents[1]
LLAMA3_R = 419 / (54 * 24 * 16384)  # model.md section 17: 419 interruptions, 54 days, 16,384 GPUs


# --- the closed forms ---

def test_worked_values_of_section_17():
    # model.md section 17, "Worked values (oracle)": printed to the digits below
    assert LLAMA3_R == pytest.approx(1.9733e-5, abs=5e-10)
    assert 1 / F.cluster_rate_per_s((16384,), LLAMA3_R) / 3600 == pytest.approx(3.09, abs=5e-3)
    assert F.young_interval_s((16384,), LLAMA3_R, 60) == pytest.approx(1155.95, abs=5e-3)
    assert F.ettr_stop_first_order((16384,), LLAMA3_R, 600, 60) == pytest.approx(0.850086,
                                                                                abs=5e-7)
    assert F.ettr_rounds_first_order((4096,) * 4, LLAMA3_R, 600, 3.2, 120) == pytest.approx(
        0.983763, abs=5e-7)


def test_closed_forms_to_1e_9_of_their_formulas():
    # the section's formulas, written out here in other words
    lam = 16384 * LLAMA3_R / 3600
    tau = (2 * 60 / lam) ** 0.5
    stop = (1 - lam * (600 + tau / 2)) / (1 + 60 / tau)
    rounds = 1 - 4 * (4096 / 16384) * 4096 * LLAMA3_R / 3600 * (600 + 3.2 + 120)
    assert F.young_interval_s((16384,), LLAMA3_R, 60) == pytest.approx(tau, rel=1e-9, abs=0)
    assert F.ettr_stop_first_order(16384, LLAMA3_R, 600, 60) == pytest.approx(stop, rel=1e-9,
                                                                              abs=0)
    assert F.ettr_stop_first_order((8192, 8192), LLAMA3_R, 600, 60, tau) == pytest.approx(
        stop, rel=1e-9, abs=0)
    assert F.ettr_rounds_first_order((4096,) * 4, LLAMA3_R, 600, (3.2,) * 4, 120) == \
        pytest.approx(rounds, rel=1e-9, abs=0)
    # uneven DCs: each weighted by its share of the workers
    r = 1e-4
    uneven = 1 - (1 / 4) * 1024 * r / 3600 * 700 - (3 / 4) * 3072 * r / 3600 * 710
    assert F.ettr_rounds_first_order((1024, 3072), r, 600, (0, 10), 100) == pytest.approx(
        uneven, rel=1e-9, abs=0)


def test_exact_forms_expand_to_the_first_order_ones():
    # small x: exact and first order agree to O(x^2); the rounds' exact form is never below
    for r in (1e-9, 1e-7):
        for n in ((64,), (16384,)):
            ex, fo = (F.ettr_stop_exact(n, r, 600, 60), F.ettr_stop_first_order(n, r, 600, 60))
            x = F.cluster_rate_per_s(n, r) * (600 + F.young_interval_s(n, r, 60))
            assert abs(ex - fo) <= x ** 2, (r, n)
        ex = F.ettr_rounds_exact((4096,) * 4, r * 1e3, 600, 3.2, 120)
        fo = F.ettr_rounds_first_order((4096,) * 4, r * 1e3, 600, 3.2, 120)
        x = 4096 * r * 1e3 / 3600 * 723.2
        assert 0 <= ex - fo <= x ** 2 / 2


# --- the engine ---

def test_rate_zero_keeps_every_second():
    for rule, kw in (("stop", {"checkpoint_write_s": 60.0}),
                     ("rounds", {"round_s": 7.0, "restore_s": (3.2, 5.0)})):
        run = simulate_failures(rule, workers=(3, 5), failure_rate_per_hour=0.0, restart_s=600,
                                duration_s=1e6, **kw)
        assert run.ettr == 1.0 and run.ettr_first_order == 1.0 and run.ettr_exact == 1.0, rule
        assert run.failures == 0 and run.failures_expected == 0.0 and run.ettr_se == 0.0
        assert run.kept_work_s == 1e6
    # with a fixed interval, the writes alone cost: tau / (tau + w) over whole cycles
    run = simulate_failures("stop", workers=(8,), failure_rate_per_hour=0.0, restart_s=0,
                            checkpoint_write_s=10.0, checkpoint_every_s=90.0, duration_s=1e5)
    assert run.ettr == pytest.approx(0.9, rel=1e-12, abs=0)


def _failure_times(seed, rates_per_s, horizon):
    """Each DC's failure times, drawn as the module's docstring says the engine draws them."""
    out = []
    for gen, rate in zip(np.random.default_rng(seed).spawn(len(rates_per_s)), rates_per_s):
        t = np.cumsum(gen.exponential(1 / rate, 4096))
        assert t[-1] > horizon
        out.append(t[t < horizon].tolist())
    return out


def _walk(fails, T, recovery_s, cycle_s, work_s, round_s=None):
    """Work kept in [0, T] by one unit failing at ``fails``: a plain walk, cycle by cycle."""
    def keep(a, b):  # an up stretch [a, b): its whole cycles, each work_s then the rest
        k, total = 0, 0.0
        while a + k * cycle_s < T and (b == math.inf or a + (k + 1) * cycle_s <= b):
            lo = a + k * cycle_s
            total += max(0.0, min(lo + work_s, T) - lo)
            k += 1
        return total

    kept, up, i = 0.0, 0.0, 0
    while i < len(fails):
        kept += keep(up, fails[i])
        t = fails[i]
        i += 1
        while True:  # recover; a failure before the unit is up again starts it over
            ready = t + recovery_s
            if round_s is not None:
                ready = math.ceil(ready / round_s) * round_s
            if i < len(fails) and fails[i] < ready:
                t = fails[i]
                i += 1
                continue
            up = ready
            break
    return kept + keep(up, math.inf)


@pytest.mark.parametrize("seed", [0, 7])
def test_engine_keeps_what_a_plain_walk_keeps(seed):
    # a few dozen failures, cycles a few times shorter than the MTBF: every rule of the
    # accounting (failures in restarts, in writes, while waiting for a boundary) is exercised
    T = 40_000.0
    r = 3600 / 1000 / 10  # 10 workers: lambda = 1 / 1000 s
    stop = simulate_failures("stop", workers=(4, 6), failure_rate_per_hour=r, restart_s=150,
                             checkpoint_write_s=40, checkpoint_every_s=200, duration_s=T,
                             seed=seed)
    times = _failure_times(seed, (4e-4, 6e-4), T + 240)
    merged = sorted(times[0] + times[1])
    assert stop.failures == sum(t <= T for t in merged)
    assert stop.ettr == pytest.approx(_walk(merged, T, 150, 240, 200) / T, rel=1e-12, abs=0)

    rounds = simulate_failures("rounds", workers=(4, 6), failure_rate_per_hour=r, restart_s=150,
                               restore_s=(20.0, 35.0), round_s=300, duration_s=T, seed=seed)
    times = _failure_times(seed, (4e-4, 6e-4), T + 300)
    kept = [_walk(t, T, 150 + b, 300, 300, round_s=300) for t, b in zip(times, (20.0, 35.0))]
    assert rounds.ettr == pytest.approx((4 * kept[0] + 6 * kept[1]) / (10 * T), rel=1e-12, abs=0)
    assert rounds.failures == sum(sum(x <= T for x in t) for t in times)


# sampled cells of the module's error table (events/failures.py docstring): rule, workers,
# u0, w or round_s, x. Shorter runs than the table's 150,000 failures: 25,000 each.
CELLS = [("stop", (64,), 600.0, 60.0, 0.01), ("stop", (16384,), 60.0, 60.0, 0.1),
         ("stop", (131072,), 3600.0, 60.0, 0.3), ("rounds", (4096,) * 4, 600.0, 120.0, 0.03),
         ("rounds", (32, 32), 600.0, 10.0, 0.3), ("rounds", (1024, 3072), 600.0, 600.0, 0.1)]


def _cell_run(rule, n, u0, second, x, seed=3, failures=25_000):
    if rule == "stop":
        r = F._stop_rate(x, u0, second, sum(n))
        kw = {"checkpoint_write_s": second}
    else:
        r = x / (max(n) * (u0 + 3.2 + second)) * 3600
        kw = {"round_s": second, "restore_s": 3.2}
    lam = F.cluster_rate_per_s(n, r)
    return simulate_failures(rule, workers=n, failure_rate_per_hour=r, restart_s=u0,
                             duration_s=failures / lam, seed=seed, **kw)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: f"{c[0]}-{'+'.join(map(str, c[1]))}-x{c[4]}")
def test_long_runs_meet_the_exact_form_and_the_stated_bound(cell):
    rule, n, u0, second, x = cell
    run = _cell_run(*cell)
    assert run.expansion == pytest.approx(x, rel=1e-9, abs=0)
    # the engine runs the model the exact forms describe: within 4 standard errors
    assert abs(run.ettr - run.ettr_exact) <= 4 * run.ettr_se, (run.ettr, run.ettr_exact)
    # the docstring's bound: |first order - engine| <= x^2 / 2, noise allowed for
    assert abs(run.first_order_error) <= x ** 2 / 2 + 4 * run.ettr_se
    if rule == "rounds":  # and the rounds' first order is never above the engine
        assert run.first_order_error <= 4 * run.ettr_se
    assert 0 < run.ettr_se < 0.01 * x


def test_the_stated_bound_holds_for_the_exact_forms_over_the_table():
    # the docstring's bound, for the long-run values the engine converges to, at every cell
    for n, u0, w in F.TABLE_STOP:
        for x in F.TABLE_X:
            r = F._stop_rate(x, u0, w, sum(n))
            err = F.ettr_stop_first_order(n, r, u0, w) - F.ettr_stop_exact(n, r, u0, w)
            assert abs(err) <= 0.35 * x ** 2, (n, u0, w, x)
    for n, rnd in F.TABLE_ROUNDS:
        for x in F.TABLE_X:
            r = x / (max(n) * (603.2 + rnd)) * 3600
            err = (F.ettr_rounds_first_order(n, r, 600, 3.2, rnd)
                   - F.ettr_rounds_exact(n, r, 600, 3.2, rnd))
            assert -x ** 2 / 2 <= err <= 0, (n, rnd, x)


def test_a_seed_gives_the_same_run():
    a, b = (_cell_run(*CELLS[0], seed=11, failures=3000) for _ in range(2))
    assert a == b
    c, d = (_cell_run(*CELLS[3], seed=11, failures=3000) for _ in range(2))
    assert (c.ettr, c.ettr_se, c.failures, c.kept_work_s) == (d.ettr, d.ettr_se, d.failures,
                                                              d.kept_work_s)
    other = _cell_run(*CELLS[0], seed=12, failures=3000)
    assert other.ettr != a.ettr and other.failures != a.failures


def test_goodput_is_cu_times_ettr():
    run = _cell_run(*CELLS[3], failures=2000)
    assert run.goodput(0.8) == pytest.approx(0.8 * run.ettr, rel=1e-15, abs=0)


GOOD = {"rule": "stop", "workers": (64,), "failure_rate_per_hour": 1e-3, "restart_s": 600,
        "duration_s": 1e6}
ROUNDS = {**GOOD, "rule": "rounds", "workers": (32, 32), "round_s": 120.0}


@pytest.mark.parametrize("base, change, names", [
    (GOOD, {"rule": "sometimes"}, "rule = 'sometimes'"),
    (GOOD, {"workers": ()}, "workers = ()"),
    (GOOD, {"workers": (64, 0)}, "workers = (64, 0)"),
    (GOOD, {"workers": (64.0,)}, "workers = (64.0,)"),
    (GOOD, {"workers": None}, "workers = None"),
    (ROUNDS, {"workers": (64,)}, "at least 2 DCs"),
    (GOOD, {"failure_rate_per_hour": -1e-3}, "failure_rate_per_hour = -0.001"),
    (GOOD, {"failure_rate_per_hour": math.nan}, "failure_rate_per_hour = nan"),
    (GOOD, {"failure_rate_per_hour": math.inf}, "failure_rate_per_hour = inf"),
    (GOOD, {"failure_rate_per_hour": True}, "failure_rate_per_hour = True"),
    (GOOD, {"restart_s": math.inf}, "restart_s = inf"),
    (GOOD, {"restart_s": math.nan}, "restart_s = nan"),
    (GOOD, {"checkpoint_every_s": 0}, "checkpoint_every_s = 0"),
    (GOOD, {"checkpoint_every_s": -5.0}, "checkpoint_every_s = -5.0"),
    (GOOD, {"checkpoint_write_s": -1.0}, "checkpoint_write_s = -1.0"),
    (GOOD, {"duration_s": 0}, "duration_s = 0"),
    (GOOD, {"duration_s": -1.0}, "duration_s = -1.0"),
    (GOOD, {"duration_s": math.inf}, "duration_s = inf"),
    (ROUNDS, {"round_s": 0.0}, "round_s = 0.0"),
    (ROUNDS, {"round_s": -10.0}, "round_s = -10.0"),
    (ROUNDS, {"round_s": None}, "round_s = None"),
    (ROUNDS, {"restore_s": (1.0,)}, "restore_s = (1.0,)"),
    (ROUNDS, {"restore_s": (1.0, math.nan)}, "restore_s[1] = nan"),
    (ROUNDS, {"checkpoint_write_s": 60.0}, "checkpoint_write_s = 60.0"),
    (GOOD, {"round_s": 120.0}, "round_s = 120.0"),
    (GOOD, {"restore_s": 3.2}, "restore_s = 3.2"),
    (GOOD, {"seed": -1}, "seed = -1"),
    (GOOD, {"seed": 2 ** 63}, f"seed = {2 ** 63}"),
    (GOOD, {"seed": 1.5}, "seed = 1.5"),
    (GOOD, {"seed": True}, "seed = True"),
    (GOOD, {"max_failures": 0}, "max_failures = 0"),
])
def test_bad_input_names_the_argument_its_value_and_what_is_allowed(base, change, names):
    kw = {**base, **change}
    rule = kw.pop("rule")
    with pytest.raises(ValueError, match="must|give|needs|leave") as e:
        simulate_failures(rule, **kw)
    assert names in str(e.value)


def test_largest_seed_is_allowed():
    run = simulate_failures(**{**GOOD, "duration_s": 1e3, "seed": 2 ** 63 - 1})
    assert run.seed == 2 ** 63 - 1


class _Counting:
    """simpy.Environment, counted."""

    made = 0
    real = F.simpy.Environment

    def __new__(cls, *args, **kwargs):
        cls.made += 1
        return cls.real(*args, **kwargs)


def test_an_over_budget_run_is_refused_before_any_simulation(monkeypatch):
    monkeypatch.setattr(F.simpy, "Environment", _Counting)
    _Counting.made = 0
    big = dict(workers=(16384,), failure_rate_per_hour=LLAMA3_R, restart_s=600,
               checkpoint_write_s=60, duration_s=3600 * 3.09 * 1e7, max_failures=1e6)
    lam = F.cluster_rate_per_s((16384,), LLAMA3_R)
    tau = F.young_interval_s((16384,), LLAMA3_R, 60)
    expected = lam * (big["duration_s"] + tau + 60)  # the run and its settling cycle
    with pytest.raises(FailureBoundError,
                       match=re.escape(f"about {expected:.3g} failures")) as e:
        simulate_failures("stop", **big)
    assert isinstance(e.value, ValueError) and "max_failures = 1e+06" in str(e.value)
    assert "fit_duration_s" in str(e.value)
    assert _Counting.made == 0
    # the helper shortens it to the bound and says so; that run goes ahead
    small = {**big, "max_failures": 500}
    duration, note = fit_duration_s("stop", **{k: v for k, v in small.items()
                                               if k != "restart_s"})
    assert duration < big["duration_s"] and "instead of" in note and "max_failures" in note
    assert lam * (duration + tau + 60) == pytest.approx(500, rel=1e-12, abs=0)
    run = simulate_failures("stop", **{**small, "duration_s": duration})
    assert _Counting.made == 1 and 400 < run.failures < 600
    assert fit_duration_s("stop", workers=(64,), failure_rate_per_hour=1e-3,
                          duration_s=1e6) == (1e6, None)


def test_events_still_never_loads_jax():
    code = ("import sys, events, events.failures; "
            "events.simulate_failures('rounds', workers=(2, 2), failure_rate_per_hour=1.0, "
            "restart_s=60, round_s=10, duration_s=3600); "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', "
            "'jaxlib'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]", out.stdout
    assert events.FailureRun is F.FailureRun
