"""The aligner's memory grows with the kernels, not with the square of their distinct names; computing
scores row by row gives the rows the class-by-class matrix gave; a gap of many distinct launching ops is
still aligned, on coarser keys."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlptui.trace.diff import align as align_module
from mlptui.trace.diff import scores
from mlptui.trace.diff.align import CHANGED, SAME, AlignItem, align


def kernel(name: str, role: str, family: str = "pointwise", words: frozenset[str] = frozenset()) -> AlignItem:
    return AlignItem(name, "kernel", family, words, role, False, 1.0)


def many_names(n: int) -> tuple[list[AlignItem], list[AlignItem]]:
    """n distinct kernels on A; B renames every tenth one and runs the last quarter in reverse."""
    a = [kernel(f"generated_kernel_{i}", f"aten::op{i % 50}") for i in range(n)]
    b = [kernel(f"{x.name}_renamed", x.role) if i % 10 == 0 else x for i, x in enumerate(a)]
    cut = n - n // 4
    return a, b[:cut] + b[cut:][::-1]


def test_memory_does_not_grow_with_the_square_of_distinct_names() -> None:
    # 6,600 distinct names: a class-by-class int32 matrix alone would be 6,600² × 4 B = 174 MB
    a, b = many_names(6_000)
    tracemalloc.start()
    try:
        rows = align(a, b)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 60 << 20, f"peak {peak / 2**20:.0f} MB"
    statuses = [r.status for r in rows]
    # renamed kernels outside the reversed quarter pair as changed (same launching op); the rest are same
    assert statuses.count(SAME) >= 4_000 and statuses.count(CHANGED) >= 400
    assert sorted(i for r in rows for i in r.a) == list(range(len(a)))
    assert sorted(j for r in rows for j in r.b) == list(range(len(b)))


NAMES = [f"k{i}" for i in range(8)]
ROLES = ["aten::mm", "aten::add", "aten::gelu", "", "aten::softmax"]
FAMILIES = ["gemm", "pointwise", "attention", "norm", "reduction"]
WORDS = [frozenset(), frozenset({"gelu"}), frozenset({"gelu", "mul"}), frozenset({"add"})]
ITEMS = st.builds(lambda n, r, f, w, kind: AlignItem(n, kind, f, w, r, False, 1.0), st.sampled_from(NAMES),
                  st.sampled_from(ROLES), st.sampled_from(FAMILIES), st.sampled_from(WORDS),
                  st.sampled_from(["kernel", "kernel", "kernel", "memcpy", "memset"]))


def _view(rows: list) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    return [(r.status, r.a, r.b) for r in rows]


@settings(max_examples=200, deadline=None)
@given(st.lists(ITEMS, max_size=30), st.lists(ITEMS, max_size=30))
def test_scores_computed_row_by_row_give_the_rows_of_the_matrix(a: list[AlignItem], b: list[AlignItem]) -> None:
    with_matrix = _view(align(a, b))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scores, "DENSE_MAX_CELLS", 0)
        assert _view(align(a, b)) == with_matrix
        mp.setattr(align_module, "_MAX_CELLS", 16)      # cut at anchors and halves too
        cut = _view(align(a, b))
    assert sorted(i for _, ia, _ in cut for i in ia) == list(range(len(a)))


def test_a_gap_of_many_distinct_ops_is_paired_on_coarser_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # every kernel differs and was launched by its own op: too many role pairs to score one by one
    monkeypatch.setattr(align_module, "_MAX_ROLE_PAIRS", 100)
    a = [kernel(f"a_gemm_{i}", f"aten::a{i}", "gemm") for i in range(40)]
    b = [kernel(f"b_gemm_{i}", f"aten::b{i}", "gemm") for i in range(40)]
    rows = align(a, b)
    # GEMMs play the same part whatever their op: paired in order as changed
    assert _view(rows) == [(CHANGED, (i,), (i,)) for i in range(40)]
