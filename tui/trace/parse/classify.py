"""Sort decoded events into what the index builds from: CPU slices, GPU work, metadata and flows.

Raw `cat` values vary by torch version and vendor; CATEGORY maps them to the normalised categories of
mlptui.trace.model. Events that cannot be placed (no timestamp, a timestamp far from every other one) are
skipped and counted in `warnings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from mlptui.trace.model import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    GPU_ANNOTATION,
    GPU_CATS,
    KERNEL,
    MEMCPY,
    MEMSET,
    OTHER,
    PYTHON,
    RUNTIME,
    SYNC,
)

T = TypeVar("T")

# Raw `cat` -> normalised category. Old traces capitalise; ROCm reuses the CUDA names; vendors add theirs.
CATEGORY: dict[str, str] = {
    "cpu_op": CPU_OP, "Operator": CPU_OP, "operator": CPU_OP,
    "user_annotation": ANNOTATION, "User annotation": ANNOTATION,
    "python_function": PYTHON, "python_function_call": PYTHON,
    "cuda_runtime": RUNTIME, "Runtime": RUNTIME, "runtime": RUNTIME,
    "mtia_runtime": RUNTIME, "xpu_runtime": RUNTIME, "privateuse1_runtime": RUNTIME, "hip_runtime": RUNTIME,
    "cuda_driver": DRIVER, "Driver": DRIVER, "xpu_driver": DRIVER, "privateuse1_driver": DRIVER,
    "kernel": KERNEL, "Kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "Memcpy": MEMCPY,
    "gpu_memset": MEMSET, "Memset": MEMSET,
    "gpu_user_annotation": GPU_ANNOTATION,
    "cuda_sync": SYNC,
}
MEMORY_EVENT = "[memory]"
# Device-side events that are not kernels/memcpys/memsets: kept out of the CPU trees.
_DEVICE_SIDE = frozenset({GPU_ANNOTATION, SYNC})
_DEVICE_SIDE_RAW = frozenset({"mtia_ccp_events"})
_SKIPPED_RAW = frozenset({"Trace"})        # the profiler's own span ("PyTorch Profiler (0)")
# Beyond this distance from the median start (µs, about three years) a timestamp is corrupt, not data.
_MAX_SPREAD_US = 1e14


@dataclass
class Buckets:
    """Event indices by kind (CPU and GPU ones with their normalised category and start in µs)."""

    cpu_ev: list[int]
    cpu_cat: list[str]
    cpu_ts: np.ndarray
    gpu_ev: list[int]
    gpu_cat: list[str]
    gpu_ts: np.ndarray
    meta_ev: list[int]
    flow_ev: list[int]
    device_side: int         # device-side events that are not GPU work (GPU annotations, syncs, MTIA)
    mem_ev: list[int]        # `[memory]` instant events (profile_memory=True)


def classify(events: list[Any], warnings: list[str]) -> Buckets:
    cpu_ev: list[int] = []
    cpu_cat: list[str] = []
    gpu_ev: list[int] = []
    gpu_cat: list[str] = []
    meta_ev: list[int] = []
    flow_ev: list[int] = []
    mem_ev: list[int] = []
    no_ts = no_dur = ignored_phases = device_side = 0
    category = CATEGORY
    gpu_cats = GPU_CATS
    for i, e in enumerate(events):
        ph = e.ph
        if ph == "X":
            if e.ts is None:
                no_ts += 1
                continue
            if e.dur is None:
                no_dur += 1
            cat = category.get(e.cat)
            if cat is None:
                if e.cat in _SKIPPED_RAW:
                    continue
                if e.cat in _DEVICE_SIDE_RAW:
                    device_side += 1
                    continue
                cat = OTHER
            if cat in gpu_cats:
                gpu_ev.append(i)
                gpu_cat.append(cat)
            elif cat in _DEVICE_SIDE:
                device_side += 1
            else:
                cpu_ev.append(i)
                cpu_cat.append(cat)
        elif ph == "M":
            meta_ev.append(i)
        elif ph == "s" or ph == "f":
            flow_ev.append(i)
        elif (ph == "i" or ph == "I") and e.name == MEMORY_EVENT and e.ts is not None:
            mem_ev.append(i)
        elif ph == "B" or ph == "E":
            ignored_phases += 1
    if no_ts:
        warnings.append(f"skipped {no_ts} complete event(s) without a 'ts'")
    if no_dur:
        warnings.append(f"{no_dur} complete event(s) without a 'dur' read as zero-length")
    if ignored_phases:
        warnings.append(f"ignored {ignored_phases} begin/end ('B'/'E') event(s); only complete events are indexed")
    if not events:
        warnings.append("the trace has no events")

    cpu_ts = np.asarray([events[i].ts for i in cpu_ev], dtype=np.float64)
    gpu_ts = np.asarray([events[i].ts for i in gpu_ev], dtype=np.float64)
    bad = _outliers(np.concatenate((cpu_ts, gpu_ts)))
    if bad is not None:
        warnings.append(f"skipped {int(bad.sum())} slice(s) with a timestamp far outside the trace")
        keep_cpu, keep_gpu = ~bad[:len(cpu_ev)], ~bad[len(cpu_ev):]
        cpu_ev, cpu_cat = _keep(cpu_ev, keep_cpu), _keep(cpu_cat, keep_cpu)
        gpu_ev, gpu_cat = _keep(gpu_ev, keep_gpu), _keep(gpu_cat, keep_gpu)
        cpu_ts, gpu_ts = cpu_ts[keep_cpu], gpu_ts[keep_gpu]
    return Buckets(cpu_ev, cpu_cat, cpu_ts, gpu_ev, gpu_cat, gpu_ts, meta_ev, flow_ev, device_side, mem_ev)


def _keep(items: list[T], mask: npt.NDArray[np.bool_]) -> list[T]:
    return [x for x, k in zip(items, mask.tolist(), strict=True) if k]


def _outliers(ts: np.ndarray) -> np.ndarray | None:
    """Mask of starts that are not finite or lie absurdly far from the rest (a corrupt file); None if none."""
    if not len(ts):
        return None
    finite = np.isfinite(ts)
    ref = float(np.median(ts[finite])) if finite.any() else 0.0
    with np.errstate(invalid="ignore"):
        bad = ~(finite & (np.abs(ts - ref) < _MAX_SPREAD_US))
    return bad if bad.any() else None
