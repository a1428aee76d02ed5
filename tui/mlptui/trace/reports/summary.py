"""`mlptui summary PATH --json`: the report of one trace (mlptui.trace.analysis.report.summary builds it).

Fields are declared in the JSON's key order: the encoder writes a dataclass field by field, so the document
is these classes as they are (docs/json.md is tested against them). Times in µs rounded to the ns; lists in
the order each field states."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from mlptui.trace.reports.attention import AttentionFacts
from mlptui.trace.reports.common import DeviceArch, Problem, StepStats
from mlptui.trace.reports.profile import (
    KernelStat,
    MemorySection,
    ModuleStat,
    OperatorStat,
    OverviewReport,
    ProfileSections,
    Recommendation,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegrityReport:
    """Whether the trace can be trusted (mlptui.trace.analysis.steps.integrity): `ok` when no problem."""

    ok: bool
    problems: list[Problem]
    notes: list[str]            # lines that start with their kind: `graph_replay: …`


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    events: int
    cpu_ops: int
    gpu_ops: int
    threads: int
    streams: int
    steps: int
    unlinked_gpu_ops: int       # GPU work with no launch call or op found


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelGroup:
    """Kernel events of one raw name, over the trace."""

    name: str                   # as recorded
    short: str                  # the decoded short name (dtype settled by the launching ops' inputs)
    family: str
    library: str
    count: int
    total_us: float
    mean_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryOpGroup:
    """Memcpys or memsets on the GPU of one name."""

    name: str
    kind: str                   # "memcpy" or "memset"
    count: int
    total_us: float
    mean_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchCallGroup:
    """Runtime/driver calls of one name (mlptui.trace.analysis.events.launches says each kind)."""

    name: str
    kind: str                   # launch, occupancy, memset, memcpy, attribute, sync, graph or other
    count: int
    total_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchPath:
    """A CPU path from the outermost op of a step down to an op, with the kernels that op launched."""

    path: list[str]             # op and annotation names, outermost first; Python frames left out
    count: int                  # how many times that path ran with those kernels
    gpu_kernels: list[str]      # raw names of the kernels the last op launched, in order; [] for none
    gpu_us: float               # their total GPU time over all occurrences


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamSync:
    """The host waiting on a stream (not GPU work), per kind of sync."""

    device: int
    stream: int
    name: str
    count: int
    total_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CounterSeries:
    """Hardware-counter samples of one metric on one GPU, as measured."""

    device: int
    metric: str
    samples: int
    first_us: float
    last_us: float
    min: float
    mean: float
    max: float
    measures: str | None        # the figure it measures: achieved_occupancy, sm_efficiency, sm_throughput


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceMarks:
    syncs: list[StreamSync]
    counters: list[CounterSeries]


@dataclass(frozen=True, slots=True, kw_only=True)
class PathShare:
    """A name with the most own time on a critical path."""

    name: str
    kind: str
    us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIf:
    """The step's time if that name's own time on the path were zero."""

    name: str
    step_us: float


# A plain dictionary, typed, not a dataclass like the other reports: a big trace's paths have hundreds of
# thousands of segments, and a dict is both made and written by the encoder several times faster. The keys
# are written in the order declared here (the report's builder makes each one in this order).
class PathSegment(TypedDict):
    kind: str
    name: str
    start_us: float             # from the trace's first event
    dur_us: float
    op: str | None              # the CPU operator that owns it


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticalPathStep:
    """A step's longest chain of dependent work (mlptui.trace.analysis.critical_path)."""

    step: str                   # "ProfilerStep#2", or "all" for a trace without steps
    length_us: float
    window_us: float
    remainder_us: float         # window minus length (0 but for float rounding)
    unexplained_us: float       # time on the path no recorded dependency explains
    gpu_share: float            # (kernel + memcpy + memset) / length
    breakdown_us: dict[str, float]      # by kind of time: cpu, launch, launch_delay, kernel, ..., idle
    top: list[PathShare]
    what_if: list[WhatIf]
    segments: list[PathSegment]         # the path in time order


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticalPathReport:
    steps: list[CriticalPathStep]
    collectives: str            # how collective kernels are counted


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryReport:
    """The whole document. The profiler views' sections (overview … modules) are over every step, or the
    whole trace when it has none."""

    source: str                             # what the user named (path, host:path, hf://...)
    format: str                             # "kineto"
    device: dict[str, Any] | None           # deviceProperties of the GPU that ran the kernels, as recorded
    device_arch: DeviceArch
    warnings: list[str]                     # what the loader skipped or could not nest
    integrity: IntegrityReport
    manifest: dict[str, Any] | None         # the runner's entry for this trace, as written
    findings: list[str]                     # the last step at a glance
    attention: AttentionFacts | None        # None for a trace that is no attention trace
    counts: Counts
    verdict_rule: str                       # the rule behind every verdict, in words
    steps: list[StepStats]                  # one per ProfilerStep#N, in time order
    total: StepStats                        # all steps together (the whole trace when it has no steps)
    kernels: list[KernelGroup]              # most time first
    memory_ops: list[MemoryOpGroup]         # most time first
    launch_calls: list[LaunchCallGroup]     # most time first
    dispatch: list[DispatchPath]            # in the order each path first ended
    device_marks: DeviceMarks | None        # None when the trace has neither stream syncs nor counters
    critical_path: CriticalPathReport
    # The profiler views, as their analyses write them (docs/json.md).
    overview: OverviewReport
    recommendations: list[Recommendation]
    operators: list[OperatorStat]
    kernel_stats: list[KernelStat]
    memory: MemorySection | None            # None: no allocator events
    modules: list[ModuleStat] | None        # None: no module frames
    ranks: None = None                      # a folder of rank traces has a "ranks" section instead

    def profile(self) -> ProfileSections:
        """The profiler views' sections (flat in the document) as one value."""
        return ProfileSections(overview=self.overview, recommendations=self.recommendations,
                               operators=self.operators, kernel_stats=self.kernel_stats, memory=self.memory,
                               modules=self.modules)
