"""The launch of a group of kernels (a row of the kernel view): grid, block, registers per thread and
shared memory per block, as the kernels pane shows them for one launch.

A figure is shown when every call of the group launched with the same value (grid and block: the same
number of blocks and of threads per block; the dims written are the first call's), "varies" when the
calls differ, and "" when the trace does not record it. Uniformity is read from the launch columns of
every call (mlptui.trace.analysis.kernels.kernel_figures), so a group of any size costs one args read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlptui.trace.analysis.kernels.kernel_figures import kernel_figures
from mlptui.trace.model import Trace
from mlptui.viewmodels import fmt

VARIES = "varies"


@dataclass(frozen=True)
class GroupLaunch:
    grid: str
    block: str
    registers: str
    shared_memory: str          # as the pane writes it (33.0KiB)
    shared_memory_bytes: int | str | None = None     # for CSV: bytes, VARIES, or None when not recorded


def dims(value: Any) -> str:
    if isinstance(value, list):
        return "x".join(str(v) for v in value)
    return "" if value is None else str(value)


def _same(values: np.ndarray, unknown: float) -> bool | None:
    """True when all calls agree, False when they differ, None when no call records the figure."""
    known = values[(values != unknown) & ~np.isnan(values.astype(np.float64))]
    if len(known) == 0:
        return None
    return len(known) == len(values) and bool((known == known[0]).all())


def group_launch(trace: Trace, ids: list[int]) -> GroupLaunch:
    if not ids:
        return GroupLaunch("", "", "", "")
    launch = kernel_figures(trace).launch
    at = np.asarray(ids, dtype=np.int64)
    args = trace.gpu_args(ids[0])

    def figure(column: np.ndarray, unknown: float, text: str) -> str:
        same = _same(column[at], unknown)
        return "" if same is None else text if same else VARIES

    smem = args.get("shared memory")
    smem_text = figure(launch.shared_memory, -1, fmt.size_bytes(smem) if isinstance(smem, int | float) else "")
    return GroupLaunch(
        figure(launch.grid_blocks, -1.0, dims(args.get("grid"))),
        figure(launch.threads, -1, dims(args.get("block"))),
        figure(launch.registers, -1, str(args.get("registers per thread", ""))),
        smem_text,
        VARIES if smem_text == VARIES else smem if smem_text and isinstance(smem, int) else None,
    )
