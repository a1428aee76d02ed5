"""Opening an input file: only a regular file is ever read, and never more than its size.

    open_regular(path, source) -> (file, stat)     refuses a FIFO, a device, a socket or a folder in one
                                                    line before any read; never blocks on a FIFO
    read_exactly(f, size) -> bytes                  at most `size` bytes (a file that grows is not followed)
    path_problem(exc, source) -> TraceError         the one line for an OSError about a path
    shown(path) -> str                              a path fit for a one-line message (very long ones cut)

Every whole-file read of a trace (plain or gzip), of a manifest, and the cheap sniffs of a folder's files
go through here, so `/dev/zero`, a named pipe or a 10 GB sparse file cost a stat, not a read.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

from mlptui.base.errors import TraceError

_SHOWN = 160         # characters of a path kept in a message (a 5,000-character path is still one line)
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def shown(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if len(text) <= _SHOWN:
        return text
    half = _SHOWN // 2
    return f"{text[:half]}…{text[-half:]} ({len(text)} characters)"


def kind_of(mode: int) -> str | None:
    """What a file that is not a regular file is ("a named pipe (FIFO)", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def path_problem(exc: OSError, source: str, missing: str = "no such file") -> TraceError:
    """The one line for an OSError met while looking at or opening `source` (`missing`: what to say when
    it does not exist)."""
    name = shown(source)
    code = exc.errno
    if code == errno.ENOENT:
        return TraceError(f"{name}: {missing}")
    if code == errno.ELOOP:
        return TraceError(f"{name}: too many levels of symbolic links (a symlink loop)")
    if code == errno.ENAMETOOLONG:
        return TraceError(f"{name}: file name too long")
    if code == errno.ENOTDIR:
        return TraceError(f"{name}: a part of the path is not a folder")
    if code in (errno.EACCES, errno.EPERM):
        return TraceError(f"{name}: permission denied")
    if code == errno.EISDIR:
        return TraceError(f"{name}: is a folder, not a trace file")
    return TraceError(f"{name}: cannot read ({exc.strerror or exc})")


def refuse_kind(mode: int, source: str) -> None:
    what = kind_of(mode)
    if what == "a folder":
        raise TraceError(f"{shown(source)}: is a folder, not a trace file")
    if what is not None:
        raise TraceError(f"{shown(source)}: is {what}, not a regular file; only regular files are read")


def open_regular(path: str | os.PathLike[str] | Path, source: str | None = None) -> tuple[io.BufferedReader, os.stat_result]:
    """`path` opened for reading, with its stat; raises a one-line TraceError for anything but a regular
    file, before reading a byte. O_NONBLOCK keeps the open of a FIFO from waiting for a writer; the
    file's type is checked again on the descriptor, so a path swapped after the stat is caught too."""
    name = os.fspath(path) if source is None else source
    try:
        refuse_kind(os.stat(path).st_mode, name)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise path_problem(exc, name) from None
    try:
        st = os.fstat(fd)
        refuse_kind(st.st_mode, name)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb"), st


def identity(st: os.stat_result) -> tuple[int, ...]:
    """A file's identity as the kernel keeps it: device, inode, size, mtime and ctime (any write moves the
    ctime, so an edit that keeps size and mtime changes it too)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_exactly(f: io.BufferedReader, size: int) -> bytes:
    """The file's first `size` bytes (fewer when it shrank): a read bounded by the size it had when opened."""
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = f.read(min(left, 8 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular(path: str | os.PathLike[str] | Path, source: str | None = None, limit: int | None = None) -> bytes:
    """All of a regular file, refused in one line when it is bigger than `limit` bytes."""
    f, st = open_regular(path, source)
    with f:
        if limit is not None and st.st_size > limit:
            raise TraceError(f"{shown(source or os.fspath(path))}: {st.st_size} bytes, more than the "
                             f"{limit} this file may have")
        return read_exactly(f, st.st_size)
