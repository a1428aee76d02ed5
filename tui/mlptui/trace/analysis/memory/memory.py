"""Memory, from the `[memory]` instant events of traces recorded with profile_memory=True.

Each event is one allocation (Bytes > 0) or free (Bytes < 0) on a device (`Device Type` 0 = CPU,
1 = CUDA, 6 = HIP, ...: DEVICE_TYPES; `Device Id`), at address `Addr`, with the allocator's totals after it (`Total Allocated`,
`Total Reserved`; traces from torch before 1.10 lack them, and then the curve is the running sum of
Bytes from the first event, i.e. relative to what was allocated when recording began).

- curve per device: (time, allocated, reserved) after each event.
- peak: the largest allocated value, when it was reached, and the op that made that allocation.
- an allocation belongs to the innermost CPU op open on its thread at its time (no op: "(no op)"); a
  free belongs to the op that allocated the block (matched by device and `Addr`, as the TensorBoard
  plugin pairs them), whenever and wherever it is freed; a free whose allocation is not in the trace
  (made before recording began) to "(allocated before the trace)". Traces before torch 1.10 write no
  `Addr`: their frees are counted under "(frees without Addr)", and every row's net is unknown
  (`net_known` False, "n/a" in the views) rather than the bytes allocated.
- per op name: allocations, frees (of its blocks), bytes allocated, net bytes = bytes allocated minus
  bytes of its blocks freed in the scope (self: its own blocks; with children: also the blocks of every
  op beneath it). Over the rows, net bytes add up to the change of allocated memory over the scope, and
  no row's net is above what it allocated and did not free.
- unfreed: allocations whose address is not freed later in the trace, summed per op name.

Scope, as every profiler view's: one step's window (mlptui.trace.analysis.steps.breakdown.step_windows), or
every step: the span from the first step's window start to the last one's end (the whole trace when it
has no steps). The curves, peaks and per-op rows hold the scope's events; an allocation of the scope is
unfreed when no later event of the trace frees it. Every device with events in the scope has its curve
and peak. Each event's args are read once per trace (`Trace.derive`), whatever the scopes asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mlptui.trace.analysis.steps.breakdown import scope_window_us, step_windows
from mlptui.trace.model import ANNOTATION, CPU_OP, Trace
from mlptui.trace.parse.limits import finite_number

NO_OP = "(no op)"
ALLOCATED_BEFORE = "(allocated before the trace)"
NO_ADDR = "(frees without Addr)"
_BEFORE, _NO_ADDR = -2, -3      # a free whose allocation the trace does not hold; one without an Addr
_UNOWNED = {-1: NO_OP, _BEFORE: ALLOCATED_BEFORE, _NO_ADDR: NO_ADDR}


@dataclass
class DeviceMemory:
    kind: str                       # "cuda", "hip", "cpu", ... (DEVICE_TYPES; else "device type N")
    id: int
    ts: list[float] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    reserved: list[int | None] = field(default_factory=list)
    peak_allocated: int = 0
    peak_ts: float | None = None
    peak_op: str | None = None
    totals_recorded: bool = True    # False: allocated is the running sum of Bytes

    @property
    def label(self) -> str:
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.id}"

    @property
    def peak_reserved(self) -> int | None:
        values = [r for r in self.reserved if r is not None]
        return max(values) if values else None


@dataclass
class OpMemory:
    name: str
    allocs: int = 0
    frees: int = 0
    bytes_allocated: int = 0
    net_bytes: int = 0
    net_bytes_with_children: int = 0
    net_known: bool = True          # False: some frees in the scope cannot be matched to their block (no Addr)


@dataclass
class MemoryReport:
    devices: list[DeviceMemory]
    ops: list[OpMemory]
    unfreed: list[tuple[str, int]]          # (op name, bytes), most bytes first
    events: int


class _Owner:
    """The innermost CPU op open on a thread at each time, for times asked in increasing order: one sweep
    per thread over its ops in start order with a stack of the open ones (robust to partial overlaps)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.step_ops = {s.op for s in trace.steps}
        by_thread: dict[tuple[int, int], list[int]] = {}
        for op in trace.ops:
            if op.cat == CPU_OP or (op.cat == ANNOTATION and op.id not in self.step_ops):
                by_thread.setdefault((op.pid, op.tid), []).append(op.id)
        for ids in by_thread.values():
            ids.sort(key=lambda i: (trace.ops[i].ts, trace.ops[i].depth))
        self.pending = by_thread
        self.next = dict.fromkeys(by_thread, 0)
        self.open: dict[tuple[int, int], list[int]] = {k: [] for k in by_thread}

    def at(self, pid: int, tid: int, ts: float) -> int:
        key = (pid, tid)
        ids = self.pending.get(key)
        if ids is None:
            return -1
        ops = self.trace.ops
        stack = self.open[key]
        k = self.next[key]
        while k < len(ids) and ops[ids[k]].ts <= ts:
            stack.append(ids[k])
            k += 1
        self.next[key] = k
        while stack and ops[stack[-1]].end < ts:
            stack.pop()
        return stack[-1] if stack else -1


def _int(value: Any) -> int | None:
    """A memory event's number as an int; None for anything else (a bool, NaN, infinity, a string)."""
    number = finite_number(value, lo=-float(1 << 62))
    return None if number is None else int(number)


def memory_span_us(trace: Trace, step: int | None) -> tuple[float, float]:
    """The scope's span in µs: the step's window, the steps' span, or everything (no steps)."""
    window = scope_window_us(trace, step)
    if window is not None:
        return window
    if not trace.steps:
        return (-math.inf, math.inf)
    windows = step_windows(trace)
    return (min(w.start_ns for w in windows) / 1000, max(w.end_ns for w in windows) / 1000)


# Per event: Bytes, Total Allocated, Total Reserved, device kind, device id, Addr (None where unreadable).
_Facts = tuple[int | None, int | None, int | None, str, int, int | None]


def _facts(trace: Trace) -> list[_Facts]:
    """Every memory event's figures, read from its args on the first call and kept."""
    return trace.derive(_read_facts)


def _read_facts(trace: Trace) -> list[_Facts]:
    out: list[_Facts] = []
    for m in trace.memory:
        args = trace.args(m.event)
        out.append((_int(args.get("Bytes")), _int(args.get("Total Allocated")), _int(args.get("Total Reserved")),
                    *_device_of(args), _int(args.get("Addr"))))
    return out


def memory_report(trace: Trace, step: int | None = None) -> MemoryReport | None:
    """None when the scope has no `[memory]` events (see the module docstring)."""
    if not trace.memory:        # most traces: no need for the scope's span
        return None
    start, end = memory_span_us(trace, step)
    if not any(start <= m.ts <= end for m in trace.memory):
        return None
    owner = _Owner(trace)
    devices: dict[tuple[str, int], DeviceMemory] = {}
    per_op: dict[str, OpMemory] = {}
    live: dict[tuple[str, int, int], tuple[str, int]] = {}
    allocated_by: dict[tuple[str, int, int], int] = {}      # block -> the op that allocated it (-1: none open)
    unmatched_frees = 0
    running: dict[tuple[str, int], int] = {}    # Σ Bytes since recording began, for traces without totals
    ops = trace.ops
    events = 0
    for m, (nbytes, total, reserved, kind, dev_id, addr) in zip(trace.memory, _facts(trace), strict=True):
        block = None if addr is None else (kind, dev_id, addr)
        if m.ts > end:          # after the scope: only frees of what it allocated matter
            if nbytes is not None and nbytes < 0 and block is not None:
                live.pop(block, None)
            continue
        if nbytes is None:
            events += m.ts >= start
            continue
        if total is None:       # the running sum counts from recording start, before the scope too
            total = running[(kind, dev_id)] = running.get((kind, dev_id), 0) + nbytes
        # An allocation belongs to the op open on its thread; a free to the op that allocated the block.
        if nbytes > 0:
            op_id = owner.at(m.pid, m.tid, m.ts)
            if block is not None:
                allocated_by[block] = op_id
        else:
            op_id = _NO_ADDR if block is None else allocated_by.pop(block, _BEFORE)
            if nbytes == 0:
                op_id = owner.at(m.pid, m.tid, m.ts)
        if m.ts < start:        # before the scope: only who allocated what matters
            continue
        events += 1
        dev = devices.get((kind, dev_id))
        if dev is None:
            dev = devices[(kind, dev_id)] = DeviceMemory(kind, dev_id)
        if (kind, dev_id) in running:
            dev.totals_recorded = False
        name = ops[op_id].name if op_id >= 0 else _UNOWNED[op_id]
        unmatched_frees += op_id == _NO_ADDR
        dev.ts.append(m.ts)
        dev.allocated.append(total)
        dev.reserved.append(reserved)
        if dev.peak_ts is None or total > dev.peak_allocated:
            dev.peak_allocated, dev.peak_ts, dev.peak_op = total, m.ts, name
        row = per_op.get(name)
        if row is None:
            row = per_op[name] = OpMemory(name)
        if nbytes > 0:
            row.allocs += 1
            row.bytes_allocated += nbytes
        elif nbytes < 0:
            row.frees += 1
        row.net_bytes += nbytes
        seen = set()
        p = op_id
        while p >= 0:
            up = ops[p].name
            if up not in seen and (ops[p].cat == CPU_OP or ops[p].cat == ANNOTATION) and p not in owner.step_ops:
                seen.add(up)
                per_op.setdefault(up, OpMemory(up)).net_bytes_with_children += nbytes
            p = ops[p].parent
        if op_id < 0:           # (no op) and frees of blocks allocated before the trace
            row.net_bytes_with_children += nbytes
        if addr is not None:
            if nbytes > 0:
                live[(kind, dev_id, addr)] = (name, nbytes)
            elif nbytes < 0:
                live.pop((kind, dev_id, addr), None)
    unfreed: dict[str, int] = {}
    for name, nbytes in live.values():
        unfreed[name] = unfreed.get(name, 0) + nbytes
    # Accelerators first (the view opens on the first): the CPU's curve is rarely the question.
    order = sorted(devices.values(), key=lambda d: (d.kind == "cpu", d.kind != "cuda", d.kind, d.id))
    op_rows = sorted((o for o in per_op.values() if o.allocs or o.frees or o.net_bytes_with_children),
                     key=lambda o: (-o.bytes_allocated, -abs(o.net_bytes_with_children), o.name))
    if unmatched_frees:
        for row in op_rows:
            row.net_known = False
    return MemoryReport(order, op_rows, sorted(unfreed.items(), key=lambda kv: (-kv[1], kv[0])), events)


# c10::DeviceType codes the profiler writes as `Device Type` (c10/core/DeviceType.h): HIP is 6 (ROCm
# builds that report their own type), MTIA 19.
DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 9: "xla", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia",
                20: "privateuse1"}


def _device_of(args: dict[str, Any]) -> tuple[str, int]:
    dtype = _int(args.get("Device Type"))
    kind = DEVICE_TYPES.get(dtype if dtype is not None else -1, f"device type {dtype}")
    dev_id = _int(args.get("Device Id"))
    return kind, -1 if dev_id is None else dev_id
