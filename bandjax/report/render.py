"""What the page and the figures share: every section's view and chart, and a chart as SVG and PNG.

The page shell (:mod:`.explorer`) and the report's figures (:mod:`.figure_files`) draw the same
views and charts, from :data:`bandjax.report.sections.SECTIONS`.
"""

from __future__ import annotations

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


# A helper process of :class:`Drawer`: vl-convert alone (no bandjax, no jax), reading pickled
# specs on stdin and answering each on its own stdout in order. Anything else written to stdout
# goes to stderr (discarded), a Ctrl-C is the parent's to handle, and stdin closing ends it.
_HELPER = """
import os, pickle, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
out = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
inp = sys.stdin.buffer
vl_version, scale, warm, nice = pickle.load(inp)
if nice > 0:
    try:
        os.nice(nice)
    except OSError:
        pass
import vl_convert as vlc
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
_GONE = object()  # the reply where no helper drew it: drawn in this process


def helpers_wanted() -> int:
    """Helper processes a report draws its figures with: two where the machine has two cores or
    more (10 figures: 1.7 s of vl-convert one after another), else one."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


class Drawer:
    """:func:`render` for many specs, drawn in helper processes while the caller builds the next
    ones (vl-convert holds the interpreter lock while it draws, so a thread would not overlap).

    ``submit(spec)`` returns a handle whose ``result()`` is what ``render(spec, cache_dir)``
    returns, or raises what it raises (a ``ValueError`` from vl-convert naming the failure). A
    figure in the cache is read at once. ``helpers`` processes start at the first figure that is
    not, or at once with ``start`` (vl-convert's own start-up, about 0.4 s, then overlaps what the
    caller does before its first figure; a helper given nothing to draw is stopped without
    waiting); each takes the next figure as it finishes one, so a long figure does not hold up
    the others. ``nice`` (0 to 19) lowers the helpers' priority below the caller's. Where no helper
    can start, or they all end early, the rest are drawn in this process: the same bytes. Use it
    as a context manager; leaving it stops the helpers."""

    def __init__(self, cache_dir: Path | None = None, start: bool = False, helpers: int = 1,
                 nice: int = 0):
        if isinstance(helpers, bool) or not isinstance(helpers, int) or helpers < 1:
            raise ValueError(f"helpers = {helpers!r}: must be a whole number >= 1")
        if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
            raise ValueError(f"nice = {nice!r}: must be a whole number in 0 .. 19")
        self.cache_dir = cache_dir
        self.helpers, self.nice = helpers, nice
        self._procs: list | None = None  # None: not started; []: none could start
        self._given: set = set()  # helpers given a figure (the others are stopped at once)
        self._todo: queue.Queue = queue.Queue()  # handles to draw, taken by a free helper
        self._lock = threading.Lock()
        self._alive = 0  # helpers still serving
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
            handle.remote = True
            with self._lock:
                if self._alive:
                    self._todo.put(handle)
                else:  # every helper ended: drawn here
                    handle._reply(_GONE)
        return handle

    def _start(self) -> bool:
        if self._procs is None:
            self._procs = []
            if not sys.executable:  # an embedded interpreter: nothing to start
                return False
            for _ in range(self.helpers):
                try:
                    proc = subprocess.Popen([sys.executable, "-c", _HELPER],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)
                except OSError:
                    break
                self._procs.append(proc)
                self._alive += 1
                thread = threading.Thread(target=self._serve, args=(proc,), daemon=True)
                self._threads.append(thread)
                thread.start()
        return bool(self._procs)

    def _serve(self, proc) -> None:
        """Give ``proc`` the next figure each time it is free, and its reply to the figure's
        handle; when it ends, a figure it held is drawn by the caller (and, the last to end,
        every figure still waiting)."""
        handle = None
        try:
            proc.stdin.write(pickle.dumps((vl_version(), PNG_SCALE, _WARM, self.nice)))
            proc.stdin.flush()
            while (handle := self._todo.get()) is not None:
                self._given.add(proc)
                proc.stdin.write(pickle.dumps(handle.spec, protocol=pickle.HIGHEST_PROTOCOL))
                proc.stdin.flush()
                handle._reply(pickle.load(proc.stdout))
                handle = None
        except Exception:  # noqa: BLE001 - EOF, a cut reply or a closed pipe: the helper ended
            if handle is not None:
                handle._reply(_GONE)
        finally:
            _close(proc.stdin)
            _close(proc.stdout)
            with self._lock:
                self._alive -= 1
                last = self._alive == 0
            while last:  # no helper left: what waits is drawn by the caller
                try:
                    waiting = self._todo.get_nowait()
                except queue.Empty:
                    break
                if waiting is not None:
                    waiting._reply(_GONE)

    def close(self, kill: bool = False) -> None:
        """Stop the helpers: at once with ``kill`` (or a helper given nothing), else after each
        has read the end of its input."""
        if not self._procs:
            return
        for _ in self._procs:
            self._todo.put(None)
        for proc in self._procs:
            try:
                if kill or proc not in self._given:
                    proc.kill()
                proc.wait(timeout=None if kill else 10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for t in self._threads:  # each closes its pipes as its helper ends
            t.join(timeout=10)
        self._procs = []


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
        self._done = threading.Event()
        if hit is not None:
            self._done.set()

    def _reply(self, reply) -> None:
        self.reply = reply
        self._done.set()

    def result(self) -> tuple[bytes, bytes]:
        if self.remote:
            self._done.wait()
        if self.reply is None or self.reply is _GONE:  # drawn here, as render does
            self.reply = render(self.spec, self.drawer.cache_dir)
            self.remote = False
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
