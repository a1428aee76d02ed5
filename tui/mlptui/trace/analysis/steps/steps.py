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
- kernels: kernel events only; launches: calls of kind "launch" or "graph" (mlptui.trace.analysis.events.launches).
- launch_overhead_us: CPU time inside the step's runtime/driver calls on the launch path: kinds launch,
  graph, occupancy, attribute and memset (cuBLAS's cudaMemsetAsync before its GEMM). Syncs (waiting
  for the GPU), memcpys (waiting for transfers) and "other" calls (malloc, free, stream and event
  bookkeeping, first-call initialisation) are not the cost of launching and are left out.

Verdict (VERDICT_RULE): "unknown" when it rests on a broken part of the trace (a cut file, launch calls
whose kernels are missing, GPU work past the trace's end: mlptui.trace.analysis.steps.integrity); "cpu-only" when the step put no work on the GPU; "gpu-not-recorded" when it made
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

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.events.intervals import merged, merged_arrays
from mlptui.trace.analysis.events.launches import call_kinds
from mlptui.trace.analysis.events.tables import TraceColumns, tables, unique_ids
from mlptui.trace.analysis.steps.integrity import verdict_unknown
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, Op, Step, Trace
from mlptui.trace.parse.index import STEP_PREFIX
from mlptui.trace.reports.common import StepStats as StepStats  # its figures are defined here

OVERHEAD_BOUND = "overhead-bound"
COMPUTE_BOUND = "compute-bound"
CPU_ONLY = "cpu-only"
GPU_NOT_RECORDED = "gpu-not-recorded"
UNKNOWN = "unknown"
VERDICT_RULE = ("unknown when the trace is cut or the step's GPU work is not all in it (the integrity problems); "
                "overhead-bound when the device is idle more than busy within the step's window (step start to "
                "the later of the step's end and the end of its GPU work; all work on the device counts, "
                "whichever step launched it); compute-bound otherwise; cpu-only when the step launched no GPU "
                "work; gpu-not-recorded when it made launch calls but the trace has no GPU activity")
_LAUNCH_KINDS = frozenset({"launch", "graph"})
LAUNCH_PATH_KINDS = frozenset({"launch", "graph", "occupancy", "attribute", "memset"})


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
    """The union of all GPU work in the trace, to measure any window against it (one per trace)."""

    def __init__(self, t: TraceColumns) -> None:
        self.starts, self.ends = merged_arrays(t.gpu_ts, t.gpu_ts + t.gpu_dur)

    @staticmethod
    def of(trace: Trace, t: TraceColumns) -> _Device:
        return trace.derive(_device)

    def busy(self, windows: list[tuple[float, float]]) -> float:
        parts = []
        for ws, we in windows:
            i = max(int(np.searchsorted(self.starts, ws, side="right")) - 1, 0)
            j = max(int(np.searchsorted(self.starts, we, side="left")), i)
            parts.append(np.maximum(np.minimum(self.ends[i:j], we) - np.maximum(self.starts[i:j], ws), 0.0))
        overlaps = np.concatenate(parts) if parts else np.zeros(0)
        return float(np.cumsum(overlaps)[-1]) if len(overlaps) else 0.0     # added in order, as a loop would




def _device(trace: Trace) -> _Device:
    return _Device(tables(trace))



def _union_us(starts: np.ndarray, ends: np.ndarray) -> float:
    s, e = merged_arrays(starts, ends)
    total: float = sum((e - s).tolist())            # busy_us's sum, in the same order
    return total


@dataclass
class _Rows:
    """A set of GPU op rows and runtime/driver call rows (id order), and the kind of each call."""

    gpu: np.ndarray
    calls: np.ndarray


def _stats(t: TraceColumns, index: int, name: str, windows: list[tuple[float, float]], cpu_us: float, rows: _Rows,
           device: _Device, kinds: _Kinds, unknown: bool = False) -> StepStats:
    windows = merged(windows)
    window = sum(e - s for s, e in windows)
    busy = _union_us(t.gpu_ts[rows.gpu], t.gpu_ts[rows.gpu] + t.gpu_dur[rows.gpu])
    dev_busy = device.busy(windows)
    names = t.op_name[rows.calls]
    launches = int(kinds.launch[names].sum())
    dev_idle = max(window - dev_busy, 0.0)
    n_gpu = len(rows.gpu)
    return StepStats(
        index=index, name=name, cpu_us=cpu_us, gpu_busy_us=busy, gpu_idle_us=max(window - busy, 0.0),
        kernels=int(t.gpu_is((KERNEL,))[rows.gpu].sum()),
        launches=launches,
        launch_overhead_us=sum(t.op_dur[rows.calls[kinds.on_path[names]]].tolist()),     # in call order
        verdict=UNKNOWN if unknown else verdict(dev_busy, dev_idle, n_gpu, launches, t.n_gpu > 0),
        window_us=window, device_busy_us=dev_busy, device_idle_us=dev_idle,
    )


@dataclass
class _Kinds:
    """Per string id, for the names of runtime/driver calls: a launch, or on the launch path."""

    launch: np.ndarray
    on_path: np.ndarray


def _call_kinds(trace: Trace, t: TraceColumns) -> _Kinds:
    calls = t.op_name[t.op_is(LAUNCH_CATS)]
    kinds = call_kinds(trace)           # the launch calls every pane counts
    return _Kinds(t.names_where(lambda s: kinds[s] in _LAUNCH_KINDS, calls),
                  t.names_where(lambda s: kinds[s] in LAUNCH_PATH_KINDS, calls))


def _by_step(t: TraceColumns) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Per step index: its GPU op rows and its runtime/driver call rows, each in id order."""
    calls = np.flatnonzero(t.op_is(LAUNCH_CATS))
    return _split(np.arange(t.n_gpu), t.gpu_step), _split(calls, t.op_step[calls])


def _split(rows: np.ndarray, step: np.ndarray) -> dict[int, np.ndarray]:
    if not len(rows):
        return {}
    order = np.argsort(step, kind="stable")
    keys, first = unique_ids(step[order], return_index=True)
    parts = np.split(rows[order], first[1:])
    return dict(zip(keys.tolist(), parts, strict=True))


_NONE = np.zeros(0, dtype=np.int64)


def _window(start: float, end: float, t: TraceColumns, gpu: np.ndarray) -> tuple[float, float]:
    return start, max(end, float((t.gpu_ts[gpu] + t.gpu_dur[gpu]).max())) if len(gpu) else end


def _one(trace: Trace, t: TraceColumns, s: Step, gpu: dict[int, np.ndarray], calls: dict[int, np.ndarray],
         device: _Device, kinds: _Kinds) -> StepStats:
    own = gpu.get(s.index, _NONE)
    return _stats(t, s.index, s.name, [_window(s.ts, s.ts + s.dur, t, own)], s.dur,
                  _Rows(own, calls.get(s.index, _NONE)), device, kinds, verdict_unknown(trace, s.index))


def all_step_stats(trace: Trace) -> list[StepStats]:
    t = tables(trace)
    gpu, calls = _by_step(t)
    device = _Device.of(trace, t)
    kinds = _call_kinds(trace, t)
    return [_one(trace, t, s, gpu, calls, device, kinds) for s in trace.steps]


def _whole_trace(trace: Trace, t: TraceColumns) -> StepStats:
    gpu = np.arange(t.n_gpu)
    calls = np.flatnonzero(t.op_is(LAUNCH_CATS))
    if t.n_ops:
        start = float(t.op_ts.min())
        end = float((t.op_ts + t.op_dur).max())
    elif t.n_gpu:
        start = end = float(t.gpu_ts.min())
    else:
        start = end = 0.0
    cpu_us = end - start
    if t.n_gpu:
        start = min(start, float(t.gpu_ts.min()))
    return _stats(t, -1, "whole trace", [_window(start, end, t, gpu)], cpu_us, _Rows(gpu, calls),
                  _Device.of(trace, t), _call_kinds(trace, t), verdict_unknown(trace, None))


def step_stats(trace: Trace, step: int | None) -> StepStats:
    """Stats of step `step` (a Step.index), or of all steps together when None."""
    t = tables(trace)
    if step is not None:
        if not 0 <= step < len(trace.steps):
            raise IndexError(f"no step {step} (the trace has {len(trace.steps)})")
        gpu, calls = _by_step(t)
        return _one(trace, t, trace.steps[step], gpu, calls, _Device.of(trace, t), _call_kinds(trace, t))
    if not trace.steps:
        return _whole_trace(trace, t)
    gpu, calls = _by_step(t)
    own = np.concatenate([gpu.get(s.index, _NONE) for s in trace.steps])
    windows = [_window(s.ts, s.ts + s.dur, t, gpu.get(s.index, _NONE)) for s in trace.steps]
    step_calls = np.concatenate([calls.get(s.index, _NONE) for s in trace.steps])
    return _stats(t, -1, f"all {len(trace.steps)} steps", windows, sum(s.dur for s in trace.steps),
                  _Rows(own, step_calls), _Device.of(trace, t), _call_kinds(trace, t), verdict_unknown(trace, None))
