"""Every step's CPU chains at once: the instants of each thread of each step in time order, and the gaps
between them with their owners, made with one set of numpy calls over the whole trace (for `summary`, which
wants every step) instead of a few dozen calls per step.

    all_chains(t, kind_code, sync, n_steps) -> Chains     kind_code, sync: per Op
    Chains.step(s) -> StepChains | None                   None: a step with a thread whose slices do not nest

A step's chains are what critical_graph's per-step pass makes for a step whose threads all nest (the same
nodes, numbered from 2 in the same order, the same gap edges in the same order, the same weights): the
marks are sorted with the step as the leading key, and each step's part is cut out by its bounds. A step
with a thread that does not nest is left to the per-step pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlptui.trace.store import TraceColumns


@dataclass(frozen=True, slots=True)
class StepChains:
    time: np.ndarray            # per node from 2 on, µs
    start_node: np.ndarray      # per slice of the step (its rows, by id)
    end_node: np.ndarray
    firsts: np.ndarray          # each thread's first node, thread by thread
    thread_ends: np.ndarray     # each thread's last node
    gaps: tuple[np.ndarray, ...]   # (src, dst, weight, kind, owner kind, owner id, own): the threads' runs
    leaf: dict[int, int]        # sync call (position among the step's slices) -> its gap's offset in `gaps`


@dataclass(frozen=True, slots=True)
class _Part:
    """The chains of the steps [base, base + len(ok)), bounds by step relative to base."""

    ok: np.ndarray              # per step: every thread nests
    mark_lo: np.ndarray         # per step, and one past the last: its marks' bounds
    mark_at: np.ndarray
    thread_lo: np.ndarray       # per step: its threads' bounds
    firsts: np.ndarray
    lasts: np.ndarray
    gap_lo: np.ndarray          # per step: its gaps' bounds
    gap_src: np.ndarray
    gap_w: np.ndarray
    gap_kind: np.ndarray
    gap_owner: np.ndarray       # OP or NONE
    gap_owner_id: np.ndarray
    gap_own: np.ndarray


@dataclass(frozen=True, slots=True)
class Chains:
    size: int                   # steps a part
    parts: list[_Part]
    start_node: np.ndarray      # per Op: its node within its step
    end_node: np.ndarray
    leaf_gap: np.ndarray        # per Op: the offset in its step's gaps of a sync call's own gap, else -1

    def step(self, s: int, ops: np.ndarray) -> StepChains | None:
        """Step s's chains; `ops` are its rows (Op ids, ascending)."""
        got = self.runs(s)
        if got is None:
            return None
        time, firsts, lasts, gaps = got
        leaf_gap = self.leaf_gap[ops]
        at = np.flatnonzero(leaf_gap >= 0)
        return StepChains(time, self.start_node[ops], self.end_node[ops], firsts, lasts, gaps,
                          dict(zip(at.tolist(), leaf_gap[at].tolist(), strict=True)))

    def runs(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]] | None:
        """Step s's node times, its threads' first and last nodes and its gaps (StepChains' fields that need
        no list of the step's rows); None where a thread of it does not nest."""
        p = self.parts[s // self.size]
        s -= s // self.size * self.size
        if not p.ok[s]:
            return None
        lo, hi = int(p.gap_lo[s]), int(p.gap_lo[s + 1])
        src = p.gap_src[lo:hi]
        gaps = (src, src + 1, p.gap_w[lo:hi], p.gap_kind[lo:hi], p.gap_owner[lo:hi], p.gap_owner_id[lo:hi],
                p.gap_own[lo:hi])
        t0, t1 = int(p.thread_lo[s]), int(p.thread_lo[s + 1])
        return p.mark_at[int(p.mark_lo[s]):int(p.mark_lo[s + 1])], p.firsts[t0:t1], p.lasts[t0:t1], gaps


PART = 16          # steps made together: enough to share the calls, few enough that the arrays stay in cache


def all_chains(t: TraceColumns, kind_code: np.ndarray, sync: np.ndarray, n_steps: int, op_kind: int,
               no_owner: int, cpu_kind: int) -> Chains:
    """kind_code: per Op, the kind of its own time; sync: per Op, a blocking call; op_kind / no_owner: the
    owner codes of a gap with / without an owning slice; cpu_kind: the kind of a gap no slice owns."""
    n = t.n_ops
    step = t.op_step
    by_step = np.argsort(step, kind="stable")
    step_lo = np.searchsorted(step[by_step], np.arange(n_steps + 1), side="left")
    # a slice's parent, where it is in the same step
    parent = t.op_parent
    safe = np.maximum(parent, 0)
    parent = np.where((parent >= 0) & (step[safe] == step), parent, -1)
    made = _Made(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                 np.empty(n, dtype=np.int64))
    parts = [_part(t, by_step[step_lo[a]:step_lo[min(a + PART, n_steps)]], a, min(PART, n_steps - a), parent,
                   kind_code, sync, made, (op_kind, no_owner, cpu_kind))
             for a in range(0, n_steps, PART)]
    return Chains(PART, parts, made.start_node, made.end_node, made.leaf_gap)


@dataclass(frozen=True, slots=True)
class _Made:
    start_node: np.ndarray
    end_node: np.ndarray
    leaf_gap: np.ndarray
    scratch: np.ndarray         # per Op, for inverting a part's order


def _part(t: TraceColumns, sub: np.ndarray, base: int, n_steps: int, parent: np.ndarray, kind_code: np.ndarray,
          sync: np.ndarray, made: _Made, codes: tuple[int, int, int]) -> _Part:
    """The steps [base, base + n_steps), whose slices are `sub` (by step, ascending ids within one)."""
    op_kind, no_owner, cpu_kind = codes
    n = len(sub)
    step = t.op_step
    # the slices by (step, thread), id order (start order) within a thread
    order = sub[np.lexsort((t.op_tid[sub], t.op_pid[sub], step[sub]))]
    s_o, pid, tid = step[order] - base, t.op_pid[order], t.op_tid[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (s_o[1:] != s_o[:-1]) | (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])
    group = np.cumsum(new) - 1                           # each (step, thread), per position in order
    n_groups = int(group[-1]) + 1 if n else 0
    # siblings that overlap: their thread does not nest, and the step is left to the per-step pass
    par = parent[order]
    key = np.where(par >= 0, par * max(n_groups, 1) + group, -1 - group)
    sib = np.argsort(key, kind="stable")
    i = order[sib]
    sib_ts = t.op_ts[i]
    same = key[sib][1:] == key[sib][:-1]
    overlap = same & (sib_ts[1:] < (sib_ts + t.op_dur[i])[:-1])
    ok = np.ones(n_steps, dtype=bool)
    ok[step[i[1:][overlap]] - base] = False
    # the marks, each thread's in time order; on a tie: ends before starts, the later-started slice's end
    # first, starts in start order
    ts, dur = t.op_ts[order], t.op_dur[order]
    has_end = dur > 0
    pos = np.arange(n)
    mark_at = np.concatenate([ts, (ts + dur)[has_end]])
    tie = np.concatenate([pos + n, -pos[has_end]])
    mark_group = np.concatenate([group, group[has_end]])
    morder = np.lexsort((tie, mark_at, mark_group))
    is_start = morder < n
    op = np.concatenate([order, order[has_end]])[morder]
    mark_at, mark_group = mark_at[morder], mark_group[morder]
    mark_step = np.concatenate([s_o, s_o[has_end]])[morder]
    bounds = np.arange(n_steps + 1)
    mark_lo = np.searchsorted(mark_step, bounds, side="left")
    node = np.arange(len(op)) - mark_lo[mark_step] + 2
    mark_of = np.empty(len(op), dtype=np.int64)        # each mark's place in time order: the starts', then the ends'
    mark_of[morder] = np.arange(len(op))
    node_of = node[mark_of]
    made.start_node[order] = node_of[:n]
    made.end_node[order] = node_of[:n]
    made.end_node[order[has_end]] = node_of[n:]
    head = np.ones(len(op), dtype=bool)
    head[1:] = mark_group[1:] != mark_group[:-1]
    last = np.concatenate((head[1:], np.ones(min(len(op), 1), dtype=bool)))  # a part may hold no slice
    thread_lo = np.searchsorted(s_o[new], bounds, side="left")
    # the gap after an instant: the slice that started there (if it lasts), else the parent of the slice
    # that ended (or the zero-length one that happened) when that parent is in the step
    go = ~last
    u_op, u_start = op[go], is_start[go]
    owner = np.where(u_start & (t.op_dur[u_op] > 0), u_op, parent[u_op])
    has = owner >= 0
    gap_kind = np.where(has, kind_code[np.maximum(owner, 0)], cpu_kind).astype(np.int8)
    gap_w = np.maximum(mark_at[1:][go[:-1]] - mark_at[go], 0.0)
    gap_lo = np.searchsorted(mark_step[go], bounds, side="left")
    # a sync call with nothing inside it: its start mark followed by its own end mark
    calls = sub[sync[sub]]
    made.scratch[order] = pos
    k = mark_of[made.scratch[calls]]
    inside = k < len(op) - 1
    calls, k = calls[inside], k[inside]
    leaf = go[k] & (op[k + 1] == calls) & ~is_start[k + 1]
    gap_at = np.cumsum(go) - 1
    made.leaf_gap[calls[leaf]] = gap_at[k[leaf]] - gap_lo[step[calls[leaf]] - base]
    return _Part(ok, mark_lo, mark_at, thread_lo, node[head], node[last], gap_lo, node[go], gap_w, gap_kind,
                 np.where(has, op_kind, no_owner).astype(np.int8), np.where(has, owner, -1), has)
