"""The fused MLP compiled for a real CUDA GPU (run on the device machine:
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

FAMILIES = [(768, 3072), (1024, 2816), (2048, 5632), (1536, 8960), (4096, 11008), (5120, 13824)]


def _inputs(m: int, k: int, n: int, dtype, seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    wg = ((torch.rand(n, k, device="cuda", generator=g) * 2 - 1) / k ** 0.5).to(dtype)
    wu = ((torch.rand(n, k, device="cuda", generator=g) * 2 - 1) / k ** 0.5).to(dtype)
    return x, wg, wu


def _ref(x, wg, wu):
    xf = x.float()
    return F.gelu(xf @ wg.float().T, approximate="tanh") * (xf @ wu.float().T)


def _rel(out, ref) -> float:
    assert torch.isfinite(out).all(), "an output element is NaN/inf (unwritten or wrong)"
    return float((out.float() - ref).norm() / ref.norm())


def _pair(dim: int, hidden: int, seed: int = 0):
    from mlptui.runners.fused import FusedGeGLUMLP
    from mlptui.runners.workloads.modules import SimpleGeGLUMLP

    torch.manual_seed(seed)
    ref = SimpleGeGLUMLP(dim, hidden).cuda()
    fused = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=torch.bfloat16)
    fused.load_state_dict(ref.state_dict())
    return ref, fused


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(8192, 768, 3072), (1000, 776, 3000), (333, 770, 3001), (16, 768, 3072),
                                   (64, 768, 3072), (1, 64, 8)], ids=lambda s: "x".join(map(str, s)))
def test_every_candidate_on_both_paths(shape, dtype) -> None:
    from mlptui.runners import fused as fm

    torch.backends.cuda.matmul.allow_tf32 = False
    m, k, n = shape
    x, wg, wu = _inputs(m, k, n, dtype, seed=m + k + n)
    ref = _ref(x, wg, wu)
    aligned = k % 8 == 0 and n % 8 == 0
    for cfg in fm.candidate_configs(m):
        for use_tma in ([True, False] if aligned else [False]):
            out = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
            fm.fused_geglu_gateup(x, wg, wu, config=cfg, use_tma=use_tma, out=out)
            assert _rel(out, ref) <= 1e-2, (cfg.label(), use_tma)


@pytest.mark.parametrize("shape", [(8192, 768, 3072), (333, 770, 3001), (16, 768, 3072)],
                         ids=lambda s: "x".join(map(str, s)))
def test_training_forward_writes_gate_and_up(shape) -> None:
    from mlptui.runners.fused import GateUpLauncher

    m, k, n = shape
    x, wg, wu = _inputs(m, k, n, torch.bfloat16, seed=7)
    h, gu = GateUpLauncher(wg, wu)(x, store_gu=True)
    xf = x.float()
    assert _rel(gu[:, :n], xf @ wg.float().T) <= 1e-2 and _rel(gu[:, n:], xf @ wu.float().T) <= 1e-2
    assert _rel(h, _ref(x, wg, wu)) <= 1e-2


@pytest.mark.parametrize("rows", [300, 8192])
def test_gradients_match_eager_fp32(rows: int) -> None:
    ref, fused = _pair(768, 3072)
    x = torch.randn(rows, 768, device="cuda")
    go = torch.randn(rows, 768, device="cuda")
    xr = x.clone().requires_grad_(True)
    ref(xr).backward(go)
    xb = x.bfloat16().requires_grad_(True)
    fused(xb).backward(go.bfloat16())
    # the eager bf16 MLP against the same fp32 reference sets the tolerance
    _, eager16 = _pair(768, 3072)
    eager16.policy = "unfused"
    xe = x.bfloat16().requires_grad_(True)
    eager16(xe).backward(go.bfloat16())
    pairs = [(xb.grad, xe.grad, xr.grad)] + [
        (getattr(fused, n).weight.grad, getattr(eager16, n).weight.grad, getattr(ref, n).weight.grad)
        for n in ("gate_proj", "up_proj", "down_proj")]
    for got, bf16, want in pairs:
        assert _rel(got, want) <= max(2 * _rel(bf16, want), 1e-2)


def test_cuda_graph_capture_sees_weight_updates() -> None:
    ref, fused = _pair(768, 3072, seed=3)
    x = torch.randn(512, 768, device="cuda").bfloat16()
    with torch.no_grad():
        fused(x)  # tune and warm outside the capture
        graph = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            out = fused(x)
        graph.replay()
        assert _rel(out, ref(x.float())) <= 1e-2
        for m in (ref, fused):
            m.up_proj.weight.mul_(-0.5)
        graph.replay()
        assert _rel(out, ref(x.float())) <= 1e-2


def test_compile_fullgraph_and_reduce_overhead() -> None:
    from torch._dynamo.utils import counters

    ref, fused = _pair(1024, 2816, seed=4)
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fused, fullgraph=True, mode="reduce-overhead")
    x = torch.randn(2, 256, 1024, device="cuda").bfloat16()
    with torch.no_grad():
        for _ in range(3):  # warm-up, record, replay
            out = compiled(x)
        assert _rel(out, ref(x.float())) <= 1e-2
    assert not counters["graph_break"]
    xb = x.clone().requires_grad_(True)
    for _ in range(3):
        out = compiled(xb)
    out.float().sum().backward()
    assert xb.grad is not None and torch.isfinite(xb.grad).all()


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f"{f[0]}x{f[1]}")
def test_every_model_family_shape(family) -> None:
    from mlptui.runners.fused import FusedGeGLUMLP

    dim, hidden = family
    ref, fused = _pair(dim, hidden, seed=5)
    auto = FusedGeGLUMLP(dim, hidden, device="cuda", dtype=torch.bfloat16)
    auto.load_state_dict(ref.state_dict())
    for rows in (1, 77, 1000, 4096):
        x = torch.randn(rows, dim, device="cuda")
        with torch.no_grad():
            expected = ref(x)
            assert _rel(fused(x.bfloat16()), expected) <= 1e-2, rows
            assert _rel(auto(x.bfloat16()), expected) <= 1e-2, rows


def test_direct_launch_is_taken_and_kernel_is_clean() -> None:
    from mlptui.runners.fused import GateUpLauncher

    x, wg, wu = _inputs(4096, 768, 3072, torch.bfloat16, seed=1)
    lau = GateUpLauncher(wg, wu)
    lau(x)
    plan = next(iter(lau._plans.values()))
    assert any(d is not None for d in plan.direct.values()), "the compiled kernel's launcher was not trusted"
    h = torch.empty(4096, 3072, device="cuda", dtype=torch.bfloat16)
    compiled = lau._jit_launch(plan, x, h, h, 4096, 132)
    assert compiled.name == "fused_geglu_gateup_gemm_kernel"
    assert compiled.n_spills == 0


KEPT_PROCESS = r"""
import json, sys, time
import torch
from mlptui.runners.fused import launcher as launcher_mod

second = sys.argv[1] == "second"
if second:  # Triton's dispatcher must not be needed: the recorded binary is launched directly
    def refuse(*_a, **_k):
        raise SystemExit("the dispatcher was used")
    launcher_mod.GateUpLauncher._jit_launch = refuse
g = torch.Generator(device="cuda").manual_seed(7)
x = torch.randn(1000, 768, device="cuda", generator=g).to(torch.bfloat16)
wg = (torch.randn(3072, 768, device="cuda", generator=g) / 28).to(torch.bfloat16)
wu = (torch.randn(3072, 768, device="cuda", generator=g) / 28).to(torch.bfloat16)
torch.cuda.synchronize()
lau = launcher_mod.GateUpLauncher(wg, wu)
start = time.perf_counter()
h = lau(x)
torch.cuda.synchronize()
first_ms = (time.perf_counter() - start) * 1e3
torch.save(h.cpu(), sys.argv[2])
print(json.dumps({"first_ms": first_ms, "direct_error": lau.direct_error}))
"""


def test_a_new_process_launches_the_recorded_kernel_without_the_dispatcher(tmp_path) -> None:
    """Process 1 tunes, compiles, checks the direct launch and records it; process 2 (its dispatcher
    refused) launches the same binary from the record and gives the same output bit for bit."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    env["MLPTUI_KEPT_KERNELS"] = "on"
    outs = []
    for which in ("first", "second"):
        out = tmp_path / f"{which}.pt"
        run = subprocess.run([sys.executable, "-c", KEPT_PROCESS, which, str(out)], env=env, capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        outs.append((json.loads(run.stdout.strip().splitlines()[-1]), torch.load(out)))
    records = list((tmp_path / "xdg" / "mlptui" / "fused").glob("kernels-*.json"))
    assert len(records) == 1 and json.loads(records[0].read_text())
    assert outs[0][0]["direct_error"] is None
    assert torch.equal(outs[0][1], outs[1][1])
    x_ref = outs[0][1].float()
    assert torch.isfinite(x_ref).all() and x_ref.abs().sum() > 0


@pytest.mark.parametrize("shape", [(8192, 3072), (1, 3072), (333, 3001), (7, 1)], ids=lambda s: "x".join(map(str, s)))
def test_backward_pass_takes_its_checked_direct_launch(shape) -> None:
    """The backward's pointwise pass: the dispatcher's launch on a key's first call, the compiled kernel's own
    launch afterwards, bit for bit the same output, and a key per specialization (an odd stride is another
    binary than a multiple of 16)."""
    from mlptui.runners.fused import backward_launch as bl

    m, n = shape
    g = torch.Generator(device="cuda").manual_seed(m + n)
    dh = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16)
    gu = (torch.randn(m, 2 * n, device="cuda", generator=g) * 3).to(torch.bfloat16)
    block = min(1024, 1 << (n - 1).bit_length())
    key = bl.launch_key(dh, gu, torch.empty_like(gu), block, (n, dh.stride(0), gu.stride(0), 2 * n))
    bl._LAUNCHES.pop(key, None)
    first = bl.geglu_backward(dh, gu)
    assert bl._LAUNCHES.get(key) is not None  # checked and kept
    calls = []
    jit = bl.geglu_backward_kernel

    class Refuse:  # the dispatcher must not be reached once the key is kept
        def __getitem__(self, grid):
            calls.append(grid)
            return jit[grid]

    bl.geglu_backward_kernel = Refuse()
    try:
        again = bl.geglu_backward(dh, gu)
    finally:
        bl.geglu_backward_kernel = jit
    torch.cuda.synchronize()
    assert not calls and torch.equal(first, again)
    gd, ud = gu[:, :n].double().requires_grad_(True), gu[:, n:].double().requires_grad_(True)
    (F.gelu(gd, approximate="tanh") * ud).backward(dh.double())
    assert _rel(again[:, :n], gd.grad) < 1e-2 and _rel(again[:, n:], ud.grad) < 1e-2
