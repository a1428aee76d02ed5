"""Synchronisations on streams and hardware-counter samples (mlptui.trace.model.DeviceMark), as figures.

- `stream_syncs`: per stream, the synchronisations recorded on it (Kineto's "Stream Sync" — the host
  blocked in cudaStreamSynchronize until the stream drained — and other `cuda_sync` kinds): count and
  total time. A sync is time the host waited on the stream; it is neither GPU work nor a stream of its own
  (Kineto ≥ 2026-04 writes it on a virtual tid = stream + 1,000,000, read back as the stream).
- `counter_rows`: per GPU and metric, the CUPTI PM-sampling samples (`ph: "C"`, cat `hardware_counters`):
  how many, their first and last time, and the smallest, mean and largest value, all measured.
- `measured_figures`: the mean of the samples inside a window for the metrics that measure what the
  overview otherwise estimates — achieved occupancy (`sm__warps_active.avg.pct_of_peak_sustained_active`,
  Nsight Compute's own definition) and SM efficiency (`sm__cycles_active.avg.pct_of_peak_sustained_elapsed`,
  the share of elapsed cycles the SMs were active) — and SM throughput
  (`sm__throughput.avg.pct_of_peak_sustained_elapsed`), which has no estimate of its own.
"""

from __future__ import annotations

from mlptui.trace.model import DeviceMark, Trace
from mlptui.trace.reports.summary import CounterSeries, DeviceMarks, StreamSync

# metric -> the figure it measures, as a share of 1 (the metrics are percentages)
MEASURED = {"sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy",
            "sm__cycles_active.avg.pct_of_peak_sustained_elapsed": "sm_efficiency",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput"}


def _value(trace: Trace, mark: DeviceMark) -> float | None:
    """A counter sample's value: Kineto writes it as the one arg named ""."""
    value = trace.args(mark.event).get("")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def counter_samples(trace: Trace) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """(device, metric) -> [(ts, value)] in time order; samples without a number are left out."""
    out: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for m in trace.marks:
        if m.kind == "counter":
            value = _value(trace, m)
            if value is not None:
                out.setdefault((m.device, m.name), []).append((m.ts, value))
    return out


def _samples(trace: Trace) -> dict[tuple[int, str], list[tuple[float, float]]]:
    return trace.derive(counter_samples)


def counter_rows(trace: Trace) -> list[CounterSeries]:
    rows = []
    for (device, metric), samples in sorted(_samples(trace).items()):
        values = [v for _, v in samples]
        rows.append(CounterSeries(device=device, metric=metric, samples=len(samples),
                                  first_us=round(samples[0][0], 3), last_us=round(samples[-1][0], 3),
                                  min=min(values), mean=round(sum(values) / len(values), 4), max=max(values),
                                  measures=MEASURED.get(metric)))
    return rows


def measured_figures(trace: Trace, device: int | None,
                     windows: list[tuple[float, float]] | None = None) -> dict[str, float]:
    """Figure -> the mean of its metric's samples on `device` (None: any) inside any of `windows` (µs from the
    trace's origin; None: the whole trace), as a share of 1; only figures with samples there."""
    out: dict[str, float] = {}
    if not trace.marks:
        return out
    for (dev, metric), samples in _samples(trace).items():
        figure = MEASURED.get(metric)
        if figure is None or (device is not None and dev != device):
            continue
        values = [v for ts, v in samples if windows is None or any(lo <= ts <= hi for lo, hi in windows)]
        if values:
            out[figure] = round(sum(values) / len(values) / 100, 4)
    return out


def stream_syncs(trace: Trace) -> list[StreamSync]:
    """Per (device, stream, kind of sync): how many and how long, in the order first seen."""
    counts: dict[tuple[int, int, str], int] = {}
    totals: dict[tuple[int, int, str], float] = {}
    for m in trace.marks:
        if m.kind == "sync":
            key = (m.device, m.lane, m.name)
            counts[key] = counts.get(key, 0) + 1
            totals[key] = totals.get(key, 0.0) + m.dur
    return [StreamSync(device=device, stream=stream, name=name, count=n, total_us=round(totals[device, stream, name], 3))
            for (device, stream, name), n in counts.items()]


def device_marks_section(trace: Trace) -> DeviceMarks | None:
    """The `device_marks` section of `summary --json`; None when the trace has neither."""
    if not trace.marks:
        return None
    return DeviceMarks(syncs=stream_syncs(trace), counters=counter_rows(trace))
