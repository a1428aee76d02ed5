"""The GeGLU MLP split over the ranks of a process group in Megatron's layout.

gate and up are column-parallel (each rank holds `hidden / world` of their output features), down is
row-parallel (each rank holds the matching `hidden / world` of its input features), so every rank
computes a partial sum of the full output and one all-reduce of the output completes it. Weights are
slices of the same seeded one-GPU MLP, so the result can be checked against it.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from mlptui.runners.workloads.modules import SimpleGeGLUMLP


class TensorParallelGeGLUMLP(nn.Module):
    def __init__(self, full: SimpleGeGLUMLP, rank: int, world: int) -> None:
        super().__init__()
        hidden = full.gate_proj.out_features
        if hidden % world:
            raise ValueError(f"--hidden {hidden} does not split evenly over {world} ranks")
        shard = hidden // world
        cols = slice(rank * shard, (rank + 1) * shard)
        dim = full.gate_proj.in_features
        self.gate_proj = nn.Linear(dim, shard, bias=False)
        self.up_proj = nn.Linear(dim, shard, bias=False)
        self.down_proj = nn.Linear(shard, dim, bias=False)
        with torch.no_grad():
            self.gate_proj.weight.copy_(full.gate_proj.weight[cols])
            self.up_proj.weight.copy_(full.up_proj.weight[cols])
            self.down_proj.weight.copy_(full.down_proj.weight[:, cols])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        partial = self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))
        dist.all_reduce(partial)  # the layer's one collective: sum of the ranks' partial outputs
        return partial
