"""Trace file names and the run folder's manifest.json. Nothing here overwrites a trace, and every file
appears whole or not at all: written under a temporary name in the same folder, then renamed."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from filelock import FileLock, Timeout

from mlptui.contract.errors import MlptuiError
from mlptui.contract.manifest import MANIFEST_LOCK

TRACE_SUFFIX = ".pt.trace.json.gz"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "amd", "radeon", "instinct", "intel", "quadro"}


def device_slug(device_name: str) -> str:
    """Short device name for file names: 'NVIDIA H100 80GB HBM3' -> 'h100', 'NVIDIA H200' -> 'h200',
    'NVIDIA GeForce RTX 4090' -> 'rtx4090', 'cpu' -> 'cpu'."""
    words = [w for w in re.split(r"[\s_/-]+", device_name.lower()) if w and w not in _VENDOR_WORDS]
    if not words:
        return "gpu"
    slug = words[0]
    if slug in ("rtx", "gtx", "mi") and len(words) > 1:
        slug += words[1]
    return re.sub(r"[^a-z0-9.]", "", slug) or "gpu"


def trace_name(workload: str, mode: str, shape_slug: str, dtype: str, device: str, when: datetime) -> str:
    return f"{workload}-{mode}-{shape_slug}-{dtype}-{device}-{when:%Y%m%dT%H%M%S}{TRACE_SUFFIX}"


def temp_path(folder: Path, final_name: str) -> Path:
    """A fresh hidden file in `folder` whose name ends like the final one (the profiler gzips by
    suffix)."""
    fd, name = tempfile.mkstemp(prefix=".tmp-", suffix="-" + final_name, dir=folder)
    os.close(fd)
    os.chmod(name, 0o666 & ~_umask())  # mkstemp makes 0600; the final file gets the usual mode
    return Path(name)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publish_trace(tmp: Path, folder: Path, name: str) -> Path:
    """Give the finished temp file its final name without ever replacing an existing file: a taken
    name gets -2, -3, ... before the suffix. The link is atomic and fails if the name exists."""
    stem = name[: -len(TRACE_SUFFIX)] if name.endswith(TRACE_SUFFIX) else name
    for n in range(1, 1000):
        candidate = folder / (name if n == 1 else f"{stem}-{n}{TRACE_SUFFIX}")
        try:
            os.link(tmp, candidate)
        except FileExistsError:
            continue
        except OSError:  # no hard links on this file system: check, then rename
            if candidate.exists():
                continue
            try:
                os.replace(tmp, candidate)
            except OSError as exc:
                raise MlptuiError(f"cannot write {candidate}: {exc.strerror or exc}") from None
            return candidate
        tmp.unlink()
        return candidate
    raise MlptuiError(f"could not find a free name for {name} in {folder}")


def write_atomic(path: Path, data: bytes) -> None:
    tmp = temp_path(path.parent, path.name)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def check_writable(folder: Path) -> None:
    """One line, before any work, when the run folder cannot take files (read-only, no permission)."""
    try:
        temp_path(folder, "probe").unlink()
    except OSError as exc:
        raise MlptuiError(f"cannot write in the run folder {folder}: {exc.strerror or exc}") from None


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.exists():
        return {"mlptui_manifest": MANIFEST_VERSION, "runs": []}
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise MlptuiError(f"{path} is not valid JSON ({exc}); move it away and run again") from None
    except OSError as exc:
        raise MlptuiError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise MlptuiError(f"{path} is not an mlptui manifest (no \"runs\" list); move it away and run again")
    return data


def add_run(folder: Path, run: dict[str, Any]) -> None:
    """Merge one run into the folder's manifest (a run for the same trace file is replaced; entries
    that are not objects were not written by us and are kept as they are)."""
    def merged(runs: list[Any]) -> list[Any]:
        return [r for r in runs if not (isinstance(r, dict) and r.get("trace") == run["trace"])] + [run]

    update_manifest(folder, merged)


LOCK_NAME = MANIFEST_LOCK
LOCK_TIMEOUT_S = 120.0


def update_manifest(folder: Path, change: Callable[[list[Any]], list[Any]]) -> None:
    """Read, change and atomically rewrite the manifest while holding the folder's manifest lock, so
    runs recorded at the same time into one folder (two `mlptui run`s, a `push`) all stay in it.
    Failures (read-only folder, full disk, a lock held too long) end in one line."""
    path = folder / MANIFEST
    try:
        with FileLock(folder / LOCK_NAME, timeout=LOCK_TIMEOUT_S):
            data = read_manifest(folder)
            data["mlptui_manifest"] = MANIFEST_VERSION
            data["runs"] = change(list(data["runs"]))
            write_atomic(path, _manifest_bytes(data))
    except Timeout:
        raise MlptuiError(f"{path}: another process has held its lock for {LOCK_TIMEOUT_S:g} s "
                          f"(remove {folder / LOCK_NAME} if no mlptui is running)") from None
    except OSError as exc:
        raise MlptuiError(f"cannot update {path}: {exc.strerror or exc}") from None


def _manifest_bytes(data: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
    except orjson.JSONEncodeError:
        # What orjson cannot write but a manifest may hold (nesting past 255 levels, integers wider
        # than 64 bits, lone surrogates): the stdlib writer, with ASCII escapes, keeps it exact.
        return (json.dumps(data, indent=2, ensure_ascii=True) + "\n").encode()
