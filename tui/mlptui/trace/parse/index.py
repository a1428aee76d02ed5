"""Decoded events -> the immutable, linked Trace (mlptui.trace.model).

What is linked, and how:
- CPU slices ('X' on host threads) nest by time per thread (mlptui.trace.parse.tree), ids in per-thread
  pre-order, so a parent's id is always smaller than its children's.
- A runtime/driver call and the GPU work it launched share `args.correlation` (a cudaGraphLaunch shares
  one correlation with every kernel of the replay). Where an event lacks it, the `ac2g` flow starting on
  the call (`s`) or ending on the GPU event (`f`), matched by thread and timestamp, carries the same id.
- The launching CPU op is the innermost non-launch slice around the launch call; with no such slice,
  the op whose `External id` the GPU event (or launch call) carries.
- GPU time goes to the launch call and every slice above it (Op.gpu_us); GpuOp.step is the step of
  the launch call (of the launching op without one), so work queued in step N and run during step N+1
  counts for step N.

Speed and memory: each field the index needs is read out of the decoded events once, into numpy columns,
and the events are dropped; while the trees are built times are integer ns (containment never compares
floats). Everything else is done on those columns, and the result is the trace's one stored form
(mlptui.trace.store): the Trace makes Op and GpuOp objects from it only when asked. Link ids wider
than 64 bits are read as missing, as the tolerant decoder reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlptui.trace.model import (
    ANNOTATION,
    CPU_OP,
    KERNEL,
    LAUNCH_CATS,
    SYNC_TID_OFFSET,
    DeviceMark,
    MemEvent,
    Step,
    Stream,
    Thread,
    Trace,
)
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.parse.classify import (
    CATEGORIES,
    Buckets,
    Classifier,
    Codes,
    Kind,
    Mark,
    by_first_use,
    flow_number,
)
from mlptui.trace.parse.decode import Decoded, RawEvent
from mlptui.trace.parse.launch import LaunchColumns
from mlptui.trace.parse.limits import clean_device
from mlptui.trace.parse.tree import build_forest
from mlptui.trace.store import TraceColumns

STEP_PREFIX = "ProfilerStep#"
_MAX_DUR_US = 1e13

FlowKey = tuple[int, int, float | None]   # (pid, tid, ts) where a launch flow starts or ends


def build_trace(decoded: Decoded, source: str) -> Trace:
    """Index `decoded`: its events as classified while they were decoded (`decoded.classified`), or its
    `events` (the list is emptied once classified)."""
    warnings = list(decoded.warnings)
    classifier = decoded.classified
    if classifier is None:
        classifier = Classifier()
        classifier.add(decoded.events)
    decoded.events = []
    decoded.classified = None
    buckets = classifier.finish(warnings)
    del classifier
    string_ids: dict[str, int] = {}
    names = _names(buckets.meta, string_ids)
    links = _links(buckets, warnings)
    starts: dict[FlowKey, int] = {}
    ends: dict[FlowKey, int] = {}
    if len(buckets.flows.kind) and not links.gpu.corr_present.all():
        starts, ends = _flow_index(_flow_rows(buckets), string_ids)
    origin_us = float(min(buckets.cpu_ts.min(initial=np.inf), buckets.gpu_ts.min(initial=np.inf)))
    if origin_us == np.inf:
        origin_us = 0.0
    pre = _IndexInputs(decoded, source, buckets, warnings, string_ids, names, starts, ends, origin_us,
                       buckets.n_events)
    return _build_columns(pre, links)


@dataclass
class _IndexInputs:
    """What the column build needs besides the CPU and GPU slices' own fields: the classified events'
    buckets, names, flow ends and the time origin."""

    decoded: Decoded
    source: str
    buckets: Buckets
    warnings: list[str]
    string_ids: dict[str, int]
    names: tuple[dict[tuple[int, int], str], dict[int, str]]
    starts: dict[FlowKey, int]
    ends: dict[FlowKey, int]
    origin_us: float
    n_events: int


def _finish(pre: _IndexInputs, thread_keys: list[tuple[int, int]], roots: list[list[int]],
            streams: Iterable[tuple[int, int]], unlinked: int, launches: int,
            device_counts: dict[int, int]) -> dict[str, Any]:
    """The Trace's fields other than its ops, GPU ops and steps."""
    thread_names, process_names = pre.names
    warnings = pre.warnings
    if launches:
        warnings.append(f"GPU activity was not recorded: {launches} kernel launch call(s) but no GPU events")
    threads = [Thread(pid, tid, thread_names.get((pid, tid)) or f"thread {tid}", r)
               for (pid, tid), r in zip(thread_keys, roots, strict=True)]
    stream_list = [Stream(dev, st, (thread_names.get((dev, st)) or f"stream {st}").strip())
                   for dev, st in sorted(streams)]
    meta = dict(pre.decoded.meta)
    devices = meta.pop("deviceProperties", None)
    devices = [clean_device(d) for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []
    meta["process_names"] = {str(k): v for k, v in process_names.items()}
    meta["unlinked_gpu_ops"] = unlinked
    meta["device_side_events"] = pre.buckets.device_side
    meta["events"] = pre.n_events
    if pre.buckets.recording_span is not None:     # the profiler's own span, on the columns' clock
        meta["recording_span_us"] = [round(t - pre.origin_us, 3) for t in pre.buckets.recording_span]
    if pre.buckets.outliers:
        meta["slices_outside_trace"] = pre.buckets.outliers
    if pre.buckets.bad_durations:
        meta["bad_durations"] = pre.buckets.bad_durations
    if "traceName" in meta:
        meta["trace_name"] = meta["traceName"]
    return {"source": pre.source, "threads": threads, "streams": stream_list,
            "device": _main_device(devices, device_counts), "devices": devices, "meta": meta,
            "warnings": warnings, "origin_us": pre.origin_us}


# ---------------------------------------------------------------- columns

@dataclass
class _Fields:
    """The CPU or GPU events' own fields, in event order."""

    name: np.ndarray                  # string ids
    kind: np.ndarray                  # index into Buckets.kinds (which holds pid and tid)
    ext: np.ndarray
    ext_present: np.ndarray
    corr: np.ndarray
    corr_present: np.ndarray


@dataclass
class _Links:
    cpu: _Fields
    gpu: _Fields
    strings: dict[str, int]
    kinds: list[Kind]
    launch: LaunchColumns             # each GPU event's launch keys, in event order


def _links(buckets: Buckets, warnings: list[str]) -> _Links:
    """Names, threads and link ids of the CPU and GPU events, and the GPU events' args."""
    strings = Codes()
    name_of = np.zeros(len(buckets.kinds), dtype=np.int64)
    for part in (buckets.cpu_kind, buckets.gpu_kind):        # names numbered as first seen, CPU events first
        for k in by_first_use(part, len(buckets.kinds)):
            name_of[k] = strings[buckets.kinds[k][2]]
    wide = int(buckets.cpu_links.wide.sum() + buckets.gpu_links.wide.sum())
    if wide:
        warnings.append(f"{wide} link id(s) wider than 64 bits ignored (the events are not linked by them)")
    out = [_Fields(name_of[kind], kind, k.ext, k.ext_present, k.corr, k.corr_present)
           for kind, k in ((buckets.cpu_kind, buckets.cpu_links), (buckets.gpu_kind, buckets.gpu_links))]
    return _Links(out[0], out[1], strings, buckets.kinds, buckets.gpu_launch)


def _first_seen(kind: np.ndarray, kinds: list[Kind]) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    """Each event's (pid, tid) numbered in the order first seen, and the distinct pairs in that order;
    `kind`: the events' indices into `kinds`."""
    codes = Codes()
    number = np.zeros(len(kinds), dtype=np.int64)
    for k in by_first_use(kind, len(kinds)):
        number[k] = codes[kinds[k][3:]]
    return number[kind], list(codes)


def _build_columns(pre: _IndexInputs, links: _Links) -> Trace:
    buckets, warnings, string_ids, origin_us = pre.buckets, pre.warnings, pre.string_ids, pre.origin_us
    cpu, gpu, strings = links.cpu, links.gpu, links.strings

    # CPU slices: trees, then every op field in tree order (index k = Op id).
    start = _ns(buckets.cpu_ts, origin_us)
    dur = _durations(buckets.cpu_dur, warnings, buckets)
    thread_of, thread_raw = _first_seen(cpu.kind, links.kinds)
    forest = build_forest(thread_of, start, dur)
    if forest.partial_overlaps:
        warnings.append(f"{forest.partial_overlaps} CPU slice(s) end after the slice they start in "
                        "(partial overlap); each nested under the innermost slice that contains it")
    thread_keys = [(_id_of(p, string_ids), _id_of(t, string_ids)) for p, t in thread_raw]
    memory = _memory_events(buckets.mem, buckets.mem_ev, origin_us, string_ids)
    device_marks = _device_marks(buckets.marks, origin_us, string_ids)
    order = forest.order
    n_ops = len(order)
    parent = forest.parent
    op_thread = thread_of[order]
    ids = np.asarray(thread_keys, dtype=np.int64).reshape(-1, 2)
    op_pid, op_tid = ids[op_thread, 0], ids[op_thread, 1]
    op_start, op_dur_ns = start[order], dur[order]
    op_ts, op_dur = op_start / 1000.0, op_dur_ns / 1000.0
    code = buckets.cpu_cat[order]
    launch_code = np.isin(code, [CATEGORIES.index(cat) for cat in LAUNCH_CATS])
    ext, ext_p = cpu.ext[order], cpu.ext_present[order]
    corr, corr_p = cpu.corr[order].copy(), cpu.corr_present[order].copy()
    if pre.starts:
        raw_ts = buckets.cpu_ts[order]
        for k in np.flatnonzero(launch_code & ~corr_p).tolist():
            found = pre.starts.get((int(op_pid[k]), int(op_tid[k]), float(raw_ts[k])))
            if found is not None:
                corr[k], corr_p[k] = found, True
    calls = np.flatnonzero(launch_code & corr_p)[::-1]        # the last call carrying a correlation wins
    corr_keys, at = np.unique(corr[calls], return_index=True)
    corr_calls = calls[at]
    owners = np.flatnonzero(ext_p & np.isin(code, [CATEGORIES.index(CPU_OP), CATEGORIES.index(ANNOTATION)]))
    ext_keys, at = np.unique(ext[owners], return_index=True)  # the first op carrying an External id
    ext_ops = owners[at]

    # GPU work in time order, linked to its launch call and launching op.
    gstart = _ns(buckets.gpu_ts, origin_us)
    gdur_ns = _durations(buckets.gpu_dur, warnings, buckets)
    gorder = np.argsort(gstart, kind="stable")
    stream_of, stream_raw = _first_seen(gpu.kind[gorder], links.kinds)
    stream_keys = [(_id_of(p, string_ids), _stream_id(t, string_ids)) for p, t in stream_raw]
    sids = np.asarray(stream_keys, dtype=np.int64).reshape(-1, 2)
    g_dev, g_stream = sids[stream_of, 0], sids[stream_of, 1]
    n_gpu = len(gorder)
    g_ts, g_dur = gstart[gorder] / 1000.0, gdur_ns[gorder] / 1000.0
    g_ext, g_ext_p = gpu.ext[gorder], gpu.ext_present[gorder]
    g_corr, g_corr_p = gpu.corr[gorder].copy(), gpu.corr_present[gorder].copy()
    if pre.ends:
        raw_ts = buckets.gpu_ts[gorder]
        for g in np.flatnonzero(~g_corr_p).tolist():
            found = pre.ends.get((int(g_dev[g]), int(g_stream[g]), float(raw_ts[g])))
            if found is not None:
                g_corr[g], g_corr_p[g] = found, True
    launch = _lookup(corr_keys, corr_calls, g_corr, g_corr_p)
    launched = launch >= 0
    op = np.full(n_gpu, -1, dtype=np.int64)
    op[launched] = parent[launch[launched]]
    while True:                      # the innermost slice around the call that is not itself a launch call
        up = np.flatnonzero(op >= 0)
        up = up[launch_code[op[up]]]
        if not len(up):
            break
        op[up] = parent[op[up]]
    by_call = np.flatnonzero(launched & (op < 0))
    call_ext = ext[launch[by_call]]
    by_call = by_call[ext_p[launch[by_call]] & (call_ext != 0)]
    op[by_call] = _lookup(ext_keys, ext_ops, ext[launch[by_call]], np.ones(len(by_call), dtype=bool))
    by_ext = np.flatnonzero(~launched & g_ext_p & (g_ext != 0))
    op[by_ext] = _lookup(ext_keys, ext_ops, g_ext[by_ext], np.ones(len(by_ext), dtype=bool))
    target = np.where(launched, launch, op)
    linked = target >= 0
    direct = np.zeros(n_ops, dtype=np.float64)
    np.add.at(direct, target[linked], g_dur[linked])
    unlinked = int(n_gpu - linked.sum())
    gids = np.arange(n_gpu, dtype=np.int64)
    owner = np.r_[launch[launched], op[op >= 0]]
    owned = np.r_[gids[launched], gids[op >= 0]]
    by_owner = np.lexsort((owned, owner))
    gpu_ptr = np.zeros(n_ops + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n_ops), out=gpu_ptr[1:])

    # Times and steps.
    child_sum = np.zeros(n_ops, dtype=np.int64)
    has_parent = parent >= 0
    np.add.at(child_sum, parent[has_parent], op_dur_ns[has_parent])
    self_us = np.maximum(op_dur_ns - child_sum, 0) / 1000.0
    gpu_us = _roll_up(direct, parent, forest.depth)
    cat_ids = np.array([strings[cat] for cat in CATEGORIES], dtype=np.int64)   # adds the category names
    names = list(strings)
    step_name = np.array([s.startswith(STEP_PREFIX) for s in names], dtype=bool)
    op_name = cpu.name[order]
    marks = np.flatnonzero(np.isin(code, [CATEGORIES.index(CPU_OP), CATEGORIES.index(ANNOTATION)])
                           & step_name[op_name])
    marks = marks[np.lexsort((marks, op_ts[marks]))]
    steps = [Step(n, names[name], ts, d, k) for n, (name, ts, d, k) in enumerate(zip(
        op_name[marks].tolist(), op_ts[marks].tolist(), op_dur[marks].tolist(), marks.tolist(), strict=True))]
    op_step = np.full(n_ops, -1, dtype=np.int64)
    if steps:
        starts_ns = op_start[marks]
        ends_ns = starts_ns + op_dur_ns[marks]
        where = np.searchsorted(starts_ns, op_start, side="right") - 1
        inside = (where >= 0) & (op_start < ends_ns[np.maximum(where, 0)])
        op_step = np.where(inside, where, -1)
    g_step = np.full(n_gpu, -1, dtype=np.int64)
    g_step[linked] = op_step[target[linked]]

    launches = 0
    if not n_gpu:
        per_name = np.bincount(op_name[launch_code], minlength=len(names)).tolist()
        launches = sum(n for s, n in zip(names, per_name, strict=True)
                       if n and classify_call(s) in ("launch", "graph"))
    roots_of = np.flatnonzero(~has_parent)
    roots_ptr = np.zeros(len(thread_keys) + 1, dtype=np.int64)
    np.cumsum(np.bincount(op_thread[roots_of], minlength=len(thread_keys)), out=roots_ptr[1:])
    roots = roots_of.tolist()
    kernel_rows = buckets.gpu_cat[gorder] == CATEGORIES.index(KERNEL)
    launch_cols = _kernels_only(links.launch, gorder, kernel_rows)
    columns = TraceColumns.of(names, {
        "op_name": op_name, "op_cat": cat_ids[code], "op_pid": op_pid, "op_tid": op_tid,
        "op_event": buckets.cpu_ev[order], "op_parent": parent, "op_depth": forest.depth.astype(np.int64),
        "op_step": op_step,
        "op_external_id": np.where(ext_p, ext, 0), "op_external_id_present": ext_p,
        "op_correlation": np.where(corr_p, corr, 0), "op_correlation_present": corr_p,
        "op_ts": op_ts, "op_dur": op_dur, "op_self_us": self_us, "op_gpu_us": gpu_us,
        "op_gpu_ptr": gpu_ptr, "op_gpu_ids": owned[by_owner],
        "gpu_name": gpu.name[gorder], "gpu_cat": cat_ids[buckets.gpu_cat[gorder]], "gpu_device": g_dev,
        "gpu_stream": g_stream, "gpu_event": buckets.gpu_ev[gorder], "gpu_launch": launch, "gpu_op": op,
        "gpu_step": g_step,
        "gpu_external_id": np.where(g_ext_p, g_ext, 0), "gpu_external_id_present": g_ext_p,
        "gpu_correlation": np.where(g_corr_p, g_corr, 0), "gpu_correlation_present": g_corr_p,
        "gpu_ts": g_ts, "gpu_dur": g_dur,
        **{f"gpu_{k}": v for k, v in vars(launch_cols).items()},
    })
    ptr = roots_ptr.tolist()
    devs, first, count = np.unique(g_dev, return_index=True, return_counts=True)
    by_time = np.argsort(first)
    fields = _finish(pre, thread_keys, [roots[a:b_] for a, b_ in zip(ptr[:-1], ptr[1:], strict=True)],
                     set(stream_keys), unlinked, launches,
                     dict(zip(devs[by_time].tolist(), count[by_time].tolist(), strict=True)))
    return Trace(columns=columns, steps=steps, memory=memory, marks=device_marks, **fields)


def _kernels_only(launch: LaunchColumns, order: np.ndarray, kernel: np.ndarray) -> LaunchColumns:
    """The launch columns in `order`, unknown (NaN, -1) where not a kernel."""
    return LaunchColumns(*(np.where(kernel, col[order], np.nan if col.dtype.kind == "f" else -1).astype(col.dtype)
                           for col in vars(launch).values()))


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray, present: np.ndarray) -> np.ndarray:
    """values[i] where keys[i] == query (keys sorted, distinct), else -1; -1 where not present."""
    if not len(keys):
        return np.full(len(query), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    found: np.ndarray = np.where(present & (keys[at] == query), values[at], -1)
    return found


def _roll_up(direct: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """GPU time up the tree: a parent's id is smaller than its children's, so sweep the depths bottom-up."""
    total: np.ndarray = np.array(direct, dtype=np.float64)
    if not len(total) or not total.any():
        return total
    for d in range(int(depth.max()), 0, -1):
        at = np.nonzero(depth == d)[0]
        np.add.at(total, parent[at], total[at])
    return total


# ---------------------------------------------------------------- phases

def _memory_events(events: list[tuple[Any, Any, float]], mem_ev: list[int], origin_us: float,
                   string_ids: dict[str, int]) -> list[MemEvent]:
    """`events`: the `[memory]` instants' (pid, tid, ts), `mem_ev`: their event numbers."""
    """The `[memory]` instants in time order; their args stay in the file until asked for."""
    out = [MemEvent(float(ts) - origin_us, _id_of(pid, string_ids), _id_of(tid, string_ids), i)
           for (pid, tid, ts), i in zip(events, mem_ev, strict=True)]
    out.sort(key=lambda m: (m.ts, m.event))
    return out


_COUNTER_PID = re.compile(r"GPU (\d+) Counters")


def _device_marks(marks: list[Mark], origin_us: float, string_ids: dict[str, int]) -> list[DeviceMark]:
    """Syncs on their stream (Kineto's virtual sync row, tid = stream + 1,000,000, read back as the stream)
    and counter samples on their GPU (pid "GPU N Counters"), in time order."""
    out = []
    for kind, name, pid, tid, ts, dur, ev in marks:
        lane = _id_of(tid, string_ids)
        if kind == "sync":
            device = _id_of(pid, string_ids)
            if lane >= SYNC_TID_OFFSET:
                lane -= SYNC_TID_OFFSET
        else:
            found = _COUNTER_PID.fullmatch(pid) if isinstance(pid, str) else None
            device = int(found.group(1)) if found else (pid if isinstance(pid, int) else -1)
        out.append(DeviceMark(kind, str(name), device, lane, ts - origin_us, dur, ev))
    out.sort(key=lambda m: (m.ts, m.event))
    return out


# ---------------------------------------------------------------- helpers

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _id_of(value: int | str, names: dict[str, int]) -> int:
    """pid/tid as int; string ids ("Spans", "") and ints no int64 column holds get stable negative
    numbers."""
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return value
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is not None and _INT64_MIN <= number <= _INT64_MAX:
        return number
    return names.setdefault(str(value), -2 - len(names))


_STREAM_TID = re.compile(r"stream\s+(\d{1,18})")


def _stream_id(tid: int | str, names: dict[str, int]) -> int:
    """A GPU event's stream: its tid, which torch 1.9 writes as text, `stream 7`, from the same number
    as the event's `args.stream` (read here from the text, without decoding every kernel's args)."""
    if isinstance(tid, str):
        found = _STREAM_TID.fullmatch(tid.strip())
        if found:
            return int(found.group(1))
    return _id_of(tid, names)


def _ns(values: np.ndarray, origin_us: float) -> np.ndarray:
    """µs -> integer ns from `origin_us`. Subtract first: epoch µs times 1000 would exceed 2**53."""
    arr = values - origin_us if origin_us else values
    return np.rint(arr * 1000.0).astype(np.int64)


def _durations(values: np.ndarray, warnings: list[str], buckets: Buckets | None = None) -> np.ndarray:
    """Durations in integer ns; bad ones (not finite, negative, absurd) are zero and counted (in `b` too)."""
    arr = np.array(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(arr) | (arr < 0) | (arr > _MAX_DUR_US)
    if bad.any():
        warnings.append(f"{int(bad.sum())} slice(s) with a negative or impossible duration read as zero-length")
        if buckets is not None:
            buckets.bad_durations += int(bad.sum())
        arr[bad] = 0.0
    return np.rint(arr * 1000.0).astype(np.int64)


def _flow_index(flows: Iterable[tuple[str, Any, Any, float, int]], string_ids: dict[str, int],
                ) -> tuple[dict[FlowKey, int], dict[FlowKey, int]]:
    """Launch flows (ph, pid, tid, ts, id) by where they start and end: ({(pid, tid, ts): id}, {...: id})."""
    starts: dict[FlowKey, int] = {}
    ends: dict[FlowKey, int] = {}
    for ph, pid, tid, ts, fid in flows:
        if ph == "s":          # on the launching thread
            starts[(_id_of(pid, string_ids), _id_of(tid, string_ids), ts)] = fid
        else:                  # on the GPU event's stream
            ends[(_id_of(pid, string_ids), _stream_id(tid, string_ids), ts)] = fid
    return starts, ends


def _flow_rows(buckets: Buckets) -> list[tuple[str, Any, Any, float, int]]:
    """The launch flows among the flow events, as (ph, pid, tid, ts, id), in event order."""
    kinds, f = buckets.kinds, buckets.flows
    ids = f.ids.tolist() if isinstance(f.ids, np.ndarray) else f.ids
    out = []
    for k, ts, missing, raw in zip(f.kind.tolist(), f.ts.tolist(), f.ts_none.tolist(), ids, strict=True):
        fid = flow_number(kinds[k][1], raw)
        if fid is not None and not missing:
            out.append((kinds[k][0], kinds[k][3], kinds[k][4], ts, fid))
    return out


def _names(meta: list[RawEvent], string_ids: dict[str, int],
           ) -> tuple[dict[tuple[int, int], str], dict[int, str]]:
    """({(pid, tid): thread name}, {pid: process name}) from the 'M' events."""
    threads: dict[tuple[int, int], str] = {}
    processes: dict[int, str] = {}
    for e in meta:
        if e.name not in ("thread_name", "process_name"):
            continue
        a = e.args
        if a is None or not a.name:
            continue
        pid = _id_of(e.pid, string_ids)
        if e.name == "process_name":
            processes[pid] = a.name
        else:
            threads[(pid, _id_of(e.tid, string_ids))] = a.name
    return threads, processes


def _main_device(devices: list[dict[str, Any]], counts: dict[int, int]) -> dict[str, Any] | None:
    """deviceProperties of the device that ran the most GPU work (the first one listed otherwise);
    `counts`: GPU ops per device, in the order devices first appear in time."""
    if not devices:
        return None
    if counts:
        busiest = max(counts, key=counts.__getitem__)
        for d in devices:
            if d.get("id") == busiest:
                return d
    return devices[0]
