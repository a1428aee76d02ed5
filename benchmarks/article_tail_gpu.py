"""Where do the last few µs of the fused MLP go at the article shape (8192 x 768 -> 3072, bf16)? On a CUDA GPU.

Results: benchmarks/FUSED_NOTES.md run 17.

The fused MLP (gate/up Triton kernel + cuBLAS down GEMM) matches the three cuBLAS GEMMs (run 16:
0.998× on an H100, 1.003× on an H200). What remains are the rounds of tiles: 1536 gate/up tiles of
128x128 over 132 SMs is 11.6 rounds, so the last round leaves about a third of the SMs idle while the
down GEMM waits for all of h. This script times, with triton.testing.do_bench (L2 flushed, median):

- the module's fused path, the three-GEMM floor, and their parts: the gate/up kernel alone, the down
  GEMM alone, and cuBLAS's gate and up as one [8192, 6144] GEMM;
- the gate/up kernel under other launch configurations (one program per tile instead of a persistent
  grid, other tile shapes, two CTAs per SM so that one's epilogue overlaps the other's main loop), each
  with its shared memory, registers and how many CTAs fit on an SM;
- the forward in row chunks: chunk i's down GEMM on a second stream while chunk i+1's gate/up runs, so
  the down GEMMs fill the gate/up kernel's last round (and the same chunks on one stream, to see what
  chunking alone costs).

Writes $OUT/article_tail.json. Usage: python3 benchmarks/article_tail_gpu.py [ROWS DIM HIDDEN]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from mlptui.runners.fused import FusedGeGLUMLP
from mlptui.runners.fused.configs import GateUpConfig
from mlptui.runners.fused.launcher import Plan
from mlptui.runners.workloads.modules import SimpleGeGLUMLP, seeded


def log(msg: str) -> None:
    print(msg, flush=True)


def bench_us(fn: Callable[[], Any]) -> float:
    fn()
    torch.cuda.synchronize()
    return float(do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1e3


def chunked(lau: Any, wd: torch.Tensor, x: torch.Tensor, chunks: int, side: torch.cuda.Stream | None) -> Callable[[], torch.Tensor]:
    """The forward in `chunks` row blocks; with `side`, each block's down GEMM runs on that stream as soon
    as its h is written, while the next block's gate/up runs on the current stream."""
    m = x.shape[0]
    bounds = [m * i // chunks for i in range(chunks + 1)]
    out = torch.empty((m, wd.shape[0]), device=x.device, dtype=x.dtype)
    wdt = wd.t()

    def run() -> torch.Tensor:
        main = torch.cuda.current_stream()
        hs = []
        for i in range(chunks):
            h = lau(x[bounds[i]:bounds[i + 1]])
            hs.append(h)
            if side is None:
                torch.mm(h, wdt, out=out[bounds[i]:bounds[i + 1]])
                continue
            side.wait_stream(main)
            with torch.cuda.stream(side):
                torch.mm(h, wdt, out=out[bounds[i]:bounds[i + 1]])
        if side is not None:
            main.wait_stream(side)
            for h in hs:  # h was read on the side stream: its memory is not reused before that is done
                h.record_stream(side)
        return out
    return run


def main() -> int:
    out_dir = Path(os.environ.get("OUT", ".bench"))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, dim, hidden = (int(v) for v in (sys.argv[1:4] if len(sys.argv) >= 4 else (8192, 768, 3072)))
    dtype = torch.bfloat16
    ref = seeded(lambda: SimpleGeGLUMLP(dim, hidden))
    fused = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=dtype)
    fused.load_state_dict(ref.state_dict())
    x = torch.randn(rows, dim, device="cuda", dtype=dtype)
    wg, wu, wd = (p.detach() for p in (fused.gate_proj.weight, fused.up_proj.weight, fused.down_proj.weight))
    wgu = torch.cat([wg, wu]).contiguous()
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "rows": rows, "dim": dim, "hidden": hidden, "us": {}}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    times = doc["us"]

    def record(name: str, fn: Callable[[], Any]) -> None:
        try:
            times[name] = round(bench_us(fn), 2)
            log(f"{name:48} {times[name]:8.2f} us")
        except Exception as exc:
            times[name] = None
            log(f"{name:48} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}")

    with torch.no_grad():
        lau = fused.launcher()
        h = lau(x)
        tuned = lau.plan_for(x, rows, False)
        doc["tuned"] = tuned.label()
        log(f"device {doc['device']}, {sms} SMs, tuned gate/up: {tuned.label()}")
        for rep in range(2):  # twice: the spread between the two is the figure's noise
            record(f"fused module #{rep}", lambda: fused(x))
            record(f"floor: 3 cuBLAS GEMMs #{rep}", lambda: (F.linear(x, wg), F.linear(x, wu), F.linear(h, wd)))
        record("gate/up kernel (tuned)", lambda: lau(x))
        record("cuBLAS gate+up as one GEMM [M, 2N]", lambda: F.linear(x, wgu))
        record("cuBLAS gate GEMM alone", lambda: F.linear(x, wg))
        record("down GEMM alone", lambda: F.linear(h, wd))
        base = tuned.config
        C = GateUpConfig
        # two programs per SM where a CTA's shared memory leaves room for a second: one CTA's epilogue
        # then runs while the other's tensor-core loop does (Triton 3.6 does not warp-specialize on Hopper)
        variants: dict[str, GateUpConfig] = {
            "tuned (again)": base,
            "one program per tile": replace(base, programs_per_sm=64),
            "group_m 4": replace(base, group_m=4),
            "128x64x64 w4 s4": C(128, 64, 64, 4, 4, flatten=True, interleaved=True),
            "128x64x64 w4 s3 p2": C(128, 64, 64, 4, 3, flatten=True, interleaved=True, programs_per_sm=2),
            "128x64x64 w4 s2 p2": C(128, 64, 64, 4, 2, flatten=True, interleaved=True, programs_per_sm=2),
            "128x64x64 w4 s3 p2 (not flat)": C(128, 64, 64, 4, 3, interleaved=True, programs_per_sm=2),
            "128x64x64 w8 s3 p2": C(128, 64, 64, 8, 3, flatten=True, interleaved=True, programs_per_sm=2),
            "64x128x64 w4 s2 p2": C(64, 128, 64, 4, 2, flatten=True, interleaved=True, programs_per_sm=2),
            "64x128x64 w4 s3 p2": C(64, 128, 64, 4, 3, flatten=True, interleaved=True, programs_per_sm=2),
            "128x128x64 w8 s2 p2": C(128, 128, 64, 8, 2, flatten=True, interleaved=True, programs_per_sm=2),
            "128x128x32 w8 s4 p2": C(128, 128, 32, 8, 4, flatten=True, interleaved=True, programs_per_sm=2),
        }
        hv = torch.empty_like(h)
        doc["kernels"] = {}
        for name, cfg in variants.items():
            plan = Plan(cfg, True, False)
            programs = cfg.programs(rows, hidden, sms)
            try:
                compiled = lau._jit_launch(plan, x, hv, hv, rows, programs)
                shared, regs = int(compiled.metadata.shared), int(compiled.n_regs)
                threads = 32 * cfg.num_warps
                per_sm = min(227 * 1024 // max(shared, 1), 65536 // max(regs * threads, 1))
                doc["kernels"][name] = {"shared": shared, "regs": regs, "ctas_per_sm": per_sm,
                                        "programs": programs, "max_diff": (hv - h).abs().max().item()}
                log(f"  {name}: {shared} B shared, {regs} registers, {per_sm} CTAs/SM fit, {programs} programs, "
                    f"max |diff| {doc['kernels'][name]['max_diff']:.3g}")
            except Exception as exc:
                log(f"  {name}: failed to build: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}")
                continue
            record(f"gate/up {name}", lambda p=plan, g=programs: lau._jit_launch(p, x, hv, hv, rows, g))
        side = torch.cuda.Stream()
        for chunks in (2, 4):
            run = chunked(lau, wd, x, chunks, side)
            err = (run() - fused(x)).abs().max().item()
            record(f"{chunks} chunks, down on a second stream (max |diff| {err:.3g})", run)
            record(f"{chunks} chunks, one stream", chunked(lau, wd, x, chunks, None))
    (out_dir / "article_tail.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
