"""Strict numerics for every test: 64-bit floats, warnings are errors (pyproject filterwarnings).

One test run shares a fresh temporary folder, removed at its end: JAX's compilation cache on
disk (the workers of pytest-xdist and the command-line subprocesses compile the same functions
once between them) and the reference report, built once (by the first worker to ask for it, the
others waiting on a lock).
"""

import fcntl
import json
import os
import pickle
import shutil
import subprocess
import tempfile
from pathlib import Path

FIRST = "BANDJAX_TEST_SHARED" not in os.environ  # the run's first process (not an xdist worker)
if FIRST:
    os.environ["BANDJAX_TEST_SHARED"] = tempfile.mkdtemp(prefix="bandjax-test-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(os.environ["BANDJAX_TEST_SHARED"], "jax-cache")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.2"
    # a bound makes JAX lock the folder around each entry: the two workers (and subprocesses)
    # share it, and an entry read while another process writes it crashed a worker
    os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(2 * 2**30)
    # bandjax's own cache (bandjax._jax) keeps out of the way of the one above; a subprocess
    # that drops JAX_COMPILATION_CACHE_DIR still writes here, never in the user's ~/.cache
    os.environ["XDG_CACHE_HOME"] = os.path.join(os.environ["BANDJAX_TEST_SHARED"], "xdg-cache")
    # pytest-xdist runs a worker per core (pyproject's addopts): XLA's own thread pools, sized to
    # every core, would oversubscribe them (172 s against 199 s for the suite on 2 cores)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
                               " intra_op_parallelism_threads=1").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs",
                  float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))
jax.config.update("jax_compilation_cache_max_size", int(os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"]))


import pytest  # noqa: E402


SHARED = Path(os.environ["BANDJAX_TEST_SHARED"])
ROOT = Path(__file__).resolve().parents[1]


def _untracked() -> set[str] | None:
    """Files in the repository that git neither tracks nor ignores (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return set(out.splitlines())


UNTRACKED_BEFORE = _untracked() if FIRST else None
REPORT = SHARED / "reference_report"  # rep/ (the report), sweeps.pickle, sweep_calls.json, done


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     help="also run the tests marked slow (subprocesses, notebooks, the benchmark "
                          "smoke run, kill tests); CI runs them")


def pytest_sessionfinish(session, exitstatus):
    """Tests write only under temporary folders: a file that a test left in the repository fails
    the run, named."""
    if not FIRST or UNTRACKED_BEFORE is None:
        return
    left = sorted((_untracked() or set()) - UNTRACKED_BEFORE)
    if left:
        print(f"\nthe tests left {len(left)} new file(s) in the repository: {', '.join(left[:20])}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    if FIRST:
        shutil.rmtree(SHARED, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    # Under pytest-xdist (-n 2 --dist loadfile --no-loadscope-reorder, files in this order): the
    # module that reads the reference report most goes first, so one worker builds the report
    # while the other runs the modules that do not need it; the other readers go last.
    readers = [item.module.__name__ for item in items if "reference_report" in item.fixturenames]
    first = max(set(readers), key=readers.count, default=None)
    items.sort(key=lambda item: 0 if item.module.__name__ == first else
               2 if item.module.__name__ in readers else 1)  # stable: file order otherwise
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def small_shared_wan_runs():
    """Report-level tests run the shared-WAN section at a small size, in this process; the
    engine's own tests (tests/test_events*.py) check it at the sizes they need."""
    from bandjax import _wan_runs  # the section's run options (sized and started there)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_wan_runs, "SEEDS", 2)
        mp.setattr(_wan_runs, "STEPS", 20)
        mp.setattr(_wan_runs, "SCHEDULER", "inline")
        yield


def _build_reference_report() -> None:
    """Write the reference report into REPORT/rep (with every call of sweep made while it is
    built, for tests/test_schema.py, and its pass of sweeps pickled), then REPORT/done. Called
    by the fixture below, so with the small shared-WAN runs."""
    import bandjax
    from bandjax import report
    from bandjax.report import passes
    from bandjax.report.sections import bandwidth

    REPORT.mkdir(exist_ok=True)
    sweeps, calls = {}, {"passes": [], "views": []}
    build = report.build

    def keep(scenario=None, ctx=None):
        ctx = {} if ctx is None else ctx
        try:
            return build(scenario, ctx)
        finally:
            sweeps["pass"] = ctx.get("sweeps")

    def counted(module, key):
        real = module.sweep
        return lambda *a, **k: calls[key].append(sorted(k)) or real(*a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "build", keep)
        mp.setattr(passes, "sweep", counted(passes, "passes"))
        mp.setattr(bandwidth, "sweep", counted(bandwidth, "views"))
        report.write(REPORT / "rep", bandjax.reference())
    (REPORT / "sweep_calls.json").write_text(json.dumps(calls))
    (REPORT / "sweeps.pickle").write_bytes(pickle.dumps(sweeps["pass"]))
    (REPORT / "done").write_text("")


@pytest.fixture(scope="session")
def reference_report(small_shared_wan_runs):
    """The reference report, built once per test run for every report and page test: (folder,
    results dict as written to results.json, results.md text, the one pass of sweeps it was
    built from)."""
    with open(SHARED / "reference_report.lock", "w") as lock:  # one builds, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (REPORT / "done").exists():
            _build_reference_report()
    rep = REPORT / "rep"
    return (rep, json.loads((rep / "results.json").read_text()), (rep / "results.md").read_text(),
            pickle.loads((REPORT / "sweeps.pickle").read_bytes()))


@pytest.fixture(scope="session")
def uncertain_section():
    """The report's uncertainty section for the reference scenario with uncertain inputs (E's
    steps as three seeds, E''s d log-normal), 200 samples: (scenario, results as JSON gives them
    back). Shared by the section's tests and the page's."""
    import bandjax
    from bandjax import uncertainty as U
    from bandjax.report import _json_ready
    from bandjax.report.sections import uncertainty as section

    sc = bandjax.reference().replace(uncertain=(
        ("steps.band_pluggable", U.Seeds([1800, 1650, 2010])),
        ("fixed_s.band_switch", U.LogNormal(0.0227e-3, 0.2))))
    part = section.build(sc, {"uncertainty_samples": 200}).to_json()
    return sc, json.loads(json.dumps(_json_ready(part)))
