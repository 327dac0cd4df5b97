"""bandjax's persistent compilation cache: in the user's cache folder, off by a variable, never
over a cache folder already configured, and never in the user's home during the tests."""

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bandjax import _jax

ROOT = Path(__file__).resolve().parents[1]


def test_cache_goes_to_the_users_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    default = {"jax_compilation_cache_dir": str(tmp_path / "xdg" / "bandjax"),
               "jax_persistent_cache_min_compile_time_secs": _jax.CACHE_MIN_COMPILE_S,
               "jax_compilation_cache_max_size": _jax.CACHE_MAX_BYTES}
    assert _jax.cache_settings({"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == default
    # no XDG_CACHE_HOME, or a relative one (ignored, as the XDG spec says): ~/.cache
    home = str(tmp_path / "home" / ".cache" / "bandjax")
    for env in ({}, {"XDG_CACHE_HOME": "relative/dir"}, {"XDG_CACHE_HOME": ""}):
        assert _jax.cache_settings(env)["jax_compilation_cache_dir"] == home, env
    moved = _jax.cache_settings({"BANDJAX_CACHE_DIR": str(tmp_path / "elsewhere")})
    assert moved["jax_compilation_cache_dir"] == str(tmp_path / "elsewhere")
    # the user's least compile time and bound are kept
    assert "jax_persistent_cache_min_compile_time_secs" not in _jax.cache_settings(
        {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "2"})
    assert "jax_compilation_cache_max_size" not in _jax.cache_settings(
        {"JAX_COMPILATION_CACHE_MAX_SIZE": "-1"})


def test_the_cache_locks_its_folder_around_each_entry(tmp_path):
    """A new process with bandjax's settings writes its entries under JAX's file lock (the
    bound turns it on), so a second process never reads an entry half written."""
    code = ("import jax, jax.numpy as jnp, bandjax._jax\n"
            "jax.jit(lambda x: jnp.sin(x) * 3)(jnp.arange(4.0)).block_until_ready()\n"
            "print(jax.config.jax_compilation_cache_max_size)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "BANDJAX_"))}
    env.update(BANDJAX_CACHE_DIR=str(tmp_path / "c"), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=1800)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == _jax.CACHE_MAX_BYTES
    assert (tmp_path / "c" / ".lockfile").exists()
    assert list((tmp_path / "c").glob("*-cache")) and list((tmp_path / "c").glob("*-atime"))


def test_a_folder_an_unbounded_cache_kept_takes_new_entries_without_a_word(tmp_path):
    """Entries written while the cache was unbounded (an older bandjax, or the user's
    JAX_COMPILATION_CACHE_MAX_SIZE=-1) have no last-use file; JAX's bounded cache then failed
    every new write with a warning. The next bandjax process dates them and writes its own."""
    def compile_in_a_new_process(expression, **extra):
        code = ("import jax, jax.numpy as jnp, bandjax._jax\n"
                f"jax.jit(lambda x: {expression})(jnp.arange(4.0)).block_until_ready()\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE", "BANDJAX_"))}
        env.update(BANDJAX_CACHE_DIR=str(tmp_path / "c"), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   PYTHONPATH=str(ROOT), **extra)
        return subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code],
                              capture_output=True, text=True, env=env, timeout=1800)  # a hang guard only

    old = compile_in_a_new_process("jnp.sin(x) * 3", JAX_COMPILATION_CACHE_MAX_SIZE="-1")
    assert old.returncode == 0, old.stderr[-2000:]
    undated = list((tmp_path / "c").glob("*-cache"))
    assert undated and not list((tmp_path / "c").glob("*-atime"))
    new = compile_in_a_new_process("jnp.cos(x) * 5")
    assert new.returncode == 0 and "Error writing" not in new.stderr, new.stderr[-2000:]
    entries = list((tmp_path / "c").glob("*-cache"))
    assert len(entries) == len(undated) + 1  # the new program kept
    assert all(e.with_name(e.name[:-len("-cache")] + "-atime").exists() for e in entries)


@pytest.mark.parametrize("off", ["1", "true", "yes", "YES"])
def test_cache_can_be_turned_off(off):
    assert _jax.cache_settings({"BANDJAX_NO_CACHE": off, "XDG_CACHE_HOME": "/tmp/x"}) == {}
    for on in ("", "0", "no"):
        assert _jax.cache_settings({"BANDJAX_NO_CACHE": on, "XDG_CACHE_HOME": "/tmp/x"}) != {}


def test_a_configured_cache_folder_is_kept():
    assert _jax.cache_settings({"XDG_CACHE_HOME": "/tmp/x"}, configured_dir="/users/own") == {}


def test_the_test_run_caches_in_its_temporary_folder():
    # tests/conftest.py: JAX's cache and XDG_CACHE_HOME in the run's temporary folder, so nothing
    # of the suite (nor a subprocess that drops JAX_COMPILATION_CACHE_DIR) writes to ~/.cache
    shared = os.environ["BANDJAX_TEST_SHARED"]
    assert jax.config.jax_compilation_cache_dir.startswith(shared)
    assert os.environ["XDG_CACHE_HOME"].startswith(shared)
    assert not jax.config.jax_compilation_cache_dir.startswith(str(Path.home() / ".cache"))


def _scaled(x, n):
    return jnp.sin(x) * n + 1.0


def test_a_quick_function_keeps_its_traced_program_and_reads_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv("BANDJAX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BANDJAX_NO_CACHE", raising=False)
    monkeypatch.setattr(_jax, "_LOADED", {})
    kept = []
    real_keep = _jax._keep
    monkeypatch.setattr(_jax, "_keep", lambda path, *a: kept.append(path) or real_keep(path, *a))
    plain = jax.jit(_scaled, static_argnames="n", compiler_options=_jax.quick_compile())
    x = np.linspace(0.0, 1.0, 5)

    def fresh():  # a new process's view: nothing in memory, a new wrapper
        monkeypatch.setattr(_jax, "_LOADED", {})
        return _jax.quick(jax.jit(_scaled, static_argnames="n"), static_argnames=("n",))

    q = fresh()
    np.testing.assert_array_equal(np.asarray(q(x, n=3.0)), np.asarray(plain(x, n=3.0)))
    assert len(kept) == 1 and kept[0].parent == tmp_path / "programs" and kept[0].exists()
    q = fresh()
    np.testing.assert_array_equal(np.asarray(q(x, n=3.0)), np.asarray(plain(x, n=3.0)))
    assert len(kept) == 1  # read back from the file, not traced again
    # another static value, shape or dtype is another program
    for args, n in [((x,), 4.0), ((x[:3],), 3.0), ((x.astype(np.float32),), 3.0)]:
        np.testing.assert_array_equal(np.asarray(q(*args, n=n)), np.asarray(plain(*args, n=n)))
    assert len(kept) == 4 and len(list((tmp_path / "programs").glob("*.bin"))) == 4
    with jax.enable_x64(False):  # the same arguments with 64-bit floats off: another program
        low = plain(x, n=3.0)
        assert low.dtype == np.float32 and q(x, n=3.0).dtype == np.float32
        np.testing.assert_array_equal(np.asarray(q(x, n=3.0)), np.asarray(low))
    assert len(kept) == 5
    # a file that cannot be read is traced anew (and replaced); so is another program's file
    kept[0].write_bytes(b"not a program")
    q = fresh()
    np.testing.assert_array_equal(np.asarray(q(x, n=3.0)), np.asarray(plain(x, n=3.0)))
    assert len(kept) == 6 and kept[5] == kept[0]
    kept[0].write_bytes(kept[1].read_bytes())  # n = 4's program under n = 3's name
    q = fresh()
    np.testing.assert_array_equal(np.asarray(q(x, n=3.0)), np.asarray(plain(x, n=3.0)))
    assert len(kept) == 7 and kept[6] == kept[0]
    # a static argument by position, or the cache off: the plain jitted call, nothing kept
    assert _jax.kept_program(_scaled, {}, ("n",), (x, 5.0), {}) is None
    monkeypatch.setenv("BANDJAX_NO_CACHE", "1")
    q = fresh()
    np.testing.assert_array_equal(np.asarray(q(x, n=6.0)), np.asarray(plain(x, n=6.0)))
    assert len(kept) == 7


def _cubed(x, n):
    return jnp.cos(x) ** 3 * n


def test_a_kept_program_is_written_once_not_to_jaxs_cache_too(tmp_path, monkeypatch):
    """bandjax keeps its quick programs itself (the executable): JAX's persistent cache does not
    get them too (each executable was serialised twice). Other compiles still go there."""
    from jax._src import compilation_cache as cc

    monkeypatch.setenv("BANDJAX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BANDJAX_NO_CACHE", raising=False)
    monkeypatch.setattr(_jax, "_LOADED", {})
    written = []
    real_put = cc.put_executable_and_time
    monkeypatch.setattr(cc, "put_executable_and_time",
                        lambda key, name, *a, **k: written.append(name) or real_put(key, name, *a, **k))
    least = jax.config.jax_persistent_cache_min_compile_time_secs
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # bandjax's (the suite: 0.2)
    try:
        x = np.linspace(0.0, 2.0, 7)
        q = _jax.quick(jax.jit(_cubed, static_argnames="n"), static_argnames=("n",))
        np.testing.assert_allclose(np.asarray(q(x, n=7.0)), np.asarray(_cubed(x, 7.0)), rtol=1e-15)
        assert len(list((tmp_path / "programs").glob("*.bin"))) == 1
        assert not any("flat" in name for name in written), written
        jax.jit(lambda v: jnp.tan(v) * 11.0)(x)  # another compile in this thread: JAX keeps it
        assert written, "JAX's own cache still takes the compiles bandjax does not keep"
    finally:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", least)


CHILD = """
import jax, bandjax
bandjax.sweep(bandwidth=[1.0, 2.0], budget=[10.0, 20.0], quantities=("step_s",))
print(jax.config.jax_compilation_cache_dir)
"""


def _run(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE", "BANDJAX_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "xdg"),
               **extra)
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1800)  # a hang guard only
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _files(folder: Path) -> list:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


@pytest.mark.slow
def test_a_new_process_writes_the_cache_where_told(tmp_path):
    assert _run(tmp_path) == str(tmp_path / "xdg" / "bandjax")
    assert _files(tmp_path / "xdg" / "bandjax"), "the sweep's compiled function is cached"
    assert [p.name for p in tmp_path.iterdir()] == ["xdg"]  # not in HOME, not in the working dir


@pytest.mark.slow
def test_a_new_process_with_the_cache_off_writes_none(tmp_path):
    assert _run(tmp_path, BANDJAX_NO_CACHE="1") == "None"
    assert not _files(tmp_path)  # nothing anywhere: not in XDG_CACHE_HOME, not in HOME, not here


@pytest.mark.slow
def test_a_new_process_keeps_the_users_own_cache_folder(tmp_path):
    own = tmp_path / "own"
    # the user's folder, at the user's (here: any) least compile time
    assert _run(tmp_path, JAX_COMPILATION_CACHE_DIR=str(own),
                JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0") == str(own)
    # bandjax's own kept programs stay in bandjax's folder (as its figures and engine runs do)
    assert _files(own) and all("programs" in p.relative_to(tmp_path).parts
                               for p in _files(tmp_path / "xdg"))


def test_a_cache_folder_that_is_a_file_is_one_warning_line_and_nothing_cached(tmp_path):
    # BANDJAX_CACHE_DIR naming a file: the command says so in one line and runs without a cache
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE", "BANDJAX_"))}
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    env.update(PYTHONPATH=str(ROOT), BANDJAX_CACHE_DIR=str(blocker), HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-m", "bandjax", "need", "--utilisation", "0.5"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)  # a hang guard only
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert lines == [f"bandjax need: warning: BANDJAX_CACHE_DIR = {str(blocker)!r} is not a "
                     "folder: nothing is cached this run (point it at a folder, or unset it)"]
    assert blocker.read_text() == "not a folder\n" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.slow
def test_a_jax_cache_entry_cut_short_is_compiled_anew_without_a_word(tmp_path):
    # a process ended while JAX wrote an entry (JAX writes in place) leaves it cut short: the
    # next command reads it, JAX compiles anew, and the command line prints nothing about it
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE", "BANDJAX_"))}
    env.update(PYTHONPATH=str(ROOT), BANDJAX_CACHE_DIR=str(tmp_path / "cache"),
               HOME=str(tmp_path / "home"))
    argv = [sys.executable, "-m", "bandjax", "need", "--utilisation", "0.5"]
    first = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)  # a hang guard only
    assert first.returncode == 0 and first.stderr == "", first.stderr[-2000:]
    entries = [p for p in (tmp_path / "cache").glob("jit_*-cache")]
    assert entries, "JAX's cache has entries"
    for p in entries:
        p.write_bytes(p.read_bytes()[:20])
    again = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)  # a hang guard only
    assert again.returncode == 0 and again.stderr == "", again.stderr[-2000:]
    assert again.stdout == first.stdout


def test_trim_keeps_the_most_recently_used_and_removes_writes_cut_short(tmp_path):
    from bandjax._cache import PART_STALE_S, trim

    now = 1_000_000_000.0
    for i in range(4):  # a.png used last, d.png first; each with its .svg beside it
        for suffix in (".png", ".svg"):
            p = tmp_path / f"{'abcd'[i]}{suffix}"
            p.write_text("x")
            os.utime(p, (now - i, now - i))
    cut = tmp_path / ".e.png.x1.part"  # a write whose process was killed long ago
    cut.write_text("half")
    os.utime(cut, (now - 2 * PART_STALE_S,) * 2)
    going = tmp_path / ".f.png.x2.part"  # a write going on now, in another process
    going.write_text("half")
    trim(tmp_path, "*.png", 2, companions=(".svg",))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".f.png.x2.part", "a.png", "a.svg",
                                                          "b.png", "b.svg"]
