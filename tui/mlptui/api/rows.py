"""The row shapes of the API's tables that the core writes as plain dicts: each is the row `mlptui summary
--json` writes for that table (docs/json.md), typed for mypy. A table whose rows the core types (a step:
mlptui.trace.reports) has those rows instead."""

from __future__ import annotations

from typing import TypedDict


class OverviewRow(TypedDict):
    name: str
    duration_us: float
    gpu_util: float
    sm_efficiency: float | None
    sm_efficiency_na: str | None
    achieved_occupancy: float | None
    achieved_occupancy_na: str | None
    theoretical_occupancy: float | None
    tensor_core_share: float | None
    breakdown_us: dict[str, float]


class OperatorRow(TypedDict):
    name: str
    input_shapes: str | None
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    tc_eligible: bool
    tc_share: float | None


class KernelRow(TypedDict):
    name: str
    short: str
    op: str | None
    tensor_cores: bool
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    blocks_per_sm: float | None
    achieved_occupancy: float | None


class MemoryOpRow(TypedDict):
    name: str
    allocs: int
    frees: int
    bytes_allocated: int
    net_bytes: int | None
    net_bytes_with_children: int | None


class ModuleRow(TypedDict):
    path: list[str]
    calls: int
    host_us: float
    device_us: float


class DispatchRow(TypedDict):
    """One node of a dispatch subtree, flattened: `depth` 0 is the op asked for."""

    depth: int
    name: str
    path: list[str]            # from the op asked for down to this node
    count: int                 # times this node ended a path of the steps (ran as a leaf or launched work)
    gpu_kernels: list[str]     # raw names of the kernels this node itself launched, in order
    gpu_us: float              # GPU time of every kernel launched at or beneath this node


class TimelineRow(TypedDict):
    lane: str                  # "cpu PID/TID" or "gpu DEVICE/STREAM"
    kind: str                  # "cpu" or "gpu"
    name: str
    cat: str
    ts_us: float               # µs from the trace's first CPU or GPU slice, as the app counts
    dur_us: float
    depth: int                 # nesting on a CPU lane (0: top level); 0 on a GPU lane


class OutcomeRow(TypedDict):
    expectation: str
    ok: bool
    shows: str


