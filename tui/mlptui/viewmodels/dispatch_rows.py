"""The dispatch tree as the pane shows it: with or without Python frames, and indented so that a name
always keeps most of its column.

With Python frames hidden (as the profiler plugin's operator tree never had them), an op's children are
its children with every `python_function` child replaced by that frame's own shown children, so an op
hangs under its nearest op (or annotation) ancestor; nothing is dropped but the frames themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from mlptui.trace.model import PYTHON, Op

INDENT_FULL = 6           # levels indented two columns each; deeper levels take one column each
INDENT_SHARE = 0.4        # indentation never takes more than this share of the name column


def shown_children(ops: list[Op], node: int, hide_python: bool,
                   keep: Callable[[int], bool] | None = None) -> list[int]:
    """`node`'s children in the pane: Python frames replaced by their shown children when hidden."""
    return shown_nodes(ops, ops[node].children, hide_python, keep)


def shown_nodes(ops: list[Op], nodes: list[int], hide_python: bool,
                keep: Callable[[int], bool] | None = None) -> list[int]:
    """`nodes` (siblings in time order) as the pane shows them: a hidden frame gives way to what it holds;
    only those `keep` accepts (None: all, without a call per node: all steps' roots are tens of thousands)."""
    if not hide_python:
        return list(nodes) if keep is None else [n for n in nodes if keep(n)]
    out: list[int] = []
    stack = list(reversed(nodes))
    while stack:
        n = stack.pop()
        if keep is not None and not keep(n):
            continue
        if ops[n].cat == PYTHON:
            stack.extend(reversed(ops[n].children))
        else:
            out.append(n)
    return out


def shown_parent(ops: list[Op], node: int, hide_python: bool) -> int:
    """The row `node` hangs under: its parent, or with frames hidden its nearest ancestor that is no frame."""
    parent = ops[node].parent
    while hide_python and parent >= 0 and ops[parent].cat == PYTHON:
        parent = ops[parent].parent
    return parent


def shown_chain(ops: list[Op], node: int, hide_python: bool) -> list[int]:
    """`node` and its shown ancestors, root first."""
    chain = [node]
    parent = shown_parent(ops, node, hide_python)
    while parent >= 0:
        chain.append(parent)
        parent = shown_parent(ops, parent, hide_python)
    chain.reverse()
    return chain


def shown_self_us(ops: list[Op], node: int, hide_python: bool) -> float:
    """CPU time of `node` outside its shown children (its own self time while frames are shown)."""
    if not hide_python:
        return ops[node].self_us
    return max(0.0, ops[node].dur - sum(ops[c].dur for c in shown_children(ops, node, True)))


def indent_width(depth: int, name_width: int) -> int:
    """Columns of indentation for a row `depth` levels below the shallowest row on screen: two per level,
    one per level past INDENT_FULL, and never more than INDENT_SHARE of the name column."""
    full = min(depth, INDENT_FULL)
    return min(2 * full + (depth - full), int(name_width * INDENT_SHARE))


def breadcrumb(names: list[str], width: int) -> str:
    """The path `a › b › c` cut from the left to `width` columns, so the nearest ancestors stay."""
    text = " › ".join(names)
    if len(text) <= width:
        return text
    return "…" + text[len(text) - max(width - 1, 0):] if width > 1 else text[-width:] if width else ""
