"""A small synthetic trace for the scoped profiler views: two steps, each with an nn.Module frame around
a GEMM on device 0 and an op whose name holds markup brackets launching a kernel on device 1, and
memory events on both devices (step 1's allocations are freed in step 2; step 2's never are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import trace_bytes, x

ODD = "aten::relu[bold]x[/bold]"          # a name Rich or Textual markup would eat
STEP_US = 1000.0
GEMM_US = (30.0, 40.0)                  # per step
RELU_US = (5.0, 7.0)


def _launch(name: str, base: float, at: float, dur: float, device: int, corr: int) -> list[dict[str, Any]]:
    runtime = x("cudaLaunchKernel", "cuda_runtime", base + at, 5, **{"correlation": corr, "External id": corr})
    kernel = x(name, "kernel", base + at + 10, dur, pid=device, tid=7,
               **{"correlation": corr, "External id": corr, "device": device, "stream": 7})
    return [runtime, kernel]


def memory_event(ts: float, device: int, addr: int, nbytes: int, total: int) -> dict[str, Any]:
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Device Type": 1, "Device Id": device, "Addr": addr, "Bytes": nbytes,
                     "Total Allocated": total, "Total Reserved": 4096}}


def scoped_events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for k in range(2):
        base = k * STEP_US
        events += [
            x(f"ProfilerStep#{k + 1}", "user_annotation", base, 900),
            x("nn.Module: Net_0", "python_function", base + 10, 400),
            x("nn.Module: Linear_0", "python_function", base + 20, 200),
            x("aten::mm", "cpu_op", base + 30, 100, **{"External id": 100 + k}),
            *_launch("ampere_sgemm_128x64_tn", base + 0, 40, GEMM_US[k], 0, 10 + k),
            x(ODD, "cpu_op", base + 250, 100, **{"External id": 200 + k}),
            *_launch("relu_kernel", base + 0, 260, RELU_US[k], 1, 20 + k),
            memory_event(base + 35, 0, 0x1000 + k, 1000 * (k + 1), 1000 * (k + 1)),
            memory_event(base + 265, 1, 0x2000 + k, 500, 500 * (k + 1)),
        ]
    events.append(memory_event(1800.0, 0, 0x1000, -1000, 1000))      # step 1's device-0 block, freed in step 2
    events.append(memory_event(1810.0, 1, 0x2000, -500, 500))
    return events


def write_scoped_trace(folder: Path, name: str = "run[b]1.pt.trace.json") -> Path:
    path = folder / name
    path.write_bytes(trace_bytes(scoped_events()))
    return path
