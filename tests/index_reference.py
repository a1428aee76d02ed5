"""A plain, per-event indexer: the reference the trace index (mlptui.trace.parse.index) is checked against.

It builds Op and GpuOp objects one event at a time, with dicts for the links, as the index did before it
worked on columns; the tests compare every field of both on every sample, corpus and hostile trace. It
shares the index's small readers (names, flows, memory events, the Trace's other fields) and its
classification, which tests/test_index_columnar.py checks against its own loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from mlptui.trace.analysis.events.launches import classify_call
from mlptui.trace.model import ANNOTATION, CPU_OP, LAUNCH_CATS, NO_IDS, GpuOp, Op, Step
from mlptui.trace.parse.classify import CATEGORIES, Buckets, classify, flow_id
from mlptui.trace.parse.decode import Decoded, LinkArgs
from mlptui.trace.parse.index import (
    _INT64_MAX,
    _INT64_MIN,
    STEP_PREFIX,
    FlowKey,
    _durations,
    _finish,
    _flow_index,
    _id_of,
    _IndexInputs,
    _memory_events,
    _names,
    _ns,
    _roll_up,
    _stream_id,
)
from mlptui.trace.parse.tree import build_forest


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


def reference_index(decoded: Decoded, source: str) -> SimpleNamespace:
    """The index of `decoded` as objects: ops, gpu, steps, threads, streams, memory and the other fields."""
    events: list[Any] = list(decoded.events)
    warnings = list(decoded.warnings)
    b = classify(events, warnings)
    string_ids: dict[str, int] = {}
    names = _names([events[i] for i in b.meta_ev], string_ids)
    wide = 0
    for i in [*b.cpu_ev.tolist(), *b.gpu_ev.tolist()]:
        a = events[i].args
        if a is not None:
            wide += _wide(a.external_id) + _wide(a.correlation)
            if _fit(a.external_id) is None:
                wide += _wide(a.external_id_lc)
    if wide:
        warnings.append(f"{wide} link id(s) wider than 64 bits ignored (the events are not linked by them)")
    uncorrelated = any(_ext(events[i].args)[1] is None for i in b.gpu_ev.tolist())
    starts: dict[FlowKey, int] = {}
    ends: dict[FlowKey, int] = {}
    if b.flow_ev and uncorrelated:
        flows = [events[i] for i in b.flow_ev]
        starts, ends = _flow_index([(e.ph, e.pid, e.tid, e.ts, flow_id(e)) for e in flows
                                    if flow_id(e) is not None and e.ts is not None], string_ids)
    origin_us = float(min(b.cpu_ts.min(initial=np.inf), b.gpu_ts.min(initial=np.inf)))
    if origin_us == np.inf:
        origin_us = 0.0
    pre = _IndexInputs(Decoded(events, decoded.meta), source, b, warnings, string_ids, names, starts, ends, origin_us,
               len(events))
    return _build_objects(pre)


def _fit(value: int | None) -> int | None:
    """A link id as the index reads it: one beyond int64 is missing."""
    return value if value is None or _INT64_MIN <= value <= _INT64_MAX else None


def _wide(value: int | None) -> int:
    return int(value is not None and _fit(value) is None)


def _build_objects(pre: _IndexInputs) -> SimpleNamespace:
    b, warnings, string_ids, origin_us = pre.buckets, pre.warnings, pre.string_ids, pre.origin_us
    events: list[Any] = pre.decoded.events
    gpu_link = [events[i].args for i in b.gpu_ev.tolist()]
    cpu = _cpu_columns(events, b, origin_us, warnings, string_ids)
    memory = _memory_events([(events[i].pid, events[i].tid, events[i].ts) for i in b.mem_ev], b.mem_ev, origin_us,
                            string_ids)
    intern: dict[str, str] = {}
    ops, corr_to_launch, ext_to_op = _make_ops(events, b, cpu, pre.starts, intern)
    roots = _attach_children(ops, cpu)
    _self_times(ops, cpu)
    gpu, streams, direct_gpu, unlinked = _make_gpu(
        events, b, gpu_link, origin_us, warnings, string_ids, ops, corr_to_launch, ext_to_op, pre.ends, intern)
    _roll_up_gpu_time(ops, cpu, direct_gpu)
    steps = _assign_steps(ops, gpu, cpu)
    launches = 0
    if not gpu:
        launches = sum(1 for op in ops if op.cat in LAUNCH_CATS and classify_call(op.name) in ("launch", "graph"))
    counts: dict[int, int] = {}
    for g in gpu:
        counts[g.device] = counts.get(g.device, 0) + 1
    fields = _finish(pre, cpu.thread_keys, roots, streams, unlinked, launches, counts)
    return SimpleNamespace(ops=ops, gpu=gpu, steps=steps, memory=memory, format="kineto", **fields)


def _cpu_columns(events: list[Any], b: Buckets, origin_us: float, warnings: list[str],
                 string_ids: dict[str, int]) -> _Cpu:
    """Integer-ns times (containment never compares floats), threads, and the per-thread trees."""
    start = _ns(b.cpu_ts, origin_us)
    dur = _durations(b.cpu_dur, warnings, b)
    thread_of: dict[tuple[int | str, int | str], int] = {}
    thread = np.asarray(
        [thread_of.setdefault((e.pid, e.tid), len(thread_of)) for e in map(events.__getitem__, b.cpu_ev.tolist())],
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
    cpu_ev, parent, depth = b.cpu_ev.tolist(), cpu.parent, cpu.depth
    cpu_cat = [CATEGORIES[c] for c in b.cpu_cat.tolist()]
    thread_keys, thread = cpu.thread_keys, cpu.thread
    ts_us = (cpu.start_ns / 1000.0).tolist()
    dur_us = (cpu.dur_ns / 1000.0).tolist()
    for k, j in enumerate(cpu.order):
        i = cpu_ev[j]
        e = events[i]
        cat = cpu_cat[j]
        pid, tid = thread_keys[thread[k]]
        a = e.args
        ext, corr = _ext(a)
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
    dur = _durations(b.gpu_dur, warnings, b)
    gpu_ev = b.gpu_ev.tolist()
    gpu_cat = [CATEGORIES[c] for c in b.gpu_cat.tolist()]
    gorder = np.argsort(start, kind="stable").tolist()
    gts = (start / 1000.0).tolist()
    gdur = (dur / 1000.0).tolist()
    gpu: list[GpuOp] = []
    streams: dict[tuple[int, int], None] = {}
    direct = [0.0] * len(ops)
    unlinked = 0
    launch_cats = LAUNCH_CATS
    for g, j in enumerate(gorder):
        i = gpu_ev[j]
        e = events[i]
        device = _id_of(e.pid, string_ids)
        stream = _stream_id(e.tid, string_ids)
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
        gpu.append(GpuOp(g, intern.setdefault(name, name), gpu_cat[j], device, stream, gts[j], gdur[j], i,
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
    total = _roll_up(np.asarray(direct, dtype=np.float64), np.asarray(cpu.parent, dtype=np.int64),
                     np.asarray(cpu.depth, dtype=np.int64))
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



def _add_gpu(op: Op, g: int) -> None:
    if op.gpu is NO_IDS:
        op.gpu = [g]
    else:
        op.gpu.append(g)


def _ext(la: LinkArgs | None) -> tuple[int | None, int | None]:
    if la is None:
        return None, None
    ext = _fit(la.external_id)
    return (ext if ext is not None else _fit(la.external_id_lc)), _fit(la.correlation)


