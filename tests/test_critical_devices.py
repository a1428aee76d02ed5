"""The device half of a group of steps' graphs made at once (critical_devices) against each step's own
graph (build_graph), array for array, and the steps laid together as one graph, on real traces whose steps take that way (the MI250 trace has one step
that does and one, with a blocking call, that keeps its own pass, in the same group)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CORPUS
from graph_checks import assert_same_graph

from mlptui.trace.analysis.critical_path import critical_devices
from mlptui.trace.analysis.critical_path.critical_graph import Graph, build_graph, every_step_chains
from mlptui.trace.parse.load import load_trace


@pytest.mark.parametrize(("name", "own_pass"), [("amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", 1),
                                               ("trace_compare__base__base.json.gz", 0),
                                               ("timeline_analysis__sampled_rank-0.json.gz", 0)])
def test_a_groups_graphs_are_each_steps_own(name: str, own_pass: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    trace = load_trace(path)
    chains = every_step_chains(trace)
    alone: list[int] = []

    def one(trace_: object, step: int, chains_: object) -> Graph:
        alone.append(step)
        return build_graph(trace, step, chains)

    monkeypatch.setattr(critical_devices, "build_graph", one)
    steps = [s.index for s in trace.steps]
    got, whole, nodes, edges = critical_devices.group_graphs(trace, steps, chains)
    assert len(got) == len(steps) >= 2
    assert len(alone) == own_pass
    for k, (s, g) in enumerate(zip(steps, got, strict=True)):
        assert_same_graph(build_graph(trace, s, chains), g)
        assert_same_graph(build_graph(trace, s), g)
        # the one graph holds each step's edges after the steps before it, node ids moved past theirs
        a, b = int(edges[k]), int(edges[k + 1])
        assert np.array_equal(whole.src[a:b], g.src + nodes[k]) and np.array_equal(whole.dst[a:b], g.dst + nodes[k])
        assert np.array_equal(whole.weight[a:b], g.weight) and np.array_equal(whole.time[nodes[k]:nodes[k + 1]], g.time)
