"""Containment trees of CPU slices, one per thread, from integer-nanosecond intervals.

Slices are ordered by (thread, start, longest first), so a parent always comes before its children
and gets the smaller id. A slice's parent is the innermost slice of its thread that contains it: still
running when it starts (its end is after the start) and ending no earlier than it. So a slice that
starts exactly when another ends is its sibling, a zero-length slice at its parent's start is its
child, and two zero-length slices at one instant are siblings. A slice that starts inside another but
ends after it (a partial overlap: `with_stack` Python frames around `ProfilerStep#N`, ops of threads
the profiler merged) is not that one's child: the open slices it outlives are closed, it nests under
the innermost one that contains it, and it is counted so the caller can say so.

The rules are those of one stack walk per thread (`_walk`). Most threads nest properly (no partial
overlap), and there the walk's result has a closed form that numpy computes for all threads at once:
a slice's depth is the number of earlier slices of its thread still running at its start, and its parent
is the last earlier slice one level up. That result is then checked against every step the walk would
take (the slices it would close are closed, the parent stays open and contains the slice); a thread
where any check fails is walked instead, so the forest is the walk's in every case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_MAX_KEY = 1 << 62      # per-thread time keys laid end to end must stay inside int64


@dataclass
class Forest:
    order: np.ndarray        # order[k] = input position of the slice that gets id k
    parent: np.ndarray       # by id; -1 for a root
    depth: np.ndarray
    partial_overlaps: int


def build_forest(thread: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray) -> Forest:
    """`thread`, `start_ns`, `dur_ns`: one int64 entry per slice (durations >= 0). Returns ids in sorted
    order."""
    n = len(start_ns)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Forest(empty, empty.copy(), empty.copy(), 0)
    order = _sorted_order(thread, start_ns, dur_ns)
    th = thread[order]
    st = start_ns[order]
    en = st + dur_ns[order]
    first = np.flatnonzero(np.r_[True, th[1:] != th[:-1]])      # first id of each thread
    bounds = [*first.tolist(), n]
    found = _nested(st, en, first)
    if found is None:
        parent = np.full(n, -1, dtype=np.int64)
        depth = np.zeros(n, dtype=np.int64)
        walk = list(range(len(first)))
    else:
        parent, depth, bad = found
        walk = bad.tolist()
    partial = 0
    if walk:
        st_list, en_list = st.tolist(), en.tolist()
        for t in walk:
            partial += _walk(st_list, en_list, bounds[t], bounds[t + 1], parent, depth)
    return Forest(order, parent, depth, partial)


def _sorted_order(thread: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """np.lexsort((-dur_ns, start_ns, thread)), faster: a trace lists most slices in time order, so one
    stable sort of a single (thread, start) key is nearly one pass over it, far less than a three-key
    lexsort; only runs of equal keys are then ordered longest first."""
    t0, s0 = int(thread.min()), int(start_ns.min())
    width = int(start_ns.max()) - s0 + 1
    if (int(thread.max()) - t0 + 1) * width >= _MAX_KEY:
        return np.lexsort((-dur_ns, start_ns, thread))
    key = (thread - t0) * width + (start_ns - s0)
    order = np.argsort(key, kind="stable")
    ranked = key[order]
    tied = ranked[1:] == ranked[:-1]
    if tied.any():
        # Runs of one key keep their place; inside each, longest first (the stable sort kept input order).
        at = np.flatnonzero(np.r_[tied, False] | np.r_[False, tied])
        members = order[at]
        order[at] = members[np.lexsort((-dur_ns[members], ranked[at]))]
    return order


def walk_forest(thread: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray) -> Forest:
    """The same forest by the stack walk alone, every thread (the reference the fast form is checked by)."""
    n = len(start_ns)
    order = np.lexsort((-dur_ns, start_ns, thread))
    th = thread[order]
    st = start_ns[order].tolist()
    en = (start_ns[order] + dur_ns[order]).tolist()
    bounds = [*np.flatnonzero(np.r_[True, th[1:] != th[:-1]]).tolist(), n] if n else [0]
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    partial = sum(_walk(st, en, lo, hi, parent, depth) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True))
    return Forest(order, parent, depth, partial)


def _walk(st: list[int], en: list[int], lo: int, hi: int, parent: np.ndarray, depth: np.ndarray) -> int:
    """One thread's slices (ids lo..hi-1, sorted) by a stack of open slices; fills parent and depth there
    and returns the number of partial overlaps."""
    par = [-1] * (hi - lo)
    dep = [0] * (hi - lo)
    partial = 0
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
            par[k - lo] = stack[-1]
            dep[k - lo] = len(stack)
        stack.append(k)
        ends.append(e)
    parent[lo:hi] = par
    depth[lo:hi] = dep
    return partial


def _nested(st: np.ndarray, en: np.ndarray, first: np.ndarray,
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(parent, depth, threads to walk) of sorted slices, or None when times are too far apart for the
    keys below (then every thread is walked). Where a thread's slices nest properly, its parent and depth
    are the walk's: the walk's stack at slice k holds exactly the earlier slices still running at its
    start, innermost (latest) on top, as long as no slice so far outlived the top of the stack."""
    n = len(st)
    idx = np.arange(n, dtype=np.int64)
    seg_len = np.diff(np.r_[first, n])
    seg = np.repeat(np.arange(len(first), dtype=np.int64), seg_len)
    lo = first[seg]
    # Lay the threads' time ranges end to end so that one sorted array answers per-thread counts.
    t0 = st[first]
    span = np.maximum.reduceat(en, first) - t0 + 1
    if float(span.sum(dtype=np.float64)) >= _MAX_KEY:
        return None
    offset = np.r_[0, np.cumsum(span)[:-1]] - t0
    start_key = st + offset[seg]
    ends_sorted = np.sort(en + offset[seg], kind="stable")    # nearly in order already: a merge of runs
    # Earlier slices of the thread that ended by k's start: all of the thread's ends <= start, less the
    # zero-length slices at that same instant from k on (they sort after k and end at its start).
    zero = np.r_[0, np.cumsum(en == st)]
    group_end = np.r_[np.flatnonzero((st[1:] != st[:-1]) | (seg[1:] != seg[:-1])) + 1, n]
    group_end = np.repeat(group_end, np.diff(np.r_[0, group_end]))
    closed = np.searchsorted(ends_sorted, start_key, side="right") - lo - (zero[group_end] - zero[idx])
    depth = idx - lo - closed
    # parent: the last earlier slice one level up; same: the last earlier slice at the same level.
    by_level = np.argsort(_narrow(depth), kind="stable")
    level = depth[by_level]
    level_start = np.r_[0, np.flatnonzero(level[1:] != level[:-1]) + 1]
    level_end = np.r_[level_start[1:], n]
    parent = np.full(n, -1, dtype=np.int64)
    same = np.full(n, -1, dtype=np.int64)
    same[by_level[1:]] = np.where(level[1:] == level[:-1], by_level[:-1], -1)
    for a, b, prev in zip(level_start[1:].tolist(), level_end[1:].tolist(), level_start.tolist(), strict=False):
        members = by_level[a:b]
        up = by_level[prev:a]
        if int(level[prev]) != int(level[a]) - 1:
            continue                    # a level without the one above it: the checks below reject it
        at = np.searchsorted(up, members) - 1
        parent[members] = np.where(at >= 0, up[np.maximum(at, 0)], -1)
    # The walk's steps, checked at every slice k of depth d (k-1 is the slice before it in its thread):
    prev_depth = np.r_[-1, depth[:-1]]
    prev_depth[first] = -1
    p = np.maximum(parent, 0)
    q = np.maximum(same, 0)
    bad = (depth > prev_depth + 1)                                   # one level deeper than k-1 at most
    bad |= (depth > 0) & ((parent < lo) | (en[p] <= st) | (en[p] < en))   # parent open at k's start, contains k
    bad |= (prev_depth >= depth) & ((same < lo) | (en[q] > st))      # the slices above it are closed
    walk = np.flatnonzero(np.bincount(seg[bad], minlength=len(first)))   # np.unique would import numpy.ma
    return np.where(depth > 0, parent, -1), depth, walk


def _narrow(values: np.ndarray) -> np.ndarray:
    """`values` as int16 when they fit: numpy's stable sort is a radix sort for 16-bit ints."""
    if len(values) and -(1 << 15) <= int(values.min()) and int(values.max()) < 1 << 15:
        return values.astype(np.int16)
    return values
