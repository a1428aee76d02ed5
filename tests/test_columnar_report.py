"""The report's sections read the trace's columns (mlptui.trace.analysis.events.tables): checked against
straightforward walks over the Op and GpuOp objects, and the columns taken from the index against the
columns taken apart from the objects, on every bundled sample trace."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mlptui.trace.analysis.events.intervals import merged, merged_arrays
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.analysis.events.tables import tables
from mlptui.trace.analysis.events.timeline_segments import Segments
from mlptui.trace.analysis.operators.dispatch import dispatch_paths
from mlptui.trace.analysis.operators.operators import operators_in_steps
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, PYTHON, Trace
from mlptui.trace.parse.load import load_trace

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "sample_traces").rglob("*.pt.trace.json*"))


def _lazy(path: Path) -> Trace:
    return load_trace(path)


def _reference_dispatch(trace: Trace) -> list[dict[str, Any]]:
    """The dispatch section by one pass over the ops in id order (parents first)."""
    ops, gpu = trace.ops, trace.gpu
    step_ops = {s.op for s in trace.steps}
    owner = [-1] * len(ops)
    path: dict[int, tuple[str, ...]] = {}
    has_child: set[int] = set()
    for op in ops:
        up = owner[op.parent] if op.parent >= 0 else -1
        if op.cat in (CPU_OP, ANNOTATION) and op.id not in step_ops:
            owner[op.id] = op.id
            path[op.id] = (path[up] if up >= 0 else ()) + (op.name,)
            if up >= 0:
                has_child.add(up)
        else:
            owner[op.id] = -1 if op.id in step_ops else up
    kernels_of: dict[int, list[int]] = {}
    for g in gpu:
        if g.cat == KERNEL and g.op >= 0:
            kernels_of.setdefault(owner[g.op] if owner[g.op] >= 0 else g.op, []).append(g.id)

    def in_scope(o: int) -> bool:
        return ops[o].step >= 0 or not trace.steps

    ends = {o for o in path if o not in has_child and in_scope(o)}
    ends |= {o for o in kernels_of if (o in has_child or o not in path) and in_scope(o)}
    rows: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Any]] = {}
    for end in sorted(ends, key=lambda o: (ops[o].ts, o)):
        gids = sorted(kernels_of.get(end, []), key=lambda k: (gpu[k].ts, k))
        key = (path.get(end) or (ops[end].name,), tuple(gpu[k].name for k in gids))
        row = rows.setdefault(key, [0, 0.0])
        row[0] += 1
        row[1] += sum(gpu[k].dur for k in gids)
    return [{"path": list(p), "count": n, "gpu_kernels": list(k), "gpu_us": round(us, 3)}
            for (p, k), (n, us) in rows.items()]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:40])
def test_dispatch_matches_a_walk_over_the_ops(path: Path) -> None:
    trace = _lazy(path)
    columnar = dispatch_paths(trace)
    assert not trace.objects_made           # the columns alone, no Op objects made
    assert [dataclasses.asdict(row) for row in columnar] == _reference_dispatch(trace)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:40])
def test_operators_and_launch_calls_match_a_walk_over_the_ops(path: Path) -> None:
    trace = _lazy(path)
    groups = {g.name: g for g in operators_in_steps(trace)}
    calls = {c.name: (c.count, c.total_us) for c in launch_calls(trace)}
    gpu, ops = trace.gpu, trace.ops

    marks = ("ProfilerStep#", "Optimizer.step#", "Optimizer.zero_grad#", "enumerate(DataLoader)#")

    def node(o: int) -> bool:
        return ops[o].cat == CPU_OP and not ops[o].name.startswith(marks)

    def slices_beneath(o: int) -> list[int]:     # the non-Python slices directly beneath, through Python frames
        return [d for c in ops[o].children for d in (slices_beneath(c) if ops[c].cat == PYTHON else [c])]

    def above(o: int) -> int:                    # the nearest non-Python slice above
        p = ops[o].parent
        while p >= 0 and ops[p].cat == PYTHON:
            p = ops[p].parent
        return p

    def merged(o: int) -> bool:                  # one call with the same-name op above, its only slice
        p = above(o)
        return node(o) and p >= 0 and node(p) and ops[p].name == ops[o].name and slices_beneath(p) == [o]

    def operator(o: int) -> bool:
        return node(o) and not merged(o)

    owned: dict[int, float] = {}          # the operator's own GPU work: annotations and frames looked through
    for g in gpu:
        o = g.op
        while o >= 0 and not operator(o):
            o = ops[o].parent
        if o >= 0:
            owned[o] = owned.get(o, 0.0) + g.dur

    def ns(us: float) -> int:
        return round(us * 1000)

    def self_ns(o: int) -> int:
        return max(ns(ops[o].dur) - sum(ns(ops[c].dur) for c in slices_beneath(o)), 0)

    expected: dict[str, list[Any]] = {}
    expected_calls: dict[str, list[Any]] = {}
    for op in ops:
        if op.cat in LAUNCH_CATS:
            row = expected_calls.setdefault(op.name, [0, 0.0])
            row[0] += 1
            row[1] += op.dur
        if not operator(op.id) or (trace.steps and op.step < 0):
            continue
        chain = [op.id]                   # it and the same-name ops merged into it
        while len(beneath := slices_beneath(chain[-1])) == 1 and merged(beneath[0]):
            chain.append(beneath[0])
        row = expected.setdefault(op.name, [0, 0.0, 0.0, 0.0, []])
        row[0] += 1
        row[1] += sum(self_ns(o) for o in chain) / 1000
        row[2] += op.gpu_us
        row[3] += owned.get(op.id, 0.0)
        row[4].append(op.id)
    def rounded(row: list[Any]) -> list[Any]:      # sums of the same floats in another order
        return [round(v, 6) if isinstance(v, float) else v for v in row]

    assert {n: rounded([g.calls, g.host_self_us, g.device_total_us, g.device_self_us, g.ops])
            for n, g in groups.items()} == {n: rounded(row) for n, row in expected.items()}
    assert calls == {n: tuple(v) for n, v in expected_calls.items()}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:40])
def test_columns_and_the_objects_made_from_them_agree(path: Path) -> None:
    from_index = summarize(_lazy(path))
    made = load_trace(path)
    ops, gpu = made.ops, made.gpu                    # objects first: the report must not change
    assert summarize(made) == from_index
    t = tables(made)
    assert t.n_ops == len(ops) and t.n_gpu == len(gpu)
    for field in ("ts", "dur", "self_us", "gpu_us", "parent", "depth", "step", "pid", "tid", "event"):
        assert getattr(t, f"op_{field}").tolist() == [getattr(op, field) for op in ops], field
    for field in ("ts", "dur", "device", "stream", "event", "launch", "op", "step"):
        assert getattr(t, f"gpu_{field}").tolist() == [getattr(g, field) for g in gpu], field
    assert [t.strings[i] for i in t.op_name.tolist()] == [op.name for op in ops]
    assert [t.strings[i] for i in t.gpu_cat.tolist()] == [g.cat for g in gpu]
    ptr, ids = t.children()
    assert [ids[ptr[k]:ptr[k + 1]].tolist() for k in range(len(ops))] == [list(op.children) for op in ops]


def test_union_and_depth_match_the_plain_definitions() -> None:
    rng = np.random.default_rng()
    starts = rng.integers(0, 1000, 400).astype(np.float64)
    ends = starts + rng.integers(-5, 60, 400)
    s, e = merged_arrays(starts, ends)
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == merged(zip(starts.tolist(), ends.tolist(),
                                                                         strict=True))
    lo, hi = starts.astype(np.int64), ends.astype(np.int64)
    seg = Segments.of(lo, hi)
    weights = rng.random(400)
    keep = hi > lo
    for w in (None, weights):
        d = np.zeros(len(seg.bounds), dtype=np.int64 if w is None else np.float64)
        np.add.at(d, np.searchsorted(seg.bounds, lo[keep]), 1 if w is None else w[keep])
        np.add.at(d, np.searchsorted(seg.bounds, hi[keep]), -1 if w is None else -w[keep])
        assert seg.depth(lo, hi, w).tolist() == np.cumsum(d)[:-1].tolist()


def test_kernels_without_any_cpu_op_summarize() -> None:
    """A trace of GPU kernels only (no CPU op, so no launch call to compare with) gives a summary, not an
    IndexError from the launch-bound recommendation (found by the fuzz target)."""
    import json

    from mlptui.trace.analysis.report.summary import summarize
    from mlptui.trace.parse.load import load_trace_bytes

    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 1 + 10 * i, "dur": 5,
               "args": {"correlation": i + 1}} for i in range(3)]
    trace = load_trace_bytes(json.dumps({"traceEvents": events}).encode(), source="test")
    assert len(trace.ops) == 0 and len(trace.gpu) == 3
    rules = [r.rule for r in summarize(trace).recommendations]
    assert "launch_bound" not in rules
