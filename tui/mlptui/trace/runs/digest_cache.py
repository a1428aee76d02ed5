"""Rank digests kept beside the index cache, so that a run summarised once is summarised again without
parsing any rank.

    lookup(path, key) -> dict | None       the digest of this exact file, or None
    store(path, key, digest) -> bool       never raises; an unwritable folder is skipped

`<sha of the real path>.digest.json` in the index cache folder (mlptui.trace.parse.index_cache), holding
the file's key (device, inode, size, mtime, ctime, the indexing code), the digest's version and a hash of the
modules that compute it, and the digest as plain JSON. Any difference is a miss; a damaged entry (not
JSON, a field of the wrong type: digest_check) is deleted and written anew. Written atomically, 0600, in
the folder the index cache checked (no link, no other user's folder); read without following a link,
only if a regular file of at most MAX_BYTES. `MLPTUI_NO_CACHE=1` turns it off with the index cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from mlptui.base.files import atomic_writer
from mlptui.trace.analysis.ranks.rank_digest import DIGEST_VERSION
from mlptui.trace.parse import cache_folder, index_cache
from mlptui.trace.runs.digest_check import check_digest

# the modules whose code a digest's figures depend on, besides the indexer's (already in the file key)
_MODULES = ("analysis/ranks/rank_digest.py", "analysis/comms/collectives.py", "analysis/steps/steps.py", "analysis/events/intervals.py",
            "analysis/events/launches.py", "analysis/events/tables.py", "analysis/ranks/rank_clock.py", "names/common.py",
            "analysis/critical_path", "analysis/events/op_owner.py")      # a folder: every module in it
_CODE: str | None = None
MAX_BYTES = 256 << 20      # a digest is a few numbers per step and per collective call: MBs for 100k calls


def _code() -> str:
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.blake2b(digest_size=12)
        for name in _MODULES:
            where = root / name
            for path in sorted(where.glob("*.py")) if where.is_dir() else [where]:
                h.update(path.read_bytes())
        _CODE = h.hexdigest()
    return _CODE


def entry_path(path: Path, folder: Path | None = None) -> Path:
    return index_cache.entry_path(path, folder).with_suffix(".digest.json")


def _stamp(key: dict[str, Any]) -> dict[str, Any]:
    return {**key, "digest_version": DIGEST_VERSION, "digest_code": _code()}


def lookup(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    if not index_cache.enabled():
        return None
    folder = index_cache.open_folder()[0]
    if folder is None:
        return None
    entry = entry_path(path, folder)
    try:
        with index_cache.open_entry(entry) as f:
            if os.fstat(f.fileno()).st_size > MAX_BYTES:
                raise ValueError("larger than a digest is")
            doc = orjson.loads(f.read(MAX_BYTES + 1))
        if not isinstance(doc, dict) or set(doc) != {"key", "digest"}:
            raise ValueError("not a digest entry")
        if doc["key"] != _stamp(key):
            return None
        check_digest(doc["digest"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, MemoryError):     # orjson.JSONDecodeError is a ValueError
        cache_folder.discard(entry)
        return None
    digest: dict[str, Any] = doc["digest"]
    return digest


def store(path: Path, key: dict[str, Any], digest: dict[str, Any]) -> bool:
    if not index_cache.enabled():
        return False
    try:
        folder = index_cache.open_folder()[0]
        if folder is None:
            return False
        with atomic_writer(entry_path(path, folder), private=True) as f:
            f.write(orjson.dumps({"key": _stamp(key), "digest": digest}))
        return True
    except (OSError, TypeError, ValueError):
        return False
