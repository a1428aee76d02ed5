"""The article's modules and the builders the registry names. Weights and inputs are drawn in fp32 on
the CPU from fixed seeds, then moved, so every mode, dtype and device sees the same numbers."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from mlptui.runners.workloads.shapes import Shape

T = TypeVar("T")

WEIGHT_SEED = 0
INPUT_SEED = 1


@dataclass
class Built:
    """A workload ready to run: `module(*inputs)` is what gets profiled and timed."""

    module: nn.Module
    inputs: tuple[torch.Tensor, ...]
    reference: nn.Module  # fp32 eager twin with the same weights, on the same device
    flops: int  # floating-point operations of one forward call
    kernel_source: str  # where the code that runs came from (manifest "kernel_source")
    kernel_tried: tuple[str, ...] = ()  # sources tried before the one that ran, with the reason
    extra: dict[str, Any] = field(default_factory=dict)  # more manifest keys (e.g. the attention backend)


def geglu_mlp(x: torch.Tensor, gate: nn.Module, up: nn.Module, down: nn.Module) -> torch.Tensor:
    """The article's GeGLU MLP, written once: down(gelu_tanh(gate(x)) * up(x))."""
    out: torch.Tensor = down(F.gelu(gate(x), approximate="tanh") * up(x))
    return out


class SimpleGeGLUMLP(nn.Module):
    """The article's GeGLU MLP: gate/up/down projections without bias, tanh-approximated GELU."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return geglu_mlp(x, self.gate_proj, self.up_proj, self.down_proj)


def seeded(factory: Callable[[], T], seed: int = WEIGHT_SEED) -> T:
    """Build a module under a fixed seed without disturbing the caller's random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return factory()


def seeded_input(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(INPUT_SEED)
    return torch.randn(shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)


def reference_mlp(shape: Shape, device: str) -> SimpleGeGLUMLP:
    """The fp32 eager MLP with the seeded weights, the reference of every MLP workload."""
    return seeded(lambda: SimpleGeGLUMLP(shape.dim, shape.hidden)).to(device)


def mlp_input(shape: Shape, dtype: torch.dtype, device: str) -> torch.Tensor:
    return seeded_input((shape.batch, shape.seq, shape.dim), dtype, device)


def mlp_flops(shape: Shape) -> int:
    """Three GEMMs of 2·M·dim·hidden each (the GELU and multiply are noise next to them)."""
    return 3 * 2 * shape.batch * shape.seq * shape.dim * shape.hidden


def _twin(reference: nn.Module, dtype: torch.dtype) -> nn.Module:
    return copy.deepcopy(reference).to(dtype=dtype)


def build_linear(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    ref = seeded(lambda: nn.Linear(shape.in_dim, shape.out_dim, bias=True)).to(device)
    x = seeded_input((shape.rows, shape.in_dim), dtype, device)
    flops = 2 * shape.rows * shape.in_dim * shape.out_dim
    return Built(_twin(ref, dtype), (x,), ref, flops, "pytorch")


def build_mlp(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    ref = reference_mlp(shape, device)
    return Built(_twin(ref, dtype), (mlp_input(shape, dtype, device),), ref, mlp_flops(shape), "pytorch")


def build_kernels_mlp(shape: Shape, dtype: torch.dtype, device: str) -> Built:
    from mlptui.runners.workloads.liger_source import load_liger_geglu_mlp

    found = load_liger_geglu_mlp()
    ref = reference_mlp(shape, device)
    module = found.cls(LigerConfig(shape.dim, shape.hidden))
    module.load_state_dict(ref.state_dict())
    module = module.to(device=device, dtype=dtype)
    return Built(
        module, (mlp_input(shape, dtype, device),), ref, mlp_flops(shape), found.source, found.tried
    )


@dataclass
class LigerConfig:
    """The slice of a transformers config that LigerGEGLUMLP reads."""

    hidden_size: int
    intermediate_size: int
    hidden_act: str = "gelu_pytorch_tanh"
