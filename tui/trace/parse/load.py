"""Open a trace file (plain or gzip, told apart by magic bytes) and build the indexed Trace.

    load_trace(path, source=None, progress=None) -> Trace
    load_trace_bytes(data, source=..., progress=None) -> Trace

`progress(done_bytes, total_bytes)` is called while the file is read (bytes of the file as stored,
compressed or not) and once more when indexing is done. Every failure is a one-line TraceError.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mlptui.base.errors import TraceError
from mlptui.base.progress import Progress
from mlptui.contract.manifest import manifest_for
from mlptui.trace.model import Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.decode import Decoded, decode_document
from mlptui.trace.parse.gzip_input import GzipTruncated, gunzip_bytes, is_gzip, read_gzip
from mlptui.trace.parse.index import build_trace
from mlptui.trace.parse.limits import check_density
from mlptui.trace.parse.not_a_trace import refusal

_CHUNK = 8 << 20


def load_trace(path: str | os.PathLike[str], *, source: str | None = None,
               progress: Progress | None = None) -> Trace:
    """Read, decode and index the trace at `path`. `source` is what to call it in messages and in Trace.source."""
    p = Path(path)
    name = source if source is not None else str(path)
    if p.is_dir():
        raise TraceError(f"{name}: is a folder, not a trace file")
    data: bytes | bytearray | memoryview
    cached = index_cache.load_cached(p, name)
    if cached is not None:
        return _opened(cached, p, cached.meta.get("file_bytes", 0), progress)
    try:
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            total = st.st_size
            head = f.read(2)
            f.seek(0)
            if is_gzip(head):
                data = read_gzip(f, total, name, progress)
            else:
                data = _read_plain(f, total, progress)
    except FileNotFoundError:
        raise TraceError(f"{name}: no such file") from None
    except PermissionError:
        raise TraceError(f"{name}: permission denied") from None
    except IsADirectoryError:
        raise TraceError(f"{name}: is a folder, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"{name}: cannot read ({exc.strerror or exc})") from None
    holder: list[bytes | bytearray | memoryview] = [data]
    del data
    trace = _build(holder, name, total, progress, lambda d: ArgsStore(
        len(d.events), path=p, stamp=(st.st_size, st.st_mtime_ns), repair_utf8=d.repaired_utf8, cut=d.cut,
        suffix=d.suffix))
    trace.meta.setdefault("file_bytes", total)
    index_cache.remember(p, trace)
    return _opened(trace, p, total, None)


def _opened(trace: Trace, p: Path, total: int, progress: Progress | None) -> Trace:
    """What every trace read from a file gets, whether it was indexed now or read from the cache."""
    trace.meta.setdefault("path", str(p))
    trace.manifest = manifest_for(p)
    if progress is not None:
        progress(total, total)
    return trace


def load_trace_bytes(data: bytes, *, source: str, progress: Progress | None = None) -> Trace:
    """The same as load_trace for bytes already in memory (from ssh, the Hub, a test)."""
    total = len(data)
    original = data
    if is_gzip(data):
        data = gunzip_bytes(data, source, progress)
    elif progress is not None:
        progress(total, total)
    holder: list[bytes | bytearray | memoryview] = [data]
    del data
    trace = _build(holder, source, total, progress,
                   lambda d: ArgsStore(len(d.events), data=bytes(original), repair_utf8=d.repaired_utf8,
                                       cut=d.cut, suffix=d.suffix))
    trace.meta.setdefault("file_bytes", total)
    return trace


def _build(holder: list[bytes | bytearray | memoryview], source: str, total: int, progress: Progress | None,
           args_store: Callable[[Decoded], ArgsStore]) -> Trace:
    """Decode and index the bytes in `holder` (taken out of it, so that they are freed as soon as they are
    decoded); `args_store` makes the on-demand reader of full args for this input."""
    data = holder.pop()
    gzip_cut = isinstance(data, GzipTruncated)
    check_density(data, source)
    try:
        decoded = decode_document(data, source)
    except TraceError:
        if gzip_cut:
            raise TraceError(f"{source}: truncated gzip file (the stream ends early and the JSON in it "
                             "is incomplete)") from None
        raise
    del data     # only the decoded events are needed from here on; full args are re-read on demand
    if gzip_cut:
        decoded.warnings.insert(0, "the gzip stream ends early (truncated file); loaded what it holds")
    if "not_a_trace" in decoded.meta:
        if decoded.meta["not_a_trace"] == "execution":
            raise TraceError(f"{source}: this is a PyTorch execution trace, not a profiler trace "
                             "(record one with torch.profiler)")
        raise TraceError(f"{source}: JSON without 'traceEvents': not a PyTorch profiler trace")
    reason = refusal(decoded)
    if reason is not None:
        raise TraceError(f"{source}: {reason}")
    if decoded.eager_args is not None:
        store = ArgsStore(len(decoded.events), eager=decoded.eager_args)
    else:
        store = args_store(decoded)
    trace = build_trace(decoded, source)
    trace._args = store
    if progress is not None:
        progress(total, total)
    return trace


def _read_plain(f: io.BufferedIOBase, total: int, progress: Progress | None) -> memoryview:
    """The file's bytes, in a numpy buffer: unlike a bytearray it is not zeroed first, and numpy backs
    large arrays with huge pages, which halves the cost of reading 100 MB."""
    view = np.empty(total, dtype=np.uint8).data
    done = 0
    while done < total:
        n = f.readinto(view[done:done + _CHUNK])
        if not n:
            break
        done += n
        if progress is not None:
            progress(done, total)
    if done < total:
        return view[:done]
    rest = f.read()  # the file grew while we read it
    return memoryview(view.tobytes() + rest) if rest else view
