"""Input shapes are read once per trace: every scope and grouping after the first reuses them, and they
are the text the op's args give."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from conftest import SAMPLES

from mlptui.trace.analysis.events.op_shapes import input_shapes
from mlptui.trace.analysis.operators.operators import operators_in_steps
from mlptui.trace.analysis.report.profile_sections import operator_stat
from mlptui.trace.model import CPU_OP
from mlptui.trace.parse.load import load_trace

TRAIN = sorted(SAMPLES.glob("mlp-train-*.pt.trace.json.gz"))[-1]


def test_each_op_args_decoded_once_across_scopes() -> None:
    trace = load_trace(TRAIN)
    assert len(trace.steps) >= 2
    reads: Counter[int] = Counter()
    store = trace._args
    assert store is not None

    def counting(event: int) -> dict[str, Any]:
        reads[event] += 1
        return store(event)

    trace = dataclasses.replace(trace, _args=counting)
    per_step = [operators_in_steps(trace, by_shapes=True, step=s) for s in range(len(trace.steps))]
    every = operators_in_steps(trace, by_shapes=True)
    again = operators_in_steps(trace, by_shapes=True)
    assert reads and max(reads.values()) == 1
    assert [operator_stat(r) for r in every] == [operator_stat(r) for r in again]
    # the steps' groups add up to the all-steps groups
    calls: Counter[tuple[str, str | None]] = Counter()
    for rows in per_step:
        for r in rows:
            calls[(r.name, r.input_shapes)] += r.calls
    assert {(r.name, r.input_shapes): r.calls for r in every} == dict(calls)


def test_shapes_are_the_args_text() -> None:
    trace = load_trace(TRAIN)
    ids = [op.id for op in trace.ops if op.cat == CPU_OP]
    texts = [input_shapes(trace, i) for i in ids]
    assert texts == [str(trace.op_args(i)["Input Dims"]) if "Input Dims" in trace.op_args(i) else "[]" for i in ids]
    assert any(t != "[]" for t in texts)
