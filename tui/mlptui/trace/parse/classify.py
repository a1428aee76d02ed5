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
from mlptui.trace.parse.decode import LinkArgs
from mlptui.trace.parse.launch import LaunchColumns, launch_columns

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
_X, _META, _FLOW, _INSTANT, _BEGIN_END, _COUNTER = 1, 2, 3, 4, 5, 6
_PHASE = {"X": _X, "M": _META, "s": _FLOW, "f": _FLOW, "i": _INSTANT, "I": _INSTANT, "B": _BEGIN_END,
          "E": _BEGIN_END, "C": _COUNTER}
# CUPTI PM-sampling counters ('C' events, one per metric; pytorch/kineto e8f56bd8): kept as device marks
HARDWARE_COUNTERS = "hardware_counters"
# A mark: ("sync" | "counter", name, pid, tid, ts, dur, event number) — device-side events that are neither
# GPU work nor CPU slices, kept so their stream or device can show them (mlptui.trace.model.DeviceMark).
Mark = tuple[str, Any, Any, Any, float, float, int]
_GPU_CODES = np.array([cat in GPU_CATS for cat in CATEGORIES])
# by raw code (the last two rows: _MTIA, _SKIP): a kind whose complete events may be GPU work
_GPU_CODES_OR_MTIA = np.r_[_GPU_CODES, True, False]
_DEVICE_SIDE_CODES = np.array([cat in _DEVICE_SIDE for cat in CATEGORIES])


Kind = tuple[Any, Any, Any, Any, Any]     # an event's (ph, cat, name, pid, tid) as written
_KIND = attrgetter("ph", "cat", "name", "pid", "tid")
_NO_LINK = LinkArgs()


@dataclass
class Links:
    """Link ids of some events (int64 with 0 where missing, and a present mask), the args they were read
    from where kept, and per event how many ids were too wide for 64 bits (read as missing)."""

    ext: np.ndarray
    ext_present: np.ndarray
    corr: np.ndarray
    corr_present: np.ndarray
    wide: np.ndarray


@dataclass
class Buckets:
    """Event indices by what they are (CPU and GPU ones with their normalised category code, start and duration in
    µs; a missing duration reads as 0), and what the index reads of the other events."""

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
    cpu_links: Links         # the CPU / GPU events' link ids, in the order of cpu_ev / gpu_ev
    gpu_links: Links
    gpu_launch: LaunchColumns   # each GPU event's launch keys, in the order of gpu_ev
    meta: list[Any]          # the events of meta_ev themselves
    flows: Flows             # the events of flow_ev
    mem: list[tuple[Any, Any, float]]               # the events of mem_ev as (pid, tid, ts)
    n_events: int
    marks: list[Mark]        # synchronisation events and hardware-counter samples
    recording_span: tuple[float, float] | None = None   # the profiler's own span(s), as written (µs)
    outliers: int = 0        # slices skipped for a timestamp far outside the trace
    bad_durations: int = 0   # slices whose duration was negative or impossible (read as zero-length)


class Codes(dict[Any, int]):
    """Numbers values in the order they are first seen."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


def classify(events: list[Any], warnings: list[str]) -> Buckets:
    """The buckets of a whole list of decoded events (see Classifier)."""
    c = Classifier()
    c.add(events)
    return c.finish(warnings)


class Classifier:
    """Reads decoded events batch by batch (the load decodes a big trace in pieces, so that the decoded
    events of only one piece are alive at a time) and keeps, as columns, what the index needs of them.

    One pass numbers each event's kind: a trace repeats a few hundred (phase, category, name, pid, tid)
    combinations, so what depends on them is decided once per kind. One pass each then reads the
    complete events' start, duration and link ids; the decisions are made on numpy arrays."""

    def __init__(self) -> None:
        self.kinds = Codes()
        self.n_events = 0
        self._x: list[np.ndarray] = []          # complete events: event numbers, kinds, ts, dur, links
        self._xkind: list[np.ndarray] = []
        self._ts: list[np.ndarray] = []
        self._dur: list[np.ndarray] = []
        self._ts_none: list[np.ndarray] = []
        self._dur_none: list[np.ndarray] = []
        self._links: list[Links] = []
        self._gpu_launch: list[LaunchColumns] = []   # of the complete events of a GPU kind, in event order
        self._meta_ev: list[int] = []
        self._flow_ev: list[np.ndarray] = []
        self._mem_ev: list[int] = []
        self._meta: list[Any] = []
        self._flows: list[Flows] = []
        self._mem: list[tuple[Any, Any, float]] = []
        self._counters: list[Mark] = []
        self._begin_end = 0
        self._kind_phase = np.zeros(0, dtype=np.int64)
        self._kind_code = np.zeros(0, dtype=np.int64)

    def add(self, events: list[Any]) -> None:
        """The next events, numbered on from the last batch's."""
        base = self.n_events
        self.n_events += len(events)
        kind = np.fromiter(map(self.kinds.__getitem__, map(_KIND, events)), dtype=np.int64, count=len(events))
        self._grow_kinds()
        phase = self._kind_phase[kind]
        is_x = phase == _X
        x = np.flatnonzero(is_x)
        xev = list(compress(events, is_x.tolist()))
        ts, ts_none = _floats(xev, "ts")
        dur, dur_none = _floats(xev, "dur")
        self._x.append(x + base)
        self._xkind.append(kind[x])
        self._ts.append(ts)
        self._dur.append(dur)
        self._ts_none.append(ts_none)
        self._dur_none.append(dur_none)
        args = list(map(attrgetter("args"), xev))
        if None in args:           # events without args (rare): read as empty ones
            args = [_NO_LINK if a is None else a for a in args]
        self._links.append(_link_ids(args))
        gpu = np.flatnonzero(_GPU_CODES_OR_MTIA[self._kind_code[kind[x]]]).tolist()
        self._gpu_launch.append(launch_columns(list(map(args.__getitem__, gpu))))
        del args, xev
        at = np.flatnonzero(phase == _META).tolist()
        self._meta_ev.extend(i + base for i in at)
        self._meta.extend(map(events.__getitem__, at))
        at = np.flatnonzero(phase == _FLOW)
        self._flow_ev.append(at + base)
        self._flows.append(_flows(list(map(events.__getitem__, at.tolist())), kind[at]))
        for i in np.flatnonzero(phase == _INSTANT).tolist():
            e = events[i]
            if e.name == MEMORY_EVENT and e.ts is not None:
                self._mem_ev.append(i + base)
                self._mem.append((e.pid, e.tid, e.ts))
        for i in np.flatnonzero(phase == _COUNTER).tolist():
            e = events[i]
            if e.cat == HARDWARE_COUNTERS and isinstance(e.ts, (int, float)):
                self._counters.append(("counter", e.name, e.pid, e.tid, float(e.ts), 0.0, i + base))
        self._begin_end += int((phase == _BEGIN_END).sum())

    def absorb(self, part: Classifier) -> None:
        """Take in what `part` read of the events that follow this one's (a range of the file classified
        apart, its events and kinds numbered from 0): the result is as if they had been added here."""
        base = self.n_events
        remap = np.fromiter(map(self.kinds.__getitem__, part.kinds), dtype=np.int64, count=len(part.kinds))
        self._grow_kinds()
        self.n_events += part.n_events
        self._x += [x + base for x in part._x]
        self._xkind += [remap[k] for k in part._xkind]
        self._ts += part._ts
        self._dur += part._dur
        self._ts_none += part._ts_none
        self._dur_none += part._dur_none
        self._links += part._links
        self._gpu_launch += part._gpu_launch
        self._meta_ev += [i + base for i in part._meta_ev]
        self._meta += part._meta
        self._flow_ev += [at + base for at in part._flow_ev]
        self._flows += [Flows(remap[f.kind], f.ts, f.ts_none, f.ids) for f in part._flows]
        self._mem_ev += [i + base for i in part._mem_ev]
        self._mem += part._mem
        self._counters += [(*m[:6], m[6] + base) for m in part._counters]
        self._begin_end += part._begin_end

    def _grow_kinds(self) -> None:
        table = list(self.kinds)
        new = table[len(self._kind_phase):]
        if new:
            self._kind_phase = np.r_[self._kind_phase, np.array([_PHASE.get(k[0], 0) for k in new], dtype=np.int64)]
            self._kind_code = np.r_[self._kind_code, np.array([_raw_code(k[1]) for k in new], dtype=np.int64)]

    def finish(self, warnings: list[str]) -> Buckets:
        """The buckets of every event added; `warnings` gets what was skipped and why."""
        table = list(self.kinds)
        x = _cat(self._x, np.int64)
        xkind = _cat(self._xkind, np.int64)
        ts, dur = _cat(self._ts, np.float64), _cat(self._dur, np.float64)
        ts_none, dur_none = _cat(self._ts_none, np.bool_), _cat(self._dur_none, np.bool_)
        links = Links(*(_cat([getattr(part, f) for part in self._links], dtype)
                        for f, dtype in (("ext", np.int64), ("ext_present", np.bool_), ("corr", np.int64),
                                         ("corr_present", np.bool_), ("wide", np.int8))))
        code = self._kind_code[xkind] if len(xkind) else np.zeros(0, dtype=np.int64)
        placed = ~ts_none
        no_ts = int(ts_none.sum())
        no_dur = int((dur_none & placed).sum())
        dur[dur_none] = 0.0
        code[~placed] = _SKIP
        device_side = 0
        mtia = np.flatnonzero(code == _MTIA)
        if len(mtia):
            mtia_cats = [_mtia_category(table[k][2]) for k in xkind[mtia].tolist()]
            code[mtia] = [_SKIP if k is None else _CODE[k] for k in mtia_cats]
            device_side += mtia_cats.count(None)
        # the GPU events' args were kept for every event of a GPU kind (MTIA ones included): those still GPU
        gpu_kind_rows = _GPU_CODES_OR_MTIA[self._kind_code[xkind]] if len(xkind) else np.zeros(0, dtype=bool)
        known = code >= 0
        cat = np.where(known, code, 0)
        gpu = known & _GPU_CODES[cat]
        side = known & _DEVICE_SIDE_CODES[cat]
        cpu = known & ~gpu & ~side
        device_side += int(side.sum())
        if no_ts:
            warnings.append(f"skipped {no_ts} complete event(s) without a 'ts'")
        if no_dur:
            warnings.append(f"{no_dur} complete event(s) without a 'dur' read as zero-length")
        if self._begin_end:
            warnings.append(f"ignored {self._begin_end} begin/end ('B'/'E') event(s); only complete events are indexed")
        if not self.n_events:
            warnings.append("the trace has no events")

        keep_cpu, keep_gpu = cpu, gpu
        bad = _outliers(np.concatenate((ts[cpu], ts[gpu])))
        if bad is not None:
            warnings.append(f"skipped {int(bad.sum())} slice(s) with a timestamp far outside the trace")
            keep_cpu = cpu.copy()
            keep_gpu = gpu.copy()
            keep_cpu[np.flatnonzero(cpu)[bad[:int(cpu.sum())]]] = False
            keep_gpu[np.flatnonzero(gpu)[bad[int(cpu.sum()):]]] = False
        launch = _launch_rows(self._gpu_launch, keep_gpu[gpu_kind_rows])
        syncs = np.flatnonzero(side & (cat == _CODE[SYNC])).tolist()
        marks: list[Mark] = [("sync", table[k][2], table[k][3], table[k][4], t, d, ev) for k, t, d, ev in zip(
            xkind[syncs].tolist(), ts[syncs].tolist(), dur[syncs].tolist(), x[syncs].tolist(), strict=True)]
        return Buckets(x[keep_cpu], cat[keep_cpu], ts[keep_cpu], dur[keep_cpu],
                       x[keep_gpu], cat[keep_gpu], ts[keep_gpu], dur[keep_gpu],
                       self._meta_ev, _cat(self._flow_ev, np.int64).tolist(), device_side, self._mem_ev, table,
                       xkind[keep_cpu], xkind[keep_gpu], _rows(links, keep_cpu), _rows(links, keep_gpu), launch,
                       self._meta, _join_flows(self._flows), self._mem, self.n_events, marks + self._counters,
                       _recording_span(table, xkind, ts, dur, placed), 0 if bad is None else int(bad.sum()))


_FLOW_CATS = frozenset({"ac2g", "async_gpu", "async_cpu_to_gpu", ""})


@dataclass
class Flows:
    """Flow events ('s', 'f'), in event order: each one's kind (whose phase, category, pid and tid say which
    flow it is and where it starts or ends), start as written (NaN when missing) and id as written (int64
    when every id is a 64-bit int, else a list of the values). Read into launch links only when some GPU
    work lacks a correlation id (mlptui.trace.parse.index), so most loads never look at them."""

    kind: np.ndarray
    ts: np.ndarray
    ts_none: np.ndarray
    ids: Any


def _flows(flows: list[Any], kind: np.ndarray) -> Flows:
    ts, ts_none = _floats(flows, "ts")
    try:
        ids: Any = np.fromiter(map(_ID, flows), dtype=np.int64, count=len(flows))
    except (TypeError, ValueError, OverflowError):      # a string, a missing or a wide id: kept as written
        ids = list(map(_ID, flows))
    return Flows(kind, ts, ts_none, ids)


def _join_flows(parts: list[Flows]) -> Flows:
    if not parts:
        return Flows(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64))
    if all(isinstance(p.ids, np.ndarray) for p in parts):
        ids: Any = np.concatenate([p.ids for p in parts])
    else:
        ids = [v for p in parts for v in (p.ids.tolist() if isinstance(p.ids, np.ndarray) else p.ids)]
    kind, ts, ts_none = (np.concatenate([getattr(p, f) for p in parts]) for f in ("kind", "ts", "ts_none"))
    return Flows(kind, ts, ts_none, ids)


_ID = attrgetter("id")
_FLOW_CATS = frozenset({"ac2g", "async_gpu", "async_cpu_to_gpu", ""})


def flow_number(cat: Any, fid: Any) -> int | None:
    """The id of a launch flow (`ac2g`, written as an int or a numeric string); None for other flows and
    ids that are not numbers or are wider than 64 bits (as wide link ids: not linked by)."""
    if cat not in _FLOW_CATS:
        return None
    if isinstance(fid, str):
        try:
            fid = int(fid, 0)
        except ValueError:
            return None
    if fid is None or not _INT64_MIN <= fid <= _INT64_MAX:
        return None
    return int(fid)


def flow_id(e: Any) -> int | None:
    """flow_number of a decoded flow event."""
    return flow_number(e.cat, e.id)


def _launch_rows(parts: list[LaunchColumns], keep: np.ndarray) -> LaunchColumns:
    names = ("grid_blocks", "threads", "registers", "shared_memory", "blocks_per_sm", "occupancy_pct")
    if not parts:
        return launch_columns([])
    return LaunchColumns(*(np.concatenate([getattr(p, n) for p in parts])[keep] for n in names))


def _cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _rows(links: Links, keep: np.ndarray) -> Links:
    return Links(links.ext[keep], links.ext_present[keep], links.corr[keep], links.corr_present[keep],
                 links.wide[keep])


def _link_ids(args: list[Any]) -> Links:
    """The External id (old traces spell it in lower case) and correlation of each of `args`."""
    wide = np.zeros(len(args), dtype=np.int8)
    ext, ext_present = optional_ints(args, "external_id", wide)
    corr, corr_present = optional_ints(args, "correlation", wide)
    missing = np.flatnonzero(~ext_present)
    if len(missing):
        lc_wide = np.zeros(len(missing), dtype=np.int8)
        lc, lc_present = optional_ints(list(map(args.__getitem__, missing.tolist())), "external_id_lc", lc_wide)
        ext[missing] = lc
        ext_present[missing] = lc_present
        wide[missing] += lc_wide
    return Links(ext, ext_present, corr, corr_present, wide)


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_EXACT_FLOAT = float(1 << 53)     # every int below this in size is exact as a float64


def optional_ints(items: list[Any], field: str, wide: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The optional int `field` of `items` as (int64 values with 0 where missing, present mask). With
    values missing, read in one pass as floats (a missing value is NaN), then the few values too large for
    a float to hold exactly are read again. A value beyond int64 reads as missing (as the tolerant
    decoder reads it) and is counted in `wide` (one count per item)."""
    get = attrgetter(field)
    try:
        return np.fromiter(map(get, items), dtype=np.int64, count=len(items)), np.ones(len(items), dtype=bool)
    except (TypeError, OverflowError):     # a missing value (None), or one beyond int64
        pass
    try:
        as_float = np.fromiter(map(get, items), dtype=np.float64, count=len(items))
    except OverflowError:                  # beyond any float
        as_float = np.fromiter((np.nan if v is None else float(v) for v in map(get, items)), dtype=np.float64,
                               count=len(items))
    present = ~np.isnan(as_float)
    inexact = np.flatnonzero(present & (np.abs(as_float) >= _EXACT_FLOAT))
    as_float[~present] = 0.0
    as_float[inexact] = 0.0
    values = as_float.astype(np.int64)
    for j in inexact.tolist():
        v = get(items[j])
        if _INT64_MIN <= v <= _INT64_MAX:
            values[j] = v
        else:
            present[j] = False
            wide[j] += 1
    return values, present


def by_first_use(kind: np.ndarray, n_kinds: int) -> list[int]:
    """The kinds that occur in `kind` (per-event indices into the kinds), in the order first seen."""
    first = np.full(n_kinds, len(kind), dtype=np.int64)
    np.minimum.at(first, kind, np.arange(len(kind), dtype=np.int64))
    used = np.flatnonzero(first < len(kind))
    order: list[int] = used[np.argsort(first[used])].tolist()
    return order


def _recording_span(table: list[Kind], xkind: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                    placed: np.ndarray) -> tuple[float, float] | None:
    """From the start of the profiler's own spans (category `Trace`) to the end of the last one, or None."""
    ids = [k for k, kind in enumerate(table) if kind[1] in _SKIPPED_RAW and kind[0] == "X"]
    if not ids or not len(xkind):
        return None
    rows = np.flatnonzero(np.isin(xkind, ids) & placed & np.isfinite(ts) & np.isfinite(dur))
    if not len(rows):
        return None
    return float(ts[rows].min()), float((ts[rows] + dur[rows]).max())


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
    """np.median's value, without its first call's import of numpy.ma."""
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
