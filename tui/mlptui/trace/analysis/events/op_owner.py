"""Who owns what in the operator view, by the TensorBoard profiler plugin's rule.

The operator tree's nodes are CPU operators (`cpu_op`, `Operator` in old traces) other than the
`ProfilerStep#N` mark. Python frames (`python_function`) and `record_function` annotations
(`user_annotation`) are not nodes: the GPU work launched under them belongs to the nearest enclosing
operator (so an NCCL kernel launched under `nccl:all_reduce` belongs to `record_param_comms`, a kernel
launched from Python code inside a custom op to that op), and an operator's host self time subtracts the
operators, annotations and launch calls beneath it, looking through Python frames, never the frames
themselves (a frame's own time is the enclosing op's).

Two more of the plugin's rules, which torch's own `EventList` tables share:
- an operator whose only slice beneath (Python frames looked through) is an operator of the same name is
  one node with it: the inner one is merged into the outer (one call, the outer's duration; its self time
  is the outer's time outside the inner one's children, and the inner one's GPU work is the outer's);
- the optimizer's and the DataLoader's `record_function` marks (`Optimizer.step#…`,
  `Optimizer.zero_grad#…`, `enumerate(DataLoader)#…`), which torch 1.9 writes as operators, are not nodes.

    owners(trace) -> Owners      computed once per trace (`Trace.derive`)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.events.tables import TraceColumns, tables
from mlptui.trace.model import CPU_OP, PYTHON, Trace
from mlptui.trace.parse.index import STEP_PREFIX

# The optimizer's and the DataLoader's annotations: in the dispatch tree and the modules view, not operators.
NOT_OPERATOR_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#", "enumerate(DataLoader)#")


@dataclass(frozen=True)
class Owners:
    is_operator: np.ndarray      # per op: a node of the operator tree
    merged_into: np.ndarray      # per op: the same-name operator it is merged into (-1: not merged)
    op_owner: np.ndarray         # per op: itself when an operator, else the nearest enclosing operator (-1: none)
    gpu_owner: np.ndarray        # per GPU op: the operator that owns it (-1: launched outside every operator)
    host_self_us: np.ndarray     # per op: duration minus the non-Python slices beneath it, through Python frames


def owners(trace: Trace) -> Owners:
    return trace.derive(_trace_owners)


def _trace_owners(trace: Trace) -> Owners:
    return _owners(tables(trace))


def _owners(t: TraceColumns) -> Owners:
    n = t.n_ops
    ids = np.arange(n, dtype=np.int64)
    not_node = t.names_where(_not_a_node, t.op_name)[t.op_name] if n else np.zeros(0, bool)
    is_operator = t.op_is((CPU_OP,)) & ~not_node
    # Host self: each non-Python slice is subtracted from its nearest non-Python ancestor.
    python = t.op_is((PYTHON,))
    above = _climb(t.op_parent.copy(), ~python)
    counted = ~python & (above >= 0)
    dur_ns = np.rint(t.op_dur * 1000).astype(np.int64)        # the index's own ns: sums stay exact
    beneath = np.zeros(n, dtype=np.int64)
    np.add.at(beneath, above[counted], dur_ns[counted])
    self_ns = np.maximum(dur_ns - beneath, 0)
    merged_into = _same_name_merges(t, is_operator, above, counted)
    merged = merged_into >= 0
    np.add.at(self_ns, merged_into[merged], self_ns[merged])   # the outer op's time outside the inner's children
    is_operator = is_operator & ~merged
    op_owner = _climb(np.where(is_operator, ids, t.op_parent), is_operator)
    gpu_op = t.gpu_op
    gpu_owner = np.full(len(gpu_op), -1, dtype=np.int64)
    linked = gpu_op >= 0
    gpu_owner[linked] = op_owner[gpu_op[linked]]
    return Owners(is_operator, merged_into, op_owner, gpu_owner, self_ns / 1000.0)


def _not_a_node(name: str) -> bool:
    return name.startswith(STEP_PREFIX) or name.startswith(NOT_OPERATOR_PREFIXES)


def _same_name_merges(t: TraceColumns, is_operator: np.ndarray, above: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Per op, the outermost operator of its same-name chain it is merged into, or -1: an operator is merged
    into the operator just above it (Python frames looked through) when that one has the same name and no
    other slice beneath it."""
    n = t.n_ops
    slices_beneath = np.bincount(above[counted], minlength=n) if n else np.zeros(0, np.int64)
    up = np.where(counted, above, -1)
    inner = is_operator & (up >= 0)
    inner[inner] = is_operator[up[inner]] & (t.op_name[up[inner]] == t.op_name[inner]) & (slices_beneath[up[inner]] == 1)
    # A chain a > a > a merges into its outermost op: climb while the op above is itself merged.
    into = np.where(inner, up, -1)
    return _climb(into, ~inner) if n else into


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
