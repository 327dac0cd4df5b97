"""The report's sections: one module per section, and :data:`SECTIONS`, the one list of them.

A section module holds its whole concern: its typed result, how it is built, how it is written in
results.md, its page view and its chart. :mod:`.common` beside them holds what they share (the
:class:`~.common.Section` base, the :class:`~.common.Results` container, the page's
:class:`~.common.View`, formatting, tidy rows, colours, chart helpers); it imports no section.

Adding a section is one module here and one entry in :data:`SECTIONS`. The module defines

``KEY``
    its key: the results.json key (a ``FLAT`` section's fields sit at the top level instead) and
    the page section's id.

A report part (results.json and results.md), optional:

``class <Name>(Section)``
    a frozen dataclass with ``KEY: ClassVar[str] = KEY``; its fields are JSON-ready values with
    the unit in the name. Defining it makes :class:`~.common.Results` know the key (``results.<KEY>``,
    ``Results.of(json)`` reads it back strictly).
``build(scenario, ctx) -> <Name>``
    computes it once. ``ctx`` is the report's shared dict: ``ctx["sections"]``, the
    :class:`~.common.Results` built so far (a later section reads an earlier one); the report's
    one pass of the closed forms through :func:`bandjax.report.passes.of`.
``markdown(results) -> str``
    its part of results.md, rendered from the typed :class:`~.common.Results` alone.
``start(scenario, ctx)``, ``close(ctx)``
    (optional) begin, before the report's first section, the work that needs nothing from the
    sections before this one, in a thread (:func:`.common.start_ahead`) or in worker processes,
    for ``build`` to collect; ``close`` drops what ``build`` did not collect (the report always
    calls it). A section without them, or built alone, does its work in ``build``.
``applies(scenario) -> bool``
    (optional) whether the section belongs in this scenario's report at all; where it does not,
    it is neither built nor explained nor drawn (a section for a setting the scenario leaves at
    its default, such as failures), so the report is what it was without it.
``LEAD = True``
    (optional) its markdown comes right after the title (the headline).

A page part (the explorer page and the report's figures), optional:

``view(scenario, results, sweeps, views) -> View``
    the numbers and words of its page section, read from ``results`` (typed) and ``sweeps``
    (:class:`bandjax.report.passes.Sweeps`); ``views`` holds the views drawn before it, by key.
    A section the results lack is said to be missing (``View.lacks``), never filled in.
``charts(view, scenario, interactive=False) -> dict``
    chart id -> (Altair chart, datasets), built from the view alone; ``interactive`` reads the
    page's controls from Vega signals, otherwise they are fixed at the scenario's setting. Each
    chart is also written as ``figures/<id>.svg`` and ``.png`` by the report.
``page_html(view, specs, page) -> dict``, ``extra_tables(view)``, ``CHART_GRID``, ``PAGE_AFTER``
    (optional) HTML above the charts (``"top"``) or below them (``"after_charts"``); more tables
    below its own; charts side by side; a place on the page after another section's key, where
    the page's order differs from the list's.

The list's order is the order of results.json, results.md and the page. Sections that build run
in it (the report writes the figures after them, :mod:`bandjax.report.figure_files`); the page
draws every section that has a view. A section left out (``--sections`` / ``--skip``) or whose
``build`` raises is kept in results.json's ``explained`` with the reason, which results.md and its
page section show in its place (:attr:`.common.Results.explained`); the others are built. A section
sizes its own work from the scenario before it starts (the shared WAN's
:func:`.shared_wan.size_runs`).
"""

from __future__ import annotations

# in the list's order, which is the order Results knows the typed sections in
from . import common  # isort: skip
from . import core  # isort: skip
from . import bandwidth, stages, breakeven, cluster, shared_wan  # isort: skip
from . import model, sync_h, energy, uncertainty, need, failures, sites, headline  # isort: skip
from .breakeven import BreakEvens
from .cluster import Cluster
from .failures import Failures
from .common import Results, Section, View
from .core import Core
from .headline import Headline
from .need import Need
from .shared_wan import SharedWan
from .sites import SitesStragglers
from .uncertainty import Uncertainty

SECTIONS = (
    core,
    bandwidth,
    stages,
    breakeven,
    cluster,
    shared_wan,
    model,
    sync_h,
    energy,
    uncertainty,
    need,
    failures,  # only where the scenario's workers fail (its applies)
    sites,  # only where sites differ or workers straggle (its applies)
    headline,  # after the sections it reads; first in results.md (LEAD)
)


def page_order(sections=None) -> list:
    """The sections with a page part, in the page's order (the list's, moved by ``PAGE_AFTER``)."""
    drawn = [m for m in (SECTIONS if sections is None else sections) if hasattr(m, "view")]
    order = [m for m in drawn if not hasattr(m, "PAGE_AFTER")]
    for m in drawn:
        if hasattr(m, "PAGE_AFTER"):
            at = next(i for i, o in enumerate(order) if o.KEY == m.PAGE_AFTER)
            order.insert(at + 1, m)
    return order


def __getattr__(name):
    if name == "SECTION_TYPES":  # every typed section known now (a test's own included)
        return common.section_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SECTIONS", "Results", "Section", "View", "BreakEvens", "Cluster", "Core", "Failures", "Headline",
           "Need", "SharedWan", "SitesStragglers", "Uncertainty", "page_order"]
