"""Open a trace file (plain or gzip, told apart by magic bytes) and build the indexed Trace.

    load_trace(path, source=None, progress=None) -> Trace
    load_trace_bytes(data, source=..., progress=None) -> Trace

`progress(done_bytes, total_bytes)` is called while the file is read (bytes of the file as stored,
compressed or not) and once more when indexing is done. Every failure is a one-line TraceError.
"""

from __future__ import annotations

import io
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from mlptui.base.errors import TraceError
from mlptui.base.progress import Progress
from mlptui.base.regular_file import open_regular, path_problem
from mlptui.contract.manifest import manifest_for
from mlptui.trace.model import Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.classify import Classifier
from mlptui.trace.parse.decode import Decoded, decode_document, decode_in_pieces
from mlptui.trace.parse.decode_parallel import decode_bytes_in_parallel, decode_file_in_parallel, workers_for
from mlptui.trace.parse.gzip_input import GzipTruncated, gunzip_bytes, is_gzip, read_gzip
from mlptui.trace.parse.index import build_trace
from mlptui.trace.parse.limits import check_density, check_input
from mlptui.trace.parse.not_a_trace import refusal

_CHUNK = 8 << 20
_SNIFF = 1 << 16          # bytes read before the whole file: enough to tell JSON from anything else


def load_trace(path: str | os.PathLike[str], *, source: str | None = None,
               progress: Progress | None = None, notes: Sequence[str] = ()) -> Trace:
    """Read, decode and index the trace at `path`. `source` is what to call it in messages and in Trace.source;
    `notes`: warnings about how the file was fetched, added to the trace's own."""
    p = Path(path)
    name = source if source is not None else str(path)
    data: bytes | bytearray | memoryview
    f, st = open_regular(p, name)          # a FIFO, a device or a folder is refused here, before any read
    with f:
        cached = index_cache.load_cached(p, name, st)
        if cached is not None:
            return _opened(cached, p, cached.meta.get("file_bytes", 0), progress, notes)
        total = st.st_size
        try:
            head = f.read(_SNIFF)
            check_input(head, total, name, getattr(st, "st_blocks", None) and st.st_blocks * 512)
            f.seek(0)
            parallel = None
            if is_gzip(head):
                data = read_gzip(f, total, name, progress)
            else:
                workers = workers_for(total)
                parallel = decode_file_in_parallel(p, st, workers, progress) if workers else None
                if parallel is None:
                    data = _read_plain(f, total, progress)
        except OSError as exc:
            raise path_problem(exc, name) from None

    def store(d: Decoded) -> ArgsStore:
        return ArgsStore(d.n_events, path=p, stamp=(st.st_size, st.st_mtime_ns), repair_utf8=d.repaired_utf8,
                         cut=d.cut, suffix=d.suffix)

    if parallel is not None:
        trace = _index(parallel, name, total, progress, store)
    else:
        holder: list[bytes | bytearray | memoryview] = [data]
        del data
        trace = _build(holder, name, total, progress, store, parallel_tried=not is_gzip(head))
    index_cache.remember(p, trace)
    refused = index_cache.refusal(total)         # the cache folder may not be trusted: say so, once per load
    return _opened(trace, p, total, None, [*notes, refused] if refused else notes)


def _opened(trace: Trace, p: Path, total: int, progress: Progress | None, notes: Sequence[str]) -> Trace:
    """What every trace read from a file gets, whether it was indexed now or read from the cache: its path,
    the runner's manifest entry (attached here and nowhere else) and `notes`."""
    meta = dict(trace.meta)
    meta.setdefault("path", str(p))
    trace = replace(trace, meta=meta, manifest=manifest_for(p),
                    warnings=[*trace.warnings, *notes] if notes else trace.warnings)
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
    return _build(holder, source, total, progress,
                  lambda d: ArgsStore(d.n_events, data=bytes(original), repair_utf8=d.repaired_utf8,
                                      cut=d.cut, suffix=d.suffix))


def _build(holder: list[bytes | bytearray | memoryview], source: str, total: int, progress: Progress | None,
           args_store: Callable[[Decoded], ArgsStore], parallel_tried: bool = False) -> Trace:
    """Decode and index the bytes in `holder` (taken out of it, so that they are freed as soon as they are
    decoded); `args_store` makes the on-demand reader of full args for this input. Unless `parallel_tried`
    (the file was offered to the parallel decode already), big bytes are decoded by several processes."""
    data = holder.pop()
    gzip_cut = isinstance(data, GzipTruncated)
    check_density(data, source)
    decoded = None
    if not gzip_cut and not parallel_tried and (workers := workers_for(len(data))):
        decoded = decode_bytes_in_parallel(data, workers)
    if decoded is None and not gzip_cut:
        classified = Classifier()
        decoded = decode_in_pieces(data, classified.add)
        if decoded is not None:
            decoded.classified = classified
        del classified
    if decoded is None:
        try:
            decoded = decode_document(data, source)
        except TraceError:
            if gzip_cut:
                raise TraceError(f"{source}: truncated gzip file (the stream ends early and the JSON in it "
                                 "is incomplete)") from None
            raise
        decoded.n_events = len(decoded.events)
    del data     # only what was read of the events is needed from here on; full args are re-read on demand
    if gzip_cut:
        decoded.warnings.insert(0, "the gzip stream ends early (truncated file); loaded what it holds")
        decoded.meta["file_truncated"] = {"how": "gzip", "bytes": None}     # the root cause, whatever the JSON says
    return _index(decoded, source, total, progress, args_store)


def _index(decoded: Decoded, source: str, total: int, progress: Progress | None,
           args_store: Callable[[Decoded], ArgsStore]) -> Trace:
    """Refuse what is not a profiler trace, else index the decoded events."""
    if "not_a_trace" in decoded.meta:
        if decoded.meta["not_a_trace"] == "execution":
            raise TraceError(f"{source}: this is a PyTorch execution trace, not a profiler trace "
                             "(record one with torch.profiler)")
        raise TraceError(f"{source}: JSON without 'traceEvents': not a PyTorch profiler trace")
    reason = refusal(decoded)
    if reason is not None:
        raise TraceError(f"{source}: {reason}")
    if decoded.eager_args is not None:
        store = ArgsStore(decoded.n_events, eager=decoded.eager_args)
    else:
        store = args_store(decoded)
    trace = build_trace(decoded, source)
    meta = dict(trace.meta)
    meta.setdefault("file_bytes", total)
    if progress is not None:
        progress(total, total)
    return replace(trace, meta=meta, _args=store)


def _anonymous_map(size: int) -> mmap.mmap:
    """`size` bytes of private anonymous memory. Private, not the default shared mapping: a shared anonymous
    map is backed by shared memory, whose page faults cost more system time."""
    private = getattr(mmap, "MAP_PRIVATE", None)
    if private is None:      # no mmap flags on this platform
        return mmap.mmap(-1, size)
    return mmap.mmap(-1, size, flags=private | mmap.MAP_ANONYMOUS)


def _read_plain(f: io.BufferedReader, total: int, progress: Progress | None) -> memoryview:
    """The file's bytes, in an anonymous memory map: unlike a bytearray it is not zeroed first, and unlike a
    numpy buffer it is not advised onto huge pages, whose first allocation on a long-running machine waits
    for the kernel to compact memory, for as long as the machine's state makes it, where an anonymous
    map costs the same every time. Writable: the decode writes its brackets
    into it (mlptui.trace.parse.decode.decode_in_pieces)."""
    view = memoryview(_anonymous_map(total)) if total else memoryview(bytearray())
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
