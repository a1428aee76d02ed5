"""Triton's installation key kept on disk, so a new process's first kernel launch does not hash Triton.

Before Triton looks a kernel up in its on-disk cache it computes `triton_key()`: a SHA-256 of its own compiler
sources and of libtriton (hundreds of MB), once per process. That hash was most of a new process's first call
at a tuned bucket (benchmarks/results/fused-mlp.md, "First call"). The key only changes when Triton's files
do, so it is kept in the tuning cache's folder next to a stamp of those files (path, size and modification
time of every .py and shared library under the package, cheap to read), and a process whose stamp matches
takes the kept key instead of hashing. A stamp that differs, a damaged file or a Triton without
`triton.runtime.cache.triton_key` leaves Triton's own function alone (it then hashes as before, and the new
key is kept for the next process). MLPTUI_TRITON_KEY=hash turns the kept key off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from mlptui.base.files import write_atomic
from mlptui.runners.fused import tuning_cache

_DONE: list[str] = []  # how this process's key was settled ("kept", "hashed", "off", "unavailable")


def stamp(root: Path) -> str:
    """A digest of the path, size and modification time of every .py and shared library under `root`."""
    h = hashlib.sha256(str(root).encode())
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".so")):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def key_file() -> Path:
    return tuning_cache.cache_folder() / "triton-key.json"


def _replace(original: Any, key: str) -> None:
    """Every loaded Triton module that holds Triton's key function gets one that returns `key`."""
    def kept_key() -> str:
        return key

    for name, module in list(sys.modules.items()):
        if (name == "triton" or name.startswith("triton.")) and getattr(module, "triton_key", None) is original:
            setattr(module, "triton_key", kept_key)  # noqa: B010 (a module attribute mypy cannot see)


def settle() -> str:
    """Once per process: take the kept key where the stamp matches, else let Triton hash and keep its key.
    Returns how the key was settled."""
    if _DONE:
        return _DONE[0]
    _DONE.append(_settle())
    return _DONE[0]


def _settle() -> str:
    if os.environ.get("MLPTUI_TRITON_KEY", "") == "hash":
        return "off"
    try:
        import triton
        from triton.runtime import cache
    except ImportError:
        return "unavailable"
    original = getattr(cache, "triton_key", None)
    if original is None or not callable(original):
        return "unavailable"
    try:
        current = stamp(Path(triton.__file__).parent)
    except OSError:
        return "unavailable"
    path = key_file()
    kept = tuning_cache.read_object(path)
    if kept.get("stamp") == current and isinstance(kept.get("key"), str) and kept["key"]:
        _replace(original, kept["key"])
        return "kept"
    key = original()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"stamp": current, "key": key}).encode())
    except OSError:
        pass
    return "hashed"


def forget() -> None:
    """Settle again on the next call (tests)."""
    _DONE.clear()
