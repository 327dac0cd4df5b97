"""The report's figures: every page section's charts written as ``figures/<id>.svg`` and ``.png``
into the report's folder, and embedded in results.md.

Run by the report after every section of :data:`bandjax.report.sections.SECTIONS` has been built,
it draws them as results.json holds them (the same views and charts as the page, with the page's
controls fixed at the scenario's setting). vl-convert draws them in a helper process while the
next charts are built, and a figure drawn before is read back from the figure cache
(:class:`bandjax.report.render.Drawer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._io import atomic_write_bytes
from ..scenario import Scenario
from . import passes
from .render import Drawer, collect, each_chart, figure_cache_dir, helpers_wanted
from .sections.common import Results, Section, _json_ready, to_spec

FIGURES_DIR = "figures"


@dataclass(frozen=True)
class Figures(Section):
    """The figures written (paths relative to the report folder) and, per page section, the words
    printed beside them."""

    KEY: ClassVar[str] = "figures"
    FLAT: ClassVar[bool] = True

    figures: list  # {id, section, title, svg, png}
    figure_sections: list | None = None  # {section, title, conclusion, ...}; with figures


KEY = Figures.KEY


def build(scenario: Scenario, ctx: dict) -> Figures:
    """Write every figure into ``ctx["out"]/figures`` (when there is an output folder), drawn from
    the sections built before (``ctx["sections"]``) as results.json holds them."""
    out = ctx.get("out")
    if out is None:
        return Figures(figures=[])
    from pathlib import Path

    from tqdm import tqdm

    folder = Path(out) / FIGURES_DIR
    entries = []
    # the drawer's helper processes start up while the views are read
    with Drawer(figure_cache_dir(), start=True, helpers=helpers_wanted()) as drawer:
        done = ctx.get("sections") or Results()
        # as a page read from results.json sees it
        results = Results.of(_json_ready(done.to_json()))
        views = collect(scenario, results, passes.of(scenario, ctx))
        by = {v.key: v for v in views}
        # each chart goes to the drawer as soon as it is built, drawn while the next ones are
        drawing = []
        for fid, key, chart, data in each_chart(views, scenario):
            try:
                drawing.append((fid, key, drawer.submit(to_spec(chart, data))))
            except Exception as e:  # noqa: BLE001 - said in its place, in the figures' order
                drawing.append((fid, key, e))
        # a bar only where the caller shows progress (the command line without --quiet)
        for fid, key, handle in tqdm(drawing, desc="figures", unit="figure", leave=False,
                                     disable=ctx.get("progress") is None):
            try:
                if isinstance(handle, Exception):
                    raise handle
                svg, png = handle.result()
            except Exception as e:  # noqa: BLE001 - the section's words say so
                by[key].missing.append(f"The figure {fid} could not be drawn: "
                                       f"{type(e).__name__}: {e}")
                continue
            atomic_write_bytes(folder / f"{fid}.svg", svg)
            atomic_write_bytes(folder / f"{fid}.png", png)
            entries.append({"id": fid, "section": key, "title": by[key].title,
                            "svg": f"{FIGURES_DIR}/{fid}.svg", "png": f"{FIGURES_DIR}/{fid}.png"})
    sections = [{"section": v.key, "title": v.title, "conclusion": v.conclusion,
                 "assumptions": v.assumptions, "missing": v.missing} for v in views]
    return Figures(figures=entries, figure_sections=sections)


def markdown(results: Results | dict) -> str:
    results = Results.of(results)
    entries = results.figures.figures if results.figures else []
    if not entries:
        return ""
    parts = ["## Figures"]
    for s in results.figures.figure_sections or []:
        figs = [e for e in entries if e["section"] == s["section"]]
        parts.append(f"### {s['title']}")
        for e in figs:
            parts.append(f"![{s['title']}]({e['svg']})\n\n(PNG: [{e['png']}]({e['png']}))")
        parts += s["conclusion"]
        parts += [f"*Not available yet:* {m}" for m in s["missing"]]
        if s["assumptions"]:
            parts.append("Assumptions: " + " ".join(s["assumptions"]))
    return "\n\n".join(parts)

