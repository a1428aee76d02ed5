"""Which files in a folder are profiler traces.

`*.pt.trace.json(.gz)` (torch.profiler's tensorboard_trace_handler) always counts. Any other
`*.json(.gz)` counts when its first bytes look like a Chrome trace: a bare event array, or an object
with a "traceEvents" key near the top (Kineto writes it after the small header). manifest.json and
hidden files never count.
"""

from __future__ import annotations

from pathlib import Path

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
    try:
        f, _ = open_regular(path)       # a FIFO or a device in a folder is not a trace, and never read
        with f:
            head = f.read(_SNIFF_BYTES)
    except (OSError, TraceError):
        return False
    if is_gzip(head):
        inflated = inflate_head(head, _SNIFF_BYTES)
        if inflated is None:
            return False
        head = inflated
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    return text.startswith(b"[") or (text.startswith(b"{") and b'"traceEvents"' in head)


def find_traces(folder: str | Path) -> list[Path]:
    """Trace files directly inside `folder`, sorted by name."""
    root = Path(folder)
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    found = [p for p in entries if p.is_file() and is_trace_name(p.name) and looks_like_trace(p)]
    return sorted(found, key=lambda p: p.name)
