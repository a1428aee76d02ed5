"""Sort decoded events into what the index builds from: CPU slices, GPU work, metadata and flows.

Raw `cat` values vary by torch version and vendor; CATEGORY maps them to the normalised categories of
mlptui.trace.model. Events that cannot be placed (no timestamp, a timestamp far from every other one) are
skipped and counted in `warnings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Any

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
# MTIA's device lanes: `dma_request` moves data, `event_record`/`event_wait` only order streams, the rest
# (`fc-dtype_Float`, `pe_exe`, `merge`, ...) is compute the device ran, like a kernel.
_MTIA_DEVICE = "mtia_ccp_events"
_MTIA_BOOKKEEPING = frozenset({"event_record", "event_wait"})
_SKIPPED_RAW = frozenset({"Trace"})        # the profiler's own span ("PyTorch Profiler (0)")
# Beyond this distance from the median start (µs, about three years) a timestamp is corrupt, not data.
_MAX_SPREAD_US = 1e14


# The normalised categories by code (Buckets.cpu_cat and gpu_cat hold codes into this tuple).
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys([*CATEGORY.values(), OTHER]))
_CODE = {cat: code for code, cat in enumerate(CATEGORIES)}
_SKIP, _MTIA = -1, -2                    # raw categories that are dropped / decided by the event's name
_X, _META, _FLOW, _INSTANT, _BEGIN_END = 1, 2, 3, 4, 5
_PHASE = {"X": _X, "M": _META, "s": _FLOW, "f": _FLOW, "i": _INSTANT, "I": _INSTANT, "B": _BEGIN_END,
          "E": _BEGIN_END}
_GPU_CODES = np.array([cat in GPU_CATS for cat in CATEGORIES])
_DEVICE_SIDE_CODES = np.array([cat in _DEVICE_SIDE for cat in CATEGORIES])


Kind = tuple[Any, Any, Any, Any, Any]     # an event's (ph, cat, name, pid, tid) as written


@dataclass
class Buckets:
    """Event indices by what they are (CPU and GPU ones with their normalised category code, start and duration in
    µs; a missing duration reads as 0)."""

    cpu_ev: np.ndarray
    cpu_cat: np.ndarray
    cpu_ts: np.ndarray
    cpu_dur: np.ndarray
    gpu_ev: np.ndarray
    gpu_cat: np.ndarray
    gpu_ts: np.ndarray
    gpu_dur: np.ndarray
    meta_ev: list[int]
    flow_ev: list[int]
    device_side: int         # device-side events that are not GPU work (GPU annotations, syncs, MTIA)
    mem_ev: list[int]        # `[memory]` instant events (profile_memory=True)
    kinds: list[Kind]        # every distinct (ph, cat, name, pid, tid), in the order first seen
    cpu_kind: np.ndarray     # each CPU / GPU event's index into `kinds`
    gpu_kind: np.ndarray


class Codes(dict[Any, int]):
    """Numbers values in the order they are first seen."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


def classify(events: list[Any], warnings: list[str]) -> Buckets:
    """One pass numbers each event's kind: a trace repeats a few hundred (phase, category, name, pid,
    tid) combinations, so what depends on them is decided once per kind. One pass each then reads the
    complete events' start and duration; the decisions are made on numpy arrays."""
    kinds = Codes()
    number = kinds.__getitem__
    kind = np.fromiter([number((e.ph, e.cat, e.name, e.pid, e.tid)) for e in events], dtype=np.int64,
                       count=len(events))
    table = list(kinds)
    phase = np.array([_PHASE.get(k[0], 0) for k in table], dtype=np.int64)[kind]
    is_x = phase == _X
    x = np.flatnonzero(is_x)
    xev = list(compress(events, is_x.tolist()))
    ts, ts_none = _floats(xev, "ts")
    dur, dur_none = _floats(xev, "dur")
    xkind = kind[x]
    code = np.array([_raw_code(k[1]) for k in table], dtype=np.int64)[xkind]
    placed = ~ts_none
    no_ts = int(ts_none.sum())
    no_dur = int((dur_none & placed).sum())
    dur[dur_none] = 0.0
    code[~placed] = _SKIP
    device_side = 0
    mtia = np.flatnonzero(code == _MTIA)
    if len(mtia):
        mtia_cats = [_mtia_category(xev[j].name) for j in mtia.tolist()]
        code[mtia] = [_SKIP if k is None else _CODE[k] for k in mtia_cats]
        device_side += mtia_cats.count(None)
    known = code >= 0
    cat = np.where(known, code, 0)
    gpu = known & _GPU_CODES[cat]
    side = known & _DEVICE_SIDE_CODES[cat]
    cpu = known & ~gpu & ~side
    device_side += int(side.sum())
    instants = np.flatnonzero(phase == _INSTANT).tolist()
    mem_ev = [i for i in instants if events[i].name == MEMORY_EVENT and events[i].ts is not None]
    ignored_phases = int((phase == _BEGIN_END).sum())
    if no_ts:
        warnings.append(f"skipped {no_ts} complete event(s) without a 'ts'")
    if no_dur:
        warnings.append(f"{no_dur} complete event(s) without a 'dur' read as zero-length")
    if ignored_phases:
        warnings.append(f"ignored {ignored_phases} begin/end ('B'/'E') event(s); only complete events are indexed")
    if not events:
        warnings.append("the trace has no events")

    keep_cpu, keep_gpu = cpu, gpu
    bad = _outliers(np.concatenate((ts[cpu], ts[gpu])))
    if bad is not None:
        warnings.append(f"skipped {int(bad.sum())} slice(s) with a timestamp far outside the trace")
        keep_cpu = cpu.copy()
        keep_gpu = gpu.copy()
        keep_cpu[np.flatnonzero(cpu)[bad[:int(cpu.sum())]]] = False
        keep_gpu[np.flatnonzero(gpu)[bad[int(cpu.sum()):]]] = False
    return Buckets(x[keep_cpu], cat[keep_cpu], ts[keep_cpu], dur[keep_cpu],
                   x[keep_gpu], cat[keep_gpu], ts[keep_gpu], dur[keep_gpu],
                   np.flatnonzero(phase == _META).tolist(), np.flatnonzero(phase == _FLOW).tolist(),
                   device_side, mem_ev, table, xkind[keep_cpu], xkind[keep_gpu])


def by_first_use(kind: np.ndarray, n_kinds: int) -> list[int]:
    """The kinds that occur in `kind` (per-event indices into the kinds), in the order first seen."""
    first = np.full(n_kinds, len(kind), dtype=np.int64)
    np.minimum.at(first, kind, np.arange(len(kind), dtype=np.int64))
    used = np.flatnonzero(first < len(kind))
    order: list[int] = used[np.argsort(first[used])].tolist()
    return order


def _raw_code(raw: Any) -> int:
    cat = CATEGORY.get(raw)
    if cat is not None:
        return _CODE[cat]
    if raw in _SKIPPED_RAW:
        return _SKIP
    return _MTIA if raw == _MTIA_DEVICE else _CODE[OTHER]


def _floats(items: list[Any], field: str) -> tuple[np.ndarray, npt.NDArray[np.bool_]]:
    """An optional float field as an array (NaN where missing), and where it is missing (None)."""
    get = attrgetter(field)
    arr = np.fromiter(map(get, items), dtype=np.float64, count=len(items))
    none = np.zeros(len(items), dtype=bool)
    nan = np.flatnonzero(np.isnan(arr)).tolist()
    if nan:
        none[nan] = [get(items[j]) is None for j in nan]
    return arr, none


def _mtia_category(name: str | None) -> str | None:
    if name in _MTIA_BOOKKEEPING:
        return None
    return MEMCPY if name is not None and name.startswith("dma") else KERNEL


def _median(values: np.ndarray) -> float:
    """np.median's value, without its first call's import of numpy.ma (10-20 ms in a fresh process)."""
    mid = len(values) // 2
    if len(values) % 2:
        return float(np.partition(values, mid)[mid])
    part = np.partition(values, (mid - 1, mid))
    return float((part[mid - 1] + part[mid]) / 2)


def _outliers(ts: np.ndarray) -> np.ndarray | None:
    """Mask of starts that are not finite or lie absurdly far from the rest (a corrupt file); None if none."""
    if not len(ts):
        return None
    finite = np.isfinite(ts)
    ref = _median(ts[finite]) if finite.any() else 0.0
    with np.errstate(invalid="ignore"):
        bad = ~(finite & (np.abs(ts - ref) < _MAX_SPREAD_US))
    return bad if bad.any() else None
