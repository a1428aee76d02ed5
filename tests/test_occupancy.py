"""Theoretical occupancy: hand-worked calculator cases, the sample traces, and agreement with
Kineto's own "est. achieved occupancy %" on every kernel of the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlptui.base.errors import TraceError
from mlptui.trace.analysis.kernels.occupancy import (
    kernel_launch,
    kernel_occupancy,
    kineto_estimate_pct,
    launch_config,
    theoretical_occupancy,
    waves,
)
from mlptui.trace.model import KERNEL
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.parse.load import load_trace

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "hta"

# deviceProperties exactly as Kineto wrote them in the corpus (A100, V100) and the samples (H200).
A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "numSms": 108, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 166912,
        "sharedMemPerMultiprocessor": 167936}
V100 = {"id": 0, "name": "Tesla V100-SXM2-32GB", "computeMajor": 7, "computeMinor": 0, "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "numSms": 80, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 98304,
        "sharedMemPerMultiprocessor": 98304}
H200 = {"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "numSms": 132, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
        "sharedMemPerMultiprocessor": 233472}
MI250 = {"id": 0, "name": "AMD Radeon Graphics", "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
         "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64, "sharedMemPerBlock": 65536,
         "numSms": 104}


def test_sm80_full_occupancy() -> None:
    # 8 warps/block; 32 regs -> 1024 regs/warp -> 16 warps per sub-partition -> 64 warps -> 8 blocks; warps: 64/8 = 8
    occ = theoretical_occupancy(A100, 256, 32, 0)
    assert occ is not None
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.max_warps_per_sm) == (8, 64, 64)
    assert occ.fraction == 1.0
    assert occ.limiter == "warps+registers"
    assert dict(occ.limits) == {"warps": 8, "registers": 8, "shared memory": 164, "blocks": 32}
    assert occ.smem_per_block == 1024           # the reserved 1 KB alone
    assert occ.regs_per_block == 8 * 1024


def test_sm80_register_limited() -> None:
    # 128 regs x 32 = 4096 regs/warp; 16384 per sub-partition / 4096 = 4 warps -> 16 warps/SM -> 2 blocks of 8 warps
    occ = theoretical_occupancy(A100, 256, 128, 0)
    assert occ is not None
    assert (occ.blocks_per_sm, occ.warps_per_sm) == (2, 16)
    assert occ.fraction == 0.25
    assert occ.limiter == "registers"


def test_sm80_register_rounding_to_allocation_unit() -> None:
    # 40 regs -> 1280/warp (a multiple of 256); 16384 // 1280 = 12 warps per sub-partition -> 48 -> 12 blocks of 4
    occ = theoretical_occupancy(A100, 128, 40, 0)
    assert occ is not None and occ.blocks_per_sm == 12 and occ.fraction == 0.75 and occ.limiter == "registers"
    # 33 regs -> 1056 rounds up to 1280 as well
    assert theoretical_occupancy(A100, 128, 33, 0) == theoretical_occupancy(A100, 128, 40, 0)


def test_sm80_shared_memory_limited() -> None:
    # 100 KB + 1 KB reserved = 103424 B; 167936 // 103424 = 1 block (opt-in above 48 KB)
    occ = theoretical_occupancy(A100, 256, 32, 100 * 1024)
    assert occ is not None
    assert (occ.blocks_per_sm, occ.warps_per_sm) == (1, 8)
    assert occ.fraction == 0.125
    assert occ.limiter == "shared memory"
    assert occ.smem_per_block == 103424


def test_sm80_block_count_limited() -> None:
    # one-warp blocks: 64 warp slots, plenty of registers, but at most 32 blocks per SM on sm80
    occ = theoretical_occupancy(A100, 32, 16, 0)
    assert occ is not None and occ.blocks_per_sm == 32 and occ.fraction == 0.5 and occ.limiter == "blocks"


def test_block_that_cannot_launch() -> None:
    occ = theoretical_occupancy(A100, 1024, 128, 0)     # 131072 registers > 65536 per block
    assert occ is not None and occ.blocks_per_sm == 0 and occ.fraction == 0.0 and "registers" in occ.limiter
    occ = theoretical_occupancy(A100, 128, 32, 200 * 1024)   # beyond the 163 KB opt-in
    assert occ is not None and occ.blocks_per_sm == 0 and "shared memory" in occ.limiter
    occ = theoretical_occupancy(A100, 2048, 16, 0)       # beyond 1024 threads per block
    assert occ is not None and occ.blocks_per_sm == 0


def test_sm70_has_no_reserved_shared_memory() -> None:
    # 48 KB exactly, no reserve on Volta: 98304 // 49152 = 2 blocks; registers would allow 4
    occ = theoretical_occupancy(V100, 256, 64, 48 * 1024)
    assert occ is not None
    assert occ.blocks_per_sm == 2 and occ.fraction == 0.25 and occ.limiter == "shared memory"
    assert dict(occ.limits)["registers"] == 4


def test_hopper_cublas_gemm() -> None:
    # nvjet 256x128: 384 threads, 168 regs, 213188 B smem -> one block: 12 of 64 warps
    occ = theoretical_occupancy(H200, 384, 168, 213188)
    assert occ is not None
    assert (occ.blocks_per_sm, occ.warps_per_sm) == (1, 12)
    assert occ.fraction == pytest.approx(0.1875)
    assert occ.limiter == "registers+shared memory"


def test_fallback_table_matches_full_properties() -> None:
    bare = {"name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0}
    for cfg in [(256, 32, 0), (256, 128, 0), (256, 32, 100 * 1024), (32, 16, 0)]:
        assert theoretical_occupancy(bare, *cfg) == theoretical_occupancy(A100, *cfg)


def test_unknown_or_foreign_devices_give_none() -> None:
    assert theoretical_occupancy(None, 256, 32, 0) is None
    assert theoretical_occupancy({}, 256, 32, 0) is None
    assert theoretical_occupancy(MI250, 256, 32, 0) is None      # AMD: other rules
    assert theoretical_occupancy(A100, 0, 32, 0) is None
    assert theoretical_occupancy({"name": "x", "computeMajor": 6, "computeMinor": 0}, 256, 32, 0) is None


def test_launch_config_reads_kineto_args() -> None:
    args = {"grid": [2, 66, 1], "block": [384, 1, 1], "registers per thread": 168, "shared memory": 213188}
    assert launch_config(args) == (132, 384, 168, 213188)
    assert launch_config({"grid": [1, 1, 1]}) is None
    assert launch_config({"block": "x", "registers per thread": 1}) is None


def test_kineto_estimate_explains_its_zero_for_opt_in_kernels() -> None:
    assert kineto_estimate_pct(H200, 132, 384, 168, 213188) == 0
    # gelu on the H200: 24576 blocks of 128 threads, 32 regs -> 16 resident blocks -> 100
    assert kineto_estimate_pct(H200, 24576, 128, 32, 0) == 100
    # a grid smaller than one wave caps it: 66 blocks on 132 SMs -> 0.5 blocks x 128 / 2048
    assert kineto_estimate_pct(H200, 66, 128, 32, 0) == 3


def _sample(glob: str) -> Path:
    paths = sorted((REPO / "sample_traces").glob(glob))
    if not paths:
        pytest.skip(f"no sample trace {glob}")
    return paths[0]


def test_sample_mlp_eager_kernels() -> None:
    trace = load_trace(_sample("mlp-eager-*bf16*.pt.trace.json.gz"))
    seen: dict[str, float] = {}
    for g in trace.gpu:
        occ = kernel_occupancy(trace, g.id)
        if g.cat != KERNEL:
            assert occ is None
            continue
        assert occ is not None
        kn = decode_kernel(g.name)
        seen[kn.short] = occ.fraction
        args = trace.gpu_args(g.id)
        cfg = launch_config(args)
        assert cfg is not None
        assert kineto_estimate_pct(trace.device or {}, *cfg) == args["est. achieved occupancy %"]
    assert seen["gelu (ATen, vec8)"] == 1.0           # 32 regs, 128 threads: 16 blocks x 4 warps
    assert seen["mul (ATen, vec8)"] == 0.75           # 40 regs -> 12 blocks
    assert seen["cuBLAS nvjet GEMM 256x128 TNT coopA"] == pytest.approx(12 / 64)
    gemm = next(g for g in trace.gpu if g.name.startswith("nvjet_sm90_tst_256x128"))
    occ = kernel_occupancy(trace, gemm.id)
    assert occ is not None and waves(occ, 132, 132) == 1.0


def test_kernel_launch_puts_ours_beside_kinetos() -> None:
    trace = load_trace(_sample("mlp-eager-*bf16*.pt.trace.json.gz"))
    gelu = next(g for g in trace.gpu if "GeluCUDAKernelImpl" in g.name)
    launch = kernel_launch(trace, gelu.id)
    assert launch is not None
    assert launch.grid == (24576, 1, 1) and launch.block == (128, 1, 1)
    assert launch.threads_per_block == 128 and launch.regs_per_thread == 32 and launch.smem_per_block == 0
    assert launch.occupancy is not None and launch.occupancy.blocks_per_sm == 16
    # Kineto's "blocks per SM" is the grid spread over 132 SMs; ours is residency: 24576 / (16 x 132) waves
    assert launch.reported_blocks_per_sm == pytest.approx(24576 / 132, rel=1e-6)
    assert launch.waves == pytest.approx(24576 / (16 * 132))
    assert launch.reported_occupancy_pct == 100
    memset = next(g for g in trace.gpu if g.cat != KERNEL)
    assert kernel_launch(trace, memset.id) is None


@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present")
def test_corpus_agrees_with_kineto_on_every_kernel() -> None:
    """Our calculator, put through Kineto's own estimate, reproduces the trace's number exactly."""
    compared = 0
    for path in sorted(CORPUS.glob("*.json.gz")):
        try:
            trace = load_trace(path)
        except TraceError:      # refused files are the loader tests' business
            continue
        if not trace.devices:
            continue
        by_id = {d.get("id"): d for d in trace.devices}
        for g in trace.gpu:
            if g.cat != KERNEL:
                continue
            args = trace.gpu_args(g.id)
            cfg = launch_config(args)
            device = by_id.get(g.device)
            if cfg is None or device is None or "est. achieved occupancy %" not in args:
                continue
            est = kineto_estimate_pct(device, *cfg)
            if est is None:     # AMD
                continue
            assert est == args["est. achieved occupancy %"], (path.name, g.name[:60], cfg)
            compared += 1
    assert compared > 50_000
