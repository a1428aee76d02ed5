"""Per kernel, the launch figures that the overview and the kernel view weigh: blocks per SM, the reported
achieved occupancy and the theoretical occupancy.

They come from the launch columns of mlptui.trace.parse.launch (six keys of each kernel's args, decoded
typed). Both views want them for every kernel, so they are computed once per trace (`Trace.derive`). Launch configurations repeat (a step launches the same kernels with the same geometry),
so each distinct one is weighed once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlptui.trace.analysis.events.tables import distinct, tables, unique_ids
from mlptui.trace.analysis.kernels.occupancy import device_for, theoretical_occupancy
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse.launch import LaunchColumns, launches


@dataclass(slots=True)
class KernelFigures:
    """float64 arrays indexed by GpuOp id; NaN for memcpy/memset and for figures a kernel's launch does
    not give."""

    blocks_per_sm: np.ndarray    # the trace's `blocks per SM`, else grid blocks ÷ the device's SMs
    occupancy_pct: np.ndarray    # the trace's `est. achieved occupancy %`, when a finite number > 0 (0: not measured)
    theoretical: np.ndarray      # theoretical occupancy, 0..1 (mlptui.trace.analysis.kernels.occupancy)
    no_grid: np.ndarray          # bool: a kernel whose launch records no grid (graph replays), so no blocks per SM
    launch: LaunchColumns        # the launch columns they were computed from (grid blocks, threads, ...)


def kernel_figures(trace: Trace) -> KernelFigures:
    """The figures of every kernel of `trace`, computed on the first call."""
    return trace.derive(_kernel_figures)


def _kernel_figures(trace: Trace) -> KernelFigures:
    t = tables(trace)
    n = t.n_gpu
    kernel = t.gpu_is((KERNEL,))
    launch = launches(trace)           # the load's columns: unknown for rows that are not kernels
    device = t.gpu_device
    grid_blocks = launch.grid_blocks.copy()
    bps = np.where(kernel, launch.blocks_per_sm, np.nan)
    work_items = _work_item_grids(trace, kernel)
    if len(work_items):
        grid_blocks[work_items] = [_workgroups(trace.gpu_args(int(g))) for g in work_items.tolist()]
        bps[work_items] = np.nan           # a reported figure was computed from the work-item grid too
    theory = np.full(n, np.nan)
    for dev in distinct(device[kernel]).tolist():
        props = device_for(trace, dev)
        here = kernel & (device == dev)
        sms = (props or {}).get("numSms")
        if isinstance(sms, int) and not isinstance(sms, bool) and sms:
            derive = here & np.isnan(bps)
            bps[derive] = grid_blocks[derive] / sms
        _theoretical(theory, here, launch, props)
    # Kineto writes 0 % where it did not measure (driver-API launches, shared-memory opt-in): a gap, not a value.
    occupancy = np.where(kernel & (launch.occupancy_pct > 0) & np.isfinite(launch.occupancy_pct), launch.occupancy_pct,
                         np.nan)       # an infinite percentage is no measurement either
    no_grid = kernel & np.isnan(grid_blocks) & np.isnan(launch.blocks_per_sm)
    return KernelFigures(bps, occupancy, theory, no_grid, launch)


# ROCm launch calls whose kernels' `grid` is in work-items, not workgroups (the call takes the global work
# size; ROCm/rocm-systems#2853): the workgroups are the grid divided by the block, dim by dim.
WORK_ITEM_LAUNCHES = frozenset({"hipExtModuleLaunchKernel"})


def _work_item_grids(trace: Trace, kernel: np.ndarray) -> np.ndarray:
    """GpuOp ids of the kernels launched by a call that records the grid in work-items."""
    t = tables(trace)
    calls = t.gpu_launch
    launched = np.flatnonzero(kernel & (calls >= 0))
    if not len(launched):
        return launched
    names = t.names_where(lambda s: s in WORK_ITEM_LAUNCHES, t.op_name[calls[launched]])
    picked: np.ndarray = launched[names[t.op_name[calls[launched]]]]
    return picked


def _workgroups(args: dict[str, Any]) -> float:
    """Workgroups of a work-item grid: Π ceil(grid ÷ block) per dim; NaN when either is not whole numbers."""
    grid, block = args.get("grid"), args.get("block")
    if not (isinstance(grid, list) and isinstance(block, list) and grid and len(grid) == len(block)):
        return math.nan
    if not all(type(v) is int and v > 0 for v in grid + block):
        return math.nan
    return float(math.prod(-(-g // b) for g, b in zip(grid, block, strict=True)))


def _theoretical(out: np.ndarray, rows: np.ndarray, launch: LaunchColumns, props: dict[str, Any] | None) -> None:
    """Theoretical occupancy of the `rows` whose launch is known, one computation per distinct launch."""
    rows = rows & (launch.threads >= 0) & (launch.registers >= 0) & (launch.shared_memory >= 0)
    if not rows.any():
        return
    columns = (launch.threads[rows], launch.registers[rows], launch.shared_memory[rows])
    # One id per distinct (threads, registers, shared memory): each column's rank among its distinct values
    # folded in, the ids renumbered after each fold so that they stay below the number of rows (a counting
    # unique of small ids: far faster than a unique of 24-byte rows).
    packed = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        values, rank = unique_ids(column, return_inverse=True)
        _, packed = unique_ids(packed * len(values) + rank, return_inverse=True)
    _, first, inverse = unique_ids(packed, return_index=True, return_inverse=True)
    distinct = np.stack(columns, axis=1)[first]
    fraction = np.full(len(distinct), np.nan)
    for k, (threads, regs, smem) in enumerate(distinct.tolist()):
        occ = theoretical_occupancy(props, threads, regs, smem)
        if occ is not None:
            fraction[k] = occ.fraction
    out[rows] = fraction[inverse.reshape(-1)]
