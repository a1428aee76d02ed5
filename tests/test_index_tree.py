"""The per-thread trees match a straightforward reference walk on any input, partial overlaps included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mlptui.trace.parse.tree import build_forest


def stack_walk(thread: list[int], start: list[int], dur: list[int]) -> tuple[list[int], list[int], list[int], int]:
    """Reference: order by (thread, start, longest first), then a stack of open slices per thread."""
    order = sorted(range(len(start)), key=lambda i: (thread[i], start[i], -dur[i], i))
    parent = [-1] * len(order)
    depth = [0] * len(order)
    stack: list[int] = []
    partial = 0
    current = None
    for k, i in enumerate(order):
        if thread[i] != current:
            current, stack = thread[i], []
        s, e = start[i], start[i] + dur[i]
        while stack and start[order[stack[-1]]] + dur[order[stack[-1]]] <= s:
            stack.pop()
        if stack:
            parent[k] = stack[-1]
            depth[k] = len(stack)
            top = order[stack[-1]]
            partial += e > start[top] + dur[top]
        stack.append(k)
    return order, parent, depth, partial


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
