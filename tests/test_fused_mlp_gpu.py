"""fused_geglu_gateup_gemm_kernel and FusedGeGLUMLP compiled for a real CUDA GPU (run on the device machine:
`python3 -m pytest -m gpu tests/test_fused_mlp_gpu.py`); skipped where torch sees no GPU."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
F = torch.nn.functional

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1", reason="compiled kernels, not the interpreter"),
]


def _inputs(m: int, k: int, n: int, dtype, seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    wg = ((torch.rand(n, k, device="cuda", generator=g) * 2 - 1) / k ** 0.5).to(dtype)
    wu = ((torch.rand(n, k, device="cuda", generator=g) * 2 - 1) / k ** 0.5).to(dtype)
    return x, wg, wu


def _rel_err(out, x, wg, wu) -> float:
    assert torch.isfinite(out).all(), "an output element is NaN/inf (unwritten or wrong)"
    xf = x.float()
    ref = F.gelu(xf @ wg.float().T, approximate="tanh") * (xf @ wu.float().T)
    return float((out.float() - ref).norm() / ref.norm())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(8192, 768, 3072), (1000, 776, 3000), (333, 770, 3001), (16, 768, 3072),
                                   (64, 768, 3072), (1, 64, 8)], ids=lambda s: "x".join(map(str, s)))
def test_every_candidate_on_both_paths(shape, dtype) -> None:
    from mlptui.runners import fused_mlp as fm

    torch.backends.cuda.matmul.allow_tf32 = False
    m, k, n = shape
    x, wg, wu = _inputs(m, k, n, dtype, seed=m + k + n)
    aligned = k % 8 == 0 and n % 8 == 0
    for cfg in fm.candidate_configs(m):
        for use_tma in ([True, False] if aligned else [False]):
            out = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
            fm.fused_geglu_gateup(x, wg, wu, config=cfg, use_tma=use_tma, out=out)
            assert _rel_err(out, x, wg, wu) <= 1e-2, (cfg.label(), use_tma)


def test_tuned_module_matches_eager_and_picks_its_path() -> None:
    from mlptui.runners.fused_mlp import FusedGeGLUMLP
    from mlptui.runners.modules import SimpleGeGLUMLP

    torch.manual_seed(0)
    ref = SimpleGeGLUMLP(768, 3072).cuda()
    fused = FusedGeGLUMLP(768, 3072, device="cuda", dtype=torch.bfloat16)
    fused.load_state_dict(ref.state_dict())
    for rows in (8192, 300, 16):
        x = torch.randn(rows, 768, device="cuda")
        with torch.no_grad():
            out = fused(x.bfloat16())
            expected = ref(x)
        err = float((out.float() - expected).norm() / expected.norm())
        assert err <= 1e-2, rows
        assert fused.path_for(rows) == ("fused" if rows >= fused.min_rows else "unfused")


def test_kernel_name_says_what_it_is() -> None:
    from mlptui.runners import fused_mlp as fm

    x, wg, wu = _inputs(256, 128, 256, torch.bfloat16, seed=1)
    h = torch.empty(256, 256, device="cuda", dtype=torch.bfloat16)
    compiled = fm._launch(x, wg, wu, h, fm.candidate_configs(256)[0], True)
    assert compiled.name == "fused_geglu_gateup_gemm_kernel"
    assert compiled.n_spills == 0
