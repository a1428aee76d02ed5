"""Step-time breakdown: every nanosecond of a step's window in exactly one category.

Categories, in the order of precedence the TensorBoard profiler plugin used: a moment covered by a
compute kernel (any kernel but a collective's) is "kernel" whatever else runs then; otherwise by a
memcpy "memcpy", a memset "memset", a collective (NCCL/RCCL) kernel "communication" (so communication
is collective time that overlaps no compute kernel, memcpy or memset), a CUDA runtime/driver call on
the host "runtime", a DataLoader `__next__` (or DataPipe) op "dataloader", any other CPU op, annotation
or Python frame "cpu_exec"; a moment none of these covers is "other". Kernels, memcpys and memsets
count on any device and stream; host categories on any thread. The steps' own `ProfilerStep#N`
annotations cover everything and are left out.

A step's window is the one mlptui.trace.analysis.steps.steps uses: from the step's start to the later of its
end and the end of the GPU work it launched. A trace without steps is one window over all its events.
The categories of a window sum to its length exactly (integer nanoseconds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.comms.collectives import is_comm_kernel
from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.analysis.events.timeline_segments import Segments, to_ns
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, MEMCPY, MEMSET, PYTHON, Trace
from mlptui.trace.parse.index import STEP_PREFIX

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
_HOST_CATS = frozenset({CPU_OP, ANNOTATION, PYTHON})


@dataclass(frozen=True)
class Window:
    name: str
    index: int          # Step.index, -1 for a trace without steps
    start_ns: int
    end_ns: int

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


def is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or \
        name.startswith("enumerate(DataPipe)#")


def step_windows(trace: Trace) -> list[Window]:
    """Each step's window (see the module docstring), or one window over the whole trace."""
    t = tables(trace)
    if trace.steps:
        gpu_end = np.full(len(trace.steps), -np.inf)
        launched = t.gpu_step >= 0
        np.maximum.at(gpu_end, t.gpu_step[launched], (t.gpu_ts + t.gpu_dur)[launched])
        out = []
        for s, last in zip(trace.steps, gpu_end.tolist(), strict=True):
            end = max(s.ts + s.dur, last)
            out.append(Window(s.name, s.index, int(to_ns([s.ts])[0]), int(to_ns([end])[0])))
        return out
    if not t.n_ops and not t.n_gpu:
        return [Window("whole trace", -1, 0, 0)]
    start = min(t.op_ts.min(initial=np.inf), t.gpu_ts.min(initial=np.inf))
    end = max((t.op_ts + t.op_dur).max(initial=-np.inf), (t.gpu_ts + t.gpu_dur).max(initial=-np.inf))
    return [Window("whole trace", -1, int(to_ns([start])[0]), int(to_ns([end])[0]))]


Spans = dict[str, tuple[np.ndarray, np.ndarray]]


def scope_label(trace: Trace, step: int | None) -> str:
    """What a scope is called: one step's name, every step, or the whole trace (no steps)."""
    if step is not None:
        return trace.steps[step].name
    return "whole trace" if not trace.steps else f"all {len(trace.steps)} steps"


def scope_window_us(trace: Trace, step: int | None) -> tuple[float, float] | None:
    """The step's window in µs (see step_windows); None for every step or the whole trace."""
    if step is None:
        return None
    w = next(w for w in step_windows(trace) if w.index == step)
    return (w.start_ns / 1000, w.end_ns / 1000)


def category_intervals(trace: Trace) -> Spans:
    """(starts, ends) in ns of everything that can claim time, per category (not yet de-overlapped; host
    slices inside a parent slice of the same category are left out, as they add no time to it)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    t = tables(trace)
    gpu_end = t.gpu_ts + t.gpu_dur                       # GpuOp.end
    for cat, key in ((MEMCPY, "memcpy"), (MEMSET, "memset")):
        pick = t.gpu_cat == t.string_id(cat)
        out[key] = (to_ns(t.gpu_ts[pick]), to_ns(gpu_end[pick]))
    kernel = t.gpu_cat == t.string_id(KERNEL)
    names, inverse = unique_ids(t.gpu_name, return_inverse=True)     # names repeat: each is judged once
    comm_name = np.fromiter((is_comm_kernel(t.strings[i]) for i in names.tolist()), dtype=bool, count=len(names))
    comm = kernel & comm_name[inverse.reshape(-1)] if t.n_gpu else kernel
    for key, pick in (("kernel", kernel & ~comm), ("communication", comm)):
        out[key] = (to_ns(t.gpu_ts[pick]), to_ns(gpu_end[pick]))
    # Each op's category, decided once per distinct (category, name): names repeat across steps.
    pairs, inverse = unique_ids(t.op_cat * len(t.strings) + t.op_name, return_inverse=True)
    kinds = [_host_kind(t.strings[p // len(t.strings)], t.strings[p % len(t.strings)]) for p in pairs.tolist()]
    codes = np.asarray(kinds, dtype=np.int8)[inverse.reshape(-1)] if t.n_ops else np.zeros(0, dtype=np.int8)
    step_ops = {s.op for s in trace.steps}
    if step_ops:       # a step's own annotation claims nothing (a runtime call would still count)
        ids = np.fromiter(step_ops, dtype=np.int64, count=len(step_ops))
        codes[ids] = np.where(codes[ids] == 0, 0, _SKIP)
    end = t.op_ts + t.op_dur                              # Op.end
    # A slice inside its parent of the same category covers nothing more: left out, the segments are fewer.
    parent = np.maximum(t.op_parent, 0)
    inside = (t.op_parent >= 0) & (codes == codes[parent]) & (t.op_ts >= t.op_ts[parent]) & (end <= end[parent])
    for code, key in enumerate(("runtime", "dataloader", "cpu_exec")):
        pick = (codes == code) & ~inside
        out[key] = (to_ns(t.op_ts[pick]), to_ns(end[pick]))
    return {c: out[c] for c in CATEGORIES[:-1]}


_SKIP = 3          # not a host category, or a step's own annotation


def _host_kind(cat: str, name: str) -> int:
    """0 runtime, 1 dataloader, 2 cpu_exec, _SKIP for what claims no host time."""
    if cat in LAUNCH_CATS:
        return 0
    if cat in _HOST_CATS and not name.startswith(STEP_PREFIX):
        return 1 if is_dataloader(name) else 2
    return _SKIP


def breakdown(trace: Trace, windows: list[Window] | None = None, spans: Spans | None = None) -> list[dict[str, int]]:
    """Per window, ns per category (CATEGORIES order); each dict sums to the window's length. `spans`:
    category_intervals(trace), when the caller keeps it for several calls."""
    windows = step_windows(trace) if windows is None else windows
    spans = category_intervals(trace) if spans is None else spans
    w_starts = np.asarray([w.start_ns for w in windows], dtype=np.int64)
    w_ends = np.asarray([w.end_ns for w in windows], dtype=np.int64)
    seg = Segments.of(w_starts, w_ends, *[a for pair in spans.values() for a in pair])
    owner = np.full(len(seg.bounds) - 1, -1, dtype=np.int64)
    for k, c in enumerate(CATEGORIES[:-1]):
        covered = seg.depth(*spans[c]) > 0
        owner[covered & (owner < 0)] = k
    lengths = seg.lengths
    prefixes = [seg.prefix(np.where(owner == k, lengths, 0)) for k in range(len(CATEGORIES) - 1)]
    sums = [seg.window_sums(p, w_starts, w_ends) for p in prefixes]
    out = []
    for k, w in enumerate(windows):
        row = {c: int(sums[i][k]) for i, c in enumerate(CATEGORIES[:-1])}
        row["other"] = w.dur_ns - sum(row.values())
        out.append(row)
    return out
