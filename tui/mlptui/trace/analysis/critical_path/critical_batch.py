"""Every step's critical path at once (what `summary` wants): the steps' graphs laid one after another as
one graph, whose longest distances, walks back and what-ifs are each one pass over all the steps.

    every_path(trace, part, alone) -> [path]       one per step (the trace has steps)

critical_path hands in how it finishes a step (`part`: a step's path up to its what-ifs; `alone`: a step's
path from its graph, by itself), so that this module does not import it back.

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
from mlptui.trace.analysis.critical_path.critical_flow import Flow, TooManyRounds
from mlptui.trace.analysis.critical_path.critical_graph import Graph, build_graph, every_step_chains
from mlptui.trace.model import Step, Trace

T = TypeVar("T", covariant=True)


class StepPart(Protocol[T]):
    """A step's path up to its what-ifs."""

    @property
    def gone(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The edges each what-if takes away, and the what-if of each (None: no what-if)."""

    @property
    def what_ifs(self) -> int: ...

    def path(self, trace: Trace, step: int, longest: np.ndarray, ends: list[float]) -> T: ...


Part = Callable[[Trace, Graph, np.ndarray], StepPart[T]]
Alone = Callable[[Trace, int, Graph], T]

GROUP = 16         # steps laid together: enough to share the calls, few enough that the arrays stay in cache


def every_path(trace: Trace, part: Part[T], alone: Alone[T]) -> list[T]:
    chains = every_step_chains(trace)
    steps = trace.steps
    return [p for a in range(0, len(steps), GROUP) for p in _group(trace, steps[a:a + GROUP], chains, part, alone)]


def _group(trace: Trace, steps: list[Step], chains: Chains, part: Part[T], alone: Alone[T]) -> list[T]:
    graphs = [build_graph(trace, s.index, chains) for s in steps]
    whole, nodes, edges = _laid_together(graphs)
    flow = Flow(whole, nodes)
    weight = whole.weight
    try:
        longest = flow.longest(weight)
        walks = flow.backtrack_parts(longest, weight, nodes[:-1].tolist())
        bounds = nodes.tolist()
        firsts = edges[:-1].tolist()
        dists = [longest[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        parts = [part(trace, g, walk - e) for g, walk, e in zip(graphs, walks, firsts, strict=True)]
        ends = _what_ifs(flow, weight, parts, firsts)
    except TooManyRounds:
        return [alone(trace, s.index, g) for s, g in zip(steps, graphs, strict=True)]
    return [p.path(trace, s.index, d, e) for p, s, d, e in zip(parts, steps, dists, ends, strict=True)]


def _what_ifs(flow: Flow, weight: np.ndarray, parts: list[StepPart[T]], firsts: list[int]) -> list[list[float]]:
    """Each step's what-if step times: what-if j of every step in row j, all steps' rows in one pass."""
    gone = [(p.gone[0] + e, p.gone[1]) for p, e in zip(parts, firsts, strict=True) if p.gone is not None]
    if not gone:
        return [[] for _ in parts]
    k = max(p.what_ifs for p in parts)
    sinks = flow.sink_without(weight, np.concatenate([g for g, _r in gone]), np.concatenate([r for _g, r in gone]),
                              k).T.tolist()
    return [sink[:p.what_ifs] for p, sink in zip(parts, sinks, strict=True)]


def _laid_together(graphs: list[Graph]) -> tuple[Graph, np.ndarray, np.ndarray]:
    """One graph of the steps' graphs, node and edge ids moved past the graphs before; with the node and
    edge bounds of each. Only what Flow reads is laid together."""
    n_nodes = np.array([len(g.time) for g in graphs])
    n_edges = np.array([len(g.src) for g in graphs])
    nodes = np.concatenate(([0], np.cumsum(n_nodes)))
    edges = np.concatenate(([0], np.cumsum(n_edges)))
    shift = np.repeat(nodes[:-1], n_edges)
    empty = np.zeros(0)
    whole = Graph(0.0, 0.0, np.concatenate([g.time for g in graphs]),
                  np.concatenate([g.src for g in graphs]) + shift, np.concatenate([g.dst for g in graphs]) + shift,
                  np.concatenate([g.weight for g in graphs]), empty, empty, empty,
                  np.concatenate([g.own for g in graphs]), empty, np.concatenate([g.chain for g in graphs]))
    return whole, nodes, edges
