"""The warp-specialized Hopper gate/up kernel (runners/mlptui/runners/fused/gateup_hopper_ws.py) against an fp32
reference, on a Hopper GPU (skipped elsewhere). Its timings are in benchmarks/FUSED_NOTES.md (run 18)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available() or
                                                  torch.cuda.get_device_capability()[0] != 9,
                                                  reason="needs a Hopper GPU (sm90)")]


@pytest.mark.parametrize("m, n, k", [(128, 64, 64), (1000, 200, 136), (8192, 3072, 768)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("pingpong, ordered", [(False, False), (True, False), (True, True)])
def test_kernel_matches_fp32(m: int, n: int, k: int, dtype: str, pingpong: bool, ordered: bool) -> None:
    """8192 rows give every program many tiles, so both ping-pong consumers work (where a shared ring of
    slots once faulted without the consumers' main loops taking turns: `ordered`)."""
    from mlptui.runners.fused.gateup_hopper_ws import gateup_ws

    dt = getattr(torch, dtype)
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=dt)
    wg = torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5
    wu = torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5
    ref = F.gelu(x.float() @ wg.float().T, approximate="tanh") * (x.float() @ wu.float().T)
    out = gateup_ws(x, wg, wu, pingpong=pingpong, ordered=ordered)
    assert float((out.float() - ref).norm() / ref.norm()) < 5e-3
