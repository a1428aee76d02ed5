"""Host time per call, graph capture and compile checks of the fused MLP on a CUDA GPU, in one process.

1. host µs per call (calls enqueued back to back, timed before the synchronize; best of 3 loops of 50):
   an empty Triton kernel through Triton's JIT launch (the "single Triton launch" yardstick), the
   fused gate/up kernel through its JIT launch and through the launcher's direct launch, the fused
   module (launch + cuBLAS down GEMM), the eager MLP (five kernels), at 16 and 4096 rows;
2. torch.compile(fullgraph=True) of the fused module: graph breaks, error against fp32, and
   mode="reduce-overhead" (CUDA graphs) times against eager and compile of the plain MLP;
3. gradients against eager fp32 (and the bf16 eager MLP's own error beside them).

Writes $OUT/fused_checks.json (or .bench/fused_checks.json). Usage: python3 benchmarks/fused_mlp_gpu.py
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from mlptui.runners.bench.modes import enqueue_us
from mlptui.runners.fused import FusedGeGLUMLP, GateUpLauncher
from mlptui.runners.workloads.modules import SimpleGeGLUMLP


@triton.jit
def _empty_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def log(msg: str) -> None:
    print(msg, flush=True)


def rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def pair(dim: int, hidden: int, policy: str = "fused"):
    torch.manual_seed(0)
    ref = SimpleGeGLUMLP(dim, hidden).cuda()
    eager = SimpleGeGLUMLP(dim, hidden).cuda().bfloat16()
    eager.load_state_dict(ref.state_dict())
    fused = FusedGeGLUMLP(dim, hidden, policy=policy, device="cuda", dtype=torch.bfloat16)
    fused.load_state_dict(ref.state_dict())
    return ref, eager, fused


def host_times() -> dict:
    out = {}
    ref, eager, fused = pair(768, 3072)
    t = torch.empty(16, device="cuda")
    out["empty_triton_jit_launch"] = enqueue_us(lambda: _empty_kernel[(1,)](t, 16, BLOCK=16))
    for rows in (16, 4096):
        x = torch.randn(rows, 768, device="cuda").bfloat16()
        with torch.no_grad():
            fused(x)
            lau: GateUpLauncher = fused.launcher()
            plan = lau.plan_for(x, rows, False)
            cfg = plan.config
            programs = cfg.programs(rows, 3072, lau.sms)
            h = torch.empty(rows, 3072, device="cuda", dtype=torch.bfloat16)
            r = {
                "gateup_jit_launch": enqueue_us(lambda a=x, o=h, p=plan, n=rows, g=programs, la=lau:
                                                la._jit_launch(p, a, o, o, n, g)),
                "gateup_launcher_call": enqueue_us(lambda a=x, la=lau: la(a)),
                "fused_module_call": enqueue_us(lambda a=x: fused(a)),
                "eager_module_call": enqueue_us(lambda a=x: eager(a)),
                "direct_launch_trusted": any(d is not None for d in plan.direct.values()),
                "direct_error": lau.direct_error,
                "plan": plan.label(),
            }
        out[f"rows{rows}"] = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
        log(f"host us/call at {rows} rows: {out[f'rows{rows}']} (empty Triton launch "
            f"{out['empty_triton_jit_launch']:.1f})")
    out["empty_triton_jit_launch"] = round(out["empty_triton_jit_launch"], 2)
    return out


def compile_checks() -> dict:
    from torch._dynamo.utils import counters

    out = {}
    ref, eager, fused = pair(768, 3072, policy="auto")
    x = torch.randn(64, 128, 768, device="cuda").bfloat16()
    with torch.no_grad():
        expected = ref(x.float())
        for mode in ("default", "reduce-overhead"):
            torch._dynamo.reset()
            counters.clear()
            start = time.perf_counter()
            c = torch.compile(fused, fullgraph=True, mode=mode)
            for _ in range(3):
                y = c(x)
            out[f"fused_{mode}"] = {"graph_breaks": sum(counters["graph_break"].values()), "rel_err": rel(y, expected),
                                    "compile_s": round(time.perf_counter() - start, 1),
                                    "median_us": round(do_bench(lambda f=c: f(x), return_mode="median") * 1e3, 2)}
            torch._dynamo.reset()
            p = torch.compile(eager, mode=mode)
            for _ in range(3):
                p(x)
            out[f"plain_{mode}"] = {"median_us": round(do_bench(lambda f=p: f(x), return_mode="median") * 1e3, 2)}
        out["eager_median_us"] = round(do_bench(lambda: eager(x), return_mode="median") * 1e3, 2)
        out["fused_eager_median_us"] = round(do_bench(lambda: fused(x), return_mode="median") * 1e3, 2)
    log(f"compile: {out}")
    return out


def grad_checks() -> dict:
    out = {}
    for dim, hidden, rows in ((768, 3072, 8192), (4096, 11008, 1000)):
        ref, eager, fused = pair(dim, hidden)
        x = torch.randn(rows, dim, device="cuda")
        go = torch.randn(rows, dim, device="cuda")
        xr = x.clone().requires_grad_(True)
        ref(xr).backward(go)
        res = {}
        for name, m in (("fused", fused), ("eager_bf16", eager)):
            xb = x.bfloat16().requires_grad_(True)
            m(xb).backward(go.bfloat16())
            res[name] = {"dx": rel(xb.grad, xr.grad)} | {
                n: rel(getattr(m, n).weight.grad, getattr(ref, n).weight.grad)
                for n in ("gate_proj", "up_proj", "down_proj")}
        out[f"{dim}x{hidden}_rows{rows}"] = res
        log(f"grads {dim}x{hidden} rows {rows}: {res}")
    return out


def main() -> int:
    folder = Path(os.environ.get("OUT", ".bench"))
    folder.mkdir(parents=True, exist_ok=True)
    doc: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    for name, fn in (("host_us_per_call", host_times), ("grads", grad_checks), ("compile", compile_checks)):
        try:
            doc[name] = fn()
        except Exception:
            doc[name] = {"error": traceback.format_exc()[-3000:]}
            log(doc[name]["error"])
        (folder / "fused_checks.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
