"""Operators: every CPU op aggregated by name (or by name and input shapes) over a scope.

Per group: calls; host_self_us (Σ duration minus the operators, annotations and launch calls beneath,
looking through Python frames) and host_total_us (Σ duration); device_self_us (GPU time of the kernels,
memcpys and memsets the op owns: launched under it with no other operator in between, Python frames and
`record_function` annotations looked through, mlptui.trace.analysis.events.op_owner) and device_total_us (GPU
time of everything launched beneath it); tc_eligible (a matrix product or convolution,
mlptui.trace.analysis.kernels.tensor_cores) and tc_share (of the kernel time in device_self, the part in kernels
that used Tensor Cores). The operators are mlptui.trace.analysis.events.op_owner's nodes, as the profiler's own
tables count them: an op whose only child is an op of the same name is one call with it, and the
optimizer's and the DataLoader's annotations (operators in torch 1.9) are no rows. Over the whole trace
the device self times add up to the GPU time launched inside operators. Scope: one step (the ops that
start in it), or the whole trace (step=None). `ProfilerStep#N` itself (an op in old traces) is a step,
not an operator.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlptui.trace.analysis.events.op_owner import owners
from mlptui.trace.analysis.events.op_shapes import input_shapes
from mlptui.trace.analysis.events.tables import TraceColumns, tables, unique_ids
from mlptui.trace.analysis.kernels.tensor_cores import tc_eligible, uses_tensor_cores
from mlptui.trace.model import KERNEL, PYTHON, Trace


@dataclass
class OpGroup:
    name: str
    input_shapes: str | None
    calls: int = 0
    host_self_us: float = 0.0
    host_total_us: float = 0.0
    device_self_us: float = 0.0
    device_total_us: float = 0.0
    kernel_self_us: float = 0.0       # device_self_us without memcpys and memsets
    tc_us: float = 0.0
    ops: list[int] = field(default_factory=list)      # Op ids, in time order
    launched: dict[str, list[float]] = field(default_factory=dict)   # GPU work the ops launched: name -> [count, µs]

    @property
    def tc_eligible(self) -> bool:
        return tc_eligible(self.name)

    @property
    def tc_share(self) -> float | None:
        return self.tc_us / self.kernel_self_us if self.kernel_self_us > 0 else None


def operators(trace: Trace, step: int | None = None, by_shapes: bool = False,
              steps_only: bool = False) -> list[OpGroup]:
    """Groups, most device time first, then most host time (see the module docstring)."""
    t = tables(trace)
    own = owners(trace)
    ops = np.flatnonzero(_scope(t, own.is_operator, step, steps_only))
    key = t.op_name[ops]
    if by_shapes:
        shape_ids: dict[str, int] = {}
        shapes = [shape_ids.setdefault(input_shapes(trace, o), len(shape_ids)) for o in ops.tolist()]
        key = key * max(len(shape_ids), 1) + np.asarray(shapes, dtype=np.int64)
        shape_of = list(shape_ids)
    keys, first, group = unique_ids(key, return_index=True, return_inverse=True)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(keys))    # groups by first call, as a dict fills
    group = rank[group.reshape(-1)]
    n = len(keys)
    firsts = ops[np.sort(first)]
    rows = [OpGroup(t.strings[name], shape_of[int(k) % len(shape_of)] if by_shapes else None)
            for name, k in zip(t.op_name[firsts].tolist(), key[np.sort(first)].tolist(), strict=True)]

    def per_group(g: np.ndarray, weights: np.ndarray | None = None) -> list[Any]:
        counts = np.bincount(g, weights=weights, minlength=n)        # in id order, as += adds them
        sums: list[Any] = (counts if weights is None else counts.astype(np.float64)).tolist()
        return sums             # no rows: still floats

    calls, host_self, host_total, device_total = (
        per_group(group), per_group(group, own.host_self_us[ops]), per_group(group, t.op_dur[ops]),
        per_group(group, t.op_gpu_us[ops]))
    # Every op's own GPU work (op_owner: launched under it, Python frames and annotations looked
    # through), in op order and then time order.
    group_of = np.full(t.n_ops, -1, dtype=np.int64)
    group_of[ops] = group
    owner = own.gpu_owner
    work = np.flatnonzero(owner >= 0)
    work = work[group_of[owner[work]] >= 0]
    work = work[np.lexsort((work, owner[work]))]
    work_group = group_of[owner[work]]
    work_dur = t.gpu_dur[work]
    kernel = t.gpu_is((KERNEL,))[work]
    tc = t.names_where(uses_tensor_cores, t.gpu_name[work])[t.gpu_name[work]] & kernel
    device_self = per_group(work_group, work_dur)
    kernel_self = per_group(work_group[kernel], work_dur[kernel])
    tc_us = per_group(work_group[tc], work_dur[tc])
    by_group = np.argsort(group, kind="stable")
    members = np.split(ops[by_group], np.cumsum(calls)[:-1]) if n else []
    for k, row in enumerate(rows):
        row.calls, row.host_self_us, row.host_total_us = calls[k], host_self[k], host_total[k]
        row.device_total_us, row.device_self_us = device_total[k], device_self[k]
        row.kernel_self_us, row.tc_us = kernel_self[k], tc_us[k]
        row.ops = members[k].tolist()
    _fill_launched(rows, t, work_group, work)
    rows.sort(key=lambda r: (-r.device_total_us, -r.host_total_us, r.name))
    return rows


def _scope(t: TraceColumns, is_operator: np.ndarray, step: int | None, steps_only: bool) -> np.ndarray:
    """The operators (op_owner's nodes) of `step`, or of every step (`steps_only`), or of the whole trace,
    as a mask over the ops."""
    mask: np.ndarray = is_operator
    if step is not None:
        mask = mask & (t.op_step == step)
    elif steps_only:
        mask = mask & (t.op_step >= 0)
    return mask


def _fill_launched(rows: list[OpGroup], t: TraceColumns, work_group: np.ndarray, work: np.ndarray) -> None:
    """Each group's launched work by name, [count, µs], names in the order the group first launched them."""
    if not len(work):
        return
    pair = work_group * len(t.strings) + t.gpu_name[work]
    pairs, first, inverse = unique_ids(pair, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(pairs)).tolist()
    totals = np.bincount(inverse, weights=t.gpu_dur[work], minlength=len(pairs)).tolist()
    for k in np.argsort(first, kind="stable").tolist():
        g, name = divmod(int(pairs[k]), len(t.strings))
        rows[g].launched[t.strings[name]] = [counts[k], totals[k]]


def operators_in_steps(trace: Trace, by_shapes: bool = False, step: int | None = None) -> list[OpGroup]:
    """The groups over every step together (the whole trace when it has no steps), or over `step`."""
    if step is not None:
        return operators(trace, step, by_shapes=by_shapes)
    return operators(trace, by_shapes=by_shapes, steps_only=bool(trace.steps))


def call_sites(trace: Trace, op_ids: list[int], top: int = 20, depth: int = 4) -> list[tuple[str, int]]:
    """Where a group's ops were called from: up to `depth` enclosing ops, the nearest first, as one line
    each, most frequent first. Of the Python frames (traces with stacks) only the nearest one and the
    `nn.Module` ones are kept: the rest is the interpreter's plumbing."""
    sites: Counter[str] = Counter()
    step_ops = {s.op for s in trace.steps}
    for oid in op_ids:
        chain: list[str] = []
        python_seen = False
        p = trace.ops[oid].parent
        while p >= 0 and p not in step_ops and len(chain) < depth:
            up = trace.ops[p]
            if up.cat != PYTHON:
                chain.append(up.name)
            elif up.name.startswith("nn.Module: ") or not python_seen:
                chain.append(f"{up.name} (py)")
                python_seen = True
            p = up.parent
        sites[" ← ".join(chain) if chain else "(top level)"] += 1
    return sites.most_common(top)


def top_entries(table: dict[str, list[float]], top: int) -> list[tuple[str, int, float]]:
    """(name, count, µs) of a name -> [count, µs] table (a group's launched work, a module's ops or
    kernels), most time first."""
    rows = sorted(table.items(), key=lambda kv: (-kv[1][1], kv[0]))[:top]
    return [(name, int(n), us) for name, (n, us) in rows]
