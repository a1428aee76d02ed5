"""Kernels, completed: one row per kernel name (or per kernel name and launching op) with the
figures the profiler's kernel view had. The launching op is the operator that owns the kernel in the
operator view (mlptui.trace.analysis.events.op_owner: Python frames and annotations looked through), so an op's
rows add up to its kernel self time there; "(no op)" where no operator is around the launch.

Per group: tensor_cores (the name shows a Tensor-Core path, mlptui.trace.analysis.kernels.tensor_cores), calls,
total / mean / min / max duration, mean blocks per SM (the trace's `blocks per SM`, else grid blocks ÷
SMs) and mean estimated achieved occupancy (the trace's `est. achieved occupancy %`), both averaged over
the calls that carry them, weighted by duration as the profiler did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.analysis.events.op_owner import owners
from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.analysis.kernels.kernel_figures import kernel_figures
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
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


def kernel_stats(trace: Trace, step: int | None = None, by_op: bool = False,
                 steps_only: bool = False) -> list[KernelGroup]:
    """Kernel groups of the scope (kernels launched in `step`; or all, or all launched in any step when
    `steps_only`), most total time first."""
    t = tables(trace)
    figures = kernel_figures(trace)
    pick = t.gpu_is((KERNEL,))
    if step is not None:
        pick = pick & (t.gpu_step == step)
    if steps_only:
        pick = pick & (t.gpu_step >= 0)
    at = np.flatnonzero(pick)
    n_strings = len(t.strings)
    key = t.gpu_name[at] * (n_strings + 1)
    if by_op:
        launcher = owners(trace).gpu_owner[at]     # the operator view's owner: its kernel self time, by kernel
        op_name = np.full(len(at), n_strings, dtype=np.int64)       # n_strings: no op (a trace may have none)
        op_name[launcher >= 0] = t.op_name[launcher[launcher >= 0]]
        key = key + op_name
    keys, first, group = unique_ids(key, return_index=True, return_inverse=True)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(keys))     # groups by first kernel, as a dict fills
    group = rank[group.reshape(-1)]
    n = len(keys)
    rows = []
    for k in key[np.sort(first)].tolist():
        name, op = t.strings[k // (n_strings + 1)], k % (n_strings + 1)
        rows.append(KernelGroup(name, (t.strings[op] if op < n_strings else "(no op)") if by_op else None,
                                uses_tensor_cores(name)))
    dur = t.gpu_dur[at]

    def per_group(g: np.ndarray, weights: np.ndarray) -> list[float]:
        sums: list[float] = np.bincount(g, weights=weights, minlength=n).astype(np.float64).tolist()
        return sums             # each group's in id order, as += adds them

    shortest, longest = np.full(n, np.inf), np.zeros(n)
    np.minimum.at(shortest, group, dur)
    np.maximum.at(longest, group, dur)
    bps, occ = figures.blocks_per_sm[at], figures.occupancy_pct[at]
    has_bps, has_occ = ~np.isnan(bps), ~np.isnan(occ)
    sums = [per_group(group, dur), per_group(group[has_bps], bps[has_bps] * dur[has_bps]),
            per_group(group[has_bps], dur[has_bps]), per_group(group[has_occ], occ[has_occ] * dur[has_occ]),
            per_group(group[has_occ], dur[has_occ])]
    calls = np.bincount(group, minlength=n).tolist()
    members = np.split(at[np.argsort(group, kind="stable")], np.cumsum(calls)[:-1]) if n else []
    for k, row in enumerate(rows):
        row.calls, row.ids = calls[k], members[k].tolist()
        row.total_us, row._bps, row._bps_us, row._occ, row._occ_us = (s[k] for s in sums)
        row.min_us, row.max_us = float(shortest[k]), float(longest[k])
    rows.sort(key=lambda r: (-r.total_us, r.name))
    return rows
