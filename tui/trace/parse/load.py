"""Open a trace file (plain or gzip, told apart by magic bytes) and build the indexed Trace.

    load_trace(path, source=None, progress=None) -> Trace
    load_trace_bytes(data, source=..., progress=None) -> Trace

`progress(done_bytes, total_bytes)` is called while the file is read (bytes of the file as stored,
compressed or not) and once more when indexing is done. Every failure is a one-line TraceError.
"""

from __future__ import annotations

import gc
import os
import zlib
from collections.abc import Callable
from pathlib import Path

from mlptui.contract.errors import TraceError
from mlptui.contract.manifest import manifest_for
from mlptui.trace.model import Trace
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.decode import Decoded, decode_document
from mlptui.trace.parse.index import build_trace
from mlptui.trace.parse.limits import InflateBudget, check_density

Progress = Callable[[int, int], None]

_CHUNK = 8 << 20
_GZIP_CHUNK = 1 << 20      # compressed bytes per step: about 10 MB of JSON, so progress moves smoothly
_GZIP_MAGIC = b"\x1f\x8b"


def load_trace(path: str | os.PathLike[str], *, source: str | None = None,
               progress: Progress | None = None) -> Trace:
    """Read, decode and index the trace at `path`. `source` is what to call it in messages and in Trace.source."""
    p = Path(path)
    name = source if source is not None else str(path)
    if p.is_dir():
        raise TraceError(f"{name}: is a folder, not a trace file")
    try:
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            total = st.st_size
            head = f.read(2)
            f.seek(0)
            if head == _GZIP_MAGIC:
                data = _read_gzip(f, total, name, progress)
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
    holder = [data]
    del data
    trace = _build(holder, name, total, progress, lambda d: ArgsStore(
        len(d.events), path=p, stamp=(st.st_size, st.st_mtime_ns), repair_utf8=d.repaired_utf8, cut=d.cut,
        suffix=d.suffix))
    trace.meta.setdefault("file_bytes", total)
    trace.meta.setdefault("path", str(p))
    trace.manifest = manifest_for(p)
    return trace


def load_trace_bytes(data: bytes, *, source: str, progress: Progress | None = None) -> Trace:
    """The same as load_trace for bytes already in memory (from ssh, the Hub, a test)."""
    total = len(data)
    original = data
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip_bytes(data, source, progress)
    elif progress is not None:
        progress(total, total)
    holder = [data]
    del data
    trace = _build(holder, source, total, progress,
                   lambda d: ArgsStore(len(d.events), data=bytes(original), repair_utf8=d.repaired_utf8,
                                       cut=d.cut, suffix=d.suffix))
    trace.meta.setdefault("file_bytes", total)
    return trace


def _build(holder: list[bytes | bytearray], source: str, total: int, progress: Progress | None,
           args_store: Callable[[Decoded], ArgsStore]) -> Trace:
    """Decode and index the bytes in `holder` (taken out of it, so that they are freed as soon as they are
    decoded); `args_store` makes the on-demand reader of full args for this input."""
    # Building millions of small objects with the collector running costs more than the parse itself.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        data = holder.pop()
        gzip_cut = isinstance(data, _GzipTruncated)
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
        if decoded.eager_args is not None:
            store = ArgsStore(len(decoded.events), eager=decoded.eager_args)
        else:
            store = args_store(decoded)
        trace = build_trace(decoded, source)
        trace._args = store
    finally:
        if was_enabled:
            gc.enable()
    # The trace lives as long as the app: keep its objects out of every later collection.
    gc.freeze()
    if progress is not None:
        progress(total, total)
    return trace


def _read_plain(f, total: int, progress: Progress | None) -> bytearray:
    buf = bytearray(total)
    view = memoryview(buf)
    done = 0
    while done < total:
        n = f.readinto(view[done:done + _CHUNK])
        if not n:
            break
        done += n
        if progress is not None:
            progress(done, total)
    view.release()
    if done < total:
        del buf[done:]
    else:
        rest = f.read()  # the file grew while we read it
        if rest:
            buf += rest
    return buf


def _read_gzip(f, total: int, source: str, progress: Progress | None) -> bytes:
    out: list[bytes] = []
    d = zlib.decompressobj(wbits=31)
    budget = InflateBudget(total, source)
    done = 0
    try:
        while True:
            chunk = f.read(_GZIP_CHUNK)
            if not chunk:
                break
            done += len(chunk)
            out.append(_inflate(d, chunk, budget))
            while d.eof and d.unused_data:   # concatenated gzip members
                rest = d.unused_data
                d = zlib.decompressobj(wbits=31)
                out.append(_inflate(d, rest, budget))
            if progress is not None:
                progress(done, total)
    except zlib.error as exc:
        raise TraceError(f"{source}: corrupt gzip data near byte {done} ({exc})") from None
    data = b"".join(out)
    if not d.eof:
        # A run killed while writing: what decompressed may still hold most of the trace.
        if not data.strip():
            raise TraceError(f"{source}: truncated gzip file (stream ends early after {done} bytes)")
        return _GzipTruncated(data)
    return data


class _GzipTruncated(bytes):
    """Decompressed bytes of a gzip stream that ended early (the decoder then says so in a warning)."""


def _inflate(d, chunk: bytes, budget: InflateBudget) -> bytes:
    if d.eof and not d.unused_data:
        return b""   # trailing garbage after the last member is ignored, like gzip(1)
    # Never more than the budget allows in one call: a small chunk can inflate a thousandfold.
    return budget.add(d.decompress(chunk, budget.room()))


def _gunzip_bytes(data: bytes, source: str, progress: Progress | None) -> bytes:
    class _Reader:
        def __init__(self) -> None:
            self.pos = 0

        def read(self, n: int) -> bytes:
            chunk = data[self.pos:self.pos + n]
            self.pos += len(chunk)
            return chunk

    return _read_gzip(_Reader(), len(data), source, progress)
