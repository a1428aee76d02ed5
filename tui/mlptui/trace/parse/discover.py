"""Which files in a folder are profiler traces.

`*.pt.trace.json(.gz)` (torch.profiler's tensorboard_trace_handler) always counts. Any other
`*.json(.gz)` counts when its first bytes look like a Chrome trace: a bare event array, or an object
with a "traceEvents" key near the top (Kineto writes it after the small header). manifest.json and
hidden files never count. A folder lists its traces and the files named like one that cannot be read
as anything (a named pipe, an empty or unreadable file, bytes that are not JSON, a gzip stream that
does not inflate): opening one says why, so a damaged rank or trace is named rather than missing.
Only a well-formed JSON document that is not a trace (a config, an execution trace) is left out.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from mlptui.base.errors import TraceError
from mlptui.base.regular_file import open_regular
from mlptui.trace.parse.gzip_input import inflate_head, is_gzip

_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_JSON_SUFFIXES = (".json", ".json.gz")
_SNIFF_BYTES = 1 << 20
_NOT_TRACES = frozenset({"manifest.json"})


def is_trace_name(name: str) -> bool:
    """True for names a trace may have (`.json`, `.json.gz`), manifest.json and hidden files excluded."""
    base = name.rsplit("/", 1)[-1]
    if base.startswith(".") or base in _NOT_TRACES:
        return False
    return base.lower().endswith(_JSON_SUFFIXES)


def looks_like_trace(path: Path, *, trust_name: bool = True) -> bool:
    """Cheap check of a file's first bytes (decompressed when gzip): a trace, or certainly not one.
    `trust_name=False` checks the bytes of `*.pt.trace.json` files too (before uploading them)."""
    if trust_name and path.name.lower().endswith(_TRACE_SUFFIXES):
        return True
    return _sniff(path) is True


def _sniff(path: Path) -> bool | str | None:
    """True: looks like a trace; None: a JSON document that is not one; else why it is neither."""
    try:
        f, st = open_regular(path)       # a FIFO or a device in a folder is not a trace, and never read
        with f:
            head = f.read(_SNIFF_BYTES)
    except (OSError, TraceError) as exc:
        return str(exc) or type(exc).__name__
    whole = st.st_size <= len(head)
    if is_gzip(head):
        inflated = inflate_head(head, _SNIFF_BYTES)
        if inflated is None:
            return "gzip data that does not inflate"
        head, whole = inflated, whole and len(inflated) < _SNIFF_BYTES
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if text.startswith(b"[") or (text.startswith(b"{") and b'"traceEvents"' in head):
        return True
    if not text:
        return "empty file"
    if whole:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            return "not JSON"
        return None
    return None if text.startswith(b"{") else "not JSON"


def trace_problem(path: Path) -> str | None:
    """Why a file named like a trace cannot be read as one (one short phrase), or None."""
    found = _sniff(path)
    return found if isinstance(found, str) else None


def find_traces(folder: str | Path) -> list[Path]:
    """Trace files directly inside `folder`, sorted by name, with the files named like traces that
    cannot be read (opening them says why)."""
    root = Path(folder)
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    found = [p for p in entries if is_trace_name(p.name) and not p.is_dir() and _listed(p)]
    return sorted(found, key=lambda p: p.name)


def _listed(path: Path) -> bool:
    if path.name.lower().endswith(_TRACE_SUFFIXES):
        return True
    return _sniff(path) is not None


FOLDER_DEPTH = 3          # how far below a folder its trace folders are looked for
FOLDERS_VISITED = 2_000   # a home directory or a dataset tree: stop looking well before it costs seconds
FOLDERS_NAMED = 4         # the folders a message names before counting the rest


def find_trace_folders(folder: str | Path) -> list[Path]:
    """Folders below `folder` (up to FOLDER_DEPTH levels, hidden ones skipped) that hold traces
    themselves, sorted by path: the run folders of `runs/ddp/<run>/`, a workload's folder beside loose
    traces. A folder that holds traces is not looked into further: its own sub-folders are its business."""
    found: list[Path] = []
    level = [Path(folder)]
    visited = 0
    for _ in range(FOLDER_DEPTH):
        below: list[Path] = []
        for parent in level:
            try:
                children = sorted(p for p in parent.iterdir() if not p.name.startswith(".") and p.is_dir())
            except OSError:
                continue
            for child in children:
                visited += 1
                if visited > FOLDERS_VISITED:
                    return sorted(found)
                (found if _holds_trace(child) else below).append(child)
        level = below
    return sorted(found)


def _holds_trace(folder: Path) -> bool:
    """Whether `folder` holds a trace file itself: stops at the first one."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return False
    return any(p.is_file() and is_trace_name(p.name) and looks_like_trace(p) for p in entries)


def no_traces_message(folder: str | Path, shown_as: str) -> str:
    """The one line for a folder that holds no trace itself: where its traces are, when folders below it
    hold some, else that it holds none."""
    inner = find_trace_folders(folder)
    if not inner:
        return f"no traces (*.json, *.json.gz) in {shown_as} or the folders below it"
    root = Path(folder)
    names = [str(p.relative_to(root)) + "/" for p in inner[:FOLDERS_NAMED]]
    more = f" and {len(inner) - FOLDERS_NAMED} more" if len(inner) > FOLDERS_NAMED else ""
    return (f"no traces (*.json, *.json.gz) in {shown_as} itself; the folders below it hold some: "
            f"{', '.join(names)}{more}: give one of them, or `mlptui view {shown_as}` to pick")
