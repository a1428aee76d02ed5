"""Kernel families recognised by their library's own marks, before the generic heuristics see them.

    decode_library(raw) -> KernelName | None     None: not one of these, let the other decoders try

- Volta/Turing-era cuDNN: `volta_scudnn_128x64_relu_interior_nn_v1` (no `cudnn_` prefix) and the
  implicit-GEMM engines `implicit_convolve_sgemm<...>`, `explicit_convolve_sgemm`, `precomputed_convolve_sgemm`.
- CK-tile (`ck_tile::kentry<...>`, mangled `_ZN7ck_tile6kentry...`): FMHA (attention), RMSNorm and LayerNorm
  (norm), GEMMs; composable_kernel's older `ck::tensor_operation` kernels (convolutions, GEMMs).
  Element types are read from the Itanium mangling: `DF16b` is bf16, `DF16_` f16.
- MIOpen: `igemm_{fwd,bwd,wrw}_gtc*` convolutions, `MIOpen*`/`miopen*` kernels, `batched_transpose_*`
  and `transpose_NCHW2CNHW*` layout copies, `SubTensorOp*`/`OpTensor*` elementwise ops.
- aiter (`aiter::`), vLLM / SGLang (`vllm::`, `sgl_hip::`), TensorRT-LLM (`tensorrt_llm::`) and FlashInfer
  (`flashinfer::`) kernels, by the namespace of the function itself (not of a type among its arguments:
  TensorRT-LLM's quantize kernel takes a `flashinfer::` layout and is no attention kernel); within one,
  collectives, norms, KV-cache writes, attention, quantization and GEMMs by the function's name.
- Symmetric-memory collectives (`multimem_all_reduce_kernel`, `one_shot_all_reduce`, `two_shot_all_reduce`):
  communication.

A family this module does not know stays with the generic decoders; one it knows but cannot place
gets the library's name and family "other" rather than a guess.
"""

from __future__ import annotations

import re

from mlptui.trace.names.aten import guess_family
from mlptui.trace.names.blas import decode_cudnn_legacy
from mlptui.trace.names.common import KernelName, truncate

_OLD_CUDNN = re.compile(r"^(?:volta|turing|maxwell|pascal|kepler|ampere)_[a-z]?cudnn_")
_CUDNN_ENGINES = re.compile(r"\b(implicit_convolve_sgemm|explicit_convolve_sgemm|precomputed_convolve_sgemm|"
                            r"implicit_convolve_hhgemm|implicit_convolve_dgemm)\b")
_SYMM_ALL_REDUCE = re.compile(r"\b(multimem_all_reduce|one_shot_all_reduce|two_shot_all_reduce|"
                              r"multimem_all_gather|multimem_reduce_scatter)\w*")
_MIOPEN_IGEMM = re.compile(r"^igemm_(fwd|bwd|wrw)_gtc")
_MIOPEN_PREFIXES = ("MIOpen", "miopen", "naive_conv_", "gridwise_convolution", "SubTensorOp", "OpTensor",
                    "Op1dTensor", "Op2dTensor", "Op3dTensor", "Op4dTensor", "Op5dTensor", "batched_transpose_",
                    "transpose_NCHW2CNHW", "transpose_CNHW2NCHW", "Im2Col", "Col2Im", "Conv_Winograd",
                    "ConvHipImplicitGemm", "gcnAsmConv")
# Mangled element types, most specific first ("DF16b" before "DF16_").
_MANGLED_TYPES = (("DF16b", "bf16"), ("bfloat16", "bf16"), ("BFloat16", "bf16"), ("bf16", "bf16"), ("DF16_", "f16"),
                  ("half", "f16"), ("Half", "f16"), ("fp16", "f16"), ("fp8", "fp8"), ("e4m3", "fp8"), ("f8", "fp8"))
_NAMESPACES = (("aiter", "aiter"), ("vllm", "vLLM"), ("sgl_hip", "SGLang"), ("sglang", "SGLang"),
               ("tensorrt_llm", "TensorRT-LLM"), ("flashinfer", "FlashInfer"))


def _element_type(raw: str) -> str | None:
    for needle, name in _MANGLED_TYPES:
        if needle in raw:
            return name
    return None


def _kn(raw: str, what: str, family: str, library: str, kind: str, ops: tuple[str, ...] = (),
        dtype: str | None = None) -> KernelName:
    short = f"{library} {what}" + (f" {dtype}" if dtype else "")
    return KernelName(raw=raw, short=short, family=family, library=library, kind=kind, ops=ops, dtype=dtype)


def _ck_tile(raw: str) -> KernelName:
    low = raw.lower()
    dtype = _element_type(raw)
    if "fmha" in low:
        backward = "bwd" in low or "backward" in low
        what = "attention " + ("bwd" if backward else "fwd")
        if "pagedkv" in low:
            what += " paged-KV"
        return _kn(raw, what, "attention", "CK-tile", "attention backward" if backward else "attention forward",
                   ("attention_backward" if backward else "attention",), dtype)
    if "rmsnorm" in low:
        return _kn(raw, "RMSNorm", "norm", "CK-tile", "norm", ("rms_norm",), dtype)
    if "layernorm" in low:
        return _kn(raw, "LayerNorm", "norm", "CK-tile", "norm", ("layer_norm",), dtype)
    if "gemm" in low:
        return _kn(raw, "GEMM", "gemm", "CK-tile", "gemm", ("gemm",), dtype)
    return _kn(raw, "kernel", "other", "CK-tile", "other", (), dtype)


def _ck(raw: str, base: str) -> KernelName:
    low = raw.lower()
    dtype = _element_type(raw)
    if "conv" in low:
        what = "conv bwd weight" if "bwd_weight" in low else ("conv bwd data" if "bwd_data" in low else "conv")
        return _kn(raw, what, "gemm", "CK", what, ("conv",), dtype)
    if "gemm" in low:
        what = "GEMM bwd weight" if "bwd_weight" in low else "GEMM"
        return _kn(raw, what, "gemm", "CK", "gemm", ("gemm",), dtype)
    family = guess_family(base)
    return _kn(raw, truncate(base, 50), family, "CK", family, (), dtype)


def _miopen(raw: str, name: str) -> KernelName:
    low = name.lower()
    m = _MIOPEN_IGEMM.match(name)
    if m is not None:
        direction = {"fwd": "fprop", "bwd": "dgrad", "wrw": "wgrad"}[m.group(1)]
        dtype = next((t for t in ("bf16", "fp16", "fp32") if f"_{t}_" in name), None)
        dtype = {"fp16": "f16", "fp32": "f32"}.get(dtype or "", dtype)
        return _kn(raw, f"conv iGEMM {direction}", "gemm", "MIOpen", f"conv {direction}", ("conv",), dtype)
    if "transpose" in low:
        return _kn(raw, f"layout transform ({truncate(name, 40)})", "copy", "MIOpen", "copy", ("copy",))
    if name.startswith(("SubTensorOp", "OpTensor", "Op1dTensor", "Op2dTensor", "Op3dTensor", "Op4dTensor",
                        "Op5dTensor")):
        return _kn(raw, f"tensor op ({name})", "pointwise", "MIOpen", "pointwise", ("elementwise",))
    if "batchnorm" in low or "bnfwd" in low or "bnbwd" in low:
        return _kn(raw, f"batch_norm ({truncate(name, 40)})", "norm", "MIOpen", "norm", ("batch_norm",))
    if "conv" in low or "im2col" in low or "col2im" in low:
        return _kn(raw, f"conv ({truncate(name, 40)})", "gemm", "MIOpen", "conv", ("conv",))
    family = guess_family(name)
    return _kn(raw, truncate(name, 50), family, "MIOpen", family)


def _mangled_path(raw: str) -> list[str]:
    """`_ZN5aiter24add_rmsnorm_quant_kernelI...` -> ["aiter", "add_rmsnorm_quant_kernel"] (Itanium nested name)."""
    if not raw.startswith("_ZN"):
        return []
    parts: list[str] = []
    i = 3
    while i < len(raw) and raw[i].isdigit() and len(parts) < 16:
        j = i
        while j < len(raw) and raw[j].isdigit():
            j += 1
        n = int(raw[i:j])
        parts.append(raw[j:j + n])
        i = j + n
    return parts


def _namespace(raw: str) -> tuple[str, str] | None:
    """(library, function) of a kernel in a known namespace, demangled or mangled."""
    path = _mangled_path(raw)
    best: tuple[int, str, str] | None = None
    for ns, library in _NAMESPACES:
        if len(path) >= 2 and path[0] == ns:
            return library, path[-1]
        # the function: the first such name that starts a declaration word (after the return type), not
        # a type inside template arguments (`<vllm::_typeConvert...`, `<flashinfer::KernelTraits...`)
        m = re.search(rf"(?:^|(?<=\s)){ns}::(?:\w+::)*(\w+)\s*[<(]", raw)
        if m is not None and (best is None or m.start() < best[0]):
            best = (m.start(), library, m.group(1))
    return None if best is None else (best[1], best[2])


_COMM_HINTS = ("allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter", "alltoall",
               "cross_device_reduce", "lamport")
_ATTENTION_HINTS = ("attention", "fmha", "prefill", "batchdecode", "singledecode", "mergestate", "merge_state",
                    "paged_attn", "mla")
_CACHE_WRITES = ("reshape_and_cache", "concat_and_cache", "store_kvcache", "kvcache_copy")


def _by_namespace(raw: str, library: str, fn: str) -> KernelName:
    low = fn.lower()
    dtype = _element_type(raw[:300])
    if any(h in low for h in _COMM_HINTS):
        return _kn(raw, f"collective ({truncate(fn, 40)})", "comm", library, "collective", (fn,), dtype)
    if "rmsnorm" in low or "rms_norm" in low:
        return _kn(raw, f"RMSNorm ({truncate(fn, 40)})", "norm", library, "norm", ("rms_norm",), dtype)
    if "layernorm" in low or "layer_norm" in low:
        return _kn(raw, f"LayerNorm ({truncate(fn, 40)})", "norm", library, "norm", ("layer_norm",), dtype)
    if any(h in low for h in _CACHE_WRITES):
        return _kn(raw, f"KV-cache write ({truncate(fn, 40)})", "copy", library, "kv-cache write", ("copy",), dtype)
    if any(h in low for h in _ATTENTION_HINTS):
        backward = "bwd" in low or "backward" in low
        return _kn(raw, f"attention {'bwd' if backward else 'fwd'} ({truncate(fn, 40)})", "attention", library,
                   "attention backward" if backward else "attention forward",
                   ("attention_backward" if backward else "attention",), dtype)
    if "quant" in low:
        return _kn(raw, f"quantize ({truncate(fn, 40)})", "other", library, "quantize", ("quantize",), dtype)
    if "gemm" in low or "bmm" in low or "matmul" in low:
        return _kn(raw, f"GEMM ({truncate(fn, 40)})", "gemm", library, "gemm", ("gemm",), dtype)
    family = guess_family(fn)
    return KernelName(raw=raw, short=f"{truncate(fn, 50)} ({library})", family=family, library=library,
                      kind=family, ops=(fn,), dtype=dtype)


def decode_library(raw: str) -> KernelName | None:
    name = raw.strip()
    bare = name[5:] if name.startswith("void ") else name
    if _OLD_CUDNN.match(bare):
        return decode_cudnn_legacy(bare)
    m = _CUDNN_ENGINES.search(bare[:80])
    if m is not None:
        return _kn(raw, f"conv implicit GEMM ({m.group(1)})", "gemm", "cuDNN", "conv", ("conv",),
                   _element_type(bare[:200]) or ("f32" if "<float" in bare[:200] else None))
    if bare.startswith(("nchwToNhwcKernel", "nhwcToNchwKernel")) and "cudnn" in bare:
        return _kn(raw, f"layout transform ({bare.split('<', 1)[0]})", "copy", "cuDNN", "copy", ("copy",))
    m = _SYMM_ALL_REDUCE.search(bare[:120])
    if m is not None:
        what = m.group(1).replace("_", " ")
        return _kn(raw, what, "comm", "symmetric memory", "all-reduce" if "all_reduce" in m.group(1) else what,
                   ("all_reduce",) if "all_reduce" in m.group(1) else (m.group(1),), _element_type(bare[:200]))
    if bare.startswith("_ZN7ck_tile") or bare.startswith("ck_tile::"):
        return _ck_tile(raw)
    if bare.startswith("_ZN2ck") or bare.startswith("ck::"):
        fn = re.search(r"(kernel_\w+?)(?:I|<|$)", bare[:300])
        return _ck(raw, fn.group(1) if fn else "kernel")
    if _MIOPEN_IGEMM.match(bare) or bare.startswith(_MIOPEN_PREFIXES):
        return _miopen(raw, bare.split("(", 1)[0].split("<", 1)[0])
    ns = _namespace(bare[:200])
    if ns is not None:
        return _by_namespace(raw, *ns)
    return None
