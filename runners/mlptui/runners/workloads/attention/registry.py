"""The attention rung's registry entries (fields of runners.workloads.Workload), in the article's order:
`mlptui run attention --variant V [--backend B]` picks one of them (see `workload_for`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlptui.base.errors import MlptuiError

Builder = Callable[..., Any]     # build(shape, dtype, device) -> Built, as runners.workloads.registry
VARIANTS = ("naive", "inplace", "sdpa")
BACKENDS = ("math", "flash", "efficient", "cudnn", "auto")

# each returns its build function, importing torch only when a run starts
def _naive() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_naive
    return build_naive


def _inplace() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_inplace
    return build_inplace


def _sdpa_math() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_sdpa_math
    return build_sdpa_math


def _sdpa_efficient() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_sdpa_efficient
    return build_sdpa_efficient


def _sdpa_flash() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_sdpa_flash
    return build_sdpa_flash


def _sdpa_cudnn() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_sdpa_cudnn
    return build_sdpa_cudnn


def _sdpa_auto() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_sdpa_auto
    return build_sdpa_auto


def _kernels_flash() -> Builder:
    from mlptui.runners.workloads.attention.modules import build_kernels_flash
    return build_kernels_flash


ATTENTION_ENTRIES: tuple[dict[str, Any], ...] = (
    {"name": "attention-naive", "label": "attn_fwd", "shape_kind": "attention", "builder": _naive,
     "description": "causal attention from aten ops, out-of-place masked_fill (a hidden copy)"},
    {"name": "attention-inplace", "label": "attn_fwd", "shape_kind": "attention",
     "builder": _inplace, "description": "the same with masked_fill_ (no copy)"},
    {"name": "attention-sdpa-math", "label": "sdpa_fwd", "shape_kind": "attention",
     "builder": _sdpa_math, "description": "F.scaled_dot_product_attention, math backend"},
    {"name": "attention-sdpa-efficient", "label": "sdpa_fwd", "shape_kind": "attention",
     "builder": _sdpa_efficient,
     "description": "F.scaled_dot_product_attention, memory-efficient (CUTLASS) backend"},
    {"name": "attention-sdpa-flash", "label": "sdpa_fwd", "shape_kind": "attention",
     "builder": _sdpa_flash, "description": "F.scaled_dot_product_attention, FlashAttention-2 backend",
     "ladder_modes": ("eager", "compile")},
    {"name": "attention-sdpa-cudnn", "label": "sdpa_fwd", "shape_kind": "attention",
     "builder": _sdpa_cudnn, "description": "F.scaled_dot_product_attention, cuDNN backend"},
    {"name": "attention-sdpa-auto", "label": "sdpa_fwd", "shape_kind": "attention",
     "builder": _sdpa_auto, "description": "F.scaled_dot_product_attention, backend chosen by torch"},
    {"name": "attention-kernels", "label": "flash_kernel_fwd", "shape_kind": "attention",
     "builder": _kernels_flash, "needs_cuda": True,
     "description": "FlashAttention from the Hub through `kernels` (flash_attn_func, [batch, seq, heads, head_dim])"},
)


def workload_for(variant: str | None, backend: str | None) -> str:
    """The registry name `mlptui run attention --variant V --backend B` means."""
    variant = variant or "sdpa"
    if variant not in VARIANTS:
        raise MlptuiError(f"--variant must be one of {', '.join(VARIANTS)} (got {variant!r})")
    if variant != "sdpa":
        if backend is not None:
            raise MlptuiError(f"--backend applies to --variant sdpa only (got --variant {variant})")
        return f"attention-{variant}"
    backend = backend or "auto"
    if backend not in BACKENDS:
        raise MlptuiError(f"--backend must be one of {', '.join(BACKENDS)} (got {backend!r})")
    return f"attention-sdpa-{backend}"
