"""`attention` of `mlptui summary --json`: the figures behind the attention findings
(mlptui.trace.analysis.attention builds them; docs/figures.md says what each is). Times in µs, occupancy
0..1; fields in the JSON's key order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyFact:
    name: str
    us: float
    op: str                      # the CPU op that launched it ("" when none was open)
    chain: tuple[str, ...]       # that op and the ops around it, outermost first


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmFact:
    short: str
    tensor_cores: bool
    fp32: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class OccupancyFact:
    theoretical: float | None    # 0..1
    blocks_per_sm: int | None
    warps_per_sm: int | None
    max_warps_per_sm: int | None
    limiter: str | None
    regs_per_thread: int | None
    threads_per_block: int | None
    regs_per_block: int | None
    smem_per_block: int | None
    kineto_pct: float | None     # the trace's est. achieved occupancy %
    kineto_note: str | None      # why Kineto's figure is not a measurement, when it reads 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FusedFact:
    raw: str
    short: str
    implementation: str
    word: str
    backend: str | None          # flash, efficient, cudnn, math, or None when no SDPA op launched it
    backend_op: str | None
    launch_path: tuple[str, ...]
    count: int
    us: float
    occupancy: OccupancyFact | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionFacts:
    step: str
    steps: int
    kernels_per_step: list[int]
    memcpys: list[CopyFact]
    memcpy_steps: int = 0        # profiled steps with at least one Memcpy
    gemms: list[GemmFact]
    mask_chain: tuple[str, ...] = ()
    mask_steps: int = 0
    mask_us: float = 0.0
    safe_softmax: bool = False
    fused: list[FusedFact]
    cpu_us: float | None = None
    gpu_us: float | None = None
    call_label: str | None = None
