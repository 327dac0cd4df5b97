"""The explorer page: one self-contained ``explorer.html`` that opens from disk with no network.

The report's headline at the top, then nine sections (bandwidth, module stages, break-evens,
shared WAN, model size, syncing every H steps, energy, your cluster, how sure), each with its
charts from its section module (:mod:`bandjax.report.sections`) in their interactive form, a conclusion written from the
numbers, its assumptions, and a plain note for any part whose data is not available yet. Vega, Vega-Lite and vega-embed are inlined from vl-convert's bundle; the page
loads nothing else (no script, font or style from the network).

Controls at the top (steps basis, ENOB, module budget) set Vega signals of every chart that reads
them; the play buttons sweep the bandwidth (and the shared-WAN trace) and update a readout.
"""

from __future__ import annotations

import functools
import html
import json
import re
from pathlib import Path

from .. import links as _links
from .. import variants as _v
from .._io import atomic_write_text
from ..scenario import Scenario, reference
from . import render as _render
from . import sections as _sections
from .sections import common as _views
from .sections import frame as _frame_of
from .sections import headline as _headline
from .sections.common import Results, g4, g6

PAGE = "explorer.html"
NARROW_PX = 1100  # below this window width the charts' legends go below their plots
# Signals each chart may read; a chart gets a signal only if its spec declares it.
SIGNALS = ("basis", "enob", "budget", "bwi", "tj")


def _json_script(x) -> str:
    """JSON safe inside a <script> element: every "<" (and ">", "&", and the line separators
    U+2028/U+2029) written as a \\u escape, so no string in the data can close the element or
    open an HTML comment ("<!--<script>" would make the parser swallow the rest of the page)."""
    text = json.dumps(x, allow_nan=False, separators=(",", ":"))
    for ch in "<>&\u2028\u2029":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


@functools.lru_cache(maxsize=1)
def _bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert (no network)."""
    import vl_convert as vlc

    return vlc.javascript_bundle(vl_version=_views.vl_version()).replace("</script", "<\\/script")


def _declared(spec: dict) -> list[str]:
    names = set()

    def walk(s):
        if isinstance(s, dict):
            for p in s.get("params", []) or []:
                if isinstance(p, dict) and "name" in p:
                    names.add(p["name"])
            for k in ("layer", "hconcat", "vconcat", "concat"):
                for sub in s.get(k, []) or []:
                    walk(sub)
            if "spec" in s:
                walk(s["spec"])
    walk(spec)
    return [n for n in SIGNALS if n in names]


_PHRASE = re.compile(r"(?<=,) | (?=\()|(?<=:) ")  # after a comma or colon, before a parenthesis


def _table(t: dict | None) -> str:
    if not t:
        return ""
    nowrap = set(t.get("nowrap", ()))  # columns whose cells stay on one line (a value and its unit)
    # columns whose cells wrap between phrases only ("3.17 GB/s" | "(25.4 Gbit/s)," | "below the
    # range"), so a wide table fits its box without a value parted from its unit
    phrases = set(t.get("phrases", ()))

    def td(j, c):
        if j in phrases:
            parts = _PHRASE.split(str(c))
            inner = " ".join(f'<span class="nowrap">{html.escape(p)}</span>' for p in parts)
            return f"<td>{inner}</td>"
        return f'<td{" class=nowrap" if j in nowrap else ""}>{html.escape(str(c))}</td>'
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t["columns"])
    body = "".join("<tr>" + "".join(td(j, c) for j, c in enumerate(row)) + "</tr>" for row in t["rows"])
    # a wide table scrolls inside its own box, never the page
    return (f'<div class="table-box"><table class="data"><caption>{html.escape(t.get("caption", ""))}'
            f"</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _generic_table(x) -> str:
    """A results value of unknown shape (e.g. sensitivities) as a table, shown as it is."""
    if isinstance(x, list) and x and all(isinstance(r, dict) for r in x):
        cols = list(dict.fromkeys(k for r in x for k in r))
        return _table({"columns": cols, "rows": [[_cell(r.get(c)) for c in cols] for r in x],
                       "caption": "As the break-even section reports it (units as in results.json)."})
    if isinstance(x, dict):
        return _table({"columns": ["key", "value"], "rows": [[k, _cell(v)] for k, v in x.items()],
                       "caption": "As the break-even section reports it (units as in results.json)."})
    return f"<pre>{html.escape(json.dumps(x, indent=1))}</pre>"


def _cell(v) -> str:
    if isinstance(v, float):
        return g4(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return "n/a" if v is None else str(v)


def _conclusions(sentences: list[str]) -> str:
    return "".join(f'<p class="conclusion"><b>Conclusion.</b> {html.escape(c)}</p>' for c in sentences)


def _words(view: _views.View, initial: dict) -> str:
    out = []
    if view.by_setting:
        # the sentences at the controls' setting; the page swaps them when a control changes
        shown = view.by_setting[_views.setting_key(initial)] + view.settled
        out.append(f'<div class="conclusions" data-view="{view.key}">{_conclusions(shown)}</div>')
    else:
        out.append(_conclusions(view.conclusion))
    for m in view.missing:
        out.append(f'<p class="missing"><b>Not available yet.</b> {html.escape(m)}</p>')
    if view.assumptions:
        items = "".join(f"<li>{html.escape(a)}</li>" for a in view.assumptions)
        out.append(f'<div class="assumptions"><b>Assumptions</b><ul>{items}</ul></div>')
    return "\n".join(out)


def _headline_html(results: Results) -> str:
    """The report's headline, the same sentences as results.md's, or a note that it is missing."""
    # the sentences name variants by the report's own setup table (the core section)
    lines = _headline.lines(results)
    if not lines:
        return ('<div id="headline" class="headline"><p class="missing"><b>Not available yet.</b> '
                "The headline (results key headline).</p></div>")
    items = "".join(f"<li>{html.escape(s)}</li>" for s in lines)
    return f'<div id="headline" class="headline"><h2>Headline</h2><ul>{items}</ul></div>'


def _frame(sc: Scenario, results: Results) -> _frame_of.Frame:
    """The page's frame from the report's core section, as results.md's; from the scenario
    where the results hold none."""
    return _frame_of.of_results(results) or _frame_of.of_scenario(sc)


def _title_text(fr: _frame_of.Frame) -> str:
    return (f"{fr.title} An explorer of the closed forms" if fr.reference else
            f"{fr.title}. An explorer of the closed forms")


def _scenario_line(sc: Scenario, fr: _frame_of.Frame) -> str:
    return (f"Scenario: {fr.setup}; dense delta {g4(4 * float(sc.params) / 1e6)} MB, worker port "
            f"{g6(float(sc.worker_port_Bps) / 1e9)} GB/s, module port {g6(float(sc.qsfp_port_Bps) / 1e9)} GB/s, "
            f"WAN {_views.fmt_GBps(float(sc.wan_Bps) / 1e9)} per direction"
            f"{' (the slowest link)' if _links.differ(sc) else ''}, {_views.setting_text(sc)}, target loss "
            f"{g6(sc.steps.target_loss)}.")


def _controls_html(sc: Scenario) -> str:
    ctl = _views.controls(sc)
    titles = {"basis": "E' steps basis", "enob": "in-transit ENOB", "budget": "module budget"}
    parts = []
    for c in _views.CONTROLS:
        opts = "".join(f'<option value="{html.escape(v)}"{" selected" if v == ctl[c]["value"] else ""}>'
                       f"{html.escape(label)}</option>" for v, label in ctl[c]["options"])
        parts.append(f'<label>{titles[c]} <select id="ctl-{c}" data-signal="{c}">{opts}</select></label>')
    return "\n".join(parts)


CSS = """
:root { --fg:#1d1d1f; --muted:#555; --line:#ddd; --accent:#2d6cdf; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans",
       "DejaVu Sans", Arial, sans-serif; color:var(--fg); background:#fafafa; }
header { position:sticky; top:0; z-index:10; background:#fff; border-bottom:1px solid var(--line);
         padding:10px 24px; }
header h1 { font-size:20px; margin:0 0 2px; }
header .scenario { color:var(--muted); font-size:13px; margin:0 0 6px; }
.controls { display:flex; flex-wrap:wrap; gap:18px; align-items:center; font-size:14px; }
.controls select { font:inherit; margin-left:4px; }
main { max-width:1240px; margin:0 auto; padding:8px 24px 60px; }
section { background:#fff; border:1px solid var(--line); border-radius:6px; padding:14px 20px;
          margin:18px 0; }
section h2 { font-size:18px; margin:2px 0 10px; }
.chart { overflow-x:auto; min-height:60px; }
.chart-grid { display:grid; grid-template-columns:repeat(auto-fit, minmax(min(420px, 100%), 1fr)); gap:10px 28px; }
.chart-grid > .chart { min-width:0; }
.headline { background:#fff; border:1px solid var(--line); border-left:4px solid var(--accent);
            border-radius:6px; padding:10px 20px; margin:18px 0 8px; }
.headline h2 { font-size:18px; margin:2px 0 6px; }
.headline ul { margin:0; padding-left:20px; }
/* vega-embed makes its element inline-block; a chart of width "container" needs a block */
.chart.vega-embed { display:block; width:100%; }
.player { display:flex; align-items:center; gap:12px; margin:4px 0 8px; }
.player input[type=range] { width:360px; }
.player button { font:inherit; padding:3px 12px; min-width:88px; }
.readout { font-size:14px; margin:6px 0; }
.readout table, table.data { border-collapse:collapse; font-size:13.5px; margin:8px 0; }
.readout td, .readout th, table.data td, table.data th { border-bottom:1px solid var(--line);
          padding:3px 10px; text-align:right; }
.readout td:first-child, .readout th:first-child, table.data td:first-child,
table.data th:first-child { text-align:left; }
.readout tr.winner td { font-weight:600; background:#eef4ff; }
table.data caption { caption-side:bottom; text-align:left; color:var(--muted); font-size:12.5px;
                     padding-top:4px; }
p.conclusion { margin:8px 0; }
p.note { margin:4px 0 8px; color:var(--muted); font-size:13.5px; }
.table-box { overflow-x:auto; max-width:100%; }
td.nowrap, span.nowrap { white-space:nowrap; }
p.missing { margin:8px 0; padding:6px 10px; background:#fff6e0; border-left:3px solid #e0a800; }
.assumptions { color:var(--muted); font-size:13px; margin-top:8px; }
.assumptions ul { margin:2px 0 0; padding-left:20px; }
.key { font-size:13px; color:var(--muted); }
#load-error { display:none; color:#b00020; font-weight:600; }
"""

JS = r"""
const VIEWS = {};
const STATE = {};
function setSignal(name, value) {
  STATE[name] = value;
  const jobs = [];
  for (const [id, names] of Object.entries(SIGNALS_OF)) {
    if (names.includes(name) && VIEWS[id]) jobs.push(VIEWS[id].signal(name, value).runAsync());
  }
  return Promise.all(jobs);
}
function fmtS(t) { return t >= 1000 ? t.toLocaleString('en', {maximumFractionDigits: 0}) + ' s'
                                    : Number(t.toPrecision(3)) + ' s'; }
function fmtG(x) { return x >= 1000 ? x.toLocaleString('en', {maximumFractionDigits: 0})
                                    : String(Number(x.toPrecision(3))); }
function matches(r) {
  return ['basis', 'enob', 'budget'].every(c => r[c] === '*' || r[c] === STATE[c]);
}
// Text from the scenario or results (variant names, series, sentences) enters the page only
// through textContent (bjNode(...) below), never as HTML.
function bjNode(tag, attrs, children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children || []) e.append(c);  // a string child becomes a text node
  return e;
}
function updateBandwidth() {
  const bw = SPECS.bandwidth.datasets;
  const i = STATE.bwi;
  const g = PAGE.grid_GBps[i];
  document.getElementById('bw-value').textContent =
      'WAN ' + fmtG(g) + ' GB/s (' + fmtG(8 * g) + ' Gb/s) per direction';
  const rows = bw.curves.filter(r => r.i === i && matches(r));
  const ok = rows.filter(r => r.t_s !== null).sort((a, b) => a.t_s - b.t_s);
  const rest = rows.filter(r => r.t_s === null);
  const best = ok.length ? ok[0] : null;
  const head = bjNode('tr', {}, ['variant', 'time to target', 'step time', 'x the winner'].map(
      h => bjNode('th', {}, [h])));
  const body = ok.concat(rest).map(r => bjNode('tr', {class: best && r === best ? 'winner' : ''}, [
      bjNode('td', {}, [String(PAGE.names[r.short] || r.short)]),
      bjNode('td', {}, [r.t_s === null ? String(PAGE.status_words[r.status] || r.status) : fmtS(r.t_s)]),
      bjNode('td', {}, [Number(r.step_ms.toPrecision(4)) + ' ms']),
      bjNode('td', {}, [r.t_s === null || !best ? '' : (r.t_s / best.t_s).toFixed(2) + 'x'])]));
  const table = bjNode('table', {}, [bjNode('thead', {}, [head]), bjNode('tbody', {}, body)]);
  const p = best
      ? bjNode('p', {}, ['Winner at ' + fmtG(g) + ' GB/s: ', bjNode('b', {id: 'bw-winner'}, [String(best.short)]),
                     ' (' + fmtS(best.t_s) + ', ' + STATE.basis + ' basis, ENOB ' + STATE.enob
                     + ', budget ' + PAGE.budget_names[STATE.budget] + ').'])
      : bjNode('p', {}, ['No variant has a time to target here.']);
  document.getElementById('readout-bandwidth').replaceChildren(p, table);
  document.getElementById('bw-slider').value = i;
}
function updateTrace() {
  const out = document.getElementById('readout-trace');
  if (!out || !SPECS.shared_wan_trace) return;
  const rows = SPECS.shared_wan_trace.datasets.trace.filter(r => r.j === STATE.tj);
  if (!rows.length) return;
  out.textContent = 't = ' + Number(rows[0].t_ms.toPrecision(4)) + ' ms: '
      + rows.map(r => String(r.series).replace(/ \(MB\)$/, '') + ' ' + Number(r.value.toPrecision(3))
                      + ' ' + r.unit).join(', ');
}
function updateConclusions() {
  const key = ['enob', 'budget', 'basis'].map(c => STATE[c]).join('|');
  for (const div of document.querySelectorAll('div.conclusions')) {
    const c = PAGE.conclusions[div.dataset.view];
    div.replaceChildren(...(c.by[key] || []).concat(c.settled).map(
        s => bjNode('p', {class: 'conclusion'}, [bjNode('b', {}, ['Conclusion.']), ' ' + s])));
  }
}
function onControl() { updateBandwidth(); updateConclusions(); }
function player(button, signal, n, update, stepMs) {
  let timer = null;
  button.addEventListener('click', () => {
    if (timer) { clearInterval(timer); timer = null; button.textContent = '\u25B6 Play'; return; }
    button.textContent = '\u275A\u275A Pause';
    if (STATE[signal] >= n - 1) STATE[signal] = 0;
    timer = setInterval(() => {
      const next = STATE[signal] + 1;
      if (next >= n) { clearInterval(timer); timer = null; button.textContent = '\u25B6 Play'; return; }
      setSignal(signal, next).then(update);
    }, stepMs);
  });
}
async function main() {
  Object.assign(STATE, PAGE.initial);
  // on a narrow screen the legends go below the plots, which then take the full width
  const narrow = window.innerWidth < NARROW_PX;
  for (const [id, spec] of Object.entries(SPECS)) {
    if (narrow) spec.config = {...spec.config, legend: {...(spec.config || {}).legend, orient: 'bottom',
                                                        direction: 'vertical'}};
    const res = await vegaEmbed('#chart-' + id, spec, {actions: false, renderer: 'svg'});
    VIEWS[id] = res.view;
  }
  for (const sel of document.querySelectorAll('select[data-signal]')) {
    sel.addEventListener('change', () => setSignal(sel.dataset.signal, sel.value).then(onControl));
  }
  if (SPECS.bandwidth) {
    const n = PAGE.grid_GBps.length;
    const slider = document.getElementById('bw-slider');
    slider.addEventListener('input', () => setSignal('bwi', Number(slider.value)).then(updateBandwidth));
    player(document.getElementById('play-bw'), 'bwi', n, updateBandwidth, 60);
    updateBandwidth();
  }
  if (SPECS.shared_wan_trace) {
    player(document.getElementById('play-trace'), 'tj', PAGE.trace_n, updateTrace, 80);
    updateTrace();
  }
  document.body.dataset.ready = 'true';
}
main().catch(err => {
  console.error(err);
  const el = document.getElementById('load-error');
  el.style.display = 'block';
  el.textContent = 'The charts failed to load: ' + err;
});
"""


def _section_html(n: int, view: _views.View, module, charts: dict, specs: dict,
                  page_data: dict) -> str:
    """One section of the page: its own HTML above the charts (a play button), the charts, its HTML
    below them, its table and more tables, then its words (see :mod:`bandjax.report.sections`)."""
    extra = module.page_html(view, specs, page_data) if hasattr(module, "page_html") else {}
    body = [extra.get("top", "")]
    divs = [f'<div id="chart-{cid}" class="chart"></div>' for cid, (key, _, _) in charts.items()
            if key == view.key]
    if getattr(module, "CHART_GRID", False) and divs:  # side by side where the window is wide enough
        divs = [f'<div class="chart-grid">{"".join(divs)}</div>']
    body += divs
    body += [f'<p class="note">{html.escape(n)}</p>' for n in view.notes]
    body.append(extra.get("after_charts", ""))
    body.append(_table(view.table))
    for heading, t in module.extra_tables(view) if hasattr(module, "extra_tables") else ():
        shown = _table(t) if isinstance(t, dict) and "columns" in t else _generic_table(t)
        body.append(f"<h3>{html.escape(heading)}</h3>" + shown)
    body.append(_words(view, page_data["initial"]))
    return (f'<section id="{view.key}"><h2>{n}. {html.escape(view.title)}</h2>\n'
            + "\n".join(b for b in body if b) + "</section>")


def page(scenario: Scenario | None = None, results: Results | dict | None = None,
         sweeps=None) -> str:
    """The explorer page as one HTML string (charts' JavaScript inlined), drawn from the report's
    one pass ``sweeps`` (:mod:`bandjax.report.passes`; computed here when not given) and its
    sections ``results`` (typed, or a results dict read into them)."""
    sc = reference() if scenario is None else scenario
    results = Results.of(results)
    views = _render.collect(sc, results, sweeps)
    charts = _render.charts(views, sc, interactive=True)
    specs = {cid: _views.to_spec(chart, data) for cid, (_, chart, data) in charts.items()}
    signals = {cid: _declared(s) for cid, s in specs.items()}
    bw = next(v for v in views if v.key == "bandwidth")
    ctl = _views.controls(sc)
    page_data = {
        "grid_GBps": bw.data["grid_GBps"],
        "names": {v.short: _views.legend_name(v) for v in sc.variants},
        "status_words": _views.STATUS_WORDS,
        "budget_names": {v: label for v, label in ctl["budget"]["options"]},
        "initial": {**{c: ctl[c]["value"] for c in _views.CONTROLS}, "bwi": bw.data["start"], "tj": 0},
        "conclusions": {v.key: {"by": v.by_setting, "settled": v.settled} for v in views if v.by_setting},
    }
    modules = {m.KEY: m for m in _sections.page_order()}
    sections = [_section_html(n, view, modules[view.key], charts, specs, page_data)
                for n, view in enumerate(views, start=1)]
    key = "; ".join(html.escape(_views.legend_name(v)) for v in sc.variants)
    headline = _headline_html(results)
    fr = _frame(sc, results)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bandjax explorer</title>
<style>{CSS}</style>
<script>{_bundle()}</script>
</head>
<body>
<header>
<h1>{html.escape(_title_text(fr))}</h1>
<p class="scenario">{html.escape(_scenario_line(sc, fr))}</p>
<div class="controls">{_controls_html(sc)}</div>
</header>
<main>
<p id="load-error"></p>
{headline}
<p class="key">Variants: {key}.</p>
{chr(10).join(sections)}
</main>
<script>
const SPECS = {_json_script(specs)};
const SIGNALS_OF = {_json_script(signals)};
const PAGE = {_json_script(page_data)};
const NARROW_PX = {NARROW_PX};
{JS}
</script>
</body></html>
"""


def write(out: str | Path, scenario: Scenario | None = None,
          results: Results | dict | None = None, sweeps=None) -> Path:
    """Write ``out/explorer.html`` (whole or not at all); ``results`` default to the report's,
    built here with the same pass of the model the page draws."""
    sc = reference() if scenario is None else scenario
    if results is None:
        from . import build

        ctx: dict = {"sweeps": sweeps}
        results = build(sc, ctx)
        sweeps = ctx["sweeps"]
    path = Path(out) / PAGE
    atomic_write_text(path, page(sc, results, sweeps))
    return path


def check_schema(results, where: str, types: bool = True) -> None:
    """Raise ValueError unless ``results`` is a results.json of this version that its schema
    (``results.schema.json``) accepts, every field's type included (``types=False``: the version
    only); the message names the first field that is not and its value."""
    import jsonschema

    from . import SCHEMA_VERSION

    if not isinstance(results, dict):
        raise ValueError(f"{where}: not a bandjax report (a {type(results).__name__}, not an object)")
    version = results.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise ValueError(f"{where}: schema_version = {version!r}; this bandjax reads version "
                         f"{SCHEMA_VERSION} (write the report again with `bandjax report`)")
    if not types:
        return
    validator = jsonschema.Draft202012Validator(_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(results))
    if error is not None:
        field = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required" or not field:  # a key missing: the message names it
            raise ValueError(f"{where}: not a bandjax report ({field + ': ' if field else ''}"
                             f"{error.message[:160]})")
        shown = json.dumps(error.instance)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise ValueError(f"{where}: not a bandjax report: {field} = {shown} "
                         f"({error.message[:160]})")
    variants = results["setup"].get("variants", {})
    if isinstance(variants, dict) and len(variants) >= 2 and results.get("break_even_GBps") == []:
        raise ValueError(f"{where}: break_even_GBps = []: a report of {len(variants)} variants has "
                         "an entry for each pair (a crossing or who wins throughout)")


@functools.lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads((Path(__file__).parent / "results.schema.json").read_text(encoding="utf-8"))


class _NotFinite:
    """A number in a results.json that is not a finite float as typed (NaN, Infinity, 1e999, an
    integer past 1e308): bandjax writes none (``allow_nan=False``, null where there is none)."""

    def __init__(self, text: str):
        self.text = text


MAX_INT_DIGITS = 308  # an integer of more digits is past the largest float


def _finite_json(text: str):
    """``json.loads(text)``, with every number that is not a finite float as a
    :class:`_NotFinite`; and the first such one as ("path", "the number as typed", cut to 40
    characters), or None."""
    import math

    found = []

    def mark(s):
        found.append(s)
        return _NotFinite(s)

    def number(s):
        x = float(s)
        return x if math.isfinite(x) else mark(s)

    def integer(s):
        return int(s) if len(s.lstrip("-")) <= MAX_INT_DIGITS else mark(s)

    doc = json.loads(text, parse_constant=mark, parse_float=number, parse_int=integer)
    if not found:
        return doc, None

    def where(x, path):
        if isinstance(x, _NotFinite):
            shown = x.text if len(x.text) <= 40 else f"{x.text[:20]}...({len(x.text)} digits)"
            return path or "(the document)", shown
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in items:
            hit = where(v, f"{path}.{k}" if path else str(k))
            if hit:
                return hit
        return None

    return doc, where(doc, "")


def read_results(path: str | Path, scenario: Scenario) -> Results:
    """The sections of a results.json written by ``bandjax report`` for ``scenario``; an error if
    it was written for another scenario or is not a report (a section with a key missing or
    unknown included)."""
    import json

    from .._io import read_bounded_text
    from .._limits import MAX_RESULTS_BYTES
    from ..scenario import to_toml_dict
    from . import recover

    recover(Path(path).parent)  # a report whose writing was killed between its two renames
    try:
        results, not_finite = _finite_json(read_bounded_text(path, "--results", MAX_RESULTS_BYTES))
    except FileNotFoundError:
        raise ValueError(f"--results {str(path)!r}: no such file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"--results {str(path)!r}: not JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"--results {str(path)!r}: nested too deeply to be a bandjax report") from None
    where = f"--results {str(path)!r}"
    if not_finite:
        raise ValueError(f"{where}: not a bandjax report: {not_finite[0]} = {not_finite[1]} "
                         "(bandjax writes finite numbers only, and null where there is none)")
    check_schema(results, where, types=False)
    try:  # the typed sections name a renamed or missing key by its section
        sections = Results.of(results)
    except ValueError as e:
        raise ValueError(f"{where}: not a bandjax report ({e})") from None
    except (TypeError, KeyError, AttributeError, IndexError) as e:  # a field of another type
        check_schema(results, where)  # names the field and its value
        raise ValueError(f"{where}: not a bandjax report ({type(e).__name__}: {e})") from None
    check_schema(results, where)  # every field's type, before any view reads it
    setup = sections.core.setup if sections.core else None
    written_for = setup.get("scenario") if isinstance(setup, dict) else None
    if written_for is None:
        raise ValueError(f"--results {str(path)!r}: not a bandjax report (no setup.scenario)")
    if written_for != json.loads(json.dumps(to_toml_dict(scenario))):
        raise ValueError(f"--results {str(path)!r} was written for another scenario; "
                         "pass the same --scenario it was written with, or leave --results out")
    return sections
