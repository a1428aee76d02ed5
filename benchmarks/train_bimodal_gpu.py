"""Which kernel of the fused module's forward+backward moves when its time jumps between ~680 and
~800+ µs at the article shape (run 20): per allocator state (a pad tensor of random size shifts where
the step's tensors land), each variant's do_bench median and, profiled with L2 flushed before each step,
its kernels' GPU µs per step. Variants: eager; the fused path as it is; the fused path with its backward
GEMMs given contiguous copies of [dgate | dup]'s halves.

    python3 benchmarks/train_bimodal_gpu.py [--epochs 8]

Writes $OUT/train_bimodal.json (or .bench/train_bimodal.json).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile
from triton.testing import do_bench

from mlptui.runners.bench.sweep import eager_and_forced, pass_call
from mlptui.runners.fused import ops

CONTIG = {"on": False}
_input_grads = ops.input_grads


def input_grads(needs: Any, dgu: torch.Tensor, x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> Any:
    if not CONTIG["on"]:
        return _input_grads(needs, dgu, x, wg, wu)
    n = wg.shape[0]
    dg, du = dgu[:, :n].contiguous(), dgu[:, n:].contiguous()
    return torch.addmm(torch.mm(dg, wg), du, wu), torch.mm(dg.t(), x), torch.mm(du.t(), x)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=8)
    args = ap.parse_args()
    ops.input_grads = input_grads  # GeGLUGateUp.backward reads the module's global
    rows, dim, hidden = 8192, 768, 3072
    eager, fused = eager_and_forced(dim, hidden, torch.bfloat16)
    x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
    step_e, step_f = pass_call(eager, x, True), pass_call(fused, x, True)

    def contig() -> Any:
        CONTIG["on"] = True
        try:
            return step_f()
        finally:
            CONTIG["on"] = False

    fns = {"eager": step_e, "fused": step_f, "fused-contig": contig}
    for fn in fns.values():
        fn()
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    rng = random.Random(0)
    epochs = []
    for e in range(args.epochs):
        pad = torch.empty(rng.randint(1, 96) << 20, dtype=torch.int8, device="cuda")
        rec: dict[str, Any] = {"pad_mib": pad.numel() >> 20}
        for name, fn in fns.items():
            before = torch.cuda.memory_stats()
            bench = float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3
            after = torch.cuda.memory_stats()
            allocator = {k: after.get(k, 0) - before.get(k, 0) for k in
                         ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")}
            torch.cuda.synchronize()
            host = []
            for _ in range(20):
                t0 = time.perf_counter()
                fn()
                host.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    flush.zero_()
                    fn()
                torch.cuda.synchronize()
            kernels: dict[str, float] = defaultdict(float)
            for evt in prof.key_averages():
                t = getattr(evt, "self_device_time_total", 0) or getattr(evt, "self_cuda_time_total", 0)
                if t > 0 and "fill" not in evt.key and "zero" not in evt.key.lower():
                    kernels[evt.key[:70]] += t / 5
            rec[name] = {"do_bench_us": round(bench, 1), "allocator_during_bench": allocator,
                         "host_us_median": round(sorted(host)[10], 1), "kernels_us": {k: round(v, 1) for k, v in
                                                                        sorted(kernels.items(), key=lambda kv: -kv[1])[:10]}}
        print(json.dumps({"epoch": e, "pad": rec["pad_mib"], **{n: [rec[n]["do_bench_us"], rec[n]["host_us_median"],
                                                                 rec[n]["allocator_during_bench"]] for n in fns}}), flush=True)
        epochs.append(rec)
        del pad
    # Host and GPU apart: a 20 ms sleep kernel queued first keeps the GPU behind, so the wall time of a
    # call is its host (enqueue) time alone and the events around it time its kernels back to back.
    from mlptui.runners.fused.backward_launch import geglu_backward

    dh = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
    gu = torch.randn(rows, 2 * hidden, device="cuda", dtype=torch.bfloat16)
    xg = x.detach().requires_grad_(True)
    parts = {**fns, "fused-forward": lambda: fused(xg), "eager-forward": lambda: eager(xg),
             "geglu_backward": lambda: geglu_backward(dh, gu)}
    apart: dict[str, Any] = {}
    for name, fn in parts.items():
        host, gpu = [], []
        for _ in range(15):
            torch.cuda.synchronize()
            torch.cuda._sleep(20_000_000)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            t0 = time.perf_counter()
            fn()
            host.append((time.perf_counter() - t0) * 1e6)
            b.record()
            torch.cuda.synchronize()
            gpu.append(a.elapsed_time(b) * 1e3)
        apart[name] = {"host_us": round(sorted(host)[7], 1), "gpu_us_back_to_back": round(sorted(gpu)[7], 1),
                       "host_us_all": [round(v) for v in host]}
        print(name, json.dumps(apart[name]), flush=True)
    from mlptui.runners.bench.gpu_record import write_gpu_record

    write_gpu_record("train_bimodal.json", {"host_and_gpu_apart": apart,
                                            "command": "python3 benchmarks/train_bimodal_gpu.py", "epochs": epochs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
