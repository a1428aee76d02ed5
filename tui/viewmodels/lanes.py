"""Timeline lanes: each CPU thread (top-level ops), its launch calls and each GPU stream as a sorted array
of busy intervals with a running sum, so the busy time of any slice is two binary searches (numpy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.model import CPU_OP, LAUNCH_CATS, Trace

LABEL = 11   # characters of a lane's label


@dataclass
class Lane:
    label: str
    kind: str              # "cpu", "launch" or "gpu"
    key: tuple[int, int]   # (pid, tid) for CPU lanes, (device, stream) for GPU lanes
    starts: np.ndarray
    durs: np.ndarray
    cum: np.ndarray        # cum[i] = busy time before interval i

    @classmethod
    def of(cls, label: str, kind: str, key: tuple[int, int], spans: list[tuple[float, float]]) -> Lane:
        spans.sort()
        starts = np.fromiter((s for s, _ in spans), float, len(spans))
        durs = np.fromiter((d for _, d in spans), float, len(spans))
        if len(starts) > 1:   # clip overlaps so the busy function stays monotone
            durs = np.minimum(durs, np.maximum(0.0, np.append(starts[1:], np.inf) - starts))
        cum = np.concatenate(([0.0], np.cumsum(durs)))
        return cls(label, kind, key, starts, durs, cum)

    def busy(self, t: np.ndarray) -> np.ndarray:
        """Busy µs in this lane before each instant of `t`."""
        if len(self.starts) == 0:
            return np.zeros_like(t)
        i = np.searchsorted(self.starts, t, side="right") - 1
        safe = np.maximum(i, 0)
        inside = np.clip(t - self.starts[safe], 0.0, self.durs[safe])
        return np.where(i >= 0, self.cum[safe] + inside, 0.0)


def build_lanes(trace: Trace) -> list[Lane]:
    """The lanes of a trace (run once per trace, off the UI thread)."""
    cpu: dict[tuple[int, int], list[tuple[float, float]]] = {}
    launch: dict[tuple[int, int], list[tuple[float, float]]] = {}
    ops = trace.ops
    for op in ops:
        if op.cat == CPU_OP and (op.parent < 0 or ops[op.parent].cat != CPU_OP):
            cpu.setdefault((op.pid, op.tid), []).append((op.ts, op.dur))
        elif op.cat in LAUNCH_CATS:
            launch.setdefault((op.pid, op.tid), []).append((op.ts, op.dur))
    gpu: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for g in trace.gpu:
        gpu.setdefault((g.device, g.stream), []).append((g.ts, g.dur))
    lanes: list[Lane] = []
    for thread in trace.threads:
        key = (thread.pid, thread.tid)
        if key in cpu or key in launch:
            lanes.append(Lane.of(f"CPU {thread.tid}"[:LABEL], "cpu", key, cpu.get(key, [])))
            if key in launch:
                lanes.append(Lane.of("  launches", "launch", key, launch[key]))
    for stream in trace.streams:
        key = (stream.device, stream.stream)
        if key in gpu:
            lanes.append(Lane.of(f"GPU{stream.device} s{stream.stream}"[:LABEL], "gpu", key, gpu[key]))
    return lanes
