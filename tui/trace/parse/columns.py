"""An indexed Trace as plain numpy columns, and back: the form the index cache stores.

    trace_columns(trace) -> dict[str, np.ndarray]       every field of every Op, GpuOp, Step, Thread, Stream
    trace_from_columns(columns, source) -> Trace         the same Trace; its ops and GPU ops are built on
                                                         first use (model.Trace.__getattr__)

No pickled objects: strings live in one UTF-8 blob with offsets, optional ints as a value column and a
"present" mask, id lists (children, roots, launched GPU work) as offsets into one flat id column, and
the few small values (device properties, meta, warnings) as one JSON document. A column that does not
fit (an id beyond 64 bits, a value JSON cannot hold) raises ValueError: such a trace is not cached.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import Any

import numpy as np
import orjson

from mlptui.trace.model import NO_IDS, GpuOp, MemEvent, Op, Step, Stream, Thread, Trace

Columns = dict[str, np.ndarray]

_OP_INTS = ("pid", "tid", "event", "parent", "depth", "step")
_OP_FLOATS = ("ts", "dur", "self_us", "gpu_us")
_GPU_INTS = ("device", "stream", "event", "launch", "op", "step")
_GPU_FLOATS = ("ts", "dur")
_OPTIONAL = ("external_id", "correlation")


def trace_columns(trace: Trace) -> Columns:
    """Every indexed field of `trace` as numpy arrays (the source, manifest and args reader excluded:
    they belong to where and how the trace was opened, not to its content)."""
    pending = trace.__dict__.get("_pending")
    strings: dict[str, int] = {}
    cols: Columns = {}
    if isinstance(pending, _Builder):      # ops not made yet: their columns are at hand
        strings = dict(zip(pending.strings, range(len(pending.strings)), strict=True))
        if len(strings) == len(pending.strings):
            cols = {k: v for k, v in pending.cols.items() if k.startswith(("op_", "gpu_"))}
    if not cols:
        strings = {}
        _objects(cols, "op", trace.ops, ("name", "cat"), _OP_INTS, _OP_FLOATS, strings)
        _objects(cols, "gpu", trace.gpu, ("name", "cat"), _GPU_INTS, _GPU_FLOATS, strings)
        cols["op_gpu_ptr"], cols["op_gpu_ids"] = _flat([op.gpu for op in trace.ops])
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
    n_ops, n_gpu = len(cols["op_ts"]), len(cols["gpu_ts"])
    _check(cols, "op_", n_ops, len(strings))
    _check(cols, "gpu_", n_gpu, len(strings))
    if len(cols["op_gpu_ptr"]) != n_ops + 1:
        raise ValueError("GPU id lists do not match the ops")
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
    return lazy_trace(cols, strings, source=source, steps=steps, threads=threads, streams=streams,
                      device=small["device"], devices=small["devices"], meta=small["meta"],
                      warnings=small["warnings"], origin_us=small["origin_us"], format=small["format"],
                      memory=memory)


def lazy_trace(cols: Columns, strings: list[str], **fields: Any) -> Trace:
    """A Trace with `fields` whose ops and GPU ops are made from the op_* and gpu_* columns on first use."""
    trace = Trace(ops=[], gpu=[], **fields)
    del trace.ops, trace.gpu
    trace._pending = _Builder(cols, strings)      # type: ignore[attr-defined]
    return trace


class _Builder:
    """Makes a cached trace's Op and GpuOp lists once, on first use, whichever thread asks first."""

    def __init__(self, cols: Columns, strings: list[str]) -> None:
        self.cols = cols
        self.strings = strings
        self._lock = threading.Lock()

    def __call__(self, trace: Trace) -> None:
        with self._lock:
            if "ops" in trace.__dict__:
                return
            # Callers that build a whole trace pause the collector around it (mlptui.gc_policy).
            trace.__dict__["gpu"] = _gpu_ops(self.cols, self.strings)
            trace.__dict__["ops"] = _ops(self.cols, self.strings)
            trace.__dict__.pop("_pending", None)


def _ops(c: Columns, strings: list[str]) -> list[Op]:
    n = len(c["op_ts"])
    name = list(map(strings.__getitem__, c["op_name"].tolist()))
    cat = list(map(strings.__getitem__, c["op_cat"].tolist()))
    parent = c["op_parent"]
    children = _children(parent, n)
    gpu = _unflat(c["op_gpu_ptr"], c["op_gpu_ids"])
    pid, tid, event, par, depth, step = (c[f"op_{f}"].tolist() for f in _OP_INTS)
    ts, dur, self_us, gpu_us = (c[f"op_{f}"].tolist() for f in _OP_FLOATS)
    ext, corr = (_optional(c, f"op_{f}") for f in _OPTIONAL)
    return list(map(Op, range(n), name, cat, pid, tid, ts, dur, event, par, children, depth, ext, corr, step,
                    self_us, gpu_us, gpu))


def _gpu_ops(c: Columns, strings: list[str]) -> list[GpuOp]:
    n = len(c["gpu_ts"])
    name = list(map(strings.__getitem__, c["gpu_name"].tolist()))
    cat = list(map(strings.__getitem__, c["gpu_cat"].tolist()))
    device, stream, event, launch, op, step = (c[f"gpu_{f}"].tolist() for f in _GPU_INTS)
    ts, dur = (c[f"gpu_{f}"].tolist() for f in _GPU_FLOATS)
    ext, corr = (_optional(c, f"gpu_{f}") for f in _OPTIONAL)
    return list(map(GpuOp, range(n), name, cat, device, stream, ts, dur, event, corr, ext, launch, op, step))


# ---------------------------------------------------------------- helpers

def _objects(cols: Columns, prefix: str, items: Sequence[Any], string_fields: tuple[str, ...],
             int_fields: tuple[str, ...], float_fields: tuple[str, ...], strings: dict[str, int]) -> None:
    for f in string_fields:
        cols[f"{prefix}_{f}"] = _string_ids(list(map(attrgetter(f), items)), strings)
    try:
        for f in int_fields:
            cols[f"{prefix}_{f}"] = np.fromiter(map(attrgetter(f), items), dtype=np.int64, count=len(items))
        for f in _OPTIONAL:
            values = np.array(list(map(attrgetter(f), items)), dtype=object)
            present = np.fromiter(map(is_not, values, repeat(None)), dtype=np.bool_, count=len(values))
            values[~present] = 0
            cols[f"{prefix}_{f}"] = values.astype(np.int64)
            cols[f"{prefix}_{f}_present"] = present
    except (OverflowError, TypeError) as exc:
        raise ValueError(f"an id does not fit 64 bits ({exc})") from None
    for f in float_fields:
        cols[f"{prefix}_{f}"] = np.fromiter(map(attrgetter(f), items), dtype=np.float64, count=len(items))


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


def _children(parent: np.ndarray, n: int) -> list[list[int]]:
    """Children by id order, as the index appends them (a child's id is larger than its parent's)."""
    out: list[list[int]] = list(repeat(NO_IDS, n))
    has = np.flatnonzero(parent >= 0)
    if not len(has):
        return out
    order = has[np.argsort(parent[has], kind="stable")]
    sorted_parents = parent[order]
    cuts = np.flatnonzero(np.diff(sorted_parents)) + 1
    kids = order.tolist()
    bounds = [0, *cuts.tolist(), len(kids)]
    for p, a, b in zip(sorted_parents[bounds[:-1]].tolist(), bounds[:-1], bounds[1:], strict=True):
        out[p] = kids[a:b]
    return out


def _optional(c: Columns, key: str) -> list[int | None]:
    values: list[int | None] = c[key].tolist()
    present = c[f"{key}_present"]
    if present.all():
        return values
    return [v if p else None for v, p in zip(values, present.tolist(), strict=True)]


def _check(c: Columns, prefix: str, n: int, n_strings: int) -> None:
    """Every column of one table has its length, and string and id references point inside."""
    for key, col in c.items():
        if key.startswith(prefix) and not key.startswith("op_gpu_") and len(col) != n:
            raise ValueError(f"column {key} has {len(col)} rows, not {n}")
    for key in (f"{prefix}name", f"{prefix}cat"):
        if n and (c[key].min() < 0 or c[key].max() >= n_strings):
            raise ValueError(f"column {key} points outside the string table")

