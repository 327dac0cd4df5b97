"""Where the names of the old catch-all modules ``bandjax.report.views`` and ``.figures`` went.

Each old name resolves to its new home and warns once (``DeprecationWarning``) naming it."""

from __future__ import annotations

import importlib
import warnings

_COMMON = "bandjax.report.sections.common"
_SECTION_NAMES = {
    "bandwidth": ("bandwidth_view", "bandwidth_chart", "DOTS_LEGEND"),
    "stages": ("stages_view", "stages_chart", "STAGE_COLORS"),
    "breakeven": ("breakeven_view", "breakeven_chart", "comparison_pairs", "HARDWARE_GROUPS"),
    "shared_wan": ("shared_wan_view", "shared_wan_charts", "ENGINE_LEGEND", "APPROX_LEGEND"),
    "model": ("model_view", "model_chart"),
    "sync_h": ("h_view", "h_chart"),
    "energy": ("energy_view", "energy_chart", "PART_COLORS"),
    "cluster": ("cluster_view", "cluster_charts", "cluster_time_panel", "cluster_break_even_panel",
                "WINNER_LEGEND"),
    "uncertainty": ("uncertainty_view", "uncertainty_chart", "INTERVAL_LEGEND"),
}
HOMES = {name: f"bandjax.report.sections.{mod}" for mod, names in _SECTION_NAMES.items()
         for name in names}
HOMES.update({"collect": "bandjax.report.render", "charts": "bandjax.report.render",
              "render": "bandjax.report.render", "build": "bandjax.report.figure_files",
              "markdown": "bandjax.report.figure_files", "FIGURES_DIR": "bandjax.report.figure_files",
              "KEY": "bandjax.report.figure_files"})
# the views module also re-exported these from the report's pass and constants
_ALSO = {"sweep": "bandjax.grid", "bandwidth_grid_GBps": "bandjax.report.passes",
         "POINTS_PER_DECADE": "bandjax.report.constants"}
_warned: set[str] = set()


def forwarder(module: str, old: str):
    """A module ``__getattr__`` that finds each old name's new home and warns once per name."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        home = HOMES.get(name) or _ALSO.get(name) or _COMMON
        value = getattr(importlib.import_module(home), name, _missing)
        if value is _missing:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        key = f"{old}.{name}"
        if key not in _warned:
            _warned.add(key)
            warnings.warn(f"bandjax.report.{old}.{name} moved to {home}.{name}; import it from there",
                          DeprecationWarning, stacklevel=2)
        return value

    return __getattr__


_missing = object()
