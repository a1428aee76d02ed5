"""The workload registry: name -> how to build it, its shape flags, its record_function label and the
modes `mlptui run ladder` records. Importing this file never imports torch: builders are named as
"module:function" strings and imported only when a run starts.

A builder is `build(shape: Shape, dtype: torch.dtype, device: str) -> mlptui.runners.modules.Built`; the
returned module's weights must be seeded (same on every call), and `Built.reference` must compute the
same function in fp32 eager so the run can report its error. To add a workload, add one `Workload` to
`WORKLOADS` (runners/modules.py has helpers for the article's shapes and weights).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mlptui.contract.vocabulary import DTYPES, MODES
from mlptui.runners.shapes import SHAPE_KINDS, Shape, ShapeKind

__all__ = ["DTYPES", "MODES", "SHAPE_KINDS", "WORKLOADS", "Shape", "ShapeKind", "Workload", "ladder", "workload"]


@dataclass(frozen=True)
class Workload:
    """One entry of the registry."""

    name: str
    label: str  # record_function name wrapping each profiled call
    shape_kind: str  # key of SHAPE_KINDS
    builder: str  # "module:function", imported when a run starts
    description: str
    ladder_modes: tuple[str, ...] = ("eager",)
    needs_cuda: bool = False  # e.g. Triton kernels that have no CPU path

    def build_function(self) -> Callable[..., Any]:
        module_name, _, func = self.builder.partition(":")
        build: Callable[..., Any] = getattr(importlib.import_module(module_name), func)
        return build


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "linear", "linear_fwd", "linear", "mlptui.runners.modules:build_linear",
            "nn.Linear(in_dim -> out_dim, bias=True) on x[rows, in_dim]",
            ladder_modes=("eager", "compile"),
        ),
        Workload(
            "mlp", "mlp_fwd", "mlp", "mlptui.runners.modules:build_mlp",
            "GeGLU MLP: down(gelu_tanh(gate(x)) * up(x)), bias-free nn.Linear layers",
            ladder_modes=("eager", "compile"),
        ),
        Workload(
            "kernels-mlp", "kernels_mlp_fwd", "mlp", "mlptui.runners.modules:build_kernels_mlp",
            "the same MLP with Liger's fused GeGLU kernel, fetched through `kernels`",
            ladder_modes=("eager",), needs_cuda=True,
        ),
        Workload(
            "fused-mlp", "fused_mlp_fwd", "mlp", "mlptui.runners.fused.module:build_fused_mlp",
            "the same MLP, gate+up+GeGLU in one Triton kernel (fused_geglu_gateup_gemm_kernel), cuBLAS down",
            ladder_modes=("eager",), needs_cuda=True,
        ),
    )
}


# Workloads run one process per GPU (mlptui.runners.launch_ranks defines them), not in this registry.
RANK_WORKLOADS = ("tp-mlp",)


def workload(name: str) -> Workload:
    from mlptui.contract.errors import MlptuiError

    try:
        return WORKLOADS[name]
    except KeyError:
        choices = ", ".join([*WORKLOADS, *RANK_WORKLOADS, "ladder"])
        raise MlptuiError(f"unknown workload {name!r} (choose from {choices})") from None


def ladder() -> list[tuple[Workload, str]]:
    """Every registered workload in each of its ladder modes, in registry order."""
    return [(w, mode) for w in WORKLOADS.values() for mode in w.ladder_modes]
