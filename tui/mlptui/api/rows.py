"""The rows the API makes itself, from the core's reports and the trace (no core type holds them): a node of
a dispatch subtree and a slice of a timeline window, frozen dataclasses as the core's rows are (fields in the
MCP result's key order). Every other table has the core's typed rows (mlptui.trace.reports)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchRow:
    """One node of a dispatch subtree, flattened: `depth` 0 is the op asked for."""

    depth: int
    name: str
    path: list[str]            # from the op asked for down to this node
    count: int                 # times this node ended a path of the steps (ran as a leaf or launched work)
    gpu_kernels: list[str]     # raw names of the kernels this node itself launched, in order
    gpu_us: float              # GPU time of every kernel launched at or beneath this node


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineRow:
    lane: str                  # "cpu PID/TID" or "gpu DEVICE/STREAM"
    kind: str                  # "cpu" or "gpu"
    name: str
    cat: str
    ts_us: float               # µs from the trace's first CPU or GPU slice, as the app counts
    dur_us: float
    depth: int                 # nesting on a CPU lane (0: top level); 0 on a GPU lane

