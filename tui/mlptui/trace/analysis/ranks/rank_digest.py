"""What one rank contributes to the report of a run, small enough to send between processes or machines.

    rank_digest(rank, trace) -> RankDigest     computed where the trace was loaded (a worker, a Dask task)
    digest_to_dict(d) / digest_from_dict(doc)  plain JSON-able form, for the cache and the wire

A digest holds the rank's step times, its compute / communication busy time and their overlap, the host
that recorded it when known (mlptui.trace.analysis.ranks.rank_clock), and one CallRecord per collective kernel
(kind, size, start, duration, the step that launched it, NCCL's `Seq` when recorded), and, where the maker
passes it, the critical path of the rank's aligned step (mlptui.trace.analysis.critical_path.rank_path: its
figures, and each on-path collective kernel's start and call). The cross-rank
reduce (mlptui.trace.analysis.ranks.rank_calls, mlptui.trace.analysis.ranks.ranks) needs nothing else, so the
process that reduces a run never holds a whole rank.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.reports.ranks import PathCall, StepPath

# The analyses that make a digest are imported where a digest is made: a process that only reduces
# digests (or reads them from the cache) never loads them.

# Bump when a field's meaning or the way it is computed changes: cached digests of another version are
# not used.
DIGEST_VERSION = 3


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One collective kernel on one rank."""

    collective: str
    dtype: str | None
    bytes: int | None
    group_size: int | None
    group: str | None
    ts: float               # µs on the rank's own clock, as the trace wrote it (not from its first event)
    dur: float              # µs
    step: str | None        # name of the ProfilerStep that launched it (None: outside any step)
    seq: int | None = None  # NCCL's sequence number of the call in its process group, when recorded

    @property
    def kind(self) -> tuple[str, int | None, str | None]:
        """What must agree for two ranks' kernels to be one call: the collective, its size, its group."""
        return (self.collective, self.bytes, self.group)


@dataclass(frozen=True, slots=True)
class RankDigest:
    rank: int
    world_size: int | None
    backend: str | None
    source: str
    device: str | None
    steps: tuple[tuple[str, float], ...]    # (step name, step window µs)
    compute_us: float                       # union of non-communication kernels
    comm_us: float                          # union of NCCL/RCCL kernels
    overlap_us: float                       # time both run at once
    calls: tuple[CallRecord, ...]           # collective kernels in time order
    host: str | None = None                 # who recorded it (rank_clock.recording_host); None: unknown
    path: StepPath | None = None            # its aligned step's critical path; None: not computed


def step_times(trace: Trace) -> list[tuple[str, float]]:
    """Each step's window: its start to the later of its end and the end of the GPU work it launched."""
    from mlptui.trace.analysis.steps.steps import all_step_stats

    out = []
    for s in all_step_stats(trace):
        window = s.gpu_busy_us + s.gpu_idle_us if s.kernels or s.gpu_busy_us > 0 else s.cpu_us
        out.append((s.name, window))
    return out


def comm_compute_us(trace: Trace) -> tuple[float, float, float]:
    """(compute, communication, overlap) busy time: unions over all streams; copies and sets are neither."""
    from mlptui.trace.analysis.comms.collectives import is_comm_kernel
    from mlptui.trace.analysis.events import intervals

    comm: list[tuple[float, float]] = []
    compute: list[tuple[float, float]] = []
    for g in trace.gpu:
        if g.cat == KERNEL:
            (comm if is_comm_kernel(g.name) else compute).append((g.ts, g.end))
    comm_u, compute_u = intervals.merged(comm), intervals.merged(compute)
    return intervals.total(compute_u), intervals.total(comm_u), intervals.overlap(comm_u, compute_u)


def rank_digest(rank: int, trace: Trace, *, world_size: int | None = None, backend: str | None = None,
                path: StepPath | None = None) -> RankDigest:
    from mlptui.trace.analysis.comms.collectives import collectives
    from mlptui.trace.analysis.ranks.rank_clock import recording_host

    step_names = {s.index: s.name for s in trace.steps}
    calls = []
    for c in collectives(trace):
        step = step_names.get(trace.gpu[c.gpu].step)
        calls.append(CallRecord(c.collective, c.dtype, c.bytes, c.group_size, c.group, c.ts + trace.origin_us, c.dur,
                                step, c.seq))
    compute, comm, overlap = comm_compute_us(trace)
    return RankDigest(rank, world_size, backend, trace.source, trace.device_name, tuple(step_times(trace)),
                      compute, comm, overlap, tuple(calls), recording_host(trace), path)


def digest_to_dict(d: RankDigest) -> dict[str, Any]:
    doc = asdict(d)
    doc["calls"] = [list(asdict(c).values()) for c in d.calls]   # rows, not objects: 1000s of calls
    doc["steps"] = [list(s) for s in d.steps]
    if d.path is not None:
        doc["path"] = {"step": d.path.step, "window_us": d.path.window_us, "length_us": d.path.length_us,
                       "breakdown_us": [list(kv) for kv in d.path.breakdown_us],
                       "calls": [[c.call, c.ts, c.dur] for c in d.path.calls]}
    return doc


def _path_from_dict(doc: dict[str, Any] | None) -> StepPath | None:
    if doc is None:
        return None
    return StepPath(str(doc["step"]), float(doc["window_us"]), float(doc["length_us"]),
                    tuple((str(k), float(us)) for k, us in doc["breakdown_us"]),
                    tuple(PathCall(int(i), float(ts), float(dur)) for i, ts, dur in doc["calls"]))


def digest_from_dict(doc: dict[str, Any]) -> RankDigest:
    calls = tuple(CallRecord(*row) for row in doc["calls"])
    steps = tuple((str(n), float(us)) for n, us in doc["steps"])
    return RankDigest(int(doc["rank"]), doc["world_size"], doc["backend"], str(doc["source"]), doc["device"],
                      steps, float(doc["compute_us"]), float(doc["comm_us"]), float(doc["overlap_us"]), calls,
                      doc.get("host"), _path_from_dict(doc.get("path")))
