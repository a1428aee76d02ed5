"""One data-parallel training step of the GeGLU MLP: forward, backward with DDP's bucketed gradient
all-reduce (launched as each bucket's gradients are ready, so it overlaps the rest of backward), AdamW.

Every rank starts from the same seeded weights and draws its own slice of the global batch, so the
averaged gradient equals the one-process gradient of the whole batch; `check_gradients` compares them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from mlptui.runners.workloads.modules import INPUT_SEED, SimpleGeGLUMLP, seeded
from mlptui.runners.workloads.registry import Shape

TARGET_SEED = 2


def rank_batch(shape: Shape, rank: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Input and target of one rank: seeded by rank, so any process can rebuild any rank's batch."""
    dims = (shape.batch, shape.seq, shape.dim)
    x = _draw(dims, INPUT_SEED + 100 * rank)
    target = _draw(dims, TARGET_SEED + 100 * rank)
    return x.to(device=device, dtype=dtype), target.to(device=device, dtype=dtype)


def _draw(dims: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(dims, generator=torch.Generator().manual_seed(seed), dtype=torch.float32)


def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(out.float(), target.float())


def build_ddp(shape: Shape, dtype: torch.dtype, device: str, local_rank: int) -> DistributedDataParallel:
    module = seeded(lambda: SimpleGeGLUMLP(shape.dim, shape.hidden)).to(device=device, dtype=dtype)
    ids = [local_rank] if device == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids)


def make_step(model: nn.Module, compiled: Callable[..., torch.Tensor],
              optimizer: torch.optim.Optimizer) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def train_step(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(compiled(x), target)
        loss.backward()  # DDP all-reduces each gradient bucket as soon as it is ready
        optimizer.step()
        return loss.detach()

    return train_step


def check_gradients(ddp: DistributedDataParallel, shape: Shape, world: int, dtype: torch.dtype,
                    device: str) -> float:
    """Max relative error of this rank's averaged gradients (after one backward, before any update)
    against one process's fp32 gradients of the whole batch (all ranks' slices together)."""
    ref = seeded(lambda: SimpleGeGLUMLP(shape.dim, shape.hidden)).to(device)
    total = torch.zeros((), device=device)
    for r in range(world):
        x, t = rank_batch(shape, r, dtype, device)
        total = total + loss_fn(ref(x.float()), t.float())
    (total / world).backward()
    worst = 0.0
    for (name, p), (_, q) in zip(ddp.module.named_parameters(), ref.named_parameters(), strict=True):
        assert p.grad is not None and q.grad is not None, name
        scale = q.grad.abs().max().item()
        err = (p.grad.float() - q.grad).abs().max().item()
        worst = max(worst, err / scale if scale > 0 else err)
    return worst
