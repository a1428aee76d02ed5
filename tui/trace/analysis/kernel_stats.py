"""Kernels, completed: one row per kernel name (or per kernel name and launching op) with the
figures the profiler's kernel view had.

Per group: tensor_cores (the name shows a Tensor-Core path, mlptui.trace.analysis.tensor_cores), calls,
total / mean / min / max duration, mean blocks per SM (the trace's `blocks per SM`, else grid blocks ÷
SMs) and mean estimated achieved occupancy (the trace's `est. achieved occupancy %`), both averaged over
the calls that carry them, weighted by duration as the profiler did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlptui.trace.analysis.kernel_figures import kernel_figures
from mlptui.trace.analysis.tensor_cores import uses_tensor_cores
from mlptui.trace.model import KERNEL, Trace


@dataclass
class KernelGroup:
    name: str
    op: str | None                  # launching op's name, when grouped by kernel and op
    tensor_cores: bool
    calls: int = 0
    total_us: float = 0.0
    min_us: float = float("inf")
    max_us: float = 0.0
    _bps: float = 0.0
    _bps_us: float = 0.0
    _occ: float = 0.0
    _occ_us: float = 0.0
    ids: list[int] = field(default_factory=list)

    @property
    def mean_us(self) -> float:
        return self.total_us / self.calls if self.calls else 0.0

    @property
    def blocks_per_sm(self) -> float | None:
        return self._bps / self._bps_us if self._bps_us > 0 else None

    @property
    def achieved_occupancy(self) -> float | None:
        return self._occ / self._occ_us / 100 if self._occ_us > 0 else None

    def to_dict(self) -> dict[str, Any]:
        bps, occ = self.blocks_per_sm, self.achieved_occupancy
        return {"name": self.name, "op": self.op, "tensor_cores": self.tensor_cores, "calls": self.calls,
                "total_us": round(self.total_us, 3), "mean_us": round(self.mean_us, 3),
                "min_us": round(self.min_us, 3), "max_us": round(self.max_us, 3),
                "blocks_per_sm": None if bps is None else round(bps, 3),
                "achieved_occupancy": None if occ is None else round(occ, 4)}


def kernel_stats(trace: Trace, step: int | None = None, by_op: bool = False,
                 steps_only: bool = False) -> list[KernelGroup]:
    """Kernel groups of the scope (kernels launched in `step`; or all, or all launched in any step when
    `steps_only`), most total time first."""
    groups: dict[tuple[str, str | None], KernelGroup] = {}
    figures = kernel_figures(trace)
    blocks_per_sm = figures.blocks_per_sm.tolist()
    occupancy_pct = figures.occupancy_pct.tolist()
    for g in trace.gpu:
        if g.cat != KERNEL or (step is not None and g.step != step) or (steps_only and g.step < 0):
            continue
        op = (trace.ops[g.op].name if g.op >= 0 else "(no op)") if by_op else None
        row = groups.get((g.name, op))
        if row is None:
            row = groups[(g.name, op)] = KernelGroup(g.name, op, uses_tensor_cores(g.name))
        row.calls += 1
        row.total_us += g.dur
        row.min_us = min(row.min_us, g.dur)
        row.max_us = max(row.max_us, g.dur)
        row.ids.append(g.id)
        bps = blocks_per_sm[g.id]
        if bps == bps:             # not NaN
            row._bps += bps * g.dur
            row._bps_us += g.dur
        occ = occupancy_pct[g.id]
        if occ == occ:
            row._occ += occ * g.dur
            row._occ_us += g.dur
    rows = list(groups.values())
    rows.sort(key=lambda r: (-r.total_us, r.name))
    return rows
