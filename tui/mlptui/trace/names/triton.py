"""Triton kernels: Inductor's generated `triton_{poi,red,per,tem,...}_fused_<ops>_<n>` and
hand-written `@triton.jit` kernels such as Liger's `_geglu_tanh_forward_kernel`.

Inductor joins the aten op names of everything it fused with `_`, and op names contain `_`
themselves (`_unsafe_view`, `native_layer_norm`), so the op list is recovered with a vocabulary
of multi-word aten ops, longest match first; a doubled `__` marks an op whose name starts with `_`.
"""

from __future__ import annotations

import re

from mlptui.trace.names.common import KernelName

_INDUCTOR = re.compile(r"^triton_([a-z]+)_(.*?)(?:_(\d+))?$")
_INDUCTOR_OLD = re.compile(r"^triton__?\d+d")       # torch 2.0: triton__0d1d2d (signature only)

_KINDS = {
    "poi": ("pointwise", "pointwise", "fused"),
    "red": ("reduction", "reduction", "reduction"),
    "per": ("persistent reduction", "reduction", "persistent reduction"),
    "tem": ("template", "gemm", "template"),
    "for": ("foreach", "pointwise", "foreach"),
    "spl": ("scan", "reduction", "scan"),
    "sca": ("scan", "reduction", "scan"),
    "mm": ("template", "gemm", "template"),
}

# Multi-word aten op names (without a leading '_'), so "native_layer_norm" stays one op.
_MULTI_WORD_OPS = frozenset("""
unsafe_view to_copy native_layer_norm native_layer_norm_backward native_group_norm native_batch_norm
native_batch_norm_backward native_batch_norm_legit_functional native_batch_norm_legit_no_training
native_dropout native_dropout_backward log_softmax softmax_backward_data log_softmax_backward_data
nll_loss_forward nll_loss_backward nll_loss2d_forward nll_loss2d_backward embedding_dense_backward
threshold_backward gelu_backward silu_backward sigmoid_backward tanh_backward hardtanh_backward
leaky_relu_backward convolution_backward max_pool2d_with_indices max_pool2d_with_indices_backward
avg_pool2d avg_pool2d_backward adaptive_avg_pool2d adaptive_avg_pool2d_backward upsample_nearest2d
upsample_bilinear2d scalar_tensor full_like zeros_like ones_like empty_like rand_like randn_like
new_zeros new_ones new_empty new_full index_put index_select index_add index_copy slice_scatter
select_scatter as_strided as_strided_scatter constant_pad_nd var_mean std_mean masked_fill
masked_scatter logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_not
bitwise_xor clamp_min clamp_max scatter_add scatter_reduce lift_fresh fused_rms_norm rms_norm
fused_adam fused_adamw foreach_add foreach_mul foreach_div foreach_sub foreach_addcmul
foreach_addcdiv foreach_lerp foreach_sqrt foreach_copy scaled_dot_product_flash_attention
scaled_dot_product_efficient_attention scaled_dot_product_cudnn_attention flex_attention
flex_attention_backward scaled_mm weight_norm_interface mse_loss mse_loss_backward
binary_cross_entropy binary_cross_entropy_with_logits smooth_l1_loss linalg_vector_norm
floor_divide true_divide type_as repeat_interleave leaky_relu hardswish hardsigmoid
""".split())
_MAX_WORDS = max(op.count("_") + 1 for op in _MULTI_WORD_OPS)

_COPY_OPS = frozenset({"clone", "copy", "to_copy", "cat", "permute", "transpose", "view", "unsafe_view",
                       "expand", "slice", "select", "constant_pad_nd", "index", "gather", "stack", "repeat",
                       "split", "unsqueeze", "squeeze", "reshape", "as_strided", "t", "alias"})
_GEMM_OPS = frozenset({"mm", "bmm", "addmm", "baddbmm", "convolution", "scaled_mm", "matmul", "linear"})


def split_fused_ops(text: str) -> tuple[str, ...]:
    """`_unsafe_view_gelu_mul` -> ('unsafe_view', 'gelu', 'mul')."""
    ops: list[str] = []
    for segment in re.split(r"_{2,}", text.strip()):
        words = [w for w in segment.split("_") if w]
        i = 0
        while i < len(words):
            for width in range(min(_MAX_WORDS, len(words) - i), 0, -1):
                cand = "_".join(words[i:i + width])
                if width == 1 or cand in _MULTI_WORD_OPS:
                    ops.append(cand)
                    i += width
                    break
    return tuple(ops)


def _inductor_family(prefix_family: str, ops: tuple[str, ...]) -> str:
    if prefix_family == "pointwise" and ops and all(op in _COPY_OPS for op in ops):
        return "copy"
    if prefix_family == "reduction":
        if any("norm" in op for op in ops) or ("rsqrt" in ops and any("mean" in op for op in ops)):
            return "norm"
    if prefix_family == "gemm" and not any(op in _GEMM_OPS for op in ops):
        if any("attention" in op for op in ops):
            return "attention"
        return "other"
    return prefix_family


def decode_inductor(raw: str) -> KernelName | None:
    if _INDUCTOR_OLD.match(raw):
        return KernelName(raw=raw, short=f"Inductor kernel {raw[len('triton_'):].strip('_')}", family="other",
                          library="Triton (Inductor)", kind="triton")
    m = _INDUCTOR.match(raw)
    if m is None or m.group(1) not in _KINDS:
        return None
    kind, family, label = _KINDS[m.group(1)]
    body = m.group(2)
    fused = body.startswith("fused")
    ops = split_fused_ops(body[len("fused"):] if fused else body)
    family = _inductor_family(family, ops)
    shown = "·".join(ops) if ops else "(no ops named)"
    if kind == "pointwise":
        short = f"Inductor fused {shown}"
    elif kind == "template":
        short = f"Inductor template {shown}"
    else:
        short = f"Inductor {label} {shown}"
    return KernelName(raw=raw, short=short, family=family, library="Triton (Inductor)", kind=kind, ops=ops)


# Words that name an op in hand-written kernels, and words that only qualify one.
_OP_WORDS = {
    "geglu": "geglu", "swiglu": "swiglu", "gelu": "gelu", "silu": "silu", "relu": "relu", "softmax": "softmax",
    "dropout": "dropout", "rope": "rope", "embedding": "embedding", "matmul": "matmul", "mm": "mm",
    "gemm": "gemm", "gemv": "gemv", "bmm": "bmm", "dot": "dot", "attn": "attention", "attention": "attention", "add": "add", "mul": "mul",
    "layernorm": "layer_norm", "rmsnorm": "rms_norm", "jsd": "jsd", "swish": "silu", "mlp": "mlp",
    "linear": "linear", "sum": "sum", "mean": "mean", "copy": "copy", "transpose": "transpose",
    "quant": "quantize", "quantize": "quantize", "dequant": "dequantize", "dequantize": "dequantize",
    "tanh": "tanh", "sigmoid": "sigmoid", "exp": "exp",
}
_PAIRS = {("rms", "norm"): "rms_norm", ("layer", "norm"): "layer_norm", ("group", "norm"): "group_norm",
          ("cross", "entropy"): "cross_entropy", ("kl", "div"): "kl_div", ("fused", "linear"): "linear"}
_QUALIFIERS = frozenset({"tanh", "erf", "exact", "approx", "fused", "fwd", "forward", "bwd", "backward", "kernel",
                         "inplace", "persistent", "tma", "ws", "splitk", "impl", "inner", "outer"})
_FAMILY_OF_OP = {
    "matmul": "gemm", "mm": "gemm", "gemm": "gemm", "gemv": "gemm", "bmm": "gemm", "dot": "gemm", "mlp": "gemm",
    "linear": "gemm",
    "attention": "attention", "rms_norm": "norm", "layer_norm": "norm", "group_norm": "norm",
    "softmax": "reduction", "cross_entropy": "reduction", "kl_div": "reduction", "jsd": "reduction",
    "sum": "reduction", "mean": "reduction", "copy": "copy", "transpose": "copy",
}


def decode_user_triton(raw: str) -> KernelName:
    """A hand-written Triton kernel: only its function name is known; read the op from its words."""
    words = [w for w in raw.lower().split("_") if w]
    ops: list[str] = []
    i = 0
    while i < len(words):
        pair = tuple(words[i:i + 2])
        if pair in _PAIRS:
            ops.append(_PAIRS[pair])
            i += 2
            continue
        op = _OP_WORDS.get(words[i])
        if op is not None:
            ops.append(op)
        i += 1
    core = [op for op in ops if op not in _QUALIFIERS]
    if core:
        ops = core
    shown = [w for w in words if w != "kernel"]
    if not ops:
        ops = ["_".join(w for w in shown if w not in _QUALIFIERS) or raw.strip("_")]
    families = [_FAMILY_OF_OP[op] for op in ops if op in _FAMILY_OF_OP]
    # A kernel that multiplies matrices is a GEMM whatever it fuses in its epilogue.
    family = "gemm" if "gemm" in families else (families[0] if families else "pointwise")
    direction = "backward" if {"bwd", "backward"} & set(words) else ("forward" if {"fwd", "forward"} & set(words) else None)
    # The non-GEMM ops a GEMM kernel names are what its epilogue applies (e.g. a GEMM with GeGLU).
    epilogue = "+".join(op for op in dict.fromkeys(ops) if _FAMILY_OF_OP.get(op) != "gemm") if family == "gemm" else ""
    return KernelName(raw=raw, short=f"{' '.join(shown) or raw} (Triton)", family=family, library="Triton",
                      kind=family if direction is None else f"{family} {direction}", ops=tuple(dict.fromkeys(ops)),
                      epilogue=epilogue or None)
