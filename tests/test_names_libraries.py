"""Kernel families named by their library's own marks, one test per family, with names taken from real
traces (V100 ResNet, MI210/MI300X training, SGLang on MI300X, an LLM serving step on B200)."""

from __future__ import annotations

import pytest

from mlptui.trace.names.kernel import decode_kernel

CK_FMHA = ("_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipeline"
           "QRKSVSAsyncINS_36BlockFmhaBatchPrefillPipelineProblemIDF16bDF16bDF16bffDF16bhfDF16bfDF16bNS_13TileFmha")
CK_RMSNORM = ("_ZN7ck_tile6kentryILi1ENS_15Rmsnorm2dFwdINS_23Rmsnorm2dFwdPipelineOnePassINS_22Rmsnorm2dFwdProblem"
              "IDF16_fDF16_ffNS_18Rmsnorm2dShapeEEEvT_")
TRT_QUANT = ("void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, "
             "__nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, "
             "unsigned int*, flashinfer::QuantizationSFLayout)")
MULTIMEM = ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
            "unsigned int**, unsigned long, unsigned long)")


def test_volta_cudnn_convolutions_are_cudnn_convs() -> None:
    for raw in ("volta_scudnn_128x64_relu_interior_nn_v1", "volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
                "volta_scudnn_128x128_stridedB_splitK_small_nn_v1"):
        k = decode_kernel(raw)
        assert (k.family, k.library, k.dtype) == ("gemm", "cuDNN", "f32"), raw
        assert k.kind.startswith("conv")
    implicit = decode_kernel("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>"
                             "(int, int, int, float const*, int, float*, float const*, kernel_conv_params)")
    assert (implicit.family, implicit.library, implicit.kind) == ("gemm", "cuDNN", "conv")


def test_ck_tile_fmha_is_ck_attention_in_bf16() -> None:
    k = decode_kernel(CK_FMHA)
    assert (k.family, k.library, k.dtype) == ("attention", "CK-tile", "bf16")
    assert "Triton" not in k.short


def test_ck_tile_rmsnorm_is_a_norm() -> None:
    k = decode_kernel(CK_RMSNORM)
    assert (k.family, k.library, k.dtype, k.ops) == ("norm", "CK-tile", "f16", ("rms_norm",))


def test_tensorrt_llm_quantize_is_quantization_not_attention() -> None:
    k = decode_kernel(TRT_QUANT)
    assert (k.family, k.library, k.kind) == ("other", "TensorRT-LLM", "quantize")


def test_multimem_all_reduce_is_communication() -> None:
    k = decode_kernel(MULTIMEM)
    assert (k.family, k.kind, k.dtype) == ("comm", "all-reduce", "bf16")


def test_miopen_kernels() -> None:
    conv = decode_kernel("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_ws1x1_wr2x2_ta1x4x1x1_1x4x1x64")
    assert (conv.family, conv.library, conv.kind, conv.dtype) == ("gemm", "MIOpen", "conv wgrad", "bf16")
    assert decode_kernel("batched_transpose_16x32_half").library == "MIOpen"
    assert decode_kernel("batched_transpose_16x32_half").family == "copy"
    assert (decode_kernel("SubTensorOpWithScalar1d").family, decode_kernel("SubTensorOpWithScalar1d").library) == (
        "pointwise", "MIOpen")
    ck_conv = decode_kernel("_ZN2ck16tensor_operation6device12_GLOBAL__N_149kernel_grouped_conv_fwd_multiple_abd_xdl"
                            "_cshuffleINS_34GridwiseGemmMultipleD_xdl_cshuffleItttftNS_5Tuple")
    assert (ck_conv.family, ck_conv.library, ck_conv.kind) == ("gemm", "CK", "conv")


def test_serving_namespaces() -> None:
    aiter = decode_kernel("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_")
    assert (aiter.family, aiter.library) == ("norm", "aiter")
    vllm = decode_kernel("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
                         "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)")
    assert (vllm.family, vllm.library) == ("norm", "vLLM")


def test_unsure_attention_says_unknown_rather_than_a_wrong_library() -> None:
    # TensorRT-LLM's generated FMHA: the B200 corpus trace launches it from FlashInfer's
    # trtllm_batch_context_with_kv_cache (its Python frames), so the name's `fmhaSm…Kernel_` form is theirs
    k = decode_kernel("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext")
    assert (k.family, k.library) == ("attention", "TensorRT-LLM")
    assert decode_kernel("void some::fmha_kernel<float>(int)").library == "unknown"
    # a mangled C++ symbol is never called Triton, even when it looks like attention
    assert decode_kernel("_ZN3foo10fmha_fwd_kIfEEvv").library != "Triton"


def test_device_architecture_in_the_vendors_words() -> None:
    from mlptui.render.summary_text import _device_line
    from mlptui.trace.analysis.events.device_arch import device_arch
    from mlptui.trace.reports.common import DeviceArch

    mi300 = {"name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4, "numSms": 304, "warpSize": 64}
    assert device_arch(mi300) == DeviceArch(vendor="AMD", arch="gfx942", units="CUs", count=304)
    assert device_arch({**mi300, "gcnArchName": "gfx942:sramecc+:xnack-"}).arch == "gfx942"
    unnamed = {"name": "", "computeMajor": 9, "computeMinor": 4, "numSms": 304}
    assert device_arch(unnamed, {"hip_runtime_version": 60443483}).vendor == "AMD"
    line = _device_line(unnamed, device_arch(unnamed, {"hip_runtime_version": 1}), 1)
    # an unnamed device is named from what the header has (its vendor and architecture), never left blank
    assert line.startswith("device: AMD gfx9") and "sm" not in line and ", ," not in line and "CUs" in line
    h100 = {"name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132, "warpSize": 32}
    assert (device_arch(h100).arch, device_arch(h100).word, device_arch(h100).units) == ("sm_90", "sm90", "SMs")


SERVING_KERNELS = [
    ("void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, "
     "unsigned int, unsigned int, float)", "norm", "FlashInfer"),
    ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<>, __nv_bfloat16>"
     "(flashinfer::PagedParams)", "attention", "FlashInfer"),
    ("void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>"
     "(tensorrt_llm::kernels::ar_fusion::AllReduceFusionParams)", "comm", "TensorRT-LLM"),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>"
     "(__nv_bfloat16 const*, __nv_bfloat16 const*)", "copy", "vLLM"),
    ("Op2dTensorGeneric", "pointwise", "MIOpen"),
]


@pytest.mark.parametrize(("name", "family", "library"), SERVING_KERNELS, ids=lambda v: str(v)[:24])
def test_serving_library_functions_by_their_own_names(name: str, family: str, library: str) -> None:
    decoded = decode_kernel(name)
    assert (decoded.family, decoded.library) == (family, library)
