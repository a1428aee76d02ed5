"""Kernel time of matrix products and convolutions off the matrix units, split by what can be done about it.

Over the Tensor-Core-eligible operators whose own kernels run mostly off Tensor Cores (tc_share < 0.5),
each matrix kernel (GEMM, convolution or attention by its name; copies, transposes and pointwise helpers
could not use the matrix units in any dtype) among their own kernels (mlptui.trace.analysis.events.op_owner)
is one of:
- on the matrix units: its name shows a Tensor-Core path (mlptui.trace.analysis.kernels.tensor_cores);
- unknown: a Triton kernel, whose name cannot say whether it used `tl.dot` on the matrix units (a
  Triton attention kernel does), so it is neither counted on nor off;
- already 16-bit: its op's own inputs are 16-bit floats (`Input type` c10::BFloat16 / c10::Half), so
  autocast has nothing to change;
- an upcast: its op's inputs are not 16-bit but it runs inside an op whose inputs are, as SDPA's math
  backend computes its GEMMs in f32 from bf16 inputs — autocast cannot change those either; the
  attention findings name the fix (a fused backend);
- missed: the rest, which TF32 or autocast would move onto the matrix units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.analysis.events.op_owner import owners
from mlptui.trace.analysis.events.tables import tables
from mlptui.trace.analysis.kernels.kernel_inputs import SIXTEEN_BIT
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
from mlptui.trace.analysis.operators.operators import OpGroup
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.names.kernel import decode_kernel

_UP = 16           # ancestors looked at for a 16-bit op around an f32 matrix product
_MATRIX = frozenset({"gemm", "attention"})     # decoded families of matrix kernels (convolutions are gemm)


@dataclass
class TcMiss:
    missed_us: float = 0.0
    sixteen_bit_us: float = 0.0
    upcast_us: float = 0.0
    unknown_us: float = 0.0
    ops: list[str] = field(default_factory=list)          # groups with missed time, most first
    upcast_ops: list[str] = field(default_factory=list)   # the 16-bit ops around the upcasts


def _sixteen_bit(trace: Trace, op: int) -> bool:
    types = trace.op_args(op).get("Input type")
    return isinstance(types, list) and any(isinstance(x, str) and x in SIXTEEN_BIT for x in types)


def _inputs(trace: Trace, op: int, parents: np.ndarray) -> str | None:
    """"" when `op`'s own inputs are 16-bit floats; else the name of the nearest op above it whose inputs
    are (an upcast inside it); None when neither."""
    if _sixteen_bit(trace, op):
        return ""
    t = tables(trace)
    p = int(parents[op])
    for _ in range(_UP):
        if p < 0:
            return None
        if _sixteen_bit(trace, p):
            return str(t.strings[t.op_name[p]])
        p = int(parents[p])
    return None


def tc_miss(trace: Trace, ops: list[OpGroup]) -> TcMiss:
    """The split above, over the eligible groups of `ops` (one scope's operator rows)."""
    out = TcMiss()
    groups = [o for o in ops if o.tc_eligible and o.kernel_self_us > 0 and (o.tc_share or 0.0) < 0.5]
    if not groups:
        return out
    t = tables(trace)
    own = owners(trace).gpu_owner
    group_of = {op: k for k, g in enumerate(groups) for op in g.ops}
    members = np.fromiter(group_of, dtype=np.int64, count=len(group_of))
    work = np.flatnonzero(np.isin(own, members) & t.gpu_is((KERNEL,)))
    missed = [0.0] * len(groups)
    upcast_at: dict[int, str | None] = {}
    around: dict[str, None] = {}
    for g, name_id, dur in zip(work.tolist(), t.gpu_name[work].tolist(), t.gpu_dur[work].tolist(), strict=True):
        raw = t.strings[name_id]
        name = decode_kernel(raw)
        if name.family not in _MATRIX or uses_tensor_cores(raw):
            continue
        if name.library.startswith("Triton"):
            out.unknown_us += dur
            continue
        op = int(own[g])
        if op not in upcast_at:
            upcast_at[op] = _inputs(trace, op, t.op_parent)
        inside = upcast_at[op]
        if inside == "":
            out.sixteen_bit_us += dur
            continue
        if inside is not None:
            out.upcast_us += dur
            around[inside] = None
            continue
        out.missed_us += dur
        missed[group_of[op]] += dur
    out.ops = [groups[k].name for k in sorted(range(len(groups)), key=lambda k: -missed[k]) if missed[k] > 0]
    out.upcast_ops = list(around)
    return out
