"""The dependency graph of one step (or of the whole trace), from the indexed events alone.

    build_graph(trace, step) -> Graph      step: a Step.index, or None for the whole trace without steps

Nodes are instants: the start and the end of each CPU slice and device op in the window, plus a source
(the window's start) and a sink (its end). An edge u -> v of weight w says "v cannot happen before u + w";
each edge carries the kind of time it is, the event that owns it, and whether it is that event's own time
(what a what-if may remove). The edges (docs/figures.md, "Critical path"):

- order on a CPU thread: every start and end of the thread's slices in time order, each gap owned by the
  innermost slice open across it (its self time), so nesting is honoured and a slice that outlives its
  parent (Python frames around a step) breaks nothing;
- launch: a runtime/driver call's start -> the device op it launched (correlation; a CUDA-graph launch ->
  every op of that replay), through the call's end and then the launch delay when the op started after
  the call returned;
- stream order: each device op -> the next one on its stream (device, stream);
- blocking synchronisation (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, their HIP
  twins, blocking copies): the device op it waited for -> the call's end: the one the recorded sync
  names (mlptui.trace.analysis.critical_path.critical_syncs), else the one that ended last before the call returned
  among the work queued before the call;
- cross-stream event waits: a recorded "Stream Wait Event" (critical_syncs); without one, where a
  cudaStreamWaitEvent was issued between the launches of a device op and of its stream predecessor, and
  the op started after both its launch and its predecessor, the op that ended last on another stream of
  its device before it started -> the op.

Weights are measured: the edge that set a node's time (its latest arrival) carries the measured gap;
the others carry the least gap they imply (0 for a launch delay or stream gap that did not bind), so the
longest path through the graph is exactly the window and a what-if that removes a cost lets the next
chain take over. A node no edge explains (the first slice of another thread, device work queued before
the window) hangs from the source by its measured offset: that time is "unexplained" and reported.
Collective (NCCL/RCCL) kernels are device work with their measured duration: one rank's trace does not
say which rank it waited for.

The graph is made with numpy over the step's rows of the column tables: the threads whose slices nest
properly all at once, a thread whose slices do not (rare) mark by mark, the device ops' arrivals at once;
only the waits (cudaStreamWaitEvent, recorded syncs) and the blocking calls are looked at one by one.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mlptui.trace.analysis.critical_path.critical_chains import Chains, StepChains, all_chains
from mlptui.trace.analysis.critical_path.critical_syncs import recorded_waits
from mlptui.trace.analysis.events.launches import call_kinds
from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.analysis.steps.steps import LAUNCH_PATH_KINDS
from mlptui.trace.model import KERNEL, LAUNCH_CATS, MEMCPY, MEMSET, DeviceMark, Trace
from mlptui.trace.store import TraceColumns

# Segment kinds (the path's vocabulary; docs/json.md); an edge's kind is its index in KINDS.
CPU, LAUNCH, LAUNCH_DELAY, SYNC_WAIT, IDLE = "cpu", "launch", "launch_delay", "sync_wait", "idle"
DEVICE_KINDS = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset"}
KINDS = (CPU, LAUNCH, LAUNCH_DELAY, "kernel", "memcpy", "memset", SYNC_WAIT, IDLE)
_K = {k: i for i, k in enumerate(KINDS)}
_KIND_NAMES = np.array(KINDS)

NONE, OP, GPU = 0, 1, 2          # what owns an edge: nothing, a CPU slice (Op id), a device op (GpuOp id)

_NO_CALL, _LAUNCH_CALL, _SYNC_CALL = 0, 1, 2


@dataclass
class Graph:
    """Nodes 0 (source) and 1 (sink), then the CPU instants thread by thread, then each device op's start
    and end, stream by stream; edges as parallel arrays. A `chain` edge joins node i to node i + 1 along
    one thread or one stream (the longest-path code scans those runs at once); the order of a node's
    incoming edges is the order the rules below add them (among edges that tie, the path takes the last)."""

    start_us: float                     # the window (µs from the trace's first event)
    end_us: float
    time: np.ndarray                    # per node, µs
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    kind_code: np.ndarray               # index into KINDS
    owner: np.ndarray                   # NONE, OP or GPU
    owner_id: np.ndarray
    own: np.ndarray                     # the owner's own time (a what-if may remove it)
    unexplained: np.ndarray
    chain: np.ndarray

    @property
    def kind(self) -> np.ndarray:
        names: np.ndarray = _KIND_NAMES[self.kind_code]
        return names


_FIELD_TYPES = (np.int64, np.int64, np.float64, np.int8, np.int8, np.int64, bool, bool, bool)


class _Edges:
    """Edges gathered block by block, each field kept as a scalar where the block shares it; the columns are
    filled once, slice by slice, when the graph is made."""

    def __init__(self) -> None:
        self.blocks: list[tuple[int, tuple[np.ndarray | float | int | bool, ...]]] = []
        self.count = 0

    def add(self, src: np.ndarray, dst: np.ndarray | int, weight: np.ndarray | float, kind: np.ndarray | int,
            owner: np.ndarray | int = NONE, owner_id: np.ndarray | int = -1, own: np.ndarray | bool = False,
            unexplained: bool = False, chain: bool = False) -> int:
        """Adds len(src) edges (weights below 0 count as 0); returns the index of the first."""
        n = len(src)
        first = self.count
        if not n:
            return first
        self.blocks.append((first, (src, dst, weight, kind, owner, owner_id, own, unexplained, chain)))
        self.count += n
        return first

    def graph(self, start: float, end: float, time: np.ndarray) -> Graph:
        cols = [np.empty(self.count, dtype=d) for d in _FIELD_TYPES]
        for i, (first, fields) in enumerate(self.blocks):
            last = self.blocks[i + 1][0] if i + 1 < len(self.blocks) else self.count
            for col, f in zip(cols, fields, strict=True):
                col[first:last] = f
        cols[2] = np.where(cols[2] > 0, cols[2], 0.0)        # the weights, once for every block
        return Graph(start, end, time, *cols)


def is_blocking_sync(name: str) -> bool:
    """A call that blocks the host until device work ends: the Synchronize calls and blocking copies."""
    return "Synchronize" in name or "synchronize" in name or ("Memcpy" in name and "Async" not in name)


def is_stream_wait(name: str) -> bool:
    return "StreamWaitEvent" in name


def every_step_chains(trace: Trace) -> Chains:
    """The CPU chains of every step at once (for a caller that wants every step's graph)."""
    t = tables(trace)
    rows = trace.derive(_rows_by_step)
    return all_chains(t, _cpu_kinds(rows.call_code), rows.call_code == _SYNC_CALL, len(trace.steps), OP, NONE,
                      _K[CPU])


def _cpu_kinds(code: np.ndarray) -> np.ndarray:
    kinds: np.ndarray = np.where(code == _SYNC_CALL, _K[SYNC_WAIT],
                                 np.where(code == _LAUNCH_CALL, _K[LAUNCH], _K[CPU])).astype(np.int8)
    return kinds


def build_graph(trace: Trace, step: int | None, chains: Chains | None = None) -> Graph:
    """`chains`: every_step_chains(trace), where the caller builds every step's graph."""
    t = tables(trace)
    rows = trace.derive(_rows_by_step)
    if step is None or not trace.steps:
        ops = np.arange(t.n_ops)
        own = np.arange(t.n_gpu)
        start, end = _whole_window(t)
        root = -1
    else:
        s = trace.steps[step]
        ops, own = rows.ops.get(step, _NONE), rows.gpu.get(step, _NONE)
        start = s.ts
        end = max(s.ts + s.dur, float((t.gpu_ts[own] + t.gpu_dur[own]).max()) if len(own) else s.ts + s.dur)
        root = s.op
    edges = _Edges()
    made = chains.step(step, ops) if chains is not None and step is not None and len(ops) else None
    cpu = _Cpu(trace, t, ops, start, made)
    root_at = cpu.local(np.array([root]))[0] if root >= 0 else -1
    if root_at >= 0:                # else a damaged step (its own slice left out of its rows): hang from its threads
        edges.add(np.zeros(1), cpu.start_node[root_at], 0.0, _K[CPU])
    cpu.add_edges(edges, start)
    if root_at >= 0:
        edges.add(cpu.end_node[root_at:root_at + 1], 1, 0.0, _K[IDLE])
    else:
        edges.add(cpu.thread_ends, 1, 0.0, _K[IDLE])
    device = _Device(trace, t, cpu, _device_rows(t, rows, own, step if root_at >= 0 else None, start, end),
                     start, end)
    device.add_edges(edges, cpu, start)
    mine = device.local(own)
    edges.add(device.end_node[mine[mine >= 0]], 1, 0.0, _K[IDLE])
    _syncs(edges, cpu, device)
    time = np.concatenate(([start, end], cpu.time, device.time))
    g = edges.graph(start, end, time)
    for e, w in cpu.leaf_weights.items():
        g.weight[e] = min(g.weight[e], w)
    return g


_NONE = np.zeros(0, dtype=np.int64)


@dataclass
class _Rows:
    op_step: np.ndarray                 # per Op: its step (`ops` is made from it when first asked for)
    gpu: dict[int, np.ndarray]          # by step: the GpuOp ids it launched
    by_start: np.ndarray                # every GpuOp id, by start
    by_start_ts: np.ndarray             # their starts
    max_dur: float
    call_code: np.ndarray               # per Op: _NO_CALL, _LAUNCH_CALL or _SYNC_CALL
    stream_wait: np.ndarray             # per Op: a cudaStreamWaitEvent
    sync_ts: np.ndarray                 # the recorded syncs' starts, in time order
    syncs: list[DeviceMark]
    gpu_kind: np.ndarray                # per GpuOp: its kind's index in KINDS

    @cached_property
    def ops(self) -> dict[int, np.ndarray]:
        """By step: Op ids (id order: by thread, then start). Only a step built on its own reads them
        (the steps that `summary` builds together take their slices from the chains)."""
        return _split(np.arange(len(self.op_step)), self.op_step)


def _rows_by_step(trace: Trace) -> _Rows:
    t = tables(trace)
    by_start = np.argsort(t.gpu_ts, kind="stable")
    kinds = call_kinds(trace)
    calls = t.op_is(LAUNCH_CATS)
    sync = t.names_where(is_blocking_sync, t.op_name[calls])
    launch = t.names_where(lambda n: kinds.get(n) in LAUNCH_PATH_KINDS, t.op_name[calls])
    code = np.where(sync, _SYNC_CALL, np.where(launch, _LAUNCH_CALL, _NO_CALL)).astype(np.int8)
    wait = t.names_where(is_stream_wait, t.op_name[calls])
    syncs = sorted((m for m in trace.marks if m.kind == "sync"), key=lambda m: m.ts)
    device = np.full(len(t.strings), _K["kernel"], dtype=np.int8)
    for cat, kind in DEVICE_KINDS.items():
        device[t.cat_ids((cat,))] = _K[kind]
    return _Rows(t.op_step, _split(np.arange(t.n_gpu), t.gpu_step), by_start,
                 t.gpu_ts[by_start],
                 float(t.gpu_dur.max()) if t.n_gpu else 0.0,
                 np.where(calls, code[t.op_name], _NO_CALL).astype(np.int8), calls & wait[t.op_name],
                 np.array([m.ts for m in syncs], dtype=np.float64), syncs, device[t.gpu_cat])


def _split(ids: np.ndarray, step: np.ndarray) -> dict[int, np.ndarray]:
    if not len(ids):
        return {}
    order = np.argsort(step, kind="stable")
    keys, first = unique_ids(step[order], return_index=True)
    return dict(zip(keys.tolist(), np.split(ids[order], first[1:]), strict=True))


def _whole_window(t: TraceColumns) -> tuple[float, float]:
    starts = [float(t.op_ts.min())] if t.n_ops else []
    ends = [float((t.op_ts + t.op_dur).max())] if t.n_ops else []
    if t.n_gpu:
        starts.append(float(t.gpu_ts.min()))
        ends.append(float((t.gpu_ts + t.gpu_dur).max()))
    return (min(starts), max(ends)) if starts else (0.0, 0.0)


def _device_rows(t: TraceColumns, rows: _Rows, own: np.ndarray, step: int | None, start: float, end: float) -> np.ndarray:
    """The step's own device work, and work queued before the step that ran inside its window (it may hold
    the step's work back on a stream); later steps' work is left out. All of it for the whole trace."""
    if step is None:
        return own
    lo, hi = np.searchsorted(rows.by_start_ts, [start - rows.max_dur, end], side="left")
    near = rows.by_start[lo:hi]
    near = near[(t.gpu_ts[near] + t.gpu_dur[near] > start) & (t.gpu_step[near] < step)]
    both = np.sort(np.concatenate([own, near]))
    return both[np.concatenate(([True], both[1:] != both[:-1]))] if len(both) else both


def _at(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """values[at], where `at` may point into an empty window (then zeros: the caller masks them out)."""
    return values[at] if len(values) else np.zeros(len(at), dtype=values.dtype)


def _local(ids: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Each of `ids` as its position in `sorted_ids`, -1 where it is not there."""
    if not len(sorted_ids):
        return np.full(len(ids), -1, dtype=np.int64)
    at = np.searchsorted(sorted_ids, ids)
    at_c = np.minimum(at, len(sorted_ids) - 1)
    return np.where((ids >= 0) & (sorted_ids[at_c] == ids), at_c, -1)


class _Cpu:
    """The CPU slices of the window (`ops`, by id; arrays below are by that position): their instants, one
    run of nodes per thread, in time order."""

    def __init__(self, trace: Trace, t: TraceColumns, ops: np.ndarray, start: float,
                 made: StepChains | None = None) -> None:
        """made: the chains already made for the step (every_step_chains), where its threads all nest."""
        rows = trace.derive(_rows_by_step)
        self.ops = ops
        n = len(ops)
        self.ts, self.dur = t.op_ts[ops], t.op_dur[ops]
        code = rows.call_code[ops]
        self.sync_calls = np.flatnonzero(code == _SYNC_CALL)
        self.wait_calls: list[float] = sorted(self.ts[rows.stream_wait[ops]].tolist())
        self.leaf_weights: dict[int, float] = {}            # edge -> the least weight a sync's return gives it
        self.leaf_edge: dict[int, int] = {}                 # sync call (position) -> its start -> end edge
        self._leaf: dict[int, tuple[int, int]] = {}         # the same, as (block, offset) until add_edges
        self._blocks: list[tuple[np.ndarray, ...]] = []
        self._firsts: list[np.ndarray] = []
        if made is not None:
            self.time, self.start_node, self.end_node = made.time, made.start_node, made.end_node
            self.thread_ends = made.thread_ends
            self._firsts.append(made.firsts)
            self._blocks.append(made.gaps)
            self._leaf = {c: (0, j) for c, j in made.leaf.items()}
            return
        self.kind_code = _cpu_kinds(code)
        self.parent = self.local(t.op_parent[ops])          # -1: a root, or a parent outside the window
        self.start_node = np.zeros(n, dtype=np.int64)
        self.end_node = np.zeros(n, dtype=np.int64)
        times: list[np.ndarray] = []
        self.thread_ends = np.zeros(0, dtype=np.int64)
        if not n:
            self.time = np.zeros(0)
            return
        th = np.lexsort((t.op_tid[ops], t.op_pid[ops]))      # stable: id order (start order) within a thread
        pid, tid = t.op_pid[ops][th], t.op_tid[ops][th]
        new = np.concatenate(([True], (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])))
        thread = np.cumsum(new) - 1                          # per position in th
        n_threads = int(thread[-1]) + 1
        bad = self._not_nested(th, thread, n_threads)
        nested = ~bad[thread]
        ends = np.zeros(n_threads, dtype=np.int64)
        at = 2
        if nested.any():
            at = self._chain_nested(th[nested], thread[nested], times, at, ends)
        depth = t.op_depth[ops]
        for k in np.flatnonzero(bad).tolist():
            mine = th[thread == k]
            at = self._chain(mine.tolist(), depth, times, at, ends, k)
        self.time = np.concatenate(times) if times else np.zeros(0)
        self.thread_ends = ends

    def local(self, ids: np.ndarray) -> np.ndarray:
        return _local(ids, self.ops)

    def _not_nested(self, th: np.ndarray, thread: np.ndarray, n_threads: int) -> np.ndarray:
        """Per thread: two slices under the same parent (or at the top of the window) overlap. Where none
        does, the innermost slice open after an instant is the slice that started there, or the parent of
        the one that ended."""
        parent = self.parent[th]
        # one key per (thread, parent), roots of a thread apart; a stable sort keeps start order within each
        group = np.where(parent >= 0, parent * n_threads + thread, -1 - thread)
        order = np.argsort(group, kind="stable")
        i = th[order]
        same = group[order][1:] == group[order][:-1]
        overlap = same & (self.ts[i[1:]] < (self.ts + self.dur)[i[:-1]])
        bad = np.zeros(n_threads, dtype=bool)
        bad[thread[order][1:][overlap]] = True
        return bad

    def _chain_nested(self, part: np.ndarray, thread: np.ndarray, times: list[np.ndarray], at: int,
                      ends: np.ndarray) -> int:
        """The chains of the threads whose slices nest properly, all at once: each thread's starts and ends
        in time order, each gap owned by the innermost slice open across it (its self time)."""
        # on a tie in time, within a thread: ends before starts, the later-started slice's end first, starts in
        # start order (a slice's position in `part` orders its thread's slices as their start order does)
        pos = np.arange(len(part))
        ts, dur = self.ts[part], self.dur[part]
        has_end = dur > 0
        mark_at = np.concatenate([ts, (ts + dur)[has_end]])
        tie = np.concatenate([pos + len(part), -pos[has_end]])          # every end's key below every start's
        op = np.concatenate([part, part[has_end]])
        mark_thread = np.concatenate([thread, thread[has_end]])
        order = np.lexsort((tie, mark_at, mark_thread))
        is_start = order < len(part)
        mark_at, op, mark_thread = mark_at[order], op[order], mark_thread[order]
        nodes = np.arange(at, at + len(mark_at))
        times.append(mark_at)
        node_of = np.empty(len(order), dtype=np.int64)      # each mark's node: the starts', then the ends'
        node_of[order] = nodes
        self.start_node[part] = node_of[:len(part)]
        self.end_node[part] = node_of[:len(part)]            # a zero-length slice is one instant
        self.end_node[part[has_end]] = node_of[len(part):]
        head = np.concatenate(([True], mark_thread[1:] != mark_thread[:-1]))
        last = np.concatenate((head[1:], [True]))
        ends[mark_thread[last]] = nodes[last]
        self._firsts.append(nodes[head])
        # the gap after an instant: the slice that started there (if it lasts), else the parent of the slice
        # that ended (or the zero-length one that happened) when that parent is in the window
        go = ~last
        u_op, u_start = op[go], is_start[go]
        owner = np.where(u_start & (self.dur[u_op] > 0), u_op, self.parent[u_op])
        has = owner >= 0
        kind = np.where(has, self.kind_code[np.maximum(owner, 0)], _K[CPU])
        self._blocks.append((nodes[go], nodes[go] + 1, np.maximum(mark_at[1:][go[:-1]] - mark_at[go], 0.0),
                             kind, np.where(has, OP, NONE), np.where(has, self.ops[np.maximum(owner, 0)], -1), has))
        # a sync call with nothing inside it: its start mark followed by its own end mark
        sc = self.sync_calls
        k = self.start_node[sc] - at
        ok = (k >= 0) & (k < len(op) - 1)
        sc, k = sc[ok], k[ok]
        leaf = go[k] & (op[k + 1] == sc) & ~is_start[k + 1] & (mark_thread[k + 1] == mark_thread[k])
        offset = np.cumsum(go) - 1
        block = len(self._blocks) - 1
        for c, j in zip(sc[leaf].tolist(), offset[k[leaf]].tolist(), strict=True):
            self._leaf[c] = (block, j)
        return at + len(mark_at)

    def _chain(self, mine: list[int], depth: np.ndarray, times: list[np.ndarray], at: int, ends: np.ndarray,
               k: int) -> int:
        """One thread whose slices do not nest (a slice outlives its parent): its instants in time order, each
        gap owned by the innermost slice open across it, the open slices kept as they come."""
        ts, dur = self.ts.tolist(), self.dur.tolist()
        marks = [(ts[i], 1, int(depth[i]), i) for i in mine]
        marks += [(ts[i] + dur[i], 0, -int(depth[i]), i) for i in mine if dur[i] > 0]
        marks.sort()
        open_: list[int] = []
        node_t: list[float] = []
        u: list[int] = []
        w: list[float] = []
        owners: list[int] = []
        leafs: list[tuple[int, int]] = []
        prev = -1
        for when, is_start, _, i in marks:
            v = at + len(node_t)
            node_t.append(when)
            if is_start:
                self.start_node[i] = v
                if dur[i] <= 0:                 # a zero-length slice is one instant
                    self.end_node[i] = v
            else:
                self.end_node[i] = v
            if prev < 0:
                self._firsts.append(np.array([v]))
            else:
                owner = open_[-1] if open_ else -1
                u.append(prev)
                w.append(when - node_t[prev - at])
                owners.append(owner)
                if owner >= 0 and prev == self.start_node[owner] and owner == i and not is_start:
                    leafs.append((owner, len(u) - 1))
            if is_start:
                if dur[i] > 0:
                    open_.append(i)
            elif open_ and open_[-1] == i:
                open_.pop()
            elif i in open_:
                open_.remove(i)
            prev = v
        times.append(np.array(node_t))
        ends[k] = prev
        o = np.array(owners, dtype=np.int64)
        has = o >= 0
        src = np.array(u, dtype=np.int64)
        self._blocks.append((src, src + 1, np.array(w), np.where(has, self.kind_code[np.maximum(o, 0)], _K[CPU]),
                             np.where(has, OP, NONE), np.where(has, self.ops[np.maximum(o, 0)], -1), has))
        for c, j in leafs:
            if self.kind_code[c] == _K[SYNC_WAIT]:
                self._leaf[c] = (len(self._blocks) - 1, j)
        return at + len(node_t)

    def add_edges(self, edges: _Edges, start: float) -> None:
        """Each thread's first instant from the window's start (unexplained), then the threads' runs."""
        if self._firsts:
            firsts = np.concatenate(self._firsts)
            edges.add(np.zeros(len(firsts)), firsts, self.time[firsts - 2] - start, _K[IDLE], unexplained=True)
        bases = [edges.add(s, d, w, kind, owner, owner_id, own, chain=True)
                 for s, d, w, kind, owner, owner_id, own in self._blocks]
        self.leaf_edge = {c: bases[b] + j for c, (b, j) in self._leaf.items()}


class _Device:
    """The device ops of the window, by (device, stream, start); arrays below are by that position. Each op
    is two nodes, its start then its end, so a stream's ops are one run of nodes."""

    def __init__(self, trace: Trace, t: TraceColumns, cpu: _Cpu, gpu: np.ndarray, start: float, end: float) -> None:
        order = np.lexsort((gpu, t.gpu_ts[gpu], t.gpu_stream[gpu], t.gpu_device[gpu]))
        self.sorted_ids = gpu                                # ascending GpuOp ids
        self.at = np.empty(len(gpu), dtype=np.int64)         # sorted id position -> position here
        self.at[order] = np.arange(len(gpu))
        gpu = gpu[order]
        self.ids = gpu
        m = len(gpu)
        self.ts = np.maximum(t.gpu_ts[gpu], start)                     # work queued earlier: from the window's start
        self.ends = np.maximum(t.gpu_ts[gpu] + t.gpu_dur[gpu], start)
        self.device, self.stream = t.gpu_device[gpu], t.gpu_stream[gpu]
        self.start_node = 2 + len(cpu.time) + 2 * np.arange(m)
        self.end_node = self.start_node + 1
        self.time = np.empty(2 * m)
        self.time[0::2], self.time[1::2] = self.ts, self.ends
        rows = trace.derive(_rows_by_step)
        self.kind_code = rows.gpu_kind[gpu]
        self.call = cpu.local(t.gpu_launch[gpu])                       # position in cpu, -1: outside the window
        known = self.call >= 0
        call = np.maximum(self.call, 0)
        self.launch_ts = np.where(known, _at(cpu.ts, call), -np.inf)
        self.call_end = np.where(known, _at(cpu.ts + cpu.dur, call), -np.inf)
        same_lane = np.zeros(m, dtype=bool)
        if m:
            same_lane[1:] = (self.device[1:] == self.device[:-1]) & (self.stream[1:] == self.stream[:-1])
        self.prev = np.where(same_lane, np.arange(m) - 1, -1)
        self.by_end = np.lexsort((gpu, self.ends))                     # by end, then id
        self.by_end_t = self.ends[self.by_end]
        lo = int(np.searchsorted(rows.sync_ts, start, side="left"))
        hi = int(np.searchsorted(rows.sync_ts, end, side="right"))
        marks = rows.syncs[lo:hi]
        self.op_waits: dict[int, list[int]] = {}       # positions here
        self.call_waits: dict[int, int] = {}           # cpu position -> position here
        if marks:
            self._recorded(trace, t, cpu, marks, start, end)

    def local(self, ids: np.ndarray) -> np.ndarray:
        at = _local(ids, self.sorted_ids)
        return np.where(at >= 0, self.at[np.maximum(at, 0)], -1)

    def _recorded(self, trace: Trace, t: TraceColumns, cpu: _Cpu, marks: list[DeviceMark], start: float,
                  end: float) -> None:
        ids = self.ids.tolist()
        lanes: dict[tuple[int, int], list[int]] = {}
        for k, dev, st in zip(ids, self.device.tolist(), self.stream.tolist(), strict=True):
            lanes.setdefault((dev, st), []).append(k)
        calls = cpu.ops[t.op_correlation_present[cpu.ops]]
        by_corr = dict(zip(t.op_correlation[calls].tolist(), calls.tolist(), strict=True))
        call_ts = dict(zip(cpu.ops.tolist(), cpu.ts.tolist(), strict=True))
        launch_ts = dict(zip(ids, self.launch_ts.tolist(), strict=True))
        rec = recorded_waits(trace, by_corr, call_ts, lanes, launch_ts, (start, end), marks)
        here = dict(zip(ids, range(len(ids)), strict=True))
        self.op_waits = {here[k]: [here[w] for w in ws] for k, ws in rec.op_waits.items()}
        at = cpu.local(np.array(list(rec.call_waits), dtype=np.int64))
        self.call_waits = {int(c): here[k] for c, k in zip(at.tolist(), rec.call_waits.values(), strict=True)}

    def add_edges(self, edges: _Edges, cpu: _Cpu, start: float) -> None:
        """Each op's own edge, then the edges into its start; the one that arrives last carries the
        measured gap (on a tie: a wait, then the stream, then the launch)."""
        m = len(self.ids)
        ts, ends, prev = self.ts, self.ends, self.prev
        prev_end = np.where(prev >= 0, ends[np.maximum(prev, 0)], -np.inf)
        stream = (prev >= 0) & (prev_end <= ts)
        call = np.maximum(self.call, 0)
        launch = (self.call >= 0) & (self.launch_ts <= ts)    # else the clocks disagree: it started before its launch
        after = ts >= self.call_end                            # it started after its launch call returned
        launched = np.where(after, self.call_end, self.launch_ts)
        arrived = np.maximum(np.where(stream, prev_end, -np.inf), np.where(launch, launched, -np.inf))
        waited = np.full(m, -1, dtype=np.int64)
        if self.op_waits or cpu.wait_calls:
            for k in range(m):
                waited[k] = self._waited(k, float(ts[k]), int(prev[k]), float(arrived[k]), cpu)
        wait = waited >= 0
        wait_end = np.where(wait, ends[np.maximum(waited, 0)], -np.inf)
        last = np.maximum(arrived, wait_end)
        by_wait = wait & (wait_end == last)
        by_stream = ~by_wait & stream & (prev_end == last)
        by_launch = ~by_wait & ~by_stream & launch
        gpu_ids = self.ids
        edges.add(self.start_node, self.end_node, ends - ts, self.kind_code, GPU, gpu_ids, True, chain=True)
        edges.add(self.end_node[prev[stream]], self.start_node[stream],
                  np.where(by_stream, ts - prev_end, 0.0)[stream], _K[IDLE], GPU, gpu_ids[stream], chain=True)
        delay = launch & after
        edges.add(np.where(delay, _at(cpu.end_node, call), _at(cpu.start_node, call))[launch], self.start_node[launch],
                  np.where(delay, np.where(by_launch, ts - self.call_end, 0.0), ts - self.launch_ts)[launch],
                  np.where(delay, _K[LAUNCH_DELAY], _K[LAUNCH])[launch], OP, _at(cpu.ops, call)[launch])
        edges.add(self.end_node[waited[wait]], self.start_node[wait], np.where(by_wait, ts - wait_end, 0.0)[wait],
                  _K[SYNC_WAIT], GPU, gpu_ids[wait])
        alone = ~(stream | launch | wait)
        edges.add(np.zeros(int(alone.sum())), self.start_node[alone], ts[alone] - start, _K[IDLE], unexplained=True)

    def _waited(self, k: int, ts: float, prev: int, arrived: float, cpu: _Cpu) -> int:
        recorded = self.op_waits.get(k)
        if recorded is None:
            return self._waited_on(k, ts, prev, arrived, cpu)
        ends = [(float(self.ends[w]), int(self.ids[w]), w) for w in recorded if self.ends[w] <= ts]
        return max(ends)[2] if ends else -1       # the last to end of what it waited for (before it started)

    def _waited_on(self, k: int, ts: float, prev: int, arrived: float, cpu: _Cpu) -> int:
        """The op on another stream of k's device that k waited for through a cudaStreamWaitEvent, or -1:
        only when such a call came between the launches of k's stream predecessor and of k, and k started
        after everything else it depends on had arrived."""
        if not cpu.wait_calls or ts <= arrived:
            return -1
        lo = float(self.launch_ts[prev]) if prev >= 0 else -np.inf
        hi = float(self.launch_ts[k])
        if hi == -np.inf or bisect_right(cpu.wait_calls, hi) == bisect_left(cpu.wait_calls, lo):
            return -1
        j = int(np.searchsorted(self.by_end_t, ts, side="right"))
        while j > 0 and self.by_end_t[j - 1] > arrived:
            j -= 1
            o = int(self.by_end[j])
            if self.device[o] == self.device[k] and self.stream[o] != self.stream[k] and self.launch_ts[o] <= hi:
                return o
        return -1

    def waited_by_sync(self, call_ts: float, call_end: float) -> int:
        """The device op a blocking call waited for: the last to end before it returned among the work
        queued before it (its own copy included), when that op ended after the call began; else -1."""
        j = int(np.searchsorted(self.by_end_t, call_end, side="right"))
        while j > 0 and self.by_end_t[j - 1] > call_ts:
            j -= 1
            o = int(self.by_end[j])
            if self.launch_ts[o] <= call_ts:
                return o
        return -1


def _syncs(edges: _Edges, cpu: _Cpu, device: _Device) -> None:
    """A blocking call ends when the device op it waited for ends, plus the call's return (its tail): the
    call's own edge keeps only that tail, so a what-if that ends the op sooner ends the call sooner."""
    src, dst, tails, who = [], [], [], []
    for c in cpu.sync_calls.tolist():
        ts, end = float(cpu.ts[c]), float(cpu.ts[c] + cpu.dur[c])
        k = device.call_waits.get(c, -1)
        if k >= 0 and not ts < device.ends[k] <= end:
            continue                            # recorded, and it did not wait (or the clocks disagree)
        if k < 0:
            k = device.waited_by_sync(ts, end)
        if k < 0:
            continue
        tail = end - float(device.ends[k])
        src.append(int(device.end_node[k]))
        dst.append(int(cpu.end_node[c]))
        tails.append(tail)
        who.append(int(cpu.ops[c]))
        e = cpu.leaf_edge.get(c)
        if e is not None:
            cpu.leaf_weights[e] = min(cpu.leaf_weights.get(e, np.inf), max(tail, 0.0))
    edges.add(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(tails), _K[SYNC_WAIT], OP,
              np.array(who, dtype=np.int64))
