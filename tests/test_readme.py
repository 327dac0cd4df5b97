"""The README's test command is the one CI runs."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert len(ci) == 1
    assert "    " + ci[0] in readme.splitlines()


def _section(readme: str, heading: str) -> str:
    text = readme.split(f"\n## {heading}\n", 1)[1]
    return text.split("\n## ", 1)[0]


def test_readme_commands_take_the_options_it_shows():
    """Every `bandjax COMMAND` line of the README's command list names a command, and every
    --option on it (and on its continuation lines) is one that command accepts."""
    import re

    from bandjax.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    block = _section((ROOT / "README.md").read_text(), "Commands")
    checked = 0
    current = None
    for line in block.splitlines():
        if not line.startswith("    "):
            current = None
            continue
        m = re.match(r"\s{4}bandjax (\w+|--)", line)
        if m:
            current = parser if m.group(1) == "--" else commands.get(m.group(1))
            assert current is not None, line
        for option in re.findall(r"(--[a-z][a-z-]*)", line) if current else ():
            accepted = {o for a in current._actions for o in a.option_strings}
            assert option in accepted, (current.prog, option)
            checked += 1
    assert checked >= 12  # the list names a dozen options or more


@pytest.mark.slow
def test_readme_python_runs():
    """The blocks of "Use from Python" run as written, and say what they claim."""
    import re

    import numpy as np

    blocks = re.findall(r"```python\n(.*?)```", _section((ROOT / "README.md").read_text(),
                                                          "Use from Python"), re.S)
    assert len(blocks) == 3
    ns: dict = {}
    for code in blocks:
        exec(compile(code, "README.md", "exec"), ns)
    ds = ns["ds"]  # the second block's sweep
    assert set(ds.dims) >= {"dcs", "topology", "gpu", "model", "variant"}
    first = ns["bandjax"].sweep(ns["sc"], bandwidth=12.5, budget=["free", "low", "high"])
    # selected by name and by value as the README says
    np.testing.assert_allclose(first.step_s.sel(budget="free").values,
                               first.step_s.sel(budget=np.inf).values, rtol=0, atol=0)


@pytest.mark.slow
def test_worked_example():
    """The README's worked example (three regions, H100s, 20 ms, Llama-3-8B) states what the model
    gives: each number recomputed here, to the digits the README prints."""
    import numpy as np

    import bandjax

    sc = (bandjax.reference().with_gpu("h100", utilisation=0.4)
          .at_model_size(bandjax.PRESETS["llama3-8b"])
          .replace(dcs=3.0, wan_latency_s=20e-3))
    w = bandjax.winner(sc, topology=["ring", "mesh"], basis=["hypothesis", "exact"])
    ids = list(w["variant"].values)
    assert {ids[i] for i in w["winner"].values.ravel()} == {"band_gpu_allreduce"}
    assert {ids[i] for i in w["runner_up"].values.ravel()} == {"topk"}
    t = w["time_to_target_s"].sel(basis="hypothesis")
    assert np.round(t.values).tolist() == [1112.0, 719.0]  # s, ring then mesh
    assert np.round(w["margin"].sel(basis="hypothesis").values, 2).tolist() == [1.28, 1.25]
    runner = bandjax.sweep(sc, topology=["ring", "mesh"], variant="topk")["time_to_target_s"]
    assert np.round(runner.values).tolist() == [1422.0, 900.0]
    # the study's cluster: top-k wins at 12.5 GB/s
    ref = bandjax.winner(bandjax.reference())
    assert str(ref["variant"].values[int(ref["winner"])]) == "topk"

    def crossing_GBps(s, basis):
        (x,) = np.asarray(bandjax.break_even(s, "E'", "AdamW", basis=basis).x).ravel()
        return x / 1e9

    assert round(crossing_GBps(bandjax.reference(), "hypothesis"), 3) == 1.568
    assert round(crossing_GBps(sc, "hypothesis"), 3) == 2.285
    assert round(crossing_GBps(sc.replace(topology=1.0), "hypothesis"), 3) == 1.154
    assert round(crossing_GBps(sc, "exact"), 3) == 1.219
    assert round(crossing_GBps(sc.replace(topology=1.0), "exact"), 3) == 0.616
