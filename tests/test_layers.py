"""The package's import graph, read from the source (every import, those inside functions
included): no circle, and no import from a lower layer to a higher one. The layers are those of
docs/architecture.md, ground floor first."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (layer, modules): a module may import its own layer and the layers above it in this list. A
# name ending in ".*" covers a package's modules; the most specific name wins.
LAYERS = (
    ("foundations", ("bandjax.units", "bandjax._limits", "bandjax._io", "bandjax._cache", "bandjax._budget_index",
                     "bandjax.parameters")),
    ("variant registry", ("bandjax.variants",)),
    ("links as data", ("bandjax.links",)),
    ("sites as data", ("bandjax.sites",)),
    ("uncertain inputs as data", ("bandjax.distributions",)),
    ("scenario", ("bandjax.scenario", "bandjax.names", "bandjax.labels")),
    ("closed forms", ("bandjax._jax", "bandjax.phases", "bandjax.stragglers", "bandjax.step",
                      "bandjax.failures", "bandjax.metrics",
                      "bandjax.queueing", "bandjax.roots")),
    ("labelled sweeps", ("bandjax.grid", "bandjax.sweepargs")),
    ("questions", ("bandjax.winmap", "bandjax.breakeven", "bandjax.sensitivity",
                   "bandjax.inverse", "bandjax.need", "bandjax.tolerance",
                   "bandjax.sitevalue")),
    ("measured and uncertain inputs", ("bandjax.calibration", "bandjax.uncertainty")),
    ("answers and storage", ("bandjax.answers", "bandjax.store")),
    ("report: engine runs", ("bandjax._wan_runs",)),
    ("report: shared", ("bandjax.report.constants", "bandjax.report.passes",
                        "bandjax.report.sections.common")),
    ("report: sections", ("bandjax.report.sections.*", "bandjax.report.sections")),
    ("report: rendering", ("bandjax.report.*", "bandjax.report")),
    ("command line", ("bandjax.cli.*", "bandjax.cli", "bandjax.__main__")),
    ("public API", ("bandjax",)),
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "bandjax").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t not in modules and "." in t:
                t = t.rsplit(".", 1)[0]
            if t in modules and t != name:
                out.add(t)
    return out


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def layer_of(module: str) -> int:
    best, rank = None, -1
    for i, (_, names) in enumerate(LAYERS):
        for pattern in names:
            if pattern.endswith(".*"):
                hit = module.startswith(pattern[:-1])
                weight = len(pattern) - 2
            else:
                hit = module == pattern
                weight = len(pattern) + 1000  # an exact name beats any pattern
            if hit and weight > rank:
                best, rank = i, weight
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")
    return best


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_circle():
    assert circles(graph()) == []


def test_no_module_imports_a_higher_layer():
    upward = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                    for a, targets in graph().items() for b in targets
                    if layer_of(b) > layer_of(a))
    assert upward == []


def test_the_checks_see_deferred_imports_and_circles():
    """The reader finds an import inside a function, and the search finds a circle through it."""
    src = "def f():\n    from .b import g\n"
    tree = {"bandjax.a": {"bandjax.b"}, "bandjax.b": {"bandjax.a"}}
    assert circles(tree) == [["bandjax.a", "bandjax.b"]]
    path = ROOT / "bandjax" / "parameters.py"
    assert _imports("bandjax.parameters", path, _modules()) == set()  # imports nothing of bandjax
    assert "bandjax.uncertainty" in graph()["bandjax.answers"]
    node = ast.parse(src).body[0].body[0]
    assert isinstance(node, ast.ImportFrom) and node.level == 1  # what _imports reads in a body


@pytest.mark.parametrize("low, high", [("bandjax.distributions", "bandjax.scenario"),
                                       ("bandjax.breakeven", "bandjax.uncertainty"),
                                       ("bandjax.grid", "bandjax.uncertainty")])
def test_the_convenience_entry_points_sit_above_what_they_join(low, high):
    """Once circles through imports inside functions: the scenario and the distributions, the
    break-even and the uncertainty module, the sweep and the uncertainty module."""
    assert high not in graph()[low]
