"""The top names of steps' paths, and the edges each what-if takes away: in one pass over a group of steps
laid together (critical_batch), or for one step alone as a group of one (critical_path, the app's per-step
path), so both rank the same way.

    group_tops(trace, whole, walks, edge_bounds, top, own_kind) -> GroupTops

The ranking, for each step: its own time on its path summed by (name, kind) in path order, ranked by time,
then by name as a string, then by name id and kind; the `top` first of each step. What-if j of a step takes
away the own time of every edge of that step named as its j-th name (a name ranked under two kinds has its
edges in both rows); within one what-if the edges come in id order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.critical_path.critical_graph import GPU, KINDS, OP, Graph
from mlptui.trace.model import Trace

Ranked = list[tuple[tuple[int, str], float]]        # ((name id, kind), µs on the path), best first


@dataclass(frozen=True, slots=True)
class GroupTops:
    ranked: list[Ranked]            # per step
    gone: np.ndarray                # edges (ids in the laid-together graph) that the what-ifs take away
    row: np.ndarray                 # the what-if (its rank within its step) each of `gone` belongs to
    k: int                          # the most what-ifs of any step


def _edge_names(trace: Trace, g: Graph) -> np.ndarray:
    """The string id of each edge's owner's name (-1 for none)."""
    c = trace.columns
    names = np.full(len(g.owner), -1, dtype=np.int64)
    is_op, is_gpu = g.owner == OP, g.owner == GPU
    names[is_op] = c.op_name[g.owner_id[is_op]]
    names[is_gpu] = c.gpu_name[g.owner_id[is_gpu]]
    return names


def group_tops(trace: Trace, whole: Graph, walks: list[np.ndarray], edge_bounds: np.ndarray, top: int,
               own_kind: np.ndarray) -> GroupTops:
    """walks: each step's path (edge ids in `whole`); edge_bounds: each step's first edge, and one past the
    last; own_kind: per kind code, whether it counts as own time."""
    n_kinds = len(KINDS)
    strings = trace.columns.strings
    span = len(strings) + 1                             # name ids, moved up one so that -1 (none) is 0
    names = _edge_names(trace, whole)
    path = np.concatenate(walks) if walks else np.zeros(0, dtype=np.int64)
    step_of = np.repeat(np.arange(len(walks)), [len(w) for w in walks])
    mine = whole.own[path] & own_kind[whole.kind_code[path]]
    on, on_step = path[mine], step_of[mine]
    key = (on_step * span + names[on] + 1) * n_kinds + whole.kind_code[on]
    keys, where = np.unique(key, return_inverse=True)
    sums = np.bincount(where.reshape(-1), weights=whole.weight[on], minlength=len(keys))
    k_step, k_name, k_kind = keys // (span * n_kinds), keys // n_kinds % span - 1, keys % n_kinds
    distinct = _distinct(k_name)
    by_string = sorted(range(len(distinct)), key=lambda i: strings[int(distinct[i])])   # stable: ties by id
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[by_string] = np.arange(len(distinct))
    order = np.lexsort((k_kind, rank[np.searchsorted(distinct, k_name)], -sums, k_step))
    s_step = k_step[order]
    first = np.searchsorted(s_step, np.arange(len(walks)), side="left")
    place = np.arange(len(order)) - first[s_step]
    best = order[place < top]
    b_step, b_name, b_kind, b_us = k_step[best], k_name[best], k_kind[best], sums[best]
    ranked: list[Ranked] = [[] for _ in walks]
    for s, n, kind, us in zip(b_step.tolist(), b_name.tolist(), b_kind.tolist(), b_us.tolist(), strict=True):
        ranked[s].append(((n, KINDS[kind]), us))
    gone, row = _named(names, whole.own, edge_bounds, b_step * span + b_name + 1, place[place < top], span)
    return GroupTops(ranked, gone, row, max((len(r) for r in ranked), default=0))


def _distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) of integers, made here because np.unique's plain form asks numpy.ma whether the array is
    masked: its first call imports numpy.ma, which nothing else `summary` runs needs."""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def _named(names: np.ndarray, own: np.ndarray, edge_bounds: np.ndarray, wanted: np.ndarray, rank: np.ndarray,
           span: int) -> tuple[np.ndarray, np.ndarray]:
    """The own-time edges whose (step, name) key is wanted[j], each with rank[j]; an edge wanted twice (its
    name ranked under two kinds) comes twice, once for each."""
    by = np.argsort(wanted, kind="stable")
    wanted, rank = wanted[by], rank[by]
    # first by name alone, through a table (a search per edge among the wanted keys is several times slower)
    any_step = np.zeros(span, dtype=bool)
    any_step[wanted % span] = True
    edges = np.flatnonzero(own)
    edges = edges[any_step[names[edges] + 1]]
    step = np.searchsorted(edge_bounds, edges, side="right") - 1
    key = step * span + names[edges] + 1
    lo = np.searchsorted(wanted, key, side="left")
    count = np.searchsorted(wanted, key, side="right") - lo
    hit = count > 0
    edges, lo, count = edges[hit], lo[hit], count[hit]
    if not len(count) or int(count.max()) == 1:
        return edges, rank[lo]
    at = np.repeat(lo, count) + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(edges, count), rank[at]
