"""Timeline lanes: each CPU thread (top-level ops), its launch calls, each GPU stream and, under a stream, the
host's synchronisations on it, as a sorted array of busy intervals with a running sum, so the busy time of
any slice is two binary searches (numpy). Hardware counters get a lane per GPU and metric whose "busy"
share at each moment is the metric's value (a percentage over 100, else over the metric's largest value)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.model import CPU_OP, LAUNCH_CATS, SYNC_TID_OFFSET, Trace

LABEL = 11   # characters of a lane's label


@dataclass
class Lane:
    label: str
    kind: str              # "cpu", "launch", "gpu", "sync" or "counter"
    key: tuple[int, int]   # (pid, tid) for CPU lanes, (device, stream) for GPU lanes, (device, stream + 1e6) syncs
    starts: np.ndarray
    durs: np.ndarray
    cum: np.ndarray        # cum[i] = busy time before interval i
    ids: np.ndarray        # int64: the Op id (CPU and launch lanes; sync lanes: the call that waited, -1 when
                           # none is linked) or GpuOp id (GPU lanes) of interval i

    @classmethod
    def of(cls, label: str, kind: str, key: tuple[int, int], spans: list[tuple[float, float, int]]) -> Lane:
        spans.sort()
        starts = np.fromiter((s for s, _, _ in spans), float, len(spans))
        durs = np.fromiter((d for _, d, _ in spans), float, len(spans))
        ids = np.fromiter((i for _, _, i in spans), np.int64, len(spans))
        if len(starts) > 1:   # clip overlaps so the busy function stays monotone
            durs = np.minimum(durs, np.maximum(0.0, np.append(starts[1:], np.inf) - starts))
        cum = np.concatenate(([0.0], np.cumsum(durs)))
        return cls(label, kind, key, starts, durs, cum, ids)

    def at_or_after(self, t: float) -> int:
        """The first interval starting at or after `t` (len when none)."""
        return int(np.searchsorted(self.starts, t, side="left"))

    def nearest(self, t: float) -> int:
        """The interval that holds `t`, else the one starting nearest to it; -1 for an empty lane."""
        n = len(self.starts)
        if not n:
            return -1
        i = int(np.searchsorted(self.starts, t, side="right")) - 1
        if i >= 0 and t <= self.starts[i] + self.durs[i]:
            return i
        after = i + 1
        if i < 0:
            return 0
        if after >= n:
            return i
        return i if t - (self.starts[i] + self.durs[i]) <= self.starts[after] - t else after

    def wide(self, start: float, end: float, min_us: float) -> np.ndarray:
        """The intervals in [start, end) at least `min_us` long (those wide enough to carry a name)."""
        lo = max(int(np.searchsorted(self.starts, start, side="right")) - 1, 0)
        hi = int(np.searchsorted(self.starts, end, side="left"))
        at = np.arange(lo, hi)
        return at[self.durs[lo:hi] >= min_us]

    def busy(self, t: np.ndarray) -> np.ndarray:
        """Busy µs in this lane before each instant of `t`."""
        if len(self.starts) == 0:
            return np.zeros_like(t)
        i = np.searchsorted(self.starts, t, side="right") - 1
        safe = np.maximum(i, 0)
        inside = np.clip(t - self.starts[safe], 0.0, self.durs[safe])
        return np.where(i >= 0, self.cum[safe] + inside, 0.0)


@dataclass
class CounterLane(Lane):
    """One hardware-counter metric: sample i holds `values[i]` from `starts[i]` for `durs[i]` (to the next
    sample); the lane's busy time is the integral of value ÷ `scale`, so a cell's shade is the metric's mean
    level there. Its samples carry no event to select (ids -1) and no names."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale: float = 100.0

    @classmethod
    def of_samples(cls, label: str, key: tuple[int, int], samples: list[tuple[float, float]],
                   percent: bool) -> CounterLane:
        starts = np.fromiter((t for t, _ in samples), float, len(samples))
        values = np.fromiter((v for _, v in samples), float, len(samples))
        gaps = np.diff(starts)
        last = float(np.median(gaps)) if len(gaps) else 0.0      # the last sample holds one usual interval
        durs = np.append(gaps, last)
        top = float(values.max()) if len(values) else 0.0
        scale = 100.0 if percent else (top if top > 0 else 1.0)
        level = np.clip(values / scale, 0.0, 1.0)
        cum = np.concatenate(([0.0], np.cumsum(durs * level)))
        return cls(label, "counter", key, starts, durs, cum, np.full(len(samples), -1, dtype=np.int64), values,
                   scale)

    def wide(self, start: float, end: float, min_us: float) -> np.ndarray:
        return np.zeros(0, dtype=np.int64)

    def busy(self, t: np.ndarray) -> np.ndarray:
        if len(self.starts) == 0:
            return np.zeros_like(t)
        i = np.searchsorted(self.starts, t, side="right") - 1
        safe = np.maximum(i, 0)
        level = np.clip(self.values[safe] / self.scale, 0.0, 1.0)
        inside = np.clip(t - self.starts[safe], 0.0, self.durs[safe]) * level
        return np.where(i >= 0, self.cum[safe] + inside, 0.0)


def counter_lanes(trace: Trace) -> list[Lane]:
    """A lane per (GPU, metric) of the trace's hardware-counter samples."""
    from mlptui.trace.analysis.steps.device_marks import counter_samples

    if not any(m.kind == "counter" for m in trace.marks):
        return []
    lanes: list[Lane] = []
    for n, ((device, metric), samples) in enumerate(sorted(trace.derive(counter_samples).items())):
        lanes.append(CounterLane.of_samples(f"  {metric}"[:LABEL], (device, -1 - n), samples, "pct" in metric))
    return lanes


def build_lanes(trace: Trace) -> list[Lane]:
    """The lanes of a trace (run once per trace, off the UI thread)."""
    cpu: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    launch: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    ops = trace.ops
    for op in ops:
        if op.cat == CPU_OP and (op.parent < 0 or ops[op.parent].cat != CPU_OP):
            cpu.setdefault((op.pid, op.tid), []).append((op.ts, op.dur, op.id))
        elif op.cat in LAUNCH_CATS:
            launch.setdefault((op.pid, op.tid), []).append((op.ts, op.dur, op.id))
    gpu: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for g in trace.gpu:
        gpu.setdefault((g.device, g.stream), []).append((g.ts, g.dur, g.id))
    lanes: list[Lane] = []
    for thread in trace.threads:
        key = (thread.pid, thread.tid)
        if key in cpu or key in launch:
            lanes.append(Lane.of(f"CPU {thread.tid}"[:LABEL], "cpu", key, cpu.get(key, [])))
            if key in launch:
                lanes.append(Lane.of("  launches", "launch", key, launch[key]))
    processes = trace.meta.get("process_names") or {}
    syncs = sync_spans(trace)
    for stream in trace.streams:
        key = (stream.device, stream.stream)
        if key in gpu:
            # an accelerator that names itself (MTIA) is not called a GPU
            device = "MTIA" if str(processes.get(str(stream.device), "")).startswith("MTIA") else "GPU"
            lanes.append(Lane.of(f"{device}{stream.device} s{stream.stream}"[:LABEL], "gpu", key, gpu[key]))
        if key in syncs:
            lanes.append(Lane.of("  syncs", "sync", (key[0], key[1] + SYNC_TID_OFFSET), syncs.pop(key)))
    for key, spans in syncs.items():            # syncs on a stream that ran no recorded work
        lanes.append(Lane.of(f"GPU{key[0]} s{key[1]} sync"[:LABEL], "sync", (key[0], key[1] + SYNC_TID_OFFSET),
                             spans))
    return lanes + counter_lanes(trace)


def sync_spans(trace: Trace) -> dict[tuple[int, int], list[tuple[float, float, int]]]:
    """Per (device, stream): its synchronisations as (start, duration, the Op id of the runtime call that
    waited — matched by correlation — or -1)."""
    marks = [m for m in trace.marks if m.kind == "sync"]
    if not marks:
        return {}
    calls = {op.correlation: op.id for op in trace.ops if op.cat in LAUNCH_CATS and op.correlation is not None}
    out: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for m in marks:
        corr = trace.args(m.event).get("correlation")
        call = calls.get(corr, -1) if isinstance(corr, int) else -1
        out.setdefault((m.device, m.lane), []).append((m.ts, m.dur, call))
    return out
