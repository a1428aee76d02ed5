"""Many ranks as one run, in two stages: a small per-rank digest, then one cross-rank reduction.

    rank_digest(trace, source) -> RankDigest          per rank, where the trace is (a worker can do it)
    reduce_ranks(digests) -> RunReduction             across ranks, from the digests alone

A digest holds a few numbers per step, so the reduction never needs the traces themselves: 1,024 ranks
reduce from about 1,024 × steps numbers. The straggler of a step is the rank with the longest step
time; `slower_by_us` is how much longer than the median of all ranks it took.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from mlptui.trace.analysis.steps import busy_us
from mlptui.trace.model import Trace

_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class RankDigest:
    source: str
    rank: int | None                   # distributedInfo.rank, else the rank-N / workerN in the file name
    step_names: tuple[str, ...]
    step_us: tuple[float, ...]         # ProfilerStep#N durations, in step order
    gpu_busy_us: tuple[float, ...]     # GPU busy time (union of GPU work) launched in each step


@dataclass(frozen=True)
class StepAcrossRanks:
    name: str
    ranks: int
    min_us: float
    median_us: float
    max_us: float
    straggler: int | None              # rank with the longest step
    slower_by_us: float                # straggler's step time minus the median


@dataclass(frozen=True)
class RunReduction:
    ranks: tuple[int | None, ...]      # in the order of the digests given
    steps: tuple[StepAcrossRanks, ...]  # one per step name, in first-seen order


def rank_of(trace: Trace, source: str) -> int | None:
    info = trace.meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    m = _RANK_IN_NAME.search(source.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def rank_digest(trace: Trace, source: str | None = None) -> RankDigest:
    src = trace.source if source is None else source
    per_step: list[list[tuple[float, float]]] = [[] for _ in trace.steps]
    for g in trace.gpu:
        if 0 <= g.step < len(per_step):
            per_step[g.step].append((g.ts, g.ts + g.dur))
    return RankDigest(
        source=src, rank=rank_of(trace, src),
        step_names=tuple(s.name for s in trace.steps), step_us=tuple(s.dur for s in trace.steps),
        gpu_busy_us=tuple(busy_us(iv) for iv in per_step),
    )


def reduce_ranks(digests: list[RankDigest]) -> RunReduction:
    by_step: dict[str, list[tuple[float, int | None]]] = {}
    for d in digests:
        for name, us in zip(d.step_names, d.step_us, strict=True):
            by_step.setdefault(name, []).append((us, d.rank))
    steps = []
    for name, rows in by_step.items():
        times = [us for us, _ in rows]
        median = statistics.median(times)
        worst_us, worst_rank = max(rows, key=lambda r: (r[0], -1 if r[1] is None else -r[1]))
        steps.append(StepAcrossRanks(name, len(rows), min(times), median, worst_us, worst_rank,
                                     worst_us - median))
    return RunReduction(ranks=tuple(d.rank for d in digests), steps=tuple(steps))
