"""Every step's CPU chains made at once (critical_chains, what `summary` uses) give each step the same graph,
array for array, as the step's own pass (what the app uses for the step on screen), however the steps are
cut into parts; a step with a thread whose slices do not nest is left to its own pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import find_sample

from mlptui.trace.analysis.critical_path import critical_chains
from mlptui.trace.analysis.critical_path.critical_graph import Graph, build_graph, every_step_chains
from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace


def _same(a: Graph, b: Graph) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("part", [1, 2, 16])
def test_every_step_at_once_gives_each_step_its_own_graph(part: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(critical_chains, "PART", part)
    trace = load_trace(find_sample("mlp", "eager", "bf16"))
    chains = every_step_chains(trace)
    rows = [s.index for s in trace.steps]
    assert len(rows) >= 3 and all(chains.step(s, _ops(trace, s)) is not None for s in rows)
    for s in rows:
        _same(build_graph(trace, s), build_graph(trace, s, chains))


def test_a_step_whose_slices_do_not_nest_takes_its_own_pass() -> None:
    trace = load_trace(find_sample("mlp-train", "eager", "bf16"))
    chains = every_step_chains(trace)
    left = [s.index for s in trace.steps if chains.step(s.index, _ops(trace, s.index)) is None]
    assert left                         # this trace has such a step
    for s in trace.steps:
        _same(build_graph(trace, s.index), build_graph(trace, s.index, chains))


def _ops(trace: Trace, step: int) -> np.ndarray:
    return np.flatnonzero(trace.columns.op_step == step)
