"""What the page and the figures share: every section's view and chart, and a chart as SVG and PNG.

The page shell (:mod:`.explorer`) and the report's figures (:mod:`.figure_files`) draw the same
views and charts, from :data:`bandjax.report.sections.SECTIONS`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .._io import atomic_write_bytes
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
CACHE_FOLDER = "figures"  # in bandjax's cache folder (:func:`figure_cache_dir`)
CACHE_KEEP = 60  # figures kept there, the least recently used go first (about 0.65 MB each)


def render(spec: dict, cache_dir: Path | None = None) -> tuple[bytes, bytes]:
    """(SVG, PNG) of a Vega-Lite spec, rendered offline by vl-convert.

    The spec is compiled and laid out once, into the SVG; the PNG is that SVG rasterised (what
    ``vegalite_to_png`` does after laying the spec out a second time: the same bytes, in about
    a third of the time). With a ``cache_dir``, a spec drawn before by the same vl-convert is
    read back from there instead (the same bytes again), and a new one is kept there."""
    import vl_convert as vlc

    key = _cache_key(spec, vlc.__version__) if cache_dir is not None else None
    if key is not None:
        hit = _cache_read(cache_dir, key)
        if hit is not None:
            return hit
    svg = vlc.vegalite_to_svg(spec, vl_version=vl_version())
    svg, png = svg.encode("utf-8"), vlc.svg_to_png(svg, scale=PNG_SCALE)
    if key is not None:
        _cache_write(cache_dir, key, svg, png)
    return svg, png


def figure_cache_dir(environ=None) -> Path | None:
    """Where rendered figures are kept between runs: ``figures`` in bandjax's cache folder
    (``BANDJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/bandjax``, else ``~/.cache/bandjax``, as for
    its compilation cache in :mod:`bandjax._jax`); ``None``, no cache, when ``BANDJAX_NO_CACHE``
    is set or no folder is known."""
    from .._jax import cache_settings

    folder = cache_settings(environ).get("jax_compilation_cache_dir")
    return None if folder is None else Path(folder) / CACHE_FOLDER


def _cache_key(spec: dict, renderer: str) -> str:
    """What decides a figure's bytes: the spec as JSON (in its own key order, which the drawing
    may follow), vl-convert's version, the Vega-Lite version and the PNG scale."""
    text = json.dumps([renderer, vl_version(), PNG_SCALE, spec], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cache_read(folder: Path, key: str) -> tuple[bytes, bytes] | None:
    try:
        svg, png = (folder / f"{key}.svg").read_bytes(), (folder / f"{key}.png").read_bytes()
        os.utime(folder / f"{key}.png")  # recently used: kept longest
    except OSError:
        return None
    return svg, png


def _cache_write(folder: Path, key: str, svg: bytes, png: bytes) -> None:
    """Keep a figure (the PNG last: it marks the pair whole) and drop the least recently used
    beyond :data:`CACHE_KEEP`; a cache that cannot be written is skipped, the figure is not."""
    try:
        atomic_write_bytes(folder / f"{key}.svg", svg)
        atomic_write_bytes(folder / f"{key}.png", png)
        kept = sorted(folder.glob("*.png"), key=_mtime, reverse=True)
        for old in kept[CACHE_KEEP:]:
            old.unlink(missing_ok=True)
            old.with_suffix(".svg").unlink(missing_ok=True)
    except OSError:
        pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another run
        return 0.0
