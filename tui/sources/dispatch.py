"""Where traces come from: one entry point for local paths, `host:path` / `ssh://` over ssh, and `hf://`.

Callers (summary, diff, view, the app) use only `open_trace`, `list_traces` and `is_folder`. Each kind
of source is a handler module with the same three functions; `HANDLERS` maps a kind to its module,
imported only when a spec of that kind is opened (so `mlptui.sources.dispatch` imports nothing heavy).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from mlptui.sources.ssh_spec import is_ssh_spec

if TYPE_CHECKING:
    from mlptui.trace.model import Trace

Progress = Callable[[int, int], None]


class SourceHandler(Protocol):
    """What each module named in HANDLERS defines."""

    def open_trace(self, spec: str, progress: Progress | None = None) -> Trace: ...
    def list_traces(self, spec: str) -> list[str]: ...
    def is_folder(self, spec: str) -> bool: ...


# kind -> module defining open_trace(spec, progress), list_traces(spec), is_folder(spec)
HANDLERS: dict[str, str] = {
    "local": "mlptui.sources.local",
    "ssh": "mlptui.sources.ssh",
    "hf": "mlptui.sources.hub",
}

# URL-like prefixes -> kind; anything else is scp-like `host:path` (ssh) or a local path.
SCHEMES: dict[str, str] = {
    "ssh://": "ssh",
    "hf://": "hf",
}


def source_kind(spec: str) -> str:
    """Which handler reads `spec`: "local", "ssh" or "hf"."""
    for prefix, kind in SCHEMES.items():
        if spec.startswith(prefix):
            return kind
    if is_ssh_spec(spec):
        return "ssh"
    return "local"


def _handler(spec: str) -> SourceHandler:
    return cast(SourceHandler, importlib.import_module(HANDLERS[source_kind(spec)]))


def open_trace(spec: str, progress: Progress | None = None) -> Trace:
    """Load the trace named by `spec` (with its runner manifest attached when one is found)."""
    return _handler(spec).open_trace(spec, progress)


def list_traces(spec: str) -> list[str]:
    """Specs (in the same form as `spec`) of the trace files inside the folder `spec`, sorted."""
    return _handler(spec).list_traces(spec)


def is_folder(spec: str) -> bool:
    """True when `spec` names a folder (to list) rather than one trace file (to open)."""
    return _handler(spec).is_folder(spec)
