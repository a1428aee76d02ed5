"""Whether a trace can be trusted: what it lacks, or holds that no run could produce, so that a figure or a
verdict resting on a broken part is not read as if it were sound.

    integrity(trace) -> Integrity      computed once per trace (`Trace.derive`)
    verdict_unknown(trace, step) -> bool  whether a step's (or all steps') verdict rests on a broken part

Problems (kind, count, one line of detail); `ok` when there is none:
- truncated (count 1): the file ends early (a cut JSON document, a cut gzip stream). The loader keeps the
  events before the cut; the events after it, any step's GPU work among them, are lost: every verdict is
  unknown.
- launches_without_device_work: kernel launch calls (launch kind, mlptui.trace.analysis.events.launches; not graph
  launches) linked to no kernel, counted per step. Calls made while a graph capture is recorded are left
  out (their kernels are added to a graph, mlptui.trace.analysis.events.graph_capture). When the first step holds
  them and no later step does, the detail names the profiler's known loss: on CUDA before 13.1 it drops the
  GPU kernel events at the start of each session (pytorch/pytorch#192021). A step with such calls has an
  unknown verdict: its GPU work is not all in the trace.
- device_work_without_launch: kernels, memcpys and memsets with no launch call in a trace that records
  launch calls (a trace of GPU events only has none to find). Graph replays are not counted: their kernels
  share the correlation of their graph launch and are linked to it.
- clock: slices whose duration was negative or impossible (read as zero-length), device work of zero
  duration in a trace with ns timestamps, device work that starts before its launch call starts, and
  slices outside the profiler's own span (category `Trace`) or so far from the rest that the loader
  skipped them.
- steps_incomplete: steps whose GPU work runs past the trace's end: their own work ends after the
  profiler's span, or their launch calls without kernels are the trace's last launch calls (the GPU ran
  them after recording stopped). Their verdict is unknown.

Notes (no problem, but a reader should know): graph replays (their kernels carry no launch call of their
own and no grid), a recorded graph capture, invalid UTF-8 that the loader replaced.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.analysis.events.graph_capture import graph_capture
from mlptui.trace.analysis.events.launches import call_kinds
from mlptui.trace.analysis.events.tables import TraceColumns, distinct, tables
from mlptui.trace.model import KERNEL, LAUNCH_CATS, Trace
from mlptui.trace.reports.common import Problem
from mlptui.trace.reports.summary import IntegrityReport

KINDS = ("truncated", "launches_without_device_work", "device_work_without_launch", "clock", "steps_incomplete")
FIRST_STEP_LOSS = ("on CUDA before 13.1 the profiler drops GPU kernel events at the start of each session "
                   "(pytorch/pytorch#192021)")
_CUDA_FIXED = 13010          # cuda_runtime_version as Kineto writes it: major * 1000 + minor * 10
_TOLERANCE_US = 0.001        # one ns: times are sums of 3-decimal floats


@dataclass(frozen=True)
class Integrity:
    problems: list[Problem]
    notes: list[str]
    all_unknown: bool = False                         # no verdict can be trusted (a cut file)
    unknown_steps: dict[int, str] = field(default_factory=dict)   # step index -> why its verdict is unknown
    whole_trace_unknown: bool = False                 # a trace without steps: its one verdict is unknown

    @property
    def ok(self) -> bool:
        return not self.problems

    def report(self) -> IntegrityReport:
        """What `summary --json` writes of it."""
        return IntegrityReport(ok=self.ok, problems=list(self.problems), notes=list(self.notes))


def integrity(trace: Trace) -> Integrity:
    return trace.derive(_integrity)


def _integrity(trace: Trace) -> Integrity:
    t = tables(trace)
    problems: list[Problem] = []
    unknown: dict[int, str] = {}
    cut = trace.meta.get("file_truncated")
    if cut:
        how = "the gzip stream" if isinstance(cut, dict) and cut.get("how") == "gzip" else "the JSON"
        problems.append(Problem(kind="truncated", count=1, detail=f"{how} ends early: the events after the cut are lost, whichever "
                                                "step they belong to, so every verdict is unknown"))
    missing = _launches_without_work(trace, t)
    if missing is not None:
        problems.append(missing.problem(trace))
        if t.n_gpu:          # no GPU activity at all: the verdict says gpu-not-recorded already
            unknown.update(dict.fromkeys(missing.per_step, "launch calls whose kernels are not in the trace"))
    if (p := _work_without_launch(t)) is not None:
        problems.append(p)
    if (p := _clock(trace, t)) is not None:
        problems.append(p)
    incomplete = _incomplete_steps(trace, t, missing)
    if incomplete:
        names = ", ".join(trace.steps[i].name for i in incomplete)
        problems.append(Problem(kind="steps_incomplete", count=len(incomplete),
                                detail=f"GPU work of {names} runs past the trace's end: the step's GPU figures are partial"))
        unknown.update(dict.fromkeys(incomplete, "its GPU work runs past the trace's end"))
    whole = bool(cut) or (missing is not None and t.n_gpu > 0)
    return Integrity(problems, _notes(trace, t), bool(cut), unknown, whole)


def verdict_unknown(trace: Trace, step: int | None) -> bool:
    """Whether the verdict of step `step` (a Step.index; None or -1: all steps, or the whole trace when it has
    no steps) rests on a broken part of the trace."""
    found = integrity(trace)
    if found.all_unknown:
        return True
    if step is None or step < 0:
        return bool(found.unknown_steps) if trace.steps else found.whole_trace_unknown
    return step in found.unknown_steps


@dataclass(frozen=True)
class _Missing:
    calls: np.ndarray              # launch call rows (op ids) that launched nothing, in id order
    per_step: dict[int, int]       # step index -> such calls (steps with none left out)
    outside_steps: int
    total_launches: int
    cuda: int | None

    def problem(self, trace: Trace) -> Problem:
        n = len(self.calls)
        detail = f"{n:,} of {self.total_launches:,} kernel launch calls have no kernel in the trace"
        if trace.columns.n_gpu == 0:
            detail += " (it holds no GPU activity at all: the device side was not recorded)"
        elif self.per_step:
            steps = sorted(self.per_step)
            shown = ", ".join(f"{trace.steps[i].name} {self.per_step[i]:,}" for i in steps[:6])
            detail += f"; per step: {shown}" + (" …" if len(steps) > 6 else "")
            if steps == [0] and len(trace.steps) > 1 and (self.cuda is None or self.cuda < _CUDA_FIXED):
                detail += f". Only the first step lost kernels: {FIRST_STEP_LOSS}"
        if self.outside_steps:
            detail += f"; {self.outside_steps:,} outside every step"
        return Problem(kind="launches_without_device_work", count=n, detail=detail)


def _launch_rows(trace: Trace, t: TraceColumns) -> np.ndarray:
    calls = np.flatnonzero(t.op_is(LAUNCH_CATS))
    kinds = call_kinds(trace)
    is_launch = t.names_where(lambda s: kinds.get(s) == "launch", t.op_name[calls])
    return calls[is_launch[t.op_name[calls]]] if len(calls) else calls


def _launches_without_work(trace: Trace, t: TraceColumns) -> _Missing | None:
    if graph_capture(trace) is not None:     # captured launches run no kernel by design: a note says so
        return None
    launches = _launch_rows(trace, t)
    empty = launches[np.diff(t.op_gpu_ptr)[launches] == 0]
    if not len(empty):
        return None
    steps = t.op_step[empty]
    in_step = steps[steps >= 0]
    per_step = dict(sorted(Counter(in_step.tolist()).items()))     # counted, not np.unique (numpy.ma)
    cuda = trace.meta.get("cuda_runtime_version")
    return _Missing(empty, per_step, int((steps < 0).sum()),
                    len(launches), cuda if isinstance(cuda, int) and not isinstance(cuda, bool) else None)


def _work_without_launch(t: TraceColumns) -> Problem | None:
    if not t.op_is(LAUNCH_CATS).any():          # GPU events only: nothing to link to (a note says so)
        return None
    lost = np.flatnonzero(t.gpu_launch < 0)
    if not len(lost):
        return None
    us = float(t.gpu_dur[lost].sum())
    first_host = float(t.op_ts.min()) if t.n_ops else 0.0
    early = int((t.gpu_ts[lost] < first_host).sum())
    by_name = sorted(Counter(t.gpu_name[lost].tolist()).items())            # by name id, as np.unique orders
    by_name.sort(key=lambda item: -item[1])                                  # stable: ties keep that order
    top = ", ".join(f"{t.strings[int(name)]} ×{count:,}" for name, count in by_name[:3])
    detail = (f"{len(lost):,} of {t.n_gpu:,} device ops ({us:,.1f} µs) have no launch call in the trace "
              f"({top}): in no step's own GPU work")
    if early:
        detail += f"; {early:,} start before the first host event (launched before recording began)"
    return Problem(kind="device_work_without_launch", count=len(lost), detail=detail)


def _ns_resolution(t: TraceColumns) -> bool:
    times = np.concatenate((t.op_ts[:1000], t.gpu_ts[:1000], t.gpu_dur[:1000]))
    return bool(np.any(np.rint(times) != times))


def _clock(trace: Trace, t: TraceColumns) -> Problem | None:
    parts: list[str] = []
    count = 0
    bad = int(trace.meta.get("bad_durations") or 0)
    if bad:
        parts.append(f"{bad:,} slice(s) with a negative or impossible duration (read as zero-length)")
    if _ns_resolution(t):
        zero = int((t.gpu_dur <= 0).sum())
        if zero:
            parts.append(f"{zero:,} device op(s) of zero duration")
        bad += zero
    linked = np.flatnonzero(t.gpu_launch >= 0)
    early = linked[t.gpu_ts[linked] < t.op_ts[t.gpu_launch[linked]]]
    if len(early):
        worst = float((t.op_ts[t.gpu_launch[early]] - t.gpu_ts[early]).max())
        parts.append(f"{len(early):,} device op(s) start before their launch call (by up to {worst:,.3f} µs): "
                     "the host and device clocks disagree")
    span = trace.meta.get("recording_span_us")
    outside = int(trace.meta.get("slices_outside_trace") or 0)
    if isinstance(span, list) and len(span) == 2:
        lo, hi = float(span[0]), float(span[1])
        lo, hi = lo - _TOLERANCE_US, hi + _TOLERANCE_US
        n = int(((t.op_ts < lo) | (t.op_ts + t.op_dur > hi)).sum() + ((t.gpu_ts < lo) | (t.gpu_ts + t.gpu_dur > hi)).sum())
        if n:
            parts.append(f"{n:,} slice(s) outside the profiler's own span")
        outside += n
    elif outside:
        parts.append(f"{outside:,} slice(s) with a timestamp far outside the trace (skipped)")
    count = bad + len(early) + outside
    return Problem(kind="clock", count=count, detail="; ".join(parts)) if count else None


def _incomplete_steps(trace: Trace, t: TraceColumns, missing: _Missing | None) -> list[int]:
    found: set[int] = set()
    span = trace.meta.get("recording_span_us")
    if isinstance(span, list) and len(span) == 2 and t.n_gpu:
        late = (t.gpu_ts + t.gpu_dur > float(span[1]) + _TOLERANCE_US) & (t.gpu_step >= 0)
        found.update(t.gpu_step[late].tolist())
    if missing is not None and t.n_gpu:
        launches = _launch_rows(trace, t)
        ran = launches[np.diff(t.op_gpu_ptr)[launches] > 0]
        last_ran = float(t.op_ts[ran].max()) if len(ran) else -np.inf
        tail = missing.calls[t.op_ts[missing.calls] > last_ran]
        found.update(s for s in t.op_step[tail].tolist() if s >= 0)
    return sorted(found)


def _notes(trace: Trace, t: TraceColumns) -> list[str]:
    notes: list[str] = []
    graph = t.names_where(lambda s: "GraphLaunch" in s, t.op_name)
    replayed = np.flatnonzero(t.gpu_launch >= 0)
    replayed = replayed[graph[t.op_name[t.gpu_launch[replayed]]]] if len(replayed) else replayed
    if len(replayed):
        launches = len(distinct(t.gpu_launch[replayed]))
        kernels = int(t.gpu_is((KERNEL,))[replayed].sum())
        notes.append(f"graph_replay: {kernels:,} kernel(s) ran in {launches:,} graph replay(s): they share their "
                     "graph launch's call (no launch call of their own) and record no grid, so per-kernel launch "
                     "figures and SM efficiency over them are n/a")
    capture = graph_capture(trace)
    if capture is not None:
        notes.append(f"graph_capture: {capture.line()}")
    if t.n_gpu and not t.op_is(LAUNCH_CATS).any():
        notes.append("gpu_only: the trace records no launch calls, so device work cannot be tied to steps or ops")
    if any("invalid UTF-8" in w for w in trace.warnings):
        notes.append("utf8: invalid UTF-8 in the file was replaced; names with U+FFFD are as damaged as the file")
    return notes
