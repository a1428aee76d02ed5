"""The aligner on plain item lists: exact matches, memsets that must not steer it, fusion, roles."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mlptui.trace.diff.align import (
    ADDED,
    CHANGED,
    FUSED,
    MEMSET,
    REMOVED,
    SAME,
    AlignItem,
    align,
)
from mlptui.trace.diff.tokens import name_words, op_words


def k(name: str, family: str = "pointwise", role: str = "", ops: tuple[str, ...] = (),
      fusable: bool = False, kind: str = "kernel") -> AlignItem:
    return AlignItem(name, kind, family, op_words(ops, role), role, fusable, 1.0)


MS = k("Memset (Device)", "memset", "aten::mm", kind=MEMSET)
G1 = k("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "gemm", "aten::mm")
G2 = k("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT", "gemm", "aten::mm")
GELU = k("vectorized_elementwise_kernel<8, GeluCUDAKernelImpl>", role="aten::gelu", ops=("gelu",))
MUL = k("vectorized_elementwise_kernel<8, BinaryFunctor<MulFunctor>>", role="aten::mul", ops=("mul",))
FUSED_K = k("triton_poi_fused__unsafe_view_gelu_mul_0", role="triton_poi_fused__unsafe_view_gelu_mul_0",
            ops=("_unsafe_view", "gelu", "mul"), fusable=True)


def view(rows, a, b):
    return [(r.status, [a[i].name for i in r.a], [b[j].name for j in r.b]) for r in rows]


def test_words_reduce_three_spellings_of_gelu_mul_to_the_same_ops() -> None:
    assert name_words("LigerGELUMulFunction") == {"gelu", "mul"}
    assert name_words("triton_poi_fused__unsafe_view_gelu_mul_0") == {"gelu", "mul"}
    assert {"gelu", "mul"} <= name_words("_geglu_tanh_forward_kernel")
    assert name_words("aten::gelu") == {"gelu"}
    assert name_words("kernels_mlp_fwd") == set()


def test_identical_streams_are_all_same() -> None:
    a = [MS, G1, GELU, MS, G1, MUL, G2]
    rows = align(a, list(a))
    assert [r.status for r in rows] == [SAME] * 7
    assert [(r.a, r.b) for r in rows] == [((i,), (i,)) for i in range(7)]


def test_gelu_and_mul_fuse_into_the_inductor_kernel_placed_where_it_ran() -> None:
    a = [MS, G1, GELU, MS, G1, MUL, G2]
    b = [MS, G1, MS, G1, FUSED_K, G2]
    got = view(align(a, b), a, b)
    assert got[4] == (FUSED, [GELU.name, MUL.name], [FUSED_K.name])
    assert [s for s, _, _ in got] == [SAME, SAME, SAME, SAME, FUSED, SAME]
    # and the other way round: one kernel on A stands for two on B
    back = view(align(b, a), b, a)
    assert back[4] == (FUSED, [FUSED_K.name], [GELU.name, MUL.name])


def test_memsets_never_pull_kernels_out_of_alignment() -> None:
    # B lost every memset: the GEMMs still pair with each other, the memsets are reported removed.
    a = [MS, G1, MS, G1, G2]
    b = [G1, G1, G2]
    rows = align(a, b)
    assert [(r.status, r.a, r.b) for r in rows] == [
        (REMOVED, (0,), ()), (SAME, (1,), (0,)), (REMOVED, (2,), ()), (SAME, (3,), (1,)), (SAME, (4,), (2,))]


def test_other_gemm_config_is_changed_not_added_and_removed() -> None:
    other = k("volta_sgemm_128x32_nn", "gemm", "aten::addmm")
    a = [G1, GELU, G2]
    b = [G1, GELU, other]
    assert [r.status for r in align(a, b)] == [SAME, SAME, CHANGED]


def test_unrelated_pointwise_kernels_are_not_paired_as_changed() -> None:
    add = k("vectorized_elementwise_kernel<4, CUDAFunctor_add>", role="aten::add", ops=("add",))
    rows = align([G1, GELU], [G1, add])
    assert sorted(r.status for r in rows) == sorted([SAME, REMOVED, ADDED])


def test_a_lone_fusable_kernel_with_one_constituent_is_not_fused() -> None:
    rows = align([G1, GELU, G2], [G1, FUSED_K, G2])
    assert FUSED not in {r.status for r in rows}


NAMES = st.sampled_from([MS, G1, G2, GELU, MUL, FUSED_K])


@settings(max_examples=150, deadline=None)
@given(st.lists(NAMES, max_size=14), st.lists(NAMES, max_size=14))
def test_every_item_appears_exactly_once_and_in_order(a, b) -> None:
    rows = align(a, b)
    seen_a = [i for r in rows for i in r.a]
    seen_b = [j for r in rows for j in r.b]
    assert sorted(seen_a) == list(range(len(a)))
    assert sorted(seen_b) == list(range(len(b)))
    # Pairs (same/changed) never cross.
    pairs = [(r.a[0], r.b[0]) for r in rows if r.status in (SAME, CHANGED)]
    assert pairs == sorted(pairs) and [j for _, j in pairs] == sorted(j for _, j in pairs)
    for r in rows:
        if r.status == SAME:
            assert a[r.a[0]].name == b[r.b[0]].name
    if a == b:
        assert all(r.status == SAME for r in rows)


def test_long_inputs_cut_at_unique_anchors_give_the_same_rows(monkeypatch) -> None:
    import mlptui.trace.diff.align as mod

    a = [MS, G1, GELU, MS, G1, MUL, G2] * 6
    b = [MS, G1, MS, G1, FUSED_K, G2] * 6
    whole = align(a, b)
    monkeypatch.setattr(mod, "_MAX_CELLS", 16)
    cut = align(a, b)
    assert [r.status for r in cut].count(FUSED) == 6 == [r.status for r in whole].count(FUSED)
    assert sorted(i for r in cut for i in r.a) == list(range(len(a)))


def test_one_inductor_kernel_for_one_aten_kernel_of_another_family_is_changed() -> None:
    norm = k("vectorized_layer_norm_kernel", "norm", "aten::native_layer_norm", ("layer_norm",))
    red = k("triton_per_fused_native_layer_norm_0", "reduction", "triton_per_fused_native_layer_norm_0",
            ("native_layer_norm",), fusable=True)
    rows = align([G1, norm, G2], [G1, red, G2])
    assert [r.status for r in rows] == [SAME, CHANGED, SAME]
    # but a GEMM never pairs with a pointwise kernel, whatever their words
    add = k("vectorized_elementwise_kernel<4, CUDAFunctor_add>", role="aten::add", ops=("add",))
    addmm = k("sm80_xmma_gemm_bias", "gemm", "aten::addmm")
    assert sorted(r.status for r in align([addmm], [add])) == [ADDED, REMOVED]


def test_a_triton_gemm_with_geglu_epilogue_fuses_both_gemms_and_the_pointwise_ops() -> None:
    gateup = k("fused_geglu_gateup_gemm_kernel", "gemm", "fused_mlp_fwd", ("geglu", "gemm"), fusable=True)
    a = [MS, G1, GELU, MS, G1, MUL, G2]
    b = [gateup, G2]
    got = view(align(a, b), a, b)
    assert (FUSED, [G1.name, GELU.name, G1.name, MUL.name], [gateup.name]) in got
    assert [s for s, _, _ in got].count(REMOVED) == 2            # the memsets: nothing left to pair with
    assert got[-1] == (SAME, [G2.name], [G2.name])


def test_kernels_of_one_op_are_not_a_fusion() -> None:
    add2 = k("vectorized_elementwise_kernel<2, CUDAFunctor_add>", role="aten::add_", ops=("add",))
    add4 = k("other_add_kernel", role="CompiledFunctionBackward", ops=("add",), fusable=True)
    rows = align([G1, add2, add2, G2], [G1, add4, G2])
    assert FUSED not in {r.status for r in rows}
