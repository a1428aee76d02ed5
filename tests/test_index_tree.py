"""The per-thread trees match a straightforward reference on any input, partial overlaps included: each
slice's parent is the latest-starting earlier slice of its thread that contains it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mlptui.trace.parse.tree import build_forest


def stack_walk(thread: list[int], start: list[int], dur: list[int]) -> tuple[list[int], list[int], list[int], int]:
    """Reference, quadratic: order by (thread, start, longest first); a slice's parent is the last earlier
    slice of its thread that is open at its start and ends no earlier than it. A partial overlap is a
    slice that starts inside an open slice it outlives, where that one is the latest-starting open slice."""
    order = sorted(range(len(start)), key=lambda i: (thread[i], start[i], -dur[i], i))
    parent = [-1] * len(order)
    depth = [0] * len(order)
    partial = 0
    for k, i in enumerate(order):
        s, e = start[i], start[i] + dur[i]
        open_before = [j for j in range(k) if thread[order[j]] == thread[i]
                       and start[order[j]] + dur[order[j]] > s and _chain_open(order, start, dur, parent, j, s)]
        containing = [j for j in open_before if start[order[j]] + dur[order[j]] >= e]
        if open_before and start[order[open_before[-1]]] + dur[order[open_before[-1]]] < e:
            partial += 1
        if containing:
            parent[k] = containing[-1]
            depth[k] = depth[containing[-1]] + 1
    return order, parent, depth, partial


def _chain_open(order: list[int], start: list[int], dur: list[int], parent: list[int], j: int, s: int) -> bool:
    """Slice j and all its ancestors are still running at s (a slice closed early is closed for good)."""
    while j >= 0:
        if start[order[j]] + dur[order[j]] <= s:
            return False
        j = parent[j]
    return True


slices = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(0, 25)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(slices)
def test_matches_stack_walk(items: list[tuple[int, int, int]]) -> None:
    thread = [t for t, _, _ in items]
    start = [s for _, s, _ in items]
    dur = [d for _, _, d in items]
    f = build_forest(np.asarray(thread, dtype=np.int64), np.asarray(start, dtype=np.int64),
                     np.asarray(dur, dtype=np.int64))
    order, parent, depth, partial = stack_walk(thread, start, dur)
    assert f.order.tolist() == order
    assert f.parent == parent
    assert f.depth == depth
    assert f.partial_overlaps == partial


def test_nested_example() -> None:
    # one thread: [0,100] > [10,50] > [20,30]; [50,60] sibling of [10,50]; a zero-length mark at 20
    f = build_forest(np.zeros(5, dtype=np.int64), np.array([0, 10, 20, 50, 20]), np.array([100, 40, 10, 10, 0]))
    assert f.order.tolist() == [0, 1, 2, 4, 3]
    assert f.parent == [-1, 0, 1, 2, 0]
    assert f.depth == [0, 1, 2, 3, 1]
    assert f.partial_overlaps == 0
