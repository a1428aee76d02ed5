"""Every step's critical path at once (what `summary` wants): the steps' graphs laid one after another as
one graph, whose longest distances, walks back and what-ifs are each one pass over all the steps.

    every_path(trace, part, alone, top, own_kind) -> [path]       one per step (the trace has steps)
    every_path(..., tick=f)                                        f(stage) after each stage (benchmarks)

critical_path hands in how it finishes a step (`part`: a step's path from its walk and its ranked names;
`alone`: a step's path from its graph, by itself), so that this module does not import it back. The
graphs come laid together from critical_devices (their device halves made for the group at once), the
top names and the what-ifs' edges from critical_tops (ranked for the group at once).

No step's graph links to another's, so the longest distances over the whole are each step's own, and
the running sums are taken step by step (critical_flow's `parts`): every figure is the same, to the last
bit, as critical_path() gives step by step. Where a step needs more rounds than critical_flow.MAX_ROUNDS,
the graphs are taken one by one (that step then takes its edge-by-edge pass, as it would alone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import numpy as np

from mlptui.trace.analysis.critical_path.critical_chains import Chains
from mlptui.trace.analysis.critical_path.critical_devices import group_graphs
from mlptui.trace.analysis.critical_path.critical_flow import Flow, TooManyRounds
from mlptui.trace.analysis.critical_path.critical_graph import Graph, every_step_chains
from mlptui.trace.analysis.critical_path.critical_tops import GroupTops, Ranked, group_tops
from mlptui.trace.model import Step, Trace

T = TypeVar("T", covariant=True)


class StepPart(Protocol[T]):
    """A step's path up to its what-ifs."""

    def path(self, trace: Trace, step: int, longest: np.ndarray, ends: list[float]) -> T: ...


Part = Callable[[Trace, Graph, np.ndarray, Ranked], StepPart[T]]
Alone = Callable[[Trace, int, Graph], T]

GROUP = 16         # steps laid together: enough to share the calls, few enough that the arrays stay in cache
Tick = Callable[[str], None]


def _no_tick(stage: str) -> None:
    pass


def every_path(trace: Trace, part: Part[T], alone: Alone[T], top: int, own_kind: np.ndarray,
               tick: Tick = _no_tick) -> list[T]:
    """part: a step's path from its graph, its walk and its ranked names; top, own_kind: how many names a
    step ranks, and per kind code whether it is own time (critical_tops.group_tops); tick: called with each
    stage's name as it ends (bench_critical_path.py times the stages this way)."""
    chains = every_step_chains(trace)
    tick("CPU chains, every step (per trace)")
    steps = trace.steps
    return [p for a in range(0, len(steps), GROUP)
            for p in _group(trace, steps[a:a + GROUP], chains, part, alone, (top, own_kind), tick)]


def _group(trace: Trace, steps: list[Step], chains: Chains, part: Part[T], alone: Alone[T],
           ranking: tuple[int, np.ndarray], tick: Tick) -> list[T]:
    graphs, whole, nodes, edges = group_graphs(trace, [s.index for s in steps], chains)
    tick("graphs, laid together")
    flow = Flow(whole, nodes)
    tick("Flow's indexes")
    weight = whole.weight
    try:
        longest = flow.longest(weight)
        tick("longest distances")
        walks = flow.backtrack_parts(longest, weight, nodes[:-1].tolist())
        tick("walks back")
        tops = group_tops(trace, whole, walks, edges, *ranking)
        tick("top names, what-ifs' edges")
        ends = _what_ifs(flow, weight, tops)
        tick("what-ifs' rounds")
    except TooManyRounds:
        return [alone(trace, s.index, g) for s, g in zip(steps, graphs, strict=True)]
    bounds = nodes.tolist()
    firsts = edges[:-1].tolist()
    dists = [longest[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    parts = [part(trace, g, walk - e, r) for g, walk, e, r in zip(graphs, walks, firsts, tops.ranked, strict=True)]
    paths = [p.path(trace, s.index, d, e) for p, s, d, e in zip(parts, steps, dists, ends, strict=True)]
    tick("segments' columns, paths")
    return paths


def _what_ifs(flow: Flow, weight: np.ndarray, tops: GroupTops) -> list[list[float]]:
    """Each step's what-if step times: what-if j of every step in row j, all steps' rows in one pass."""
    if not tops.k:
        return [[] for _ in tops.ranked]
    sinks = flow.sink_without(weight, tops.gone, tops.row, tops.k).T.tolist()
    return [sink[:len(r)] for r, sink in zip(tops.ranked, sinks, strict=True)]
