"""What Kineto itself writes on a kernel since 2026 (schemaVersion still 1), read as written:

- `occupancy` (pytorch/kineto 185fe9c5): the CUDA occupancy calculator's result — active blocks per SM, the
  limiting factors (`WARPS`, `REGS`, `SMEM`, `BLOCKS`, `BARRIERS` joined by `|`, `none` when no bit is
  set), each resource's own block limit (`blockLimit*`) and the registers and shared memory allocated per
  block. Kineto runs the calculator with the default shared-memory limit (`FUNC_SHMEM_LIMIT_DEFAULT`, 48 KiB
  per block) and no opt-in, so a kernel that opted in to more — every Hopper cuBLAS GEMM, NCCL's kernels —
  gets 0 blocks, limited by shared memory. It ran, so it had opted in: our figure
  (mlptui.trace.analysis.kernels.occupancy, with the opt-in limit) is the right one there.
- `channel`, `channel_type` (094d3c1d): the hardware channel the work was submitted on, and its kind
  (CUPTI's CUpti_ChannelType).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlptui.trace.analysis.kernels.occupancy import DEFAULT_SMEM_PER_BLOCK, Occupancy

# Kineto's factor names -> ours (mlptui.trace.analysis.kernels.occupancy.Occupancy.limiter)
FACTORS = {"WARPS": "warps", "REGS": "registers", "SMEM": "shared memory", "BLOCKS": "blocks",
           "BARRIERS": "barriers"}
CHANNEL_TYPES = {0: "invalid", 1: "compute", 2: "async memcpy", 3: "decompression"}


@dataclass(frozen=True, slots=True)
class KinetoOccupancy:
    active_blocks: int                  # activeBlocksPerMultiprocessor
    limiters: tuple[str, ...]           # our names of its limiting factors; () for "none"
    block_limits: dict[str, int]        # blockLimitRegs... by our resource names
    regs_per_block: int | None
    smem_per_block: int | None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def kineto_occupancy(args: dict[str, Any]) -> KinetoOccupancy | None:
    """Kineto's own occupancy result from a kernel's args; None when the trace predates it."""
    occ = args.get("occupancy")
    if not isinstance(occ, dict):
        return None
    active = _int(occ.get("activeBlocksPerMultiprocessor"))
    if active is None:
        return None
    factors = occ.get("limitingFactors")
    names = [f.strip() for f in factors.split("|")] if isinstance(factors, str) else []
    limiters = tuple(FACTORS.get(f, f.lower()) for f in names if f and f != "none")
    limits = {}
    for key, ours in (("blockLimitWarps", "warps"), ("blockLimitRegs", "registers"),
                      ("blockLimitSharedMem", "shared memory"), ("blockLimitBlocks", "blocks"),
                      ("blockLimitBarriers", "barriers")):
        value = _int(occ.get(key))
        if value is not None:
            limits[ours] = value
    return KinetoOccupancy(active, limiters, limits, _int(occ.get("allocatedRegistersPerBlock")),
                           _int(occ.get("allocatedSharedMemPerBlock")))


def disagreement(kineto: KinetoOccupancy, ours: Occupancy | None, smem_per_block: int,
                 device: dict[str, Any] | None) -> str | None:
    """Why Kineto's occupancy differs from ours, and which is right; None when they agree."""
    if ours is None:
        return None
    same_limiter = set(kineto.limiters) == set(ours.limiter.split("+"))
    if kineto.active_blocks == ours.blocks_per_sm and same_limiter:
        return None
    default = (device or {}).get("sharedMemPerBlock")
    limit = default if isinstance(default, int) and default > 0 else DEFAULT_SMEM_PER_BLOCK
    if smem_per_block > limit:
        return (f"Kineto applies the default {limit // 1024} KiB shared-memory limit per block and no opt-in; "
                f"this kernel used {smem_per_block:,} B, so it had opted in (it ran): ours, with the opt-in "
                "limit, is right")
    return ("Kineto's calculator and ours disagree on this launch: compare each resource's block limit "
            "above (ours follows cuda_occupancy.h with the trace's deviceProperties)")


def channel_label(args: dict[str, Any]) -> str | None:
    """`channel N (kind)` from a kernel's, memcpy's or memset's args; None when not recorded."""
    channel = _int(args.get("channel"))
    if channel is None:
        return None
    kind = _int(args.get("channel_type"))
    name = CHANNEL_TYPES.get(kind, f"type {kind}") if kind is not None else "type not recorded"
    return f"{channel} ({name})"
