"""Longest distances through a step's dependency graph, for several sets of weights at once.

    Flow(g).longest(weight) -> dist        weight: (edges,) or (edges, k) -> dist: (nodes,) or (nodes, k)
    Flow(g).sink_without(weight, gone, row, k) -> (k,)   the sink's distance with edges gone, k sets at once
    Flow(g).backtrack(dist, weight) -> path edges, source to sink

The graph is runs of nodes joined by chain edges (a thread's instants, a stream's ops) and the edges
between runs (launches, syncs, waits, the source and the sink). Along a run the distance is a running
maximum: dist[i] = max(x[i], dist[i-1] + w) is, with W the running sum of the run's weights,
W[i] + max over j <= i of (x[j] - W[j]), one cumulative maximum. So each round gathers the edges between
runs into x, then scans every run at once; rounds repeat until x no longer changes, which takes as many
rounds as the longest path switches runs, and one more gathering (left out where the distances the edges
between runs leave from came out as in the round before: it would gather the same x). A graph that
needs more rounds than
MAX_ROUNDS (a step with hundreds of host-device round trips) is settled edge by edge in topological
order instead. Only the nodes that edges between runs touch (and each run's first) take part in the
rounds; the others follow from their run's running sum. Of the edges of no weight into one node from one
run, only the one from the run's latest node takes part (distances never fall along a run).
Every node starts at 0, so a node the source cannot reach stays at 0, as in the edge-by-edge pass.

A Flow may also be made over several graphs laid one after another (`parts`: their node bounds; each part
its own source and sink at its first two nodes, no edge from one part to another): the rounds then run
over all of them at once, each part's running sums are its own (the same numbers as its graph alone
gives), and past MAX_ROUNDS it raises TooManyRounds (the caller goes graph by graph).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from mlptui.trace.analysis.critical_path.critical_graph import Graph

MAX_ROUNDS = 24
TOL = 1e-6                      # µs: two arrivals this close are the same instant


class TooManyRounds(Exception):
    """A Flow over several graphs needed more than MAX_ROUNDS rounds."""


class Flow:
    def __init__(self, g: Graph, parts: np.ndarray | None = None) -> None:
        n = len(g.time)
        self.n = n
        self.g = g
        self.parts = parts                              # node bounds of the graphs g lays together, or None
        self._base: tuple[np.ndarray, np.ndarray] | None = None     # longest()'s weights, their kept running sums
        chain = g.chain
        self.chain_dst = g.dst[chain]
        self.chain_e = np.flatnonzero(chain)
        # per node, the chain edge into it, else one past the last edge (a column of zeros): each node's step
        # along its run is one gather
        self.chain_into = np.full(n, len(g.src), dtype=np.int64)
        self.chain_into[self.chain_dst] = self.chain_e
        starts = np.ones(n + 1, dtype=bool)
        starts[self.chain_dst] = False
        cross = _deciding(g, np.cumsum(starts[:n]) - 1)
        cross = cross[np.argsort(g.dst[cross], kind="stable")]
        self.cross_e = cross
        self.cross_at = np.full(len(g.src), -1, dtype=np.int64)     # an edge's position among `cross`
        self.cross_at[cross] = np.arange(len(cross))
        # the nodes an edge between runs touches, and each run's first: the others only pass time along their
        # run, so the rounds work on these alone and the rest follow from their run's running sum
        keep = starts[:n].copy()
        keep[:2] = True
        if parts is not None:
            keep[parts[:-1]] = keep[parts[:-1] + 1] = True
        keep[g.src[cross]] = True
        keep[g.dst[cross]] = True
        self.keep = keep
        self.kept = np.flatnonzero(keep)
        at = np.cumsum(keep) - 1                        # each node's kept node at or before it, on its run
        self.below = at
        self.kept_parts = None if parts is None else at[parts[:-1]].tolist() + [len(self.kept)]
        self.cross_src = at[g.src[cross]]
        cdst = at[g.dst[cross]]
        if len(cdst):
            first = np.concatenate(([True], cdst[1:] != cdst[:-1]))
            self.cross_first = np.flatnonzero(first)
            self.cross_to = cdst[first]
        else:
            self.cross_first = self.cross_to = np.zeros(0, dtype=np.int64)
        cut = np.flatnonzero(np.concatenate((starts[:n][self.kept], [True])))
        cuts = cut.tolist()
        self.runs = [(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b - a > 1]
        # every edge between runs, by the node it enters (a node has at most one chain edge into it)
        other = np.flatnonzero(~chain)
        self.other_e = other[np.argsort(g.dst[other], kind="stable")]
        dst = g.dst[self.other_e]
        self.other_first = np.flatnonzero(np.concatenate(([True], dst[1:] != dst[:-1]))) if len(dst) else dst
        self.other_of = dst[self.other_first]

    def longest(self, weight: np.ndarray, sink_only: bool = False) -> np.ndarray:
        """Longest distance from the source to every node, for each row of `weight` ((edges,) or (k, edges):
        one set of weights a row; the result is (nodes,) or (k, nodes)); with `sink_only`, to the kept
        nodes only (column 1 is the sink's). A row is the graph's weights with some own time taken away:
        the edges that are not own time keep theirs (the rounds leave some of those of no weight out)."""
        w = weight if weight.ndim == 2 else weight[None, :]
        padded = np.zeros((w.shape[0], w.shape[1] + 1))
        padded[:, :-1] = w
        ran = self._runsum(padded.take(self.chain_into, axis=1), self.parts)
        kept_ran = ran.take(self.kept, axis=1)
        if weight.ndim == 1:
            self._base = (weight, kept_ran[0])          # sink_without starts from these running sums
        settled = self._rounds(kept_ran, w.take(self.cross_e, axis=1))
        if settled is None and self.parts is not None:
            raise TooManyRounds
        if settled is None:
            out = np.stack([self._in_order(row) for row in w])
            return out if weight.ndim == 2 else out[0]
        dist, top = settled
        if sink_only:
            return dist if weight.ndim == 2 else dist[0]
        whole: np.ndarray = top.take(self.below, axis=1) + ran
        return whole if weight.ndim == 2 else whole[0]

    def sink_without(self, weight: np.ndarray, gone: np.ndarray, row: np.ndarray, k: int) -> np.ndarray:
        """The sink's longest distance for k what-ifs at once: what-if j is `weight` with the edges
        gone[row == j] set to 0 (an edge at most once a row). Each what-if's running sums along the runs
        are the base's less its removed chain weights summed up to each kept node, so no what-if gathers
        and sums a whole row of weights."""
        if self._base is not None and self._base[0] is weight:
            kept_ran = self._base[1]
        else:
            padded = np.zeros((1, len(weight) + 1))
            padded[0, :-1] = weight
            kept_ran = self._runsum(padded.take(self.chain_into, axis=1), self.parts)[0, self.kept]
        m = len(self.kept)
        on_chain = self.g.chain[gone]
        d = self.g.dst[gone[on_chain]]
        # a removed chain edge into node d takes its weight off every kept node from d's on (d's own kept
        # node when d is kept, else the next one along its run; past its part's last, none)
        first = self.below[d] + ~self.keep[d]
        w_gone, r_gone = weight[gone[on_chain]], row[on_chain]
        if self.kept_parts is not None:
            bounds = np.array(self.kept_parts)
            inside = first < bounds[np.searchsorted(bounds, self.below[d], side="right")]
            first, w_gone, r_gone = first[inside], w_gone[inside], r_gone[inside]
        less = np.bincount(r_gone * (m + 1) + first, weights=w_gone, minlength=k * (m + 1))
        ran = kept_ran[None, :] - self._runsum(less.reshape(k, m + 1)[:, :m], self.kept_parts)
        cw = np.repeat(weight[None, self.cross_e], k, axis=0)
        at = self.cross_at[gone[~on_chain]]
        cw[row[~on_chain][at >= 0], at[at >= 0]] = 0.0
        settled = self._rounds(ran, cw)
        if settled is None and self.parts is not None:
            raise TooManyRounds
        if settled is None:
            rows = np.repeat(weight[None, :], k, axis=0)
            rows[row, gone] = 0.0
            return np.array([self._in_order(r)[1] for r in rows])
        if self.parts is not None:                      # (k, parts): each part's sink
            at_sinks: np.ndarray = settled[0][:, self.below[self.parts[:-1] + 1]]
            return at_sinks
        return settled[0][:, 1]

    @staticmethod
    def _runsum(a: np.ndarray, parts: np.ndarray | list[int] | None) -> np.ndarray:
        """Cumulative sums along axis 1, each part's from its own first column (the same floats as summing
        the part alone)."""
        if parts is None:
            return np.cumsum(a, axis=1)
        out = np.empty_like(a)
        bounds = parts.tolist() if isinstance(parts, np.ndarray) else parts
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            np.cumsum(a[:, lo:hi], axis=1, out=out[:, lo:hi])
        return out

    def _rounds(self, kept_ran: np.ndarray, cw: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The rounds over the kept nodes: (distances, running maxima), or None past MAX_ROUNDS."""
        k, m = kept_ran.shape
        dist = np.zeros((k, m))
        top = np.zeros((k, m))
        seen = None
        sent = np.zeros((k, len(self.cross_src)))      # the distances the edges between runs leave from
        for r in range(MAX_ROUNDS):
            x = np.zeros((k, m))
            if cw.shape[1]:
                x[:, self.cross_to] = np.maximum(np.maximum.reduceat(sent + cw, self.cross_first, axis=1), 0.0)
            if seen is not None and bool((x == seen).all()):
                return dist, top                        # the same arrivals scan to the same distances
            seen = x
            top = x - kept_ran
            for a, b in self.runs:
                np.maximum.accumulate(top[:, a:b], axis=1, out=top[:, a:b])
            dist = top + kept_ran
            was, sent = sent, dist.take(self.cross_src, axis=1)       # take: far quicker than [:, index]
            if r + 1 < MAX_ROUNDS and bool((sent == was).all()):
                return dist, top                        # the next round would gather the same arrivals
        return None

    def _in_order(self, weight: np.ndarray) -> np.ndarray:
        """The same, edge by edge in a topological order (nodes by time, the order made breaking ties;
        Kahn's algorithm where a tie in time goes against that order)."""
        g = self.g
        key = np.array(g.time, dtype=np.float64)
        key[0], key[1] = -np.inf, np.inf
        order = np.lexsort((np.arange(self.n), key))
        pos = np.empty(self.n, dtype=np.int64)
        pos[order] = np.arange(self.n)
        if len(g.src) and not bool((pos[g.src] < pos[g.dst]).all()):
            pos = _kahn(self.n, g.src, g.dst)
        by = np.argsort(pos[g.dst], kind="stable")
        dist = [0.0] * self.n
        for u, v, w in zip(g.src[by].tolist(), g.dst[by].tolist(), weight[by].tolist(), strict=True):
            d = dist[u] + w
            if d > dist[v]:
                dist[v] = d
        return np.array(dist)

    def backtrack(self, dist: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """The path's edges with a weight, source to sink: from the sink back, the edge that set each node's
        distance; among edges that tie, the last one added (a sync or wait edge is added after the edges it
        explains better)."""
        return self.backtrack_parts(dist, weight, [0])[0]

    def backtrack_parts(self, dist: np.ndarray, weight: np.ndarray, sources: list[int]) -> list[np.ndarray]:
        """The same for each part, from its sink (source + 1) back to its source."""
        g = self.g
        tight = np.abs(dist[g.src] + weight - dist[g.dst]) <= TOL + 1e-12 * dist[g.dst]
        chosen = np.full(self.n, -1, dtype=np.int64)
        chosen[self.chain_dst] = np.where(tight[self.chain_e], self.chain_e, -1)
        if len(self.other_e):
            best = np.maximum.reduceat(np.where(tight[self.other_e], self.other_e, -1), self.other_first)
            chosen[self.other_of] = np.maximum(chosen[self.other_of], best)
        # along a run the walk steps back one chain edge at a time: jump to the run's last node above that
        # was reached some other way, and take the chain edges between as one piece
        into = self.chain_into                          # where a node has no chain edge, one past the last edge
        other = chosen != into
        # the walk makes few jumps: read the arrays where it lands rather than turn them into lists
        stop = np.maximum.accumulate(np.where(other, np.arange(self.n), 0))
        src = g.src
        paths = []
        for source in sources:
            pieces = []
            v = source + 1
            while True:
                s = int(stop[v])
                if s < v:
                    pieces.append(into[s + 1:v + 1])
                e = int(chosen[s])
                if s == source or e < 0:
                    break
                pieces.append(np.array([e]))
                v = int(src[e])
            path = np.concatenate(pieces[::-1]) if pieces else np.zeros(0, dtype=np.int64)
            paths.append(path[weight[path] > 0])
        return paths


def _deciding(g: Graph, run: np.ndarray) -> np.ndarray:
    """The edges between runs that can decide a distance. Distances never fall along a run (weights are not
    negative), so of the edges of no weight that no what-if changes (not an event's own time) from one run
    into the same node, the one from the run's latest node always arrives last: the others (the device ops'
    ends into the sink, all but each stream's last) are left out of the rounds."""
    cross = ~g.chain
    free = np.flatnonzero(cross & (g.weight == 0) & ~g.own)
    if len(free) > 1:
        key = g.dst[free] * (int(run[-1]) + 1) + run[g.src[free]]          # (node, run it comes from)
        order = np.lexsort((g.src[free], key))
        key = key[order]
        cross[free[order][:-1][key[1:] == key[:-1]]] = False               # all but the latest of each
    return np.flatnonzero(cross)


def _kahn(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    outgoing: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        outgoing[u].append(v)
        waiting[v] += 1
    ready = deque(v for v in range(n) if waiting[v] == 0)
    pos = np.empty(n, dtype=np.int64)
    at = 0
    while ready:
        u = ready.popleft()
        pos[u] = at
        at += 1
        for v in outgoing[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    if at != n:                 # cannot happen: every edge goes forward in time or along a thread
        raise RuntimeError("the dependency graph has a cycle")
    return pos
