"""One collective call seen from every rank: who arrived last, how long the others waited for it, and how
long the transfer itself took.

Matching: by NCCL's `Seq` (the call's number in its process group) when every kernel of every rank
carries it — a call dropped on one rank then shifts nothing. Otherwise the n-th kernel of one kind
(collective, bytes, process group) on each rank is one call: every rank of a group issues its collectives
in the same order.

Arrival, on a shared clock (ranks recorded on one host, mlptui.trace.analysis.ranks.rank_clock): a collective
kernel starts when its rank arrives, so the rank whose kernel starts last arrived last — the call's
*straggler* (as HTA and TraceLens define it). Each rank waited from its own start to the straggler's; the
call's lateness is the spread of the starts. The transfer on each rank is its kernel's end minus the
straggler's start.

Arrival without a shared clock (ranks of several hosts, or hosts unknown): a proxy. The data goes round
only once every rank is there, so if the kernels ended together the shortest one started last; each rank's
wait is its kernel's duration minus the shortest one, the lateness the longest minus the shortest, and the
transfer the shortest kernel. Large messages break the premise (the ends spread by tens of µs), which is
why the proxy is used only where start times cannot be compared, and is labelled as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mlptui.trace.analysis.ranks.rank_digest import CallRecord, RankDigest
from mlptui.trace.reports.ranks import Straggler


@dataclass(frozen=True, slots=True)
class Call:
    """One call, on every rank that made it."""

    index: int                          # n: 0 for the first call of this kind on the rank that first made it
    record: CallRecord                  # the lowest rank's kernel (kind, size, step name, seq)
    shared_clock: bool                  # True: arrivals from start times; False: from durations (proxy)
    durs: dict[int, float] = field(default_factory=dict)     # rank -> its kernel's duration, µs
    starts: dict[int, float] = field(default_factory=dict)   # rank -> its kernel's start, µs on its own clock
    at: dict[int, int] = field(default_factory=dict)         # rank -> index of its kernel in its digest's calls

    @property
    def matched(self) -> bool:
        return len(self.durs) >= 2

    def _arrival(self, rank: int) -> float:
        """When `rank` arrived, on a scale shared by the call's ranks (the proxy: minus its kernel's length)."""
        return self.starts[rank] if self.shared_clock else -self.durs[rank]

    @property
    def last_arrival(self) -> float:
        return max(self._arrival(r) for r in self.durs)

    def wait_us(self, rank: int) -> float:
        """Time `rank` spent in this call waiting for the last rank to arrive."""
        return self.last_arrival - self._arrival(rank)

    def transfer_on(self, rank: int) -> float:
        """Time `rank`'s kernel ran after the last arrival."""
        return self.durs[rank] - self.wait_us(rank)

    @property
    def transfer_us(self) -> float:
        """The straggler's kernel: the transfer, from the last arrival to the end."""
        last = self.last_rank
        return self.transfer_on(last) if last is not None else min(self.durs.values())

    @property
    def late_us(self) -> float:
        """How long after the first rank the last one arrived (the longest wait it caused)."""
        arrivals = [self._arrival(r) for r in self.durs]
        return max(arrivals) - min(arrivals)

    def late_of(self, rank: int) -> float:
        """How long after the first rank `rank` arrived (0 for the first)."""
        return self._arrival(rank) - min(self._arrival(r) for r in self.durs)

    @property
    def last_rank(self) -> int | None:
        """The rank that arrived last; None when the call was seen on one rank or all arrived together."""
        if not self.matched or self.late_us <= 0:
            return None
        return max(self.durs, key=lambda r: (self._arrival(r), -r))

    @property
    def step(self) -> str | None:
        return self.record.step


def by_seq(digests: Sequence[RankDigest]) -> bool:
    """Whether every collective kernel of every rank carries NCCL's `Seq` (then calls are matched by it)."""
    return any(d.calls for d in digests) and all(rec.seq is not None for d in digests for rec in d.calls)


def match_calls(digests: Sequence[RankDigest], shared_clock: bool = False) -> list[Call]:
    """Every call of the run, in the lowest rank's order of first appearance."""
    seq = by_seq(digests)
    calls: dict[tuple[object, ...], Call] = {}
    for d in sorted(digests, key=lambda d: d.rank):
        seen: dict[tuple[str, int | None, str | None], int] = {}
        for i, rec in enumerate(d.calls):
            k = rec.kind
            n = seen.get(k, 0)
            seen[k] = n + 1
            key: tuple[object, ...] = (rec.group, rec.seq) if seq else (rec.collective, rec.bytes, rec.group, n)
            call = calls.get(key)
            if call is None:
                call = calls[key] = Call(n, rec, shared_clock)
            call.durs[d.rank] = rec.dur
            call.starts[d.rank] = rec.ts
            call.at[d.rank] = i
    return list(calls.values())


def step_stragglers(calls: Sequence[Call]) -> list[Straggler]:
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
    out: list[Straggler] = []
    for step, n in count.items():
        by_rank = caused[step]
        if not by_rank:
            out.append(Straggler(step=step, rank=None, late_us=0.0, last_at=0, calls=n))
            continue
        rank = max(by_rank, key=lambda r: (by_rank[r], -r))
        out.append(Straggler(step=step, rank=rank, late_us=round(by_rank[rank], 3), last_at=last_at[step][rank],
                             calls=n))
    return out
