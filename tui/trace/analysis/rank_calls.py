"""One collective call seen from every rank: who arrived last, how long the others waited for it, and how
long the transfer itself took.

Matching: the n-th kernel of one kind (collective, bytes, process group) on each rank is one call — every
rank of a group issues its collectives in the same order. No common clock is needed.

Arrival: a collective kernel starts when its rank arrives and ends when the data has gone round, which
happens for every rank together, only after the last one has arrived. So the rank whose kernel is the
shortest started last: it is the call's *straggler* (as HTA and TraceLens define it: the rank whose
collective kernel starts last while the others wait for it). Each rank's wait is its kernel's duration
minus the shortest one; the straggler waits 0. The call's lateness is the longest wait — how long after
the first rank the last one arrived (on ranks sharing a clock: the spread of the kernels' start times).

Transfer: measured from the last arrival, i.e. the shortest kernel of the call; bus bandwidth over it is
what the link delivered, with the wait reported beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlptui.trace.analysis.rank_digest import CallRecord, RankDigest


@dataclass(frozen=True, slots=True)
class Call:
    """The n-th call of one kind, on every rank that made it."""

    index: int                          # n: 0 for the first call of this kind
    record: CallRecord                  # the lowest rank's kernel (kind, size, step name)
    durs: dict[int, float]              # rank -> its kernel's duration, µs

    @property
    def matched(self) -> bool:
        return len(self.durs) >= 2

    @property
    def transfer_us(self) -> float:
        return min(self.durs.values())

    def wait_us(self, rank: int) -> float:
        return self.durs[rank] - self.transfer_us

    @property
    def late_us(self) -> float:
        """How long after the first rank the last one arrived (the longest wait it caused)."""
        return max(self.durs.values()) - self.transfer_us

    @property
    def last_rank(self) -> int | None:
        """The rank that arrived last; None when the call was seen on one rank or all arrived together."""
        if not self.matched or self.late_us <= 0:
            return None
        return min(self.durs, key=lambda r: (self.durs[r], r))

    @property
    def step(self) -> str | None:
        return self.record.step


def match_calls(digests: Sequence[RankDigest]) -> list[Call]:
    """Every call of the run, in the lowest rank's order of first appearance."""
    calls: dict[tuple[object, ...], Call] = {}
    for d in sorted(digests, key=lambda d: d.rank):
        seen: dict[tuple[str, int | None, str | None], int] = {}
        for rec in d.calls:
            k = rec.kind
            n = seen.get(k, 0)
            seen[k] = n + 1
            key = (rec.collective, rec.bytes, rec.group, n)
            call = calls.get(key)
            if call is None:
                call = calls[key] = Call(n, rec, {})
            call.durs[d.rank] = rec.dur
    return list(calls.values())


def step_stragglers(calls: Sequence[Call]) -> list[dict[str, object]]:
    """Per step (in order of first call): the rank that kept the others waiting longest at the step's
    collectives — the sum of the calls' lateness where it arrived last — with that sum, how many of the
    step's calls it was last at, and how many calls the step had on ≥ 2 ranks."""
    caused: dict[str | None, dict[int, float]] = {}
    last_at: dict[str | None, dict[int, int]] = {}
    count: dict[str | None, int] = {}
    for c in calls:
        if not c.matched:
            continue
        count[c.step] = count.get(c.step, 0) + 1
        caused.setdefault(c.step, {})
        last_at.setdefault(c.step, {})
        r = c.last_rank
        if r is not None:
            caused[c.step][r] = caused[c.step].get(r, 0.0) + c.late_us
            last_at[c.step][r] = last_at[c.step].get(r, 0) + 1
    out: list[dict[str, object]] = []
    for step, n in count.items():
        by_rank = caused[step]
        if not by_rank:
            out.append({"step": step, "rank": None, "late_us": 0.0, "last_at": 0, "calls": n})
            continue
        rank = max(by_rank, key=lambda r: (by_rank[r], -r))
        out.append({"step": step, "rank": rank, "late_us": round(by_rank[rank], 3),
                    "last_at": last_at[step][rank], "calls": n})
    return out
