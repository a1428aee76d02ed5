"""The real GPU traces shipped in the wheel (package `sample_traces`): what `mlptui` opens by default."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from mlptui.trace.parse.discover import find_trace_folders, is_trace_name


def sample_trace_paths() -> list[Path]:
    root = files("mlptui.sample_traces")
    return sorted(Path(str(entry)) for entry in root.iterdir() if is_trace_name(entry.name))


def sample_trace_folders() -> list[Path]:
    """The bundled folders of traces: the attention rung's traces and the two-GPU runs."""
    return find_trace_folders(Path(str(files("mlptui.sample_traces"))))
