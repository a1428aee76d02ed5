"""Name decoding of every attention kernel family: the fused kernels of the attention samples (H100),
and the serving corpus's FMHA kernels (CK-tile on MI300X, TensorRT-LLM's on B200), read from the traces
themselves; hand-written names only for families no trace here holds."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from attention_support import attention_sample

from mlptui.trace.analysis.attention.attention import implementation
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
from mlptui.trace.names.kernel import decode_kernel

REAL = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"


def _kernel_names(path: Path) -> set[str]:
    data = json.loads(gzip.decompress(path.read_bytes()))
    events = data["traceEvents"] if isinstance(data, dict) else data
    return {e["name"] for e in events if e.get("cat") == "kernel"}


def _one(names: set[str], needle: str) -> str:
    found = sorted(n for n in names if needle in n)
    assert found, f"no kernel with {needle!r}"
    return found[0]


@pytest.mark.parametrize(("workload", "needle", "library", "word", "dtype"), [
    ("attention-sdpa-flash", "pytorch_flash::flash_fwd_kernel", "FlashAttention", "flash", "bf16"),
    ("attention-sdpa-efficient", "fmha_cutlassF_", "CUTLASS", "efficient", "bf16"),
    ("attention-sdpa-cudnn", "cudnn_generated_", "cuDNN", "cudnn", "f16"),
])
def test_sdpa_backends_kernels_decode(workload, needle, library, word, dtype) -> None:
    raw = _one(_kernel_names(attention_sample(workload)), needle)
    name = decode_kernel(raw)
    assert (name.family, name.library, name.dtype) == ("attention", library, dtype)
    impl = implementation(raw)
    assert impl is not None and impl.word == word
    assert uses_tensor_cores(raw)


def test_math_backend_gemms_are_fp32_cuda_core_gemms() -> None:
    names = _kernel_names(attention_sample("attention-sdpa-math"))
    gemms = [n for n in names if "gemm" in n]
    assert len(gemms) == 2
    for raw in gemms:
        name = decode_kernel(raw)
        assert name.family == "gemm" and name.dtype == "f32" and not uses_tensor_cores(raw)
        assert implementation(raw) is None


@pytest.mark.parametrize(("trace", "needle", "library", "word", "dtype"), [
    ("AMD-AGI__TraceLens__inference_sglang_prefilldecode_sglang_Qwen3-8B_prefilldecode.json.gz",
     "FmhaBatchPrefillWithPagedKVCacheKernel", "CK-tile", "ck", "bf16"),
    ("AMD-AGI__TraceLens__b200_eager_trace.json.gz", "fmhaSm100aKernel_QkvE4m3", "TensorRT-LLM", "trtllm", "fp8e4m3"),
    ("AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz", "pytorch_flash::flash_fwd_kernel",
     "FlashAttention", "flash", "bf16"),
])
def test_serving_corpus_attention_kernels_keep_decoding(trace, needle, library, word, dtype) -> None:
    path = REAL / trace
    if not path.exists():
        pytest.skip(f"corpus trace {trace} not found")
    raws = [n for n in _kernel_names(path) if needle in n]
    assert raws
    for raw in raws:
        name = decode_kernel(raw)
        assert (name.family, name.library, name.dtype) == ("attention", library, dtype)
        impl = implementation(raw)
        assert impl is not None and impl.word == word


def test_corpus_kernels_that_only_mention_an_attention_library_are_not_attention() -> None:
    path = REAL / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"
    if not path.exists():
        pytest.skip("corpus trace not found")
    quantize = _one(_kernel_names(path), "tensorrt_llm::kernels::quantize_with_block_size")
    assert "flashinfer::" in quantize
    assert decode_kernel(quantize).family != "attention" and implementation(quantize) is None
    cache = _one(_kernel_names(path), "reshape_and_cache_flash_kernel")
    assert implementation(cache) is None


@pytest.mark.parametrize(("raw", "library", "word", "label"), [
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>, "
     "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
     "FlashAttention", "flash", "FlashAttention-2"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90"
     "<2, cute::tuple<cute::C<1>>, cute::tuple<cute::C<128>>, 64, cutlass::bfloat16_t, float, cutlass::arch::Sm90>>>>",
     "FlashAttention", "flash", "FlashAttention-3"),
    ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<128u, 4u, (flashinfer::QKVLayout)0>"
     "(flashinfer::BatchPrefillParams)", "FlashInfer", "flashinfer", "FlashInfer"),
    ("_ZN5aiter24fmha_fwd_hd128_bf16_causalE", "aiter", "aiter", "aiter FMHA"),
    ("aiter::fmha_fwd_hd128_bf16_causal", "aiter", "aiter", "aiter FMHA"),
    ("_attn_fwd", "Triton", "triton", "Triton attention"),
])
def test_families_no_trace_here_holds(raw, library, word, label) -> None:
    name = decode_kernel(raw)
    assert name.family == "attention" and name.library == library
    impl = implementation(raw)
    assert impl is not None and impl.word == word and impl.label.startswith(label)
