"""The real GPU traces shipped in the wheel (data folder `mlptui/sample_traces/`): what `mlptui` opens by
default."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from mlptui.trace.parse.discover import find_trace_folders, is_trace_name


def samples_folder() -> Path:
    """The wheel carries the traces inside the package; a development install reads the repository's
    top-level sample_traces/, which the wheel's copy is made from."""
    shipped = Path(str(files("mlptui") / "sample_traces"))
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "sample_traces"


def sample_trace_paths() -> list[Path]:
    return sorted(entry for entry in samples_folder().iterdir() if is_trace_name(entry.name))


def sample_trace_folders() -> list[Path]:
    """The bundled folders of traces: the attention rung's traces and the two-GPU runs."""
    return find_trace_folders(samples_folder())
