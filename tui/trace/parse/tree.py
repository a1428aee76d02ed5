"""Containment trees of CPU slices, one per thread, from integer-nanosecond intervals.

Slices are ordered by (thread, start, longest first), so a parent always comes before its children
and gets the smaller id. A slice's parent is the innermost slice of its thread that contains it: still
running when it starts (its end is after the start) and ending no earlier than it. So a slice that
starts exactly when another ends is its sibling, a zero-length slice at its parent's start is its
child, and two zero-length slices at one instant are siblings. A slice that starts inside another but
ends after it (a partial overlap: `with_stack` Python frames around `ProfilerStep#N`, ops of threads
the profiler merged) is not that one's child: the open slices it outlives are closed, it nests under
the innermost one that contains it, and it is counted so the caller can say so.

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
            e = en[k]
            if ends and ends[-1] < e:
                partial += 1
                while ends and ends[-1] < e:     # open slices that end inside this one: not its parents
                    stack.pop()
                    ends.pop()
            if stack:
                parent[k] = stack[-1]
                depth[k] = len(stack)
            stack.append(k)
            ends.append(e)
        lo = hi
    return Forest(order, parent, depth, partial)
