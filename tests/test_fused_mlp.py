"""fused_geglu_gateup_gemm_kernel on the CPU through Triton's interpreter (TRITON_INTERPRET=1), against an
fp64 torch reference, for small odd shapes; and FusedGeGLUMLP's function, fallback and registry entry.

Triton reads TRITON_INTERPRET when it is first imported (its own library functions are jit-decorated
then), so the interpreter tests run in a child pytest started with the variable set:
test_interpreter_suite starts it; in this process they are skipped, there they run.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
F = torch.nn.functional

ROOT = Path(__file__).resolve().parents[1]
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
interpreted_only = pytest.mark.skipif(not INTERPRETED, reason="runs in the TRITON_INTERPRET=1 child pytest")


def test_interpreter_suite() -> None:
    if INTERPRETED:
        pytest.skip("this is the child")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" in proc.stdout


@pytest.fixture(scope="module")
def interp() -> ModuleType:
    from mlptui.runners import fused_mlp

    return fused_mlp


def _inputs(m: int, k: int, n: int, dtype: torch.dtype, seed: int, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, k, generator=g) * scale).to(dtype)
    wg = ((torch.rand(n, k, generator=g) * 2 - 1) / math.sqrt(k)).to(dtype)
    wu = ((torch.rand(n, k, generator=g) * 2 - 1) / math.sqrt(k)).to(dtype)
    return x, wg, wu


def _reference(x, wg, wu) -> torch.Tensor:
    xd = x.double()
    return F.gelu(xd @ wg.double().T, approximate="tanh") * (xd @ wu.double().T)


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert torch.isfinite(out).all(), "an output element is NaN/inf (unwritten or wrong)"
    return float((out.double() - ref).norm() / ref.norm())


# (M, K, N): M and N not multiples of any tile, K with a tail, N smaller than one tile, one row
ODD = [(37, 40, 72), (70, 24, 48), (5, 16, 200), (33, 20, 50), (1, 48, 40), (130, 72, 24)]


@interpreted_only
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", ODD, ids=lambda s: "x".join(map(str, s)))
def test_kernel_matches_reference_on_odd_shapes(interp: ModuleType, shape, dtype) -> None:
    m, k, n = shape
    x, wg, wu = _inputs(m, k, n, dtype, seed=m * 1000 + k + n)
    ref = _reference(x, wg, wu)
    aligned = k % 8 == 0 and n % 8 == 0  # rows of 16 bytes: the descriptor (TMA) path applies
    for interleaved in (False, True):
        for use_tma in ([False, True] if aligned else [False]):
            cfg = interp.GateUpConfig(16, 32, 16, 4, 2, interleaved=interleaved)
            out = torch.full((m, n), float("nan"), dtype=dtype)  # poison: every element must be written
            interp.fused_geglu_gateup(x, wg, wu, config=cfg, use_tma=use_tma, out=out)
            assert _rel_err(out, ref) <= 1e-2, (interleaved, use_tma)


@interpreted_only
def test_tile_loop_covers_more_tiles_than_programs(interp: ModuleType) -> None:
    # 4 programs walk 5 x 4 = 20 tiles: the persistent loop must visit each exactly once
    x, wg, wu = _inputs(80, 32, 128, torch.float16, seed=5)
    out = torch.full((80, 128), float("nan"), dtype=torch.float16)
    interp.fused_geglu_gateup(x, wg, wu, config=interp.GateUpConfig(16, 32, 16, 4, 2, group_m=2), out=out)
    assert _rel_err(out, _reference(x, wg, wu)) <= 1e-2


@interpreted_only
def test_epilogue_saturates_without_nan(interp: ModuleType) -> None:
    # pre-activations far into both tails: gelu -> 0 and -> identity, no inf/inf
    x, wg, wu = _inputs(16, 32, 32, torch.bfloat16, seed=9, scale=200.0)
    out = interp.fused_geglu_gateup(x, wg, wu, config=interp.GateUpConfig(16, 32, 16, 4, 2))
    assert _rel_err(out, _reference(x, wg, wu)) <= 1e-2


@interpreted_only
def test_nan_in_input_reaches_the_output(interp: ModuleType) -> None:
    x, wg, wu = _inputs(16, 32, 32, torch.float16, seed=3)
    x[3, 7] = float("nan")
    out = interp.fused_geglu_gateup(x, wg, wu, config=interp.GateUpConfig(16, 32, 16, 4, 2))
    assert torch.isnan(out[3]).all() and torch.isfinite(out[torch.arange(16) != 3]).all()


@interpreted_only
def test_default_config_and_tma_choice(interp: ModuleType) -> None:
    x, wg, wu = _inputs(20, 32, 48, torch.bfloat16, seed=11)
    out = interp.fused_geglu_gateup(x, wg, wu)
    assert _rel_err(out, _reference(x, wg, wu)) <= 1e-2
    assert any(k.startswith("m32-n48-k32-bfloat16") for k in interp.tuned_configs())


def test_rejects_bad_inputs(interp: ModuleType) -> None:
    x, wg, wu = _inputs(8, 16, 16, torch.float16, seed=1)
    with pytest.raises(ValueError, match="bf16 or fp16"):
        interp.fused_geglu_gateup(x.float(), wg.float(), wu.float())
    with pytest.raises(ValueError, match="shapes do not match"):
        interp.fused_geglu_gateup(x, wg, wu[:8])
    with pytest.raises(ValueError, match="out must be"):
        interp.fused_geglu_gateup(x, wg, wu, out=torch.empty(8, 15, dtype=torch.float16))


@interpreted_only
def test_module_computes_simple_geglu_mlp(interp: ModuleType) -> None:
    from mlptui.runners.modules import SimpleGeGLUMLP

    torch.manual_seed(0)
    ref = SimpleGeGLUMLP(24, 40)
    fused = interp.FusedGeGLUMLP(24, 40, min_rows=1, dtype=torch.bfloat16)
    fused.load_state_dict(ref.state_dict())
    x = torch.randn(3, 5, 24)
    assert fused.path_for(15) == "fused"
    with torch.no_grad():
        out = fused(x.bfloat16())
        expected = ref(x)
    assert out.shape == (3, 5, 24) and out.dtype == torch.bfloat16
    assert _rel_err(out, expected.double()) <= 1e-2


@interpreted_only
def test_module_rebuilds_interleaved_weights_after_updates(interp: ModuleType) -> None:
    from mlptui.runners.modules import SimpleGeGLUMLP

    torch.manual_seed(1)
    ref = SimpleGeGLUMLP(24, 40)
    fused = interp.FusedGeGLUMLP(24, 40, min_rows=1, dtype=torch.float16)
    fused.load_state_dict(ref.state_dict())
    x = torch.randn(90, 24)  # 90 rows: the default configuration for this bucket interleaves
    assert interp.candidate_configs(90)[0].interleaved
    with torch.no_grad():
        first = fused(x.half())
        assert len(fused._weight_store) == 1
        for module in (ref, fused):
            module.up_proj.weight.mul_(-0.5)  # in place: same storage, new version
        second, expected = fused(x.half()), ref(x)
    assert _rel_err(second, expected.double()) <= 1e-2
    assert not torch.allclose(first, second)
    fused.gate_proj.weight.data = fused.gate_proj.weight.data.clone() * 0  # new storage
    with torch.no_grad():
        assert not fused(x.half()).any()


@interpreted_only
def test_module_falls_back_and_says_why(interp: ModuleType) -> None:
    fused = interp.FusedGeGLUMLP(16, 32, min_rows=128, dtype=torch.bfloat16)
    assert "64 rows < 128" in fused.fallback_reason(64)
    assert fused.fallback_reason(256) is None
    assert "autograd" in fused.fallback_reason(256, grad=True)
    assert "float32" in fused.fallback_reason(256, dtype=torch.float32)
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    with torch.no_grad():
        assert torch.equal(fused(x), fused.forward_unfused(x))  # 4 rows: the unfused path ran


@pytest.mark.skipif(INTERPRETED, reason="off the GPU only without the interpreter")
def test_real_module_off_gpu_uses_unfused_path() -> None:
    from mlptui.runners.fused_mlp import FusedGeGLUMLP

    fused = FusedGeGLUMLP(16, 32, dtype=torch.bfloat16)
    assert fused.fallback_reason(4096) == "no Triton on cpu"


def test_interleave_gate_up_layout(interp: ModuleType) -> None:
    wg = torch.arange(5 * 3, dtype=torch.float32).reshape(5, 3)
    wu = -wg - 1
    w = interp.interleave_gate_up(wg, wu, 2)  # 3 blocks of 2 rows, padded to 6 rows each
    assert w.shape == (12, 3)
    assert torch.equal(w[0:2], wg[0:2]) and torch.equal(w[2:4], wu[0:2])
    assert torch.equal(w[8], wg[4]) and torch.equal(w[10], wu[4])
    assert not w[9].any() and not w[11].any()


def test_candidates_fit_and_buckets(interp: ModuleType) -> None:
    for m in (1, 16, 64, 65, 300, 512, 1024, 8192, 100_000):
        cands = interp.candidate_configs(m)
        assert cands and all(c.fits() for c in cands)
    assert [interp.m_bucket(m) for m in (1, 16, 17, 64, 1000, 8192, 50_000)] == [16, 16, 32, 64, 1024, 8192, 8192]
    assert not interp.GateUpConfig(128, 128, 64, 4, 4).fits()  # 256 accumulator registers per thread
    assert not interp.GateUpConfig(128, 256, 64, 8, 2, interleaved=True).fits()  # 512-row TMA box


def test_registry_has_fused_mlp_in_the_ladder() -> None:
    from mlptui.runners.workloads import WORKLOADS, ladder

    w = WORKLOADS["fused-mlp"]
    assert w.builder == "mlptui.runners.fused_mlp:build_fused_mlp" and w.needs_cuda
    assert ("fused-mlp", "eager") in [(x.name, m) for x, m in ladder()]


@interpreted_only
def test_builder_records_the_path(interp: ModuleType) -> None:
    from mlptui.runners.workloads import Shape

    shape = Shape("mlp", (2, 70, 16, 40))  # 140 rows: over the threshold
    built = interp.build_fused_mlp(shape, torch.bfloat16, "cpu")
    assert built.kernel_source.startswith("triton fused_geglu_gateup_gemm_kernel")
    with torch.no_grad():
        out = built.module(*built.inputs)
        ref = built.reference(*(x.float() for x in built.inputs))
    assert _rel_err(out, ref.double()) <= 1e-2
    small = interp.build_fused_mlp(Shape("mlp", (2, 3, 16, 40)), torch.bfloat16, "cpu")
    assert small.kernel_source == "unfused eager path: 6 rows < 128: too little work for the fused kernel to win"
