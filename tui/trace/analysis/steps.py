"""Per-step timing: how long the CPU took, how busy the GPU was, and which one set the pace.

For step N (the `ProfilerStep#N` annotation):
- cpu_us: the annotation's duration (CPU wall time of the step).
- GPU work of the step: every kernel/memcpy/memset whose launching op is in the step (GpuOp.step), even
  when it runs after the step's annotation has closed.
- gpu_busy_us: the union of those intervals over all streams (overlap counted once).
- window: from the step's start to whichever ends last, the annotation or the step's GPU work.
- gpu_idle_us: window minus gpu_busy_us.
- kernels: kernel events only; launches: calls of kind "launch" or "graph" (mlptui.trace.analysis.launches).
- launch_overhead_us: CPU time inside the step's runtime/driver calls on the launch path: kinds launch,
  graph, occupancy, attribute and memset (cuBLAS's cudaMemsetAsync before its GEMM). Syncs (waiting
  for the GPU), memcpys (waiting for transfers) and "other" calls (malloc, free, stream and event
  bookkeeping, first-call initialisation) are not the cost of launching and are left out.

Verdict (VERDICT_RULE): "cpu-only" when the step put no work on the GPU; "overhead-bound" when
gpu_idle_us > gpu_busy_us (the GPU waits for the host more than it works: Python, dispatch and launch
costs set the pace); otherwise "compute-bound" (the GPU is busy at least half of the window; faster
kernels, not fewer launches, would make the step faster).

`step_stats(trace, None)` covers all steps together (sums of the per-step figures); a trace without
ProfilerStep annotations is treated as one step spanning all its CPU slices.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mlptui.trace.analysis.launches import classify_call
from mlptui.trace.model import KERNEL, LAUNCH_CATS, GpuOp, Op, Trace

OVERHEAD_BOUND = "overhead-bound"
COMPUTE_BOUND = "compute-bound"
CPU_ONLY = "cpu-only"
VERDICT_RULE = ("overhead-bound when GPU idle > GPU busy within the step's window (step start to the later "
                "of the step's end and the end of its GPU work); compute-bound otherwise; cpu-only when the "
                "step launched no GPU work")
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict(gpu_busy_us: float, gpu_idle_us: float, gpu_ops: int) -> str:
    if gpu_ops == 0:
        return CPU_ONLY
    return OVERHEAD_BOUND if gpu_idle_us > gpu_busy_us else COMPUTE_BOUND


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals."""
    total = 0.0
    cur: tuple[float, float] | None = None    # the (start, end) being merged
    for s, e in sorted(intervals):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = (s, e)
        elif e > cur[1]:
            cur = (cur[0], e)
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def _stats(index: int, name: str, start: float, end: float, gpu: list[GpuOp], calls: list[Op]) -> StepStats:
    busy = busy_us([(g.ts, g.end) for g in gpu])
    window_end = max([end] + [g.end for g in gpu])
    idle = max(window_end - start - busy, 0.0)
    kinds = [classify_call(c.name) for c in calls]
    return StepStats(
        index=index, name=name, cpu_us=end - start, gpu_busy_us=busy, gpu_idle_us=idle,
        kernels=sum(1 for g in gpu if g.cat == KERNEL),
        launches=sum(1 for k in kinds if k in _LAUNCH_KINDS),
        launch_overhead_us=sum(c.dur for c, k in zip(calls, kinds, strict=True) if k in LAUNCH_PATH_KINDS),
        verdict=verdict(busy, idle, len(gpu)),
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


def all_step_stats(trace: Trace) -> list[StepStats]:
    gpu, calls = _by_step(trace)
    return [_stats(s.index, s.name, s.ts, s.ts + s.dur, gpu.get(s.index, []), calls.get(s.index, []))
            for s in trace.steps]


def _whole_trace(trace: Trace) -> StepStats:
    gpu = list(trace.gpu)
    calls = [op for op in trace.ops if op.cat in LAUNCH_CATS]
    if trace.ops:
        start = min(op.ts for op in trace.ops)
        end = max(op.end for op in trace.ops)
    elif gpu:
        start, end = min(g.ts for g in gpu), min(g.ts for g in gpu)
    else:
        start = end = 0.0
    if gpu:
        start = min(start, min(g.ts for g in gpu))
    return _stats(-1, "whole trace", start, end, gpu, calls)


def step_stats(trace: Trace, step: int | None) -> StepStats:
    """Stats of step `step` (a Step.index), or of all steps together when None."""
    if step is not None:
        if not 0 <= step < len(trace.steps):
            raise IndexError(f"no step {step} (the trace has {len(trace.steps)})")
        s = trace.steps[step]
        gpu, calls = _by_step(trace)
        return _stats(s.index, s.name, s.ts, s.ts + s.dur, gpu.get(step, []), calls.get(step, []))
    if not trace.steps:
        return _whole_trace(trace)
    per = all_step_stats(trace)
    busy = sum(p.gpu_busy_us for p in per)
    idle = sum(p.gpu_idle_us for p in per)
    gpu_ops = sum(1 for g in trace.gpu if g.step >= 0)
    return StepStats(
        index=-1, name=f"all {len(per)} steps", cpu_us=sum(p.cpu_us for p in per), gpu_busy_us=busy,
        gpu_idle_us=idle, kernels=sum(p.kernels for p in per), launches=sum(p.launches for p in per),
        launch_overhead_us=sum(p.launch_overhead_us for p in per), verdict=verdict(busy, idle, gpu_ops),
    )
