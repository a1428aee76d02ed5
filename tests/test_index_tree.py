"""The per-thread trees match a straightforward reference on any input, partial overlaps included: each
slice's parent is the latest-starting earlier slice of its thread that contains it. The vectorised form
gives the stack walk's forest on any input, and properly nested threads never need the walk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlptui.trace.parse import tree
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
    assert f.parent.tolist() == parent
    assert f.depth.tolist() == depth
    assert f.partial_overlaps == partial


def test_nested_example() -> None:
    # one thread: [0,100] > [10,50] > [20,30]; [50,60] sibling of [10,50]; a zero-length mark at 20
    f = build_forest(np.zeros(5, dtype=np.int64), np.array([0, 10, 20, 50, 20]), np.array([100, 40, 10, 10, 0]))
    assert f.order.tolist() == [0, 1, 2, 4, 3]
    assert f.parent.tolist() == [-1, 0, 1, 2, 0]
    assert f.depth.tolist() == [0, 1, 2, 3, 1]
    assert f.partial_overlaps == 0


def _arrays(items: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.asarray([x[i] for x in items], dtype=np.int64) for i in range(3))  # type: ignore[return-value]


def _same_forest(a: tree.Forest, b: tree.Forest) -> None:
    assert a.order.tolist() == b.order.tolist()
    assert a.parent.tolist() == b.parent.tolist()
    assert a.depth.tolist() == b.depth.tolist()
    assert a.partial_overlaps == b.partial_overlaps


# Few distinct instants and short durations: many zero-length, touching, identical and overlapping slices.
dense = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12), st.sampled_from([0, 0, 1, 2, 3, 5, 8, 13])),
                 max_size=120)


@settings(max_examples=500, deadline=None)
@given(dense)
def test_fast_form_is_the_walk(items: list[tuple[int, int, int]]) -> None:
    _same_forest(build_forest(*_arrays(items)), tree.walk_forest(*_arrays(items)))


@st.composite
def nested(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """Properly nested slices (children inside their parent, siblings apart or touching), zero-length
    ones and exact duplicates included, in shuffled input order."""
    out: list[tuple[int, int, int]] = []

    def fill(thread: int, lo: int, hi: int, levels: int) -> None:
        at = lo
        while at <= hi and draw(st.booleans()):
            length = draw(st.integers(0, hi - at))
            out.append((thread, at, length))
            if draw(st.booleans()):
                out.append((thread, at, length))          # an identical twin
            if levels and length:
                fill(thread, at, at + length, levels - 1)
            at += length + draw(st.integers(0, 2))         # touching or apart
    for thread in range(draw(st.integers(1, 3))):
        fill(thread, 0, 60, 4)
    return draw(st.permutations(out))


@settings(max_examples=300, deadline=None)
@given(nested())
def test_nested_slices_take_the_fast_form(items: list[tuple[int, int, int]]) -> None:
    walked = tree.walk_forest(*_arrays(items))
    assert walked.partial_overlaps == 0
    original = tree._walk

    def refuse(*args: object) -> int:
        raise AssertionError("a properly nested thread was walked")
    tree._walk = refuse  # type: ignore[assignment]
    try:
        fast = build_forest(*_arrays(items))
    finally:
        tree._walk = original
    _same_forest(fast, walked)


def test_only_the_thread_with_a_partial_overlap_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    # thread 0 nests; thread 1: [0,10] then [5,20] starts inside it and outlives it
    thread, start, dur = (np.array(x, dtype=np.int64) for x in ([0, 0, 0, 1, 1, 1], [0, 2, 4, 0, 5, 6],
                                                               [10, 2, 1, 10, 15, 1]))
    walked: list[tuple[int, int]] = []
    original = tree._walk

    def spy(st_: list[int], en: list[int], lo: int, hi: int, parent: np.ndarray, depth: np.ndarray) -> int:
        walked.append((lo, hi))
        return original(st_, en, lo, hi, parent, depth)
    monkeypatch.setattr(tree, "_walk", spy)
    f = build_forest(thread, start, dur)
    assert walked == [(3, 6)]
    _same_forest(f, tree.walk_forest(thread, start, dur))
    assert f.partial_overlaps == 1
    assert f.parent.tolist() == [-1, 0, 0, -1, -1, 4]


def test_times_too_far_apart_for_the_keys_are_walked() -> None:
    thread = np.array([0, 1, 2, 0], dtype=np.int64)
    start = np.array([0, 0, 0, 1], dtype=np.int64)
    dur = np.array([1 << 61, 1 << 61, 1 << 61, 5], dtype=np.int64)
    _same_forest(build_forest(thread, start, dur), tree.walk_forest(thread, start, dur))


# Any int64 starts and durations: wide ranges take the three-key sort, narrow ones the single key.
wide = st.lists(st.tuples(st.integers(-3, 3), st.integers(-(1 << 62), 1 << 62), st.integers(0, 1 << 40)),
                min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.one_of(dense.filter(bool), wide))
def test_slice_order_is_thread_start_longest_first(items: list[tuple[int, int, int]]) -> None:
    thread, start, dur = _arrays(items)
    assert tree._sorted_order(thread, start, dur).tolist() == np.lexsort((-dur, start, thread)).tolist()
