"""Launch configurations of fused_geglu_gateup_gemm_kernel: the candidates the tuner tries per row
bucket, the buckets, and the interleaved weight layout some of them read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import torch
import triton


@dataclass(frozen=True)
class GateUpConfig:
    """One launch configuration of fused_geglu_gateup_gemm_kernel."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    group_m: int = 8
    flatten: bool = False
    interleaved: bool = False
    # programs of the persistent grid per SM (at most one per tile). Where few rows leave few tiles, one
    # program per SM leaves SMs idle in the last round of tiles, and a program per tile finishes sooner
    # (benchmarks/results/fused-mlp.md, "Decode grids")
    programs_per_sm: int = 1

    def fits(self, smem_limit: int = 227 * 1024, store_gu: bool = False) -> bool:
        """store_gu: the training epilogue also writes gate and up, for which Triton 3.6 stages one more
        output tile in shared memory (so 128x128x64 with 4 stages no longer fits Hopper's 227 KiB)."""
        stage = (self.block_m + 2 * self.block_n) * self.block_k * 2
        epilogue = self.block_m * self.block_n * 2 * (2 if store_gu else 1)
        # two fp32 accumulators spread over the CTA's threads; past ~128 registers each they spill
        acc_regs = 2 * self.block_m * self.block_n // (32 * self.num_warps)
        box_ok = 2 * self.block_n <= 256 or not self.interleaved  # a TMA box has at most 256 rows
        return self.num_stages * stage + epilogue <= smem_limit and acc_regs <= 128 and box_ok

    def programs(self, m: int, n: int, sms: int) -> int:
        """Programs of the grid for an [m, n] output on `sms` SMs."""
        tiles = triton.cdiv(m, self.block_m) * triton.cdiv(n, self.block_n)
        return max(1, min(self.programs_per_sm * sms, tiles))

    def label(self) -> str:
        flags = ("-flat" if self.flatten else "") + ("-il" if self.interleaved else "")
        flags += f"-p{self.programs_per_sm}" if self.programs_per_sm != 1 else ""
        return (f"{self.block_m}x{self.block_n}x{self.block_k}-w{self.num_warps}-s{self.num_stages}"
                f"-g{self.group_m}{flags}")

    def as_dict(self) -> dict[str, int | bool]:
        return asdict(self)


def candidate_configs(m: int) -> list[GateUpConfig]:
    """The small set of configurations tried for a row count (tuned once per m_bucket).

    From the sweep in benchmarks/FUSED_NOTES.md: at large M, 128x128 tiles over interleaved weights
    (one 128x256 wgmma per k-step) with the tile loop flattened into the k loop win
    (benchmarks/results/fused-mlp.md, "Tiles").
    """
    C = GateUpConfig
    if m <= 64:  # decode-like: weight-bandwidth bound; narrow N tiles and up to 3 programs per SM keep
        # every SM streaming weights to the end (benchmarks/results/fused-mlp.md, "Decode grids")
        cands = [C(16, 32, 128, 4, 4, interleaved=True, programs_per_sm=3), C(16, 64, 256, 4, 3, programs_per_sm=3),
                 C(16, 32, 256, 4, 3, programs_per_sm=3), C(16, 64, 128, 4, 4, programs_per_sm=3),
                 C(64, 64, 64, 4, 4, interleaved=True, programs_per_sm=3), C(64, 32, 128, 4, 3, programs_per_sm=3)]
    elif m <= 512:
        cands = [C(64, 64, 64, 4, 4, interleaved=True), C(128, 64, 64, 4, 4, interleaved=True),
                 C(64, 128, 64, 4, 4, interleaved=True), C(128, 128, 64, 8, 4, flatten=True, interleaved=True),
                 C(64, 64, 64, 4, 4)]
    else:
        cands = [C(128, 128, 64, 8, 4, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 3, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 4, group_m=16, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 3, interleaved=True), C(128, 64, 64, 4, 4, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 3)]
    return [c for c in cands if c.fits()]


def training_config(cfg: GateUpConfig) -> GateUpConfig:
    """The inference choice with as few pipeline stages dropped as the training epilogue needs."""
    while not cfg.fits(store_gu=True) and cfg.num_stages > 2:
        cfg = replace(cfg, num_stages=cfg.num_stages - 1)
    return cfg


def m_bucket(m: int) -> int:
    """Row counts share a tuned configuration within a power-of-two bucket (16 … 8192+)."""
    return min(max(16, 1 << (max(m, 1) - 1).bit_length()), 8192)


def interleave_gate_up(w_gate: torch.Tensor, w_up: torch.Tensor, block_n: int) -> torch.Tensor:
    """[2 * cdiv(N, block_n) * block_n, K]: block_n gate rows, then block_n up rows, and so on.

    Rows past N are zero, so the padded columns of a tile compute gelu(0) * 0 and are never stored.
    """
    n, k = w_gate.shape
    blocks = triton.cdiv(n, block_n)
    pair = w_gate.new_zeros((blocks, 2, block_n, k))
    for i, w in enumerate((w_gate, w_up)):
        padded = w.new_zeros((blocks * block_n, k))
        padded[:n] = w
        pair[:, i] = padded.view(blocks, block_n, k)
    return pair.view(2 * blocks * block_n, k)
