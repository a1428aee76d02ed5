"""The record a GPU benchmark script leaves: its figures with the device and the versions that made them,
written whole (a temporary file renamed into place) under $OUT on the device machine, else under .bench/."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_gpu_record(name: str, doc: dict[str, Any]) -> Path:
    """Write `doc` as NAME (JSON) with "device", "torch", "triton" and "cuda" added; returns the path."""
    import torch
    import triton

    full = {**doc, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda}
    folder = Path(os.environ.get("OUT", ".bench"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    part = path.with_name(f".{path.name}.part")
    part.write_text(json.dumps(full, indent=1), encoding="utf-8")
    os.replace(part, path)
    return path
