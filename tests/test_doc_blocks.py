"""Every ```python block of README.md and docs/ runs as written, as a script in a fresh process.

A block runs on its own unless its page or the line before it says otherwise, with an HTML comment
the reader does not see:

    <!-- one-session -->      (anywhere on a page, before its first block) the page's blocks run
                              in order in one process, like a notebook, and each block's printed
                              output is checked against the indented block that follows it
    <!-- after-report -->     the block reads a report: it runs in a folder holding the reference
                              report under out/ (what `bandjax report --out out` writes)
    <!-- no-run: WHY -->      not run; WHY says why (an excerpt, a placeholder)

So a block that forgets an import, leans on a name another block defined, starts dask workers
without ``if __name__ == "__main__":`` or names an address that hangs fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SEPARATOR = "----- bandjax doc block {} -----"
TIMEOUT_S = 600  # one script; a block that waits on a server that never answers fails here

_BLOCK = re.compile(r"(?:^<!-- (?P<marker>[a-z-]+)(?::(?P<why>[^>]*))? -->\n)?^```python\n"
                    r"(?P<code>.*?)^```[ \t]*$", re.M | re.S)


@dataclass
class Block:
    page: str
    line: int
    code: str
    marker: str | None
    why: str
    shown: str | None  # the indented output block after it (one-session pages), or None


def _shown_after(text: str, end: int) -> str | None:
    """The first indented block after ``end`` and before the next fence or heading."""
    rest = text[end:]
    stop = re.search(r"^(```|#)", rest, re.M)
    rest = rest[:stop.start()] if stop else rest
    m = re.search(r"(?:^    .*\n?)+", rest, re.M)
    if not m:
        return None
    return "\n".join(line[4:].rstrip() for line in m[0].splitlines()).strip("\n")


def blocks(path: Path) -> tuple[list[Block], bool]:
    """The page's python blocks and whether it is a one-session page."""
    text = path.read_text(encoding="utf-8")
    found = list(_BLOCK.finditer(text))
    one_session = bool(found) and "<!-- one-session -->" in text[:found[0].start("code")]
    out = [Block(path.name, text.count("\n", 0, m.start("code")) + 1, m["code"], m["marker"],
                 (m["why"] or "").strip(), _shown_after(text, m.end()) if one_session else None)
           for m in found]
    return out, one_session


def scripts(path: Path) -> list[tuple[str, list[Block]]]:
    """(name, blocks) of each script the page's blocks make: one per block, or one per page."""
    found, one_session = blocks(path)
    run = [b for b in found if b.marker != "no-run"]
    if one_session:
        return [(f"{path.name} (one session)", run)] if run else []
    return [(f"{path.name}:{b.line}", [b]) for b in run]


def run_script(name: str, parts: list[Block], cwd: Path) -> str:
    """Run ``parts`` as one script in a fresh Python; its stdout, or AssertionError with what broke."""
    code = "".join(f"print({SEPARATOR.format(i)!r}, flush=True)\n{b.code}\n"
                   for i, b in enumerate(parts))
    script = cwd / "doc_block.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, script.name], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{name}: did not finish in {TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise AssertionError(f"{name}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done.stdout


def check_outputs(name: str, parts: list[Block], stdout: str) -> int:
    """Each block's printed output equals the indented block the page shows after it; the count
    of blocks checked."""
    printed = re.split(r"^----- bandjax doc block \d+ -----\n", stdout, flags=re.M)[1:]
    assert len(printed) == len(parts), (name, len(printed), len(parts))
    checked = 0
    for block, out in zip(parts, printed):
        got = "\n".join(line.rstrip() for line in out.splitlines()).strip("\n")
        if block.shown is None or not got:
            continue
        assert got == block.shown, (f"{block.page}:{block.line} prints\n{got}\nbut the page shows\n"
                                    f"{block.shown}")
        checked += 1
    return checked


def _cases():
    return [pytest.param(path, name, parts, id=name) for path in PAGES
            for name, parts in scripts(path)]


def test_every_block_is_run_or_says_why_not():
    """A block left out names its reason; the pages hold blocks to run."""
    total = 0
    for path in PAGES:
        found, _ = blocks(path)
        for b in found:
            assert b.marker in (None, "one-session", "after-report", "no-run"), (b.page, b.line, b.marker)
            if b.marker == "no-run":
                assert len(b.why) >= 10, f"{b.page}:{b.line}: <!-- no-run: WHY --> needs its reason"
        total += len(found)
    assert total >= 20


@pytest.mark.slow
@pytest.mark.parametrize("path, name, parts", _cases())
def test_doc_block_runs(path, name, parts, tmp_path, request):
    if any(b.marker == "after-report" for b in parts):
        folder = request.getfixturevalue("reference_report")[0]
        shutil.copytree(folder, tmp_path / "out")
    stdout = run_script(name, parts, tmp_path)
    if blocks(path)[1]:
        assert check_outputs(name, parts, stdout) >= 1, f"{name}: no printed output was checked"


def test_a_broken_block_fails(tmp_path):
    """The runner itself can fail: a block with a missing import, one whose printed output differs
    from what the page shows, and one that leans on another block's name are each caught."""
    page = tmp_path / "broken.md"
    page.write_text("<!-- one-session -->\n```python\nprint(1 + 1)\n```\n\n    3\n\n"
                    "```python\nprint(np.pi)\n```\n", encoding="utf-8")
    (name, parts), = scripts(page)
    assert [b.shown for b in parts] == ["3", None]
    with pytest.raises(AssertionError, match="NameError: name 'np' is not defined"):
        run_script(name, parts, tmp_path)
    out = run_script(name, parts[:1], tmp_path)
    with pytest.raises(AssertionError, match=r"prints\s+2\s+but the page shows\s+3"):
        check_outputs(name, parts[:1], out)
    alone = tmp_path / "alone.md"
    alone.write_text("```python\nx = 1\n```\n\n```python\nprint(x)\n```\n", encoding="utf-8")
    first, second = scripts(alone)
    run_script(*first, tmp_path)
    with pytest.raises(AssertionError, match="NameError: name 'x' is not defined"):
        run_script(*second, tmp_path)
