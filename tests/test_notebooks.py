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
        # model.md section 12: top-k wins at 100 GbE; the winner changes across 0.1-1,000 GB/s
        assert "hypothesis basis: E' from 0.1 GB/s" in text
        assert "top-k reaches the target first (0.925 s)" in text
        assert any("image/svg+xml" in o.get("data", {}) for o in outputs)
    if path.stem == "shared_wan":
        # model.md section 11: at load 0 the engine gives the closed form's step exactly
        import re

        err = float(re.search(r"load 0: largest relative difference from the closed form (\S+)", text)[1])
        assert err <= 1e-9
        assert "adamw: closed form 4.075 ms" in text.replace("  ", "")
