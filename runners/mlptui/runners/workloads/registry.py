"""The workload registry: name -> how to build it, its shape flags, its record_function label and the
modes `mlptui run ladder` records. Importing this file never imports torch: each builder is reached
through a small function that imports its module only when a run starts.

A builder is `build(shape: Shape, dtype: torch.dtype, device: str) -> Built` (runners/mlptui/runners/workloads/modules.py);
the returned module's weights must be seeded (same on every call), and `Built.reference` must compute
the same function in fp32 eager so the run can report its error. To add a workload, add one `Workload` to
`WORKLOADS` (runners/mlptui/runners/workloads/modules.py has helpers for the article's shapes and weights).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mlptui.contract.vocabulary import DTYPES, MODES
from mlptui.runners.workloads.attention.registry import ATTENTION_ENTRIES
from mlptui.runners.workloads.shapes import SHAPE_KINDS, Shape, ShapeKind

# build(shape, dtype, device) -> Built; torch types are not named here, so importing stays light
Builder = Callable[..., Any]

__all__ = ["DTYPES", "MODES", "SHAPE_KINDS", "WORKLOADS", "Shape", "ShapeKind", "Workload", "ladder", "workload"]


@dataclass(frozen=True)
class Workload:
    """One entry of the registry."""

    name: str
    label: str  # record_function name wrapping each profiled call
    shape_kind: str  # key of SHAPE_KINDS
    builder: Callable[[], Builder]  # returns the build function, importing its module only then
    description: str
    ladder_modes: tuple[str, ...] = ("eager",)
    needs_cuda: bool = False  # e.g. Triton kernels that have no CPU path

    def build_function(self) -> Builder:
        return self.builder()


def _linear() -> Builder:
    from mlptui.runners.workloads.modules import build_linear
    return build_linear


def _mlp() -> Builder:
    from mlptui.runners.workloads.modules import build_mlp
    return build_mlp


def _kernels_mlp() -> Builder:
    from mlptui.runners.workloads.modules import build_kernels_mlp
    return build_kernels_mlp


def _fused_mlp() -> Builder:
    from mlptui.runners.fused.module import build_fused_mlp
    return build_fused_mlp


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "linear", "linear_fwd", "linear", _linear,
            "nn.Linear(in_dim -> out_dim, bias=True) on x[rows, in_dim]",
            ladder_modes=("eager", "compile"),
        ),
        Workload(
            "mlp", "mlp_fwd", "mlp", _mlp,
            "GeGLU MLP: down(gelu_tanh(gate(x)) * up(x)), bias-free nn.Linear layers",
            ladder_modes=("eager", "compile"),
        ),
        Workload(
            "kernels-mlp", "kernels_mlp_fwd", "mlp", _kernels_mlp,
            "the same MLP with Liger's fused GeGLU kernel, fetched through `kernels`",
            ladder_modes=("eager",), needs_cuda=True,
        ),
        Workload(
            "fused-mlp", "fused_mlp_fwd", "mlp", _fused_mlp,
            "the same MLP, gate+up+GeGLU in one Triton kernel (fused_geglu_gateup_gemm_kernel), cuBLAS down",
            ladder_modes=("eager",), needs_cuda=True,
        ),
        *(Workload(**entry) for entry in ATTENTION_ENTRIES),
    )
}


# Workloads run one process per GPU (mlptui.runners.launch_ranks defines them), not in this registry.
RANK_WORKLOADS = ("tp-mlp",)


def workload(name: str) -> Workload:
    from mlptui.base.errors import MlptuiError

    try:
        return WORKLOADS[name]
    except KeyError:
        choices = ", ".join([*WORKLOADS, *RANK_WORKLOADS, "ladder"])
        raise MlptuiError(f"unknown workload {name!r} (choose from {choices})") from None


def ladder() -> list[tuple[Workload, str]]:
    """Every registered workload in each of its ladder modes, in registry order."""
    return [(w, mode) for w in WORKLOADS.values() for mode in w.ladder_modes]
