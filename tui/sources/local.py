"""Traces on the local disk: files, and folders searched for trace files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.base.errors import MlptuiError
from mlptui.base.progress import Progress

if TYPE_CHECKING:
    from mlptui.trace.model import Trace


def _path(spec: str) -> Path:
    return Path(spec).expanduser()


def open_trace(spec: str, progress: Progress | None = None) -> Trace:
    from mlptui.trace.parse.load import load_trace

    path = _path(spec)
    if path.is_dir():
        raise MlptuiError(f"{spec}: is a folder, not a trace file")
    if not path.exists():
        raise MlptuiError(f"{spec}: no such file")
    return load_trace(path, source=spec, progress=progress)    # with the manifest entry beside it, if any


def list_traces(spec: str) -> list[str]:
    path = _path(spec)
    if not path.is_dir():
        raise MlptuiError(f"{spec}: not a folder")
    from mlptui.trace.parse.discover import find_traces

    return sorted(_respell(spec, path, p) for p in find_traces(path))


def _respell(spec: str, folder: Path, found: Path) -> str:
    """`found` spelled from the user's folder spec (relative stays relative, `~` stays `~`)."""
    try:
        rel = found.relative_to(folder)
    except ValueError:
        return str(found)
    return spec.rstrip("/") + "/" + rel.as_posix()


def is_folder(spec: str) -> bool:
    return _path(spec).is_dir()
