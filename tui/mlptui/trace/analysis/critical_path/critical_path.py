"""The critical path of a step: the one chain of CPU slices, launches, device work and waits that ends last.

    critical_path(trace, step) -> CriticalPath     step: a Step.index, or None for the whole trace
    critical_paths(trace) -> [CriticalPath]        one per step; one named "all" for a trace without steps

The path is the longest path from the window's start to its end through the graph of
mlptui.trace.analysis.critical_path.critical_graph (built per step, on demand, in time linear in its events),
through mlptui.trace.analysis.critical_path.critical_flow (the what-ifs of a step in one pass);
critical_paths makes every step's at once (critical_batch: the same figures, with fewer passes). Its
length equals the step window of mlptui.trace.analysis.steps.steps (step start to the later of its end and
the end of its own GPU work); `remainder_us` is any difference left (float rounding only, on the
traces tested) and `unexplained_us` the time on the path that no recorded dependency explains.

- segments (made from `columns`, the same as parallel lists): the path in time order, each one kind of time (`KINDS`), its start and duration, the event
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

from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.analysis.critical_path.critical_batch import every_path
from mlptui.trace.analysis.critical_path.critical_chains import Chains
from mlptui.trace.analysis.critical_path.critical_flow import Flow
from mlptui.trace.analysis.critical_path.critical_graph import (
    GPU,
    KINDS,
    OP,
    Graph,
    build_graph,
)
from mlptui.trace.analysis.critical_path.critical_tops import Ranked, group_tops
from mlptui.trace.analysis.events.op_owner import owners
from mlptui.trace.model import Trace

TOP = 5
DEVICE_WORK = frozenset({"kernel", "memcpy", "memset"})
OWN_TIME = frozenset({"cpu", "launch", *DEVICE_WORK})
_OWN_KIND = np.isin(np.arange(len(KINDS)), [KINDS.index(k) for k in OWN_TIME])     # by kind code
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
class SegmentColumns:
    """The path's segments as parallel columns (what the report reads; `rows()` makes the Segment objects):
    the strings as lists, the numbers as arrays (the report rounds them as arrays)."""

    kind: list[str]
    name: list[str]
    start_us: np.ndarray
    dur_us: np.ndarray
    op: list[str | None]
    op_id: np.ndarray
    gpu_id: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)

    def rows(self) -> list[Segment]:
        return [Segment(*r) for r in zip(self.kind, self.name, self.start_us.tolist(), self.dur_us.tolist(), self.op,
                                         self.op_id.tolist(), self.gpu_id.tolist(), strict=True)]


@dataclass(frozen=True, slots=True)
class CriticalPath:
    step: int                       # Step.index; -1 for the whole trace
    name: str                       # the step's name, or "all"
    start_us: float
    window_us: float
    length_us: float
    remainder_us: float             # window minus length
    unexplained_us: float
    columns: SegmentColumns
    breakdown_us: dict[str, float]
    top: list[tuple[str, str, float]]          # (name, kind, µs on the path)
    what_if: list[tuple[str, float]] = field(default_factory=list)   # (name, step µs without its own time)

    @property
    def segments(self) -> list[Segment]:
        return self.columns.rows()

    @property
    def gpu_share(self) -> float:
        return sum(self.breakdown_us[k] for k in DEVICE_WORK) / self.length_us if self.length_us > 0 else 0.0


def critical_paths(trace: Trace) -> list[CriticalPath]:
    if not trace.steps:
        return [critical_path(trace, None)]
    return every_path(trace, _Part, path_of, TOP, _OWN_KIND)    # every step at once


def critical_path(trace: Trace, step: int | None, chains: Chains | None = None) -> CriticalPath:
    """`chains`: every_step_chains(trace), for a caller that builds every step's graph."""
    if step is not None and not 0 <= step < len(trace.steps):
        raise IndexError(f"no step {step} (the trace has {len(trace.steps)})")
    return path_of(trace, step, build_graph(trace, step, chains))


def path_of(trace: Trace, step: int | None, g: Graph) -> CriticalPath:
    """The path through a graph built for the step."""
    flow = Flow(g)
    weight = g.weight
    longest = flow.longest(weight)
    path = flow.backtrack(longest, weight)
    part = _Part(trace, g, path)
    ends = [] if part.gone is None else flow.sink_without(weight, *part.gone, len(part.ranked)).tolist()
    return part.path(trace, step, longest, ends)


class _Part:
    """A step's path up to its what-ifs: its top names and the edges each what-if takes away (`ranked`: the
    top names already made for the step in its group, critical_tops.group_tops; then no `gone`)."""

    def __init__(self, trace: Trace, g: Graph, path: np.ndarray, ranked: Ranked | None = None) -> None:
        self.g, self.on = g, path
        self.gone: tuple[np.ndarray, np.ndarray] | None = None
        if ranked is None:      # one step alone: a group of one
            tops = group_tops(trace, g, [path], np.array([0, len(g.weight)]), TOP, _OWN_KIND)
            ranked = tops.ranked[0]
            self.gone = (tops.gone, tops.row) if ranked else None
        self.ranked = ranked

    def path(self, trace: Trace, step: int | None, longest: np.ndarray, ends: list[float]) -> CriticalPath:
        g, path, weight = self.g, self.on, self.g.weight
        strings = trace.columns.strings
        columns = _segments(trace, g, path, longest)
        breakdown = dict(zip(KINDS, np.bincount(g.kind_code[path], weights=weight[path],
                                                minlength=len(KINDS)).tolist(), strict=True))
        top = [(strings[n], k, us) for (n, k), us in self.ranked]
        what_if = [(strings[n], us) for ((n, _k), _u), us in zip(self.ranked, ends, strict=True)]
        mark = trace.steps[step] if step is not None and trace.steps else None
        window = g.end_us - g.start_us
        length = float(longest[1])
        return CriticalPath(
            step=-1 if mark is None else mark.index, name=ALL_NAME if mark is None else mark.name,
            start_us=g.start_us, window_us=window, length_us=length, remainder_us=window - length,
            unexplained_us=sum(weight[path[g.unexplained[path]]].tolist()),
            columns=columns, breakdown_us=breakdown, top=top, what_if=what_if)


def _names(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The trace's strings as object arrays, one with "" and one with None after the last, so that a name id
    of -1 (no event, no op) reads as that: a path's names are then looked up all at once."""
    strings = trace.columns.strings
    with_empty = np.empty(len(strings) + 1, dtype=object)
    with_empty[:-1] = strings
    with_empty[-1] = ""
    with_none = with_empty.copy()
    with_none[-1] = None
    return with_empty, with_none


_KIND_OBJECTS = np.array(KINDS, dtype=object)


def _segments(trace: Trace, g: Graph, path: np.ndarray, dist: np.ndarray) -> SegmentColumns:
    """Each path edge's kind, the name of the event it belongs to, its start and length, and the CPU
    operator that owns it (the op itself for a slice, the innermost op around a call, the launcher's op
    for device work)."""
    c = trace.columns
    with_empty, with_none = trace.derive(_names)
    who = owners(trace)
    owner, ids = g.owner[path], g.owner_id[path]
    is_op, is_gpu = owner == OP, owner == GPU
    op_at, gpu_at = ids[is_op], ids[is_gpu]
    name = np.full(len(path), -1, dtype=np.int64)
    name[is_op], name[is_gpu] = c.op_name[op_at], c.gpu_name[gpu_at]
    top = np.full(len(path), -1, dtype=np.int64)
    top[is_op], top[is_gpu] = who.op_owner[op_at], who.gpu_owner[gpu_at]
    top_name = np.full(len(path), -1, dtype=np.int64)
    top_name[top >= 0] = c.op_name[top[top >= 0]]
    return SegmentColumns(
        kind=_KIND_OBJECTS[g.kind_code[path]].tolist(),
        name=with_empty[name].tolist(),
        start_us=g.start_us + dist[g.src[path]],
        dur_us=g.weight[path],
        op=with_none[top_name].tolist(),
        op_id=np.where(is_op, ids, -1),
        gpu_id=np.where(is_gpu, ids, -1))
