"""The device half of several steps' graphs at once (for critical_batch, which builds every step's graph):
each step's device ops in (device, stream, start) order, their nodes, and the edges into and along them,
made with one set of numpy calls for the group and cut step by step.

    group_graphs(trace, steps, chains) -> [Graph]     one per step, each what build_graph(trace, s, chains) is

A step takes this way when its CPU chains were made for every step at once, its own slice is among its
rows, and neither a recorded sync, a blocking call nor a cudaStreamWaitEvent falls in it (those are looked
at one by one in critical_graph); any other step is built by build_graph. The edges are critical_graph's
rules, in the same order, with the same weights (docs/figures.md): each op's own time, the stream order,
the launches and launch delays, the ops that nothing explains from the window's start, then each of the
step's own ops into the sink.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.critical_path.critical_chains import Chains
from mlptui.trace.analysis.critical_path.critical_graph import (
    _FIELD_TYPES,
    _K,
    _NONE,
    _SYNC_CALL,
    CPU,
    GPU,
    IDLE,
    LAUNCH,
    LAUNCH_DELAY,
    OP,
    Graph,
    _device_rows,
    _Edges,
    _Rows,
    _rows_by_step,
    build_graph,
)
from mlptui.trace.model import Trace


def _quiet_steps(trace: Trace) -> np.ndarray:
    """Per step: no blocking call and no cudaStreamWaitEvent among its slices."""
    rows = trace.derive(_rows_by_step)
    t = trace.columns
    busy = (rows.call_code == _SYNC_CALL) | rows.stream_wait
    quiet: np.ndarray = np.bincount(t.op_step[busy & (t.op_step >= 0)], minlength=len(trace.steps)) == 0
    return quiet


@dataclass(frozen=True, slots=True)
class _Half:
    """A step's graph up to its device work (what build_graph adds before its device ops, for a quiet step)."""

    own: np.ndarray             # the GpuOp ids the step launched
    start: float
    end: float
    edges: _Edges
    cpu_time: np.ndarray        # its CPU nodes' times (nodes from 2 on)


def group_graphs(trace: Trace, steps: list[int], chains: Chains) -> tuple[list[Graph], Graph, np.ndarray, np.ndarray]:
    """Each step's graph, and the graphs laid one after another as one (what Flow reads: node and edge ids
    moved past the graphs before), with the node and edge bounds of each. The steps' edge columns are
    views into the one graph's (its node ids are the steps' own, moved)."""
    rows = trace.derive(_rows_by_step)
    quiet = trace.derive(_quiet_steps)
    halves: dict[int, _Half] = {}
    for s in steps:
        h = _half(trace, rows, s, chains) if quiet[s] else None
        if h is not None:
            halves[s] = h
    fast = [s for s in steps if s in halves]
    made = dict(zip(fast, _device_halves(trace, [halves[s] for s in fast], fast, chains), strict=True))
    return _laid([made[s] if s in made else build_graph(trace, s, chains) for s in steps])


def _half(trace: Trace, rows: _Rows, step: int, chains: Chains) -> _Half | None:
    """build_graph's CPU edges for a step whose threads all nest and whose own slice is among its rows, read
    straight from the chains (no list of the step's rows); None for any other step, or one with a recorded
    sync in its window."""
    t = trace.columns
    s = trace.steps[step]
    root = s.op
    if root < 0 or t.op_step[root] != step:
        return None
    runs = chains.runs(step)
    if runs is None:
        return None
    time, firsts, _lasts, gaps = runs
    own = rows.gpu.get(step, _NONE)
    start = s.ts
    end = max(s.ts + s.dur, float((t.gpu_ts[own] + t.gpu_dur[own]).max()) if len(own) else s.ts + s.dur)
    if _marks_in(rows, start, end):
        return None
    edges = _Edges()
    edges.add(np.zeros(1), chains.start_node[root], 0.0, _K[CPU])
    edges.add(np.zeros(len(firsts)), firsts, time[firsts - 2] - start, _K[IDLE], unexplained=True)
    src, dst, w, kind, owner, owner_id, gap_own = gaps
    edges.add(src, dst, w, kind, owner, owner_id, gap_own, chain=True)
    edges.add(chains.end_node[root:root + 1], 1, 0.0, _K[IDLE])
    return _Half(own, start, end, edges, time)


def _laid(items: list[tuple[_Half, np.ndarray] | Graph]) -> tuple[list[Graph], Graph, np.ndarray, np.ndarray]:
    """The columns of every step's edges filled once for the group (a step built on its own is copied in);
    the weights of the steps made here clamped at 0 in one pass (build_graph's own are already)."""
    counts = [len(x.src) if isinstance(x, Graph) else x[0].edges.count for x in items]
    edges = np.concatenate(([0], np.cumsum(counts)))
    total = int(edges[-1])
    cols = [np.empty(total, dtype=d) for d in _FIELD_TYPES]
    clamp = np.ones(total, dtype=bool)
    times = []
    for x, off in zip(items, edges[:-1].tolist(), strict=True):
        if isinstance(x, Graph):
            fields = (x.src, x.dst, x.weight, x.kind_code, x.owner, x.owner_id, x.own, x.unexplained, x.chain)
            for col, f in zip(cols, fields, strict=True):
                col[off:off + len(f)] = f
            clamp[off:off + len(x.src)] = False
            times.append(x.time)
            continue
        e = x[0].edges
        for i, (first, fs) in enumerate(e.blocks):
            last = e.blocks[i + 1][0] if i + 1 < len(e.blocks) else e.count
            for col, v in zip(cols, fs, strict=True):
                col[off + first:off + last] = v
        times.append(x[1])
    w = cols[2]
    np.copyto(w, 0.0, where=clamp & ~(w > 0))           # as _Edges.graph: weights below 0 (or NaN) count as 0
    nodes = np.concatenate(([0], np.cumsum([len(t) for t in times])))
    bounds = edges.tolist()
    graphs = []
    for x, t, a, b in zip(items, times, bounds[:-1], bounds[1:], strict=True):
        h = x if isinstance(x, Graph) else x[0]
        graphs.append(Graph(h.start_us if isinstance(h, Graph) else h.start,
                            h.end_us if isinstance(h, Graph) else h.end, t, *[c[a:b] for c in cols]))
    shift = np.repeat(nodes[:-1], counts)
    whole = Graph(0.0, 0.0, np.concatenate(times), cols[0] + shift, cols[1] + shift, *cols[2:])
    return graphs, whole, nodes, edges


def _marks_in(rows: _Rows, start: float, end: float) -> bool:
    lo = int(np.searchsorted(rows.sync_ts, start, side="left"))
    hi = int(np.searchsorted(rows.sync_ts, end, side="right"))
    return hi > lo


def _device_halves(trace: Trace, halves: list[_Half], steps: list[int], chains: Chains) -> list[tuple[_Half, np.ndarray]]:
    if not halves:
        return []
    t = trace.columns
    rows = trace.derive(_rows_by_step)
    per = [_device_rows(t, rows, h.own, s, h.start, h.end) for h, s in zip(halves, steps, strict=True)]
    n = np.array([len(p) for p in per])
    gpu_rows = np.concatenate(per)
    row_at = np.repeat(np.arange(len(per)), n)              # each row's step, as its place in the group
    step_ids = np.array(steps)
    own_row = t.gpu_step[gpu_rows] == step_ids[row_at]      # the step's own work (the rest was queued before it)
    starts = np.array([h.start for h in halves])
    n_cpu = np.array([len(h.cpu_time) for h in halves])
    # by (step, device, stream, start, id): within a step, the order build_graph's lexsort gives
    order = np.lexsort((gpu_rows, t.gpu_ts[gpu_rows], t.gpu_stream[gpu_rows], t.gpu_device[gpu_rows], row_at))
    ids, at = gpu_rows[order], row_at[order]
    lo = np.concatenate(([0], np.cumsum(n)))
    pos = np.arange(len(ids)) - lo[at]
    start = starts[at]
    ts = np.maximum(t.gpu_ts[ids], start)
    ends = np.maximum(t.gpu_ts[ids] + t.gpu_dur[ids], start)
    device, stream = t.gpu_device[ids], t.gpu_stream[ids]
    start_node = 2 + n_cpu[at] + 2 * pos
    end_node = start_node + 1
    kind_code = rows.gpu_kind[ids]
    launch_op = t.gpu_launch[ids]
    safe = np.maximum(launch_op, 0)
    known = (launch_op >= 0) & (t.op_step[safe] == step_ids[at])     # its launch call is among the step's rows
    launch_ts = np.where(known, t.op_ts[safe], -np.inf)
    call_end = np.where(known, t.op_ts[safe] + t.op_dur[safe], -np.inf)
    same_lane = np.zeros(len(ids), dtype=bool)
    same_lane[1:] = (device[1:] == device[:-1]) & (stream[1:] == stream[:-1]) & (at[1:] == at[:-1])
    prev = np.where(same_lane, np.arange(len(ids)) - 1, -1)
    # the edges into each op's start (critical_graph._Device.add_edges, with no wait)
    prev_end = np.where(prev >= 0, ends[np.maximum(prev, 0)], -np.inf)
    by_stream_edge = (prev >= 0) & (prev_end <= ts)
    launch = known & (launch_ts <= ts)
    after = ts >= call_end
    launched = np.where(after, call_end, launch_ts)
    last = np.maximum(np.where(by_stream_edge, prev_end, -np.inf), np.where(launch, launched, -np.inf))
    by_stream = by_stream_edge & (prev_end == last)
    by_launch = ~by_stream & launch
    delay = launch & after
    op_start, op_end = chains.start_node, chains.end_node      # per Op: its nodes in its step's graph
    stream_w = np.where(by_stream, ts - prev_end, 0.0)
    launch_src = np.where(delay, op_end[safe], op_start[safe])
    launch_w = np.where(delay, np.where(by_launch, ts - call_end, 0.0), ts - launch_ts)
    launch_kind = np.where(delay, _K[LAUNCH_DELAY], _K[LAUNCH])
    alone = ~(by_stream_edge | launch)
    alone_w = ts - start
    time = np.empty(2 * len(ids))
    time[0::2], time[1::2] = ts, ends
    # the step's own ops into the sink, in id order
    by_id = np.empty(len(ids), dtype=np.int64)
    by_id[order] = np.arange(len(ids))
    sink_src = end_node[by_id[own_row]]
    sink_lo = np.concatenate(([0], np.cumsum(np.bincount(row_at[own_row], minlength=len(per)))))
    made: list[tuple[_Half, np.ndarray]] = []
    for k, h in enumerate(halves):
        a, b = int(lo[k]), int(lo[k + 1])
        edges = h.edges
        sl = slice(a, b)
        edges.add(start_node[sl], end_node[sl], ends[sl] - ts[sl], kind_code[sl], GPU, ids[sl], True, chain=True)
        m = by_stream_edge[sl]
        edges.add(end_node[prev[sl][m]], start_node[sl][m], stream_w[sl][m], _K[IDLE], GPU, ids[sl][m], chain=True)
        m = launch[sl]
        edges.add(launch_src[sl][m], start_node[sl][m], launch_w[sl][m], launch_kind[sl][m], OP, launch_op[sl][m])
        m = alone[sl]
        edges.add(np.zeros(int(m.sum())), start_node[sl][m], alone_w[sl][m], _K[IDLE], unexplained=True)
        edges.add(sink_src[int(sink_lo[k]):int(sink_lo[k + 1])], 1, 0.0, _K[IDLE])
        made.append((h, np.concatenate(([h.start, h.end], h.cpu_time, time[2 * a:2 * b]))))
    return made
