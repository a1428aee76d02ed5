"""The vectorised longest-path rounds against a plain one: on every step of the samples, the distances,
the path and the what-if step times equal those of an edge-by-edge pass in topological order (Kahn's
algorithm, written here) over the same graph."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLES

from mlptui.trace.analysis.critical_path.critical_flow import Flow
from mlptui.trace.analysis.critical_path.critical_graph import build_graph
from mlptui.trace.parse.load import load_trace

SAMPLE_FILES = sorted(SAMPLES.glob("*.pt.trace.json.gz")) + sorted(SAMPLES.glob("*/*.pt.trace.json.gz"))


def _plain_longest(n: int, src: list[int], dst: list[int], weight: list[float]) -> list[float]:
    outgoing: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for e, v in enumerate(dst):
        outgoing[src[e]].append(e)
        waiting[v] += 1
    ready = deque(v for v in range(n) if waiting[v] == 0)
    dist = [0.0] * n
    seen = 0
    while ready:
        u = ready.popleft()
        seen += 1
        for e in outgoing[u]:
            v = dst[e]
            dist[v] = max(dist[v], dist[u] + weight[e])
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    assert seen == n                    # a DAG
    return dist


def _plain_path(dist: list[float], src: list[int], dst: list[int], weight: list[float]) -> list[int]:
    """From the sink back, the last-added edge that sets each node's distance; edges of weight 0 left out."""
    into: dict[int, list[int]] = {}
    for e, v in enumerate(dst):
        into.setdefault(v, []).append(e)
    path, v = [], 1
    while v != 0:
        tight = [e for e in into.get(v, []) if abs(dist[src[e]] + weight[e] - dist[v]) <= 1e-6 + 1e-12 * dist[v]]
        if not tight:
            break
        e = tight[-1]
        if weight[e] > 0:
            path.append(e)
        v = src[e]
    return path[::-1]


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name[:50])
def test_rounds_equal_the_plain_pass(path: Path) -> None:
    trace = load_trace(path)
    for step in [s.index for s in trace.steps] or [None]:
        g = build_graph(trace, step)
        src, dst, weight = g.src.tolist(), g.dst.tolist(), g.weight.tolist()
        want = _plain_longest(len(g.time), src, dst, weight)
        flow = Flow(g)
        got = flow.longest(g.weight)
        assert np.allclose(got, want, rtol=0, atol=1e-6), step
        assert flow.backtrack(got, g.weight).tolist() == _plain_path(want, src, dst, weight)
        # a what-if: every device op's own time gone, and every CPU slice's, as two rows of weights at once
        own = g.own & (g.owner == 2), g.own & (g.owner == 1)
        both = np.stack([np.where(o, 0.0, g.weight) for o in own])
        got2 = flow.longest(both)
        plain = [_plain_longest(len(g.time), src, dst, both[j].tolist())[1] for j in range(2)]
        for j in range(2):
            assert got2[j, 1] == pytest.approx(plain[j], abs=1e-6)
        # the same two what-ifs given as the edges each removes
        gone = np.concatenate([np.flatnonzero(o) for o in own])
        row = np.repeat([0, 1], [int(o.sum()) for o in own])
        assert flow.sink_without(g.weight, gone, row, 2).tolist() == pytest.approx(plain, abs=1e-6)


def test_many_round_trips_fall_back_to_the_plain_pass() -> None:
    """A step that switches runs more often than the rounds allow still gets its distances."""
    trace = load_trace(next(SAMPLES.glob("mlp-train-eager-64x128x768x3072-bf16-*.pt.trace.json.gz")))
    g = build_graph(trace, trace.steps[-1].index)
    import mlptui.trace.analysis.critical_path.critical_flow as flow_module
    saved = flow_module.MAX_ROUNDS
    flow_module.MAX_ROUNDS = 1
    gone = np.flatnonzero(g.own & (g.owner == 2))
    try:
        flow = Flow(g)
        got = flow.longest(g.weight)
        got_without = flow.sink_without(g.weight, gone, np.zeros(len(gone), dtype=np.int64), 1)
    finally:
        flow_module.MAX_ROUNDS = saved
    want = _plain_longest(len(g.time), g.src.tolist(), g.dst.tolist(), g.weight.tolist())
    assert np.allclose(got, want, rtol=0, atol=1e-6)
    without = np.where(g.own & (g.owner == 2), 0.0, g.weight)
    assert got_without[0] == pytest.approx(_plain_longest(len(g.time), g.src.tolist(), g.dst.tolist(),
                                                          without.tolist())[1], abs=1e-6)
