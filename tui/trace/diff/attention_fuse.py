"""The diff's ⊕ for attention: one fused attention kernel (FlashAttention, the memory-efficient CUTLASS
kernel, cuDNN's) stands for the kernels the other side ran to compute the same attention step by step.

Those are the other side's unmatched kernels and copies in the fused kernel's gap (between the exact
matches around it) that were launched beneath an attention op (`aten::scaled_dot_product_attention`
and its math decomposition); where none were (attention written by hand from matmul, mask and softmax),
every unmatched kernel and copy of the gap, provided the gap holds both a GEMM and a softmax.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from mlptui.trace.diff.align import FUSED, KERNEL, MEMSET, AlignItem, Row

# Ops under which every kernel computes part of one attention call.
ATTENTION_CALL_OPS = frozenset({"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math"})


def attention_rows(side: Sequence[AlignItem], other: Sequence[AlignItem], anchors_side: list[int],
                   anchors_other: list[int], used_side: set[int], used_other: set[int],
                   b_side: bool) -> list[Row]:
    rows: list[Row] = []
    for x, item in enumerate(side):
        if x in used_side or item.kind != KERNEL or item.family != "attention":
            continue
        k = bisect.bisect_right(anchors_side, x)
        lo = anchors_other[k - 1] + 1 if k > 0 else 0
        hi = anchors_other[k] if k < len(anchors_other) else len(other)
        gap = [y for y in range(lo, hi) if y not in used_other and other[y].kind != MEMSET
               and other[y].family != "attention"]
        chosen = [y for y in gap if other[y].under_attention]
        if not chosen:
            has_gemm = any(other[y].family == "gemm" for y in gap)
            has_softmax = any("softmax" in other[y].words or "softmax" in other[y].role for y in gap)
            chosen = gap if has_gemm and has_softmax else []
        if len(chosen) < 2:
            continue
        used_side.add(x)
        used_other.update(chosen)
        rows.append(Row(FUSED, tuple(chosen), (x,)) if b_side else Row(FUSED, (x,), tuple(chosen)))
    return rows
