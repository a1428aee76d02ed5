"""Kernel-name decoding: exact expectations for the names the MLP ladder and the article produce,
and a sweep over every kernel / memcpy / memset name in the corpus and the bundled samples."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlptui.trace.names.common import function_path
from mlptui.trace.names.kernel import FAMILIES, KernelName, _decode, decode_kernel
from mlptui.trace.names.triton import split_fused_ops

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "hta"
GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset"}

GELU_ATEN = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&,"
    " at::native::GeluType)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)"
)
MUL_ATEN = (
    "void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
    "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"
)

# raw name -> the fields that must match exactly
EXPECTED: list[tuple[str, dict]] = [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
     dict(family="gemm", library="cuBLAS nvjet", tile="256x128", k_tile=64, stages=4, cluster="1x2",
          layout="TNT", variant="coopA", dtype="bf16", epilogue=None,
          short="cuBLAS nvjet GEMM 256x128 TNT coopA")),
    ("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT",
     dict(family="gemm", library="cuBLAS nvjet", tile="64x8", k_tile=64, stages=16, cluster="1x2",
          layout="TNT", epilogue="bias", ops=("gemm", "bias"), short="cuBLAS nvjet GEMM 64x8 TNT +bias")),
    ("nvjet_sm90_tst_8x64_64x16_2x1_v_bz_bias_TNN",
     dict(family="gemm", tile="8x64", k_tile=64, stages=16, cluster="2x1", layout="TNN", epilogue="bias")),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_"
     "execute_kernel__5x_cublas",
     dict(family="gemm", library="cuBLAS", kind="gemm", dtype="f32", tile="32x32", k_tile=8, stages=3,
          layout="tn", variant="ffma")),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
     "kernel__5x_cublas",
     dict(family="gemm", library="cuBLAS", dtype="bf16", tile="128x128", k_tile=64, layout="tn",
          short="cuBLAS GEMM bf16 128x128 tn")),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
     dict(family="gemm", library="cuBLAS", dtype="bf16", tile="128x128", k_tile=32, stages=5, layout="tn")),
    ("volta_sgemm_128x64_nn", dict(family="gemm", library="cuBLAS", dtype="f32", tile="128x64", layout="nn")),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x1_tn_align8>"
     "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x1_tn_align8::Params)",
     dict(family="gemm", library="CUTLASS", dtype="bf16", tile="32x32", k_tile=32, stages=1, layout="tn")),
    ("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8",
     dict(family="gemm", library="CUTLASS", dtype="bf16", tile="64x64", k_tile=64, stages=4, layout="tn",
          epilogue="relu", ops=("gemm", "relu"), short="CUTLASS GEMM bf16 64x64 tn +relu")),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>"
     "(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)",
     dict(family="gemm", library="CUTLASS", dtype="tf32", tile="128x128", k_tile=16, stages=4, layout="nn")),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_"
     "tensor16x8x8_execute_kernel_cudnn_infer",
     dict(family="gemm", library="cuDNN", kind="conv fprop", dtype="tf32", tile="64x128", stages=5)),
    ("cudnn_infer_volta_scudnn_128x64_relu_xregs_large_nn_v1",
     dict(family="gemm", library="cuDNN", dtype="f32", tile="128x64", epilogue="relu")),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_WG64_4_1",
     dict(family="gemm", library="hipBLASLt", dtype="f32", tile="64x16", k_tile=32, layout="TN", epilogue="bias")),
    ("triton_poi_fused__unsafe_view_gelu_mul_0",
     dict(family="pointwise", library="Triton (Inductor)", kind="pointwise", ops=("unsafe_view", "gelu", "mul"),
          short="Inductor fused unsafe_view·gelu·mul")),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
     dict(family="norm", kind="reduction", ops=("to_copy", "add", "mean", "mul", "pow", "rsqrt"))),
    ("triton_per_fused_native_layer_norm_3",
     dict(family="norm", kind="persistent reduction", ops=("native_layer_norm",))),
    ("triton_red_fused_sum_1", dict(family="reduction", kind="reduction", ops=("sum",))),
    ("triton_tem_fused_mm_0", dict(family="gemm", kind="template", ops=("mm",))),
    ("triton_poi_fused_clone_2", dict(family="copy", ops=("clone",))),
    ("triton_poi_fused_add_cos_sin_0", dict(family="pointwise", ops=("add", "cos", "sin"))),
    ("triton__0d1d2d", dict(library="Triton (Inductor)", family="other")),
    (GELU_ATEN, dict(family="pointwise", library="ATen", ops=("gelu",), vector_width=4, dtype="bf16",
                     short="gelu (ATen, vec4)")),
    (MUL_ATEN, dict(family="pointwise", library="ATen", ops=("mul",), vector_width=8, dtype="bf16")),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
     dict(family="pointwise", ops=("add",), vector_width=4, dtype="f32")),
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
     "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, "
     "at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int> >(int, ...)",
     dict(family="copy", library="ATen", ops=("copy",), vector_width=None)),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
     "TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, "
     "std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, ...)",
     dict(family="pointwise", library="ATen", kind="foreach", ops=("add",))),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, "
     "float const*, float const*, float*, float*, float*)",
     dict(family="norm", library="ATen", ops=("layer_norm",))),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, "
     "int, int, int, bool const*, int, bool)",
     dict(family="reduction", library="ATen", kind="softmax", ops=("softmax",))),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
     "unsigned int, float, 4> >(at::native::ReduceOp<float, ...>)",
     dict(family="reduction", library="ATen", ops=("sum",))),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
     "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, "
     "float, 4>)",
     dict(family="reduction", ops=("mean",))),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
     dict(family="comm", library="NCCL", kind="allreduce", dtype="f32", variant="RING/LL",
          short="NCCL AllReduce Sum f32 RING/LL")),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     dict(family="comm", library="NCCL", kind="allreduce", dtype="f32", variant="RING/LL")),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", dict(family="comm", kind="sendrecv")),
    ("_geglu_tanh_forward_kernel",
     dict(family="pointwise", library="Triton", ops=("geglu",), short="geglu tanh forward (Triton)")),
    ("_rms_norm_forward_kernel", dict(family="norm", library="Triton", ops=("rms_norm",))),
    ("_fused_geglu_mlp_kernel", dict(family="gemm", library="Triton")),
    ("fused_geglu_gateup_gemm_kernel",
     dict(family="gemm", library="Triton", ops=("geglu", "gemm"), epilogue="geglu")),
    ("matmul_kernel", dict(family="gemm", library="Triton", epilogue=None)),
    ("Memset (Device)", dict(family="memset", library="CUDA", kind="memset", short="Memset (Device)")),
    ("Memcpy HtoD (Pageable -> Device)",
     dict(family="copy", library="CUDA", kind="memcpy HtoD", short="Memcpy HtoD (Pageable → Device)")),
    ("Memcpy DtoD (Device -> Device)", dict(family="copy", kind="memcpy DtoD")),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, "
     "false, true, true, false>(pytorch_flash::Flash_fwd_params)",
     dict(family="attention", library="FlashAttention", kind="attention forward", dtype="bf16")),
    ("fmha_cutlassB_f16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::"
     "Sm80, cutlass::half_t, true, false, false, 64, 64, 64, false>::Params)",
     dict(family="attention", library="CUTLASS", kind="attention backward")),
    ("void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800, false, "
     "long, int, int, int>(int*, int*, int*, int const*, long*, long const*, int*, int const*, int, int, int)",
     dict(library="CUB", kind="sort")),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cgasize1x2x1_warpgroupsize2x1x1_execute_"
     "segment_k_off_kernel__5x_cublas",
     dict(family="gemm", library="cuBLAS", tile="128x256", k_tile=64, cluster="1x2", layout="tn")),
    ("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_256x128x64_2x1x1_0_ntn_align8_warpspecialized_pingpong_epi_tma",
     dict(family="gemm", library="CUTLASS", dtype="f16", tile="256x128", k_tile=64, cluster="2x1", layout="ntn",
          short="CUTLASS GEMM f16 256x128 ntn pingpong")),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90"
     "<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, "
     "true, false>>>>(flash::Params)",
     dict(family="attention", library="FlashAttention", dtype="bf16")),
    ("cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x64_4x1x1_kernel0_0",
     dict(family="attention", library="cuDNN")),
    ("triton_tem_fused_addmm_gelu_0", dict(family="gemm", kind="template", ops=("addmm", "gelu"))),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
     dict(family="reduction", kind="softmax", dtype="bf16")),
    ("__amd_rocclr_fillBufferAligned", dict(family="memset", library="HIP")),
    ("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemm"
     "MultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgradOutputGradientTileAccessIteratorOptimized",
     dict(family="gemm", library="cuDNN", kind="conv wgrad", short="cuDNN conv wgrad (implicit GEMM)")),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, "
     "true, false, false, 7, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(...)",
     dict(family="gemm", library="cuBLAS", kind="gemv", dtype="f32")),
]


@pytest.mark.parametrize(("raw", "want"), EXPECTED, ids=[r[:48] for r, _ in EXPECTED])
def test_decode_exact(raw: str, want: dict) -> None:
    kn = decode_kernel(raw)
    assert kn.raw == raw
    got = {key: getattr(kn, key) for key in want}
    assert got == want


def test_decode_is_cached_and_frozen() -> None:
    a = decode_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
    assert decode_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT") is a
    with pytest.raises(AttributeError):
        a.family = "other"  # type: ignore[misc]


@pytest.mark.parametrize("raw", ["", " ", "(", ")", "<<<", "void ", "void f<", "_Z", "_ZN3foo", "x" * 5000,
                                 "triton_", "nvjet_", "Cijk_", "ncclDevKernel_", "cutlass_", "Memcpy ",
                                 "void at::native::reduce_kernel<", "sm90_xmma_gemm_", "\u00e9\u00e8<\u4e2d>"])
def test_degenerate_names_decode(raw: str) -> None:
    kn = decode_kernel(raw)
    assert kn.raw == raw
    assert kn.family in FAMILIES
    assert kn.short


_PIECES = st.sampled_from([
    "void ", "at::native::", "(anonymous namespace)::", "<", ">", "(", ")", ", ", "::", "{lambda()#1}", "_", "x",
    "gemm", "nvjet_", "triton_poi_fused_", "Cijk_", "cutlass_", "128x64", "_tn", "Functor<float>", "kernel",
    "ncclDevKernel_", "Memcpy ", "_Z", "N", "3foo", "sm90_xmma_", "stages_", "tilesize", "bf16", " const", "#",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join) | st.text(max_size=80))
def test_decoders_never_raise(raw: str) -> None:
    kn = _decode(raw)       # the routed decoders themselves, without decode_kernel's last-resort guard
    assert kn.family in FAMILIES and isinstance(kn.short, str) and kn.short


def test_split_fused_ops_uses_the_aten_vocabulary() -> None:
    assert split_fused_ops("_native_layer_norm_add") == ("native_layer_norm", "add")
    assert split_fused_ops("_to_copy_mean_pow") == ("to_copy", "mean", "pow")
    assert split_fused_ops("") == ()


def test_function_path_skips_return_types_and_lambdas() -> None:
    fn, targs = function_path(MUL_ATEN)
    assert fn == "at::native::vectorized_elementwise_kernel"
    assert targs[0] == "8"
    fn, _ = function_path("std::enable_if<!(false), void>::type internal::gemvx::kernel<int>(int)")
    assert fn == "internal::gemvx::kernel"


def _gpu_names(path: Path) -> set[str]:
    with gzip.open(path, "rb") as fh:
        data = orjson.loads(fh.read())
    events = data if isinstance(data, list) else data.get("traceEvents", [])
    if not isinstance(events, list):
        return set()
    return {e["name"] for e in events
            if isinstance(e, dict) and e.get("cat") in GPU_CATS and isinstance(e.get("name"), str)}


@pytest.fixture(scope="module")
def real_names() -> set[str]:
    paths = sorted((REPO / "sample_traces").glob("*.json.gz"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.glob("*.json.gz"))
    names: set[str] = set()
    for p in paths:
        try:
            names |= _gpu_names(p)
        except (OSError, orjson.JSONDecodeError, EOFError):
            continue    # the corpus holds deliberately broken files; the loader's tests cover those
    return names


_GEMM_LOOKING = re.compile(r"(?<!fb)gemm|gemv|^nvjet_|^Cijk_", re.IGNORECASE)


def test_every_real_name_decodes_sensibly(real_names: set[str]) -> None:
    assert len(real_names) > (400 if CORPUS.is_dir() else 5)
    for raw in real_names:
        kn = decode_kernel(raw)
        assert isinstance(kn, KernelName)
        assert kn.raw == raw
        assert kn.family in FAMILIES, raw
        assert kn.library and kn.library != "unknown", raw     # the guarded fallback never fired
        assert kn.short and len(kn.short) <= 100, raw
        assert "\n" not in kn.short
        if _GEMM_LOOKING.search(raw):
            assert kn.family == "gemm", raw
        if raw.startswith("Memcpy"):
            assert kn.family == "copy"
        if raw.startswith("Memset"):
            assert kn.family == "memset"
        if raw.startswith("triton_"):
            assert kn.library == "Triton (Inductor)"
        if "nccl" in raw.lower():
            assert kn.family == "comm"


def test_sample_trace_kernels_tell_the_article_story(real_names: set[str]) -> None:
    shorts = {decode_kernel(n).short for n in real_names}
    assert "cuBLAS nvjet GEMM 256x128 TNT coopA" in shorts
    assert "Inductor fused unsafe_view·gelu·mul" in shorts
    assert "gelu (ATen, vec8)" in shorts
    assert "mul (ATen, vec8)" in shorts
