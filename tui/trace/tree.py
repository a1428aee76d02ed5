"""Containment trees of CPU slices, one per thread, from integer-nanosecond intervals.

Slices are ordered by (thread, start, longest first), so a parent always comes before its
children and gets the smaller id. A slice nests in the innermost open slice that is still running
when it starts (start < parent end; a slice that starts exactly when another ends is its sibling;
a zero-length slice at its parent's start is its child, two zero-length
slices at one instant are siblings). A slice that starts inside another but ends
after it (a partial overlap, which a well-formed trace never has) is nested where it starts and
counted, so the caller can say so instead of mis-nesting silently.
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
    """`thread`, `start_ns`, `dur_ns`: one entry per slice (int64). Returns ids in sorted order."""
    n = len(start_ns)
    if n == 0:
        return Forest(np.zeros(0, dtype=np.int64), [], [], 0)
    order = np.lexsort((-dur_ns, start_ns, thread))
    th = thread[order].tolist()
    st = start_ns[order].tolist()
    en = (start_ns[order] + dur_ns[order]).tolist()
    parent = [-1] * n
    depth = [0] * n
    stack: list[int] = []        # ids of open slices, innermost last
    ends: list[int] = []         # their end times
    partial = 0
    current = None
    for k in range(n):
        t = th[k]
        s = st[k]
        if t != current:
            current = t
            stack.clear()
            ends.clear()
        while ends and ends[-1] <= s:
            stack.pop()
            ends.pop()
        if stack:
            p = stack[-1]
            parent[k] = p
            depth[k] = len(stack)
            if en[k] > ends[-1]:
                partial += 1
        stack.append(k)
        ends.append(en[k])
    return Forest(order, parent, depth, partial)
