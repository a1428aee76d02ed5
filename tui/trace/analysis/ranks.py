"""A run of several ranks: which traces are ranks of one job, and what happened across them.

A trace's rank comes from its `distributedInfo` (rank, world_size, backend), or else from its file
name (`rank-3`, `rank_3`, `rank3`, `worker3`). A set of traces is one run when every one has a rank,
no rank appears twice and the world sizes they state agree (a single trace counts when its
`distributedInfo` says it is one rank of several).

`ranks_report(ranked)` is the `ranks` section of `mlptui summary RUN_DIR --json`:

    {"world_size": int, "backend": str | null,
     "ranks": [{"rank", "source",
                "steps": [{"name", "step_us"}],   # step window: start to the later of its end and its GPU work
                "compute_us",                      # union of non-communication kernels
                "comm_us",                         # union of NCCL/RCCL kernels
                "overlap_share",                   # share of comm_us during which compute kernels run (null: no comm)
                "comm_wait_us"}],                  # time in collectives spent waiting for later ranks (null: one rank)
     "stragglers": [{"step", "rank", "slower_by_us"}],   # per step on ≥ 2 ranks: the slowest, vs the fastest
     "collectives": [{"rank", "collective", "dtype", "bytes", "group_size", "count", "total_us",
                      "algbw_gbps", "busbw_gbps"}]}

comm_wait_us: the n-th collective of one kind (collective, bytes, group) on every rank is one call;
all ranks leave it together, so the shortest of its kernels is the transfer and the rest of each
rank's kernel is waiting for the last rank to arrive. Matching by kind and order needs no common clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlptui.trace.analysis import intervals
from mlptui.trace.analysis.collectives import Collective, bus_factor, collectives, is_comm_kernel
from mlptui.trace.analysis.steps import all_step_stats
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse.rank_hint import RankInfo, in_rank_order, rank_from_name


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
    comm: list[tuple[float, float]] = []
    compute: list[tuple[float, float]] = []
    for g in trace.gpu:
        if g.cat == KERNEL:
            (comm if is_comm_kernel(g.name) else compute).append((g.ts, g.end))
    comm_u, compute_u = intervals.merged(comm), intervals.merged(compute)
    return CommCompute(intervals.total(compute_u), intervals.total(comm_u), intervals.overlap(comm_u, compute_u))


def step_times(trace: Trace) -> list[tuple[str, float]]:
    out = []
    for s in all_step_stats(trace):
        window = s.gpu_busy_us + s.gpu_idle_us if s.kernels or s.gpu_busy_us > 0 else s.cpu_us
        out.append((s.name, window))
    return out


def _kind(c: Collective) -> tuple[str, int | None, str | None]:
    return (c.collective, c.bytes, c.group)


def comm_wait(per_rank: dict[int, list[Collective]]) -> dict[int, float | None]:
    """Per rank: the time its collectives waited for the other ranks (see the module docstring)."""
    if len(per_rank) < 2:
        return {r: None for r in per_rank}
    calls: dict[tuple[Any, ...], dict[int, float]] = {}
    for rank, colls in per_rank.items():
        seen: dict[tuple[str, int | None, str | None], int] = {}
        for c in colls:
            k = _kind(c)
            n = seen.get(k, 0)
            seen[k] = n + 1
            calls.setdefault((*k, n), {})[rank] = c.dur
    waits = {r: 0.0 for r in per_rank}
    for durs in calls.values():
        if len(durs) < 2:
            continue
        fastest = min(durs.values())
        for rank, dur in durs.items():
            waits[rank] += dur - fastest
    return dict(waits)


def _collective_rows(rank: int, colls: list[Collective]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str | None, int | None, int | None], list[Collective]] = {}
    for c in colls:
        groups.setdefault((c.collective, c.dtype, c.bytes, c.group_size), []).append(c)
    rows: list[dict[str, Any]] = []
    for (coll, dtype, nbytes, group_size), cs in groups.items():
        total = sum(c.dur for c in cs)
        alg = nbytes * len(cs) / total / 1e3 if nbytes and total > 0 else None
        bus = None if alg is None else alg * bus_factor(coll, group_size or 1)
        rows.append({"rank": rank, "collective": coll, "dtype": dtype, "bytes": nbytes, "group_size": group_size,
                     "count": len(cs), "total_us": _r(total), "algbw_gbps": _r(alg), "busbw_gbps": _r(bus)})
    rows.sort(key=lambda r: -float(r["total_us"] or 0.0))
    return rows


def stragglers(steps: dict[int, list[tuple[str, float]]]) -> list[dict[str, Any]]:
    """For each step name found on at least two ranks: the slowest rank and its lead over the fastest."""
    by_name: dict[str, dict[int, float]] = {}
    order: list[str] = []
    for rank, rows in steps.items():
        for name, us in rows:
            if name not in by_name:
                by_name[name] = {}
                order.append(name)
            by_name[name][rank] = us
    out = []
    for name in order:
        times = by_name[name]
        if len(times) < 2:
            continue
        slow = max(times, key=lambda r: (times[r], -r))
        out.append({"step": name, "rank": slow, "slower_by_us": _r(times[slow] - min(times.values()))})
    return out


def ranks_report(ranked: Sequence[tuple[int, Trace]]) -> dict[str, Any]:
    infos = [rank_info(t) for _, t in ranked]
    world = next((i.world_size for i in infos if i.world_size), None) or len(ranked)
    backend = next((i.backend for i in infos if i.backend), None)
    per_colls = {rank: collectives(t) for rank, t in ranked}
    waits = comm_wait(per_colls)
    steps = {rank: step_times(t) for rank, t in ranked}
    rows = []
    for rank, t in ranked:
        cc = comm_compute(t)
        rows.append({"rank": rank, "source": t.source,
                     "steps": [{"name": n, "step_us": _r(us)} for n, us in steps[rank]],
                     "compute_us": _r(cc.compute_us), "comm_us": _r(cc.comm_us),
                     "overlap_share": _r(cc.overlap_share), "comm_wait_us": _r(waits[rank])})
    return {"world_size": world, "backend": backend, "ranks": rows, "stragglers": stragglers(steps),
            "collectives": [row for rank, _ in ranked for row in _collective_rows(rank, per_colls[rank])]}
