"""The fused training path with the backward's pointwise pass launched directly (backward_launch.DIRECT)
against the same path through Triton's dispatcher, and eager, in one process on a CUDA GPU.

    python3 benchmarks/backward_launch_gpu.py [--calls 400]

Forward + backward (gradients of the input and the three weights) of FusedGeGLUMLP with its fused path
forced on, and of eager SimpleGeGLUMLP, bf16, at host-bound and GPU-bound row counts: synchronized calls,
the three modes alternating call by call with L2 flushed before each (the sweep's method,
`interleaved_times`); medians, and the median of the per-round ratios (pairing.paired_ratio). Writes $OUT/backward_launch.json
(or .bench/backward_launch.json).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import torch

from mlptui.runners.bench.gpu_record import write_gpu_record
from mlptui.runners.bench.pairing import paired_ratio
from mlptui.runners.bench.sweep import eager_and_forced, interleaved_times, pass_call
from mlptui.runners.fused import backward_launch as bl

SHAPES = [(1, 768, 3072), (128, 768, 3072), (2048, 768, 3072), (8192, 768, 3072), (128, 4096, 11008),
          (2048, 4096, 11008)]


def _with(direct: bool, step: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        bl.DIRECT = direct
        return step()
    return call


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args()
    rows_out = []
    for rows, dim, hidden in SHAPES:
        eager, fused = eager_and_forced(dim, hidden, torch.bfloat16)
        x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
        step_e, step_f = pass_call(eager, x, True), pass_call(fused, x, True)

        fns = {"eager": step_e, "direct": _with(True, step_f), "dispatcher": _with(False, step_f)}
        for fn in fns.values():  # tunes, compiles, checks the direct launch
            fn()
        torch.cuda.synchronize()
        times = interleaved_times(fns, args.calls)
        bl.DIRECT = True
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        ratio = paired_ratio(times, "direct", "dispatcher")[0]
        over, over_j = paired_ratio(times, "direct")[0], paired_ratio(times, "dispatcher")[0]
        row = {"rows": rows, "dim": dim, "hidden": hidden, "median_us": med, "direct_over_dispatcher": ratio,
               "direct_over_eager": over, "dispatcher_over_eager": over_j}
        rows_out.append(row)
        print(f"{rows:6d} {dim}x{hidden}: eager {med['eager']:8.1f}  direct {med['direct']:8.1f}  "
              f"dispatcher {med['dispatcher']:8.1f} µs   direct/dispatcher {ratio:.3f}  direct/eager {over:.3f}  "
              f"dispatcher/eager {over_j:.3f}", flush=True)
        del eager, fused, x, step_e, step_f, fns
        torch.cuda.empty_cache()
    write_gpu_record("backward_launch.json", {
        "command": f"backward_launch_gpu.py --calls {args.calls}",
        "method": "synchronized calls, modes alternating, L2 flushed (sweep.interleaved_times); medians",
        "cells": rows_out})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
