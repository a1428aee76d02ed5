"""Compile, check, profile and time one built workload. Imports torch; used only inside `mlptui run`."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import torch

# Sizes of the unprofiled timing loop: like triton.testing.do_bench, a short estimate sets how many
# calls fit in the warm-up and measurement budgets. The warm-up is long because a GPU left idle (while
# a kernel source loads, say) runs at idle clocks for a while: a short warm-up measured a kernel well
# below its speed right after a pause (benchmarks/results/fused-mlp.md, "Warm-up").
WARMUP_MS = 200.0
MEASURE_MS = 200.0
BUSY_MS = 300.0
MIN_ITERS, MAX_ITERS = 10, 2000
CPU_MEASURE_S = 0.5
CPU_MIN_ITERS, CPU_MAX_ITERS = 5, 200
L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2


def compiled(module: torch.nn.Module, mode: str) -> Callable[..., Any]:
    if mode == "eager":
        return module
    if mode == "compile":
        return torch.compile(module)
    return torch.compile(module, mode=mode)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def first_calls(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], device: str,
                mode: str) -> tuple[torch.Tensor, float]:
    """Run the first call (which compiles) and return its output, cloned, and its wall seconds.
    reduce-overhead records its CUDA graph over the next calls, so those run here too."""
    start = time.perf_counter()
    out = fn(*inputs)
    sync(device)
    seconds = time.perf_counter() - start
    if mode == "reduce-overhead":
        for _ in range(2):
            out = fn(*inputs)
        sync(device)
    return out.detach().clone(), seconds


def max_rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """max |out - ref| / max |ref|, in fp32 (elementwise ratios blow up near zero)."""
    out32, ref32 = out.float(), ref.float()
    scale = ref32.abs().max().item()
    err = (out32 - ref32).abs().max().item()
    if not math.isfinite(err):
        return float("nan")
    return err / scale if scale > 0 else err


def profile_to(path: Path, fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], *, device: str,
               label: str, wait: int, warmup: int, active: int, with_stack: bool,
               metadata: dict[str, Any], on_step: Callable[[int, int], None] | None = None,
               profile_memory: bool = False, with_modules: bool = False) -> None:
    """Record wait+warmup+active steps, each one `label`-annotated call, and export the trace to
    `path` (gzipped, because the name ends in .gz)."""
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    exported: list[Path] = []

    def ready(prof: Any) -> None:
        prof.export_chrome_trace(str(path))
        exported.append(path)

    steps = wait + warmup + active
    with warnings.catch_warnings():
        # one schedule cycle is all we record, so "events are cleared after each cycle" is moot
        warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle.*")
        with profile(
            activities=activities,
            record_shapes=True,
            # eager modules show as `nn.Module: Name_N` frames only through the Python tracer, which
            # with_stack turns on (with_modules alone covers TorchScript modules only)
            with_stack=with_stack or with_modules,
            profile_memory=profile_memory,
            with_modules=with_modules,
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
            on_trace_ready=ready,
        ) as prof:
            for step in range(steps):
                if step == wait + warmup:  # Kineto takes metadata only while it records
                    prof.add_metadata_json("mlptui", orjson.dumps(metadata).decode())
                with record_function(label):
                    fn(*inputs)
                sync(device)
                prof.step()
                if on_step:
                    on_step(step + 1, steps)
    if not exported:
        raise RuntimeError("the profiler finished without exporting a trace")


def _percentile(sorted_values: list[float], q: float) -> float:
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _summary(times_us: list[float], method: str) -> dict[str, Any]:
    times_us = sorted(times_us)
    return {
        "median_us": round(_percentile(times_us, 0.5), 3),
        "p10_us": round(_percentile(times_us, 0.1), 3),
        "p90_us": round(_percentile(times_us, 0.9), 3),
        "iters": len(times_us),
        "method": method,
    }


def busy_gpu(ms: float = BUSY_MS) -> None:
    """Keep the GPU fully busy for `ms` so it leaves its idle clocks before a measurement: a call of a
    few µs barely loads it, and its warm-up alone does not raise the clocks."""
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    deadline = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < deadline:
        for _ in range(8):
            a @ a
        torch.cuda.synchronize()


def _timing_event() -> torch.cuda.Event:
    # torch leaves Event's constructor unannotated (an error only where untyped calls are checked)
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call, unused-ignore]


def time_cuda(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...]) -> dict[str, Any]:
    """CUDA events around each call, with L2 flushed before each, after warm-up (do_bench's method)."""
    busy_gpu()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    flush.zero_()  # loads the fill kernel (lazy module loading) before the estimate below
    torch.cuda.synchronize()
    start, end = _timing_event(), _timing_event()
    start.record()
    for _ in range(5):
        flush.zero_()
        fn(*inputs)
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(WARMUP_MS / estimate_ms))):
        fn(*inputs)
    n = max(MIN_ITERS, min(MAX_ITERS, int(MEASURE_MS / estimate_ms)))
    starts = [_timing_event() for _ in range(n)]
    ends = [_timing_event() for _ in range(n)]
    for i in range(n):
        flush.zero_()
        starts[i].record()
        fn(*inputs)
        ends[i].record()
    torch.cuda.synchronize()
    del flush
    times = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)]
    return _summary(times, "cuda events around each call, L2 flushed before each, after "
                           "300 ms of full GPU load and 200 ms of warm-up calls")


def time_cpu(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...]) -> dict[str, Any]:
    for _ in range(3):
        fn(*inputs)
    t0 = time.perf_counter()
    fn(*inputs)
    estimate_s = max(time.perf_counter() - t0, 1e-7)
    n = max(CPU_MIN_ITERS, min(CPU_MAX_ITERS, int(CPU_MEASURE_S / estimate_s)))
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*inputs)
        times.append((time.perf_counter() - t0) * 1e6)
    return _summary(times, "time.perf_counter around each call, after warm-up")


def time_calls(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], device: str) -> dict[str, Any]:
    return time_cuda(fn, inputs) if device == "cuda" else time_cpu(fn, inputs)
