"""The runner's manifest: `manifest.json` beside the traces, one entry per recorded run.

    {"mlptui_manifest": 1, "runs": [{"trace": "<file name>", "workload": ..., "mode": ..., ...}]}

`manifest_for(trace_path)` returns the run whose "trace" is the trace's file name, or None (no
manifest, unreadable, another format, or no entry for this file): a manifest only adds context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from mlptui.contract.values import bounded

MANIFEST_NAME = "manifest.json"
MANIFEST_LOCK = ".manifest.json.lock"   # held (filelock) by whoever rewrites the manifest
MANIFEST_VERSION = 1


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST_NAME
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("mlptui_manifest") != MANIFEST_VERSION:
        return None
    if not isinstance(data.get("runs"), list):
        return None
    return data


def manifest_for(trace_path: str | Path) -> dict[str, Any] | None:
    path = Path(trace_path)
    data = read_manifest(path.parent)
    if data is None:
        return None
    for run in data["runs"]:
        if isinstance(run, dict) and run.get("trace") == path.name:
            return bounded(dict(run))       # a run may hold anything: cut what no writer could write back
    return None
