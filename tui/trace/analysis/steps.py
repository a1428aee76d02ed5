"""Per-step timing: how long the CPU took, how busy the GPU was, and which one set the pace.

For step N (the `ProfilerStep#N` annotation):
- cpu_us: the annotation's duration (CPU wall time of the step).
- The step's own GPU work: every kernel/memcpy/memset whose launching op is in the step (GpuOp.step),
  even when it runs after the step's annotation has closed (the CPU may run ahead of the GPU).
- window: from the step's start to whichever ends last, the annotation or the step's own GPU work.
- gpu_busy_us: the union of the step's own GPU work over all streams (overlap counted once);
  gpu_idle_us: window minus gpu_busy_us.
- device_busy_us: the union of ALL work on the device(s) inside the window, whichever step launched
  it (when the CPU runs ahead, earlier steps' kernels fill this step's window); device_idle_us: window
  minus device_busy_us. This is the device's real utilisation over the step.
- kernels: kernel events only; launches: calls of kind "launch" or "graph" (mlptui.trace.analysis.launches).
- launch_overhead_us: CPU time inside the step's runtime/driver calls on the launch path: kinds launch,
  graph, occupancy, attribute and memset (cuBLAS's cudaMemsetAsync before its GEMM). Syncs (waiting
  for the GPU), memcpys (waiting for transfers) and "other" calls (malloc, free, stream and event
  bookkeeping, first-call initialisation) are not the cost of launching and are left out.

Verdict (VERDICT_RULE): "cpu-only" when the step put no work on the GPU; "gpu-not-recorded" when it made
launch calls but the trace holds no GPU activity at all (the profiler did not capture the device);
"overhead-bound" when device_idle_us > device_busy_us (the device waits for the host more than it
works: Python, dispatch and launch costs set the pace); otherwise "compute-bound" (the device is busy
at least half of the window; faster kernels, not fewer launches, would make the step faster).

`step_stats(trace, None)` covers all steps together: CPU time, counts and launch overhead are sums; the
GPU and device figures are over the union of the step windows (windows that overlap, as pipelined steps'
do, are counted once). A trace without ProfilerStep annotations is treated as one step spanning all
its slices.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import asdict, dataclass
from typing import Any

from mlptui.trace.analysis.intervals import merged
from mlptui.trace.analysis.launches import classify_call
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, GpuOp, Op, Step, Trace
from mlptui.trace.parse.index import STEP_PREFIX

OVERHEAD_BOUND = "overhead-bound"
COMPUTE_BOUND = "compute-bound"
CPU_ONLY = "cpu-only"
GPU_NOT_RECORDED = "gpu-not-recorded"
VERDICT_RULE = ("overhead-bound when the device is idle more than busy within the step's window (step start to "
                "the later of the step's end and the end of its GPU work; all work on the device counts, "
                "whichever step launched it); compute-bound otherwise; cpu-only when the step launched no GPU "
                "work; gpu-not-recorded when it made launch calls but the trace has no GPU activity")
_LAUNCH_KINDS = frozenset({"launch", "graph"})
LAUNCH_PATH_KINDS = frozenset({"launch", "graph", "occupancy", "attribute", "memset"})


@dataclass(frozen=True, slots=True)
class StepStats:
    index: int              # Step.index; -1 for "all steps" or a trace without steps
    name: str
    cpu_us: float
    gpu_busy_us: float
    gpu_idle_us: float
    kernels: int
    launches: int
    launch_overhead_us: float
    verdict: str
    window_us: float = 0.0          # step start to the later of its end and the end of its own GPU work
    device_busy_us: float = 0.0     # all work on the device within the window (any step's)
    device_idle_us: float = 0.0     # window minus device_busy_us

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_cpu_op(op: Op) -> bool:
    """The one definition of "a CPU op" that every count uses (findings, picker, diff): an op or a
    record_function annotation; the ProfilerStep#N marks (annotations, or ops in torch <= 1.9) left out."""
    return (op.cat == CPU_OP or op.cat == ANNOTATION) and not op.name.startswith(STEP_PREFIX)


def verdict(gpu_busy_us: float, gpu_idle_us: float, gpu_ops: int, launches: int = 0,
            gpu_recorded: bool = True) -> str:
    """From the device's busy and idle time over the window (the step's own figures where they are the same)."""
    if gpu_ops == 0:
        return GPU_NOT_RECORDED if launches and not gpu_recorded else CPU_ONLY
    return OVERHEAD_BOUND if gpu_idle_us > gpu_busy_us else COMPUTE_BOUND


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals."""
    return sum(e - s for s, e in merged(intervals))


class _Device:
    """The union of all GPU work in the trace, to measure any window against it."""

    def __init__(self, trace: Trace) -> None:
        self.spans = merged([(g.ts, g.end) for g in trace.gpu])
        self.starts = [s for s, _ in self.spans]

    def busy(self, windows: list[tuple[float, float]]) -> float:
        total = 0.0
        for ws, we in windows:
            i = max(bisect_right(self.starts, ws) - 1, 0)
            while i < len(self.spans) and self.spans[i][0] < we:
                s, e = self.spans[i]
                total += max(min(e, we) - max(s, ws), 0.0)
                i += 1
        return total


def _window(start: float, end: float, gpu: list[GpuOp]) -> tuple[float, float]:
    return start, max([end] + [g.end for g in gpu])


def _stats(index: int, name: str, windows: list[tuple[float, float]], cpu_us: float, gpu: list[GpuOp],
           calls: list[Op], device: _Device, gpu_recorded: bool) -> StepStats:
    windows = merged(windows)
    window = sum(e - s for s, e in windows)
    busy = busy_us([(g.ts, g.end) for g in gpu])
    dev_busy = device.busy(windows)
    kinds = [classify_call(c.name) for c in calls]
    launches = sum(1 for k in kinds if k in _LAUNCH_KINDS)
    dev_idle = max(window - dev_busy, 0.0)
    return StepStats(
        index=index, name=name, cpu_us=cpu_us, gpu_busy_us=busy, gpu_idle_us=max(window - busy, 0.0),
        kernels=sum(1 for g in gpu if g.cat == KERNEL),
        launches=launches,
        launch_overhead_us=sum(c.dur for c, k in zip(calls, kinds, strict=True) if k in LAUNCH_PATH_KINDS),
        verdict=verdict(dev_busy, dev_idle, len(gpu), launches, gpu_recorded),
        window_us=window, device_busy_us=dev_busy, device_idle_us=dev_idle,
    )


def _by_step(trace: Trace) -> tuple[dict[int, list[GpuOp]], dict[int, list[Op]]]:
    gpu: dict[int, list[GpuOp]] = {}
    for g in trace.gpu:
        gpu.setdefault(g.step, []).append(g)
    calls: dict[int, list[Op]] = {}
    for op in trace.ops:
        if op.cat in LAUNCH_CATS:
            calls.setdefault(op.step, []).append(op)
    return gpu, calls


def _one(trace: Trace, s: Step, gpu: dict[int, list[GpuOp]], calls: dict[int, list[Op]],
         device: _Device) -> StepStats:
    own = gpu.get(s.index, [])
    return _stats(s.index, s.name, [_window(s.ts, s.ts + s.dur, own)], s.dur, own, calls.get(s.index, []),
                  device, bool(trace.gpu))


def all_step_stats(trace: Trace) -> list[StepStats]:
    gpu, calls = _by_step(trace)
    device = _Device(trace)
    return [_one(trace, s, gpu, calls, device) for s in trace.steps]


def _whole_trace(trace: Trace) -> StepStats:
    gpu = list(trace.gpu)
    calls = [op for op in trace.ops if op.cat in LAUNCH_CATS]
    if trace.ops:
        start = min(op.ts for op in trace.ops)
        end = max(op.end for op in trace.ops)
    elif gpu:
        start = end = min(g.ts for g in gpu)
    else:
        start = end = 0.0
    cpu_us = end - start
    if gpu:
        start = min(start, min(g.ts for g in gpu))
    return _stats(-1, "whole trace", [_window(start, end, gpu)], cpu_us, gpu, calls, _Device(trace),
                  bool(trace.gpu))


def step_stats(trace: Trace, step: int | None) -> StepStats:
    """Stats of step `step` (a Step.index), or of all steps together when None."""
    if step is not None:
        if not 0 <= step < len(trace.steps):
            raise IndexError(f"no step {step} (the trace has {len(trace.steps)})")
        gpu, calls = _by_step(trace)
        return _one(trace, trace.steps[step], gpu, calls, _Device(trace))
    if not trace.steps:
        return _whole_trace(trace)
    gpu, calls = _by_step(trace)
    own = [g for s in trace.steps for g in gpu.get(s.index, [])]
    windows = [_window(s.ts, s.ts + s.dur, gpu.get(s.index, [])) for s in trace.steps]
    stats = _stats(-1, f"all {len(trace.steps)} steps", windows, sum(s.dur for s in trace.steps), own,
                   [c for s in trace.steps for c in calls.get(s.index, [])], _Device(trace), bool(trace.gpu))
    return stats
