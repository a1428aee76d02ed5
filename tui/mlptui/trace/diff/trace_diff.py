"""Diff two traces: one step of each, GPU work aligned kernel by kernel, with the CPU side and
the step timings beside it.

    d = diff_traces(a, b)                  # each side's median-duration step
    d = diff_traces(a, b, step_a=1, step_b=0)   # Step.index on each side
    d.report()                             # the `mlptui diff --json` document (mlptui.trace.reports.diff)
    d.swapped()                            # B against A, without aligning again

Renderers for text and Markdown are in mlptui.render.diff_text.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mlptui.base.errors import MlptuiError
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.steps.steps import StepStats, all_step_stats, step_stats
from mlptui.trace.diff.align import (
    ADDED,
    ATTENTION_CALL_OPS,
    CHANGED,
    FUSED,
    KERNEL,
    MEMCPY,
    MEMSET,
    REMOVED,
    SAME,
    STATUSES,
    AlignItem,
    align,
)
from mlptui.trace.diff.cpu import CpuDiff, cpu_diff, launch_chain, step_op_counts
from mlptui.trace.diff.tokens import name_words, op_words
from mlptui.trace.diff.totals import Pair, biggest_rows, family_totals, launch_totals
from mlptui.trace.model import MEMCPY as CAT_MEMCPY
from mlptui.trace.model import MEMSET as CAT_MEMSET
from mlptui.trace.model import Trace
from mlptui.trace.reports.diff import (
    AlignedStep,
    CriticalPathDiff,
    DiffReport,
    DiffSide,
    KernelDiffRow,
    ProfileDiff,
)

_MIRROR = {ADDED: REMOVED, REMOVED: ADDED}
# Families whose kernels never stand for a fusion of several others (a GEMM may: a Triton GEMM with
# an epilogue, such as a gate/up GEMM with GeGLU, stands for the GEMMs and the pointwise ops it replaced).
_NOT_FUSABLE = frozenset({"copy", "memset", "comm"})
# Libraries whose kernels each compute one op (or one op and its library epilogue): never a fusion.
_VENDOR_LIBRARIES = ("ATen", "cuBLAS", "CUTLASS", "cuDNN", "CUB", "CUDA", "NCCL", "RCCL", "HIP", "rocBLAS",
                     "hipBLASLt", "FBGEMM", "Apex")


@dataclass(frozen=True, slots=True)
class DiffKernel:
    """One GPU op of one side, as a diff row shows it."""

    gpu_id: int
    name: str
    short: str
    family: str
    library: str
    kind: str                # kernel, memset, memcpy
    dur: float
    launcher: str            # innermost CPU op that launched it ("" if none)
    chain: tuple[str, ...]   # CPU op names root -> leaf, then the launch call


@dataclass(frozen=True, slots=True)
class DiffRow:
    status: str
    a: tuple[DiffKernel, ...]
    b: tuple[DiffKernel, ...]

    @property
    def a_us(self) -> float | None:
        return sum(k.dur for k in self.a) if self.a else None

    @property
    def b_us(self) -> float | None:
        return sum(k.dur for k in self.b) if self.b else None

    @property
    def delta_us(self) -> float | None:
        a, b = self.a_us, self.b_us
        return None if a is None or b is None else b - a

    def swapped(self) -> DiffRow:
        return DiffRow(_MIRROR.get(self.status, self.status), self.b, self.a)


@dataclass(frozen=True)
class Side:
    """One trace's numbers: the aligned step's identity plus medians over all its active steps."""

    source: str
    label: str               # workload/mode from the manifest, else the file name
    device: str | None
    step: str                # name of the aligned step ("all" when the trace has no steps)
    step_index: int          # Step.index, -1 for the whole trace
    steps: tuple[str, ...]   # every active step's name
    step_us: float           # median step window: start to the later of its end and the end of its GPU work
    cpu_us: float
    gpu_busy_us: float
    gpu_idle_us: float
    kernels: int
    launches: int
    aligned: StepStats | None   # the aligned step's own numbers
    timed_us: float | None = None   # the runner's unprofiled median from the manifest, if any

    def report(self) -> DiffSide:
        s = self.aligned
        aligned = None if s is None else AlignedStep(
            step_us=_r(s.window_us), cpu_us=_r(s.cpu_us), gpu_busy_us=_r(s.gpu_busy_us),
            gpu_idle_us=_r(s.gpu_idle_us), kernels=s.kernels, launches=s.launches)
        return DiffSide(source=self.source, step=self.step, cpu_us=_r(self.cpu_us), gpu_busy_us=_r(self.gpu_busy_us),
                        kernels=self.kernels, launches=self.launches, gpu_idle_us=_r(self.gpu_idle_us),
                        step_us=_r(self.step_us), label=self.label, device=self.device, steps=len(self.steps),
                        timed_us=_r(self.timed_us), aligned_step=aligned)


@dataclass
class TraceDiff:
    a: Side
    b: Side
    rows: list[DiffRow]
    cpu: CpuDiff
    speedup: float | None            # A's median step window / B's: > 1 means B is faster
    families: list[Pair] = field(default_factory=list)      # GPU time per kernel family, aligned steps
    launch_calls: list[Pair] = field(default_factory=list)  # runtime/driver calls, aligned steps
    trace_a: Trace | None = field(default=None, repr=False)
    trace_b: Trace | None = field(default=None, repr=False)
    _critical: tuple[tuple[int, int], CriticalPathDiff] | None = field(default=None, repr=False, compare=False)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for r in self.rows:
            out[r.status] += 1
        return out

    @property
    def gpu_busy_speedup(self) -> float | None:
        return _ratio(self.a.gpu_busy_us, self.b.gpu_busy_us)

    @property
    def timed_speedup(self) -> float | None:
        """From the runs' unprofiled timings: profiled steps carry profiler and sync overhead."""
        return _ratio(self.a.timed_us, self.b.timed_us)

    def differences(self) -> list[int]:
        """Row numbers whose status is not `same`."""
        return [i for i, r in enumerate(self.rows) if r.status != SAME]

    def swapped(self) -> TraceDiff:
        return TraceDiff(self.b, self.a, [r.swapped() for r in self.rows], self.cpu.swapped(),
                         None if not self.speedup else 1.0 / self.speedup,
                         [p.swapped() for p in self.families], [p.swapped() for p in self.launch_calls],
                         self.trace_b, self.trace_a, _swapped_critical(self._critical))

    def report(self) -> DiffReport:
        """The `mlptui diff --json` document."""
        profile = self.profile()
        return DiffReport(
            mlptui_diff=1,
            a=self.a.report(),
            b=self.b.report(),
            kernels=[_row_report(r) for r in self.rows],
            cpu=self.cpu.report(),
            speedup=_r(self.speedup, 4),
            counts=self.counts(),
            gpu_busy_speedup=_r(self.gpu_busy_speedup, 4),
            timed_speedup=_r(self.timed_speedup, 4),
            by_family=[p.family_total() for p in self.families],
            launch_calls=[p.launch_total() for p in self.launch_calls],
            biggest=[i + 1 for i in biggest_rows(self.rows)],
            operators=None if profile is None else profile.operators,
            overview=None if profile is None else profile.overview,
            critical_path=self.critical_path(),
        )

    def critical_path(self) -> CriticalPathDiff | None:
        """The aligned steps' critical paths by kind, side by side (mlptui.trace.diff.critical_diff)."""
        if self.trace_a is None or self.trace_b is None:
            return None
        from mlptui.trace.diff.critical_diff import critical_path_diff

        key = (self.a.step_index, self.b.step_index)
        kept = self._critical
        if kept is None or kept[0] != key:
            kept = self._critical = (key, critical_path_diff(
                self.trace_a, self.trace_b, self.a.step_index if self.a.step_index >= 0 else None,
                self.b.step_index if self.b.step_index >= 0 else None))
        return kept[1]

    def profile(self) -> ProfileDiff | None:
        """The operator table side by side and both overviews (mlptui.trace.diff.profile_diff); None when
        the diff was made without its traces."""
        if self.trace_a is None or self.trace_b is None:
            return None
        from mlptui.trace.diff.profile_diff import profile_diff

        def step(side: Side) -> int | None:
            return side.step_index if side.step_index >= 0 else None

        return profile_diff(self.trace_a, self.trace_b, step(self.a), step(self.b))


def diff_traces(a: Trace, b: Trace, step_a: int | None = None, step_b: int | None = None) -> TraceDiff:
    """Align step `step_a` of `a` with step `step_b` of `b` (Step.index; None: the median step)."""
    sa = _pick_step(a, step_a, "A")
    sb = _pick_step(b, step_b, "B")
    items_a, kern_a = _items(a, sa)
    items_b, kern_b = _items(b, sb)
    rows = [DiffRow(r.status, tuple(kern_a[i] for i in r.a), tuple(kern_b[j] for j in r.b))
            for r in align(items_a, items_b)]
    side_a, side_b = _side(a, sa), _side(b, sb)
    cpu = cpu_diff(step_op_counts(a, sa), step_op_counts(b, sb))
    d = TraceDiff(side_a, side_b, rows, cpu, _ratio(side_a.step_us, side_b.step_us), family_totals(rows),
                  launch_totals(launch_calls(a, sa), launch_calls(b, sb)), a, b)
    d.critical_path()           # here, where the alignment runs (a worker for big traces), not at the first paint
    return d


def _swapped_critical(kept: tuple[tuple[int, int], CriticalPathDiff] | None,
                      ) -> tuple[tuple[int, int], CriticalPathDiff] | None:
    """The kept critical-path block with A and B exchanged."""
    if kept is None:
        return None
    from mlptui.trace.diff.critical_diff import swapped

    (sa, sb), cp = kept
    return (sb, sa), swapped(cp)


def median_step(trace: Trace) -> int | None:
    """Index of the active step with the median wall time (the lower one of an even count)."""
    if not trace.steps:
        return None
    order = sorted(trace.steps, key=lambda s: (s.dur, s.index))
    return order[(len(order) - 1) // 2].index


def step_by_number(trace: Trace, number: int, side: str) -> int:
    """Step.index of `ProfilerStep#<number>`; a one-line error listing the steps otherwise."""
    for s in trace.steps:
        if s.name.rpartition("#")[2] == str(number):
            return s.index
    have = ", ".join(s.name.rpartition("#")[2] for s in trace.steps) or "none"
    raise MlptuiError(f"{side}: no ProfilerStep#{number} in {trace.source} (steps: {have})")


def _pick_step(trace: Trace, step: int | None, side: str) -> int | None:
    if step is None:
        return median_step(trace)
    if not 0 <= step < len(trace.steps):
        raise MlptuiError(f"{side}: step {step} out of range for {trace.source} ({len(trace.steps)} steps)")
    return step


def _items(trace: Trace, step: int | None) -> tuple[list[AlignItem], list[DiffKernel]]:
    c = trace.columns          # read as columns: a diff makes no Op or GpuOp object
    strings = c.strings
    rows = range(c.n_gpu) if step is None else np.flatnonzero(c.gpu_step == step).tolist()
    gts, gdur, launch, op = c.gpu_ts.tolist(), c.gpu_dur.tolist(), c.gpu_launch.tolist(), c.gpu_op.tolist()
    op_ts = c.op_ts.tolist()
    # Program order: when the CPU launched it; a graph replay's kernels share one launch, so then GPU order.
    work = sorted(rows, key=lambda g: (op_ts[launch[g]] if launch[g] >= 0 else gts[g], gts[g]))
    items: list[AlignItem] = []
    kernels: list[DiffKernel] = []
    chains: dict[int, tuple[str, ...]] = {}
    for g in work:
        raw, cat = strings[c.gpu_name[g]], strings[c.gpu_cat[g]]
        kind = MEMSET if cat == CAT_MEMSET else MEMCPY if cat == CAT_MEMCPY else KERNEL
        name = kernel_name(trace, raw)
        launcher = strings[c.op_name[op[g]]] if op[g] >= 0 else ""
        words = op_words(name.ops, launcher)
        if name.family != "gemm" and _is_identifier(raw):
            words |= name_words(raw)
        fusable = (kind == KERNEL and name.family not in _NOT_FUSABLE
                   and not name.library.startswith(_VENDOR_LIBRARIES)
                   and (name.family != "gemm" or bool(words - {"mm"})))
        chain = tuple(launch_chain(trace, g, chains))
        items.append(AlignItem(raw, kind, name.family, words, launcher, fusable, gdur[g], g,
                               under_attention=not ATTENTION_CALL_OPS.isdisjoint(chain)))
        kernels.append(DiffKernel(g, raw, name.short, name.family, name.library, kind, gdur[g],
                                  launcher, chain))
    return items, kernels


def _is_identifier(raw: str) -> bool:
    return raw.replace("_", "a").isalnum()


def _side(trace: Trace, step: int | None) -> Side:
    side = _measured_side(trace, step)
    timed = ((trace.manifest or {}).get("timing") or {}).get("median_us")
    return replace(side, timed_us=float(timed)) if isinstance(timed, (int, float)) else side


def _measured_side(trace: Trace, step: int | None) -> Side:
    manifest = trace.manifest or {}
    label = "/".join(str(manifest[k]) for k in ("workload", "mode") if manifest.get(k)) or Path(
        trace.source).name
    steps = tuple(s.name for s in trace.steps)
    if step is None:
        whole = step_stats(trace, None)
        return Side(trace.source, label, trace.device_name, "all", -1, steps, whole.window_us,
                    whole.cpu_us, whole.gpu_busy_us, whole.gpu_idle_us, whole.kernels, whole.launches, whole)
    stats = _all_stats(trace)
    return Side(
        trace.source, label, trace.device_name, trace.steps[step].name, step, steps,
        statistics.median(s.window_us for s in stats),
        statistics.median(s.cpu_us for s in stats),
        statistics.median(s.gpu_busy_us for s in stats),
        statistics.median(s.gpu_idle_us for s in stats),
        round(statistics.median(s.kernels for s in stats)),
        round(statistics.median(s.launches for s in stats)),
        stats[step] if step < len(stats) else None,
    )


def _all_stats(trace: Trace) -> list[StepStats]:
    """Step stats, kept with the trace: switching the aligned step must not recount them."""
    return trace.derive(all_step_stats)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def _row_report(r: DiffRow) -> KernelDiffRow:
    return KernelDiffRow(
        status=r.status,
        a=[k.name for k in r.a],
        b=[k.name for k in r.b],
        a_us=_r(r.a_us),
        b_us=_r(r.b_us),
        delta_us=_r(r.delta_us),
        kind=(r.a or r.b)[0].kind,
        a_short=[k.short for k in r.a],
        b_short=[k.short for k in r.b],
        a_chain=list(r.a[0].chain) if r.a else [],
        b_chain=list(r.b[0].chain) if r.b else [],
    )


__all__ = ["ADDED", "CHANGED", "FUSED", "REMOVED", "SAME", "STATUSES", "DiffKernel", "DiffRow", "Side",
           "TraceDiff", "diff_traces", "median_step", "step_by_number"]
