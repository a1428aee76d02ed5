"""The profiler views of `mlptui summary --json` (and of one step): overview, recommendations, operators,
kernel_stats, memory, modules (mlptui.trace.analysis.report.profile_sections builds them).

Fields are declared in the JSON's key order: the encoder writes a dataclass field by field. Times in
µs, shares 0-1, sizes in bytes; null where a figure cannot be known (a sibling `*_na` says why)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class OverviewRow:
    """How well the main device was used over one step's window, or over the scope's (`total`)."""

    name: str
    duration_us: float
    gpu_util: float | None
    sm_efficiency: float | None
    sm_efficiency_na: str | None            # why SM efficiency cannot be known, when it cannot
    achieved_occupancy: float | None
    achieved_occupancy_na: str | None
    theoretical_occupancy: float | None
    tensor_core_share: float | None
    breakdown_us: dict[str, float]          # by category (mlptui.trace.analysis.steps.breakdown.CATEGORIES)
    achieved_occupancy_measured: float | None   # hardware counters' figures, where sampled
    sm_efficiency_measured: float | None
    sm_throughput_measured: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OverviewDevice:
    """A device of the trace: as deviceProperties records it, with its vendor and architecture."""

    id: int
    name: object                            # deviceProperties' values as recorded (any JSON value)
    vendor: str                             # NVIDIA, AMD or unknown
    arch: str | None
    units: str                              # what its compute units are called: SMs, CUs or units
    label: str
    memory_bytes: object
    sms: object


@dataclass(frozen=True, slots=True, kw_only=True)
class UsedDevice(OverviewDevice):
    """A device that ran kernels, with its figures over the whole scope."""

    gpu_util: float | None
    sm_efficiency: float | None
    sm_efficiency_na: str | None
    achieved_occupancy: float | None
    achieved_occupancy_na: str | None
    theoretical_occupancy: float | None
    tensor_core_share: float | None
    kernels: int
    achieved_occupancy_measured: float | None
    sm_efficiency_measured: float | None
    sm_throughput_measured: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OverviewReport:
    devices: list[UsedDevice | OverviewDevice]     # UsedDevice where the device ran kernels
    main_device: int | None                 # the device that ran the most kernels: the steps' figures are its
    unlinked: str | None                    # what the trace could not link, in one line
    outside_operators: str | None
    steps: list[OverviewRow]
    total: OverviewRow


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    rule: str
    message: str
    applies_to: str
    figures: dict[str, str | int | float | list[str] | dict[str, int]]    # behind the rule, by name: each its own


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorStat:
    name: str
    input_shapes: str | None
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    tc_eligible: bool
    tc_share: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelStat:
    name: str
    op: str | None
    tensor_cores: bool
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    blocks_per_sm: float | None
    achieved_occupancy: float | None
    short: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DevicePeak:
    id: int
    kind: str
    peak_allocated_bytes: int
    peak_reserved_bytes: int | None
    peak_ts: float | None
    peak_op: str | None
    totals_recorded: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class OpAllocations:
    name: str
    allocs: int
    frees: int
    bytes_allocated: int
    net_bytes: int | None                   # None: some frees cannot be matched to their block
    net_bytes_with_children: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unfreed:
    op: str
    bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySection:
    devices: list[DevicePeak]
    ops: list[OpAllocations]
    unfreed: list[Unfreed]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModuleStat:
    path: list[str]
    calls: int
    host_us: float
    device_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileSections:
    overview: OverviewReport
    recommendations: list[Recommendation]
    operators: list[OperatorStat]
    kernel_stats: list[KernelStat]
    memory: MemorySection | None            # None: no allocator events
    modules: list[ModuleStat] | None        # None: no module frames
