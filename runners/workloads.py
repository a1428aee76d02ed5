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
from dataclasses import dataclass, field
from typing import Any

MODES: tuple[str, ...] = ("eager", "compile", "reduce-overhead", "max-autotune")
DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class ShapeKind:
    """One family of shape flags: their names in order, the article's defaults, and help text."""

    name: str
    fields: tuple[str, ...]
    defaults: tuple[int, ...]
    help: dict[str, str] = field(default_factory=dict)


LINEAR_SHAPE = ShapeKind(
    "linear",
    ("rows", "in_dim", "out_dim"),
    (1024, 32, 64),
    {"rows": "rows of x", "in_dim": "input features", "out_dim": "output features"},
)
MLP_SHAPE = ShapeKind(
    "mlp",
    ("batch", "seq", "dim", "hidden"),
    (64, 128, 768, 3072),
    {"batch": "batch size", "seq": "sequence length", "dim": "model width", "hidden": "MLP hidden width"},
)
SHAPE_KINDS: dict[str, ShapeKind] = {k.name: k for k in (LINEAR_SHAPE, MLP_SHAPE)}


@dataclass(frozen=True)
class Shape:
    """Resolved shape of one workload; `slug` goes into trace file names (e.g. 64x128x768x3072)."""

    kind: str
    values: tuple[int, ...]

    def __getattr__(self, name: str) -> int:
        fields = SHAPE_KINDS[object.__getattribute__(self, "kind")].fields
        if name in fields:
            return object.__getattribute__(self, "values")[fields.index(name)]
        raise AttributeError(name)

    @property
    def slug(self) -> str:
        return "x".join(str(v) for v in self.values)

    def as_dict(self) -> dict[str, int]:
        return dict(zip(SHAPE_KINDS[self.kind].fields, self.values, strict=True))


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
        return getattr(importlib.import_module(module_name), func)


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
            "fused-mlp", "fused_mlp_fwd", "mlp", "mlptui.runners.fused_mlp:build_fused_mlp",
            "the same MLP, gate+up+GeGLU in one Triton kernel (fused_geglu_gateup_gemm_kernel), cuBLAS down",
            ladder_modes=("eager",), needs_cuda=True,
        ),
    )
}


def workload(name: str) -> Workload:
    from mlptui.contract.errors import MlptuiError

    try:
        return WORKLOADS[name]
    except KeyError:
        raise MlptuiError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)}, ladder)") from None


def ladder() -> list[tuple[Workload, str]]:
    """Every registered workload in each of its ladder modes, in registry order."""
    return [(w, mode) for w in WORKLOADS.values() for mode in w.ladder_modes]
