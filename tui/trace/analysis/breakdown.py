"""Step-time breakdown: every nanosecond of a step's window in exactly one category.

Categories, in the order of precedence the TensorBoard profiler plugin used: a moment covered by a
kernel is "kernel" whatever else runs then; otherwise by a memcpy "memcpy", a memset "memset", a CUDA
runtime/driver call on the host "runtime", a DataLoader `__next__` (or DataPipe) op "dataloader", any
other CPU op, annotation or Python frame "cpu_exec"; a moment none of these covers is "other". Kernels,
memcpys and memsets count on any device and stream; host categories on any thread. The steps' own
`ProfilerStep#N` annotations cover everything and are left out.

A step's window is the one mlptui.trace.analysis.steps uses: from the step's start to the later of its
end and the end of the GPU work it launched. A trace without steps is one window over all its events.
The categories of a window sum to its length exactly (integer nanoseconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from mlptui.trace.analysis.timeline_segments import Segments, to_ns
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, MEMCPY, MEMSET, PYTHON, Trace
from mlptui.trace.parse.index import STEP_PREFIX

CATEGORIES = ("kernel", "memcpy", "memset", "runtime", "dataloader", "cpu_exec", "other")
_HOST_CATS = frozenset({CPU_OP, ANNOTATION, PYTHON})
_CAT, _TS, _DUR = attrgetter("cat"), attrgetter("ts"), attrgetter("dur")
_CAT_NAME = attrgetter("cat", "name")


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
    if trace.steps:
        gpu_end: dict[int, float] = {}
        for g in trace.gpu:
            if g.step >= 0 and g.end > gpu_end.get(g.step, -np.inf):
                gpu_end[g.step] = g.end
        out = []
        for s in trace.steps:
            end = max(s.ts + s.dur, gpu_end.get(s.index, -np.inf))
            out.append(Window(s.name, s.index, int(to_ns([s.ts])[0]), int(to_ns([end])[0])))
        return out
    starts = [op.ts for op in trace.ops] + [g.ts for g in trace.gpu]
    ends = [op.end for op in trace.ops] + [g.end for g in trace.gpu]
    if not starts:
        return [Window("whole trace", -1, 0, 0)]
    return [Window("whole trace", -1, int(to_ns([min(starts)])[0]), int(to_ns([max(ends)])[0]))]


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
    """(starts, ends) in ns of everything that can claim time, per category (not yet de-overlapped)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    gpu = trace.gpu
    gpu_cats = np.asarray(list(map(_CAT, gpu)), dtype=object)
    gpu_ts = np.fromiter(map(_TS, gpu), dtype=np.float64, count=len(gpu))
    gpu_end = gpu_ts + np.fromiter(map(_DUR, gpu), dtype=np.float64, count=len(gpu))   # GpuOp.end
    for cat, key in ((KERNEL, "kernel"), (MEMCPY, "memcpy"), (MEMSET, "memset")):
        pick = gpu_cats == cat
        out[key] = (to_ns(gpu_ts[pick]), to_ns(gpu_end[pick]))
    # Each op's category, decided once per distinct (category, name): names repeat across steps.
    step_ops = {s.op for s in trace.steps}
    kind: dict[tuple[str, str], int] = {}
    codes = np.fromiter((kind[k] if k in kind else kind.setdefault(k, _host_kind(*k))
                         for k in map(_CAT_NAME, trace.ops)), dtype=np.int8,
                        count=len(trace.ops))
    if step_ops:       # a step's own annotation claims nothing (a runtime call would still count)
        ids = np.fromiter(step_ops, dtype=np.int64, count=len(step_ops))
        codes[ids] = np.where(codes[ids] == 0, 0, _SKIP)
    ops = trace.ops
    ts = np.fromiter(map(_TS, ops), dtype=np.float64, count=len(ops))
    end = ts + np.fromiter(map(_DUR, ops), dtype=np.float64, count=len(ops))      # Op.end
    for code, key in enumerate(("runtime", "dataloader", "cpu_exec")):
        pick = codes == code
        out[key] = (to_ns(ts[pick]), to_ns(end[pick]))
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
    out = []
    for w in windows:
        row = {c: int(seg.window_sum(prefixes[k], w.start_ns, w.end_ns)) for k, c in enumerate(CATEGORIES[:-1])}
        row["other"] = w.dur_ns - sum(row.values())
        out.append(row)
    return out
