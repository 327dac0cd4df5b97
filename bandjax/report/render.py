"""What the page and the figures share: every section's view and chart, and a chart as SVG and PNG.

The page shell (:mod:`.explorer`) and the report's figures (:mod:`.figure_files`) draw the same
views and charts, from :data:`bandjax.report.sections.SECTIONS`.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import pickle
import queue
import subprocess
import sys
import threading
from pathlib import Path

from .._cache import trim
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
            if hasattr(section, "applies") and not section.applies(sc):
                continue  # not this scenario's section (sections.__init__: applies)
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
    out: dict = {}
    for cid, key, chart, data in each_chart(views, sc, interactive, sections):
        out[cid] = (key, chart, data)
    return out


def each_chart(views: list[View], sc: Scenario, interactive: bool = False, sections=None):
    """:func:`charts` one section at a time: (chart id, section key, Altair chart, datasets), each
    section's charts built as the caller comes to them."""
    by_key = {s.KEY: s for s in _sections.page_order(sections)}
    for v in views:
        with registry(sc):
            try:
                drawn = by_key[v.key].charts(v, sc, interactive)
            except Exception as e:  # noqa: BLE001
                v.missing.append(f"Its charts could not be drawn for this scenario: "
                                 f"{type(e).__name__}: {e}")
                continue
        for cid, (chart, data) in drawn.items():
            yield cid, v.key, chart, data


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


# The helper process of :class:`Drawer`: vl-convert alone (no bandjax, no jax), reading pickled
# specs on stdin and answering each on its own stdout in order. Anything else written to stdout
# goes to stderr (discarded), a Ctrl-C is the parent's to handle, and stdin closing ends it.
_HELPER = """
import os, pickle, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
out = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
import vl_convert as vlc
inp = sys.stdin.buffer
vl_version, scale, warm = pickle.load(inp)
vlc.vegalite_to_svg(warm, vl_version=vl_version)
while True:
    try:
        spec = pickle.load(inp)
    except EOFError:
        break
    try:
        svg = vlc.vegalite_to_svg(spec, vl_version=vl_version)
        reply = (svg.encode("utf-8"), vlc.svg_to_png(svg, scale=scale))
    except Exception as e:
        reply = (type(e).__name__, str(e))
    pickle.dump(reply, out)
    out.flush()
"""
_WARM = {"mark": "point", "data": {"values": [{"x": 1}]},
         "encoding": {"x": {"field": "x", "type": "quantitative"}}}
_GONE = object()  # the reply of a helper that ended


class Drawer:
    """:func:`render` for many specs, drawn in a helper process while the caller builds the next
    ones (vl-convert holds the interpreter lock while it draws, so a thread would not overlap).

    ``submit(spec)`` returns a handle whose ``result()`` is what ``render(spec, cache_dir)``
    returns, or raises what it raises (a ``ValueError`` from vl-convert naming the failure). A
    figure in the cache is read at once; the helper starts at the first one that is not, or at
    once with ``start`` (vl-convert's own start-up, about 0.4 s, then overlaps what the caller
    does before its first figure; a helper given nothing to draw is stopped without waiting).
    Where no helper can start, or it ends early, the rest are drawn in this process: the same
    bytes. Use it as a context manager; leaving it stops the helper."""

    def __init__(self, cache_dir: Path | None = None, start: bool = False):
        self.cache_dir = cache_dir
        self._proc = None  # None: not started; False: none to start
        self._used = False  # a spec was sent to the helper
        self._sent: collections.deque = collections.deque()  # handles awaiting the helper
        self._replies: queue.Queue = queue.Queue()
        self._outbox: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        if start:
            self._start()

    def __enter__(self) -> Drawer:
        return self

    def __exit__(self, kind, value, tb) -> None:
        self.close(kill=kind is not None)

    def submit(self, spec: dict) -> _Handle:
        import vl_convert as vlc

        key = _cache_key(spec, vlc.__version__) if self.cache_dir is not None else None
        hit = _cache_read(self.cache_dir, key) if key is not None else None
        handle = _Handle(self, spec, key, hit)
        if hit is None and self._start():
            self._sent.append(handle)
            self._used = True
            self._outbox.put(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
            handle.remote = True
        return handle

    def _start(self) -> bool:
        if self._proc is None:
            if not sys.executable:  # an embedded interpreter: nothing to start
                self._proc = False
                return False
            try:
                self._proc = subprocess.Popen([sys.executable, "-c", _HELPER],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL)
            except OSError:
                self._proc = False
                return False
            self._outbox.put(pickle.dumps((vl_version(), PNG_SCALE, _WARM)))
            self._threads = [threading.Thread(target=self._write, args=(self._proc.stdin,),
                                              daemon=True),
                             threading.Thread(target=self._read, args=(self._proc.stdout,),
                                              daemon=True)]
            for t in self._threads:
                t.start()
        return bool(self._proc)

    def _write(self, pipe) -> None:
        try:
            while (data := self._outbox.get()) is not None:
                pipe.write(data)
                pipe.flush()
        except OSError:  # the helper ended; its handles are drawn here
            pass
        finally:
            _close(pipe)

    def _read(self, pipe) -> None:
        try:
            while True:
                self._replies.put(pickle.load(pipe))
        except Exception:  # noqa: BLE001 - EOF or a cut reply: the helper ended
            self._replies.put(_GONE)
        finally:
            _close(pipe)

    def _wait(self, handle: _Handle) -> None:
        """Take the helper's replies, in the order sent, until ``handle`` has its own."""
        while handle.reply is None:
            reply = self._replies.get()
            if reply is _GONE:  # every handle still waiting is drawn here
                self._replies.put(_GONE)
            self._sent.popleft().reply = reply

    def close(self, kill: bool = False) -> None:
        """Stop the helper: at once with ``kill``, else after it has read the end of its input."""
        if not self._proc:
            return
        self._outbox.put(None)
        try:
            if kill or not self._used:
                self._proc.kill()
            self._proc.wait(timeout=None if kill else 10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for t in self._threads:  # each closes its pipe as the helper's end closes
            t.join(timeout=10)
        self._proc = False


def _close(pipe) -> None:
    try:
        pipe.close()
    except OSError:  # what was buffered can no longer be written: the helper ended
        pass


class _Handle:
    """One figure of a :class:`Drawer`: ``result()`` is its (SVG, PNG)."""

    def __init__(self, drawer: Drawer, spec: dict, key: str | None, hit):
        self.drawer, self.spec, self.key = drawer, spec, key
        self.reply = hit  # (svg, png); (error type, message); _GONE
        self.remote = False

    def result(self) -> tuple[bytes, bytes]:
        if self.reply is None and self.remote:
            self.drawer._wait(self)
        if self.reply is None or self.reply is _GONE:  # drawn here, as render does
            self.reply = render(self.spec, self.drawer.cache_dir)
            return self.reply
        first, second = self.reply
        if isinstance(first, str):
            raise ValueError(second) if first == "ValueError" else RuntimeError(
                f"{first}: {second}")
        if self.remote and self.key is not None:
            _cache_write(self.drawer.cache_dir, self.key, first, second)
            self.remote = False
        return first, second


def figure_cache_dir(environ=None) -> Path | None:
    """Where rendered figures are kept between runs: ``figures`` in bandjax's cache folder
    (``BANDJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/bandjax``, else ``~/.cache/bandjax``, as for
    its compilation cache in :mod:`bandjax._jax`); ``None``, no cache, when ``BANDJAX_NO_CACHE``
    is set or no folder is known."""
    from .._cache import cache_folder

    folder = cache_folder(environ)
    return None if folder is None else folder / CACHE_FOLDER


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
        trim(folder, "*.png", CACHE_KEEP, companions=(".svg",))
    except OSError:
        pass
