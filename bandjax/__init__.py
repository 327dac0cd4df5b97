"""bandjax: when does computing a band of the gradient in transit pay?

Closed forms of the reference model (``shared/model.md``) as pure JAX functions over labelled grids.
The public API is what this module exports; everything else is an implementation detail.
"""

import jax as _jax

# Byte counts of billion-parameter models and sub-microsecond terms need 64-bit floats.
_jax.config.update("jax_enable_x64", True)

from . import store, variants  # noqa: E402
from .breakeven import break_even, budget_break_even, enob_break_even  # noqa: E402
from .grid import QUANTITIES, sweep  # noqa: E402
from .inverse import smallest_change  # noqa: E402
from .metrics import evaluate, steps_to_target, time_to_target_s  # noqa: E402
from .roots import find_crossings  # noqa: E402
from .scenario import (  # noqa: E402
    BASES,
    PRESETS,
    Scenario,
    ScenarioError,
    Steps,
    load,
    reference,
    save,
)
from .sensitivity import elasticities  # noqa: E402
from .step import COMPONENTS, STAGES, module_stages_s, step_s, step_terms_s  # noqa: E402

__all__ = [
    "BASES",
    "COMPONENTS",
    "PRESETS",
    "QUANTITIES",
    "STAGES",
    "Scenario",
    "ScenarioError",
    "Steps",
    "break_even",
    "budget_break_even",
    "elasticities",
    "enob_break_even",
    "evaluate",
    "find_crossings",
    "load",
    "module_stages_s",
    "reference",
    "save",
    "smallest_change",
    "step_s",
    "step_terms_s",
    "store",
    "steps_to_target",
    "sweep",
    "time_to_target_s",
    "variants",
]
