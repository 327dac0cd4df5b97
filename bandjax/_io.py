"""Writing files whole or not at all; reading files of bounded size that name themselves in errors."""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
import threading
from pathlib import Path

from ._limits import describe_bytes


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular_or_absent(path: str | os.PathLike, what: str = "file") -> None:
    """Raise ``OSError`` if ``path`` exists and is not a regular file (a device, FIFO, socket or
    directory): writing through a rename would replace it, and reading it may never end."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise OSError(f"{what} {os.fspath(path)!r} is {_kind(mode)}; give the path of a regular "
                      "file")


_PART = re.compile(r"\..+\.bj(?P<pid>\d+)-[A-Za-z0-9_]+\.part")
"""A temporary file of :func:`atomic_write_bytes`: ``.NAME.bj<pid>-<random>.part``, named by the
process that writes it, so that one left by a process that has ended is known at once."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process, or no pid at all: kept
        return True
    return True


def remove_cut_short(folder: str | os.PathLike) -> None:
    """Remove from ``folder`` the temporary files of writes whose process ended before the
    rename (killed mid-write: a netCDF of 100 MB stays behind otherwise). Only this module's
    ``.NAME.bj<pid>-*.part`` files are touched, and only where that process is gone; a file
    removed meanwhile or one that cannot be removed is skipped."""
    try:
        parts = list(Path(folder).glob(".*.part"))
    except OSError:
        return
    for part in parts:
        m = _PART.fullmatch(part.name)
        if m and int(m["pid"]) != os.getpid() and not _alive(int(m["pid"])):
            try:
                part.unlink(missing_ok=True)
            except OSError:
                pass


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so a
    reader (or a crash) never sees half a file. A ``path`` that exists and is not a regular file
    (``/dev/full``, a FIFO, a directory) is refused with ``OSError`` and left alone. Temporary
    files that a killed write left in the folder are removed first (:func:`remove_cut_short`)."""
    path = Path(path)
    check_regular_or_absent(path, "output file")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_cut_short(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.bj{os.getpid()}-",
                               suffix=".part")
    try:
        # mkstemp makes the file private (0600); give it the permissions open() would have
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def read_bounded_bytes(path: str | os.PathLike, what: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``; ``OSError`` naming ``what`` and the path if it is
    missing, not a regular file (``/dev/zero``, a FIFO, a directory) or larger than ``max_bytes``.

    The size is checked before reading and again while reading (a file that grows is cut off at
    ``max_bytes`` + 1 bytes and refused), so memory stays bounded whatever the path is.
    """
    name = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait; regular files ignore it
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {name!r} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{what} {name!r} is a directory; give the path of a file") from None
    except PermissionError:
        raise PermissionError(f"{what} {name!r}: permission denied") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(f"{what} {name!r} is {_kind(st.st_mode)}; give the path of a regular file")
    with os.fdopen(fd, "rb") as f:
        size = st.st_size
        if size > max_bytes:
            raise OSError(f"{what} {name!r} is {describe_bytes(size)}; at most "
                          f"{describe_bytes(max_bytes)} is read")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(f"{what} {name!r} is over {describe_bytes(max_bytes)} (it grew while being "
                      "read); at most that much is read")
    return data


def read_bounded_text(path: str | os.PathLike, what: str, max_bytes: int) -> str:
    """:func:`read_bounded_bytes` decoded as UTF-8; a decoding error names the file and the byte.

    Raises ``OSError`` (missing, not a regular file, too large) or ``ValueError`` (not UTF-8),
    each naming ``what`` and the path.
    """
    data = read_bounded_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {os.fspath(path)!r} is not UTF-8 text (byte "
                         f"0x{data[e.start]:02x} at offset {e.start})") from None


# ------------------------------------------------------------------ Ctrl-C
# A command-line run ends on SIGINT with one line and status 130, at any moment: while Python
# imports, while XLA compiles on its own threads (the main thread is then inside C code and a
# Python handler would not run until it returns), or while dask's workers run. The signal's C
# handler writes to a pipe at once (signal.set_wakeup_fd); a thread waiting on the pipe prints the
# line, ends the worker processes and leaves with os._exit, so no KeyboardInterrupt is ever raised
# (none can be swallowed by a callback such as XLA's garbage-collection hook, and no interpreter
# shutdown races XLA's threads). Every output is written whole or not at all (the atomic writes
# above, the report's and the store's folder swaps), so what is on disk is the old or the new.

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
_interrupt = {"line": "bandjax: interrupted", "installed": False}


def interrupted_line(line: str) -> None:
    """The line a Ctrl-C prints from now on (e.g. ``bandjax report: interrupted``)."""
    _interrupt["line"] = line


def install_interrupt() -> None:
    """End the process on SIGINT with :func:`interrupted_line`'s line on stderr and status 130.

    For the command line only (``python -m bandjax``, the ``bandjax`` script): it replaces the
    process's SIGINT handling. Call it first, before jax or numpy load. A process that started
    with SIGINT ignored (a background job of a shell without job control, ``nohup``) keeps
    ignoring it, as Python itself does."""
    import signal
    import threading

    if _interrupt["installed"] or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # an int where it was ignored at start
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, lambda signum, frame: _leave())

    def watch():
        while True:
            data = os.read(r, 64)
            if data and signal.SIGINT in data:
                _leave()

    threading.Thread(target=watch, name="bandjax-interrupt", daemon=True).start()
    _interrupt["installed"] = True


_leaving = threading.Lock()


def _leave() -> None:
    if not _leaving.acquire(blocking=False):
        return
    # a progress bar drawn on stderr leaves its line open: the one line starts a fresh one
    tqdm = sys.modules.get("tqdm")
    bars = list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or ())
    fresh = "\n" if any(not getattr(b, "disable", True) for b in bars) else ""
    try:
        os.write(2, (fresh + _interrupt["line"] + "\n").encode())
    except OSError:
        pass
    try:  # worker processes of a LocalCluster this command made: ended, silently
        import multiprocessing

        for child in multiprocessing.active_children():
            child.kill()
        from multiprocessing import resource_tracker  # would warn of the workers' semaphores

        pid = getattr(resource_tracker._resource_tracker, "_pid", None)
        if pid:
            os.kill(pid, 9)
    except Exception:  # noqa: BLE001 - leaving anyway
        pass
    os._exit(EXIT_INTERRUPTED)


class children_ignore_interrupt:
    """Within it, SIGINT is blocked in the calling thread, and so in the threads and processes
    started from it (a dask LocalCluster's event loop and worker processes keep it blocked): a
    Ctrl-C at the terminal reaches the whole process group, and the command, not each worker,
    answers it (another thread of the command takes the signal meanwhile)."""

    def __enter__(self):
        import signal

        self._blocked = _interrupt["installed"]
        if self._blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        return self

    def __exit__(self, *exc):
        import signal

        if self._blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return False


OURS = "results.json"  # a folder holding it is a report folder a report may replace


def check_out(out: str | Path) -> Path:
    """``out`` as an absolute path, or ``OSError`` if writing a report there would destroy
    something that is not a report: a path that is not a folder, or a non-empty folder without
    results.json."""
    given = os.fspath(out)
    out = Path(os.path.abspath(out))
    if not out.name:
        raise OSError(f"--out {given!r}: the root folder cannot hold a report; give a folder")
    if out.is_symlink():
        raise OSError(f"--out {given!r} is a symbolic link; give the folder itself")
    if out.exists():
        if not out.is_dir():
            raise OSError(f"--out {given!r} exists and is not a folder; give a new or a report "
                          "folder")
        if any(out.iterdir()) and not (out / OURS).is_file():
            raise OSError(f"--out {given!r} is a folder that holds files but no {OURS}, so it is "
                          "not a bandjax report; give an empty, new or report folder")
    return out
