"""Who owns what in the operator view, by the TensorBoard profiler plugin's rule.

The operator tree's nodes are CPU operators (`cpu_op`, `Operator` in old traces) other than the
`ProfilerStep#N` mark. Python frames (`python_function`) and `record_function` annotations
(`user_annotation`) are not nodes: the GPU work launched under them belongs to the nearest enclosing
operator (so an NCCL kernel launched under `nccl:all_reduce` belongs to `record_param_comms`, a kernel
launched from Python code inside a custom op to that op), and an operator's host self time subtracts the
operators, annotations and launch calls beneath it, looking through Python frames, never the frames
themselves (a frame's own time is the enclosing op's).

    owners(trace) -> Owners      computed once per trace (`Trace.derive`)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.tables import Tables, tables
from mlptui.trace.model import CPU_OP, PYTHON, Trace
from mlptui.trace.parse.index import STEP_PREFIX


@dataclass(frozen=True)
class Owners:
    is_operator: np.ndarray      # per op: a node of the operator tree
    op_owner: np.ndarray         # per op: itself when an operator, else the nearest enclosing operator (-1: none)
    gpu_owner: np.ndarray        # per GPU op: the operator that owns it (-1: launched outside every operator)
    host_self_us: np.ndarray     # per op: duration minus the non-Python slices beneath it, through Python frames


def owners(trace: Trace) -> Owners:
    return trace.derive(_trace_owners)


def _trace_owners(trace: Trace) -> Owners:
    return _owners(tables(trace))


def _owners(t: Tables) -> Owners:
    n = t.n_ops
    ids = np.arange(n, dtype=np.int64)
    step_mark = t.names_where(lambda s: s.startswith(STEP_PREFIX), t.op_name)[t.op_name] if n else np.zeros(0, bool)
    is_operator = t.op_is((CPU_OP,)) & ~step_mark
    op_owner = _climb(np.where(is_operator, ids, t.op_parent), is_operator)
    gpu_op = t.gpu_op
    gpu_owner = np.full(len(gpu_op), -1, dtype=np.int64)
    linked = gpu_op >= 0
    gpu_owner[linked] = op_owner[gpu_op[linked]]
    # Host self: each non-Python slice is subtracted from its nearest non-Python ancestor.
    python = t.op_is((PYTHON,))
    above = _climb(t.op_parent.copy(), ~python)
    counted = ~python & (above >= 0)
    dur_ns = np.rint(t.op_dur * 1000).astype(np.int64)        # the index's own ns: sums stay exact
    beneath = np.zeros(n, dtype=np.int64)
    np.add.at(beneath, above[counted], dur_ns[counted])
    host_self = np.maximum(dur_ns - beneath, 0) / 1000.0
    return Owners(is_operator, op_owner, gpu_owner, host_self)


def _climb(up: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Follow `up` (an op id per op, -1 for none) until it reaches an op where `stop` holds or -1, by
    pointer doubling: each pass halves the distance left, so a stack 200 frames deep takes 8 passes."""
    up = up.copy()
    while True:
        moving = np.flatnonzero(up >= 0)
        moving = moving[~stop[up[moving]]]
        if not len(moving):
            return up
        up[moving] = up[up[moving]]
