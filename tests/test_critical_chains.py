"""Every step at once (what `summary` uses) against each step on its own (what the app uses for the step on
screen): the CPU chains made for all steps give each step the same graph, array for array, however the
steps are cut into parts (a step with a thread whose slices do not nest is left to its own pass); the
paths found over the steps' graphs laid together are each step's own, to the last bit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import find_sample
from graph_checks import assert_same_graph

from mlptui.trace.analysis.critical_path import critical_batch, critical_chains, critical_flow
from mlptui.trace.analysis.critical_path.critical_flow import MAX_ROUNDS
from mlptui.trace.analysis.critical_path.critical_graph import build_graph, every_step_chains
from mlptui.trace.analysis.critical_path.critical_path import CriticalPath, critical_path, critical_paths
from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace


@pytest.mark.parametrize("part", [1, 2, 16])
def test_every_step_at_once_gives_each_step_its_own_graph(part: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(critical_chains, "PART", part)
    trace = load_trace(find_sample("mlp", "eager", "bf16"))
    chains = every_step_chains(trace)
    rows = [s.index for s in trace.steps]
    assert len(rows) >= 3 and all(chains.step(s, _ops(trace, s)) is not None for s in rows)
    for s in rows:
        assert_same_graph(build_graph(trace, s), build_graph(trace, s, chains))


def test_a_step_whose_slices_do_not_nest_takes_its_own_pass() -> None:
    trace = load_trace(find_sample("mlp-train", "eager", "bf16"))
    chains = every_step_chains(trace)
    left = [s.index for s in trace.steps if chains.step(s.index, _ops(trace, s.index)) is None]
    assert left                         # this trace has such a step
    for s in trace.steps:
        assert_same_graph(build_graph(trace, s.index), build_graph(trace, s.index, chains))


def _ops(trace: Trace, step: int) -> np.ndarray:
    return np.flatnonzero(trace.columns.op_step == step)


def _same_path(a: CriticalPath, b: CriticalPath) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "columns":
            for col in dataclasses.fields(x):
                u, v = getattr(x, col.name), getattr(y, col.name)
                assert (np.array_equal(u, v) and u.dtype == v.dtype) if isinstance(u, np.ndarray) else u == v, col.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize(("group", "rounds"), [(2, MAX_ROUNDS), (16, MAX_ROUNDS), (16, 1)])
def test_every_path_at_once_is_each_steps_own(group: int, rounds: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Laid together in groups (one that ends mid-trace too), and where a step needs more rounds than allowed
    (then its group goes graph by graph), every figure is the step's own to the last bit."""
    monkeypatch.setattr(critical_batch, "GROUP", group)
    monkeypatch.setattr(critical_flow, "MAX_ROUNDS", rounds)
    for sample in (find_sample("mlp", "eager", "bf16"), find_sample("mlp-train", "eager", "bf16")):
        trace = load_trace(sample)
        every = critical_paths(trace)
        assert len(every) == len(trace.steps) >= 2
        assert any(p.what_if for p in every)
        for p in every:
            _same_path(critical_path(trace, p.step), p)


def test_a_part_of_steps_with_no_cpu_slice_has_no_chains() -> None:
    """Steps that hold no CPU slice at all (a damaged trace's steps can be empty): their part has no marks,
    and every step's chains are still made, the empty steps' empty."""
    import mlptui.trace.analysis.critical_path.critical_graph as graph

    trace = load_trace(find_sample("mlp", "eager", "bf16"))
    t = graph.tables(trace)
    rows = trace.derive(graph._rows_by_step)
    steps = len(trace.steps)
    extra = critical_chains.PART  # one more whole part of steps, none of which holds a slice
    chains = critical_chains.all_chains(t, graph._cpu_kinds(rows.call_code), rows.call_code == graph._SYNC_CALL,
                                        steps + extra, graph.OP, graph.NONE, graph._K[graph.CPU])
    empty = np.empty(0, dtype=np.int64)
    for s in range(steps, steps + extra):
        got = chains.step(s, empty)
        assert got is not None and len(got.time) == 0 and len(got.firsts) == 0 and len(got.gaps[0]) == 0
    for s in trace.steps:  # the real steps are untouched
        assert_same_graph(build_graph(trace, s.index), build_graph(trace, s.index, every_step_chains(trace)))
