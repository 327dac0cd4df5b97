"""bandjax: when does computing a band of the gradient in transit pay?

Closed forms of the reference model (``docs/model.md``) as pure JAX functions over labelled grids.
The public API is what this module exports; everything else is an implementation detail.

Exports load lazily (PEP 562): ``import bandjax.scenario`` (the event engine, the CLI's help) does
not load jax; the first use of an export here does, with 64-bit floats on and the scenario
registered as a PyTree (:mod:`bandjax._jax`).
"""

import importlib
# the C module under `signal`: a builtin, loaded at once, where `signal` builds its enums in Python
# first (a Ctrl-C in those few hundred microseconds came before any handler could be set)
import _signal
import sys as _sys


def _command_line() -> bool:
    """Whether this process is the ``bandjax`` command: ``python -m bandjax`` (the interpreter
    names the module "-m" while it finds it) or the installed console script.

    The script (``bandjax = "bandjax.cli:main"``) imports bandjax.cli, every command module and
    the units, before ``main`` runs, so its handler is installed here, when the package is first
    imported, rather than in an entry point of its own: a new entry point would only reach the
    scripts installed after it, this reaches every installed copy. The script is known by its
    name, with the suffixes installers give it on Windows (``bandjax.exe``, ``bandjax-script.py``)."""
    argv = getattr(_sys, "argv", None) or [""]
    if argv[0] == "-m":
        return True
    name = argv[0].replace("\\", "/").rpartition("/")[2]
    for suffix in (".exe", "-script.pyw", "-script.py"):
        name = name.removesuffix(suffix)
    return name == "bandjax"


# The command line is starting: a Ctrl-C from here on is one line and status 130 (bandjax._io).
# Until that module has loaded, a handler that needs nothing more than os. A process started with
# Ctrl-C ignored (a background job, nohup) keeps ignoring it.
if _command_line() and _signal.getsignal(_signal.SIGINT) != _signal.SIG_IGN:
    import os as _os

    def _early_interrupt(signum, frame):
        _os.write(2, b"bandjax: interrupted\n")
        _os._exit(130)

    _signal.signal(_signal.SIGINT, _early_interrupt)
    from ._io import install_interrupt as _install_interrupt

    _install_interrupt()

# export -> the module that defines it
_EXPORTS = {
    "BASES": "scenario", "GPUS": "scenario", "PRESETS": "scenario", "Scenario": "scenario",
    "ScenarioError": "units", "Steps": "scenario", "load": "scenario", "reference": "scenario",
    "save": "scenario",
    "Rule": "variants", "Variant": "variants", "METHODS": "variants",
    "Links": "links", "Sites": "sites",
    "required_bandwidth": "need",
    "tolerated_tail": "tolerance",
    "site_value": "sitevalue",
    "Calibration": "calibration", "calibrate": "calibration",
    "break_even": "answers", "budget_break_even": "breakeven", "enob_break_even": "breakeven",
    "QUANTITIES": "grid", "sweep": "answers",
    "smallest_change": "inverse",
    "evaluate": "metrics", "pacing_links": "metrics", "steps_to_target": "metrics", "time_to_target_s": "metrics",
    "find_crossings": "roots",
    "elasticities": "sensitivity",
    "COMPONENTS": "step", "STAGES": "step", "module_stages_s": "step", "step_s": "step",
    "compute_utilisation": "step",
    "step_terms_s": "step",
    "best_over": "winmap", "winner": "winmap",
}
_MODULES = ("links", "sites", "store", "uncertainty", "variants")

__all__ = [
    "BASES",
    "COMPONENTS",
    "Calibration",
    "GPUS",
    "Links",
    "METHODS",
    "PRESETS",
    "QUANTITIES",
    "Rule",
    "Sites",
    "STAGES",
    "Scenario",
    "ScenarioError",
    "Steps",
    "Variant",
    "best_over",
    "break_even",
    "budget_break_even",
    "calibrate",
    "compute_utilisation",
    "elasticities",
    "enob_break_even",
    "evaluate",
    "find_crossings",
    "links",
    "load",
    "module_stages_s",
    "pacing_links",
    "reference",
    "required_bandwidth",
    "save",
    "sites",
    "smallest_change",
    "step_s",
    "step_terms_s",
    "store",
    "steps_to_target",
    "site_value",
    "sweep",
    "time_to_target_s",
    "tolerated_tail",
    "uncertainty",
    "variants",
    "winner",
]


def __getattr__(name):
    if name in _EXPORTS and _EXPORTS[name] != "units":
        # The public API is the model's: a Scenario from here is a PyTree at once (jax, x64 on).
        importlib.import_module("._jax", __name__)
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _MODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'bandjax' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
