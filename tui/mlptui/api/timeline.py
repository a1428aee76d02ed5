"""The events of a time window, per lane: CPU slices on their thread's lane, GPU work on its stream's.
Times are µs from the trace's first CPU or GPU slice, as the app's timeline and every report count them."""

from __future__ import annotations

import numpy as np

from mlptui.api.rows import TimelineRow
from mlptui.base.errors import MlptuiError
from mlptui.trace.analysis.events.tables import tables
from mlptui.trace.model import Trace


def _overlaps(ts: np.ndarray, dur: np.ndarray, start: float, end: float) -> np.ndarray:
    """Slices that overlap [start, end); an instant (no duration) counts where it falls."""
    return (ts < end) & ((ts + dur > start) | ((dur <= 0) & (ts >= start)))


def lane_names(trace: Trace) -> list[str]:
    t = tables(trace)
    cpu = sorted({(int(p), int(q)) for p, q in zip(t.op_pid.tolist(), t.op_tid.tolist(), strict=True)})
    gpu = sorted({(int(d), int(s)) for d, s in zip(t.gpu_device.tolist(), t.gpu_stream.tolist(), strict=True)})
    return [f"cpu {p}/{q}" for p, q in cpu] + [f"gpu {d}/{s}" for d, s in gpu]


def window(trace: Trace, start_us: float, end_us: float, lanes: list[str] | None = None) -> list[TimelineRow]:
    """Every CPU slice and GPU op overlapping [start_us, end_us), by start time; `lanes` keeps only those
    lanes ("cpu PID/TID", "gpu DEVICE/STREAM", or "cpu" / "gpu" for every lane of that kind)."""
    if not end_us > start_us:
        raise MlptuiError(f"the window's end ({end_us} µs) must come after its start ({start_us} µs)")
    known = lane_names(trace)
    wanted = set(lanes or [])
    unknown = sorted(w for w in wanted if w not in known and w not in ("cpu", "gpu"))
    if unknown:
        raise MlptuiError(f"no lane {unknown[0]!r} in {trace.source} (lanes: {', '.join(known) or 'none'})")
    t = tables(trace)
    names = t.strings
    rows: list[TimelineRow] = []
    for i in np.flatnonzero(_overlaps(t.op_ts, t.op_dur, start_us, end_us)).tolist():
        lane = f"cpu {int(t.op_pid[i])}/{int(t.op_tid[i])}"
        if not wanted or lane in wanted or "cpu" in wanted:
            rows.append(TimelineRow(lane=lane, kind="cpu", name=names[t.op_name[i]], cat=names[t.op_cat[i]],
                                    ts_us=round(float(t.op_ts[i]), 3), dur_us=round(float(t.op_dur[i]), 3),
                                    depth=int(t.op_depth[i])))
    for i in np.flatnonzero(_overlaps(t.gpu_ts, t.gpu_dur, start_us, end_us)).tolist():
        lane = f"gpu {int(t.gpu_device[i])}/{int(t.gpu_stream[i])}"
        if not wanted or lane in wanted or "gpu" in wanted:
            rows.append(TimelineRow(lane=lane, kind="gpu", name=names[t.gpu_name[i]], cat=names[t.gpu_cat[i]],
                                    ts_us=round(float(t.gpu_ts[i]), 3), dur_us=round(float(t.gpu_dur[i]), 3),
                                    depth=0))
    rows.sort(key=lambda r: (r.ts_us, r.kind, r.lane, r.depth))
    return rows
