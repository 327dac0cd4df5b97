"""The report's grids and labels, defined once: results.json, results.md, the figures and the
explorer page all read them from here."""

from __future__ import annotations

from ..metrics import NEVER, NOT_MEASURED, OK

BUDGETS = ("free", "low", "high")  # the module budgets every table shows
BANDWIDTH_RANGE_GBps = (0.1, 1000.0)  # the searched and drawn WAN range, docs/model.md section 10
POINTS_PER_DECADE = 40  # the bandwidth curves' grid
BUDGET_RANGE_GFLOPs = (1.0, 1000.0)  # the stages chart's budget axis
H_VALUES = (1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 100, 128, 1000)  # sync every H steps
ENERGY_PARTS = ("compute", "network", "modules")  # summed, they are the total
DCS = tuple(range(2, 17))  # K, the number of data centres in "Your cluster"
TOPOLOGIES = ("ring", "mesh")
STATUS = {OK: "ok", NEVER: "never", NOT_MEASURED: "not measured"}  # why a time is not a number
"""The one spelling of each status: "never" = measured, never reaches the target."""
