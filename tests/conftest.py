"""Strict numerics for every test: 64-bit floats, warnings are errors (pyproject filterwarnings)."""

import jax

jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def small_shared_wan_runs():
    """Report-level tests run the shared-WAN section at a small size, in this process; the
    engine's own tests (tests/test_events*.py) check it at the sizes they need."""
    from bandjax.report import shared_wan

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shared_wan, "SEEDS", 2)
        mp.setattr(shared_wan, "STEPS", 20)
        mp.setattr(shared_wan, "SCHEDULER", "inline")
        yield


@pytest.fixture(scope="session")
def reference_report(tmp_path_factory, small_shared_wan_runs):
    """The reference report, built once for every report and page test: (folder, results dict as
    written to results.json, results.md text, the one pass of sweeps it was built from)."""
    import json

    import bandjax
    from bandjax import report

    out = tmp_path_factory.mktemp("reference_report")
    sweeps = {}
    build = report.build

    def keep(scenario=None, ctx=None):
        ctx = {} if ctx is None else ctx
        try:
            return build(scenario, ctx)
        finally:
            sweeps["pass"] = ctx.get("sweeps")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "build", keep)
        paths = report.write(out / "rep", bandjax.reference())
    results = json.loads(paths["json"].read_text())
    return out / "rep", results, paths["md"].read_text(), sweeps["pass"]
