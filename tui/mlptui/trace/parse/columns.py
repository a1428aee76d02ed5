"""An indexed Trace as plain numpy columns, and back: the form the index cache stores.

    trace_columns(trace) -> dict[str, np.ndarray]       the trace's store (mlptui.trace.store) as it is,
                                                         and its steps, threads, streams, memory events, marks
    trace_from_columns(columns, source) -> Trace         the same Trace

No pickled objects: strings live in one UTF-8 blob with offsets, optional ints as a value column and a
"present" mask, id lists (children, roots, launched GPU work) as offsets into one flat id column, and
the few small values (device properties, meta, warnings) as one JSON document. A column that does not
fit (an id beyond 64 bits, a value JSON cannot hold) raises ValueError: such a trace is not cached.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import orjson

from mlptui.trace.model import NO_IDS, DeviceMark, MemEvent, Step, Stream, Thread, Trace
from mlptui.trace.store import TraceColumns

Columns = dict[str, np.ndarray]


def trace_columns(trace: Trace) -> Columns:
    """Every indexed field of `trace` as numpy arrays (the source, manifest and args reader excluded:
    they belong to where and how the trace was opened, not to its content)."""
    store = trace.columns
    strings = dict(zip(store.strings, range(len(store.strings)), strict=True))
    if len(strings) != len(store.strings):
        raise ValueError("the string table repeats a string")
    cols: Columns = store.columns()
    cols["step_name"] = _string_ids([s.name for s in trace.steps], strings)
    cols["step_ts"] = np.asarray([s.ts for s in trace.steps], dtype=np.float64)
    cols["step_dur"] = np.asarray([s.dur for s in trace.steps], dtype=np.float64)
    cols["step_op"] = np.asarray([s.op for s in trace.steps], dtype=np.int64)
    cols["thread_pid"] = np.asarray([t.pid for t in trace.threads], dtype=np.int64)
    cols["thread_tid"] = np.asarray([t.tid for t in trace.threads], dtype=np.int64)
    cols["thread_name"] = _string_ids([t.name for t in trace.threads], strings)
    cols["thread_roots_ptr"], cols["thread_roots_ids"] = _flat([t.roots for t in trace.threads])
    cols["stream_device"] = np.asarray([s.device for s in trace.streams], dtype=np.int64)
    cols["stream_stream"] = np.asarray([s.stream for s in trace.streams], dtype=np.int64)
    cols["stream_name"] = _string_ids([s.name for s in trace.streams], strings)
    cols["mem_ts"] = np.asarray([m.ts for m in trace.memory], dtype=np.float64)
    cols["mem_pid"] = np.asarray([m.pid for m in trace.memory], dtype=np.int64)
    cols["mem_tid"] = np.asarray([m.tid for m in trace.memory], dtype=np.int64)
    cols["mem_event"] = np.asarray([m.event for m in trace.memory], dtype=np.int64)
    cols["mark_kind"] = _string_ids([m.kind for m in trace.marks], strings)
    cols["mark_name"] = _string_ids([m.name for m in trace.marks], strings)
    cols["mark_device"] = np.asarray([m.device for m in trace.marks], dtype=np.int64)
    cols["mark_stream"] = np.asarray([m.lane for m in trace.marks], dtype=np.int64)
    cols["mark_ts"] = np.asarray([m.ts for m in trace.marks], dtype=np.float64)
    cols["mark_dur"] = np.asarray([m.dur for m in trace.marks], dtype=np.float64)
    cols["mark_event"] = np.asarray([m.event for m in trace.marks], dtype=np.int64)
    blob = [s.encode("utf-8", "surrogatepass") for s in strings]
    cols["strings"] = np.frombuffer(b"".join(blob), dtype=np.uint8)
    cols["string_ends"] = np.cumsum([len(b) for b in blob], dtype=np.int64)
    small = {"device": trace.device, "devices": trace.devices, "meta": trace.meta, "warnings": trace.warnings,
             "origin_us": trace.origin_us, "format": trace.format}
    try:
        cols["small"] = np.frombuffer(orjson.dumps(small, option=orjson.OPT_NON_STR_KEYS), dtype=np.uint8)
    except TypeError as exc:
        raise ValueError(f"trace metadata is not plain JSON ({exc})") from None
    return cols


def trace_from_columns(cols: Columns, source: str) -> Trace:
    """The Trace that `trace_columns` took apart. Checks that the columns fit together (raises ValueError
    when they do not: a damaged cache entry); Op and GpuOp objects are made when first asked for."""
    ends = cols["string_ends"].tolist()
    blob = cols["strings"].tobytes()
    starts = [0, *ends[:-1]] if ends else []
    strings = [blob[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends, strict=True)]
    small = orjson.loads(cols["small"].tobytes())
    store = TraceColumns.of(strings, {k: v for k, v in cols.items() if k.startswith(("op_", "gpu_"))})
    steps = [Step(i, strings[name], ts, dur, op) for i, (name, ts, dur, op) in enumerate(zip(
        cols["step_name"].tolist(), cols["step_ts"].tolist(), cols["step_dur"].tolist(),
        cols["step_op"].tolist(), strict=True))]
    roots = _unflat(cols["thread_roots_ptr"], cols["thread_roots_ids"])
    threads = [Thread(pid, tid, strings[name], r) for pid, tid, name, r in zip(
        cols["thread_pid"].tolist(), cols["thread_tid"].tolist(), cols["thread_name"].tolist(), roots,
        strict=True)]
    streams = [Stream(d, s, strings[name]) for d, s, name in zip(
        cols["stream_device"].tolist(), cols["stream_stream"].tolist(), cols["stream_name"].tolist(),
        strict=True)]
    memory = [MemEvent(ts, pid, tid, ev) for ts, pid, tid, ev in zip(
        cols["mem_ts"].tolist(), cols["mem_pid"].tolist(), cols["mem_tid"].tolist(), cols["mem_event"].tolist(),
        strict=True)]
    marks = [DeviceMark(strings[k], strings[n], d, lane, ts, dur, ev) for k, n, d, lane, ts, dur, ev in zip(
        *(cols[f"mark_{f}"].tolist() for f in ("kind", "name", "device", "stream", "ts", "dur", "event")),
        strict=True)]
    return Trace(source=source, columns=store, steps=steps, threads=threads, streams=streams,
                 device=small["device"], devices=small["devices"], meta=small["meta"],
                 warnings=small["warnings"], origin_us=small["origin_us"], format=small["format"],
                 memory=memory, marks=marks)


# ---------------------------------------------------------------- helpers

def _string_ids(values: list[str], strings: dict[str, int]) -> np.ndarray:
    for s in dict.fromkeys(values):
        strings.setdefault(s, len(strings))
    return np.fromiter(map(strings.__getitem__, values), dtype=np.int64, count=len(values))


def _flat(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=ptr[1:])
    ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(ptr[-1]))
    return ptr, ids


def _unflat(ptr: np.ndarray, ids: np.ndarray) -> list[list[int]]:
    """Id lists back from offsets; empty ones share the read-only NO_IDS, like the index makes them."""
    p = ptr.tolist()
    flat = ids.tolist()
    if p and (p[0] != 0 or p[-1] != len(flat) or np.any(np.diff(ptr) < 0)):
        raise ValueError("id list offsets do not fit the ids")
    return [flat[a:b] if b > a else NO_IDS for a, b in zip(p[:-1], p[1:], strict=True)]
