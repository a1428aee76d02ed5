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
and the events are dropped; times are integer ns (containment never compares floats). Everything else
is done on those columns, whose form is the index cache's (mlptui.trace.parse.columns): the Trace makes
its Op and GpuOp objects on first use, and leaves share one read-only empty id list (NO_IDS). Traces the
columns cannot hold (link ids past 64 bits) and tolerant decodes are indexed as objects (`_build_objects`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Any

import numpy as np

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
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.parse.classify import CATEGORIES, Buckets, Codes, Kind, by_first_use, classify
from mlptui.trace.parse.columns import Columns, lazy_trace
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
    """Index `decoded`. Consumes `decoded.events` (the list is emptied once every field is read).

    The index is built as numpy columns (mlptui.trace.parse.columns) and the Trace makes its Op and GpuOp
    objects on first use. Traces whose link ids do not fit 64 bits, and those read by the tolerant
    decoder, are built as objects instead (`_build_objects`)."""
    events: list[Any] = decoded.events
    warnings = list(decoded.warnings)
    b = classify(events, warnings)
    string_ids: dict[str, int] = {}
    names = _names(events, b.meta_ev, string_ids)
    links = None if decoded.eager_args is not None else _links(events, b)
    if links is not None:
        uncorrelated = not links.gpu.corr_present.all()
    else:
        uncorrelated = any(events[i].args is None or events[i].args.correlation is None for i in b.gpu_ev.tolist())
    starts: dict[FlowKey, int] = {}
    ends: dict[FlowKey, int] = {}
    if b.flow_ev and uncorrelated:
        starts, ends = _flow_index(events, b.flow_ev, string_ids)
    origin_us = float(min(b.cpu_ts.min(initial=np.inf), b.gpu_ts.min(initial=np.inf)))
    if origin_us == np.inf:
        origin_us = 0.0
    pre = _Pre(decoded, source, b, warnings, string_ids, names, starts, ends, origin_us, len(events))
    if links is not None and _fits_int64(starts) and _fits_int64(ends):
        return _build_columns(pre, links)
    return _build_objects(pre)


@dataclass
class _Pre:
    """What both ways of indexing start from."""

    decoded: Decoded
    source: str
    b: Buckets
    warnings: list[str]
    string_ids: dict[str, int]
    names: tuple[dict[tuple[int, int], str], dict[int, str]]
    starts: dict[FlowKey, int]
    ends: dict[FlowKey, int]
    origin_us: float
    n_events: int


def _finish(pre: _Pre, thread_keys: list[tuple[int, int]], roots: list[list[int]],
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
    meta["device_side_events"] = pre.b.device_side
    meta["events"] = pre.n_events
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


_NO_LINK = LinkArgs()


def _links(events: list[Any], b: Buckets) -> _Links | None:
    """Names, threads and link ids of the CPU and GPU events; None when an id does not fit 64 bits."""
    strings = Codes()
    name_of = np.zeros(len(b.kinds), dtype=np.int64)
    for part in (b.cpu_kind, b.gpu_kind):        # names numbered as first seen, CPU events first
        for k in by_first_use(part, len(b.kinds)):
            name_of[k] = strings[b.kinds[k][2]]
    chosen = np.zeros(len(events), dtype=bool)
    chosen[b.cpu_ev] = True
    chosen[b.gpu_ev] = True
    args = list(map(attrgetter("args"), compress(events, chosen.tolist())))
    try:
        ext, ext_present = _optional_ints(args, "external_id")
        corr, corr_present = _optional_ints(args, "correlation")
    except AttributeError:     # events without args (rare): read as empty ones. Either read can meet the
        # first: an id too wide for int64 ends the first read before it reaches an event without args
        args = [_NO_LINK if a is None else a for a in args]
        ext, ext_present = _optional_ints(args, "external_id")
        corr, corr_present = _optional_ints(args, "correlation")
    if ext is None or corr is None:
        return None
    missing = np.flatnonzero(~ext_present)
    if len(missing):           # old traces spell it "external id"
        lc, lc_present = _optional_ints(list(map(args.__getitem__, missing.tolist())), "external_id_lc")
        if lc is None:
            return None
        ext[missing] = lc
        ext_present[missing] = lc_present
    position = np.cumsum(chosen) - 1          # event index -> index into args
    out = []
    for ev, kind in ((b.cpu_ev, b.cpu_kind), (b.gpu_ev, b.gpu_kind)):
        at = position[ev]
        out.append(_Fields(name_of[kind], kind, ext[at], ext_present[at], corr[at], corr_present[at]))
    return _Links(out[0], out[1], strings, b.kinds)


def _optional_ints(items: list[Any], field: str) -> tuple[np.ndarray | None, np.ndarray]:
    """The optional int `field` of `items` as (int64 values with 0 where missing, present mask);
    (None, ...) when a value does not fit 64 bits. With values missing, read in one pass as floats (a
    missing value is NaN), then the few values too large for a float to hold exactly are read again."""
    get = attrgetter(field)
    try:
        return np.fromiter(map(get, items), dtype=np.int64, count=len(items)), np.ones(len(items), dtype=bool)
    except TypeError:          # a missing value (None)
        pass
    except OverflowError:
        return None, np.zeros(0, dtype=bool)
    try:
        as_float = np.fromiter(map(get, items), dtype=np.float64, count=len(items))
    except OverflowError:
        return None, np.zeros(0, dtype=bool)
    present = ~np.isnan(as_float)
    inexact = np.flatnonzero(present & (np.abs(as_float) >= _EXACT_FLOAT))
    as_float[~present] = 0.0
    as_float[inexact] = 0.0
    values = as_float.astype(np.int64)
    if len(inexact):
        exact = [get(items[j]) for j in inexact.tolist()]
        if not all(_INT64_MIN <= v <= _INT64_MAX for v in exact):
            return None, present
        values[inexact] = exact
    return values, present


def _fits_int64(flows: dict[FlowKey, int]) -> bool:
    return all(_INT64_MIN <= v <= _INT64_MAX for v in flows.values())


def _first_seen(kind: np.ndarray, kinds: list[Kind]) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    """Each event's (pid, tid) numbered in the order first seen, and the distinct pairs in that order;
    `kind`: the events' indices into `kinds`."""
    codes = Codes()
    number = np.zeros(len(kinds), dtype=np.int64)
    for k in by_first_use(kind, len(kinds)):
        number[k] = codes[kinds[k][3:]]
    return number[kind], list(codes)


def _build_columns(pre: _Pre, links: _Links) -> Trace:
    b, warnings, string_ids, origin_us = pre.b, pre.warnings, pre.string_ids, pre.origin_us
    events = pre.decoded.events
    cpu, gpu, strings = links.cpu, links.gpu, links.strings

    # CPU slices: trees, then every op field in tree order (index k = Op id).
    start = _ns(b.cpu_ts, origin_us)
    dur = _durations(b.cpu_dur, warnings)
    thread_of, thread_raw = _first_seen(cpu.kind, links.kinds)
    forest = build_forest(thread_of, start, dur)
    if forest.partial_overlaps:
        warnings.append(f"{forest.partial_overlaps} CPU slice(s) end after the slice they start in "
                        "(partial overlap); each nested under the innermost slice that contains it")
    thread_keys = [(_id_of(p, string_ids), _id_of(t, string_ids)) for p, t in thread_raw]
    memory = _memory_events(events, b.mem_ev, origin_us, string_ids)
    order = forest.order
    n_ops = len(order)
    parent = forest.parent
    op_thread = thread_of[order]
    ids = np.asarray(thread_keys, dtype=np.int64).reshape(-1, 2)
    op_pid, op_tid = ids[op_thread, 0], ids[op_thread, 1]
    op_start, op_dur_ns = start[order], dur[order]
    op_ts, op_dur = op_start / 1000.0, op_dur_ns / 1000.0
    code = b.cpu_cat[order]
    launch_code = np.isin(code, [CATEGORIES.index(c) for c in LAUNCH_CATS])
    ext, ext_p = cpu.ext[order], cpu.ext_present[order]
    corr, corr_p = cpu.corr[order].copy(), cpu.corr_present[order].copy()
    if pre.starts:
        raw_ts = b.cpu_ts[order]
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
    gstart = _ns(b.gpu_ts, origin_us)
    gdur_ns = _durations(b.gpu_dur, warnings)
    gorder = np.argsort(gstart, kind="stable")
    events.clear()
    pre.decoded.events = []
    stream_of, stream_raw = _first_seen(gpu.kind[gorder], links.kinds)
    stream_keys = [(_id_of(p, string_ids), _stream_id(t, string_ids)) for p, t in stream_raw]
    sids = np.asarray(stream_keys, dtype=np.int64).reshape(-1, 2)
    g_dev, g_stream = sids[stream_of, 0], sids[stream_of, 1]
    n_gpu = len(gorder)
    g_ts, g_dur = gstart[gorder] / 1000.0, gdur_ns[gorder] / 1000.0
    g_ext, g_ext_p = gpu.ext[gorder], gpu.ext_present[gorder]
    g_corr, g_corr_p = gpu.corr[gorder].copy(), gpu.corr_present[gorder].copy()
    if pre.ends:
        raw_ts = b.gpu_ts[gorder]
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
    cat_ids = np.array([strings[c] for c in CATEGORIES], dtype=np.int64)   # adds the category names
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
    cols: Columns = {
        "op_name": op_name, "op_cat": cat_ids[code], "op_pid": op_pid, "op_tid": op_tid,
        "op_event": b.cpu_ev[order], "op_parent": parent, "op_depth": forest.depth, "op_step": op_step,
        "op_external_id": np.where(ext_p, ext, 0), "op_external_id_present": ext_p,
        "op_correlation": np.where(corr_p, corr, 0), "op_correlation_present": corr_p,
        "op_ts": op_ts, "op_dur": op_dur, "op_self_us": self_us, "op_gpu_us": gpu_us,
        "op_gpu_ptr": gpu_ptr, "op_gpu_ids": owned[by_owner],
        "gpu_name": gpu.name[gorder], "gpu_cat": cat_ids[b.gpu_cat[gorder]], "gpu_device": g_dev,
        "gpu_stream": g_stream, "gpu_event": b.gpu_ev[gorder], "gpu_launch": launch, "gpu_op": op,
        "gpu_step": g_step,
        "gpu_external_id": np.where(g_ext_p, g_ext, 0), "gpu_external_id_present": g_ext_p,
        "gpu_correlation": np.where(g_corr_p, g_corr, 0), "gpu_correlation_present": g_corr_p,
        "gpu_ts": g_ts, "gpu_dur": g_dur,
    }
    ptr = roots_ptr.tolist()
    devs, first, count = np.unique(g_dev, return_index=True, return_counts=True)
    by_time = np.argsort(first)
    fields = _finish(pre, thread_keys, [roots[a:b_] for a, b_ in zip(ptr[:-1], ptr[1:], strict=True)],
                     set(stream_keys), unlinked, launches,
                     dict(zip(devs[by_time].tolist(), count[by_time].tolist(), strict=True)))
    return lazy_trace(cols, names, steps=steps, memory=memory, **fields)


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


# ---------------------------------------------------------------- objects

def _build_objects(pre: _Pre) -> Trace:
    """The index as Op and GpuOp objects, made now (ids beyond 64 bits, tolerant decodes)."""
    b, warnings, string_ids, origin_us = pre.b, pre.warnings, pre.string_ids, pre.origin_us
    events: list[Any] = pre.decoded.events
    gpu_link = [events[i].args for i in b.gpu_ev.tolist()]
    cpu = _cpu_columns(events, b, origin_us, warnings, string_ids)
    memory = _memory_events(events, b.mem_ev, origin_us, string_ids)
    intern: dict[str, str] = {}
    ops, corr_to_launch, ext_to_op = _make_ops(events, b, cpu, pre.starts, intern)
    roots = _attach_children(ops, cpu)
    _self_times(ops, cpu)
    gpu, streams, direct_gpu, unlinked = _make_gpu(
        events, b, gpu_link, origin_us, warnings, string_ids, ops, corr_to_launch, ext_to_op, pre.ends, intern)
    events.clear()
    pre.decoded.events = []
    _roll_up_gpu_time(ops, cpu, direct_gpu)
    steps = _assign_steps(ops, gpu, cpu)
    launches = 0
    if not gpu:
        launches = sum(1 for op in ops if op.cat in LAUNCH_CATS and classify_call(op.name) in ("launch", "graph"))
    counts: dict[int, int] = {}
    for g in gpu:
        counts[g.device] = counts.get(g.device, 0) + 1
    fields = _finish(pre, cpu.thread_keys, roots, streams, unlinked, launches, counts)
    return Trace(ops=ops, gpu=gpu, steps=steps, memory=memory, **fields)


# ---------------------------------------------------------------- phases

def _cpu_columns(events: list[Any], b: Buckets, origin_us: float, warnings: list[str],
                 string_ids: dict[str, int]) -> _Cpu:
    """Integer-ns times (containment never compares floats), threads, and the per-thread trees."""
    start = _ns(b.cpu_ts, origin_us)
    dur = _durations(b.cpu_dur, warnings)
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
    dur = _durations(b.gpu_dur, warnings)
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
        events[i] = None
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


def _memory_events(events: list[Any], mem_ev: list[int], origin_us: float,
                   string_ids: dict[str, int]) -> list[MemEvent]:
    """The `[memory]` instants in time order; their args stay in the file until asked for."""
    out = [MemEvent(float(events[i].ts) - origin_us, _id_of(events[i].pid, string_ids),
                    _id_of(events[i].tid, string_ids), i) for i in mem_ev]
    out.sort(key=lambda m: (m.ts, m.event))
    return out


# ---------------------------------------------------------------- helpers

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_EXACT_FLOAT = float(1 << 53)     # every int below this in size is exact as a float64


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


def _durations(values: np.ndarray, warnings: list[str]) -> np.ndarray:
    """Durations in integer ns; bad ones (not finite, negative, absurd) are zero and counted."""
    arr = np.array(values, dtype=np.float64)
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
        if e.ph == "s":        # on the launching thread
            starts[(_id_of(e.pid, string_ids), _id_of(e.tid, string_ids), e.ts)] = fid
        else:                  # on the GPU event's stream
            ends[(_id_of(e.pid, string_ids), _stream_id(e.tid, string_ids), e.ts)] = fid
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
