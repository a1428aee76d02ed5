"""The overview: devices, and per step (and over all steps) how well the GPU was used.

Definitions (each figure over a step's window, mlptui.trace.analysis.steps.breakdown.step_windows; the
scope's total is over the union of the windows, so where steps' windows overlap (the CPU runs ahead,
pipelined steps) each moment counts once, as in the step list's "all steps" row):
- gpu_util: time the device runs at least one kernel ÷ window length (memcpy/memset not counted).
- sm_efficiency (estimated): at each moment, min(Σ over running kernels of min(blocks ÷ SMs, 1), 1),
  averaged over the window — an idle device counts 0, so it is never above gpu_util. A kernel's blocks
  per SM is the trace's `blocks per SM` arg, else its grid's block count ÷ the device's SM count.
- achieved_occupancy (estimated): the trace's `est. achieved occupancy %` per kernel, weighted by the
  kernel time inside the window (kernels without the figure left out); theoretical_occupancy beside it is
  mlptui.trace.analysis.kernels.occupancy's calculator figure, weighted the same way.
- *_measured (sm_efficiency, achieved_occupancy, sm_throughput): where the trace has CUPTI hardware-counter
  samples of the metric (mlptui.trace.analysis.steps.device_marks), the mean of the main device's samples inside
  the window, measured; null otherwise. The views show a measured figure in place of the estimate.
- tensor_core_share: kernel time inside the window of kernels that use Tensor Cores
  (mlptui.trace.analysis.kernels.tensor_cores) ÷ all kernel time inside the window.
Step figures are for the main device (the one that ran the most kernels); `devices` has each device's
figures over the whole scope. Scope: every step (the whole trace when it has none), or one step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlptui.trace.analysis.events.device_arch import device_arch, device_label
from mlptui.trace.analysis.events.tables import distinct, tables, unique_ids
from mlptui.trace.analysis.events.timeline_segments import Segments, to_ns
from mlptui.trace.analysis.events.unlinked import outside_operators_line, unlinked_line
from mlptui.trace.analysis.kernels.kernel_figures import kernel_figures
from mlptui.trace.analysis.kernels.occupancy import device_for
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
from mlptui.trace.analysis.steps.breakdown import (
    CATEGORIES,
    Spans,
    Window,
    breakdown,
    scope_label,
    scope_window_us,
    step_windows,
)
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.reports.profile import OverviewDevice, OverviewReport, OverviewRow, UsedDevice

NOT_MEASURED = ("not measured: no kernel in the window has an achieved occupancy above 0 % (Kineto writes 0 "
                "where it did not measure)")


@dataclass
class Figures:
    """Numerators and denominators, so steps add up into the scope's total."""

    window_ns: int = 0
    busy_ns: int = 0
    sm_ns: float = 0.0
    kernel_ns: float = 0.0          # Σ kernel time inside the window (overlaps counted per kernel)
    tc_ns: float = 0.0
    occ_ns: float = 0.0             # Σ kernel time of kernels with a reported occupancy
    occ_weighted: float = 0.0
    th_ns: float = 0.0
    th_weighted: float = 0.0
    no_grid_ns: float = 0.0         # Σ kernel time inside the window of kernels without a grid
    no_sms_ns: float = 0.0          # ... of kernels with a grid on a device whose SM count the trace lacks
    breakdown_ns: dict[str, int] = field(default_factory=dict)
    no_grid_how: str = ""           # how the scope's kernels without a grid were launched (no_grid_how)

    def add(self, other: Figures) -> None:
        for name in ("window_ns", "busy_ns", "sm_ns", "kernel_ns", "tc_ns", "occ_ns", "occ_weighted", "th_ns",
                     "th_weighted", "no_grid_ns", "no_sms_ns"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k, v in other.breakdown_ns.items():
            self.breakdown_ns[k] = self.breakdown_ns.get(k, 0) + v
        self.no_grid_how = self.no_grid_how or other.no_grid_how

    def row(self, name: str, measured: dict[str, float]) -> OverviewRow:
        """The figures as a row of the overview, with what hardware counters measured (mlptui.trace.analysis.steps.device_marks)."""
        def share(num: float, den: float) -> float | None:
            return round(num / den, 4) if den > 0 else None

        sm_na = self.sm_efficiency_na()
        return OverviewRow(
            name=name,
            duration_us=self.window_ns / 1000,
            gpu_util=share(self.busy_ns, self.window_ns),
            sm_efficiency=None if sm_na else share(self.sm_ns, self.window_ns),
            sm_efficiency_na=sm_na,
            achieved_occupancy=share(self.occ_weighted, self.occ_ns * 100),
            achieved_occupancy_na=(NOT_MEASURED if self.kernel_ns > 0 and self.occ_ns == 0 else None),
            theoretical_occupancy=share(self.th_weighted, self.th_ns),
            tensor_core_share=share(self.tc_ns, self.kernel_ns),
            breakdown_us={c: self.breakdown_ns.get(c, 0) / 1000 for c in CATEGORIES},
            achieved_occupancy_measured=measured.get("achieved_occupancy"),
            sm_efficiency_measured=measured.get("sm_efficiency"),
            sm_throughput_measured=measured.get("sm_throughput"),
        )

    def sm_efficiency_na(self) -> str | None:
        """Why SM efficiency cannot be known over this window (None when it can): some kernel time in it
        has no block count, and counting it as 0 blocks would understate the figure."""
        if self.no_grid_ns > 0:
            how = f" ({self.no_grid_how})" if self.no_grid_how else ""
            return f"{self.no_grid_ns / self.kernel_ns:.0%} of the kernel time is in kernels that carry no grid{how}"
        if self.no_sms_ns > 0:
            return "the trace gives neither blocks per SM nor the device's SM count (deviceProperties)"
        return None


@dataclass
class KernelFacts:
    """Per kernel (GpuOp id order of `ids`): what the overview weighs."""

    ids: list[int]
    device: np.ndarray
    start: np.ndarray
    end: np.ndarray
    sm_value: np.ndarray        # min(blocks per SM, 1); 0 when unknown
    no_grid: np.ndarray         # bool: no grid recorded (graph replays)
    no_sms: np.ndarray          # bool: a grid, but no SM count to divide it by
    occ_pct: np.ndarray         # reported est. achieved occupancy %, NaN when absent
    th_frac: np.ndarray         # theoretical occupancy 0..1, NaN when unknown
    tc: np.ndarray              # bool


def kernel_facts(trace: Trace, window_us: tuple[float, float] | None = None) -> KernelFacts:
    """Every kernel's facts, or those of the kernels overlapping a window (all a window's figures need)."""
    lo, hi = window_us if window_us is not None else (-math.inf, math.inf)
    t = tables(trace)
    ends = t.gpu_ts + t.gpu_dur                                          # GpuOp.end
    at = np.flatnonzero(t.gpu_is((KERNEL,)) & (ends >= lo) & (t.gpu_ts <= hi))
    figures = kernel_figures(trace)
    bps = figures.blocks_per_sm[at]
    names = t.gpu_name[at]
    distinct, inverse = unique_ids(names, return_inverse=True)
    tc = np.fromiter((uses_tensor_cores(t.strings[i]) for i in distinct.tolist()), dtype=bool, count=len(distinct))
    no_grid = figures.no_grid[at]
    return KernelFacts(at.tolist(), t.gpu_device[at], to_ns(t.gpu_ts[at]), to_ns(ends[at]),
                       np.where(np.isnan(bps) | (bps == 0), 0.0, np.minimum(bps, 1.0)), no_grid,
                       np.isnan(bps) & ~no_grid, figures.occupancy_pct[at], figures.theoretical[at],
                       tc[inverse.reshape(-1)])


def _device_figures(kf: KernelFacts, device: int, windows: list[Window]) -> list[Figures]:
    pick = kf.device == device
    s, e = kf.start[pick], kf.end[pick]
    w_starts = np.asarray([w.start_ns for w in windows], dtype=np.int64)
    w_ends = np.asarray([w.end_ns for w in windows], dtype=np.int64)
    seg = Segments.of(s, e, w_starts, w_ends)
    lengths = seg.lengths
    at = seg.positions(s, e)           # searched once for the ten depths of subsets of these kernels

    def depth(rows: np.ndarray | None = None, weights: np.ndarray | None = None) -> np.ndarray:
        if rows is None:
            return seg.depth(s, e, weights, at=at)
        return seg.depth(s[rows], e[rows], None if weights is None else weights[rows], at=(at[0][rows], at[1][rows]))

    count = depth()
    sm = np.minimum(np.maximum(depth(None, kf.sm_value[pick]), 0.0), 1.0)
    occ_known = ~np.isnan(kf.occ_pct[pick])
    th_known = ~np.isnan(kf.th_frac[pick])
    p_busy = seg.prefix(np.where(count > 0, lengths, 0))
    p_sm = seg.prefix(sm * lengths)
    p_kernel = seg.prefix(count * lengths)
    p_tc = seg.prefix(depth(kf.tc[pick]) * lengths)
    p_occ_n = seg.prefix(depth(occ_known) * lengths)
    p_occ_w = seg.prefix(depth(occ_known, kf.occ_pct[pick]) * lengths)
    p_th_n = seg.prefix(depth(th_known) * lengths)
    p_th_w = seg.prefix(depth(th_known, kf.th_frac[pick]) * lengths)
    no_grid, no_sms = kf.no_grid[pick], kf.no_sms[pick]
    p_no_grid = seg.prefix(depth(no_grid) * lengths)
    p_no_sms = seg.prefix(depth(no_sms) * lengths)
    busy, sm_ns, kernel, tc, occ_n, occ_w, th_n, th_w, ng, ns = (
        seg.window_sums(p, w_starts, w_ends)
        for p in (p_busy, p_sm, p_kernel, p_tc, p_occ_n, p_occ_w, p_th_n, p_th_w, p_no_grid, p_no_sms))
    return [Figures(window_ns=w.dur_ns, busy_ns=int(busy[k]), sm_ns=sm_ns[k], kernel_ns=kernel[k], tc_ns=tc[k],
                    occ_ns=occ_n[k], occ_weighted=occ_w[k], th_ns=th_n[k], th_weighted=th_w[k],
                    no_grid_ns=ng[k], no_sms_ns=ns[k])
            for k, w in enumerate(windows)]


def no_grid_how(trace: Trace, kf: KernelFacts) -> str:
    """How the kernels without a grid were launched, as the trace shows it: by a graph replay (whose
    kernels may record none), by a named launch call, or with no launch call in the trace at all — so
    the reason given fits the trace (an eager trace has no graph replays)."""
    t = tables(trace)
    ids = np.asarray(kf.ids, dtype=np.int64)[kf.no_grid]
    if not len(ids):
        return ""
    launch = t.gpu_launch[ids]
    names = sorted({t.strings[i] for i in t.op_name[launch[launch >= 0]].tolist()})
    graph = [n for n in names if classify_call(n) == "graph"]
    others = [n for n in names if n not in graph]
    parts = ["CUDA/HIP graph replays" if graph else ""]
    if others:
        parts.append("launched by " + ", ".join(others[:3]) + (", …" if len(others) > 3 else ""))
    if (launch < 0).any():
        parts.append("with no launch call in the trace")
    return "; ".join(p for p in parts if p)


def union_windows(windows: list[Window]) -> list[Window]:
    """The union of the windows as disjoint pieces in time order: where steps overlap (the CPU runs
    ahead, pipelined steps) each moment is in one piece only."""
    pieces: list[list[int]] = []
    for w in sorted(windows, key=lambda w: (w.start_ns, w.end_ns)):
        if pieces and w.start_ns <= pieces[-1][1]:
            pieces[-1][1] = max(pieces[-1][1], w.end_ns)
        else:
            pieces.append([w.start_ns, w.end_ns])
    return [Window("", -1, a, b) for a, b in pieces]


def main_device(trace: Trace, kf: KernelFacts) -> int | None:
    if not len(kf.device):
        return None
    values, counts = unique_ids(kf.device, return_counts=True)
    return int(values[int(np.argmax(counts))])


def overview(trace: Trace, kf: KernelFacts | None = None, step: int | None = None,
             spans: Spans | None = None) -> OverviewReport:
    """The `overview` section of `summary --json` (see the module docstring); `step` narrows the scope
    to that step's window. `kf` and `spans` are what a caller computing several scopes keeps."""
    kf = kernel_facts(trace, scope_window_us(trace, step)) if kf is None else kf
    windows = step_windows(trace)
    if step is not None:
        windows = [w for w in windows if w.index == step]
    union = union_windows(windows)
    parts = breakdown(trace, windows + union, spans)
    main = main_device(trace, kf)
    used = distinct(kf.device).tolist()
    per_device = {d: _device_figures(kf, d, windows + union) for d in used}
    figures: list[Figures] = per_device[main] if main is not None else [Figures(window_ns=w.dur_ns)
                                                                        for w in windows + union]
    how = no_grid_how(trace, kf)
    for fig, part in zip(figures, parts, strict=True):
        fig.breakdown_ns = part
        fig.no_grid_how = how
    steps = figures[:len(windows)]
    total = Figures()
    for fig in figures[len(windows):]:          # the union's pieces: a moment in two windows counts once
        total.add(fig)
    devices: list[OverviewDevice] = []
    listed: dict[int, dict[str, Any]] = {int(d["id"]): d for d in trace.devices if isinstance(d.get("id"), int)}
    for d in sorted(set(listed) | set(used)):
        props = listed.get(d) or device_for(trace, d) or {}      # one entry describes a one-GPU trace's device
        arch = device_arch(props, trace.meta)
        base = OverviewDevice(id=d, name=props.get("name"), vendor=arch.vendor, arch=arch.arch, units=arch.units,
                              label=device_label(props, trace.meta), memory_bytes=props.get("totalGlobalMem"),
                              sms=props.get("numSms"))
        if d not in per_device:
            devices.append(base)
            continue
        scope = Figures()
        for fig in per_device[d][len(windows):]:
            fig.no_grid_how = how
            scope.add(fig)
        figs = scope.row("", _measured(trace, d, union))
        devices.append(UsedDevice(
            id=base.id, name=base.name, vendor=base.vendor, arch=base.arch, units=base.units, label=base.label,
            memory_bytes=base.memory_bytes, sms=base.sms, gpu_util=figs.gpu_util, sm_efficiency=figs.sm_efficiency, sm_efficiency_na=figs.sm_efficiency_na,
            achieved_occupancy=figs.achieved_occupancy, achieved_occupancy_na=figs.achieved_occupancy_na,
            theoretical_occupancy=figs.theoretical_occupancy, tensor_core_share=figs.tensor_core_share,
            kernels=int((kf.device == d).sum()), achieved_occupancy_measured=figs.achieved_occupancy_measured,
            sm_efficiency_measured=figs.sm_efficiency_measured, sm_throughput_measured=figs.sm_throughput_measured))
    scope_name = scope_label(trace, step)
    step_rows = [fig.row(w.name, _measured(trace, main, [w])) for fig, w in zip(steps, windows, strict=True)]
    return OverviewReport(devices=devices, main_device=main, unlinked=unlinked_line(trace),
                          outside_operators=outside_operators_line(trace), steps=step_rows,
                          total=total.row(scope_name, _measured(trace, main, union)))


def _measured(trace: Trace, device: int | None, windows: list[Window]) -> dict[str, float]:
    """The figures hardware counters measured over the windows (none where none were sampled): the views
    show them, labelled measured, in place of the estimates."""
    from mlptui.trace.analysis.steps.device_marks import measured_figures

    return measured_figures(trace, device, [(w.start_ns / 1000, w.end_ns / 1000) for w in windows])
