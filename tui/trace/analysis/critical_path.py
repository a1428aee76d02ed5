"""The critical path of a step: the one chain of CPU slices, launches, device work and waits that ends last.

    critical_path(trace, step) -> CriticalPath     step: a Step.index, or None for the whole trace
    critical_paths(trace) -> [CriticalPath]        one per step; one named "all" for a trace without steps

The path is the longest path from the window's start to its end through the graph of
mlptui.trace.analysis.critical_graph (built per step, on demand, in time linear in its events). Its
length equals the step window of mlptui.trace.analysis.steps (step start to the later of its end and
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

from mlptui.trace.analysis.critical_graph import GPU, KINDS, OP, Graph, build_graph
from mlptui.trace.analysis.op_owner import owners
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
    order, incoming = _topology(g)
    longest = _longest(g, order, incoming, g.weight)
    path = _backtrack(g, incoming, longest)
    segments = _segments(trace, g, path, longest)
    length = longest[1]
    breakdown = dict.fromkeys(KINDS, 0.0)
    own: dict[tuple[str, str], float] = {}
    for s in segments:
        breakdown[s.kind] += s.dur_us
        if s.kind in OWN_TIME:
            own[(s.name, s.kind)] = own.get((s.name, s.kind), 0.0) + s.dur_us
    top = sorted(((n, k, us) for (n, k), us in own.items()), key=lambda r: (-r[2], r[0]))[:TOP]
    names = _edge_names(trace, g)
    what_if = []
    for name, _kind, _us in top:
        weights = [0.0 if g.own[e] and names[e] == name else w for e, w in enumerate(g.weight)]
        what_if.append((name, _longest(g, order, incoming, weights)[1]))
    mark = trace.steps[step] if step is not None and trace.steps else None
    window = g.end_us - g.start_us
    return CriticalPath(
        step=-1 if mark is None else mark.index, name=ALL_NAME if mark is None else mark.name, start_us=g.start_us,
        window_us=window, length_us=length, remainder_us=window - length,
        unexplained_us=sum(g.weight[e] for e in _segment_edges(g, path) if g.unexplained[e]),
        segments=segments, breakdown_us=breakdown, top=top, what_if=what_if)


def _topology(g: Graph) -> tuple[list[int], list[list[int]]]:
    """The nodes in an order every edge goes forward in (Kahn's), and each node's incoming edges."""
    n = len(g.time)
    incoming: list[list[int]] = [[] for _ in range(n)]
    outgoing: list[list[int]] = [[] for _ in range(n)]
    for e, (u, v) in enumerate(zip(g.src, g.dst, strict=True)):
        incoming[v].append(e)
        outgoing[u].append(v)
    waiting = [len(x) for x in incoming]
    ready = deque(v for v in range(n) if waiting[v] == 0)
    order = []
    while ready:
        u = ready.popleft()
        order.append(u)
        for v in outgoing[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    if len(order) != n:         # cannot happen: every edge goes forward in time or in nesting
        raise RuntimeError("the dependency graph has a cycle")
    return order, incoming


def _longest(g: Graph, order: list[int], incoming: list[list[int]], weight: list[float]) -> list[float]:
    """Longest distance from the source to every node (nodes the source cannot reach stay at 0)."""
    dist = [0.0] * len(g.time)
    src = g.src
    for v in order:
        best = 0.0
        for e in incoming[v]:
            d = dist[src[e]] + weight[e]
            if d > best:
                best = d
        dist[v] = best
    return dist


def _backtrack(g: Graph, incoming: list[list[int]], dist: list[float]) -> list[int]:
    """The path's edges from source to sink; among edges that tie, the last one added (a sync or wait
    edge is added after the edges it explains better)."""
    path = []
    v = 1
    while v != 0:
        tight = [e for e in incoming[v] if abs(dist[g.src[e]] + g.weight[e] - dist[v]) <= _TOL + 1e-12 * dist[v]]
        if not tight:
            break
        e = tight[-1]
        path.append(e)
        v = g.src[e]
    path.reverse()
    return path


def _segment_edges(g: Graph, path: list[int]) -> list[int]:
    return [e for e in path if g.weight[e] > 0]


def _edge_names(trace: Trace, g: Graph) -> list[str]:
    c = trace.columns
    strings = c.strings
    names = []
    for o, i in zip(g.owner, g.owner_id, strict=True):
        if o == OP:
            names.append(strings[int(c.op_name[i])])
        elif o == GPU:
            names.append(strings[int(c.gpu_name[i])])
        else:
            names.append("")
    return names


def _segments(trace: Trace, g: Graph, path: list[int], dist: list[float]) -> list[Segment]:
    c = trace.columns
    strings = c.strings
    who = owners(trace)
    out = []
    for e in _segment_edges(g, path):
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
