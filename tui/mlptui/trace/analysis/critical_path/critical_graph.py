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
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.analysis.critical_path.critical_syncs import recorded_waits
from mlptui.trace.analysis.events.launches import call_kinds
from mlptui.trace.analysis.events.tables import TraceColumns, tables, unique_ids
from mlptui.trace.analysis.steps.steps import LAUNCH_PATH_KINDS
from mlptui.trace.model import KERNEL, LAUNCH_CATS, MEMCPY, MEMSET, Trace

# Segment kinds (the path's vocabulary; docs/json.md).
CPU, LAUNCH, LAUNCH_DELAY, SYNC_WAIT, IDLE = "cpu", "launch", "launch_delay", "sync_wait", "idle"
DEVICE_KINDS = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset"}
KINDS = (CPU, LAUNCH, LAUNCH_DELAY, "kernel", "memcpy", "memset", SYNC_WAIT, IDLE)

NONE, OP, GPU = 0, 1, 2          # what owns an edge: nothing, a CPU slice (Op id), a device op (GpuOp id)


@dataclass
class Graph:
    """Nodes 0 (source) and 1 (sink), then two per event, made in an order every edge follows but for
    ties in time the path code checks; edges as parallel lists."""

    start_us: float                     # the window (µs from the trace's first event)
    end_us: float
    time: list[float] = field(default_factory=lambda: [0.0, 0.0])
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)      # NONE, OP or GPU
    owner_id: list[int] = field(default_factory=list)
    own: list[bool] = field(default_factory=list)       # the owner's own time (a what-if may remove it)
    unexplained: list[bool] = field(default_factory=list)

    def node(self, t: float) -> int:
        self.time.append(t)
        return len(self.time) - 1

    def edge(self, u: int, v: int, w: float, kind: str, owner: int = NONE, owner_id: int = -1,
             own: bool = False, unexplained: bool = False) -> None:
        self.src.append(u)
        self.dst.append(v)
        self.weight.append(w if w > 0 else 0.0)
        self.kind.append(kind)
        self.owner.append(owner)
        self.owner_id.append(owner_id)
        self.own.append(own)
        self.unexplained.append(unexplained)

    def from_source(self, v: int) -> None:
        """v is explained by nothing in the graph: it hangs from the window's start by its measured offset."""
        self.edge(0, v, self.time[v] - self.start_us, IDLE, unexplained=True)


def is_blocking_sync(name: str) -> bool:
    """A call that blocks the host until device work ends: the Synchronize calls and blocking copies."""
    return "Synchronize" in name or "synchronize" in name or ("Memcpy" in name and "Async" not in name)


def is_stream_wait(name: str) -> bool:
    return "StreamWaitEvent" in name


def build_graph(trace: Trace, step: int | None) -> Graph:
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
    g = Graph(start, end)
    g.time[0], g.time[1] = start, end
    cpu = _Cpu(trace, t, g, ops)
    if root not in cpu.start:       # a damaged step (its own slice left out of its rows): hang from its threads
        root = -1
    if root >= 0:
        g.edge(0, cpu.start[root], 0.0, CPU)
        g.edge(cpu.end[root], 1, 0.0, IDLE)
    else:
        for e in cpu.thread_ends:
            g.edge(e, 1, 0.0, IDLE)
    device = _Device(trace, t, g, cpu, _device_rows(t, rows, own, step if root >= 0 else None, start, end))
    for k in own.tolist():
        v = device.end.get(k)
        if v is not None:
            g.edge(v, 1, 0.0, IDLE)
    _syncs(g, cpu, device)
    return g


_NONE = np.zeros(0, dtype=np.int64)


@dataclass
class _Rows:
    ops: dict[int, np.ndarray]          # by step: Op ids (id order: by thread, then start)
    gpu: dict[int, np.ndarray]          # by step: the GpuOp ids it launched
    by_start: np.ndarray                # every GpuOp id, by start
    max_dur: float


def _rows_by_step(trace: Trace) -> _Rows:
    t = tables(trace)
    by_start = np.argsort(t.gpu_ts, kind="stable")
    return _Rows(_split(np.arange(t.n_ops), t.op_step), _split(np.arange(t.n_gpu), t.gpu_step), by_start,
                 float(t.gpu_dur.max()) if t.n_gpu else 0.0)


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
    ts = t.gpu_ts[rows.by_start]
    lo, hi = np.searchsorted(ts, [start - rows.max_dur, end], side="left")
    near = rows.by_start[lo:hi]
    near = near[(t.gpu_ts[near] + t.gpu_dur[near] > start) & (t.gpu_step[near] < step)]
    both = np.sort(np.concatenate([own, near]))
    return both[np.concatenate(([True], both[1:] != both[:-1]))] if len(both) else both


class _Cpu:
    """The CPU slices of the window: their nodes, and one chain of instants per thread."""

    def __init__(self, trace: Trace, t: TraceColumns, g: Graph, ops: np.ndarray) -> None:
        self.g = g
        ids = ops.tolist()
        ts, dur = t.op_ts[ops].tolist(), t.op_dur[ops].tolist()
        self.ts = dict(zip(ids, ts, strict=True))
        self.dur = dict(zip(ids, dur, strict=True))
        self.start: dict[int, int] = {}           # nodes, made as each thread's chain reaches them
        self.end: dict[int, int] = {}
        self.kind: dict[int, str] = {}
        self.leaf_edge: dict[int, int] = {}        # a call with nothing inside it: its start -> end edge
        self.sync_calls: list[int] = []
        self.wait_calls: list[float] = []          # cudaStreamWaitEvent starts, by time
        self._calls(trace, t, ids, t.op_cat[ops].tolist(), t.op_name[ops].tolist())
        self.parent = dict(zip(ids, t.op_parent[ops].tolist(), strict=True))
        self.thread_ends = []
        if not ids:
            return
        depth = dict(zip(ids, t.op_depth[ops].tolist(), strict=True))
        th = np.lexsort((t.op_tid[ops], t.op_pid[ops]))      # stable: id order (start order) within a thread
        keys = np.stack([t.op_pid[ops][th], t.op_tid[ops][th]], axis=1)
        cuts = np.flatnonzero((keys[1:] != keys[:-1]).any(axis=1)) + 1
        for part in np.split(ops[th], cuts):
            mine = part.tolist()
            if self._nested(mine):
                self.thread_ends.append(self._chain_nested(part))
            else:
                self.thread_ends.append(self._chain(mine, depth))

    def by_correlation(self, t: TraceColumns) -> dict[int, int]:
        """correlation -> Op id, for the window's runtime/driver calls."""
        ids = np.fromiter(self.ts.keys(), dtype=np.int64, count=len(self.ts))
        if not len(ids):
            return {}
        ids = ids[t.op_correlation_present[ids]]
        return dict(zip(t.op_correlation[ids].tolist(), ids.tolist(), strict=True))

    def _calls(self, trace: Trace, t: TraceColumns, ids: list[int], cats: list[int], names: list[int]) -> None:
        kinds = call_kinds(trace)
        launch_cats = set(t.cat_ids(LAUNCH_CATS))
        for i, c, n in zip(ids, cats, names, strict=True):
            if c not in launch_cats:
                continue
            name = t.strings[n]
            if is_blocking_sync(name):
                self.kind[i] = SYNC_WAIT
                self.sync_calls.append(i)
            elif kinds.get(name) in LAUNCH_PATH_KINDS:
                self.kind[i] = LAUNCH
            if is_stream_wait(name):
                self.wait_calls.append(self.ts[i])
        self.wait_calls.sort()

    def _nested(self, mine: list[int]) -> bool:
        """No two slices under the same parent (or at the top of the window) overlap: then the innermost
        slice open after an instant is the slice that started there, or the parent of the one that ended."""
        last_end: dict[int, float] = {}
        for i in mine:
            p = self.parent[i] if self.parent[i] in self.dur else -1
            if self.ts[i] < last_end.get(p, -np.inf):
                return False
            last_end[p] = self.ts[i] + self.dur[i]
        return True

    def _chain_nested(self, part: np.ndarray) -> int:
        """_chain's edges for a thread whose slices nest properly, with numpy."""
        g = self.g
        ts = np.array([self.ts[i] for i in part.tolist()])
        dur = np.array([self.dur[i] for i in part.tolist()])
        depth = np.arange(len(part))         # start order stands in for depth among slices that nest
        has_end = dur > 0
        at = np.concatenate([ts, (ts + dur)[has_end]])
        is_start = np.concatenate([np.ones(len(part), bool), np.zeros(int(has_end.sum()), bool)])
        tie = np.concatenate([depth, -depth[has_end]])
        op = np.concatenate([part, part[has_end]])
        order = np.lexsort((tie, is_start, at))
        at, is_start, op = at[order], is_start[order], op[order]
        first = len(g.time)
        g.time.extend(at.tolist())
        nodes = np.arange(first, first + len(at))
        ops, starts = op.tolist(), is_start.tolist()
        for i, n, st in zip(ops, nodes.tolist(), starts, strict=True):
            if st:
                self.start[i] = n
                if self.dur[i] <= 0:
                    self.end[i] = n
            else:
                self.end[i] = n
        g.from_source(first)
        # the gap after an instant: the slice that started there (if it lasts), else the parent of the slice
        # that ended (or the zero-length one that happened) when that parent is in the window
        owners = [i if st and self.dur[i] > 0 else (self.parent[i] if self.parent[i] in self.start else -1)
                  for i, st in zip(ops[:-1], starts[:-1], strict=True)]
        u, v = nodes[:-1].tolist(), nodes[1:].tolist()
        base = len(g.src)
        kind = self.kind
        g.src.extend(u)
        g.dst.extend(v)
        g.weight.extend(np.maximum(np.diff(at), 0.0).tolist())
        g.kind.extend([kind.get(o, CPU) for o in owners])
        g.owner.extend([OP if o >= 0 else NONE for o in owners])
        g.owner_id.extend(owners)
        g.own.extend([o >= 0 for o in owners])
        g.unexplained.extend([False] * len(owners))
        for c in self.sync_calls:
            k = self.start.get(c, -1) - first
            if 0 <= k < len(ops) - 1 and ops[k + 1] == c and not starts[k + 1]:
                self.leaf_edge[c] = base + k
        return int(nodes[-1])

    def _chain(self, mine: list[int], depth: dict[int, int]) -> int:
        """A thread's starts and ends in time order, each gap owned by the innermost slice open across it
        (its self time; a slice that outlives its parent is handled as it comes). The first instant hangs
        from the window's start. Returns the thread's last node."""
        g = self.g
        marks = [(self.ts[i], 1, depth[i], i) for i in mine]
        marks += [(self.ts[i] + self.dur[i], 0, -depth[i], i) for i in mine if self.dur[i] > 0]
        marks.sort()
        open_: list[int] = []
        prev = -1
        for at, is_start, _, i in marks:
            if is_start:
                v = self.start[i] = g.node(at)
                if self.dur[i] <= 0:            # a zero-length slice is one instant
                    self.end[i] = v
            else:
                v = self.end[i] = g.node(at)
            if prev < 0:
                g.from_source(v)
            elif v != prev:
                owner = open_[-1] if open_ else -1
                if owner >= 0:
                    g.edge(prev, v, g.time[v] - g.time[prev], self.kind.get(owner, CPU), OP, owner, own=True)
                    if prev == self.start[owner] and owner == i and not is_start:
                        self.leaf_edge[owner] = len(g.src) - 1
                else:                       # thread time outside every recorded slice of the window
                    g.edge(prev, v, g.time[v] - g.time[prev], CPU)
            if is_start:
                if self.dur[i] > 0:
                    open_.append(i)
            elif open_ and open_[-1] == i:
                open_.pop()
            elif i in open_:
                open_.remove(i)
            prev = v
        return prev


class _Device:
    """The device ops of the window: their nodes, launch, stream-order and cross-stream edges."""

    def __init__(self, trace: Trace, t: TraceColumns, g: Graph, cpu: _Cpu, gpu: np.ndarray) -> None:
        self.g = g
        order = np.lexsort((gpu, t.gpu_ts[gpu], t.gpu_stream[gpu], t.gpu_device[gpu]))
        gpu = gpu[order]
        ids = gpu.tolist()
        ts = np.maximum(t.gpu_ts[gpu], g.start_us).tolist()           # work queued earlier: from the window's start
        ends = np.maximum(t.gpu_ts[gpu] + t.gpu_dur[gpu], g.start_us).tolist()
        lane = list(zip(t.gpu_device[gpu].tolist(), t.gpu_stream[gpu].tolist(), strict=True))
        launch = t.gpu_launch[gpu].tolist()
        code = {c: DEVICE_KINDS[cat] for cat in DEVICE_KINDS for c in t.cat_ids((cat,))}
        cats = t.gpu_cat[gpu].tolist()
        self.start: dict[int, int] = {}
        self.end: dict[int, int] = {}
        for k, a, e in zip(ids, ts, ends, strict=True):     # in stream order: each op's start, then its end
            self.start[k] = g.node(a)
            self.end[k] = g.node(e)
        self.launch_ts = {k: (cpu.ts[c] if c in cpu.ts else -np.inf) for k, c in zip(ids, launch, strict=True)}
        # ends of every device op, by end, for the sync and cross-stream searches
        by_end = sorted(zip(ends, ids, strict=True))
        self.by_end_t: list[float] = [e for e, _ in by_end]
        self.by_end: list[int] = [k for _, k in by_end]
        self.lane = dict(zip(ids, lane, strict=True))
        lanes: dict[tuple[int, int], list[int]] = {}
        for k, ln in zip(ids, lane, strict=True):
            lanes.setdefault(ln, []).append(k)
        self.recorded = recorded_waits(trace, cpu.by_correlation(t), cpu.ts, lanes, self.launch_ts,
                                       (g.start_us, g.end_us))
        prev_on: dict[tuple[int, int], int] = {}
        for k, a, e, ln, c, cat in zip(ids, ts, ends, lane, launch, cats, strict=True):
            g.edge(self.start[k], self.end[k], e - a, code.get(cat, "kernel"), GPU, k, own=True)
            self._arrive(k, a, prev_on.get(ln, -1), c, cpu)
            prev_on[ln] = k

    def _arrive(self, k: int, ts: float, prev: int, call: int, cpu: _Cpu) -> None:
        """The edges into device op k's start; the one that arrives last carries the measured gap."""
        g = self.g
        s = self.start[k]
        arrivals: list[tuple[float, str]] = []
        if prev >= 0 and g.time[self.end[prev]] <= ts:
            arrivals.append((g.time[self.end[prev]], "stream"))
        has_call = call in cpu.start
        if has_call:
            call_end = cpu.ts[call] + cpu.dur[call]
            launched = call_end if ts >= call_end else cpu.ts[call]
            if cpu.ts[call] <= ts:
                arrivals.append((launched, "launch"))
            else:
                has_call = False                # the clocks disagree: the op started before its launch
        recorded = self.recorded.op_waits.get(k)
        if recorded is not None:                # the last to end of what it waited for (before it started)
            ends = [(g.time[self.end[w]], w) for w in recorded if g.time[self.end[w]] <= ts]
            waited = max(ends)[1] if ends else -1
        else:
            waited = self._waited_on(k, ts, prev, max((a for a, _ in arrivals), default=-np.inf), cpu)
        if waited >= 0:
            arrivals.append((g.time[self.end[waited]], "wait"))
        if not arrivals:
            g.from_source(s)
            return
        binding = max(arrivals)[1]
        if prev >= 0 and g.time[self.end[prev]] <= ts:
            gap = ts - g.time[self.end[prev]] if binding == "stream" else 0.0
            g.edge(self.end[prev], s, gap, IDLE, GPU, k)
        if has_call:
            if ts >= cpu.ts[call] + cpu.dur[call]:
                g.edge(cpu.end[call], s, ts - g.time[cpu.end[call]] if binding == "launch" else 0.0,
                       LAUNCH_DELAY, OP, call)
            else:                               # it started while its launch call was still running
                g.edge(cpu.start[call], s, ts - cpu.ts[call], LAUNCH, OP, call)
        if waited >= 0:
            g.edge(self.end[waited], s, ts - g.time[self.end[waited]] if binding == "wait" else 0.0,
                   SYNC_WAIT, GPU, k)

    def _waited_on(self, k: int, ts: float, prev: int, arrived: float, cpu: _Cpu) -> int:
        """The op on another stream of k's device that k waited for through a cudaStreamWaitEvent, or -1:
        only when such a call came between the launches of k's stream predecessor and of k, and k started
        after everything else it depends on had arrived."""
        if not cpu.wait_calls or ts <= arrived:
            return -1
        lo = self.launch_ts[prev] if prev >= 0 else -np.inf
        hi = self.launch_ts[k]
        if hi == -np.inf or bisect_right(cpu.wait_calls, hi) == bisect_left(cpu.wait_calls, lo):
            return -1
        device, stream = self.lane[k]
        j = bisect_right(self.by_end_t, ts)
        while j > 0 and self.by_end_t[j - 1] > arrived:
            j -= 1
            o = self.by_end[j]
            if self.lane[o][0] == device and self.lane[o][1] != stream and self.launch_ts[o] <= hi:
                return o
        return -1

    def waited_by_sync(self, call_ts: float, call_end: float) -> int:
        """The device op a blocking call waited for: the last to end before it returned among the work
        queued before it (its own copy included), when that op ended after the call began; else -1."""
        j = bisect_right(self.by_end_t, call_end)
        while j > 0 and self.by_end_t[j - 1] > call_ts:
            j -= 1
            o = self.by_end[j]
            if self.launch_ts[o] <= call_ts:
                return o
        return -1


def _syncs(g: Graph, cpu: _Cpu, device: _Device) -> None:
    """A blocking call ends when the device op it waited for ends, plus the call's return (its tail): the
    call's own edge keeps only that tail, so a what-if that ends the op sooner ends the call sooner."""
    for c in cpu.sync_calls:
        ts, end = cpu.ts[c], cpu.ts[c] + cpu.dur[c]
        k = device.recorded.call_waits.get(c, -1)
        if k >= 0 and not ts < g.time[device.end[k]] <= end:
            continue                            # recorded, and it did not wait (or the clocks disagree)
        if k < 0:
            k = device.waited_by_sync(ts, end)
        if k < 0:
            continue
        tail = end - g.time[device.end[k]]
        g.edge(device.end[k], cpu.end[c], tail, SYNC_WAIT, OP, c)
        e = cpu.leaf_edge.get(c)
        if e is not None:
            g.weight[e] = min(g.weight[e], max(tail, 0.0))


