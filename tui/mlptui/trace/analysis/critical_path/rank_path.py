"""What one rank's digest carries of its critical path, for the cross-rank pass of the ranks report.

    aligned_step(trace) -> int | None      the step every rank of a run reports: the middle one by position
    step_path(trace) -> StepPath           that step's path, with its collective kernels' starts and call keys

The aligned step is the middle of the rank's steps in order (the earlier of two middles): the ranks of one
run record the same profiler schedule, so it is the same `ProfilerStep#N` on each, and it is chosen where
the trace is read, without the other ranks. A collective kernel on the path is keyed by its place in
mlptui.trace.analysis.comms.collectives' order, which is the order of the digest's calls, so the reduce
finds its call (mlptui.trace.analysis.ranks.rank_calls) without the trace.
"""

from __future__ import annotations

from mlptui.trace.analysis.comms.collectives import collectives
from mlptui.trace.analysis.critical_path.critical_path import critical_path
from mlptui.trace.model import Trace
from mlptui.trace.reports.ranks import PathCall, StepPath


def aligned_step(trace: Trace) -> int | None:
    if not trace.steps:
        return None
    return trace.steps[(len(trace.steps) - 1) // 2].index


def step_path(trace: Trace) -> StepPath:
    p = critical_path(trace, aligned_step(trace))
    key = {c.gpu: i for i, c in enumerate(collectives(trace))}
    c = p.columns
    calls = tuple(PathCall(key[g], start + trace.origin_us, dur)
                  for kind, g, start, dur in zip(c.kind, c.gpu_id.tolist(), c.start_us.tolist(), c.dur_us.tolist(),
                                                   strict=True)
                  if kind == "kernel" and g in key)
    return StepPath(p.name, p.window_us, p.length_us, tuple(p.breakdown_us.items()), calls)
