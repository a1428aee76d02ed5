"""Containment trees of CPU slices, one per thread, from integer-nanosecond intervals.

Slices are ordered by (thread, start, longest first), so a parent always comes before its children
and gets the smaller id. A slice's parent is the innermost slice of its thread that is still running
when it starts (its end is after the start). So a slice that starts exactly when another ends is its
sibling, a zero-length slice at its parent's start is its child, and two zero-length slices at one
instant are siblings. A slice that starts inside another but ends after it (a partial overlap, which
a well-formed trace never has) is nested where it starts and counted, so the caller can say so instead
of mis-nesting silently.

One stack walk per thread over plain ints: measured faster than a vectorised sparse-table search at
every size tried (0.2 to 0.9 million slices), and linear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Forest:
    order: np.ndarray        # order[k] = input position of the slice that gets id k
    parent: list[int]        # by id; -1 for a root
    depth: list[int]
    partial_overlaps: int


def build_forest(thread: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray) -> Forest:
    """`thread`, `start_ns`, `dur_ns`: one int64 entry per slice. Returns ids in sorted order."""
    n = len(start_ns)
    if n == 0:
        return Forest(np.zeros(0, dtype=np.int64), [], [], 0)
    order = np.lexsort((-dur_ns, start_ns, thread))
    th = thread[order]
    st = start_ns[order].tolist()
    en = (start_ns[order] + dur_ns[order]).tolist()
    bounds = np.flatnonzero(np.diff(th)).tolist()   # last id of each thread but the last
    parent = [-1] * n
    depth = [0] * n
    partial = 0
    lo = 0
    for hi in [*(b + 1 for b in bounds), n]:
        stack: list[int] = []        # ids of open slices, innermost last
        ends: list[int] = []         # their end times
        for k in range(lo, hi):
            s = st[k]
            while ends and ends[-1] <= s:
                stack.pop()
                ends.pop()
            if stack:
                parent[k] = stack[-1]
                depth[k] = len(stack)
                if en[k] > ends[-1]:
                    partial += 1
            stack.append(k)
            ends.append(en[k])
        lo = hi
    return Forest(order, parent, depth, partial)
