"""The traces an MCP server has opened: an id per source, the loaded traces kept in a bounded LRU (a
second question costs no load; a trace pushed out is read again, from its index cache, when asked for),
and the confinement to one folder (`--root`): a path outside it, or a remote source, is refused."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from mlptui.api.handle import Trace, load
from mlptui.base.errors import MlptuiError


class Traces:
    def __init__(self, root: str | None = None, keep: int = 4) -> None:
        self.root = None if root is None else Path(root).resolve()
        self.keep = max(keep, 1)
        self._spec_of: dict[str, str] = {}          # id -> source, for every trace opened (never forgotten)
        self._id_of: dict[str, str] = {}
        self._loaded: OrderedDict[str, Trace] = OrderedDict()

    def allowed(self, spec: str) -> str:
        """`spec` as it will be read; MlptuiError when `--root` does not allow it."""
        from mlptui.sources.dispatch import source_kind

        spec = str(spec).strip()
        if not spec:
            raise MlptuiError("no path given")
        if self.root is None:
            return spec
        if source_kind(spec) != "local":
            raise MlptuiError(f"{spec}: the server reads only files under {self.root} (started with --root)")
        path = Path(spec).expanduser()
        resolved = (path if path.is_absolute() else self.root / path).resolve()
        if not resolved.is_relative_to(self.root):
            raise MlptuiError(f"{spec} is outside {self.root}: the server reads only files under it (--root)")
        return str(resolved)

    def open(self, spec: str) -> tuple[str, Trace]:
        spec = self.allowed(spec)
        known = self._id_of.get(spec)
        if known is not None:
            return known, self.get(known)
        handle = load(spec)
        tid = f"t{len(self._spec_of) + 1}"
        self._spec_of[tid], self._id_of[spec] = spec, tid
        self._remember(tid, handle)
        return tid, handle

    def get(self, tid: str) -> Trace:
        if tid not in self._spec_of:
            opened = ", ".join(self._spec_of) or "none yet"
            raise MlptuiError(f"no trace with id {tid!r} (opened: {opened}); call open_trace first")
        handle = self._loaded.get(tid)
        if handle is None:
            handle = load(self._spec_of[tid])
            self._remember(tid, handle)
        self._loaded.move_to_end(tid)
        return handle

    def _remember(self, tid: str, handle: Trace) -> None:
        self._loaded[tid] = handle
        self._loaded.move_to_end(tid)
        while len(self._loaded) > self.keep:
            self._loaded.popitem(last=False)

    def loaded(self) -> list[str]:
        """Ids of the traces held in memory now, least recently used first."""
        return list(self._loaded)
