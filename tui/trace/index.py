"""Decoded events -> the immutable, linked Trace (tui.trace.model).

What is linked, and how:
- CPU slices ('X' on host threads) nest by time per thread (tui.trace.tree), ids in per-thread
  pre-order, so a parent's id is always smaller than its children's.
- A runtime/driver call and the GPU work it launched share `args.correlation` (a cudaGraphLaunch shares
  one correlation with every kernel of the replay). Where a GPU event lacks it, the `ac2g` flow ending
  on it (`f`, matched by thread and timestamp) gives the id of the flow's start, which is the correlation.
- The launching CPU op is the innermost non-launch slice around the launch call; with no such slice,
  the op whose `External id` the GPU event (or launch call) carries.
- GPU time goes to the launch call and every slice above it (Op.gpu_us); GpuOp.step is the step of
  the launching op, so work queued in step N and run during step N+1 counts for step N.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tui.trace.decode import Decoded, LinkArgs, RawEvent
from tui.trace.model import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    GPU_ANNOTATION,
    GPU_CATS,
    KERNEL,
    LAUNCH_CATS,
    MEMCPY,
    MEMSET,
    OTHER,
    PYTHON,
    RUNTIME,
    SYNC,
    GpuOp,
    Op,
    Step,
    Stream,
    Thread,
    Trace,
)
from tui.trace.tree import build_forest

# Raw `cat` -> normalised category. Old traces capitalise; ROCm reuses the CUDA names; vendors add theirs.
CATEGORY: dict[str, str] = {
    "cpu_op": CPU_OP, "Operator": CPU_OP, "operator": CPU_OP,
    "user_annotation": ANNOTATION, "User annotation": ANNOTATION,
    "python_function": PYTHON, "python_function_call": PYTHON,
    "cuda_runtime": RUNTIME, "Runtime": RUNTIME, "runtime": RUNTIME,
    "mtia_runtime": RUNTIME, "xpu_runtime": RUNTIME, "privateuse1_runtime": RUNTIME, "hip_runtime": RUNTIME,
    "cuda_driver": DRIVER, "Driver": DRIVER, "xpu_driver": DRIVER, "privateuse1_driver": DRIVER,
    "kernel": KERNEL, "Kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "Memcpy": MEMCPY,
    "gpu_memset": MEMSET, "Memset": MEMSET,
    "gpu_user_annotation": GPU_ANNOTATION,
    "cuda_sync": SYNC,
}
# Device-side events that are not kernels/memcpys/memsets: kept out of the CPU trees.
_DEVICE_SIDE = frozenset({GPU_ANNOTATION, SYNC})
_DEVICE_SIDE_RAW = frozenset({"mtia_ccp_events"})
_SKIPPED_RAW = frozenset({"Trace"})        # the profiler's own span ("PyTorch Profiler (0)")
_FLOW_CATS = frozenset({"ac2g", "async_gpu", "async_cpu_to_gpu"})
STEP_PREFIX = "ProfilerStep#"


class _ReadOnlyEmpty(list):
    """The one empty `children`/`gpu` list shared by every op that has none (most ops are leaves).
    A list to every reader; any attempt to change it fails loudly instead of touching all ops at once."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("an indexed trace is read-only")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]


NO_IDS: list[int] = _ReadOnlyEmpty()


def _id_of(value: int | str, names: dict[str, int]) -> int:
    """pid/tid as int; string ids ("Spans", "") get stable negative numbers."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        return names.setdefault(value, -2 - len(names))


def _ns(values: np.ndarray, origin_us: float) -> np.ndarray:
    """µs -> integer ns from `origin_us`. Subtract first: epoch µs times 1000 would exceed 2**53."""
    arr = values - origin_us if origin_us else values
    return np.rint(arr * 1000.0).astype(np.int64)


# Beyond this distance from the median start (µs, about three years) a timestamp is corrupt, not data.
_MAX_SPREAD_US = 1e14
_MAX_DUR_US = 1e13


def _outliers(ts: np.ndarray) -> np.ndarray | None:
    """Mask of starts that are not finite or lie absurdly far from the rest (a corrupt file); None if none."""
    if not len(ts):
        return None
    finite = np.isfinite(ts)
    ref = float(np.median(ts[finite])) if finite.any() else 0.0
    with np.errstate(invalid="ignore"):
        bad = ~(finite & (np.abs(ts - ref) < _MAX_SPREAD_US))
    return bad if bad.any() else None


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


def build_trace(decoded: Decoded, source: str) -> Trace:
    """Index `decoded`. Consumes `decoded.events`: each struct is freed as soon as its fields are read, so
    the memory of the decoded events is reused for the Ops instead of adding to the peak."""
    events: list[Any] = decoded.events
    n_events = len(events)
    warnings = list(decoded.warnings)
    string_ids: dict[str, int] = {}

    # ---- one pass: sort events into CPU slices, GPU work, metadata and flows
    cpu_ev: list[int] = []
    cpu_cat: list[str] = []
    gpu_ev: list[int] = []
    gpu_cat: list[str] = []
    meta_ev: list[int] = []
    flow_ev: list[int] = []
    no_ts = no_dur = ignored_phases = device_side = 0
    category = CATEGORY
    gpu_cats = GPU_CATS
    for i, e in enumerate(events):
        ph = e.ph
        if ph == "X":
            if e.ts is None:
                no_ts += 1
                continue
            if e.dur is None:
                no_dur += 1
            cat = category.get(e.cat)
            if cat is None:
                if e.cat in _SKIPPED_RAW:
                    continue
                if e.cat in _DEVICE_SIDE_RAW:
                    device_side += 1
                    continue
                cat = OTHER
            if cat in gpu_cats:
                gpu_ev.append(i)
                gpu_cat.append(cat)
            elif cat in _DEVICE_SIDE:
                device_side += 1
            else:
                cpu_ev.append(i)
                cpu_cat.append(cat)
        elif ph == "M":
            meta_ev.append(i)
        elif ph == "s" or ph == "f":
            flow_ev.append(i)
        elif ph == "B" or ph == "E":
            ignored_phases += 1
    if no_ts:
        warnings.append(f"skipped {no_ts} complete event(s) without a 'ts'")
    if no_dur:
        warnings.append(f"{no_dur} complete event(s) without a 'dur' read as zero-length")
    if ignored_phases:
        warnings.append(f"ignored {ignored_phases} begin/end ('B'/'E') event(s); only complete events are indexed")
    if not events:
        warnings.append("the trace has no events")
    cpu_ts = np.asarray([events[i].ts for i in cpu_ev], dtype=np.float64)
    gpu_ts = np.asarray([events[i].ts for i in gpu_ev], dtype=np.float64)
    bad = _outliers(np.concatenate((cpu_ts, gpu_ts)))
    if bad is not None:
        warnings.append(f"skipped {int(bad.sum())} slice(s) with a timestamp far outside the trace")
        keep_cpu, keep_gpu = ~bad[:len(cpu_ev)], ~bad[len(cpu_ev):]
        cpu_ev = [i for i, k in zip(cpu_ev, keep_cpu.tolist(), strict=True) if k]
        cpu_cat = [c for c, k in zip(cpu_cat, keep_cpu.tolist(), strict=True) if k]
        gpu_ev = [i for i, k in zip(gpu_ev, keep_gpu.tolist(), strict=True) if k]
        gpu_cat = [c for c, k in zip(gpu_cat, keep_gpu.tolist(), strict=True) if k]
        cpu_ts, gpu_ts = cpu_ts[keep_cpu], gpu_ts[keep_gpu]

    # ---- what must be read before events are freed: names, GPU links, flows
    thread_names, process_names = _names(events, meta_ev, string_ids)
    gpu_link = [events[i].args for i in gpu_ev]
    # Where a launch call or GPU event lacks a correlation, the ac2g flow on it carries the same id.
    starts: dict = {}
    ends: dict = {}
    if flow_ev and any(la is None or la.correlation is None for la in gpu_link):
        starts, ends = _flow_index(events, flow_ev, string_ids)

    # ---- times as integer ns from the first event, so containment never compares floats
    origin_us = float(min(cpu_ts.min(initial=np.inf), gpu_ts.min(initial=np.inf)))
    if origin_us == np.inf:
        origin_us = 0.0
    cpu_start = _ns(cpu_ts, origin_us)
    gpu_start = _ns(gpu_ts, origin_us)
    del cpu_ts, gpu_ts
    cpu_dur = _durations([events[i].dur or 0.0 for i in cpu_ev], warnings)
    gpu_dur = _durations([events[i].dur or 0.0 for i in gpu_ev], warnings)
    thread_of: dict[tuple, int] = {}
    cpu_thread = np.asarray(
        [thread_of.setdefault((e.pid, e.tid), len(thread_of)) for e in map(events.__getitem__, cpu_ev)],
        dtype=np.int64)
    thread_keys = [(_id_of(p, string_ids), _id_of(t, string_ids)) for p, t in thread_of]

    # ---- per-thread trees
    forest = build_forest(cpu_thread, cpu_start, cpu_dur)
    if forest.partial_overlaps:
        warnings.append(f"{forest.partial_overlaps} CPU slice(s) end after the slice they start in "
                        "(partial overlap); nested where they start")
    order = forest.order.tolist()
    parent = forest.parent
    depth = forest.depth
    start_sorted = cpu_start[forest.order]
    dur_sorted = cpu_dur[forest.order]
    ts_us = (start_sorted / 1000.0).tolist()
    dur_us = (dur_sorted / 1000.0).tolist()
    thread_sorted = cpu_thread[forest.order].tolist()
    del cpu_start, cpu_dur, cpu_thread

    # ---- ops, in tree order; each decoded event is dropped as soon as its Op exists
    ops: list[Op] = []
    append = ops.append
    intern: dict[str, str] = {}
    ext_to_op: dict[int, int] = {}
    corr_to_launch: dict[int, int] = {}
    launch_cats = LAUNCH_CATS
    for k, j in enumerate(order):
        i = cpu_ev[j]
        e = events[i]
        events[i] = None
        cat = cpu_cat[j]
        pid, tid = thread_keys[thread_sorted[k]]
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
    del ts_us, dur_us, order

    roots_by_thread: list[list[int]] = [[] for _ in thread_keys]
    for op, t in zip(ops, thread_sorted, strict=True):
        if op.parent >= 0:
            up = ops[op.parent]
            if up.children is NO_IDS:
                up.children = [op.id]
            else:
                up.children.append(op.id)
        else:
            roots_by_thread[t].append(op.id)

    n_ops = len(ops)
    parent_arr = np.asarray(parent, dtype=np.int64)
    if n_ops:
        # self time = duration minus the children's, in one vectorised pass
        child_sum = np.zeros(n_ops, dtype=np.int64)
        has_parent = parent_arr >= 0
        np.add.at(child_sum, parent_arr[has_parent], dur_sorted[has_parent])
        for op, s in zip(ops, (np.maximum(dur_sorted - child_sum, 0) / 1000.0).tolist(), strict=True):
            op.self_us = s if op.children else op.dur   # a leaf shares its duration's float

    # ---- GPU work, in time order
    gorder = np.argsort(gpu_start, kind="stable").tolist()
    gts = (gpu_start / 1000.0).tolist()
    gdur = (gpu_dur / 1000.0).tolist()
    gpu: list[GpuOp] = []
    streams: dict[tuple[int, int], None] = {}
    direct_gpu = [0.0] * n_ops
    unlinked = 0
    for g, j in enumerate(gorder):
        i = gpu_ev[j]
        e = events[i]
        events[i] = None
        device = e.pid if type(e.pid) is int else _id_of(e.pid, string_ids)
        stream = e.tid if type(e.tid) is int else _id_of(e.tid, string_ids)
        ext, corr = _ext(gpu_link[j])
        if corr is None and ends:
            corr = ends.get((device, stream, e.ts))
        launch = corr_to_launch.get(corr, -1) if corr is not None else -1
        op_id = -1
        if launch >= 0:
            op_id = ops[launch].parent
            while op_id >= 0 and ops[op_id].cat in launch_cats:
                op_id = ops[op_id].parent
            if op_id < 0 and ops[launch].external_id:
                op_id = ext_to_op.get(ops[launch].external_id, -1)
        elif ext:
            op_id = ext_to_op.get(ext, -1)
        name = e.name
        gpu.append(GpuOp(g, intern.setdefault(name, name), gpu_cat[j], device, stream, gts[j], gdur[j], i,
                         corr, ext, launch, op_id))
        streams[(device, stream)] = None
        if launch >= 0:
            _add_gpu(ops[launch], g)
            direct_gpu[launch] += gdur[j]
        elif op_id >= 0:
            direct_gpu[op_id] += gdur[j]
        else:
            unlinked += 1
        if op_id >= 0:
            _add_gpu(ops[op_id], g)
    events.clear()
    decoded.events = []

    # GPU time up the tree: a parent's id is smaller than its children's, so sweep the depths bottom-up.
    if n_ops and gpu:
        depth_arr = np.asarray(depth, dtype=np.int64)
        total = np.asarray(direct_gpu, dtype=np.float64)
        for d in range(int(depth_arr.max()), 0, -1):
            at = np.nonzero(depth_arr == d)[0]
            np.add.at(total, parent_arr[at], total[at])
        for k in np.nonzero(total)[0].tolist():
            ops[k].gpu_us = float(total[k])

    # ---- steps
    steps = _steps(ops)
    if steps and n_ops:
        starts_ns = np.asarray([round(s.ts * 1000.0) for s in steps], dtype=np.int64)
        ends_ns = np.asarray([round((s.ts + s.dur) * 1000.0) for s in steps], dtype=np.int64)
        where = np.searchsorted(starts_ns, start_sorted, side="right") - 1
        inside = (where >= 0) & (start_sorted < ends_ns[np.maximum(where, 0)])
        for op, s in zip(ops, np.where(inside, where, -1).tolist(), strict=True):
            op.step = s
        for gop in gpu:
            owner = gop.op if gop.op >= 0 else gop.launch
            if owner >= 0:
                gop.step = ops[owner].step

    # ---- names, devices, meta
    threads = [
        Thread(pid, tid, thread_names.get((pid, tid)) or f"thread {tid}", roots_by_thread[t])
        for t, (pid, tid) in enumerate(thread_keys)
    ]
    stream_list = [
        Stream(dev, st, (thread_names.get((dev, st)) or f"stream {st}").strip())
        for dev, st in sorted(streams)
    ]
    meta = dict(decoded.meta)
    devices = meta.pop("deviceProperties", None)
    devices = [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []
    meta["process_names"] = {str(k): v for k, v in process_names.items()}
    meta["unlinked_gpu_ops"] = unlinked
    meta["device_side_events"] = device_side
    if "traceName" in meta:
        meta["trace_name"] = meta["traceName"]
    meta["events"] = n_events

    return Trace(
        source=source, ops=ops, gpu=gpu, steps=steps, threads=threads, streams=stream_list,
        device=_main_device(devices, gpu), devices=devices, meta=meta, warnings=warnings,
        origin_us=origin_us,
    )


def _flow_index(events: list[RawEvent], flow_ev: list[int], string_ids: dict[str, int]):
    """Launch flows by where they start and end: ({(pid, tid, ts): id}, {(pid, tid, ts): id})."""
    starts: dict[tuple[int, int, float | None], int] = {}
    ends: dict[tuple[int, int, float | None], int] = {}
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


def _steps(ops: list[Op]) -> list[Step]:
    marks = [op for op in ops if op.cat == ANNOTATION and op.name.startswith(STEP_PREFIX)]
    marks.sort(key=lambda op: (op.ts, op.id))
    return [Step(n, op.name, op.ts, op.dur, op.id) for n, op in enumerate(marks)]


def _names(events: list[RawEvent], meta_ev: list[int], string_ids: dict[str, int]):
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


def _main_device(devices: list[dict], gpu: list[GpuOp]) -> dict | None:
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
