"""Local copies of remote traces, keyed by endpoint + remote path + size + mtime.

Layout: `<cache>/remote/<sha of endpoint and path>/<size>-<mtime>/<file name>` with the remote
folder's manifest.json beside it (so `manifest_for` works on the copy unchanged). A copy is written
to a temp file in its own folder and renamed into place, so a half-received file is never taken for
a complete one; older versions of the same remote file are removed once a newer one is complete.

Bounds: the copies together stay under MLPTUI_REMOTE_CACHE_MAX_MB (default DEFAULT_CAP_MB), the least
recently opened going first (never the one just written); a file larger than the cap, or than the free
space of the disk, is refused before a byte of it is received (check_room). The folder is made like the
index cache's (mlptui.base.private_folder: 0700, files 0600, never through a link or in another user's
folder, never under a relative XDG_CACHE_HOME); when it may not be used, copies go to a private
temporary folder removed when mlptui exits, and the trace says so (open_root's note).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mlptui.base.errors import MlptuiError
from mlptui.base.files import write_atomic
from mlptui.base.private_folder import UnsafeFolder, is_private, private_folder, user_cache_base
from mlptui.base.units import size as shown_size

DEFAULT_CAP_MB = 10240
_KEY = re.compile(r"^[0-9a-f]{32}$")
_VERSION = re.compile(r"^([0-9]+)-([0-9]+)$")
_STALE_PART_S = 3600
_FALLBACK: list[Path] = []      # this process's temporary folder, when the cache folder was refused


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/mlptui/remote` (default `~/.cache/mlptui/remote`; a relative XDG_CACHE_HOME is
    ignored, as for the index cache)."""
    return user_cache_base() / "mlptui" / "remote"


def open_root() -> tuple[Path, str | None]:
    """(the folder copies go to, a note for the user when it is not the cache folder). Raises OSError
    when the cache folder cannot be made (a read-only home)."""
    try:
        return private_folder(user_cache_base(), ("mlptui", "remote")), None
    except UnsafeFolder as exc:
        note = f"remote cache not used: {exc}; the copy is kept until mlptui exits"
        if not _FALLBACK:
            _FALLBACK.append(Path(tempfile.mkdtemp(prefix="mlptui-remote-")))
            atexit.register(shutil.rmtree, _FALLBACK[0], True)
        return _FALLBACK[0], note


def cap_bytes() -> int:
    wanted = os.environ.get("MLPTUI_REMOTE_CACHE_MAX_MB", "")
    mb = int(wanted) if wanted.isascii() and wanted.isdigit() else DEFAULT_CAP_MB
    return mb << 20


def check_room(display: str, size: int, root: Path) -> None:
    """Refuse, in one line, a remote file that could not be kept: larger than the cap or the free space."""
    cap = cap_bytes()
    if size > cap:
        raise MlptuiError(f"{display}: the remote file is {shown_size(size)}, more than the {shown_size(cap)} "
                          "remote copies may take (MLPTUI_REMOTE_CACHE_MAX_MB)")
    try:
        st = os.statvfs(root)
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if size > free:
        raise MlptuiError(f"{display}: the remote file is {shown_size(size)}, more than the {shown_size(free)} "
                          f"free in {root}")


@dataclass(frozen=True)
class CachedCopy:
    size: int
    mtime: int
    path: Path


def _key_dir(endpoint: str, remote_path: str, root: Path | None) -> Path:
    digest = hashlib.sha256(f"{endpoint}\0{remote_path}".encode("utf-8", "surrogateescape")).hexdigest()
    return (open_root()[0] if root is None else root) / digest[:32]


def lookup(endpoint: str, remote_path: str, root: Path | None = None) -> CachedCopy | None:
    """The newest complete local copy of this remote file, if any (marked as used now)."""
    try:
        key = _key_dir(endpoint, remote_path, root)
        versions = list(key.iterdir())
    except OSError:
        return None
    name = _safe_name(remote_path)
    best: CachedCopy | None = None
    for version in versions:
        m = _VERSION.match(version.name)
        if m is None:
            continue
        path = version / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if path.is_file() and not path.is_symlink() and st.st_size == int(m.group(1)):
            copy = CachedCopy(int(m.group(1)), int(m.group(2)), path)
            if best is None or copy.mtime > best.mtime:
                best = copy
    if best is not None:
        try:
            os.utime(best.path)        # its recency, for the cap
        except OSError:
            pass
    return best


def _safe_name(remote_path: str) -> str:
    # The remote base name, kept as is (manifests match on it) unless it cannot be a local file name.
    name = remote_path.rstrip("/").rsplit("/", 1)[-1]
    return name if name not in ("", ".", "..") else "trace.json"


def _mkdir_private(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


class CacheWriter:
    """Receives one remote file into a temp file; `commit()` renames it into place atomically."""

    def __init__(self, endpoint: str, remote_path: str, size: int, mtime: int, root: Path | None = None) -> None:
        self.root = open_root()[0] if root is None else root
        self.key = _key_dir(endpoint, remote_path, self.root)
        self.version = self.key / f"{size}-{mtime}"
        _mkdir_private(self.key)
        _mkdir_private(self.version)
        self.final = self.version / _safe_name(remote_path)
        fd, tmp = tempfile.mkstemp(dir=self.version, prefix=".part-")     # 0600
        self.tmp = Path(tmp)
        self.file = os.fdopen(fd, "wb")
        self.size = size
        self.written = 0

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.written += len(data)

    def write_manifest(self, data: bytes) -> None:
        write_atomic(self.version / "manifest.json", data, private=True)

    def commit(self) -> Path:
        self.file.close()
        os.replace(self.tmp, self.final)
        for other in self.key.iterdir():
            if other != self.version and other.is_dir() and not other.is_symlink():
                shutil.rmtree(other, ignore_errors=True)
        keep_under_cap(self.root, keep=self.version)
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
        write_atomic(target, data, private=True)


@dataclass
class Copy:
    """One version folder: a copy, its manifest, and any part file left by a transfer."""

    folder: Path
    files: int
    bytes: int
    used: float


def usage(root: Path) -> list[Copy]:
    """Every version folder under `root`, least recently used first (nothing under a link is counted)."""
    out: list[Copy] = []
    for key in _entries(root, _KEY):
        for version in _entries(key, _VERSION):
            files = size = 0
            used = 0.0
            for f in _entries(version, None):
                try:
                    st = os.lstat(f)
                except OSError:
                    continue
                files += 1
                size += st.st_size
                used = max(used, st.st_mtime)
            out.append(Copy(version, files, size, used))
    return sorted(out, key=lambda c: c.used)


def keep_under_cap(root: Path, keep: Path | None = None) -> int:
    """Remove the least recently used copies until those under `root` take at most cap_bytes(); bytes freed."""
    if not is_private(root):
        return 0
    copies = usage(root)
    total = sum(c.bytes for c in copies)
    freed = 0
    now = time.time()
    for c in copies:
        if c.folder == keep:
            continue
        if total - freed > cap_bytes():
            _remove(c.folder)
            freed += c.bytes
        else:
            for part in c.folder.glob(".part-*"):         # left by a transfer killed an hour ago or more
                if now - part.lstat().st_mtime > _STALE_PART_S:
                    part.unlink(missing_ok=True)
    return freed


def clear(root: Path) -> tuple[int, int]:
    """Remove every copy under `root`: (files, bytes) removed."""
    files = size = 0
    if not is_private(root):
        return 0, 0
    for c in usage(root):
        _remove(c.folder)
        files += c.files
        size += c.bytes
    return files, size


def _remove(version: Path) -> None:
    shutil.rmtree(version, ignore_errors=True)      # removes links, never what they point to
    try:
        version.parent.rmdir()                      # the remote file's folder, once it holds no version
    except OSError:
        pass


def _entries(folder: Path, pattern: re.Pattern[str] | None) -> list[Path]:
    """`folder`'s folders whose names match `pattern`, or with None its regular files; a link is neither."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for name in names:
        if pattern is not None and pattern.match(name) is None:
            continue
        try:
            mode = os.lstat(folder / name).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) if pattern is None else stat.S_ISDIR(mode):
            out.append(folder / name)
    return out
