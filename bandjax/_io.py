"""Writing files whole or not at all; reading files of bounded size that name themselves in errors."""

from __future__ import annotations

import os
import stat
import tempfile
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


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so a
    reader (or a crash) never sees half a file. A ``path`` that exists and is not a regular file
    (``/dev/full``, a FIFO, a directory) is refused with ``OSError`` and left alone."""
    path = Path(path)
    check_regular_or_absent(path, "output file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
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
