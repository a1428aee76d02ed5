"""The `dispatch` section of `summary --json`: every leaf path of the steps (of the whole trace without
steps), with the kernels its last op launched ([] for none), plus the paths that end at an op that
launched kernels itself.

A path is the op and annotation names from the outermost op below `ProfilerStep#N` down to the last op;
Python frames and runtime calls are skipped (a kernel launched under them counts for the nearest op or
annotation above). Rows are keyed by (path, kernel names) in the order of their first end (by start
time, then id); count is how many times that path ran with those kernels, gpu_us their GPU time over all
of them. Computed on the columns (mlptui.trace.analysis.events.tables), one tree level at a time.
"""

from __future__ import annotations

import numpy as np

from mlptui.trace.analysis.events.tables import TraceColumns, tables, unique_ids
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, Trace
from mlptui.trace.reports.summary import DispatchPath


def dispatch_paths(trace: Trace) -> list[DispatchPath]:
    t = tables(trace)
    n = t.n_ops
    step_op = np.zeros(n, dtype=bool)
    step_op[[s.op for s in trace.steps]] = True
    on_path = t.op_is((CPU_OP, ANNOTATION)) & ~step_op
    owner, path_id, paths = _owners_and_paths(t, on_path, step_op)
    up = np.where(t.op_parent >= 0, owner[np.maximum(t.op_parent, 0)], -1)
    has_child = np.zeros(n, dtype=bool)
    has_child[up[on_path & (up >= 0)]] = True
    in_scope = t.op_step >= 0 if trace.steps else np.ones(n, dtype=bool)

    kernels = np.flatnonzero(t.gpu_is((KERNEL,)) & (t.gpu_op >= 0))
    launcher = t.gpu_op[kernels]
    end_of = np.where(owner[launcher] >= 0, owner[launcher], launcher)
    launched = np.zeros(n, dtype=bool)
    launched[end_of] = True
    ends = np.flatnonzero((on_path & ~has_child & in_scope) | (launched & (has_child | ~on_path) & in_scope))
    ends = ends[np.lexsort((ends, t.op_ts[ends]))]          # by (start, id)

    # Each end's kernels by (start, id): one id per distinct sequence of kernel names (a single kernel's
    # is its name's id), and the sum of their times in that order.
    by_end = np.lexsort((kernels, t.gpu_ts[kernels], end_of))
    k_end, k_ids = end_of[by_end], kernels[by_end]
    firsts = np.flatnonzero(np.concatenate(([True], k_end[1:] != k_end[:-1]))) if len(k_end) else k_end
    sizes = np.diff(np.append(firsts, len(k_end)))
    n_strings = len(t.strings)
    seq = np.where(sizes == 1, t.gpu_name[k_ids[firsts]], -1)
    us = t.gpu_dur[k_ids[firsts]].tolist()
    seqs: dict[tuple[int, ...], int] = {}
    k_names, k_durs = t.gpu_name[k_ids].tolist(), t.gpu_dur[k_ids].tolist()
    for g, a, b in zip(np.flatnonzero(sizes > 1).tolist(), firsts[sizes > 1].tolist(),
                       (firsts + sizes)[sizes > 1].tolist(), strict=True):
        seq[g] = n_strings + seqs.setdefault(tuple(k_names[a:b]), len(seqs))
        us[g] = sum(k_durs[a:b])              # as sum() adds them
    seq_of_end = np.full(n, -1, dtype=np.int64)
    us_of_end = np.zeros(n)
    seq_of_end[k_end[firsts]] = seq
    us_of_end[k_end[firsts]] = us

    # Each end's path: a path op's own, else the one-name path of its name (made when no op has it).
    end_path = path_id[ends]
    bare = end_path < 0
    single = {p[0]: k for k, p in enumerate(paths) if len(p) == 1}
    bare_names, bare_at = unique_ids(t.op_name[ends[bare]], return_inverse=True)
    bare_ids = []
    for name in bare_names.tolist():
        if name not in single:
            single[name] = _append(paths, (name,))
        bare_ids.append(single[name])
    end_path[bare] = np.asarray(bare_ids, dtype=np.int64)[bare_at.reshape(-1)]

    key = end_path * (n_strings + len(seqs) + 1) + seq_of_end[ends] + 1
    keys, first, inverse = unique_ids(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(keys)).tolist()
    totals = np.bincount(inverse, weights=us_of_end[ends], minlength=len(keys)).astype(np.float64).tolist()
    names = t.strings
    seq_names = [tuple(names[i] for i in s) for s in seqs]
    rows = []
    for k in np.argsort(first, kind="stable").tolist():            # rows by their first end
        p, q = divmod(int(keys[k]), n_strings + len(seqs) + 1)
        kernel_names = [] if q == 0 else [names[q - 1]] if q <= n_strings else list(seq_names[q - 1 - n_strings])
        rows.append(DispatchPath(path=[names[i] for i in paths[p]], count=counts[k], gpu_kernels=kernel_names,
                                 gpu_us=round(totals[k], 3)))
    return rows


def _append(paths: list[tuple[int, ...]], path: tuple[int, ...]) -> int:
    paths.append(path)
    return len(paths) - 1


def _owners_and_paths(t: TraceColumns, on_path: np.ndarray,
                      step_op: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[tuple[int, ...]]]:
    """Per op: the nearest path op at or above it (-1 below a step's own op or none), and its path's id;
    paths as name-id tuples. Parents sit one level above their children, so one level at a time."""
    n = t.n_ops
    owner = np.full(n, -1, dtype=np.int64)
    path_id = np.full(n, -1, dtype=np.int64)
    paths: list[tuple[int, ...]] = []
    known: dict[tuple[int, int], int] = {}
    by_depth = np.argsort(t.op_depth, kind="stable")
    depth_sorted = t.op_depth[by_depth]
    cuts = np.flatnonzero(np.diff(depth_sorted)) + 1
    n_strings = len(t.strings) + 1
    for level in np.split(by_depth, cuts) if n else []:
        parent = t.op_parent[level]
        up = np.where(parent >= 0, owner[np.maximum(parent, 0)], -1)
        here = on_path[level]
        owner[level] = np.where(here, level, np.where(step_op[level], -1, up))
        at = level[here]
        if not len(at):
            continue
        above = np.where(up[here] >= 0, path_id[np.maximum(up[here], 0)], -1)
        keys, first, inverse = unique_ids((above + 1) * n_strings + t.op_name[at], return_index=True,
                                         return_inverse=True)
        ids = []
        for a, name in zip(above[first].tolist(), t.op_name[at][first].tolist(), strict=True):
            pid = known.get((a, name))
            if pid is None:
                pid = known[(a, name)] = len(paths)
                paths.append((paths[a] if a >= 0 else ()) + (name,))
            ids.append(pid)
        path_id[at] = np.asarray(ids, dtype=np.int64)[inverse.reshape(-1)]
    return owner, path_id, paths
