"""Every event's full `args`, decoded only when asked for.

The bulk load reads just the few args keys that linking needs (mlptui.trace.parse.decode.LinkArgs) and lets
the input buffer go, which keeps the peak memory of a load near the size of the decoded events. The
first call for a full `args` re-reads the trace (file or bytes), keeps each event's args as a raw JSON
slice and decodes one on demand from then on. A file that changed since it was loaded is noticed
(size and modification time) and never mixed with the loaded trace.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Raw, Struct

from mlptui.base.errors import TraceError
from mlptui.base.regular_file import read_regular
from mlptui.trace.parse.decode import event_args
from mlptui.trace.parse.gzip_input import gunzip_bytes, is_gzip

_NO_ARGS = Raw(b"")


class _ArgsOnly(Struct, gc=False):
    args: Raw = _NO_ARGS


class _ArgsDoc(Struct, gc=False):
    traceEvents: list[_ArgsOnly] = []


_DOC = msgspec.json.Decoder(_ArgsDoc)
_ARRAY = msgspec.json.Decoder(list[_ArgsOnly])


class ArgsStore:
    """Callable: event index -> that event's args dict ({} when there are none or they cannot be read)."""

    def __init__(self, n_events: int, *, path: Path | None = None, data: bytes | None = None,
                 stamp: tuple[int, int] | None = None, repair_utf8: bool = False,
                 cut: int | None = None, suffix: bytes = b"", eager: list[Any] | None = None) -> None:
        self._n = n_events
        self._path = path
        self._data = data
        self._stamp = stamp
        self._repair = repair_utf8
        self._cut = cut
        self._suffix = suffix
        self._raws: list[Any] | None = eager
        self._buffer: Any = None
        self._lock = threading.Lock()
        self.problem: str | None = None      # why args could not be read back, once that happened

    def reread_facts(self) -> dict[str, Any] | None:
        """What a store for the same file needs to re-read args later (the index cache keeps it), or None
        when the args are held in memory rather than re-read."""
        if self._path is None:
            return None
        return {"events": self._n, "repair_utf8": self._repair, "cut": self._cut,
                "suffix": self._suffix.decode("latin-1")}

    def source_file(self) -> tuple[Path, tuple[int, int]] | None:
        """(path, (size, mtime_ns) when loaded) of the file the args are re-read from; None when they are
        held in memory."""
        if self._path is None or self._stamp is None:
            return None
        return self._path, self._stamp

    @property
    def loaded(self) -> bool:
        return self._raws is not None

    def __call__(self, event: int) -> dict[str, Any]:
        value = self.raw(event)
        if isinstance(value, dict):
            return value
        return event_args(value)      # {} for None (no args, or an event outside the trace)

    def raw(self, event: int) -> Any:
        """Event `event`'s args undecoded (a Raw JSON slice, or a dict when they are held decoded); None
        when there are none or they cannot be read."""
        raws = self._raws if self._raws is not None else self._load()
        return raws[event] if 0 <= event < len(raws) else None

    def _load(self) -> list[Any]:
        with self._lock:
            if self._raws is None:
                try:
                    self._raws = self._read()
                except (OSError, TraceError, msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError,
                        RecursionError, MemoryError) as exc:
                    self.problem = f"args unavailable: cannot re-read the trace ({exc})"
                    self._raws = []
            return self._raws

    def _read(self) -> list[Any]:
        if self._path is not None:
            if _stamp(self._path) != self._stamp:
                self.problem = "args unavailable: the file changed after it was loaded"
                return []
            # only the regular file it was loaded from, and no more of it than its size then
            data: bytes = read_regular(self._path, limit=self._stamp[0])
        else:
            data = self._data or b""
        if is_gzip(data):
            data = gunzip_bytes(data, str(self._path or "trace"), None)   # a truncated stream: what it has
        if data[:3] == b"\xef\xbb\xbf":   # a byte order mark, dropped by the load before anything else
            data = data[3:]
        if self._repair:
            data = bytes(data).decode("utf-8", "replace").encode("utf-8")
        if self._cut is not None:       # the load kept only the events before a truncation
            data = bytes(data[:self._cut]) + self._suffix
        first = data.lstrip()[:1]
        events = _ARRAY.decode(data) if first == b"[" else _DOC.decode(data).traceEvents
        if len(events) != self._n:
            self.problem = "args unavailable: the trace no longer has the events it was loaded with"
            return []
        self._buffer = data          # every Raw below is a slice of it
        return [e.args for e in events]


def _stamp(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns
