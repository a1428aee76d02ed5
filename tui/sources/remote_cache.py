"""Local copies of remote traces, keyed by endpoint + remote path + size + mtime.

Layout: `<cache>/remote/<sha of endpoint and path>/<size>-<mtime>/<file name>` with the remote
folder's manifest.json beside it (so `manifest_for` works on the copy unchanged). A copy is written
to a temp file in its own folder and renamed into place, so a half-received file is never taken for
a complete one; older versions of the same remote file are removed once a newer one is complete.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mlptui.base.files import write_atomic


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/mlptui/remote` (default `~/.cache/mlptui/remote`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlptui" / "remote"


@dataclass(frozen=True)
class CachedCopy:
    size: int
    mtime: int
    path: Path


def _key_dir(endpoint: str, remote_path: str) -> Path:
    digest = hashlib.sha256(f"{endpoint}\0{remote_path}".encode("utf-8", "surrogateescape")).hexdigest()
    return cache_root() / digest[:32]


def lookup(endpoint: str, remote_path: str) -> CachedCopy | None:
    """The newest complete local copy of this remote file, if any."""
    key = _key_dir(endpoint, remote_path)
    name = _safe_name(remote_path)
    best: CachedCopy | None = None
    try:
        versions = list(key.iterdir())
    except OSError:
        return None
    for version in versions:
        size_s, _, mtime_s = version.name.partition("-")
        if not (size_s.isdigit() and mtime_s.isdigit()):
            continue
        path = version / name
        if path.is_file() and path.stat().st_size == int(size_s):
            copy = CachedCopy(int(size_s), int(mtime_s), path)
            if best is None or copy.mtime > best.mtime:
                best = copy
    return best


def _safe_name(remote_path: str) -> str:
    # The remote base name, kept as is (manifests match on it) unless it cannot be a local file name.
    name = remote_path.rstrip("/").rsplit("/", 1)[-1]
    return name if name not in ("", ".", "..") else "trace.json"


class CacheWriter:
    """Receives one remote file into a temp file; `commit()` renames it into place atomically."""

    def __init__(self, endpoint: str, remote_path: str, size: int, mtime: int) -> None:
        self.key = _key_dir(endpoint, remote_path)
        self.version = self.key / f"{size}-{mtime}"
        self.version.mkdir(parents=True, exist_ok=True)
        self.final = self.version / _safe_name(remote_path)
        fd, tmp = tempfile.mkstemp(dir=self.version, prefix=".part-")
        self.tmp = Path(tmp)
        self.file = os.fdopen(fd, "wb")
        self.size = size
        self.written = 0

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.written += len(data)

    def write_manifest(self, data: bytes) -> None:
        write_atomic(self.version / "manifest.json", data)

    def commit(self) -> Path:
        self.file.close()
        os.replace(self.tmp, self.final)
        for other in self.key.iterdir():
            if other != self.version and other.is_dir():
                shutil.rmtree(other, ignore_errors=True)
        return self.final

    def abort(self) -> None:
        self.file.close()
        self.tmp.unlink(missing_ok=True)
        try:
            self.version.rmdir()   # only when empty: a complete copy may share this folder
        except OSError:
            pass

    @staticmethod
    def refresh_manifest(trace_path: Path, data: bytes) -> None:
        """Replace the manifest beside a cached copy (it may change while the trace does not)."""
        target = trace_path.parent / "manifest.json"
        try:
            if target.read_bytes() == data:
                return
        except OSError:
            pass
        write_atomic(target, data)
