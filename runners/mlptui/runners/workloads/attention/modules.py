"""The article's attention variants as modules, their fp32 reference, and the builders the registry names.

q, k and v are [batch, heads, seq, head_dim] (FlashAttention's own function takes [batch, seq, heads,
head_dim]); every variant is causal. Inputs are drawn in fp32 on the CPU from fixed seeds, then moved, so
every variant, dtype and device sees the same numbers.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from mlptui.runners.record.skipped import Skipped
from mlptui.runners.workloads.modules import Built
from mlptui.runners.workloads.shapes import Shape

INPUT_SEEDS = (1, 2, 3)  # q, k, v

# `--backend` names -> torch.nn.attention.SDPBackend member names; "auto" lets SDPA choose.
SDPA_BACKENDS = {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION"}


def causal_mask(seq: int, device: str | torch.device) -> torch.Tensor:
    """True above the diagonal: the positions a causal query may not see."""
    return torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=device), diagonal=1)


class NaiveCausalAttention(nn.Module):
    """Attention from primitives: matmul, scale, masked_fill, softmax, matmul. The mask is built once.
    `inplace` uses masked_fill_ on the scores (the article's one-line change) instead of masked_fill,
    which copies the scores first."""

    mask: torch.Tensor

    def __init__(self, seq: int, head_dim: int, *, inplace: bool) -> None:
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)
        self.inplace = inplace
        self.register_buffer("mask", causal_mask(seq, "cpu"), persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1))
        scores = torch.mul(scores, self.scale)
        if self.inplace:
            scores.masked_fill_(self.mask, float("-inf"))
        else:
            scores = scores.masked_fill(self.mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        return torch.matmul(attn, v)


class SdpaAttention(nn.Module):
    """F.scaled_dot_product_attention(is_causal=True), pinned to one backend unless `backend` is "auto"."""

    def __init__(self, backend: str) -> None:
        super().__init__()
        self.backend = backend

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.backend == "auto":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, SDPA_BACKENDS[self.backend])):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class FlashKernelAttention(nn.Module):
    """FlashAttention's `flash_attn_func(q, k, v, causal=True)` on [batch, seq, heads, head_dim]."""

    def __init__(self, flash_attn_func: Callable[..., Any]) -> None:
        super().__init__()
        self.flash_attn_func = flash_attn_func

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = self.flash_attn_func(q, k, v, causal=True)
        # some builds return (out, softmax_lse, ...) unless asked otherwise
        return out[0] if isinstance(out, tuple) else out


class ReferenceAttention(nn.Module):
    """Causal attention written out in the dtype it is given (the run passes fp32 inputs).
    `seq_major` takes and returns [batch, seq, heads, head_dim], FlashAttention's layout."""

    def __init__(self, *, seq_major: bool = False) -> None:
        super().__init__()
        self.seq_major = seq_major

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.seq_major:
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(causal_mask(q.shape[-2], q.device), float("-inf"))
        out: torch.Tensor = torch.softmax(scores, dim=-1) @ v
        return out.transpose(1, 2) if self.seq_major else out


def attention_inputs(shape: Shape, dtype: torch.dtype, device: str, *,
                     seq_major: bool = False) -> tuple[torch.Tensor, ...]:
    dims = ((shape.batch, shape.seq, shape.heads, shape.head_dim) if seq_major
            else (shape.batch, shape.heads, shape.seq, shape.head_dim))
    out = []
    for seed in INPUT_SEEDS:
        gen = torch.Generator().manual_seed(seed)
        out.append(torch.randn(dims, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype))
    return tuple(out)


def attention_flops(shape: Shape) -> int:
    """The two matrix products (Q·Kᵀ and A·V, 2·seq²·head_dim each per head), halved because a causal
    query needs only the keys up to its own position (FlashAttention's benchmarks count it this way)."""
    return 2 * 2 * shape.batch * shape.heads * shape.seq * shape.seq * shape.head_dim // 2


def _extra(variant: str, backend: str | None, layout: str, shape: Shape) -> dict[str, Any]:
    return {"attention": {"variant": variant, "backend": backend, "layout": layout, "causal": True,
                          "q_shape": _dims(shape, layout)}}


def _dims(shape: Shape, layout: str) -> list[int]:
    return ([shape.batch, shape.seq, shape.heads, shape.head_dim] if layout == "BSHD"
            else [shape.batch, shape.heads, shape.seq, shape.head_dim])


def _naive(shape: Shape, dtype: torch.dtype, device: str, *, inplace: bool) -> Built:
    module = NaiveCausalAttention(shape.seq, shape.head_dim, inplace=inplace).to(device)
    variant = "inplace" if inplace else "naive"
    return Built(module, attention_inputs(shape, dtype, device), ReferenceAttention(),
                 attention_flops(shape), f"pytorch ({variant} attention from aten ops)",
                 extra=_extra(variant, None, "BHSD", shape))


def build_naive(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return _naive(shape, dtype, device, inplace=False)


def build_inplace(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return _naive(shape, dtype, device, inplace=True)


def check_backend(module: nn.Module, inputs: tuple[torch.Tensor, ...], backend: str) -> None:
    """Call the pinned backend once; a GPU or torch build without it is a `Skipped`, with SDPA's own
    reason (it warns why each backend refused, then raises "No available kernel")."""
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        try:
            module(*inputs)
        except RuntimeError as exc:
            from mlptui.runners.workloads.hub_sources import one_line

            reasons = [one_line(RuntimeError(str(w.message))) for w in caught if "because" in str(w.message)
                       or "requires" in str(w.message) or "not" in str(w.message)]
            why = reasons[0] if reasons else one_line(exc)
            raise Skipped(f"SDPA backend {backend} is not available on this GPU or torch build "
                          f"(torch {torch.__version__}): {why}") from None


def build_sdpa(shape: Shape, dtype: torch.dtype, device: str, backend: str) -> Built:
    module = SdpaAttention(backend)
    inputs = attention_inputs(shape, dtype, device)
    if backend != "auto":
        check_backend(module, inputs, backend)
    source = "torch SDPA, " + ("backend chosen by torch" if backend == "auto"
                               else f"pinned to SDPBackend.{SDPA_BACKENDS[backend]}")
    return Built(module, inputs, ReferenceAttention(), attention_flops(shape), source,
                 extra=_extra("sdpa", backend, "BHSD", shape))


def build_sdpa_math(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return build_sdpa(shape, dtype, device, "math")


def build_sdpa_flash(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return build_sdpa(shape, dtype, device, "flash")


def build_sdpa_efficient(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return build_sdpa(shape, dtype, device, "efficient")


def build_sdpa_cudnn(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return build_sdpa(shape, dtype, device, "cudnn")


def build_sdpa_auto(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    return build_sdpa(shape, dtype, device, "auto")


def build_kernels_flash(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    from mlptui.runners.workloads.attention.flash_source import load_flash_attn_func

    found = load_flash_attn_func()
    return Built(FlashKernelAttention(found.func), attention_inputs(shape, dtype, device, seq_major=True),
                 ReferenceAttention(seq_major=True), attention_flops(shape), found.source, found.tried,
                 extra=_extra("kernels", "flash-attn2 (kernels)", "BSHD", shape))
