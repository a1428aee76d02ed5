"""Containment trees of CPU slices, one per thread, from integer-nanosecond intervals.

Slices are ordered by (thread, start, longest first), so a parent always comes before its children
and gets the smaller id. A slice's parent is the last slice before it (same thread) that is still
running when it starts (its end is after the start): for well-nested slices that is the innermost
one containing it. So a slice that starts exactly when another ends is its sibling, a zero-length
slice at its parent's start is its child, and two zero-length slices at one instant are siblings.
A slice that starts inside another but ends after it (a partial overlap, which a well-formed trace
never has) is nested where it starts and counted, so the caller can say so instead of mis-nesting
silently.

The search is vectorised: a sparse table of running maxima of the end times answers "last slice
before k whose end is after start_k" for all k at once in O(n log n) array operations, which is the
same answer a stack walk gives, without a Python loop per slice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Forest:
    order: np.ndarray        # order[k] = input position of the slice that gets id k
    parent: np.ndarray       # by id; -1 for a root
    depth: np.ndarray
    partial_overlaps: int


def build_forest(thread: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray) -> Forest:
    """`thread`, `start_ns`, `dur_ns`: one int64 entry per slice. Returns arrays indexed by id."""
    n = len(start_ns)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Forest(empty, empty.copy(), empty.copy(), 0)
    order = np.lexsort((-dur_ns, start_ns, thread))
    th = thread[order]
    st = start_ns[order]
    en = st + dur_ns[order]
    first = np.searchsorted(th, th, side="left")     # first id of each slice's thread

    # table[l][i] = max(en[i : i + 2**l]); only the entries that fit are kept.
    table = [en]
    while (1 << len(table)) <= n:
        prev = table[-1]
        half = 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-half], prev[half:]))
    ids = np.arange(n, dtype=np.int64)
    pos = ids.copy()          # exclusive upper bound of the search; blocks that cannot hold the parent are skipped
    for level in range(len(table) - 1, -1, -1):
        size = 1 << level
        lo = pos - size
        ok = lo >= first
        cand = np.nonzero(ok)[0]
        if len(cand) == 0:
            continue
        lo_c = lo[cand]
        in_table = lo_c < len(table[level])
        cand = cand[in_table]
        lo_c = lo_c[in_table]
        skip = table[level][lo_c] <= st[cand]
        pos[cand[skip]] = lo_c[skip]
    parent = pos - 1
    has = (parent >= first) & (parent >= 0)
    has[has] = en[parent[has]] > st[has]
    parent = np.where(has, parent, -1)

    partial = int(np.count_nonzero(en[has] > en[parent[has]]))
    depth = np.zeros(n, dtype=np.int64)
    up = parent.copy()
    while True:
        alive = up >= 0
        if not alive.any():
            break
        depth += alive
        up[alive] = parent[up[alive]]
    return Forest(order, parent, depth, partial)
