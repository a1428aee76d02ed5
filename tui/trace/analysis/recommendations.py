"""Recommendations: fixed rules over the overview, operators and kernels; only rules that fire are
returned, each with the figures that fired it (thresholds are the constants below).

- dataloader: DataLoader time ≥ DATALOADER_SHARE of the scope's step time → more `num_workers`,
  `pin_memory=True`, prefetching.
- graph_capture: the trace records a CUDA/HIP graph capture (mlptui.trace.analysis.graph_capture): most
  launch calls were captured into a graph, not run; it replaces low_gpu_util, which would be wrong here.
- low_gpu_util: GPU utilisation < LOW_GPU_UTIL over the scope (traces with kernels only).
- launch_bound: ≥ LAUNCH_BOUND_SHARE of the kernels (at least MIN_KERNELS) run for less time than the
  host call that launched them → CUDA graphs, torch.compile, bigger batches.
- tensor_cores: Tensor-Core-eligible ops (GEMMs, convolutions) whose own kernels run mostly off Tensor
  Cores (tc_share < 0.5) take ≥ TC_MISS_SHARE of kernel time → TF32 (`torch.backends.cuda.matmul.
  allow_tf32`, `torch.set_float32_matmul_precision("high")`), bf16/fp16 autocast.
- memcpy: memcpy time ≥ MEMCPY_SHARE of step time, or host↔device copies inside the steps → keep data
  on the device, pinned memory and `non_blocking=True`, fewer `.item()`/`.cpu()` calls.
- small_kernels: ≥ SMALL_KERNEL_SHARE of the kernels (at least MIN_KERNELS) are pointwise or reduction
  kernels shorter than SMALL_KERNEL_US → torch.compile would fuse chains of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlptui.trace.analysis.graph_capture import graph_capture
from mlptui.trace.analysis.operators import OpGroup
from mlptui.trace.analysis.tables import Tables, tables
from mlptui.trace.model import KERNEL, MEMCPY, Trace
from mlptui.trace.names.kernel import decode_kernel

DATALOADER_SHARE = 0.05
LOW_GPU_UTIL = 0.5
LAUNCH_BOUND_SHARE = 0.5
MIN_KERNELS = 10
TC_MISS_SHARE = 0.10
MEMCPY_SHARE = 0.05
SMALL_KERNEL_SHARE = 0.5
SMALL_KERNEL_US = 10.0


def _in_scope(trace: Trace, t: Tables) -> np.ndarray:
    """Per GPU op: launched in the scope's step(s) (the whole trace when it has no steps)."""
    return np.ones(t.n_gpu, dtype=bool) if not trace.steps else t.gpu_step >= 0


def recommendations(trace: Trace, overview: dict[str, Any], ops: list[OpGroup],
                    step: int | None = None) -> list[dict[str, Any]]:
    """The rules that fire over the scope: every step (the whole trace when it has none) or `step`;
    `overview` and `ops` must be of the same scope."""
    out: list[dict[str, Any]] = []
    total = overview["total"]
    duration = total["duration_us"] or 0.0
    parts = total["breakdown_us"]
    t = tables(trace)
    scope = _in_scope(trace, t) if step is None else t.gpu_step == step
    kernels = np.flatnonzero(t.gpu_is((KERNEL,)) & scope)
    kernel_dur = t.gpu_dur[kernels]
    kernel_us = sum(kernel_dur.tolist())

    if duration and parts["dataloader"] / duration >= DATALOADER_SHARE:
        share = parts["dataloader"] / duration
        out.append({"rule": "dataloader", "message": (
            f"the DataLoader takes {share:.0%} of the step time: raise num_workers, set pin_memory=True, "
            "prefetch"), "figures": {"dataloader_us": round(parts["dataloader"], 3), "step_us": round(duration, 3),
                                     "share": round(share, 4)}})
    util = total["gpu_util"]
    capture = graph_capture(trace)
    if capture is not None:
        out.append({"rule": "graph_capture", "message": capture.line(),
                    "figures": {"launch_calls": capture.launches, "captured": capture.captured,
                                "kernels": capture.kernels, "capture_calls": capture.markers}})
    elif len(kernels) and util is not None and util < LOW_GPU_UTIL:
        out.append({"rule": "low_gpu_util", "message": (
            f"the GPU runs kernels {util:.0%} of the step time: the host, data loading or synchronisation "
            "sets the pace"), "figures": {"gpu_util": util, "threshold": LOW_GPU_UTIL}})
    launch = t.gpu_launch[kernels]
    launched = launch >= 0  # a kernel with no launch call (or a trace with no CPU ops) is not compared
    short = int((kernel_dur[launched] < t.op_dur[launch[launched]]).sum())
    if len(kernels) >= MIN_KERNELS and short / len(kernels) >= LAUNCH_BOUND_SHARE:
        out.append({"rule": "launch_bound", "message": (
            f"{short} of {len(kernels)} kernels run for less time than their launch call: launch-bound; "
            "CUDA graphs or torch.compile (mode='reduce-overhead') cut the launches"),
            "figures": {"kernels": len(kernels), "shorter_than_launch": short,
                        "share": round(short / len(kernels), 4)}})
    missed = [o for o in ops if o.tc_eligible and o.kernel_self_us > 0 and (o.tc_share or 0.0) < 0.5]
    missed_us = sum(o.kernel_self_us - o.tc_us for o in missed)
    if kernel_us and missed_us / kernel_us >= TC_MISS_SHARE:
        out.append({"rule": "tensor_cores", "message": (
            f"matrix products and convolutions spend {missed_us / kernel_us:.0%} of kernel time off Tensor "
            "Cores: use TF32 (torch.set_float32_matmul_precision('high')) or bf16/fp16 autocast"),
            "figures": {"off_tc_us": round(missed_us, 3), "kernel_us": round(kernel_us, 3),
                        "share": round(missed_us / kernel_us, 4), "ops": [o.name for o in missed[:5]]}})
    copies = np.flatnonzero(t.gpu_is((MEMCPY,)) & scope)
    h2d = np.flatnonzero(t.names_where(_host_device, t.gpu_name[copies])[t.gpu_name[copies]])
    memcpy_share = parts["memcpy"] / duration if duration else 0.0
    if len(copies) and (memcpy_share >= MEMCPY_SHARE or (trace.steps and len(h2d))):
        out.append({"rule": "memcpy", "message": (
            f"{len(h2d)} host↔device copies in the steps, memcpy {memcpy_share:.1%} of the step time: keep "
            "data on the device, use pinned memory and non_blocking=True, avoid .item()/.cpu() in the loop"),
            "figures": {"memcpy_us": round(sum(t.gpu_dur[copies].tolist()), 3), "share": round(memcpy_share, 4),
                        "host_device_copies": len(h2d)}})
    names = t.gpu_name[kernels]
    fusable = t.names_where(lambda s: decode_kernel(s).family in ("pointwise", "reduction"), names)
    small_dur = kernel_dur[(kernel_dur < SMALL_KERNEL_US) & fusable[names]].tolist()
    if len(kernels) >= MIN_KERNELS and len(small_dur) / len(kernels) >= SMALL_KERNEL_SHARE:
        out.append({"rule": "small_kernels", "message": (
            f"{len(small_dur)} of {len(kernels)} kernels are pointwise/reduction kernels under "
            f"{SMALL_KERNEL_US:g} µs: torch.compile would fuse chains of them"),
            "figures": {"small_kernels": len(small_dur), "kernels": len(kernels),
                        "share": round(len(small_dur) / len(kernels), 4), "small_us": round(sum(small_dur), 3)}})
    return out


def _host_device(name: str) -> bool:
    n = name.replace(" ", "")
    return any(tag in n for tag in ("HtoD", "DtoH", "Host->Device", "Device->Host", "HtoA", "AtoH", "PtoD",
                                    "DtoP"))
