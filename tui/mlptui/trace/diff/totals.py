"""Where the time went, side by side: GPU time per kernel family and runtime/driver launch calls of
the two aligned steps, and the rows that moved the most."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mlptui.trace.analysis.events.launches import LaunchCallStat
from mlptui.trace.reports.diff import FamilyTotal, LaunchTotal


class _Kernel(Protocol):
    @property
    def family(self) -> str: ...
    @property
    def dur(self) -> float: ...


class _Row(Protocol):
    @property
    def status(self) -> str: ...
    @property
    def a(self) -> Sequence[_Kernel]: ...
    @property
    def b(self) -> Sequence[_Kernel]: ...


@dataclass(frozen=True, slots=True)
class Pair:
    """One name's count and time on each side."""

    name: str
    kind: str
    a_count: int
    b_count: int
    a_us: float
    b_us: float

    def swapped(self) -> Pair:
        return Pair(self.name, self.kind, self.b_count, self.a_count, self.b_us, self.a_us)

    def family_total(self) -> FamilyTotal:
        return FamilyTotal(family=self.name, a_count=self.a_count, b_count=self.b_count, a_us=round(self.a_us, 3),
                           b_us=round(self.b_us, 3))

    def launch_total(self) -> LaunchTotal:
        return LaunchTotal(name=self.name, kind=self.kind, a_count=self.a_count, b_count=self.b_count,
                           a_us=round(self.a_us, 3), b_us=round(self.b_us, 3))


def family_totals(rows: Sequence[_Row]) -> list[Pair]:
    """GPU time per decoded family on each side, largest first."""
    acc: dict[str, list[float]] = {}
    for row in rows:
        for side, kernels in ((0, row.a), (1, row.b)):
            for k in kernels:
                t = acc.setdefault(k.family, [0, 0, 0.0, 0.0])
                t[side] += 1
                t[2 + side] += k.dur
    out = [Pair(f, "family", int(t[0]), int(t[1]), t[2], t[3]) for f, t in acc.items()]
    out.sort(key=lambda p: -max(p.a_us, p.b_us))
    return out


def launch_totals(a: list[LaunchCallStat], b: list[LaunchCallStat]) -> list[Pair]:
    """Runtime/driver calls by name on each side (cudaLaunchKernel, cuLaunchKernelEx, cudaMemsetAsync, ...)."""
    by_name: dict[str, list[Any]] = {}
    for side, stats in ((0, a), (1, b)):
        for s in stats:
            t = by_name.setdefault(s.name, [s.kind, 0, 0, 0.0, 0.0])
            t[1 + side] += s.count
            t[3 + side] += s.total_us
    out = [Pair(n, t[0], t[1], t[2], t[3], t[4]) for n, t in by_name.items()]
    out.sort(key=lambda p: (-(p.a_count + p.b_count), p.name))
    return out


def biggest_rows(rows: Sequence[_Row], n: int = 5) -> list[int]:
    """Indices of the n rows (other than `same`) that change the GPU time the most."""
    def weight(r: _Row) -> float:
        return abs(sum(k.dur for k in r.b) - sum(k.dur for k in r.a))
    cand = [i for i, r in enumerate(rows) if r.status != "same"]
    cand.sort(key=lambda i: -weight(rows[i]))
    return cand[:n]
