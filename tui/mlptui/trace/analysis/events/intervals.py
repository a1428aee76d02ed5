"""Unions and intersections of time intervals (start, end), in µs."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

Interval = tuple[float, float]


def merged(intervals: Iterable[Interval]) -> list[Interval]:
    """The union as disjoint intervals in time order."""
    out: list[Interval] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def merged_arrays(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`merged` on numpy arrays: the union of the intervals as disjoint (starts, ends) in time order."""
    keep = ends > starts
    s, e = starts[keep], ends[keep]
    order = np.lexsort((e, s))
    s, e = s[order], e[order]
    if not len(s):
        return s, e
    reach = np.maximum.accumulate(e)
    new = np.concatenate(([True], s[1:] > reach[:-1]))      # touching intervals merge, as in `merged`
    firsts = np.flatnonzero(new)
    lasts = np.concatenate((firsts[1:], [len(s)])) - 1
    return s[firsts], reach[lasts]


def total(disjoint: list[Interval]) -> float:
    return sum(e - s for s, e in disjoint)


def overlap(a: list[Interval], b: list[Interval]) -> float:
    """Length of the intersection of two unions, each given as disjoint sorted intervals."""
    i = j = 0
    length = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            length += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return length
