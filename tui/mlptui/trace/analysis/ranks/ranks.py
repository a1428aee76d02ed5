"""A run of several ranks: which traces are ranks of one job, and what happened across them.

A trace's rank comes from its `distributedInfo` (rank, world_size, backend), or else from its file
name (`rank-3`, `rank_3`, `rank3`, `worker3`). A set of traces is one run when every one has a rank,
no rank appears twice and the world sizes they state agree (a single trace counts when its
`distributedInfo` says it is one rank of several): mlptui.trace.parse.rank_hint, whose `run_problem` says
in words why a set is not one.

`ranks_report(ranked)` is the `ranks` section of `mlptui summary RUN_DIR --json`, a
mlptui.trace.reports.ranks.RanksReport (each field described there); it reduces one small digest per rank
(mlptui.trace.analysis.ranks.rank_digest), which `reduce_digests` takes directly. Its `critical_path`
(mlptui.trace.analysis.ranks.rank_paths) needs each digest's path, which the digest's maker adds
(mlptui.trace.runs.rank_map, as `summary RUN_DIR` does): `ranks_report` leaves it None.

Straggler, late by and comm wait are one measurement seen from several sides
(mlptui.trace.analysis.ranks.rank_calls): the straggler of a call is the rank that arrived last, and every other
rank's wait at that call is the time between its own arrival and the straggler's. Arrival is the kernel's
start where the ranks share a clock, else inferred from the kernels' durations (labelled a proxy). Step time does not find the straggler: in
synchronous training every rank's step ends together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlptui.trace.analysis.comms.collectives import bus_factor
from mlptui.trace.analysis.ranks.rank_calls import Call, by_seq, match_calls, step_stragglers
from mlptui.trace.analysis.ranks.rank_clock import shared_clock
from mlptui.trace.analysis.ranks.rank_digest import RankDigest, comm_compute_us, rank_digest
from mlptui.trace.analysis.ranks.rank_paths import rank_paths
from mlptui.trace.model import Trace
from mlptui.trace.parse.rank_hint import RankInfo, in_rank_order, rank_from_name
from mlptui.trace.reports.ranks import CallRow, CollectiveRow, RankClock, RankRow, RanksReport, RankStep


def rank_info(trace: Trace) -> RankInfo:
    info = trace.meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        world = info.get("world_size")
        backend = info.get("backend")
        return RankInfo(info["rank"], world if isinstance(world, int) else None,
                        backend if isinstance(backend, str) else None)
    return RankInfo(rank_from_name(trace.source), None, None)


def rank_run(traces: Sequence[Trace]) -> list[tuple[int, Trace]] | None:
    """The traces as (rank, trace) in rank order when they are one run, else None."""
    return in_rank_order([rank_info(t) for t in traces], traces)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


@dataclass(frozen=True, slots=True)
class CommCompute:
    compute_us: float
    comm_us: float
    overlap_us: float

    @property
    def overlap_share(self) -> float | None:
        return self.overlap_us / self.comm_us if self.comm_us > 0 else None


def comm_compute(trace: Trace) -> CommCompute:
    """Busy time of compute and of communication kernels (each a union over all streams) and their
    overlap. Memory copies and sets count as neither."""
    return CommCompute(*comm_compute_us(trace))


def _collective_rows(d: RankDigest, calls: list[Call]) -> list[CollectiveRow]:
    """Per kind of collective on rank `d`: kernel time, the wait in it, and the bandwidth of the transfer."""
    wait_of: dict[int, float | None] = {i: None for i in range(len(d.calls))}   # None: no other rank made it
    for c in calls:
        i = c.at.get(d.rank)
        if i is not None and c.matched:
            wait_of[i] = c.wait_us(d.rank)
    groups: dict[tuple[str, str | None, int | None, int | None], list[int]] = {}
    for i, rec in enumerate(d.calls):
        groups.setdefault((rec.collective, rec.dtype, rec.bytes, rec.group_size), []).append(i)
    rows: list[CollectiveRow] = []
    for (coll, dtype, nbytes, group_size), idx in groups.items():
        total = sum(d.calls[i].dur for i in idx)
        waits = [wait_of[i] for i in idx]
        wait = None if all(w is None for w in waits) else sum(w or 0.0 for w in waits)
        transfer = total - (wait or 0.0)
        alg = nbytes * len(idx) / transfer / 1e3 if nbytes and transfer > 0 else None
        bus = None if alg is None else alg * bus_factor(coll, group_size or 1)
        rows.append(CollectiveRow(rank=d.rank, collective=coll, dtype=dtype, bytes=nbytes, group_size=group_size,
                                  count=len(idx), total_us=_r(total), wait_us=_r(wait), transfer_us=_r(transfer),
                                  algbw_gbps=_r(alg), busbw_gbps=_r(bus)))
    rows.sort(key=lambda r: -float(r.total_us or 0.0))
    return rows


def reduce_digests(digests: Sequence[RankDigest]) -> RanksReport:
    """The `ranks` section from one digest per rank (any order)."""
    ds = sorted(digests, key=lambda d: d.rank)
    world = next((d.world_size for d in ds if d.world_size), None) or len(ds)
    backend = next((d.backend for d in ds if d.backend), None)
    shared, why = shared_clock([d.host for d in ds])
    calls = match_calls(ds, shared)
    several = len(ds) >= 2
    waits = {d.rank: 0.0 for d in ds}
    lates = {d.rank: 0.0 for d in ds}
    last = {d.rank: 0 for d in ds}
    for c in calls:
        if c.matched:
            for rank in c.durs:
                waits[rank] += c.wait_us(rank)
                lates[rank] += c.late_of(rank)
            if c.last_rank is not None:
                last[c.last_rank] += 1
    rows = []
    for d in ds:
        cc = CommCompute(d.compute_us, d.comm_us, d.overlap_us)
        rows.append(RankRow(rank=d.rank, source=d.source,
                            steps=[RankStep(name=n, step_us=_r(us)) for n, us in d.steps],
                            compute_us=_r(cc.compute_us), comm_us=_r(cc.comm_us),
                            overlap_share=_r(cc.overlap_share),
                            comm_wait_us=_r(waits[d.rank]) if several else None,
                            late_us=_r(lates[d.rank]) if several else None,
                            arrived_last=last[d.rank] if several else None))
    call_rows = [CallRow(step=c.step, collective=c.record.collective, bytes=c.record.bytes,
                         group=c.record.group, index=c.index, seq=c.record.seq, last_rank=c.last_rank,
                         late_us=_r(c.late_us), transfer_us=_r(c.transfer_us),
                         late_by_rank={str(r): _r(c.late_of(r)) for r in sorted(c.durs)}) for c in calls if c.matched]
    clock = RankClock(shared=shared, arrival="start" if shared else "duration proxy", why=why,
                      matched_by="seq" if by_seq(ds) else "order")
    return RanksReport(world_size=world, backend=backend, clock=clock, ranks=rows,
                       stragglers=step_stragglers(calls), calls=call_rows,
                       collectives=[row for d in ds for row in _collective_rows(d, calls)],
                       critical_path=rank_paths(ds, calls, shared))


def ranks_report(ranked: Sequence[tuple[int, Trace]]) -> RanksReport:
    digests = []
    for rank, t in ranked:
        info = rank_info(t)
        digests.append(rank_digest(rank, t, world_size=info.world_size, backend=info.backend))
    return reduce_digests(digests)
