"""The dispatch subtree below one op, read from the `dispatch` section of `summary --json` (every leaf
path of the steps with the kernels its last op launched): each path through the op contributes the part
from the op down, and the parts merge into one tree. No figure is recomputed here: counts, kernels and
GPU µs are the section's, summed up the tree."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlptui.api.rows import DispatchRow
from mlptui.base.errors import MlptuiError
from mlptui.trace.reports.summary import DispatchPath

_SPLIT = re.compile(r"\s*(?:→|->|>)\s*")


def parse_op(op_or_path: str | list[str]) -> list[str]:
    """An op name, or a path as a list or written "a → b" (also "a > b", "a -> b")."""
    names = [p.strip() for p in op_or_path] if isinstance(op_or_path, list) else _SPLIT.split(op_or_path.strip())
    if not names or not all(names):
        raise MlptuiError(f"no op named: {op_or_path!r} (give an op name, or a path such as 'aten::linear → aten::addmm')")
    return names


@dataclass
class _Node:
    name: str
    count: int = 0
    gpu_kernels: list[str] = field(default_factory=list)
    gpu_us: float = 0.0
    children: dict[str, _Node] = field(default_factory=dict)


def _find(path: list[str], want: list[str]) -> int:
    """Where `want` ends inside `path` (its first occurrence), or -1."""
    n = len(want)
    for i in range(len(path) - n + 1):
        if path[i:i + n] == want:
            return i + n - 1
    return -1


def subtree(paths: list[DispatchPath], want: list[str],
            depth: int | None) -> tuple[list[list[str]], list[DispatchRow]]:
    """(the contexts above the op, the subtree's rows depth first) from the `dispatch` section's rows."""
    if depth is not None and depth < 0:
        raise MlptuiError(f"depth must be 0 or more, not {depth}")
    root = _Node(want[-1])
    contexts: list[list[str]] = []
    for row in paths:
        at = _find(row.path, want)
        if at < 0:
            continue
        above = row.path[:at + 1 - len(want)]
        if above not in contexts:
            contexts.append(above)
        node = root
        node.gpu_us += row.gpu_us
        for name in row.path[at + 1:]:
            node = node.children.setdefault(name, _Node(name))
            node.gpu_us += row.gpu_us
        node.count += row.count
        for k in row.gpu_kernels:
            if k not in node.gpu_kernels:
                node.gpu_kernels.append(k)
    if not contexts:
        raise MlptuiError(f"no op {' → '.join(want)} in the steps' dispatch paths")
    rows: list[DispatchRow] = []
    _walk(root, [root.name], 0, depth, rows)
    return contexts, rows


def _walk(node: _Node, path: list[str], level: int, depth: int | None, rows: list[DispatchRow]) -> None:
    rows.append(DispatchRow(depth=level, name=node.name, path=path, count=node.count,
                            gpu_kernels=list(node.gpu_kernels), gpu_us=round(node.gpu_us, 3)))
    if depth is not None and level >= depth:
        return
    for child in node.children.values():
        _walk(child, [*path, child.name], level + 1, depth, rows)
