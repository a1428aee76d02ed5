"""Trace file names and publishing a finished trace (the manifest is mlptui.contract.manifest). Nothing
here overwrites a trace, and every file appears whole or not at all: written under a temporary name in
the same folder, then renamed."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError
from mlptui.base.files import temp_path
from mlptui.contract.manifest import Manifest, add_run, read_manifest, update_manifest
from mlptui.contract.vocabulary import TRACE_SUFFIX

__all__ = ["add_run", "check_writable", "device_slug", "publish_trace", "read_manifest", "set_distributed",
           "temp_path", "trace_name", "TRACE_SUFFIX"]
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


def check_writable(folder: Path) -> None:
    """One line, before any work, when the run folder cannot take files (read-only, no permission)."""
    try:
        temp_path(folder, "probe").unlink()
    except OSError as exc:
        raise MlptuiError(f"cannot write in the run folder {folder}: {exc.strerror or exc}") from None


def set_distributed(folder: Path, info: dict[str, Any]) -> None:
    """The manifest's "distributed" block of a multi-rank run: world size, backend, NCCL version and
    each rank's trace and unprofiled step time."""
    def change(m: Manifest) -> None:
        m.extra["distributed"] = info
    update_manifest(folder, change)
