"""Writing files so that they appear whole or not at all: a temporary file in the same folder, renamed
over the target (os.replace is atomic on one file system). Shared by runners, caches and publishing.

The process umask is never read nor changed (changing it, even for an instant, changes it for every
thread): a normal file is created with mode 0666 and the kernel takes the umask off; a private one
(`private=True`, the caches) is set to exactly 0600 on its descriptor.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _create(folder: Path, final_name: str, private: bool) -> tuple[int, Path]:
    """A new file `.tmp-<random>-<final_name>` in `folder`, open for writing: (descriptor, path)."""
    for _ in range(100):
        path = folder / f".tmp-{secrets.token_hex(6)}-{final_name}"
        try:
            fd = os.open(path, _NEW, 0o600 if private else 0o666)
        except FileExistsError:
            continue
        if private:
            try:
                os.fchmod(fd, 0o600)        # whatever the umask took off the owner's bits
            except OSError:
                os.close(fd)
                os.unlink(path)
                raise
        return fd, path
    raise FileExistsError(f"{folder}: no free temporary file name")


def temp_path(folder: Path, final_name: str, private: bool = False) -> Path:
    """A fresh hidden file in `folder` whose name ends like `final_name` (writers that pick a format
    by suffix, like the profiler's gzip, keep working); mode as a normal new file, or 0600 if private."""
    fd, path = _create(folder, final_name, private)
    os.close(fd)
    return path


@contextmanager
def atomic_writer(path: Path, private: bool = False) -> Iterator[BinaryIO]:
    """Yield a binary file to write; on success it replaces `path`, on any error it is removed."""
    fd, tmp = _create(path.parent, path.name, private)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


def write_atomic(path: Path, data: bytes, private: bool = False) -> None:
    with atomic_writer(path, private) as f:
        f.write(data)
