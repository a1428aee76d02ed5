"""Where a training step of the GeGLU MLP spends its time, per path, and how far apart two timings of
identical code land, in one process on a CUDA GPU.

1. Anatomy at one shape (default the article's: 8192 rows, dim 768, hidden 3072, bf16): for eager, the
   fused module forced onto its fused path, and torch.compile of eager — host µs per step (enqueued,
   timed before the synchronize), wall µs per step (synchronized, L2 flushed, median), and the GPU
   kernels of one profiled step (µs per kernel, summed) — so a step that loses can be told host-bound
   from GPU-bound. The fused path's profiled steps are written as a trace to $OUT.
2. Noise: the same eager module timed as two modes ("eager", "eager-again") by the sweep's method and by
   paired alternation (each pair's ratio, then the median ratio), three repeats each, at cells chosen on
   the command line.

Writes $OUT/train_step.json (or .bench/train_step.json).
Usage: python3 benchmarks/train_step_gpu.py [--rows 8192 --dim 768 --hidden 3072] [--noise DIMxHIDDEN:ROWS:PASS ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mlptui.runners.bench.sweep import best_us, interleaved_times, interleaved_us, pass_call
from mlptui.runners.fused import FusedGeGLUMLP
from mlptui.runners.workloads.modules import SimpleGeGLUMLP


def log(msg: str) -> None:
    print(msg, flush=True)


def modules(dim: int, hidden: int) -> dict[str, torch.nn.Module]:
    torch.manual_seed(0)
    eager = SimpleGeGLUMLP(dim, hidden).to("cuda", torch.bfloat16)
    fused = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=torch.bfloat16)
    fused.load_state_dict(eager.state_dict())
    again = SimpleGeGLUMLP(dim, hidden).to("cuda", torch.bfloat16)
    again.load_state_dict(eager.state_dict())
    return {"eager": eager, "fused-forced": fused, "eager-again": again}


def host_us(fn: Callable[[], Any], calls: int = 20) -> float:
    """Median host µs of one call enqueued behind the ones before it (not synchronized per call)."""
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def kernels_of(fn: Callable[[], Any], trace_path: Path | None) -> dict[str, Any]:
    """GPU µs per kernel over 3 profiled steps, divided by 3, and the GPU's busy µs per step."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
    per: dict[str, float] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name] = per.get(e.name, 0.0) + e.device_time / 3
    if trace_path is not None:
        prof.export_chrome_trace(str(trace_path))
    top = sorted(per.items(), key=lambda kv: -kv[1])
    return {"gpu_busy_us": round(sum(per.values()), 1),
            "kernels": [{"name": n[:120], "us": round(u, 1)} for n, u in top[:14]]}


def anatomy(rows: int, dim: int, hidden: int, out: Path) -> dict[str, Any]:
    mods = modules(dim, hidden)
    x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
    steps = {m: pass_call(mods[m], x, True) for m in ("eager", "fused-forced")}
    steps["compile"] = pass_call(torch.compile(mods["eager-again"]), x, True)
    result: dict[str, Any] = {"rows": rows, "dim": dim, "hidden": hidden}
    for m, fn in steps.items():
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        trace = out / f"train_step_{m}.pt.trace.json" if m != "compile" else None
        result[m] = {"host_us": round(host_us(fn), 1), "wall_us": round(interleaved_us({m: fn}, 50)[m], 1),
                     **kernels_of(fn, trace)}
        log(f"{m}: host {result[m]['host_us']} us, wall {result[m]['wall_us']} us, "
            f"GPU busy {result[m]['gpu_busy_us']} us")
        for k in result[m]["kernels"][:8]:
            log(f"    {k['us']:8.1f}  {k['name'][:90]}")
    return result


def paired(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    """Median over alternated rounds of each mode's call time over eager's in the same round."""
    times = interleaved_times(fns, calls)
    return {m: round(statistics.median(a / b for a, b in zip(ts, times["eager"], strict=True)), 4)
            for m, ts in times.items() if m != "eager"}


def noise(cell: str) -> dict[str, Any]:
    fam, rows_s, pass_ = cell.split(":")
    dim, hidden = (int(v) for v in fam.split("x"))
    rows, bwd = int(rows_s), pass_ == "fwd+bwd"
    mods = modules(dim, hidden)
    auto = FusedGeGLUMLP(dim, hidden, device="cuda", dtype=torch.bfloat16)
    auto.load_state_dict(mods["eager"].state_dict())
    x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
    fns = {"eager": pass_call(mods["eager"], x, bwd), "eager-again": pass_call(mods["eager-again"], x, bwd),
           "fused": pass_call(auto, x, bwd)}
    out: dict[str, Any] = {"cell": cell, "route": auto.path_for(rows, train=bwd), "sweep": [], "paired": []}
    for _ in range(3):
        best = best_us(fns)
        out["sweep"].append({m: round(v / best["eager"], 4) for m, v in best.items() if m != "eager"})
        out["paired"].append(paired(fns, 60))
    log(f"noise {cell} ({out['route']}): sweep {out['sweep']}  paired {out['paired']}")
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=8192)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--hidden", type=int, default=3072)
    p.add_argument("--noise", nargs="*", default=[])
    args = p.parse_args()
    out = Path(os.environ.get("OUT", ".bench"))
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    report["anatomy"] = anatomy(args.rows, args.dim, args.hidden, out)
    report["noise"] = [noise(c) for c in args.noise]
    (out / "train_step.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
