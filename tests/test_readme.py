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
    np.testing.assert_allclose(first.set_xindex("budget_label").step_s.sel(budget_label="free").values,
                               first.step_s.sel(budget=np.inf).values, rtol=0, atol=0)
