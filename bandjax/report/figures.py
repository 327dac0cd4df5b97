"""Deprecated: the charts now live with their sections, in :mod:`bandjax.report.sections`
(``bandjax.report.sections.<name>``: each section's chart; :mod:`bandjax.report.sections.common`:
colours and chart helpers; :mod:`bandjax.report.render`: every chart, SVG and PNG;
:mod:`bandjax.report.figure_files`: the report's figures). Names here still work and warn once,
naming their new home."""

from __future__ import annotations

from . import _moved

__getattr__ = _moved.forwarder(__name__, "figures")
