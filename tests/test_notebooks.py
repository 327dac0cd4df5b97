"""The notebooks run from top to bottom, import bandjax and define no model code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _code(nb):
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_imports_bandjax_and_defines_no_model(path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    code = "\n".join(_code(nb))
    assert "import bandjax" in code
    assert "def " not in code and "lambda" not in code and "jax.numpy" not in code


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS][:1] == ["bandwidth_sweep.ipynb"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    if path.stem == "bandwidth_sweep":
        # docs/model.md section 12: top-k wins at 100 GbE; the winner changes across 0.1-1,000 GB/s
        assert "hypothesis basis: E' from 0.1 GB/s" in text
        assert "top-k reaches the target first (0.925 s)" in text
        assert any("image/svg+xml" in o.get("data", {}) for o in outputs)
    if path.stem == "shared_wan":
        # docs/model.md section 11: at load 0 the engine gives the closed form's step exactly
        import re

        err = float(re.search(r"load 0: largest relative difference from the closed form (\S+)", text)[1])
        assert err <= 1e-9
        assert "adamw: closed form 4.075 ms" in text.replace("  ", "")
    if path.stem == "breakeven":
        _check_breakeven(text)
    if path.stem == "calibration":
        _check_calibration(text)


def _check_breakeven(text):
    """The printed break-evens, sensitivities and inverse answers equal the library's, recomputed here."""
    import re

    import numpy as np

    import bandjax as bj
    from bandjax.scenario import FIELDS

    sc = bj.reference()
    short = {v.id: v.short for v in bj.variants.VARIANTS}
    crossings = re.findall(
        r"(\w+) basis \(E' ([\d,]+) steps, AdamW ([\d,]+) steps\): crossing at (\S+) GB/s = (\S+) Gb/s; "
        r"below it (\S+) reaches the target first, above it (\S+); time to target there (\S+) s each "
        r"\(relative difference (\S+)\)", text)
    assert [c[0] for c in crossings] == list(bj.BASES)
    for basis, n_a, n_b, GBps, Gbps, below, above, t_s, rel in crossings:
        r = bj.break_even(sc, "E'", "AdamW", basis=basis)
        p = r.at()
        assert len(p["x"]) == 1
        x = p["x"][0]
        # E' takes E's single-seed steps on the hypothesis basis, the exact band's otherwise
        source = "band_pluggable" if basis == "hypothesis" else "band_gpu"
        assert float(n_a.replace(",", "")) == sc.steps.lookup(source, 8.0, "exact") == r.steps_a
        assert float(n_b.replace(",", "")) == r.steps_b == sc.steps.lookup("adamw", 8.0, basis)
        assert abs(float(GBps) - x / 1e9) <= 0.5e-4
        assert abs(float(Gbps) - 8 * x / 1e9) <= 0.5e-3
        assert [below, above] == [short[w] for w in p["winners"]]
        # the residual at the crossing: both reach the target in the same time
        t = np.asarray(bj.time_to_target_s(sc.replace(wan_Bps=x), np.array(
            [r.steps_a if v == r.a else r.steps_b for v in bj.variants.IDS])))
        t_a, t_b = t[bj.variants.IDS.index(r.a)], t[bj.variants.IDS.index(r.b)]
        assert abs(t_a / t_b - 1) <= 1e-9 and float(rel) <= 1e-9
        assert abs(float(t_s) - t_a) <= 0.5e-3
    # the hypothesis basis (fewer steps for E') puts the crossing higher
    assert float(crossings[0][3]) > float(crossings[1][3])

    for basis in bj.BASES:
        block = re.search(rf"{basis} basis, crossing (\S+) GB/s; elasticities \(% per %\), largest first:\n"
                          r"((?:  .*\n)+)", text)
        assert block is not None, basis
        rows = [line.split() for line in block[2].splitlines()]
        printed = [(row[0], float(row[1])) for row in rows if len(row) == 2]
        r, el = bj.elasticities(sc, "E'", "AdamW", basis=basis)
        e = {k: float(v[0]) for k, v in el.items() if np.isfinite(v[0])}
        order = sorted(e, key=lambda k: -abs(e[k]))
        assert [name for name, _ in printed] == order[:len(printed)] and len(printed) == 8
        for name, value in printed:
            assert abs(value - e[name]) <= 0.5e-3, name
        hardware = max((k for k in e if k in FIELDS and FIELDS[k][0] in ("links", "module")),
                       key=lambda k: abs(e[k]))
        assert f"hardware number that moves it most: {hardware} ({e[hardware]:+.3f}" in block[2]
        assert hardware == "optics_Sps"  # the module's binding stage at [free] (docs/model.md section 4)

    # the inverse question: printed answers equal smallest_change's
    for wan_GBps, basis, name, scale, unit in [(1.0, "exact", "optics_Sps", 1e9, "GS/s"),
                                               (12.5, "hypothesis", "wan_Bps", 1e9, "GB/s"),
                                               (12.5, "exact", "steps_a", 1.0, "steps")]:
        c = bj.smallest_change(sc.replace(wan_Bps=wan_GBps * 1e9), "E'", "AdamW", name, basis=basis)
        assert c.status == "found"
        side = "below" if c.ratio < 1 else "above"
        m = re.search(rf"WAN {wan_GBps:g} GB/s, {basis} basis, {name}: now \S+ {re.escape(unit)}; "
                      rf"E' wins {side} (\S+) {re.escape(unit)} \(x(\S+)\)", text)
        assert m is not None, (wan_GBps, basis, name)
        assert float(m[1].replace(",", "")) == pytest.approx(c.required / scale, rel=1e-3)
        assert float(m[2]) == pytest.approx(c.ratio, abs=0.5e-4)
    c = bj.smallest_change(sc, "E'", "AdamW", "optics_Sps", basis="hypothesis")
    assert c.status == "none_in_range"
    assert "WAN 12.5 GB/s, hypothesis basis, optics_Sps: now 3.5 GS/s; no value in 0.035-350 GS/s" in text


def _check_calibration(text: str) -> None:
    """docs/model.md section 11: at load 0.9 other jobs take 90% of each WAN direction, so the rate a
    sync sees is at most the 10% left (queueing only lowers it): each fitted effective rate is
    above 0 and below 10% of its line rate, and every fit converged."""
    import re

    assert "all fits converged: True" in text
    shares = [float(x) / 100 for x in re.findall(r"GB/s\s+(\d+\.\d)%", text)]
    assert len(shares) == 4 and all(0 < s <= 0.1 for s in shares), shares
    assert re.search(r"rows within the engine's 95% interval: \d+ of 12", text)
    assert "break-even median" in text and "delta method" in text

