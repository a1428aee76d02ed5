"""The nn.Module hierarchy, from the `nn.Module: Name_N` Python frames of traces recorded with
with_modules=True or with_stack=True.

A module call is one such frame; its path is the module frames enclosing it (outermost first) and
itself. Per path: calls, host time (Σ the frames' durations) and device time (GPU time of everything
launched beneath the frames). Frames of the same module instance under the same parents share a row.
Each row also lists what ran beneath its frames, nested modules included: its CPU ops by name (calls,
GPU time of the work each launched itself) and the GPU kernels launched beneath it by name (calls,
device time). Scope: the whole trace, or the frames of one step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlptui.trace.analysis.events.tables import tables
from mlptui.trace.model import CPU_OP, KERNEL, PYTHON, Trace

MODULE_PREFIX = "nn.Module: "


@dataclass
class ModuleRow:
    path: tuple[str, ...]
    calls: int = 0
    host_us: float = 0.0
    device_us: float = 0.0
    frames: list[int] = field(default_factory=list)     # Op ids of the module's frames
    ops: dict[str, list[float]] = field(default_factory=dict)       # CPU op name -> [calls, GPU µs]
    kernels: dict[str, list[float]] = field(default_factory=dict)   # kernel name -> [calls, device µs]

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def depth(self) -> int:
        return len(self.path) - 1


def is_module_frame(name: str) -> bool:
    return name.startswith(MODULE_PREFIX)


def module_tree(trace: Trace, step: int | None = None) -> list[ModuleRow] | None:
    """Rows in tree pre-order (a parent before its children, siblings by first call); None when the
    trace has no module frames."""
    t = tables(trace)
    frames = t.op_is((PYTHON,)) & t.names_where(is_module_frame)[t.op_name]
    if not (frames if step is None else frames & (t.op_step == step)).any():
        return None             # most traces: no module frames, and no need for the Op objects
    rows: dict[tuple[str, ...], ModuleRow] = {}
    path_of: dict[int, tuple[str, ...]] = {}
    ops = trace.ops
    for op in ops:             # ids are in per-thread pre-order: parents come first
        if op.cat != PYTHON or not is_module_frame(op.name):
            continue
        if step is not None and op.step != step:
            continue
        p = op.parent
        while p >= 0 and p not in path_of:
            p = ops[p].parent
        path = path_of.get(p, ()) + (op.name[len(MODULE_PREFIX):],)
        path_of[op.id] = path
        row = rows.get(path)
        if row is None:
            row = rows[path] = ModuleRow(path)
        row.calls += 1
        row.host_us += op.dur
        row.device_us += op.gpu_us
        row.frames.append(op.id)
    if not rows:
        return None
    _contents(trace, path_of, rows)
    children: dict[tuple[str, ...], list[ModuleRow]] = {}
    for row in rows.values():
        children.setdefault(row.path[:-1], []).append(row)
    out: list[ModuleRow] = []

    def walk(parent: tuple[str, ...]) -> None:
        for row in children.get(parent, []):
            out.append(row)
            walk(row.path)

    walk(())
    # paths whose parent row is missing (a scope cut in the middle) still show, at the end
    listed = {r.path for r in out}
    out += [r for r in rows.values() if r.path not in listed]
    return out


def _contents(trace: Trace, path_of: dict[int, tuple[str, ...]], rows: dict[tuple[str, ...], ModuleRow]) -> None:
    """Fill each row's ops and kernels in one pass over the ops (parents before children, so an op's
    innermost module frame is its own or its parent's) and one over the kernels (through their launch)."""
    ops, gpu = trace.ops, trace.gpu
    inner: list[tuple[str, ...] | None] = [None] * len(ops)
    for op in ops:
        path = path_of.get(op.id)
        if path is None and op.parent >= 0:
            path = inner[op.parent]
        inner[op.id] = path
        if path is None or op.cat != CPU_OP:
            continue
        gpu_us = sum(gpu[g].dur for g in op.gpu)
        for depth in range(1, len(path) + 1):
            row = rows.get(path[:depth])
            if row is not None:
                entry = row.ops.setdefault(op.name, [0, 0.0])
                entry[0] += 1
                entry[1] += gpu_us
    for g in gpu:
        if g.cat != KERNEL or g.launch < 0:
            continue
        path = inner[g.launch]
        if path is None:
            continue
        for depth in range(1, len(path) + 1):
            row = rows.get(path[:depth])
            if row is not None:
                entry = row.kernels.setdefault(g.name, [0, 0.0])
                entry[0] += 1
                entry[1] += g.dur

