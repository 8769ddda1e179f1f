"""Files read from paths another user may control (the server's snapshot, users file and PEM
files; a plan's files and its execution state and lock): regular files only, opened without
blocking, with a size limit, and where asked without following a symbolic link.

A FIFO, a device or a directory in place of one of them is refused with one line naming the path,
instead of a read that never returns (a FIFO once hung the start-up, the snapshot refresh, and every
SCRAM login, and SIGTERM could no longer stop the server; a state file linked to ``/dev/zero`` was
read without end). A file opened with ``nofollow`` that is a symbolic link is refused too: a lock
file linked elsewhere would have made the operator overwrite the link's target.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["NotARegularFile", "check_regular", "open_regular", "read_regular", "stat_regular"]


class NotARegularFile(OSError):
    """The path names something else than a regular file, or one over its size limit."""


def check_regular(path: str | os.PathLike[str], st: os.stat_result, max_bytes: int | None = None) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
        raise NotARegularFile(f"{path} is {kind}, not a regular file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise NotARegularFile(f"{path} is {st.st_size} bytes, over the limit of {max_bytes}")


def stat_regular(path: str | Path, max_bytes: int | None = None) -> os.stat_result:
    """``os.stat`` of a regular file of at most ``max_bytes`` (stat never blocks on a FIFO)."""
    st = os.stat(path)
    check_regular(path, st, max_bytes)
    return st


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o600, *,
                 nofollow: bool = False, max_bytes: int | None = None) -> int:
    """A descriptor of the regular file ``path`` (``flags`` as for ``os.open``, plus O_NONBLOCK:
    opening a FIFO would wait for a writer); :class:`NotARegularFile` for anything else, and
    with ``nofollow`` for a symbolic link (O_NOFOLLOW). The caller closes it."""
    extra = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags | extra, mode)
    except OSError as exc:
        if nofollow and exc.errno == errno.ELOOP:
            raise NotARegularFile(f"{path} is a symbolic link, refused") from None
        if exc.errno == errno.ENXIO:      # a FIFO opened for writing with no reader
            raise NotARegularFile(f"{path} is a FIFO, not a regular file") from None
        raise
    try:
        check_regular(path, os.fstat(fd), max_bytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], max_bytes: int, *,
                 nofollow: bool = False) -> tuple[os.stat_result, bytes]:
    """The bytes of a regular file of at most ``max_bytes`` (:func:`open_regular`), checked, then
    read; never more than ``max_bytes + 1`` bytes are read."""
    fd = open_regular(path, nofollow=nofollow, max_bytes=max_bytes)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotARegularFile(f"{path} grew over the limit of {max_bytes} bytes while read")
    return st, data
