"""Operators: every CPU op aggregated by name (or by name and input shapes) over a scope.

Per group: calls; host_self_us (Σ duration minus children) and host_total_us (Σ duration); device_self_us
(GPU time of the kernels, memcpys and memsets the op launched itself, i.e. it was the innermost op at the
launch) and device_total_us (the same for everything beneath it); tc_eligible (a matrix product or
convolution, mlptui.trace.analysis.tensor_cores) and tc_share (of the kernel time in device_self, the part
in kernels that used Tensor Cores). An op nested in an op of the same name counts in both, as the profiler's own tables do.
Scope: one step (the ops that start in it), or the whole trace (step=None). `ProfilerStep#N` itself
(an op in old traces) is a step, not an operator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mlptui.trace.analysis.op_shapes import input_shapes
from mlptui.trace.analysis.tensor_cores import tc_eligible, uses_tensor_cores
from mlptui.trace.model import CPU_OP, KERNEL, PYTHON, Op, Trace
from mlptui.trace.parse.index import STEP_PREFIX


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

    def to_dict(self) -> dict[str, Any]:
        share = self.tc_share
        return {"name": self.name, "input_shapes": self.input_shapes, "calls": self.calls,
                "host_self_us": round(self.host_self_us, 3), "host_total_us": round(self.host_total_us, 3),
                "device_self_us": round(self.device_self_us, 3), "device_total_us": round(self.device_total_us, 3),
                "tc_eligible": self.tc_eligible, "tc_share": None if share is None else round(share, 4)}


def scope_ops(trace: Trace, step: int | None, steps_only: bool = False) -> Iterator[Op]:
    for op in trace.ops:
        if op.cat != CPU_OP or op.name.startswith(STEP_PREFIX):
            continue
        if (step is None and (not steps_only or op.step >= 0)) or op.step == step:
            yield op


def operators(trace: Trace, step: int | None = None, by_shapes: bool = False,
              steps_only: bool = False) -> list[OpGroup]:
    """Groups, most device time first, then most host time (see the module docstring)."""
    groups: dict[tuple[str, str | None], OpGroup] = {}
    gpu = trace.gpu
    for op in scope_ops(trace, step, steps_only):
        key = (op.name, input_shapes(trace, op.id) if by_shapes else None)
        g = groups.get(key)
        if g is None:
            g = groups[key] = OpGroup(*key)
        g.calls += 1
        g.host_self_us += op.self_us
        g.host_total_us += op.dur
        g.device_total_us += op.gpu_us
        for k in op.gpu:
            work = gpu[k]
            g.device_self_us += work.dur
            entry = g.launched.get(work.name)
            if entry is None:
                entry = g.launched[work.name] = [0, 0.0]
            entry[0] += 1
            entry[1] += work.dur
            if work.cat == KERNEL:
                g.kernel_self_us += work.dur
                if uses_tensor_cores(work.name):
                    g.tc_us += work.dur
        g.ops.append(op.id)
    rows = list(groups.values())
    rows.sort(key=lambda r: (-r.device_total_us, -r.host_total_us, r.name))
    return rows


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
