"""Writing files so that they appear whole or not at all: a temporary file in the same folder, renamed
over the target (os.replace is atomic on one file system). Shared by runners, caches and publishing."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_path(folder: Path, final_name: str) -> Path:
    """A fresh hidden file in `folder` whose name ends like `final_name` (writers that pick a format
    by suffix, like the profiler's gzip, keep working); mode as a normal new file, not mkstemp's 0600."""
    fd, name = tempfile.mkstemp(prefix=".tmp-", suffix="-" + final_name, dir=folder)
    os.close(fd)
    os.chmod(name, 0o666 & ~current_umask())
    return Path(name)


@contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """Yield a binary file to write; on success it replaces `path`, on any error it is removed."""
    tmp = temp_path(path.parent, path.name)
    try:
        with open(tmp, "wb") as f:
            yield f
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_atomic(path: Path, data: bytes) -> None:
    with atomic_writer(path) as f:
        f.write(data)
