"""A report section made for the tests: one module, as a new section of bandjax.report.sections
is. It reads the core section's step times back and shows them as a table and a chart, so a test
can check that one module and one list entry put a section in results.json, results.md, the
figures and the page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import altair as alt

from bandjax.report.sections.common import HEIGHT, WIDTH, Results, Section, View, _finish

KEY = "fixture_steps"


@dataclass(frozen=True)
class FixtureSteps(Section):
    """Each variant's step time at the scenario's budget (ms), as the core section has it."""

    KEY: ClassVar[str] = KEY

    step_ms: dict  # [variant] ms


def build(scenario, ctx: dict) -> FixtureSteps:
    core = ctx["sections"].core
    budget = "free"
    return FixtureSteps(step_ms={vid: by[budget] for vid, by in core.step_ms.items()})


def markdown(results: Results) -> str:
    r = results.fixture_steps
    if r is None:
        return ""
    rows = "\n".join(f"| {vid} | {ms:.6g} |" for vid, ms in r.step_ms.items())
    return f"## Fixture steps\n\n| variant | step (ms) |\n|---|---|\n{rows}"


def view(scenario, results: Results, sw, views: dict) -> View:
    v = View(key=KEY, title="Fixture steps")
    r = results.fixture_steps
    if r is None:
        v.lacks("Fixture steps", KEY)
        return v
    v.data["steps"] = [{"variant": vid, "ms": ms} for vid, ms in r.step_ms.items()]
    v.table = {"columns": ["variant", "step (ms)"],
               "rows": [[vid, f"{ms:.6g}"] for vid, ms in r.step_ms.items()],
               "caption": "Step time at [free], from the core section."}
    v.say(f"{len(r.step_ms)} variants drawn.")
    return v


def charts(view: View, scenario, interactive: bool = False) -> dict:
    chart = alt.Chart(alt.NamedData(name="steps")).mark_bar().encode(
        x=alt.X("variant:N"), y=alt.Y("ms:Q", title="step (ms)")).properties(width=WIDTH,
                                                                           height=HEIGHT)
    return {KEY: (_finish(chart), {"steps": view.data.get("steps", [])})}
