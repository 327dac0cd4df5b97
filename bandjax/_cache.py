"""bandjax's cache folder: where JAX's compiled functions, the report's figures and the event
engine's runs are kept between processes (no jax here: the event engine's workers read it too)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from ._io import remove_cut_short


class CacheWarning(UserWarning):
    """The cache folder cannot be used (the command line prints it as one line)."""


CACHE_OFF_ENV = "BANDJAX_NO_CACHE"  # set to 1 (or true, yes): no cache from bandjax
CACHE_DIR_ENV = "BANDJAX_CACHE_DIR"  # a folder for the cache instead of the default
_OFF = ("", "0", "false", "no", "off")


def cache_folder(environ=None) -> Path | None:
    """``$BANDJAX_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/bandjax`` (an absolute
    ``XDG_CACHE_HOME``), else ``~/.cache/bandjax``: the user's cache folder, never the working
    directory. None when ``BANDJAX_NO_CACHE`` is 1 (or true, yes, on), when no home folder is
    known, or when the path is there but is not a folder (:func:`not_a_folder` says so)."""
    env = os.environ if environ is None else environ
    if _off(env):
        return None
    if env.get(CACHE_DIR_ENV):
        path = Path(env[CACHE_DIR_ENV]).expanduser().absolute()
    else:
        xdg = env.get("XDG_CACHE_HOME", "")
        if xdg and os.path.isabs(xdg):
            base = Path(xdg)
        else:
            try:
                base = Path.home() / ".cache"
            except RuntimeError:  # no home folder known
                return None
        path = base / "bandjax"
    if not path.is_absolute() or not_a_folder(path):
        return None
    return path


def _off(env) -> bool:
    return env.get(CACHE_OFF_ENV, "").strip().lower() not in _OFF


def not_a_folder(path: Path) -> bool:
    """True where ``path`` exists and is not a folder (a file, a device): no cache there."""
    try:
        return path.exists() and not path.is_dir()
    except OSError:  # unreadable: treated as absent, each write then fails and is skipped
        return False


def warn_if_unusable(environ=None) -> None:
    """A :class:`CacheWarning` where ``BANDJAX_CACHE_DIR`` names something that is not a folder
    (and the cache is not off): nothing is cached then."""
    env = os.environ if environ is None else environ
    where = env.get(CACHE_DIR_ENV)
    if where and not _off(env) and cache_folder(env) is None:
        import warnings

        warnings.warn(f"{CACHE_DIR_ENV} = {where!r} is not a folder: nothing is cached this run "
                      "(point it at a folder, or unset it)", CacheWarning, stacklevel=3)


PART_STALE_S = 3600.0
"""A write's temporary ``.NAME.*.part`` file (:func:`bandjax._io.atomic_write_bytes`) older than
this was cut short (its process was killed): :func:`trim` removes it."""


def trim(folder: Path, pattern: str, keep: int, companions: tuple[str, ...] = ()) -> None:
    """Keep the ``keep`` most recently used entries of ``folder`` matching ``pattern`` (and each
    one's files with the ``companions`` suffixes beside it), remove the rest, and remove writes
    left cut short (:data:`PART_STALE_S`). A file another process removed meanwhile is skipped."""
    kept = sorted(folder.glob(pattern), key=_mtime, reverse=True)
    for old in kept[keep:]:
        old.unlink(missing_ok=True)
        for suffix in companions:
            old.with_suffix(suffix).unlink(missing_ok=True)
    remove_cut_short(folder)  # a write whose process has ended, at once
    stale = time.time() - PART_STALE_S
    for part in folder.glob(".*.part"):
        if 0.0 < _mtime(part) < stale:
            part.unlink(missing_ok=True)


def date_unbounded_entries(folder: Path) -> int:
    """Give each JAX cache entry in ``folder`` without a last-use file one (its own modification
    time); return how many were given one.

    JAX's bounded cache (``jax_compilation_cache_max_size``) reads every entry's ``KEY-atime``
    before it writes a new one, and an entry written while the cache was unbounded has none: every
    write then fails (a FileNotFoundError that JAX prints as a warning) and nothing new is kept.
    Entries that bandjax versions before the bound wrote are such entries. One listing of the
    folder, at import; an entry another process removes meanwhile is skipped."""
    try:
        names = set(os.listdir(folder))  # one read of the folder, no stat an entry
    except OSError:
        return 0
    dated = 0
    for name in names:
        key = name[: -len("-cache")]
        if not name.endswith("-cache") or f"{key}-atime" in names:
            continue
        try:
            entry = folder / name
            (folder / f"{key}-atime").write_bytes(entry.stat().st_mtime_ns.to_bytes(8, "little"))
            dated += 1
        except OSError:  # removed meanwhile, or a folder we may read but not write
            continue
    return dated


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another process: the oldest, and nothing to remove
        return 0.0


def source_digest(root: Path, pattern: str, context: tuple) -> str:
    """A hex digest of ``context`` (the versions and the like that decide a kept result) and of
    every file under ``root`` matching ``pattern``, each by its path from ``root`` and its bytes:
    what a cache's keys hold besides a result's own inputs, so that changed code misses."""
    h = hashlib.sha256(repr(context).encode())
    for path in sorted(Path(root).glob(pattern)):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()
