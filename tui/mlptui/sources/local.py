"""Traces on the local disk: files, and folders searched for trace files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.base.errors import MlptuiError
from mlptui.base.progress import Progress
from mlptui.base.regular_file import path_problem, shown

if TYPE_CHECKING:
    from mlptui.trace.model import Trace


def local_path(spec: str, missing: str = "no such file") -> Path:
    """The path `spec` names, checked to exist (a symlink loop, an empty or over-long name: one line each;
    `missing`: the words for one that does not exist)."""
    if not spec:
        raise MlptuiError("an empty path names no file or folder")
    path = Path(spec).expanduser()
    try:
        os.stat(path)
    except OSError as exc:
        raise path_problem(exc, spec, missing) from None
    return path


_path = local_path


def open_trace(spec: str, progress: Progress | None = None) -> Trace:
    from mlptui.trace.parse.load import load_trace

    path = _path(spec)
    if path.is_dir():
        raise MlptuiError(f"{shown(spec)}: is a folder, not a trace file")
    return load_trace(path, source=spec, progress=progress)    # with the manifest entry beside it, if any


def list_traces(spec: str) -> list[str]:
    if not spec:
        raise MlptuiError("an empty path names no file or folder")
    path = Path(spec).expanduser()
    try:
        folder = path.is_dir()          # False when missing; raises for a symlink loop or a long name
    except OSError as exc:
        raise path_problem(exc, spec) from None
    if not folder:
        raise MlptuiError(f"{shown(spec)}: not a folder")
    from mlptui.trace.parse.discover import find_traces

    return sorted(_respell(spec, path, p) for p in find_traces(path))


def list_trace_folders(spec: str) -> list[str]:
    """Specs of the folders below the folder `spec` that hold traces themselves (its run folders), spelled
    from `spec` as list_traces spells its files."""
    from mlptui.trace.parse.discover import find_trace_folders

    path = Path(spec).expanduser()
    return [_respell(spec, path, p) for p in find_trace_folders(path)]


def _respell(spec: str, folder: Path, found: Path) -> str:
    """`found` spelled from the user's folder spec (relative stays relative, `~` stays `~`)."""
    try:
        rel = found.relative_to(folder)
    except ValueError:
        return str(found)
    return spec.rstrip("/") + "/" + rel.as_posix()


def is_folder(spec: str) -> bool:
    return _path(spec).is_dir()
