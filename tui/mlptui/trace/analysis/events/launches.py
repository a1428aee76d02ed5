"""The host-side calls that put work on the GPU: what they are, how many, how long.

    call_kinds(trace) -> {name: kind}   by name; a call of no known kind that launched a kernel: launch
    launch_calls(trace, step=None) -> [LaunchCallStat]   one row per call name, most time first
    launches_by_op(trace, step=None) -> [OpLaunches]     per innermost launching CPU op, in time order

A "call" is a runtime or driver slice (cudaLaunchKernel, cuLaunchKernelEx, hipLaunchKernel,
cudaOccupancyMaxActiveBlocksPerMultiprocessor, cudaMemsetAsync, cudaGraphLaunch, ...), of the kinds
mlptui.trace.names.runtime_calls.classify_call tells apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.events.tables import distinct, tables, unique_ids
from mlptui.trace.model import KERNEL, LAUNCH_CATS, Trace
from mlptui.trace.names.runtime_calls import classify_call


def call_kinds(trace: Trace) -> dict[str, str]:
    """Every runtime/driver call name of `trace` and its kind: classify_call's, except that a call of no
    known kind that launched a kernel linked to it (MTIA's `runFunction - job_prep_and_submit_...`) is a
    "launch". The one rule every pane counts launches by (steps, launch calls, findings)."""
    return trace.derive(_call_kinds)


def _call_kinds(trace: Trace) -> dict[str, str]:
    t = tables(trace)
    names = distinct(t.op_name[t.op_is(LAUNCH_CATS)])
    kinds = {t.strings[i]: classify_call(t.strings[i]) for i in names.tolist()}
    calls = t.gpu_launch[t.gpu_is((KERNEL,)) & (t.gpu_launch >= 0)]
    for i in distinct(t.op_name[calls]).tolist():
        if kinds.get(t.strings[i]) == "other":
            kinds[t.strings[i]] = "launch"
    return kinds




@dataclass(frozen=True, slots=True)
class LaunchCallStat:
    name: str
    kind: str
    count: int
    total_us: float

    @property
    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0


@dataclass(frozen=True, slots=True)
class OpLaunches:
    op: int                   # innermost non-launch CPU op around the calls; -1 for calls outside any op
    calls: tuple[int, ...]    # runtime/driver Op ids it made, in time order
    kernels: tuple[int, ...]  # GpuOp ids those calls (or the op itself) launched, in time order


def _calls(trace: Trace, step: int | None) -> list[int]:
    return [op.id for op in trace.ops if op.cat in LAUNCH_CATS and (step is None or op.step == step)]


def launch_calls(trace: Trace, step: int | None = None) -> list[LaunchCallStat]:
    """Count and total time of each runtime/driver call name (in `step`, or everywhere when None)."""
    t = tables(trace)
    at = np.flatnonzero(t.op_is(LAUNCH_CATS) & (True if step is None else t.op_step == step))
    names, inverse = unique_ids(t.op_name[at], return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(names)).tolist()
    totals = np.bincount(inverse, weights=t.op_dur[at], minlength=len(names)).tolist()   # in call order, as +=
    kinds = call_kinds(trace)
    stats = [LaunchCallStat(t.strings[name], kinds[t.strings[name]], c, total)
             for name, c, total in zip(names.tolist(), counts, totals, strict=True)]
    stats.sort(key=lambda s: (-s.total_us, s.name))
    return stats


def launching_op(trace: Trace, call: int) -> int:
    """The innermost non-launch slice around runtime/driver call `call` (-1 when there is none)."""
    ops = trace.ops
    p = ops[call].parent
    while p >= 0 and ops[p].cat in LAUNCH_CATS:
        p = ops[p].parent
    return p


def launches_by_op(trace: Trace, step: int | None = None) -> list[OpLaunches]:
    calls_of: dict[int, list[int]] = {}
    for i in _calls(trace, step):
        calls_of.setdefault(launching_op(trace, i), []).append(i)
    kernels_of: dict[int, list[int]] = {}
    for g in trace.gpu:
        if step is not None and g.step != step:
            continue
        owner = g.op if g.op >= 0 else (launching_op(trace, g.launch) if g.launch >= 0 else -2)
        if owner != -2 and (owner in calls_of or g.op >= 0):
            kernels_of.setdefault(owner, []).append(g.id)
    owners = set(calls_of) | set(kernels_of)
    ops = trace.ops

    def start(o: int) -> float:
        if o >= 0:
            return ops[o].ts
        first = calls_of.get(o) or []
        return ops[first[0]].ts if first else float("inf")

    return [
        OpLaunches(o, tuple(sorted(calls_of.get(o, ()), key=lambda c: (ops[c].ts, c))),
                   tuple(sorted(kernels_of.get(o, ()), key=lambda k: (trace.gpu[k].ts, k))))
        for o in sorted(owners, key=lambda o: (start(o), o))
    ]
