"""Each rank's critical path of its aligned step, with the time its on-path collective kernels spent
waiting for the last rank counted as such: a second pass over the digests, after the calls are matched.

    rank_paths(digests, calls, shared) -> RanksCriticalPath | None     None: no digest carries a path

One rank's trace counts a collective kernel on its path as device work with its measured duration
(mlptui.trace.analysis.critical_path). Across ranks sharing a clock the kernel's start is its rank's
arrival, and the data moves only once the last rank's matching kernel has started: the part of the on-path
kernel before that start (clipped to the kernel's time on the path) is `sync_wait`, waiting on the
straggler, and only the rest `kernel`. The path's length is unchanged, time only moves between the two
kinds. Without a shared clock the starts cannot be compared: the single-rank counting is kept, and said.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlptui.trace.analysis.ranks.rank_calls import Call
from mlptui.trace.analysis.ranks.rank_digest import RankDigest
from mlptui.trace.reports.ranks import PathCollective, RankPath, RanksCriticalPath

KERNEL, SYNC_WAIT = "kernel", "sync_wait"
SHARED = ("the ranks share a clock: an on-path collective kernel waits on the other ranks (sync_wait) until the "
          "last rank's matching kernel starts, and only the rest is kernel time")
NOT_SHARED = ("kernel starts cannot be compared across ranks (one rank, or no clock known to be shared): on-path "
              "collective kernels count as kernel time with their measured duration, as on one rank")


def _r(x: float) -> float:
    return round(x, 3) + 0.0        # + 0.0: never a negative zero


def _rank_path(d: RankDigest, by_index: dict[int, Call], shared: bool) -> RankPath | None:
    path = d.path
    if path is None:
        return None
    rows: list[PathCollective] = []
    waited = 0.0
    for pc in path.calls:
        call = by_index.get(pc.call)
        wait: float | None = None
        last: int | None = None
        if call is not None and call.matched and shared:
            wait = min(max(max(call.starts.values()) - pc.ts, 0.0), pc.dur)
            waited += wait
            last = call.last_rank
        rec = d.calls[pc.call]
        rows.append(PathCollective(collective=rec.collective, bytes=rec.bytes,
                                   index=call.index if call is not None else 0, seq=rec.seq, dur_us=_r(pc.dur),
                                   wait_us=None if wait is None else _r(wait), last_rank=last))
    breakdown = dict(path.breakdown_us)
    if waited > 0:
        breakdown[KERNEL] = breakdown.get(KERNEL, 0.0) - waited
        breakdown[SYNC_WAIT] = breakdown.get(SYNC_WAIT, 0.0) + waited
    return RankPath(rank=d.rank, step=path.step, length_us=_r(path.length_us), window_us=_r(path.window_us),
                    breakdown_us={k: _r(us) for k, us in breakdown.items()},
                    rank_wait_us=_r(waited) if shared else None, collectives=rows)


def rank_paths(digests: Sequence[RankDigest], calls: Sequence[Call], shared: bool) -> RanksCriticalPath | None:
    if all(d.path is None for d in digests):
        return None
    ranks = []
    for d in sorted(digests, key=lambda d: d.rank):
        by_index = {c.at[d.rank]: c for c in calls if d.rank in c.at}
        row = _rank_path(d, by_index, shared)
        if row is not None:
            ranks.append(row)
    if shared:
        return RanksCriticalPath(counting="last arrival", why=SHARED, ranks=ranks)
    return RanksCriticalPath(counting="measured duration", why=NOT_SHARED, ranks=ranks)
