"""What the recorded synchronisations say each wait waited for, where the trace has them.

    recorded_waits(trace, calls, call_ts, lanes, launch_ts, window, marks) -> Recorded

Kineto writes a `cuda_sync` event (kept as a DeviceMark of kind "sync") for each synchronisation CUPTI saw,
with the correlation of the call that made it and, for event waits, the stream the event was recorded
on (`wait_on_stream`) and the correlation of the `cudaEventRecord` (`wait_on_cuda_event_record_corr_id`):

- "Stream Wait Event" (cudaStreamWaitEvent): the first device op queued on `stream` after the wait call
  waits for the last op queued on `wait_on_stream` before the event was recorded;
- "Stream Sync" (cudaStreamSynchronize): the call waits for the last op queued on `stream` before it;
- "Event Sync" (cudaEventSynchronize, and a cudaEventQuery that found the event done): the call waits
  for the last op queued on `wait_on_stream` before the event was recorded.

"Context Sync" (cudaDeviceSynchronize) names no stream: the graph's own rule applies. Traces without
these events (most before 2024, and any recorded without CUDA sync tracking) keep the graph's rules.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from mlptui.trace.model import DeviceMark, Trace


@dataclass
class Recorded:
    op_waits: dict[int, list[int]] = field(default_factory=dict)   # waiting device op -> the ops it waited for
    call_waits: dict[int, int] = field(default_factory=dict)   # blocking call (Op id) -> the op it waited for


def _int(args: dict[str, Any], key: str) -> int | None:
    v = args.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def recorded_waits(trace: Trace, calls: dict[int, int], call_ts: dict[int, float],
                   lanes: dict[tuple[int, int], list[int]], launch_ts: dict[int, float],
                   window: tuple[float, float], marks: list[DeviceMark] | None = None) -> Recorded:
    """`calls`: correlation -> Op id of the window's runtime calls; `lanes`: (device, stream) -> device
    ops in stream order; `launch_ts`: each device op's launch call start (-inf when not known); `marks`:
    the trace's syncs inside the window, when the caller has them at hand."""
    out = Recorded()
    if marks is None:
        marks = [m for m in trace.marks if m.kind == "sync" and window[0] <= m.ts <= window[1]]
    if not marks:
        return out
    queued = {lane: [launch_ts[k] for k in ops] for lane, ops in lanes.items()}

    def last_before(lane: tuple[int, int], at: float) -> int:
        ts = queued.get(lane)
        if not ts:
            return -1
        j = bisect_right(ts, at)                # stream order is launch order on one stream
        return lanes[lane][j - 1] if j > 0 else -1

    def first_after(lane: tuple[int, int], at: float) -> int:
        ts = queued.get(lane)
        if not ts:
            return -1
        j = bisect_left(ts, at)
        return lanes[lane][j] if j < len(ts) else -1

    for m in marks:
        args = trace.args(m.event)
        call = calls.get(_int(args, "correlation") or -1, -1)
        if call < 0:
            continue
        stream, on = _int(args, "stream"), _int(args, "wait_on_stream")
        record = calls.get(_int(args, "wait_on_cuda_event_record_corr_id") or -1, -1)
        if m.name == "Stream Wait Event" and stream is not None and on is not None and record >= 0:
            waited = last_before((m.device, on), call_ts[record])
            waiting = first_after((m.device, stream), call_ts[call])
            if waited >= 0 and waiting >= 0:
                out.op_waits.setdefault(waiting, []).append(waited)
        elif m.name == "Stream Sync" and stream is not None:
            waited = last_before((m.device, stream), call_ts[call])
            if waited >= 0:
                out.call_waits[call] = waited
        elif m.name == "Event Sync" and on is not None and record >= 0:
            waited = last_before((m.device, on), call_ts[record])
            if waited >= 0:
                out.call_waits[call] = waited
    return out

