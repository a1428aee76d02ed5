"""The critical path of a step: the one chain of CPU slices, launches, device work and waits that ends last.

    critical_path(trace, step) -> CriticalPath     step: a Step.index, or None for the whole trace
    critical_paths(trace) -> [CriticalPath]        one per step; one named "all" for a trace without steps

The path is the longest path from the window's start to its end through the graph of
mlptui.trace.analysis.critical_path.critical_graph (built per step, on demand, in time linear in its events). Its
length equals the step window of mlptui.trace.analysis.steps.steps (step start to the later of its end and
the end of its own GPU work); `remainder_us` is any difference left (float rounding only, on the
traces tested) and `unexplained_us` the time on the path that no recorded dependency explains.

- segments: the path in time order, each one kind of time (`KINDS`), its start and duration, the event
  it belongs to (`name`) and the CPU operator that owns it (`op`: the op itself for a CPU slice; the
  innermost op around a launch or sync call; the op that launched a device op). Zero-length steps are
  left out; the segments never overlap and add up to the path's length.
- breakdown_us: the path's time by kind, every kind present.
- top: the names with the most own time on the path (kinds cpu, launch, kernel, memcpy, memset).
- what_if: for each of the top names, the step time if the own time of every event of that name in the
  step were zero, recomputed on the graph (the next-longest chain takes over).
- gpu_share: the share of the path spent in device work (kernel, memcpy, memset).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.analysis.critical_path.critical_graph import GPU, KINDS, OP, Graph, build_graph
from mlptui.trace.analysis.events.op_owner import owners
from mlptui.trace.model import Trace

TOP = 5
_TOL = 1e-6                      # µs: two arrivals this close are the same instant
DEVICE_WORK = frozenset({"kernel", "memcpy", "memset"})
OWN_TIME = frozenset({"cpu", "launch", *DEVICE_WORK})
ALL_NAME = "all"


@dataclass(frozen=True, slots=True)
class Segment:
    kind: str
    name: str            # the event's name; "" for time no event owns
    start_us: float      # µs from the trace's first event
    dur_us: float
    op: str | None       # the CPU operator that owns it, None when there is none
    op_id: int = -1      # the Op it is (a CPU slice, a launch or sync call), else -1
    gpu_id: int = -1     # the GpuOp it is, else -1


@dataclass(frozen=True, slots=True)
class CriticalPath:
    step: int                       # Step.index; -1 for the whole trace
    name: str                       # the step's name, or "all"
    start_us: float
    window_us: float
    length_us: float
    remainder_us: float             # window minus length
    unexplained_us: float
    segments: list[Segment]
    breakdown_us: dict[str, float]
    top: list[tuple[str, str, float]]          # (name, kind, µs on the path)
    what_if: list[tuple[str, float]] = field(default_factory=list)   # (name, step µs without its own time)

    @property
    def gpu_share(self) -> float:
        return sum(self.breakdown_us[k] for k in DEVICE_WORK) / self.length_us if self.length_us > 0 else 0.0


def critical_paths(trace: Trace) -> list[CriticalPath]:
    if not trace.steps:
        return [critical_path(trace, None)]
    return [critical_path(trace, s.index) for s in trace.steps]


def critical_path(trace: Trace, step: int | None) -> CriticalPath:
    if step is not None and not 0 <= step < len(trace.steps):
        raise IndexError(f"no step {step} (the trace has {len(trace.steps)})")
    g = build_graph(trace, step)
    flow = _Flow(g)
    weight = np.asarray(g.weight, dtype=np.float64)
    longest = flow.longest(weight)
    path = flow.backtrack(longest, weight)
    segments = _segments(trace, g, path, longest)
    breakdown = dict.fromkeys(KINDS, 0.0)
    for seg in segments:
        breakdown[seg.kind] += seg.dur_us
    names = _edge_names(trace, g)
    own = np.asarray(g.own, dtype=bool)
    on_path: dict[tuple[int, str], float] = {}
    for e in path:
        if g.own[e] and g.kind[e] in OWN_TIME and g.weight[e] > 0:
            key = (int(names[e]), g.kind[e])
            on_path[key] = on_path.get(key, 0.0) + g.weight[e]
    strings = trace.columns.strings
    ranked = sorted(on_path.items(), key=lambda r: (-r[1], strings[r[0][0]]))[:TOP]
    top = [(strings[n], k, us) for (n, k), us in ranked]
    what_if = [(strings[n], flow.longest(np.where(own & (names == n), 0.0, weight))[1]) for (n, _k), _us in ranked]
    mark = trace.steps[step] if step is not None and trace.steps else None
    window = g.end_us - g.start_us
    length = longest[1]
    return CriticalPath(
        step=-1 if mark is None else mark.index, name=ALL_NAME if mark is None else mark.name, start_us=g.start_us,
        window_us=window, length_us=length, remainder_us=window - length,
        unexplained_us=sum(g.weight[e] for e in path if g.unexplained[e]),
        segments=segments, breakdown_us=breakdown, top=top, what_if=what_if)


class _Flow:
    """The graph's edges in an order that settles every node before it is used: by the position of their
    end node in a topological order (the nodes by time, made-order breaking ties, source first and sink
    last; Kahn's algorithm where a tie in time goes against that order)."""

    def __init__(self, g: Graph) -> None:
        n = len(g.time)
        src = np.asarray(g.src, dtype=np.int64)
        dst = np.asarray(g.dst, dtype=np.int64)
        key = np.asarray(g.time, dtype=np.float64)
        key[0], key[1] = -np.inf, np.inf
        order = np.lexsort((np.arange(n), key))
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        if len(src) and not bool((pos[src] < pos[dst]).all()):
            pos = _kahn(n, src, dst)
        self.by_dst = np.argsort(pos[dst], kind="stable")
        self.src = src[self.by_dst].tolist()
        self.dst = dst[self.by_dst].tolist()
        self.n = n
        # each node's incoming edges (edge numbers of g), for the walk back
        by_node = np.argsort(dst, kind="stable")
        self.in_edges = by_node
        self.in_start = np.searchsorted(dst[by_node], np.arange(n + 1), side="left")
        self.g_src = g.src

    def longest(self, weight: np.ndarray) -> list[float]:
        """Longest distance from the source to every node (a node the source cannot reach stays at 0)."""
        dist = [0.0] * self.n
        for u, v, w in zip(self.src, self.dst, weight[self.by_dst].tolist(), strict=True):
            d = dist[u] + w
            if d > dist[v]:
                dist[v] = d
        return dist

    def backtrack(self, dist: list[float], weight: np.ndarray) -> list[int]:
        """The path's edges (of g) with a weight, source to sink; among edges that tie, the last one added
        (a sync or wait edge is added after the edges it explains better)."""
        path = []
        v = 1
        src = self.g_src
        while v != 0:
            chosen = -1
            for e in self.in_edges[self.in_start[v]:self.in_start[v + 1]].tolist():
                if abs(dist[src[e]] + weight[e] - dist[v]) <= _TOL + 1e-12 * dist[v]:
                    chosen = max(chosen, e)
            if chosen < 0:
                break
            if weight[chosen] > 0:
                path.append(chosen)
            v = src[chosen]
        path.reverse()
        return path


def _kahn(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    outgoing: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        outgoing[u].append(v)
        waiting[v] += 1
    ready = deque(v for v in range(n) if waiting[v] == 0)
    pos = np.empty(n, dtype=np.int64)
    at = 0
    while ready:
        u = ready.popleft()
        pos[u] = at
        at += 1
        for v in outgoing[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    if at != n:                 # cannot happen: every edge goes forward in time or along a thread
        raise RuntimeError("the dependency graph has a cycle")
    return pos


def _edge_names(trace: Trace, g: Graph) -> np.ndarray:
    """The string id of each edge's owner's name (-1 for none)."""
    c = trace.columns
    owner = np.asarray(g.owner, dtype=np.int64)
    ids = np.asarray(g.owner_id, dtype=np.int64)
    names = np.full(len(owner), -1, dtype=np.int64)
    is_op, is_gpu = owner == OP, owner == GPU
    names[is_op] = c.op_name[ids[is_op]]
    names[is_gpu] = c.gpu_name[ids[is_gpu]]
    return names


def _segments(trace: Trace, g: Graph, path: list[int], dist: list[float]) -> list[Segment]:
    c = trace.columns
    strings = c.strings
    who = owners(trace)
    out = []
    for e in path:
        o, i, kind = g.owner[e], g.owner_id[e], g.kind[e]
        start = g.start_us + dist[g.src[e]]
        if o == OP:
            top = int(who.op_owner[i])
            out.append(Segment(kind, strings[int(c.op_name[i])], start, g.weight[e],
                               strings[int(c.op_name[top])] if top >= 0 else None, op_id=i))
        elif o == GPU:
            launcher = int(who.gpu_owner[i])
            out.append(Segment(kind, strings[int(c.gpu_name[i])], start, g.weight[e],
                               strings[int(c.op_name[launcher])] if launcher >= 0 else None, gpu_id=i))
        else:
            out.append(Segment(kind, "", start, g.weight[e], None))
    return out
