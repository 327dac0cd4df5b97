"""The reference report: ``results.json`` and ``results.md``.

A report is a list of sections (:data:`SECTIONS`). Each section is a module with

    KEY                    heading order is the list's order
    build(scenario, ctx)   -> dict merged into results.json (JSON-ready: floats, lists, dicts)
    markdown(results)      -> str, the section of results.md, read from the results dict alone

``ctx`` is a dict shared by the sections of one report (for example an output folder for
figures under ``ctx["out"]``, or results computed once and reused).
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

from .._io import atomic_write_text
from ..scenario import Scenario, reference

SECTIONS = (
    "bandjax.report.core",
    "bandjax.report.breakeven",
    "bandjax.report.shared_wan",
    "bandjax.report.uncertainty",
    "bandjax.report.figures",  # last: it draws every earlier section's results
)

SCHEMA_VERSION = 1


def _json_ready(x):
    """Floats that JSON cannot hold become null (NaN) or the string "inf"."""
    if isinstance(x, dict):
        return {str(k): _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:
        x = x.item()
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def build(scenario: Scenario | None = None, ctx: dict | None = None) -> dict:
    """Every section's results for ``scenario``, as one JSON-ready dict."""
    sc = reference() if scenario is None else scenario
    ctx = {} if ctx is None else ctx
    results: dict = {"schema_version": SCHEMA_VERSION}
    ctx["results"] = results  # a section may read the sections before it
    for path in SECTIONS:
        results.update(importlib.import_module(path).build(sc, ctx))
    return _json_ready(results)


def markdown(results: dict) -> str:
    parts = [importlib.import_module(path).markdown(results) for path in SECTIONS]
    return "\n\n".join(p.strip() for p in parts if p.strip()) + "\n"


def write(out: str | Path, scenario: Scenario | None = None) -> dict[str, Path]:
    """Write results.json and results.md into ``out``; each file appears whole or not at all."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = build(scenario, {"out": out})
    text = json.dumps(results, indent=1, allow_nan=False)
    md = markdown(results)
    paths = {"json": out / "results.json", "md": out / "results.md"}
    atomic_write_text(paths["json"], text + "\n")
    atomic_write_text(paths["md"], md)
    return paths
