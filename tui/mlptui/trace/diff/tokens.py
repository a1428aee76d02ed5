"""Op words: what a kernel computes, as a set of lower-case words, from its decoded ops and from
the name of the CPU op that launched it.

Words rather than op names because the two sides spell the same op differently: eager launches
`aten::gelu` and `aten::mul`, Inductor names its kernel `triton_poi_fused__unsafe_view_gelu_mul_0`,
Liger's kernel is `_geglu_tanh_forward_kernel` under a `LigerGELUMulFunction` op. All three
reduce to words such as {gelu, mul}.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Words that name no computation: namespaces, backends, naming scaffolding, views (free on the GPU).
_NOISE = frozenset({
    "aten", "at", "native", "void", "cuda", "cudnn", "triton", "poi", "red", "per", "fused", "kernel",
    "kernels", "impl", "functor", "function", "forward", "backward", "fwd", "bwd", "liger", "autograd",
    "vectorized", "elementwise", "unrolled", "default", "out", "op", "ops", "unsafe", "view", "reshape",
    "as", "strided", "expand", "permute", "transpose", "t", "squeeze", "unsqueeze", "contiguous", "the",
    "and", "of", "with", "template", "float", "half", "bfloat16", "bf16", "fp16", "fp32", "c10",
    "anon", "anonymous", "namespace", "lambda", "mlp", "module", "apply", "call", "run",
    "compiled", "region", "graph", "wrapper", "torch", "dynamo", "cpp", "node", "aot", "dispatcher",
})

# Composite words that stand for several ops.
_COMPOSITE: dict[str, tuple[str, ...]] = {
    "geglu": ("gelu", "mul"),
    "swiglu": ("silu", "mul"),
    "reglu": ("relu", "mul"),
    "gelumul": ("gelu", "mul"),
    "silumul": ("silu", "mul"),
    "addmm": ("mm", "add"),
    "gemm": ("mm",),
    "gateup": ("mm",),         # the gate and up projections of a GeGLU/SwiGLU MLP
    "matmul": ("mm",),
    "bmm": ("mm",),
    "linear": ("mm",),
    "rmsnorm": ("rms", "norm"),
    "layernorm": ("layer", "norm"),
}

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


@lru_cache(maxsize=65536)
def name_words(name: str) -> frozenset[str]:
    """The computation words of one op or kernel name (`LigerGELUMulFunction` -> {gelu, mul})."""
    words: set[str] = set()
    for chunk in _SPLIT.split(name):
        if not chunk:
            continue
        low = chunk.lower()
        if low in _COMPOSITE:
            words.update(_COMPOSITE[low])
            continue
        parts = _CAMEL.findall(chunk) if chunk != low and chunk != chunk.upper() else [chunk]
        for part in parts:
            w = part.lower()
            if w.isdigit() or len(w) < 2 and w not in ("t",):
                continue
            words.update(_COMPOSITE.get(w, (w,)))
    return frozenset(w for w in words if w not in _NOISE)


def op_words(ops: Iterable[str], launcher: str | None) -> frozenset[str]:
    """Words of a kernel's decoded ops plus its launching op's name."""
    words: set[str] = set()
    for op in ops:
        words |= name_words(op)
    if launcher:
        words |= name_words(launcher)
    return frozenset(words)
