"""Rank digests kept beside the index cache, so that a run summarised once is summarised again without
parsing any rank.

    lookup(path, key) -> dict | None       the digest of this exact file, or None
    store(path, key, digest) -> bool       never raises; an unwritable folder is skipped

`<sha of the real path>.digest.json` in the index cache folder (mlptui.trace.parse.index_cache), holding
the file's key (device, inode, size, mtime, ctime, the indexing code), the digest's version and a hash of the
modules that compute it, and the digest as plain JSON. Any difference is a miss; a damaged entry is a miss
and is written anew. Written atomically. `MLPTUI_NO_CACHE=1` turns it off with the index cache.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from mlptui.base.files import atomic_writer
from mlptui.trace.analysis.rank_digest import DIGEST_VERSION
from mlptui.trace.parse import index_cache

# the modules whose code a digest's figures depend on, besides the indexer's (already in the file key)
_MODULES = ("analysis/rank_digest.py", "analysis/collectives.py", "analysis/steps.py", "analysis/intervals.py",
            "analysis/launches.py", "analysis/tables.py", "names/common.py")
_CODE: str | None = None


def _code() -> str:
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.blake2b(digest_size=12)
        for name in _MODULES:
            h.update((root / name).read_bytes())
        _CODE = h.hexdigest()
    return _CODE


def entry_path(path: Path) -> Path:
    return index_cache.entry_path(path).with_suffix(".digest.json")


def _stamp(key: dict[str, Any]) -> dict[str, Any]:
    return {**key, "digest_version": DIGEST_VERSION, "digest_code": _code()}


def lookup(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    if not index_cache.enabled():
        return None
    try:
        doc = orjson.loads(entry_path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != _stamp(key) or not isinstance(doc.get("digest"), dict):
        return None
    digest: dict[str, Any] = doc["digest"]
    return digest


def store(path: Path, key: dict[str, Any], digest: dict[str, Any]) -> bool:
    if not index_cache.enabled():
        return False
    try:
        target = entry_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target) as f:
            f.write(orjson.dumps({"key": _stamp(key), "digest": digest}))
        return True
    except (OSError, TypeError, ValueError):
        return False
