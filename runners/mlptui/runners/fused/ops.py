"""The fused gate/up GEMM as registered ops, with its backward, so torch.compile traces through it.

- `mlptui::geglu_gateup(x, w_gate, w_up) -> h`: inference (nothing saved).
- `mlptui::geglu_gateup_train(x, w_gate, w_up) -> (h, gu)`: also writes the pre-activations
  gu = [gate | up] ([M, 2N]) for the backward; its autograd formula is registered.
- `mlptui::geglu_backward(dh, gu) -> dgu`: the one Triton pointwise pass of the backward (recomputes
  gelu_tanh(gate) from gate, as Liger does, and writes [dgate | dup]).

The backward is then three cuBLAS GEMMs on strided halves of dgu: dx = dgate @ Wg + dup @ Wu (one mm,
one addmm), dWg = dgate^T x, dWu = dup^T x. Each op has a fake (meta) implementation, so
`torch.compile(fullgraph=True)` sees shapes without running the kernel, and the ops are opaque,
allocation-only extern calls that `mode="reduce-overhead"` captures in its CUDA graph.

Eager training does not go through the dispatcher: `GeGLUGateUp` (an autograd.Function) calls the
module's own launcher and the same backward, which costs less host time per call.
"""

from typing import Any

import torch
from torch import Tensor

from mlptui.runners.fused.backward_launch import geglu_backward
from mlptui.runners.fused.launcher import GateUpLauncher, launcher_for


@torch.library.custom_op("mlptui::geglu_gateup", mutates_args=())
def geglu_gateup(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
    return launcher_for(w_gate, w_up)(x.contiguous())


@geglu_gateup.register_fake
def _geglu_gateup_fake(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
    return x.new_empty((x.shape[0], w_gate.shape[0]))


@torch.library.custom_op("mlptui::geglu_gateup_train", mutates_args=())
def geglu_gateup_train(x: Tensor, w_gate: Tensor, w_up: Tensor) -> tuple[Tensor, Tensor]:
    h, gu = launcher_for(w_gate, w_up)(x.contiguous(), store_gu=True)
    return h, gu


@geglu_gateup_train.register_fake
def _geglu_gateup_train_fake(x: Tensor, w_gate: Tensor, w_up: Tensor) -> tuple[Tensor, Tensor]:
    n = w_gate.shape[0]
    return x.new_empty((x.shape[0], n)), x.new_empty((x.shape[0], 2 * n))


@torch.library.custom_op("mlptui::geglu_backward", mutates_args=())
def geglu_backward_op(dh: Tensor, gu: Tensor) -> Tensor:
    return geglu_backward(dh, gu)


@geglu_backward_op.register_fake
def _geglu_backward_fake(dh: Tensor, gu: Tensor) -> Tensor:
    return torch.empty_like(gu)


def input_grads(needs: tuple[bool, ...], dgu: Tensor, x: Tensor, w_gate: Tensor,
                w_up: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """(dx, dw_gate, dw_up) from [dgate | dup]; only those asked for."""
    n = w_gate.shape[0]
    dg, du = dgu[:, :n], dgu[:, n:]
    dx = torch.addmm(torch.mm(dg, w_gate), du, w_up) if needs[0] else None
    dwg = torch.mm(dg.t(), x) if needs[1] else None
    dwu = torch.mm(du.t(), x) if needs[2] else None
    return dx, dwg, dwu


def _setup_context(ctx: Any, inputs: tuple[Tensor, Tensor, Tensor], output: tuple[Tensor, Tensor]) -> None:
    x, w_gate, w_up = inputs
    ctx.save_for_backward(x, w_gate, w_up, output[1])
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)


def _backward(ctx: Any, dh: Tensor | None, _dgu: Tensor | None) -> tuple[Tensor | None, ...]:
    x, w_gate, w_up, gu = ctx.saved_tensors
    if dh is None:
        return None, None, None
    dgu = torch.ops.mlptui.geglu_backward(dh, gu)
    return input_grads(tuple(ctx.needs_input_grad), dgu, x, w_gate, w_up)


geglu_gateup_train.register_autograd(_backward, setup_context=_setup_context)


class GeGLUGateUp(torch.autograd.Function):
    """Eager training path: h = gelu_tanh(x Wg^T) * (x Wu^T) through a module's own launcher."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, w_gate: Tensor, w_up: Tensor, launcher: GateUpLauncher) -> Tensor:
        h, gu = launcher(x, store_gu=True)
        ctx.save_for_backward(x, w_gate, w_up, gu)
        return h

    @staticmethod
    def backward(ctx: Any, dh: Tensor) -> tuple[Tensor | None, ...]:
        x, w_gate, w_up, gu = ctx.saved_tensors
        dgu = geglu_backward(dh, gu)
        return (*input_grads(tuple(ctx.needs_input_grad[:3]), dgu, x, w_gate, w_up), None)
