"""Decode a GPU kernel's name into something a person can read: `decode_kernel(raw) -> KernelName`.

The raw name is always kept; `short` is one line for tables, `family` buckets time (gemm,
pointwise, reduction, norm, attention, copy, memset, comm, other) and `library` says whose kernel
it is. Each library family has its own module (names_blas, names_aten, names_triton, names_comm,
names_attention); this one routes a name to the right one and handles the rest. Decoding never
raises: a name nothing recognises still gets a short form and family "other".
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from mlptui.trace.names.aten import decode_aten, decode_cub, guess_family
from mlptui.trace.names.attention import decode_attention, looks_like_attention
from mlptui.trace.names.blas import (
    decode_arch_gemm,
    decode_cublas_helper,
    decode_cudnn_legacy,
    decode_cutlass,
    decode_nvjet,
    decode_tensile,
)
from mlptui.trace.names.comm import decode_nccl
from mlptui.trace.names.common import (
    FAMILIES,
    KernelName,
    demangle_outline,
    function_path,
    last_component,
    snake,
    truncate,
)
from mlptui.trace.names.libraries import decode_library
from mlptui.trace.names.triton import decode_inductor, decode_user_triton
from mlptui.trace.names.trtllm_gen import decode_trtllm_gen

__all__ = ["FAMILIES", "KernelName", "decode_kernel"]

_MEMCPY = re.compile(r"^Memcpy (\w+)(?: \((.*)\))?$")
_ARCH_GEMM = re.compile(r"^(?:ampere|volta|turing|maxwell|pascal|kepler|hopper|blackwell|sm\d+)_\w*(?:gemm|gemv|xmma)")
_BARE = re.compile(r"^[A-Za-z_]\w*$")


def _memory(raw: str) -> KernelName | None:
    if raw.startswith("Memset"):
        where = raw[len("Memset"):].strip(" ()") or None
        return KernelName(raw=raw, short=raw, family="memset", library="CUDA", kind="memset",
                          ops=("memset",), variant=where)
    m = _MEMCPY.match(raw)
    if m:
        direction = m.group(1)
        detail = (m.group(2) or "").replace("->", "→")
        short = f"Memcpy {direction}" + (f" ({detail})" if detail else "")
        return KernelName(raw=raw, short=short, family="copy", library="CUDA", kind=f"memcpy {direction}",
                          ops=("memcpy",), variant=m.group(2))
    if raw.startswith("__amd_rocclr_"):        # HIP runtime's own blit kernels
        fill = "fill" in raw.lower()
        return KernelName(raw=raw, short=f"HIP {'fill' if fill else 'copy'} ({raw[len('__amd_rocclr_'):]})",
                          family="memset" if fill else "copy", library="HIP", kind="memset" if fill else "memcpy",
                          ops=("memset" if fill else "memcpy",))
    return None


_CUDNN_NORM = ("bn_", "batchnorm", "batch_norm", "layernorm", "layer_norm", "norm_")
_CUBLAS_FUNCS = ("gemv", "gemmk1", "gemmSN", "sgemm_", "magma_", "splitKreduce", "scal_kernel", "dot_kernel",
                 "reduce_1Block_kernel", "nrm2", "axpy")
_FBGEMM_PREFIXES = ("split_embedding", "bounds_check_indices", "linearize_index", "permute_pooled_embs",
                    "recat_copy", "batched_unary_embeddings", "dense_embedding", "jagged_", "permute_2D")


def _cudnn_ns(raw: str, fn: str, detail: str | None = None) -> KernelName:
    """cuDNN's namespaced helpers (`cudnn::bn_fw_tr_...`, `cudnn::winograd...`) and conv engines.
    `detail` is searched for the conv direction when `fn` alone does not say it (mangled names)."""
    base = last_component(fn)
    low = fn.lower()
    if detail is not None and "implicitgemmconvolution" in detail.lower():
        base = "implicit GEMM"
    if any(k in low for k in _CUDNN_NORM):
        return KernelName(raw=raw, short=f"cuDNN batch_norm ({base})", family="norm", library="cuDNN", kind="norm",
                          ops=("batch_norm",))
    if "nchwtonhwc" in low or "nhwctonchw" in low or "transpose" in low:
        return KernelName(raw=raw, short=f"cuDNN layout transform ({base})", family="copy", library="cuDNN",
                          kind="copy", ops=("copy",))
    if "offsets" in low:
        return KernelName(raw=raw, short=f"cuDNN conv helper ({base})", family="other", library="cuDNN",
                          kind="conv helper", ops=("conv",))
    if "reduce" in low:
        return KernelName(raw=raw, short=f"cuDNN reduce ({base})", family="reduction", library="cuDNN",
                          kind="reduction", ops=("reduce",))
    if "scale" in low:
        return KernelName(raw=raw, short=f"cuDNN scale ({base})", family="pointwise", library="cuDNN",
                          kind="pointwise", ops=("scale",))
    kind = "conv winograd" if "winograd" in low else ("conv fft" if "fft" in low else "conv")
    where = (detail or fn).lower()
    if "wgrad" in where:
        kind += " wgrad"
    elif "dgrad" in where:
        kind += " dgrad"
    elif "fprop" in where:
        kind += " fprop"
    return KernelName(raw=raw, short=f"cuDNN {kind} ({base})", family="gemm", library="cuDNN", kind=kind,
                      ops=("conv",))


def _generic(raw: str, fn: str | None, library: str) -> KernelName:
    base = last_component(fn) if fn else raw
    family = guess_family(base if fn else raw)
    name = truncate(base or raw, 60)
    return KernelName(raw=raw, short=f"{name} ({library})", family=family, library=library, kind=family,
                      ops=(snake(base),) if base else ())


def _cpp(raw: str) -> KernelName:
    """A demangled C++ signature, routed by its namespace and function name."""
    fn, targs = function_path(raw)
    root = fn.split("::", 1)[0]
    base = last_component(fn)
    if "cutlass" in root:
        inner = targs[0] if targs else ""
        if inner.startswith("cutlass") and "::" not in inner.split("<", 1)[0]:
            return decode_cutlass(raw, inner, "cuDNN" if "cudnn" in root else "CUTLASS")
        if "ReduceSplitK" in raw:
            return KernelName(raw=raw, short="split-K reduce (cuDNN)" if "cudnn" in root else "split-K reduce (CUTLASS)",
                              family="reduction", library="cuDNN" if "cudnn" in root else "CUTLASS",
                              kind="splitK reduce", ops=("reduce",))
        if "Conv" in raw or "conv" in raw:
            return _cudnn_ns(raw, fn) if "cudnn" in root else _generic(raw, fn, "CUTLASS")
        return _generic(raw, fn, "cuDNN" if "cudnn" in root else "CUTLASS")
    if root in ("at", "c10", "anon") and (root != "anon" or any(
            k in base for k in ("softmax", "elementwise", "multi_tensor", "reduce", "norm", "Norm"))):
        return decode_aten(raw, fn, targs)
    if root == "cub" or fn.startswith("at_cuda_detail::cub") or root == "thrust":
        return decode_cub(raw, fn)
    if root.startswith("cudnn") or root.startswith("cask_cudnn") or base.startswith(("fft2d", "fft1d")) \
            or base in ("wgrad_alg0_engine", "wgrad_alg1_engine", "dgrad_engine", "dgrad2d_alg1_1"):
        return _cudnn_ns(raw, fn)
    if root in ("cublasLt", "cublas", "internal", "epilogue") or base.startswith(_CUBLAS_FUNCS):
        helper = decode_cublas_helper(raw, fn, targs)
        if helper is not None:
            return helper
        return _generic(raw, fn, "cuBLAS")
    if root == "fbgemm_gpu" or base.startswith(_FBGEMM_PREFIXES):
        kn = _generic(raw, fn, "FBGEMM")
        if "embedding" in base:
            return KernelName(raw=raw, short=kn.short, family="other", library="FBGEMM", kind="embedding",
                              ops=("embedding",))
        return kn
    if root in ("apex",) or (base == "multi_tensor_apply_kernel"):
        kn = decode_aten(raw, fn, targs)
        return KernelName(raw=raw, short=kn.short.replace("ATen", "Apex"), family=kn.family, library="Apex",
                          kind=kn.kind, ops=kn.ops)
    return _generic(raw, fn, "custom")


def _decode(raw: str) -> KernelName:
    name = raw.strip()
    if not name:
        return KernelName(raw=raw, short="(unnamed kernel)", family="other", library="unknown", kind="other")
    mem = _memory(name)
    if mem is not None:
        return mem
    if name.startswith("nvjet_"):
        return decode_nvjet(name)
    if name.startswith("triton"):
        kn = decode_inductor(name)
        if kn is not None:
            return kn
    if name.startswith("Cijk_"):
        return decode_tensile(name)
    if "nccl" in name[:24].lower():
        return decode_nccl(name)
    known = decode_library(name)
    if known is not None:
        return known
    gen = decode_trtllm_gen(name)
    if gen is not None:
        return gen
    if looks_like_attention(name):
        return decode_attention(name)
    if _ARCH_GEMM.match(name):
        return decode_arch_gemm(name)
    if name.startswith("cudnn_"):
        return decode_cudnn_legacy(name)
    if name.startswith("cutlass"):
        return decode_cutlass(name, name, "cuDNN" if "cudnn" in name else "CUTLASS")
    outline = demangle_outline(name)
    if outline is not None:
        kn = _cpp(outline + "(" if "(" not in outline else outline)
        if "cudnn" in outline and ("Conv" in name or "conv" in name):
            kn = _cudnn_ns(name, outline, detail=name)
        return replace(kn, raw=raw)
    if _BARE.match(name):
        if name.startswith("_") or name.endswith("kernel") or "_kernel_" in name:
            return decode_user_triton(name)
        return _generic(name, None, "custom")
    return _cpp(name)


MAX_DECODED_NAME = 4096     # longer names are decoded from their start (real ones: < 2,000 characters)


@lru_cache(maxsize=65536)
def decode_kernel(raw: str) -> KernelName:
    """Decode one kernel (or memcpy/memset) name. Cached: traces repeat the same few names. A name
    longer than MAX_DECODED_NAME is decoded from its start, in time linear in that bound; `raw` stays whole."""
    try:
        kn = _decode(raw if len(raw) <= MAX_DECODED_NAME else raw[:MAX_DECODED_NAME])
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return KernelName(raw=raw, short=truncate(raw, 60), family="other", library="unknown", kind="other")
    return kn if kn.raw == raw else replace(kn, raw=raw)
