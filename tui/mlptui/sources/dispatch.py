"""Where traces come from: one entry point for local paths, `host:path` / `ssh://` over ssh, and `hf://`.

Callers (summary, diff, view, the app) use only `open_trace`, `list_traces` and `is_folder`. Each kind
of source is a handler module with the same three functions, imported only when a spec of that kind is
opened (so `mlptui.sources.dispatch` imports nothing heavy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from mlptui.base.progress import Progress
from mlptui.sources.ssh_spec import is_ssh_spec

if TYPE_CHECKING:
    from mlptui.trace.model import Trace


class SourceHandler(Protocol):
    """What each handler module (local, ssh, hub) defines."""

    def open_trace(self, spec: str, progress: Progress | None = None) -> Trace: ...
    def list_traces(self, spec: str) -> list[str]: ...
    def is_folder(self, spec: str) -> bool: ...


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
    kind = source_kind(spec)
    if kind == "ssh":
        from mlptui.sources import ssh
        return ssh
    if kind == "hf":
        from mlptui.sources import hub
        return hub
    from mlptui.sources import local
    return local


def open_trace(spec: str, progress: Progress | None = None) -> Trace:
    """Load the trace named by `spec` (with its runner manifest attached when one is found)."""
    return _handler(spec).open_trace(spec, progress)


def list_traces(spec: str) -> list[str]:
    """Specs (in the same form as `spec`) of the trace files inside the folder `spec`, sorted."""
    return _handler(spec).list_traces(spec)


def is_folder(spec: str) -> bool:
    """True when `spec` names a folder (to list) rather than one trace file (to open)."""
    return _handler(spec).is_folder(spec)
