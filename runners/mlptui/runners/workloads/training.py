"""One training step of a built workload: forward, a loss, backward and an AdamW step.

Kept apart from the recording code so that other runners (several processes, several GPUs) can call
the same step. The loss is the mean square of the output: it needs no labels, has a gradient for
every weight, and makes backward run the transposed GEMMs of each layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

LEARNING_RATE = 1e-4


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    """AdamW over the model's trainable weights (`foreach`, so its update runs as multi_tensor_apply
    kernels on CUDA, as in most training loops)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable weights")
    return torch.optim.AdamW(params, lr=LEARNING_RATE, foreach=True)


def train_step(model: Callable[..., torch.Tensor], batch: Sequence[torch.Tensor],
               optimizer: torch.optim.Optimizer) -> torch.Tensor:
    """Forward `batch` through `model`, backward the mean-square loss, step `optimizer`; returns the
    loss (detached, still on the device: reading it would synchronise)."""
    optimizer.zero_grad(set_to_none=True)
    out = model(*batch)
    loss = out.float().pow(2).mean()
    loss.backward()
    optimizer.step()
    return loss.detach()


def step_function(model: Callable[..., torch.Tensor], parameters_of: torch.nn.Module) -> Callable[..., Any]:
    """`fn(*inputs)` that runs one training step; the optimizer is made once, here."""
    optimizer = make_optimizer(parameters_of)

    def step(*inputs: torch.Tensor) -> torch.Tensor:
        return train_step(model, inputs, optimizer)

    return step
