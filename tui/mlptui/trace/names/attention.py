"""Fused attention kernels: FlashAttention (Dao-AILab and PyTorch's vendored copy), PyTorch's
memory-efficient CUTLASS kernels (`fmha_cutlassF_*`), cuDNN SDPA, TensorRT-LLM's generated FMHA
(`fmhaSm100aKernel_QkvE4m3OBfloat16…`: fp8 Q/K/V, bf16 out), aiter, FlashInfer, and Triton attention
kernels (`_attn_fwd`)."""

from __future__ import annotations

import re

from mlptui.trace.names.common import KernelName

_ATTENTION_HINTS = re.compile(
    r"flash_fwd|flash_bwd|flash::|pytorch_flash|FlashAttn|fmha|\battn_fwd|\battn_bwd|_attn_fwd|_attn_bwd|attention_kernel|"
    r"AttentionKernel|AttentionBackwardKernel|_sdpa|sdpa_|flashinfer|flash_attn|paged_attention|mha_fwd|mha_bwd",
    re.IGNORECASE,
)


def looks_like_attention(raw: str) -> bool:
    return _ATTENTION_HINTS.search(raw) is not None


def decode_attention(raw: str) -> KernelName:
    low = raw.lower()
    if "cudnn" in low:
        library = "cuDNN"
    elif low.startswith("fmhasm") or "trtllm" in low or "tensorrt_llm" in low or "fmha_v2" in low:
        library = "TensorRT-LLM"   # trtllm-gen FMHA (`fmhaSm100aKernel_…`), also what FlashInfer ships
    elif "aiter" in low:
        library = "aiter"
    elif "flashinfer" in low:
        library = "FlashInfer"
    elif "fmha_cutlass" in low or "attentionkernel" in low or "attentionbackwardkernel" in low or "xformers" in low:
        library = "CUTLASS"     # PyTorch's memory-efficient attention (from xFormers)
    elif "flash" in low:
        library = "FlashAttention"
    elif not raw.startswith("_Z") and (raw.lstrip("_").startswith("attn") or "triton" in low
                                        or re.match(r"^_\w+$", raw)):
        library = "Triton"      # a bare Python-style name; a mangled C++ symbol (_Z...) is not Triton
    else:
        library = "unknown"     # attention, but whose is not in the name
    backward = any(k in low for k in ("bwd", "backward", "dq_dk_dv", "dkdv", "_dq", "dot_do_o"))
    combine = "combine" in low
    splitkv = "splitkv" in low or "split_kv" in low
    dtype = None
    for needle, name in (("qkve4m3", "fp8e4m3"), ("bfloat16", "bf16"), ("bf16", "bf16"), ("half_t", "f16"), ("f16", "f16"),
                         ("fp16", "f16"), ("e4m3", "fp8e4m3"), ("float", "f32")):
        if needle in low:
            dtype = name
            break
    kind = "attention backward" if backward else "attention forward"
    if combine:
        kind = "attention split-kv combine"
    parts = [library, "attention", "bwd" if backward else "fwd"]
    if splitkv and not combine:
        parts.append("split-kv")
    if combine:
        parts = [library, "attention split-kv combine"]
    if dtype:
        parts.append(dtype)
    return KernelName(raw=raw, short=" ".join(parts), family="attention", library=library, kind=kind,
                      ops=("attention_backward" if backward else "attention",), dtype=dtype)
