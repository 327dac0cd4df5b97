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
