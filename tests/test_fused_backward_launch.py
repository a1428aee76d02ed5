"""The backward pass's direct launch (mlptui.runners.fused.backward_launch) off the GPU: the key it keeps a
compiled launcher under separates every specialization Triton compiles a binary for. Off the GPU the
dispatcher's (the interpreter's) launch is the only one (tests/test_fused_mlp.py); the direct launch itself
runs in tests/test_fused_mlp_gpu.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from mlptui.runners.fused import backward_launch as bl  # noqa: E402


def _key(dh: torch.Tensor, gu: torch.Tensor, n: int) -> tuple[object, ...]:
    block = min(1024, 1 << max(n - 1, 0).bit_length())
    return bl.launch_key(dh, gu, torch.empty_like(gu), block, (n, dh.stride(0), gu.stride(0), 2 * n))


def test_the_key_separates_what_triton_specializes() -> None:
    base = torch.zeros(64, 32, dtype=torch.bfloat16)
    gu = torch.zeros(64, 64, dtype=torch.bfloat16)
    same = _key(torch.ones(64, 32, dtype=torch.bfloat16), torch.ones(64, 64, dtype=torch.bfloat16), 32)
    assert _key(base, gu, 32) == same  # other values, the same binary
    odd_rows = torch.zeros(64, 33, dtype=torch.bfloat16)
    assert _key(odd_rows, torch.zeros(64, 66, dtype=torch.bfloat16), 33) != _key(base, gu, 32)  # 33: not 16k
    one = torch.zeros(64, 1, dtype=torch.bfloat16)
    assert _key(one, torch.zeros(64, 2, dtype=torch.bfloat16), 1) != _key(odd_rows, gu, 33)  # 1 is a constant
    assert _key(base.half(), gu.half(), 32) != _key(base, gu, 32)  # dtype
    flat = torch.zeros(64 * 32 + 1, dtype=torch.bfloat16)
    shifted = flat[1:].view(64, 32)  # 2 bytes past an aligned start: not 16-byte aligned
    assert shifted.data_ptr() % 16 and _key(shifted, gu, 32) != _key(base, gu, 32)
    big = bl.launch_key(base, gu, gu, 32, (2**31, 32, 64, 64))
    assert big != bl.launch_key(base, gu, gu, 32, (2**31 - 16, 32, 64, 64))  # 64-bit integer: another binary
