"""The CPU half of a diff: dispatch chains of launched GPU work and ops found on one side only."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from mlptui.trace.model import ANNOTATION, CPU_OP, Trace
from mlptui.trace.parse.index import STEP_PREFIX
from mlptui.trace.reports.diff import CountChange, CpuOpsDiff
from mlptui.trace.store import unique_ids

# Names that carry a per-compilation hash: compared without it so two compiled runs line up.
_HASHED = re.compile(r"(## Call CompiledFxGraph )\w+( ##)")


def op_key(name: str) -> str:
    """The name two traces are compared on (hashes of compiled graphs removed)."""
    return _HASHED.sub(r"\1…\2", name)


def launch_chain(trace: Trace, gpu_id: int, cache: dict[int, tuple[str, ...]] | None = None) -> list[str]:
    """CPU op names root -> leaf that led to GPU op `gpu_id`, ending with the launch call itself.

    The ProfilerStep annotation at the root is left out: every chain of a step starts with it.
    `cache` (op id -> its chain) saves the walk for the many kernels that one op launches.
    """
    c = trace.columns
    op, launch = int(c.gpu_op[gpu_id]), int(c.gpu_launch[gpu_id])
    names = list(op_chain(trace, op, cache)) if op >= 0 else []
    if launch >= 0:
        names.append(c.strings[c.op_name[launch]])
    return names


def op_chain(trace: Trace, op: int, cache: dict[int, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """Names of `op` and its ancestors, root first, without the ProfilerStep annotation."""
    if cache is not None and op in cache:
        return cache[op]
    names: list[str] = []
    c = trace.columns
    cur = op
    while cur >= 0:
        name = c.strings[c.op_name[cur]]
        if not name.startswith("ProfilerStep#"):      # an annotation, or an op in torch <= 1.9
            names.append(name)
        cur = int(c.op_parent[cur])
    names.reverse()
    chain = tuple(names)
    if cache is not None:
        cache[op] = chain
    return chain


def step_op_counts(trace: Trace, step: int | None) -> Counter[str]:
    """How many times each CPU op / annotation name occurs in `step` (None: the whole trace),
    keyed by op_key, in order of first appearance."""
    c = trace.columns
    rows = c.op_is((CPU_OP, ANNOTATION))
    if step is not None:
        rows = rows & (c.op_step == step)
    # Counted by name id, then keyed once per distinct name in order of first appearance: a key's first
    # name is where the key first appears, so the counter's order is the ops' order.
    names, first, per_name = unique_ids(c.op_name[rows], return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    counts: Counter[str] = Counter()
    for name_id, n in zip(names[order].tolist(), per_name[order].tolist(), strict=True):
        name = c.strings[name_id]
        if not name.startswith(STEP_PREFIX):          # as is_cpu_op: the ProfilerStep#N marks left out
            counts[op_key(name)] += n
    return counts


@dataclass
class CpuDiff:
    removed_ops: list[str] = field(default_factory=list)    # in A's step only, A's order
    added_ops: list[str] = field(default_factory=list)      # in B's step only, B's order
    count_changes: list[tuple[str, int, int]] = field(default_factory=list)  # in both, other counts
    # Every name's count in each side's step (by op_key): the screen shows how often a one-sided op ran.
    a_counts: dict[str, int] = field(default_factory=dict, repr=False)
    b_counts: dict[str, int] = field(default_factory=dict, repr=False)

    def swapped(self) -> CpuDiff:
        return CpuDiff(list(self.added_ops), list(self.removed_ops),
                       [(n, cb, ca) for n, ca, cb in self.count_changes], self.b_counts, self.a_counts)

    def report(self) -> CpuOpsDiff:
        return CpuOpsDiff(removed_ops=list(self.removed_ops), added_ops=list(self.added_ops),
                          count_changes=[CountChange(name=n, a=ca, b=cb) for n, ca, cb in self.count_changes])


def cpu_diff(a: Counter[str], b: Counter[str]) -> CpuDiff:
    return CpuDiff(
        removed_ops=[n for n in a if n not in b],
        added_ops=[n for n in b if n not in a],
        count_changes=[(n, a[n], b[n]) for n in a if n in b and a[n] != b[n]],
        a_counts=dict(a),
        b_counts=dict(b),
    )
