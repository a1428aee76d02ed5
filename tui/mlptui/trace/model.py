"""The indexed, immutable view of one trace that every consumer (summary, diff, the app) reads.

Built once by `mlptui.trace.parse.index.build_trace` from the decoded events; nothing here parses JSON
except `Trace.args`, which decodes one event's args on demand. Times are µs relative to the
trace's first event (`Trace.origin_us` is that instant on the trace's own clock). The ops and GPU ops
are stored as columns (mlptui.trace.store); `Trace.ops` and `Trace.gpu` make objects from them on first
use, and `Trace.derive` keeps any other figure computed from the trace.

Ids are plain ints: `Op.id` indexes `Trace.ops`, `GpuOp.id` indexes `Trace.gpu`,
`Step.index` indexes `Trace.steps`; -1 means "none".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from mlptui.trace.store import TraceColumns

# Normalised categories (raw `cat` values vary by torch version and vendor).
CPU_OP = "cpu_op"                  # cpu_op, Operator
ANNOTATION = "user_annotation"     # record_function, ProfilerStep#N, compiled-region markers
PYTHON = "python_function"         # with_stack python frames
RUNTIME = "cuda_runtime"           # cudaLaunchKernel, cudaMemsetAsync, hipLaunchKernel, ... (cat cuda_runtime/Runtime)
DRIVER = "cuda_driver"             # cuLaunchKernel, cuLaunchKernelEx
KERNEL = "kernel"
MEMCPY = "gpu_memcpy"
MEMSET = "gpu_memset"
GPU_ANNOTATION = "gpu_user_annotation"
SYNC = "cuda_sync"
OTHER = "other"

LAUNCH_CATS = frozenset({RUNTIME, DRIVER})
GPU_CATS = frozenset({KERNEL, MEMCPY, MEMSET})


class _ReadOnlyEmpty(list[int]):
    """The one empty `children`/`gpu` list shared by every op that has none (most ops are leaves).
    A list to every reader; any attempt to change it fails loudly instead of touching all ops at once."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("an indexed trace is read-only")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]


NO_IDS: list[int] = _ReadOnlyEmpty()


@dataclass(slots=True)
class Op:
    """A CPU slice ('X' event on a host thread): an op, an annotation, or a runtime/driver call."""

    id: int
    name: str
    cat: str                # one of the normalised categories above
    pid: int
    tid: int
    ts: float               # µs from trace origin
    dur: float              # µs
    event: int              # index of the raw event, for Trace.args
    parent: int = -1
    children: list[int] = field(default_factory=list)
    depth: int = 0
    external_id: int | None = None
    correlation: int | None = None      # runtime/driver calls only
    step: int = -1                      # Step.index this op falls in
    self_us: float = 0.0                # dur minus children's dur
    gpu_us: float = 0.0                 # GPU time of work launched by this op or anything beneath it
    gpu: list[int] = field(default_factory=list)  # GpuOp ids launched by this op itself (runtime calls: its kernels)

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True)
class GpuOp:
    """Work on a device stream: a kernel, a memcpy or a memset."""

    id: int
    name: str
    cat: str                # KERNEL, MEMCPY or MEMSET
    device: int
    stream: int
    ts: float
    dur: float
    event: int
    correlation: int | None = None
    external_id: int | None = None
    launch: int = -1        # Op id of the runtime/driver call that launched it
    op: int = -1            # Op id of the innermost non-launch CPU op that was open at launch
    step: int = -1          # Step of the launching op (not of where the kernel ran)

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True)
class Step:
    """One `ProfilerStep#N` annotation."""

    index: int
    name: str
    ts: float
    dur: float
    op: int                 # Op id of the ProfilerStep annotation


@dataclass(slots=True)
class MemEvent:
    """A `[memory]` instant event (traces recorded with profile_memory=True); its args (Bytes, Total
    Allocated, Total Reserved, Device Type, Device Id, Addr) are read on demand through Trace.args."""

    ts: float               # µs from trace origin
    pid: int
    tid: int
    event: int


SYNC_TID_OFFSET = 1_000_000     # Kineto ≥ 2026-04 (041e7ce9) writes a stream's syncs on tid stream + this


@dataclass(slots=True)
class DeviceMark:
    """A device-side event that is neither GPU work nor a CPU slice: a synchronisation on a stream (`kind`
    "sync": `cudaStreamSynchronize`'s "Stream Sync", "Event Sync", ...; `lane` is its stream, never a stream
    of its own) or one hardware-counter sample (`kind` "counter": `name` is the metric, `lane` Kineto's tid;
    its value is read from the event's args on demand)."""

    kind: str
    name: str
    device: int             # the GPU (-1: not known)
    lane: int               # sync: the stream it waited on; counter: the tid Kineto wrote
    ts: float               # µs from trace origin
    dur: float              # µs (0 for a counter sample)
    event: int


@dataclass(slots=True)
class Thread:
    pid: int
    tid: int
    name: str
    roots: list[int] = field(default_factory=list)   # Op ids of top-level slices, by ts


@dataclass(slots=True)
class Stream:
    device: int
    stream: int
    name: str


T = TypeVar("T")


class _Derived:
    """Figures computed from one trace, once each, keyed by the function that computes them."""

    __slots__ = ("_values", "_locks", "_lock")

    def __init__(self) -> None:
        self._values: dict[Callable[..., Any], Any] = {}
        self._locks: dict[Callable[..., Any], threading.RLock] = {}
        self._lock = threading.Lock()

    def has(self, compute: Callable[..., Any]) -> bool:
        return compute in self._values

    def get(self, trace: Trace, compute: Callable[[Trace], T]) -> T:
        try:
            return cast(T, self._values[compute])
        except KeyError:
            pass
        # The app computes figures in worker threads: each figure once, and one figure being computed
        # never holds up a thread that asks for another (re-entrant: a figure may ask for others).
        with self._lock:
            lock = self._locks.setdefault(compute, threading.RLock())
        with lock:
            if compute not in self._values:
                self._values[compute] = compute(trace)
            return cast(T, self._values[compute])


@dataclass(frozen=True, eq=False)
class Trace:
    """Built by the loader and never changed after: every field is given when it is made."""

    source: str                                   # what the user named (path, host:path, hf://...)
    columns: TraceColumns                         # the ops and GPU ops (mlptui.trace.store)
    steps: list[Step]
    threads: list[Thread]
    streams: list[Stream]
    device: dict[str, Any] | None = None          # deviceProperties[0] (name, numSms, computeMajor, ...)
    devices: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)   # schemaVersion, cuda_runtime_version, trace_name, ...
    warnings: list[str] = field(default_factory=list)
    manifest: dict[str, Any] | None = None        # the runner's manifest entry for this trace, if found
    origin_us: float = 0.0
    format: str = "kineto"
    memory: list[MemEvent] = field(default_factory=list)   # `[memory]` events, in time order
    marks: list[DeviceMark] = field(default_factory=list)  # syncs and hardware-counter samples, in time order
    _args: Callable[[int], dict[str, Any]] | None = field(default=None, repr=False)
    _derived: _Derived = field(default_factory=_Derived, init=False, repr=False)

    def derive(self, compute: Callable[[Trace], T]) -> T:
        """compute(self), computed on the first call and kept: for figures several views ask for. `compute`
        is the key, so pass a module-level function, not a lambda made anew per call."""
        return self._derived.get(self, compute)

    def derived(self, compute: Callable[[Trace], Any]) -> bool:
        """Whether `compute` was derived already (asking for it now costs nothing)."""
        return self._derived.has(compute)

    @property
    def ops(self) -> list[Op]:
        """Every CPU slice as an Op (made from the columns on first use; treat as read-only)."""
        return self.derive(_make_ops)

    @property
    def gpu(self) -> list[GpuOp]:
        """Every GPU op as a GpuOp (made from the columns on first use; treat as read-only)."""
        return self.derive(_make_gpu_ops)

    @property
    def objects_made(self) -> bool:
        """Whether Op or GpuOp objects were made yet (a report that reads the columns alone makes none)."""
        return self._derived.has(_make_ops) or self._derived.has(_make_gpu_ops)

    @property
    def args_problem(self) -> str | None:
        """Why full args can no longer be read back (the file changed or vanished), once that happened."""
        problem = getattr(self._args, "problem", None)
        return problem if isinstance(problem, str) else None

    def args(self, event: int) -> dict[str, Any]:
        """The raw `args` of event number `event`, decoded now (never kept for the whole trace)."""
        return self._args(event) if self._args is not None else {}

    def op_args(self, op_id: int) -> dict[str, Any]:
        return self.args(int(self.columns.op_event[op_id]))

    def gpu_args(self, gpu_id: int) -> dict[str, Any]:
        return self.args(int(self.columns.gpu_event[gpu_id]))

    @property
    def device_name(self) -> str | None:
        return None if self.device is None else self.device.get("name")


def _make_ops(trace: Trace) -> list[Op]:
    """Every Op, from the columns (callers that make a whole trace's pause the collector: mlptui.gc_policy)."""
    c = trace.columns
    strings = c.strings
    name = list(map(strings.__getitem__, c.op_name.tolist()))
    cat = list(map(strings.__getitem__, c.op_cat.tolist()))
    children = _lists(*c.children())
    gpu = _lists(c.op_gpu_ptr, c.op_gpu_ids)
    ext = _optional(c.op_external_id, c.op_external_id_present)
    corr = _optional(c.op_correlation, c.op_correlation_present)
    return list(map(Op, range(c.n_ops), name, cat, c.op_pid.tolist(), c.op_tid.tolist(), c.op_ts.tolist(),
                    c.op_dur.tolist(), c.op_event.tolist(), c.op_parent.tolist(), children, c.op_depth.tolist(),
                    ext, corr, c.op_step.tolist(), c.op_self_us.tolist(), c.op_gpu_us.tolist(), gpu))


def _make_gpu_ops(trace: Trace) -> list[GpuOp]:
    """Every GpuOp, from the columns."""
    c = trace.columns
    strings = c.strings
    name = list(map(strings.__getitem__, c.gpu_name.tolist()))
    cat = list(map(strings.__getitem__, c.gpu_cat.tolist()))
    ext = _optional(c.gpu_external_id, c.gpu_external_id_present)
    corr = _optional(c.gpu_correlation, c.gpu_correlation_present)
    return list(map(GpuOp, range(c.n_gpu), name, cat, c.gpu_device.tolist(), c.gpu_stream.tolist(),
                    c.gpu_ts.tolist(), c.gpu_dur.tolist(), c.gpu_event.tolist(), corr, ext, c.gpu_launch.tolist(),
                    c.gpu_op.tolist(), c.gpu_step.tolist()))


def _lists(ptr: Any, ids: Any) -> list[list[int]]:
    """Id lists from offsets (numpy arrays): list k is ids[ptr[k]:ptr[k + 1]]; empty ones share NO_IDS."""
    p = ptr.tolist()
    flat = ids.tolist()
    return [flat[a:b] if b > a else NO_IDS for a, b in zip(p[:-1], p[1:], strict=True)]


def _optional(values: Any, present: Any) -> list[int | None]:
    out: list[int | None] = values.tolist()
    if present.all():
        return out
    return [v if p else None for v, p in zip(out, present.tolist(), strict=True)]
