"""Deprecated: the page's views now live with their sections, in :mod:`bandjax.report.sections`
(``bandjax.report.sections.<name>``: each section's view; :mod:`bandjax.report.sections.common`:
the shared helpers; :func:`bandjax.report.render.collect`: every view). Names here still work
and warn once, naming their new home."""

from __future__ import annotations

from . import _moved

__getattr__ = _moved.forwarder(__name__, "views")
