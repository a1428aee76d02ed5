"""The record a GPU benchmark script leaves: its figures with the device and the versions that made them,
written whole (mlptui.base.files.write_atomic) under $OUT on the device machine, else under .bench/."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mlptui.base.files import write_atomic


def write_gpu_record(name: str, doc: dict[str, Any]) -> Path:
    """Write `doc` as NAME (JSON) with "device", "torch", "triton" and "cuda" added; returns the path."""
    import torch
    import triton

    full = {**doc, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda}
    folder = Path(os.environ.get("OUT", ".bench"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    write_atomic(path, json.dumps(full, indent=1).encode())
    return path
