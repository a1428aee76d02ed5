"""What a run records about the machine: the device and its properties, and library versions."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

import torch

from mlptui.runners.record.output import device_slug

_VERSIONED = {"torch": "torch", "triton": "triton", "kernels": "kernels", "liger_kernel": "liger-kernel"}


def device_info(device: str) -> dict[str, Any]:
    if device != "cuda":
        name = _cpu_model() or platform.processor() or platform.machine() or "cpu"
        return {"name": name, "slug": "cpu", "type": "cpu", "cores": os.cpu_count()}
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    info: dict[str, Any] = {"name": props.name, "slug": device_slug(props.name), "type": "cuda",
                            "index": index, "capability": f"{props.major}.{props.minor}"}
    for attr in sorted(dir(props)):
        if attr.startswith("_") or attr in info:
            continue
        value = getattr(props, attr, None)
        if isinstance(value, (bool, int, float, str)):
            info[attr] = value
    return info


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for key, dist in _VERSIONED.items():
        try:
            found[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[key] = None
    found["torch"] = torch.__version__
    found["cuda"] = torch.version.cuda
    found["python"] = platform.python_version()
    found["mlptui"] = importlib.metadata.version("mlptui")
    found["platform"] = sys.platform
    return found
