"""`mlptui diff A B --json`: the diff of two traces (mlptui.trace.diff.trace_diff builds it).

Fields are declared in the JSON's key order (the encoder writes a dataclass field by field); docs/json.md
names them and a test holds the two equal. Times in µs rounded to 3 decimals, ratios to 4."""

from __future__ import annotations

from dataclasses import dataclass

from mlptui.trace.reports.profile import UsedDevice


@dataclass(frozen=True, slots=True, kw_only=True)
class AlignedStep:
    """The aligned step's own figures."""

    step_us: float | None
    cpu_us: float | None
    gpu_busy_us: float | None
    gpu_idle_us: float | None
    kernels: int
    launches: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffSide:
    """One trace: the aligned step's name and medians over its active steps."""

    source: str
    step: str                       # the aligned step's name ("all" when the trace has no steps)
    cpu_us: float | None
    gpu_busy_us: float | None
    kernels: int
    launches: int
    gpu_idle_us: float | None
    step_us: float | None           # median step window: start to the later of its end and its GPU work
    label: str                      # workload/mode from the manifest, else the file name
    device: str | None
    steps: int                      # active steps
    timed_us: float | None          # the runner's unprofiled median from the manifest, if any
    aligned_step: AlignedStep | None


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelDiffRow:
    """One row of the kernel alignment: GPU ops of A against those of B."""

    status: str                     # same, changed, added, removed, fused
    a: list[str]                    # raw names
    b: list[str]
    a_us: float | None
    b_us: float | None
    delta_us: float | None
    kind: str                       # kernel, memset, memcpy
    a_short: list[str]
    b_short: list[str]
    a_chain: list[str]              # CPU op names root -> leaf, then the launch call, of A's first op
    b_chain: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class CountChange:
    name: str
    a: int
    b: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuOpsDiff:
    removed_ops: list[str]          # in A's step only, A's order
    added_ops: list[str]            # in B's step only, B's order
    count_changes: list[CountChange]


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilyTotal:
    """GPU time of one kernel family on each side, aligned steps."""

    family: str
    a_count: int
    b_count: int
    a_us: float
    b_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchTotal:
    """One runtime/driver call's count and time on each side, aligned steps."""

    name: str
    kind: str
    a_count: int
    b_count: int
    a_us: float
    b_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class OpSide:
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorDiffRow:
    """An op of the aligned steps on each side, joined by name."""

    name: str
    status: str                     # same, changed (calls differ), added (B only), removed (A only)
    a: OpSide | None
    b: OpSide | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OverviewSide:
    """One side's overview over all its steps."""

    scope: str
    gpu_util: float | None
    sm_efficiency: float | None
    achieved_occupancy: float | None
    theoretical_occupancy: float | None
    tensor_core_share: float | None
    duration_us: float
    breakdown_us: dict[str, float]          # by category, as the overview's
    devices: list[UsedDevice]               # the overview's devices that ran kernels


@dataclass(frozen=True, slots=True, kw_only=True)
class OverviewPair:
    a: OverviewSide
    b: OverviewSide


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileDiff:
    """The profiler views of a diff: the operator table side by side and both overviews."""

    operators: list[OperatorDiffRow]
    overview: OverviewPair


@dataclass(frozen=True, slots=True, kw_only=True)
class GateCheck:
    """`--fail-if-slower`: the figure judged and its verdict."""

    what: str               # the figure's label: "unprofiled", "step time" or "GPU busy"
    figure: str             # its name for --on: "unprofiled", "step" or "gpu-busy"
    a_us: float
    b_us: float
    slower_pct: float       # how much slower B is than A, in % (negative: faster)
    failed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class KindDelta:
    kind: str                               # a kind of critical-path time (docs/json.md)
    a_us: float
    b_us: float
    delta_us: float                         # B minus A


@dataclass(frozen=True, slots=True, kw_only=True)
class SharePair:
    a: float
    b: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticalPathDiff:
    """The aligned steps' critical paths, side by side: length and time by kind (every kind, in order)."""

    a_step: str
    b_step: str
    a_us: float
    b_us: float
    delta_us: float                         # B minus A
    gpu_share: SharePair                    # device work's share of each path
    by_kind: list[KindDelta]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffReport:
    mlptui_diff: int                        # the document's version
    a: DiffSide
    b: DiffSide
    kernels: list[KernelDiffRow]
    cpu: CpuOpsDiff
    speedup: float | None                   # A's step_us / B's: > 1 means B is faster
    counts: dict[str, int]                  # rows per status
    gpu_busy_speedup: float | None
    timed_speedup: float | None             # from the runs' unprofiled timings
    by_family: list[FamilyTotal]
    launch_calls: list[LaunchTotal]
    biggest: list[int]                      # row numbers (from 1) that change the GPU time the most
    operators: list[OperatorDiffRow] | None     # None: the diff was made without its traces
    overview: OverviewPair | None
    critical_path: CriticalPathDiff | None  # None: the diff was made without its traces


@dataclass(frozen=True, slots=True, kw_only=True)
class GatedDiffReport(DiffReport):
    """The diff with `--fail-if-slower`'s verdict after it."""

    gate: list[GateCheck]
