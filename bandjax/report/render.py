"""What the page and the figures share: every section's view and chart, and a chart as SVG and PNG.

The page shell (:mod:`.explorer`) and the report's figures (:mod:`.figure_files`) draw the same
views and charts, from :data:`bandjax.report.sections.SECTIONS`.
"""

from __future__ import annotations

from ..scenario import Scenario
from . import passes
from . import sections as _sections
from .passes import Sweeps
from .sections.common import Results, View, registry, vl_version


def collect(sc: Scenario, results: Results | dict | None = None,
            sweeps: Sweeps | None = None, sections=None) -> list[View]:
    """Every view of the page, in the page's order, read from the report's one pass ``sweeps``
    (computed here when not given) and its typed sections ``results`` (a results dict is read
    into them, strictly; an absent section is said to be missing)."""
    results = Results.of(results)
    sw = passes.compute(sc) if sweeps is None else sweeps
    views: dict[str, View] = {}
    with registry(sc):
        for section in _sections.page_order(sections):
            try:
                view = section.view(sc, results, sw, views)
            except Exception as e:  # noqa: BLE001 - said in the section's place
                view = View(section.KEY, _title(section))
                view.missing.append(f"Could not be drawn for this scenario: "
                                    f"{type(e).__name__}: {e}")
            why = results.explained.get(section.KEY)
            if why is not None:  # the reason, before the generic "not available" lines
                view.missing.insert(0, why["why"])
            views[section.KEY] = view
    return list(views.values())


def _title(section) -> str:
    return getattr(section, "TITLE", section.KEY.replace("_", " ").capitalize())


def charts(views: list[View], sc: Scenario, interactive: bool = False, sections=None) -> dict:
    """chart id -> (section key, Altair chart, datasets), in the page's order; a view whose
    charts cannot be drawn has none (its words say what it has)."""
    by_key = {s.KEY: s for s in _sections.page_order(sections)}
    out: dict = {}
    with registry(sc):
        for v in views:
            try:
                drawn = by_key[v.key].charts(v, sc, interactive)
            except Exception as e:  # noqa: BLE001
                v.missing.append(f"Its charts could not be drawn for this scenario: "
                                 f"{type(e).__name__}: {e}")
                continue
            for cid, (chart, data) in drawn.items():
                out[cid] = (v.key, chart, data)
    return out


PNG_SCALE = 2  # PNG pixels per SVG pixel


def render(spec: dict) -> tuple[bytes, bytes]:
    """(SVG, PNG) of a Vega-Lite spec, rendered offline by vl-convert.

    The spec is compiled and laid out once, into the SVG; the PNG is that SVG rasterised (what
    ``vegalite_to_png`` does after laying the spec out a second time: the same bytes, in about
    a third of the time)."""
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(spec, vl_version=vl_version())
    png = vlc.svg_to_png(svg, scale=PNG_SCALE)
    return svg.encode("utf-8"), png
