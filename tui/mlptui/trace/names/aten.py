"""ATen's own CUDA kernels (`at::native::...`), and the helpers ATen pulls in (CUB).

ATen names are demangled templates: the kernel template says the *shape* of the work
(`vectorized_elementwise_kernel<4, ...>` = pointwise, 4 elements per access;
`reduce_kernel<...>` = reduction) and a functor or the lambda's enclosing function says the op
(`GeluCUDAKernelImpl(...)::{lambda...}` = gelu, `binary_internal::MulFunctor<float>` = mul).
"""

from __future__ import annotations

import re
from dataclasses import replace

from mlptui.trace.names.common import KernelName, last_component, short_dtype, snake

_BINARY_FUNCTOR = re.compile(r"binary_internal::(\w+?)Functor\b")
_CUDA_FUNCTOR = re.compile(r"CUDAFunctor(?:OnSelf|OnOther)?_(\w+?)<")
_OWNER = re.compile(r"::(\w+)(?:<(?:[^<>()]|<[^<>()]*>)*>)?\((?:at::Tensor|c10::Scalar)")
_FUNCTOR = re.compile(r"(?:::|<|\s)(\w+?)Functor<")
_STD_OP = re.compile(r"std::(plus|minus|multiplies|divides)<")
_REDUCE_OPS = re.compile(r"ReduceOp<[^,]+,\s*(?:at::native::)?(?:\w+::)?(\w+?)Ops<")
_REDUCE_FUNC = re.compile(r"(\w+?)_functor<")

_WRAPPERS = frozenset({"binary", "a_unary", "b_unary", "unary", "cuda", "binary_op_scalar", "binary_op_list",
                       "binary_op_list_alpha", "unary_op", "pointwise_op_scalar", "pointwise_op_list",
                       "ternary_op_list", "ternary_op_scalar", "binary_op_scalar_list", "binary_op_scalar_tensor",
                       "pointwise_op_scalar_list"})
_SUFFIXES = ("_cuda_kernel_impl", "_kernel_cuda", "_cuda_kernel", "_kernel_impl", "_kernel", "_impl", "_cuda")
_RENAME = {
    "direct_copy": "copy", "compare_eq": "eq", "compare_scalar": "compare", "pow_tensor_scalar": "pow",
    "pow_tensor_tensor": "pow", "clamp_scalar": "clamp", "mse": "mse_loss", "mse_backward": "mse_loss_backward",
    "gelu_cuda": "gelu", "gelu_backward_cuda": "gelu_backward", "copy": "copy", "norm_two": "norm",
    "welford": "var_mean", "std_plus": "add", "plus": "add", "minus": "sub", "multiplies": "mul",
    "divides": "div", "adam": "adam", "fused_adam_math": "adam", "lp_norm": "norm", "zero": "zero",
}


def _clean(name: str) -> str:
    name = snake(name)
    if name.startswith("launch_"):
        name = name[7:]
    for suf in _SUFFIXES:
        if name.endswith(suf) and len(name) > len(suf):
            name = name[: -len(suf)]
            break
    name = name.strip("_")
    return _RENAME.get(name, name)


def elementwise_op(raw: str) -> str | None:
    """The op an ATen elementwise / foreach kernel computes, from its functor or lambda owner."""
    m = _BINARY_FUNCTOR.search(raw) or _CUDA_FUNCTOR.search(raw)
    if m:
        return _clean(m.group(1))
    for m in _OWNER.finditer(raw):
        name = m.group(1)
        if name not in ("gpu_kernel_impl", "gpu_kernel_impl_nocast", "operator"):
            return _clean(name)
    for m in _FUNCTOR.finditer(raw):
        name = snake(m.group(1))
        if name not in _WRAPPERS:
            return _clean(name)
    m = _STD_OP.search(raw)
    if m:
        return _RENAME[m.group(1)]
    if "Copy<" in raw:
        return "copy"
    return None


_ELEMENT_TYPE = re.compile(r"[<(,]\s*(c10::BFloat16|c10::Half|float|double|long|int|bool)\b")


_LAMBDA_ARGS = re.compile(r"\{lambda\(([^()]+)\)#")


def element_dtype(raw: str) -> str | None:
    """The element type of an elementwise kernel: the first scalar type its functor or lambda names."""
    for lam in _LAMBDA_ARGS.finditer(raw):     # {lambda(bool, float, float)#1}: the value type is the last
        types = [short_dtype(t.strip().replace("c10::", "")) for t in lam.group(1).split(",")]
        if types and types[-1]:
            return types[-1]
    lt = raw.find("<")
    m = _ELEMENT_TYPE.search(raw, lt + 1) if lt >= 0 else None
    if m is None:
        return None
    return short_dtype(m.group(1).replace("c10::", ""))


def foreach_op(targs: list[str]) -> str | None:
    """The op of a `multi_tensor_apply_kernel<Metadata, Functor, Op, ...>` (torch's `_foreach_*`): the Op
    argument (`std::multiplies<float>`, `at::native::Sqrt<float>`, `LerpFunctor<float>`), read through the
    functor's kind: a PointwiseOp functor computes addcmul (with multiplies) or addcdiv (with divides)."""
    if len(targs) < 3:
        return None
    functor = last_component(targs[1].split("<", 1)[0])
    base = last_component(targs[2].split("<", 1)[0])
    if not base or base[0].isdigit() or base in ("float", "double", "int", "long", "bool"):
        return None
    op = _clean(base.removesuffix("Functor"))
    if functor.startswith("PointwiseOp"):
        op = {"mul": "addcmul", "div": "addcdiv"}.get(op, op)
    return op


def reduce_op(raw: str) -> str:
    m = _REDUCE_OPS.search(raw) or _REDUCE_FUNC.search(raw)
    if m:
        return _clean(m.group(1))
    return "reduce"


_NORM_KERNELS = ("layer_norm", "LayerNorm", "GammaBeta", "RowwiseMoments", "batch_norm", "BatchNorm",
                 "GroupNorm", "group_norm", "rms_norm", "RMSNorm", "ComputeInternalGradients", "ComputeFusedParams",
                 "ComputeGradOutputCoefficient")
_INDEX_KERNELS = ("index", "Index", "gather", "scatter", "take", "put_", "masked_scatter", "masked_select")
_POOL_KERNELS = ("pool", "Pool")
_LOSS_KERNELS = ("nll_loss", "ClassNLL", "cross_entropy", "SpatialClassNLL")


def _norm_op(fn: str) -> str:
    if "layer_norm" in fn or "LayerNorm" in fn or "GammaBeta" in fn:
        return "layer_norm_backward" if "grad" in fn.lower() or "Backward" in fn else "layer_norm"
    if "batch_norm" in fn or "BatchNorm" in fn:
        return "batch_norm"
    if "rms" in fn.lower():
        return "rms_norm"
    return "group_norm" if "Group" in fn or "Rowwise" in fn or "Compute" in fn else "norm"


def decode_aten(raw: str, fn: str, targs: list[str]) -> KernelName:
    """An `at::native::...` (or other `at::`) kernel; `fn` is its qualified name, `targs` its template args."""
    kn = _decode_aten(raw, fn, targs)
    return kn if kn.dtype is not None else replace(kn, dtype=element_dtype(raw))


def _decode_aten(raw: str, fn: str, targs: list[str]) -> KernelName:
    base = last_component(fn)
    if base in ("vectorized_elementwise_kernel", "elementwise_kernel", "unrolled_elementwise_kernel",
                "elementwise_kernel_with_index", "vectorized_templated_elementwise_kernel",
                "elementwise_kernel_manual_unroll", "unrolled_elementwise_kernel_for_multi_outputs"):
        op = elementwise_op(raw)
        if base == "elementwise_kernel_with_index":
            op = "arange" if "arange" in raw else (op or "index")
        vec = int(targs[0]) if base.startswith("vectorized") and targs and targs[0].isdigit() else None
        op = op or "elementwise"
        family = "copy" if op == "copy" else "pointwise"
        tag = f"ATen, vec{vec}" if vec else "ATen"
        return KernelName(raw=raw, short=f"{op} ({tag})", family=family, library="ATen", kind=family,
                          ops=(op,), vector_width=vec, dtype=element_dtype(raw))
    if base == "reduce_kernel":
        op = reduce_op(raw)
        return KernelName(raw=raw, short=f"{op} (ATen reduce)", family="reduction", library="ATen",
                          kind="reduction", ops=(op,))
    if base == "multi_tensor_apply_kernel":
        op = foreach_op(targs) or elementwise_op(raw) or "foreach"
        family = "reduction" if op == "norm" else "pointwise"
        return KernelName(raw=raw, short=f"foreach {op} (ATen)", family=family, library="ATen", kind="foreach",
                          ops=(op,))
    if "softmax" in base.lower() or "SoftMax" in base:
        op = "softmax_backward" if "backward" in base.lower() else "softmax"
        if "log" in base.lower():
            op = "log_" + op
        return KernelName(raw=raw, short=f"{op} (ATen)", family="reduction", library="ATen", kind="softmax",
                          ops=(op,))
    if any(k in base for k in _NORM_KERNELS):
        op = _norm_op(base)
        return KernelName(raw=raw, short=f"{op} (ATen {snake(base)})", family="norm", library="ATen",
                          kind="norm", ops=(op,))
    if "CatArrayBatchedCopy" in base or base.startswith("cat"):
        return KernelName(raw=raw, short="cat (ATen)", family="copy", library="ATen", kind="copy", ops=("cat",))
    if "dropout" in base:
        return KernelName(raw=raw, short="dropout (ATen)", family="pointwise", library="ATen", kind="pointwise",
                          ops=("dropout",))
    if "distribution" in base:
        op = next((d for d in ("uniform", "normal", "bernoulli", "exponential", "random") if d in raw), "random")
        return KernelName(raw=raw, short=f"{op} (ATen)", family="pointwise", library="ATen", kind="pointwise",
                          ops=(op,))
    if any(k in base for k in _POOL_KERNELS):
        op = snake(base)
        return KernelName(raw=raw, short=f"{op} (ATen)", family="reduction", library="ATen", kind="pooling",
                          ops=(op,))
    if any(k in base for k in _LOSS_KERNELS):
        return KernelName(raw=raw, short=f"{snake(base)} (ATen)", family="reduction", library="ATen",
                          kind="loss", ops=("nll_loss",))
    if "searchsorted" in base or "bucketize" in base:
        op = "searchsorted" if "searchsorted" in base else "bucketize"
        return KernelName(raw=raw, short=f"{op} (ATen)", family="other", library="ATen", kind="search", ops=(op,))
    if base == "index_elementwise_kernel":
        op = elementwise_op(raw) or "index"
        return KernelName(raw=raw, short=f"{op} (ATen)", family="copy", library="ATen", kind="gather/scatter",
                          ops=(op,))
    if any(k in base for k in _INDEX_KERNELS):
        op = "index_add" if "ReduceAdd" in raw and "index" in base.lower() else (
            "scatter_add" if "ReduceAdd" in raw else ("scatter" if "scatter" in base else (
                "index_select" if "Select" in base else snake(base).replace("_kernel", ""))))
        return KernelName(raw=raw, short=f"{op} (ATen)", family="copy", library="ATen", kind="gather/scatter",
                          ops=(op,))
    if "sort" in base.lower():
        return KernelName(raw=raw, short=f"{snake(base)} (ATen)", family="other", library="ATen", kind="sort",
                          ops=("sort",))
    name = _clean(base)
    return KernelName(raw=raw, short=f"{name} (ATen)", family=guess_family(base), library="ATen", kind="other",
                      ops=(name,))


def decode_cub(raw: str, fn: str) -> KernelName:
    base = last_component(fn)
    low = base.lower()
    if "sort" in low:
        kind, family = "sort", "other"
    elif "scan" in low:
        kind, family = "scan", "reduction"
    elif "reduce" in low or "histogram" in low:
        kind, family = "reduction", "reduction"
    elif "select" in low or "compact" in low or "partition" in low:
        kind, family = "select", "other"
    else:
        kind, family = "other", "other"
    return KernelName(raw=raw, short=f"CUB {base.replace('Device', '').replace('Kernel', '')}", family=family,
                      library="CUB", kind=kind, ops=(kind,))


_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def guess_family(name: str) -> str:
    """Family from the words of an otherwise unknown kernel's name."""
    low = snake(name)
    words = set(_WORD_SPLIT.split(low))
    if ("gemm" in low and "fbgemm" not in low) or "gemv" in low or "matmul" in low or words & {"mm", "bmm", "conv"}:
        return "gemm"
    if "attn" in low or "attention" in low or "fmha" in low or "flash" in low:
        return "attention"
    if "norm" in words or "layernorm" in words or "rmsnorm" in words:
        return "norm"
    if "softmax" in low or "reduce" in low or "reduction" in low or words & {"sum", "mean", "argmax", "topk", "scan"}:
        return "reduction"
    if words & {"copy", "transpose", "permute", "cat", "concat", "gather", "scatter", "index", "memcpy"}:
        return "copy"
    if words & {"elementwise", "pointwise", "unary", "binary", "activation", "gelu", "relu", "silu", "fill",
                "quantize", "dequantize"}:
        return "pointwise"
    return "other"
