"""The top names and the what-ifs' edges of a group of steps laid together (critical_tops) against each step
on its own (critical_path._Part, a group of one), one step's against a ranking done by hand from the graph's
edges, and the edges of a name ranked under two kinds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import find_sample

from mlptui.trace.analysis.critical_path import critical_path, critical_tops
from mlptui.trace.analysis.critical_path.critical_devices import group_graphs
from mlptui.trace.analysis.critical_path.critical_flow import Flow
from mlptui.trace.analysis.critical_path.critical_graph import GPU, KINDS, OP, build_graph, every_step_chains
from mlptui.trace.parse.load import load_trace


def test_a_groups_tops_are_each_steps_own() -> None:
    trace = load_trace(find_sample("mlp-train", "eager", "bf16"))
    chains = every_step_chains(trace)
    graphs, whole, nodes, edges = group_graphs(trace, [s.index for s in trace.steps], chains)
    flow = Flow(whole, nodes)
    walks = flow.backtrack_parts(flow.longest(whole.weight), whole.weight, nodes[:-1].tolist())
    tops = critical_tops.group_tops(trace, whole, walks, edges, critical_path.TOP, critical_path._OWN_KIND)
    assert len(tops.ranked) == len(graphs) >= 2 and tops.k == critical_path.TOP
    got: list[set[tuple[int, int]]] = [set() for _ in graphs]
    for e, r in zip(tops.gone.tolist(), tops.row.tolist(), strict=True):
        s = int(np.searchsorted(edges, e, side="right")) - 1
        got[s].add((e - int(edges[s]), r))
    for s, (g, walk) in enumerate(zip(graphs, walks, strict=True)):
        alone = critical_path._Part(trace, g, walk - edges[s])
        assert tops.ranked[s] == alone.ranked
        assert alone.gone is not None
        assert got[s] == set(zip(alone.gone[0].tolist(), alone.gone[1].tolist(), strict=True))


def test_a_name_ranked_under_two_kinds_has_its_edges_in_both_rows() -> None:
    # two steps of four edges each; step 0 ranks name 7 twice (j 0 and 2) and name 9 (j 1); step 1 ranks 7 (j 0)
    names = np.array([7, 9, 7, 3, 7, 7, 9, -1])
    own = np.array([True, True, True, True, True, False, True, False])
    bounds = np.array([0, 4, 8])
    span = 11
    wanted = np.array([0 * span + 7 + 1, 0 * span + 9 + 1, 0 * span + 7 + 1, 1 * span + 7 + 1])
    rank = np.array([0, 1, 2, 0])
    gone, row = critical_tops._named(names, own, bounds, wanted, rank, span)
    pairs = list(zip(gone.tolist(), row.tolist(), strict=True))
    # by hand: edges 0 and 2 (step 0, name 7) in rows 0 and 2, edge 1 in row 1; edge 4 (step 1, name 7, own)
    # in row 0; edge 5 is not own time, edge 6 is not a ranked name of step 1
    assert sorted(pairs) == [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2), (4, 0)]
    for j in (0, 1, 2):             # within a what-if, the edges in id order (the sums' order step by step)
        mine = [e for e, r in pairs if r == j]
        assert mine == sorted(mine)


def test_what_if_edges_by_name() -> None:
    """Each what-if row gets every own-time edge of its name, a name ranked twice (under two kinds) in both
    of its rows, and no edge that is not own time or has another name (one step: a group of one)."""
    from mlptui.trace.analysis.critical_path.critical_tops import _named
    names = np.array([7, 3, 7, -1, 5, 3, 9, 7])
    own = np.array([True, True, False, True, True, True, True, True])
    span = 11                                       # name ids moved up one, so -1 (none) is 0
    for wanted in ([7, 3], [3, 9, 7], [7, 3, 7], [4]):
        edges, rows = _named(names, own, np.array([0, len(names)]), np.array(wanted) + 1,
                             np.arange(len(wanted)), span)
        got = sorted(zip(rows.tolist(), edges.tolist(), strict=True))
        want = sorted((j, e) for j, n in enumerate(wanted) for e in range(len(names)) if own[e] and names[e] == n)
        assert got == want, wanted


def _plain_tops(trace: Any, g: Any, walk: np.ndarray) -> tuple[list[tuple[tuple[int, str], float]], set[tuple[int, int]]]:
    """A step's top names and what-if edges, by plain Python over the path's edges: own time summed by (name,
    kind) in path order, ranked by time, then name as a string, then name id and kind; what-if j takes away
    every own-time edge of the step named as the j-th name."""
    c, strings = trace.columns, trace.columns.strings

    def name(e: int) -> int:
        o, i = int(g.owner[e]), int(g.owner_id[e])
        return int(c.op_name[i]) if o == OP else int(c.gpu_name[i]) if o == GPU else -1

    sums: dict[tuple[int, str], float] = {}
    for e in walk.tolist():
        kind = KINDS[int(g.kind_code[e])]
        if g.own[e] and kind in critical_path.OWN_TIME:
            sums[(name(e), kind)] = sums.get((name(e), kind), 0.0) + float(g.weight[e])
    ranked = sorted(sums.items(), key=lambda r: (-r[1], strings[r[0][0]], r[0][0], KINDS.index(r[0][1])))
    ranked = ranked[:critical_path.TOP]
    gone = {(e, j) for j, ((n, _k), _us) in enumerate(ranked) for e in range(len(g.weight)) if g.own[e] and name(e) == n}
    return ranked, gone


@pytest.mark.parametrize("sample", [("mlp-train", "eager", "bf16"), ("mlp", "compile", "bf16"), ("fused-mlp", "eager")])
def test_one_steps_tops_are_the_plain_ranking(sample: tuple[str, ...]) -> None:
    """One step alone (the app's per-step path) against the ranking done by hand from the graph's edges."""
    trace = load_trace(find_sample(*sample))
    for step in trace.steps:
        g = build_graph(trace, step.index)
        flow = Flow(g)
        walk = flow.backtrack(flow.longest(g.weight), g.weight)
        part = critical_path._Part(trace, g, walk)
        want, gone = _plain_tops(trace, g, walk)
        assert [k for k, _us in part.ranked] == [k for k, _us in want]
        assert [us for _k, us in part.ranked] == pytest.approx([us for _k, us in want], rel=1e-12, abs=1e-9)
        got = set() if part.gone is None else set(zip(part.gone[0].tolist(), part.gone[1].tolist(), strict=True))
        assert got == gone and want
