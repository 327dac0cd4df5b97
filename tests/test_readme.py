"""The README's test command is the one CI runs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert len(ci) == 1
    assert "    " + ci[0] in readme.splitlines()
