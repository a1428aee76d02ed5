"""The index cache's folder as a whole: its size, a cap with least-recently-used eviction, clearing.

    usage(folder) -> list[Group]           the entries, one Group per trace (its index entry + companions)
    keep_under_cap(folder, keep)           delete the least recently used groups until under cap_bytes()
    clear(folder) -> (files, bytes)        delete every entry
    touch(entry) / discard(entry)          mark an entry used now / delete a damaged one

Recency is an entry's mtime, set on every hit (atime is unreliable: noatime and relatime mounts). The cap
is MLPTUI_CACHE_MAX_MB (default DEFAULT_CAP_MB); an entry just written is never the one evicted.
Only files this cache writes are touched: `<32 hex>.npz`, `<32 hex>.<name>.npz` (companions) and
`<32 hex>.digest.json` (a rank's digest, mlptui.trace.runs.digest_cache), and temp files
(`.tmp-*`) left by a process killed while writing, once they are an hour old; and nothing at all unless
the folder is still a real folder of this user's that no one else can write (is_private): callers pass a
folder checked by mlptui.base.private_folder, and a link put in its place since deletes nothing elsewhere.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlptui.base.private_folder import is_private
from mlptui.base.settings import whole_number

DEFAULT_CAP_MB = 2048
_ENTRY = re.compile(r"^([0-9a-f]{32})(?:\.[a-z_]+)?\.(?:npz|json)$")     # index, companions, rank digests
_STALE_TEMP_S = 3600


@dataclass
class Group:
    """The files of one trace's entry (the index entry and its companions)."""

    key: str
    files: list[Path] = field(default_factory=list)
    bytes: int = 0
    used: float = 0.0        # the latest mtime of its files


def cap_bytes() -> int:
    """MLPTUI_CACHE_MAX_MB in bytes; DEFAULT_CAP_MB when it is unset or not a whole number (then said by
    mlptui.base.settings.setting_problems)."""
    mb = whole_number("MLPTUI_CACHE_MAX_MB")
    return (DEFAULT_CAP_MB if mb is None else mb) << 20


def usage(folder: Path) -> list[Group]:
    """Every group of entries in `folder`, least recently used first."""
    groups: dict[str, Group] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        m = _ENTRY.match(name)
        if m is None:
            continue
        path = folder / name
        try:
            st = path.lstat()
        except OSError:
            continue
        g = groups.setdefault(m.group(1), Group(m.group(1)))
        g.files.append(path)
        g.bytes += st.st_size
        g.used = max(g.used, st.st_mtime)
    return sorted(groups.values(), key=lambda g: g.used)


def keep_under_cap(folder: Path, keep: Path | None = None) -> int:
    """Delete least recently used groups until the folder holds at most cap_bytes(); returns bytes freed."""
    if not is_private(folder):
        return 0
    cap = cap_bytes()
    groups = usage(folder)
    total = sum(g.bytes for g in groups)
    freed = 0
    kept = _ENTRY.match(keep.name) if keep is not None else None
    for g in groups:
        if total - freed <= cap:
            break
        if kept is not None and g.key == kept.group(1):
            continue
        for f in g.files:
            discard(f)
        freed += g.bytes
    _remove_stale_temps(folder)
    return freed


def clear(folder: Path) -> tuple[int, int]:
    """Delete every entry in `folder`: (files, bytes) removed."""
    files = size = 0
    if not is_private(folder):
        return 0, 0
    for g in usage(folder):
        for f in g.files:
            discard(f)
        files += len(g.files)
        size += g.bytes
    return files, size


def touch(entry: Path) -> None:
    try:
        os.utime(entry)
    except OSError:
        pass        # a read-only cache still serves its entries


def discard(entry: Path) -> None:
    try:
        entry.unlink()
    except OSError:
        pass


def _remove_stale_temps(folder: Path) -> None:
    now = time.time()
    try:
        temps = [folder / n for n in os.listdir(folder) if n.startswith(".tmp-")]
    except OSError:
        return
    for t in temps:
        try:
            if now - t.lstat().st_mtime > _STALE_TEMP_S:
                t.unlink()
        except OSError:
            pass
