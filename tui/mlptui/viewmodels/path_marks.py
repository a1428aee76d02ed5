"""Where a step's critical path lies on the timeline's lanes, and which event each segment is.

    path_spans(trace, path) -> {(lane kind, lane key): (starts, ends)}
    segment_event(trace, segment) -> (event kind, id, lane kind, lane key) | None

A segment owned by a CPU slice lies on its thread: a runtime or driver call's on the thread's launches
lane, any other slice's on its CPU lane (which draws the top-level ops: a nested op's time lights its
top-level op's columns). A segment owned by a device op (its run, the stream's idle gap before it, its wait
on another stream) lies on its stream. A segment no event owns (time before a thread's first slice,
or between slices) is on no lane.
"""

from __future__ import annotations

import numpy as np

from mlptui.trace.analysis.critical_path.critical_path import CriticalPath, Segment
from mlptui.trace.model import LAUNCH_CATS, Trace


def segment_event(trace: Trace, s: Segment) -> tuple[str, int, str, tuple[int, int]] | None:
    t = trace.columns
    if s.gpu_id >= 0:
        return "gpu", s.gpu_id, "gpu", (int(t.gpu_device[s.gpu_id]), int(t.gpu_stream[s.gpu_id]))
    if s.op_id >= 0:
        lane = "launch" if bool(t.op_is(LAUNCH_CATS)[s.op_id]) else "cpu"
        return "op", s.op_id, lane, (int(t.op_pid[s.op_id]), int(t.op_tid[s.op_id]))
    return None


def path_spans(trace: Trace, path: CriticalPath) -> dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]]:
    t = trace.columns
    cols = path.columns
    start = np.asarray(cols.start_us, dtype=np.float64)
    end = start + np.asarray(cols.dur_us, dtype=np.float64)
    gpu = np.asarray(cols.gpu_id, dtype=np.int64)
    op = np.asarray(cols.op_id, dtype=np.int64)
    out: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] = {}
    on_gpu = np.flatnonzero(gpu >= 0)
    _group(out, "gpu", t.gpu_device[gpu[on_gpu]], t.gpu_stream[gpu[on_gpu]], on_gpu, start, end)
    on_cpu = np.flatnonzero((gpu < 0) & (op >= 0))
    calls = t.op_is(LAUNCH_CATS)[op[on_cpu]]
    for kind, mine in (("launch", on_cpu[calls]), ("cpu", on_cpu[~calls])):
        _group(out, kind, t.op_pid[op[mine]], t.op_tid[op[mine]], mine, start, end)
    return out


def _group(out: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]], kind: str, first: np.ndarray,
           second: np.ndarray, at: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    """The segments `at`, by lane key (first, second), in path order."""
    if not len(at):
        return
    keys, which = np.unique(np.stack([first, second], axis=1), axis=0, return_inverse=True)
    which = which.reshape(-1)
    order = np.argsort(which, kind="stable")
    cuts = np.searchsorted(which[order], np.arange(1, len(keys)))
    for key, rows in zip(keys.tolist(), np.split(at[order], cuts), strict=True):
        out[(kind, (int(key[0]), int(key[1])))] = (start[rows], end[rows])
