"""Theoretical occupancy of a kernel launch, computed the way the CUDA occupancy calculator
(`cuda_occupancy.h`, `cudaOccMaxActiveBlocksPerMultiprocessor`) does, from the trace's
`deviceProperties` and the kernel event's block size, registers per thread and shared memory.

Rules (NVIDIA, compute capability ≥ 7.0):
- warps per block = ceil(threads / warpSize); warp slots per SM = maxThreadsPerMultiprocessor / warpSize.
- registers are allocated per warp in units of 256 (regs/thread x 32, rounded up to 256) inside
  each of the SM's 4 sub-partitions: warps that fit = 4 x floor((regsPerSM / 4) / regs per warp).
  This equals the old spreadsheet's "warp allocation granularity 4". A block is refused outright
  when its registers exceed regsPerBlock, or a thread uses more than 255.
- shared memory per block = static + dynamic + 1 KB the driver reserves per block on sm80+,
  rounded up to 128 bytes; blocks that fit = sharedMemPerMultiprocessor / that. Kernels above the
  48 KB default must have opted in (cudaFuncAttributeMaxDynamicSharedMemorySize) — they ran, so
  they did — and may use up to sharedMemPerBlockOptin.
- at most 16-32 resident blocks per SM depending on the architecture (table below).
The smallest of the four block limits is the occupancy; the one that binds is the limiter.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, TypeGuard

from mlptui.trace.model import KERNEL, Trace

REG_ALLOC_UNIT = 256          # registers, per warp
MAX_REGS_PER_THREAD = 255
SMEM_ALLOC_UNIT = 128         # bytes (256 on Kepler, which these traces never come from)
SUB_PARTITIONS = 4            # per SM, sm70+
RESERVED_SMEM_SM80 = 1024     # bytes the driver keeps per block from sm80 on

# compute capability -> (max resident blocks/SM, max threads/SM, regs/SM, regs/block, smem/SM, smem/block opt-in)
# From the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability", and
# cudaOccMaxBlocksPerMultiprocessor; used only when a trace's deviceProperties lacks a key.
ARCH_LIMITS: dict[tuple[int, int], tuple[int, int, int, int, int, int]] = {
    (7, 0): (32, 2048, 65536, 65536, 98304, 98304),
    (7, 2): (32, 2048, 65536, 65536, 98304, 98304),
    (7, 5): (16, 1024, 65536, 65536, 65536, 65536),
    (8, 0): (32, 2048, 65536, 65536, 167936, 166912),
    (8, 6): (16, 1536, 65536, 65536, 102400, 101376),
    (8, 7): (16, 2048, 65536, 65536, 167936, 166912),
    (8, 9): (24, 1536, 65536, 65536, 102400, 101376),
    (9, 0): (32, 2048, 65536, 65536, 233472, 232448),
    (10, 0): (32, 2048, 65536, 65536, 233472, 232448),
    (12, 0): (32, 1536, 65536, 65536, 102400, 101376),
}
DEFAULT_SMEM_PER_BLOCK = 49152   # without opt-in


@dataclass(frozen=True, slots=True)
class Occupancy:
    blocks_per_sm: int            # resident blocks per SM the limits allow
    warps_per_sm: int             # blocks_per_sm x warps per block
    max_warps_per_sm: int
    fraction: float               # warps_per_sm / max_warps_per_sm, 0..1
    limiter: str                  # "warps", "registers", "shared memory", "blocks" ("+"-joined on ties)
    limits: tuple[tuple[str, int], ...] = ()   # each resource's own block limit
    regs_per_block: int = 0       # registers allocated per block
    smem_per_block: int = 0       # shared memory allocated per block, reserved bytes included


def _get(device: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = device.get(key)
        if _count(value):
            return int(value)
    return None


def _cc(device: dict[str, Any]) -> tuple[int, int] | None:
    major, minor = device.get("computeMajor"), device.get("computeMinor")
    if isinstance(major, int) and isinstance(minor, int):
        return major, minor
    return None


def is_nvidia(device: dict[str, Any]) -> bool:
    """AMD devices report computeMajor too (gfx9 -> 9.0) but follow other rules (64-wide wavefronts)."""
    name = str(device.get("name", ""))
    return "AMD" not in name and "Radeon" not in name and "Instinct" not in name and device.get("warpSize", 32) == 32


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def theoretical_occupancy(device: dict[str, Any] | None, threads_per_block: int, regs_per_thread: int,
                          smem_per_block: int) -> Occupancy | None:
    """Occupancy of one launch configuration on `device` (a Kineto deviceProperties entry).

    None when the device is unknown, not an NVIDIA GPU of compute capability ≥ 7.0, or the
    configuration is not a valid launch (no threads).
    """
    if not device or not is_nvidia(device) or threads_per_block <= 0:
        return None
    cc = _cc(device)
    if cc is None or cc[0] < 7:
        return None
    arch = ARCH_LIMITS.get(cc) or ARCH_LIMITS.get((cc[0], 0))
    if arch is None:
        return None
    max_blocks, arch_threads, arch_regs_sm, arch_regs_block, arch_smem_sm, arch_optin = arch
    warp = _get(device, "warpSize") or 32
    max_threads_sm = _get(device, "maxThreadsPerMultiprocessor") or arch_threads
    max_threads_block = _get(device, "maxThreadsPerBlock") or 1024
    regs_sm = _get(device, "regsPerMultiprocessor") or arch_regs_sm
    regs_block_limit = _get(device, "regsPerBlock") or arch_regs_block
    smem_sm = _get(device, "sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor") or arch_smem_sm
    smem_block_default = _get(device, "sharedMemPerBlock") or DEFAULT_SMEM_PER_BLOCK
    smem_optin = _get(device, "sharedMemPerBlockOptin") or arch_optin
    reserved = RESERVED_SMEM_SM80 if cc[0] >= 8 else 0

    max_warps = max_threads_sm // warp
    warps_per_block = -(-threads_per_block // warp)

    # warps
    by_warps = 0 if threads_per_block > max_threads_block else max_warps // warps_per_block

    # registers
    regs_per_warp = _round_up(max(regs_per_thread, 0) * warp, REG_ALLOC_UNIT)
    regs_block = regs_per_warp * warps_per_block
    regs_assumed = regs_per_warp * _round_up(warps_per_block, SUB_PARTITIONS)   # the hardware's own check
    if regs_per_thread > MAX_REGS_PER_THREAD or regs_block > regs_block_limit or regs_assumed > regs_block_limit:
        by_regs = 0
    elif regs_per_warp == 0:
        by_regs = max_blocks
    else:
        warps_per_partition = (regs_sm // SUB_PARTITIONS) // regs_per_warp
        by_regs = (warps_per_partition * SUB_PARTITIONS) // warps_per_block

    # shared memory
    smem_alloc = _round_up(max(smem_per_block, 0) + reserved, SMEM_ALLOC_UNIT)
    block_limit = (smem_optin if smem_per_block > smem_block_default else smem_block_default) + reserved
    if smem_alloc > block_limit:
        by_smem = 0
    elif smem_alloc == 0:
        by_smem = max_blocks
    else:
        by_smem = smem_sm // smem_alloc

    limits = (("warps", by_warps), ("registers", by_regs), ("shared memory", by_smem), ("blocks", max_blocks))
    blocks = min(v for _, v in limits)
    limiter = "+".join(name for name, v in limits if v == blocks)
    warps = blocks * warps_per_block
    return Occupancy(blocks_per_sm=blocks, warps_per_sm=warps, max_warps_per_sm=max_warps,
                     fraction=warps / max_warps if max_warps else 0.0, limiter=limiter, limits=limits,
                     regs_per_block=regs_block, smem_per_block=smem_alloc)


def _count(value: Any) -> TypeGuard[int | float]:
    """A real, finite, non-negative number a launch or a device could have (what a file says may be anything)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1 << 40


def _triple(value: Any) -> tuple[int, int, int] | None:
    if type(value) is list and len(value) == 3:      # what every trace records; checked without calls
        x, y, z = value
        if type(x) is int and type(y) is int and type(z) is int and \
                0 <= x < 1 << 40 and 0 <= y < 1 << 40 and 0 <= z < 1 << 40:
            return x, y, z
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and _count(v) for v in value):
        dims = [int(v) for v in value[:3]] + [1] * (3 - min(3, len(value)))
        return dims[0], dims[1], dims[2]
    return None


def launch_config(args: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """(grid blocks, threads per block, registers per thread, shared memory bytes) of a kernel event."""
    block = _triple(args.get("block"))
    grid = _triple(args.get("grid"))
    regs = args.get("registers per thread")
    smem = args.get("shared memory", 0) or 0
    if block is None or not _count(regs) or not _count(smem):
        return None
    grid_blocks = grid[0] * grid[1] * grid[2] if grid else 0
    return grid_blocks, block[0] * block[1] * block[2], int(regs), int(smem or 0)


def device_for(trace: Trace, device_id: int) -> dict[str, Any] | None:
    """The deviceProperties entry of GPU `device_id` (the kernel event's pid / "device")."""
    for dev in trace.devices:
        if dev.get("id") == device_id:
            return dev
    return trace.device if len(trace.devices) <= 1 else None


def kernel_occupancy(trace: Trace, gpu_id: int) -> Occupancy | None:
    """Theoretical occupancy of kernel `gpu_id` (a `Trace.gpu` index); None for memcpy/memset,
    non-NVIDIA devices and kernels whose event lacks block/register data."""
    g = trace.gpu[gpu_id]
    if g.cat != KERNEL:
        return None
    cfg = launch_config(trace.gpu_args(gpu_id))
    if cfg is None:
        return None
    _, threads, regs, smem = cfg
    return theoretical_occupancy(device_for(trace, g.device), threads, regs, smem)


@dataclass(frozen=True, slots=True)
class KernelLaunch:
    """One kernel's launch as recorded, our theoretical occupancy, and Kineto's own figures beside it.

    Kineto's "blocks per SM" is grid blocks / SMs — how much work each SM gets, not how many blocks
    fit at once — and its "est. achieved occupancy %" is explained by `kineto_estimate_pct`.
    """

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    threads_per_block: int
    regs_per_thread: int
    smem_per_block: int
    occupancy: Occupancy | None
    waves: float | None                      # grid blocks / (resident blocks per SM x SMs)
    reported_blocks_per_sm: float | None
    reported_warps_per_sm: float | None
    reported_occupancy_pct: float | None


def _num(value: Any) -> float | None:
    return float(value) if _count(value) else None


def kernel_launch(trace: Trace, gpu_id: int) -> KernelLaunch | None:
    """Launch geometry, theoretical occupancy and waves of kernel `gpu_id`; None when not a kernel
    or its event carries no launch data (ROCm traces, old torch)."""
    g = trace.gpu[gpu_id]
    if g.cat != KERNEL:
        return None
    args = trace.gpu_args(gpu_id)
    cfg = launch_config(args)
    block = _triple(args.get("block"))
    if cfg is None or block is None:
        return None
    grid = _triple(args.get("grid")) or (0, 0, 0)
    grid_blocks, threads, regs, smem = cfg
    device = device_for(trace, g.device)
    occ = theoretical_occupancy(device, threads, regs, smem)
    num_sms = _get(device, "numSms") if device else None
    return KernelLaunch(
        grid=grid, block=block, threads_per_block=threads, regs_per_thread=regs, smem_per_block=smem,
        occupancy=occ, waves=waves(occ, grid_blocks, num_sms) if occ is not None and num_sms else None,
        reported_blocks_per_sm=_num(args.get("blocks per SM")), reported_warps_per_sm=_num(args.get("warps per SM")),
        reported_occupancy_pct=_num(args.get("est. achieved occupancy %")))


def waves(occ: Occupancy, grid_blocks: int, num_sms: int) -> float:
    """How many full-GPU rounds of resident blocks the grid takes (1.05 = a tiny tail wave)."""
    per_wave = occ.blocks_per_sm * num_sms
    return grid_blocks / per_wave if per_wave else 0.0


def kineto_estimate_pct(device: dict[str, Any], grid_blocks: int, threads_per_block: int, regs_per_thread: int,
                        smem_per_block: int) -> int | None:
    """Kineto's own "est. achieved occupancy %", reproduced to explain it beside ours.

    Kineto runs the same calculator without the shared-memory opt-in (so any kernel above 48 KB
    per block gets 0 — every Hopper cuBLAS GEMM), caps resident blocks by grid blocks / SMs, and
    rounds to a whole percent.
    """
    capped_smem = smem_per_block
    default = _get(device, "sharedMemPerBlock") or DEFAULT_SMEM_PER_BLOCK
    if smem_per_block > default:
        return 0
    occ = theoretical_occupancy(device, threads_per_block, regs_per_thread, capped_smem)
    num_sms = _get(device, "numSms")
    max_threads = _get(device, "maxThreadsPerMultiprocessor")
    if occ is None or not num_sms or not max_threads:
        return None
    # Kineto does this arithmetic in 32-bit floats; doing it in doubles moves 17.4999 to 18.
    blocks = min(_f32(grid_blocks / num_sms), float(occ.blocks_per_sm))
    fraction = _f32(_f32(blocks * threads_per_block) / max_threads)
    return int(0.5 + fraction * 100.0)


def _f32(x: float) -> float:
    value: float = struct.unpack("f", struct.pack("f", x))[0]
    return value
