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

Speed and memory: the work is done on integer-ns numpy columns and plain lists; each decoded event is
dropped as soon as its Op or GpuOp exists; leaves share one read-only empty id list (NO_IDS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlptui.trace.analysis.launches import classify_call
from mlptui.trace.model import (
    ANNOTATION,
    CPU_OP,
    LAUNCH_CATS,
    NO_IDS,
    GpuOp,
    MemEvent,
    Op,
    Step,
    Stream,
    Thread,
    Trace,
)
from mlptui.trace.parse.classify import Buckets, classify
from mlptui.trace.parse.decode import Decoded, LinkArgs, RawEvent
from mlptui.trace.parse.limits import clean_device
from mlptui.trace.parse.tree import build_forest

_FLOW_CATS = frozenset({"ac2g", "async_gpu", "async_cpu_to_gpu"})
STEP_PREFIX = "ProfilerStep#"
_MAX_DUR_US = 1e13

FlowKey = tuple[int, int, float | None]   # (pid, tid, ts) where a launch flow starts or ends


@dataclass
class _Cpu:
    """CPU slices in tree order (index k = Op id)."""

    order: list[int]         # k -> position in Buckets.cpu_ev
    parent: list[int]
    depth: list[int]
    thread: list[int]        # k -> index into thread_keys
    thread_keys: list[tuple[int, int]]
    start_ns: np.ndarray
    dur_ns: np.ndarray


def build_trace(decoded: Decoded, source: str) -> Trace:
    """Index `decoded`. Consumes `decoded.events`: each struct is freed as soon as its fields are read, so
    the memory of the decoded events is reused for the Ops instead of adding to the peak."""
    events: list[Any] = decoded.events
    n_events = len(events)
    warnings = list(decoded.warnings)
    string_ids: dict[str, int] = {}
    b = classify(events, warnings)

    # What must be read before events are freed: names, GPU links, flows.
    thread_names, process_names = _names(events, b.meta_ev, string_ids)
    gpu_link = [events[i].args for i in b.gpu_ev]
    starts: dict[FlowKey, int] = {}
    ends: dict[FlowKey, int] = {}
    if b.flow_ev and any(la is None or la.correlation is None for la in gpu_link):
        starts, ends = _flow_index(events, b.flow_ev, string_ids)

    origin_us = float(min(b.cpu_ts.min(initial=np.inf), b.gpu_ts.min(initial=np.inf)))
    if origin_us == np.inf:
        origin_us = 0.0
    cpu = _cpu_columns(events, b, origin_us, warnings, string_ids)
    memory = _memory_events(events, b.mem_ev, origin_us, string_ids)
    intern: dict[str, str] = {}
    ops, corr_to_launch, ext_to_op = _make_ops(events, b, cpu, starts, intern)
    roots = _attach_children(ops, cpu)
    _self_times(ops, cpu)
    gpu, streams, direct_gpu, unlinked = _make_gpu(
        events, b, gpu_link, origin_us, warnings, string_ids, ops, corr_to_launch, ext_to_op, ends, intern)
    events.clear()
    decoded.events = []
    _roll_up_gpu_time(ops, cpu, direct_gpu)
    steps = _assign_steps(ops, gpu, cpu)
    if not gpu:
        launches = sum(1 for op in ops if op.cat in LAUNCH_CATS and classify_call(op.name) in ("launch", "graph"))
        if launches:
            warnings.append(f"GPU activity was not recorded: {launches} kernel launch call(s) but no GPU events")

    threads = [Thread(pid, tid, thread_names.get((pid, tid)) or f"thread {tid}", roots[t])
               for t, (pid, tid) in enumerate(cpu.thread_keys)]
    stream_list = [Stream(dev, st, (thread_names.get((dev, st)) or f"stream {st}").strip())
                   for dev, st in sorted(streams)]
    meta = dict(decoded.meta)
    devices = meta.pop("deviceProperties", None)
    devices = [clean_device(d) for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []
    meta["process_names"] = {str(k): v for k, v in process_names.items()}
    meta["unlinked_gpu_ops"] = unlinked
    meta["device_side_events"] = b.device_side
    meta["events"] = n_events
    if "traceName" in meta:
        meta["trace_name"] = meta["traceName"]
    return Trace(
        source=source, ops=ops, gpu=gpu, steps=steps, threads=threads, streams=stream_list,
        device=_main_device(devices, gpu), devices=devices, meta=meta, warnings=warnings,
        origin_us=origin_us, memory=memory,
    )


# ---------------------------------------------------------------- phases

def _cpu_columns(events: list[Any], b: Buckets, origin_us: float, warnings: list[str],
                 string_ids: dict[str, int]) -> _Cpu:
    """Integer-ns times (containment never compares floats), threads, and the per-thread trees."""
    start = _ns(b.cpu_ts, origin_us)
    dur = _durations([events[i].dur or 0.0 for i in b.cpu_ev], warnings)
    thread_of: dict[tuple[int | str, int | str], int] = {}
    thread = np.asarray(
        [thread_of.setdefault((e.pid, e.tid), len(thread_of)) for e in map(events.__getitem__, b.cpu_ev)],
        dtype=np.int64)
    forest = build_forest(thread, start, dur)
    if forest.partial_overlaps:
        warnings.append(f"{forest.partial_overlaps} CPU slice(s) end after the slice they start in "
                        "(partial overlap); each nested under the innermost slice that contains it")
    return _Cpu(
        order=forest.order.tolist(), parent=forest.parent.tolist(), depth=forest.depth.tolist(),
        thread=thread[forest.order].tolist(),
        thread_keys=[(_id_of(p, string_ids), _id_of(t, string_ids)) for p, t in thread_of],
        start_ns=start[forest.order], dur_ns=dur[forest.order],
    )


def _make_ops(events: list[Any], b: Buckets, cpu: _Cpu, starts: dict[FlowKey, int],
              intern: dict[str, str]) -> tuple[list[Op], dict[int, int], dict[int, int]]:
    """Ops in tree order; returns (ops, correlation -> launch call, External id -> first op carrying it)."""
    ops: list[Op] = []
    append = ops.append
    ext_to_op: dict[int, int] = {}
    corr_to_launch: dict[int, int] = {}
    launch_cats = LAUNCH_CATS
    cpu_ev, cpu_cat, parent, depth = b.cpu_ev, b.cpu_cat, cpu.parent, cpu.depth
    thread_keys, thread = cpu.thread_keys, cpu.thread
    ts_us = (cpu.start_ns / 1000.0).tolist()
    dur_us = (cpu.dur_ns / 1000.0).tolist()
    for k, j in enumerate(cpu.order):
        i = cpu_ev[j]
        e = events[i]
        events[i] = None
        cat = cpu_cat[j]
        pid, tid = thread_keys[thread[k]]
        a = e.args
        if a is None:
            ext = corr = None
        else:
            corr = a.correlation
            ext = a.external_id
            if ext is None:
                ext = a.external_id_lc
        name = e.name
        if cat in launch_cats:
            if corr is None and starts:
                corr = starts.get((pid, tid, e.ts))
            if corr is not None:
                corr_to_launch[corr] = k
        elif ext is not None and (cat == CPU_OP or cat == ANNOTATION) and ext not in ext_to_op:
            ext_to_op[ext] = k
        append(Op(k, intern.setdefault(name, name), cat, pid, tid, ts_us[k], dur_us[k], i, parent[k], NO_IDS,
                  depth[k], ext, corr, -1, 0.0, 0.0, NO_IDS))
    return ops, corr_to_launch, ext_to_op


def _attach_children(ops: list[Op], cpu: _Cpu) -> list[list[int]]:
    """Fill Op.children; returns the root ids of each thread, in time order."""
    roots: list[list[int]] = [[] for _ in cpu.thread_keys]
    for op, t in zip(ops, cpu.thread, strict=True):
        if op.parent >= 0:
            up = ops[op.parent]
            if up.children is NO_IDS:
                up.children = [op.id]
            else:
                up.children.append(op.id)
        else:
            roots[t].append(op.id)
    return roots


def _self_times(ops: list[Op], cpu: _Cpu) -> None:
    """Self time = duration minus the children's, in one vectorised pass."""
    if not ops:
        return
    parent = np.asarray(cpu.parent, dtype=np.int64)
    child_sum = np.zeros(len(ops), dtype=np.int64)
    has_parent = parent >= 0
    np.add.at(child_sum, parent[has_parent], cpu.dur_ns[has_parent])
    for op, s in zip(ops, (np.maximum(cpu.dur_ns - child_sum, 0) / 1000.0).tolist(), strict=True):
        op.self_us = s if op.children else op.dur   # a leaf shares its duration's float


def _make_gpu(events: list[Any], b: Buckets, gpu_link: list[LinkArgs | None], origin_us: float,
              warnings: list[str], string_ids: dict[str, int], ops: list[Op], corr_to_launch: dict[int, int],
              ext_to_op: dict[int, int], ends: dict[FlowKey, int], intern: dict[str, str],
              ) -> tuple[list[GpuOp], dict[tuple[int, int], None], list[float], int]:
    """GpuOps in time order, linked to their launch call and launching op.
    Returns (gpu, streams seen, GPU µs launched directly by each op, count of unlinked GPU ops)."""
    start = _ns(b.gpu_ts, origin_us)
    dur = _durations([events[i].dur or 0.0 for i in b.gpu_ev], warnings)
    gorder = np.argsort(start, kind="stable").tolist()
    gts = (start / 1000.0).tolist()
    gdur = (dur / 1000.0).tolist()
    gpu: list[GpuOp] = []
    streams: dict[tuple[int, int], None] = {}
    direct = [0.0] * len(ops)
    unlinked = 0
    launch_cats = LAUNCH_CATS
    for g, j in enumerate(gorder):
        i = b.gpu_ev[j]
        e = events[i]
        events[i] = None
        device = _id_of(e.pid, string_ids)
        stream = _id_of(e.tid, string_ids)
        ext, corr = _ext(gpu_link[j])
        if corr is None and ends:
            corr = ends.get((device, stream, e.ts))
        launch = corr_to_launch.get(corr, -1) if corr is not None else -1
        op_id = -1
        if launch >= 0:
            op_id = ops[launch].parent
            while op_id >= 0 and ops[op_id].cat in launch_cats:
                op_id = ops[op_id].parent
            launch_ext = ops[launch].external_id
            if op_id < 0 and launch_ext:
                op_id = ext_to_op.get(launch_ext, -1)
        elif ext:
            op_id = ext_to_op.get(ext, -1)
        name = e.name
        gpu.append(GpuOp(g, intern.setdefault(name, name), b.gpu_cat[j], device, stream, gts[j], gdur[j], i,
                         corr, ext, launch, op_id))
        streams[(device, stream)] = None
        if launch >= 0:
            _add_gpu(ops[launch], g)
            direct[launch] += gdur[j]
        elif op_id >= 0:
            direct[op_id] += gdur[j]
        else:
            unlinked += 1
        if op_id >= 0:
            _add_gpu(ops[op_id], g)
    return gpu, streams, direct, unlinked


def _roll_up_gpu_time(ops: list[Op], cpu: _Cpu, direct: list[float]) -> None:
    """GPU time up the tree: a parent's id is smaller than its children's, so sweep the depths bottom-up."""
    if not ops or not any(direct):
        return
    depth = np.asarray(cpu.depth, dtype=np.int64)
    parent = np.asarray(cpu.parent, dtype=np.int64)
    total = np.asarray(direct, dtype=np.float64)
    for d in range(int(depth.max()), 0, -1):
        at = np.nonzero(depth == d)[0]
        np.add.at(total, parent[at], total[at])
    for k in np.nonzero(total)[0].tolist():
        ops[k].gpu_us = float(total[k])


def _assign_steps(ops: list[Op], gpu: list[GpuOp], cpu: _Cpu) -> list[Step]:
    """Steps from ProfilerStep#N; an op belongs to the step it starts in (any thread), GPU work to the
    step of the call that launched it (of its op when it has no launch call)."""
    # torch <= 1.9 records ProfilerStep#N with category `Operator` (a CPU op), later ones as an annotation.
    marks = [op for op in ops if (op.cat == ANNOTATION or op.cat == CPU_OP) and op.name.startswith(STEP_PREFIX)]
    marks.sort(key=lambda op: (op.ts, op.id))
    steps = [Step(n, op.name, op.ts, op.dur, op.id) for n, op in enumerate(marks)]
    if not steps:
        return steps
    starts_ns = np.asarray([cpu.start_ns[op.id] for op in marks], dtype=np.int64)
    ends_ns = starts_ns + np.asarray([cpu.dur_ns[op.id] for op in marks], dtype=np.int64)
    where = np.searchsorted(starts_ns, cpu.start_ns, side="right") - 1
    inside = (where >= 0) & (cpu.start_ns < ends_ns[np.maximum(where, 0)])
    for op, s in zip(ops, np.where(inside, where, -1).tolist(), strict=True):
        op.step = s
    for gop in gpu:
        # the launch call says when the work was queued (a with_stack frame around it may start earlier)
        owner = gop.launch if gop.launch >= 0 else gop.op
        if owner >= 0:
            gop.step = ops[owner].step
    return steps


def _memory_events(events: list[Any], mem_ev: list[int], origin_us: float,
                   string_ids: dict[str, int]) -> list[MemEvent]:
    """The `[memory]` instants in time order; their args stay in the file until asked for."""
    out = [MemEvent(float(events[i].ts) - origin_us, _id_of(events[i].pid, string_ids),
                    _id_of(events[i].tid, string_ids), i) for i in mem_ev]
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


def _ns(values: np.ndarray, origin_us: float) -> np.ndarray:
    """µs -> integer ns from `origin_us`. Subtract first: epoch µs times 1000 would exceed 2**53."""
    arr = values - origin_us if origin_us else values
    return np.rint(arr * 1000.0).astype(np.int64)


def _durations(values: list[float], warnings: list[str]) -> np.ndarray:
    """Durations in integer ns; bad ones (not finite, negative, absurd) are zero and counted."""
    arr = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(arr) | (arr < 0) | (arr > _MAX_DUR_US)
    if bad.any():
        warnings.append(f"{int(bad.sum())} slice(s) with a negative or impossible duration read as zero-length")
        arr[bad] = 0.0
    return np.rint(arr * 1000.0).astype(np.int64)


def _add_gpu(op: Op, g: int) -> None:
    if op.gpu is NO_IDS:
        op.gpu = [g]
    else:
        op.gpu.append(g)


def _ext(la: LinkArgs | None) -> tuple[int | None, int | None]:
    if la is None:
        return None, None
    return (la.external_id if la.external_id is not None else la.external_id_lc), la.correlation


def _flow_index(events: list[RawEvent], flow_ev: list[int], string_ids: dict[str, int],
                ) -> tuple[dict[FlowKey, int], dict[FlowKey, int]]:
    """Launch flows by where they start and end: ({(pid, tid, ts): id}, {(pid, tid, ts): id})."""
    starts: dict[FlowKey, int] = {}
    ends: dict[FlowKey, int] = {}
    for i in flow_ev:
        e = events[i]
        if e.cat not in _FLOW_CATS and e.cat != "":
            continue
        fid = e.id
        if isinstance(fid, str):
            try:
                fid = int(fid, 0)
            except ValueError:
                continue
        if fid is None:
            continue
        key = (_id_of(e.pid, string_ids), _id_of(e.tid, string_ids), e.ts)
        (starts if e.ph == "s" else ends)[key] = fid
    return starts, ends


def _names(events: list[RawEvent], meta_ev: list[int], string_ids: dict[str, int],
           ) -> tuple[dict[tuple[int, int], str], dict[int, str]]:
    """({(pid, tid): thread name}, {pid: process name}) from the 'M' events."""
    threads: dict[tuple[int, int], str] = {}
    processes: dict[int, str] = {}
    for i in meta_ev:
        e = events[i]
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


def _main_device(devices: list[dict[str, Any]], gpu: list[GpuOp]) -> dict[str, Any] | None:
    """deviceProperties of the device that ran the most GPU work (the first one listed otherwise)."""
    if not devices:
        return None
    if gpu:
        counts: dict[int, int] = {}
        for g in gpu:
            counts[g.device] = counts.get(g.device, 0) + 1
        busiest = max(counts, key=counts.__getitem__)
        for d in devices:
            if d.get("id") == busiest:
                return d
    return devices[0]
