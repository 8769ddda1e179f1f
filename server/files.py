"""Files the server reads (the snapshot, the users file, PEM files): regular files only, opened
without blocking, with a size limit.

A FIFO, a device or a directory in place of one of them is refused with one line naming the path,
instead of a read that never returns (a FIFO once hung the start-up, the snapshot refresh, and every
SCRAM login, and SIGTERM could no longer stop the server).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


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


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> tuple[os.stat_result, bytes]:
    """The bytes of a regular file of at most ``max_bytes``: opened with O_NONBLOCK (opening a FIFO
    would wait for a writer), checked, then read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        check_regular(path, st, max_bytes)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotARegularFile(f"{path} grew over the limit of {max_bytes} bytes while read")
    return st, data
