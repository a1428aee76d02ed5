"""Tuned launch configurations kept on disk, so a new process's first call at a known row bucket skips
the tuner (seconds of do_bench per bucket) and costs a file read.

One JSON file per GPU model, compute capability and Triton version, under
`$XDG_CACHE_HOME/mlptui/fused/` (default `~/.cache/mlptui/fused/`; a relative XDG_CACHE_HOME is ignored,
as the XDG Base Directory spec asks). Inside, one entry per (N, K, dtype, row bucket, aligned, persistent):
the configuration and load path the tuner chose. The compiled kernels themselves are kept by Triton's own
on-disk cache (`TRITON_CACHE_DIR`, default `~/.triton/cache`), keyed by source, configuration and
device: once the configuration is known, a new process loads the binary instead of compiling it.

Writes are atomic (a temporary file, then `os.replace`) under a file lock, so two processes tuning at
once keep both entries. A damaged file or entry is ignored (and rewritten at the next store), never
trusted: each entry is rebuilt into a GateUpConfig and must fit the device's shared memory.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from filelock import FileLock

from mlptui.runners.fused.configs import GateUpConfig

Choice = tuple[GateUpConfig, bool]  # (configuration, use_tma)

_LOADED: dict[Path, dict[str, Any]] = {}


def cache_folder() -> Path:
    """`$XDG_CACHE_HOME/mlptui/fused` where XDG_CACHE_HOME is absolute, else `~/.cache/mlptui/fused`."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "mlptui" / "fused"


def cache_file(device: str, triton_version: str) -> Path:
    """The file for one GPU model (name and capability, e.g. `NVIDIA H100 80GB HBM3 sm90`) and Triton."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{device}-triton-{triton_version}").strip("-").lower()
    return cache_folder() / f"{slug}.json"


def entry_key(n: int, k: int, dtype: str, bucket: int, aligned: bool, persistent: bool, *,
              train: bool = False) -> str:
    """One entry's key; `train`: the training kernel's own choice (it also writes gate and up)."""
    return f"n{n}-k{k}-{dtype}-m{bucket}-{'aligned' if aligned else 'unaligned'}-" \
           f"{'persistent' if persistent else 'transient'}{'-train' if train else ''}"


def read_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; {} when it is missing, unreadable or not an object."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _entries(path: Path) -> dict[str, Any]:
    found = _LOADED.get(path)
    if found is None:
        found = _LOADED[path] = read_object(path)
    return found


def _choice(value: Any, store_gu: bool = False) -> Choice | None:
    """An entry rebuilt and checked, or None where it is damaged or does not fit."""
    if not isinstance(value, dict) or not isinstance(value.get("use_tma"), bool):
        return None
    fields = value.get("config")
    if not isinstance(fields, dict):
        return None
    try:
        config = GateUpConfig(**fields)
    except TypeError:
        return None
    ints = (config.block_m, config.block_n, config.block_k, config.num_warps, config.num_stages,
            config.group_m, config.programs_per_sm)
    if not all(type(v) is int and v > 0 for v in ints) or not config.fits(store_gu=store_gu):
        return None
    return config, value["use_tma"]


def lookup(path: Path, key: str, *, store_gu: bool = False) -> Choice | None:
    """The choice kept for `key` in `path`, read once per process (`store_gu`: it must fit the training
    epilogue's shared memory)."""
    return _choice(_entries(path).get(key), store_gu)


def store(path: Path, key: str, config: GateUpConfig, use_tma: bool) -> None:
    """Add one entry, keeping what other processes wrote meanwhile. A cache that cannot be written
    (read-only home, full disk) only costs the next process a tuning: the error is not raised."""
    _write(path, key, {"config": config.as_dict(), "use_tma": use_tma})


def record(path: Path, key: str) -> Any:
    """The raw value kept for `key` in `path` (a JSON file of this module's format), read once per process."""
    return _entries(path).get(key)


def store_record(path: Path, key: str, value: Any) -> None:
    """Add one raw JSON value to `path`, as `store` does: atomically, under the lock, errors not raised."""
    _write(path, key, value)


def _write(path: Path, key: str, value: Any) -> None:
    _entries(path)[key] = value
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock", timeout=10):
            doc = read_object(path)
            doc[key] = value
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(doc, f, indent=1, sort_keys=True)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        _LOADED[path] = doc
    except OSError:
        return


def forget_loaded() -> None:
    """Drop what this process read (tests; a process that wants to see other processes' entries)."""
    _LOADED.clear()
