"""Per kernel, the launch figures that the overview and the kernel view weigh: blocks per SM, the reported
achieved occupancy and the theoretical occupancy.

Reading a kernel's args is most of what these figures cost, and both views want them for every kernel,
so they are read once per trace, in one pass, and kept in `Trace.derived`. Launch configurations repeat
(a step launches the same kernels with the same geometry), so each distinct one is computed once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mlptui.trace.analysis.occupancy import Occupancy, device_for, launch_config, theoretical_occupancy
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse.limits import finite_number

_KEY = "kernel_figures"


@dataclass(slots=True)
class KernelFigures:
    """Lists indexed by GpuOp id; None for memcpy/memset and for figures a kernel's args do not give."""

    blocks_per_sm: list[float | None]    # the trace's `blocks per SM`, else grid blocks ÷ the device's SMs
    occupancy_pct: list[Any]             # the trace's `est. achieved occupancy %`, when a number ≥ 0
    theoretical: list[float | None]      # theoretical occupancy, 0..1 (mlptui.trace.analysis.occupancy)


def blocks_per_sm_of(args: dict[str, Any], device: dict[str, Any] | None) -> float | None:
    """The trace's `blocks per SM`, else grid blocks ÷ the device's SMs; None when neither is known."""
    reported = finite_number(args.get("blocks per SM"))
    if reported is not None and reported > 0:
        return float(reported)
    grid = args.get("grid")
    sms = (device or {}).get("numSms")
    if isinstance(grid, list) and grid and all(isinstance(v, int) for v in grid) and isinstance(sms, int) and sms:
        return float(math.prod(grid)) / sms
    return None


def kernel_figures(trace: Trace) -> KernelFigures:
    """The figures of every kernel of `trace`, computed on the first call."""
    cached = trace.derived.get(_KEY)
    if isinstance(cached, KernelFigures):
        return cached
    n = len(trace.gpu)
    bps: list[float | None] = [None] * n
    pct: list[Any] = [None] * n
    theory: list[float | None] = [None] * n
    devices: dict[int, dict[str, Any] | None] = {}
    configs: dict[tuple[int, int, int, int], Occupancy | None] = {}
    for g in trace.gpu:
        if g.cat != KERNEL:
            continue
        if g.device not in devices:
            devices[g.device] = device_for(trace, g.device)
        device = devices[g.device]
        args = trace.args(g.event)
        bps[g.id] = blocks_per_sm_of(args, device)
        occ = args.get("est. achieved occupancy %")
        if isinstance(occ, int | float) and occ >= 0:
            pct[g.id] = occ
        cfg = launch_config(args)
        if cfg is not None:
            key = (g.device, cfg[1], cfg[2], cfg[3])
            if key not in configs:
                configs[key] = theoretical_occupancy(device, cfg[1], cfg[2], cfg[3])
            found = configs[key]
            theory[g.id] = None if found is None else found.fraction
    figures = KernelFigures(bps, pct, theory)
    trace.derived[_KEY] = figures
    return figures
