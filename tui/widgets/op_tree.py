"""The CPU dispatch tree: per-thread op hierarchy, expanded lazily, rendered line by line.

Visible rows are two parallel lists (op id or thread marker, depth). Expanding a node splices its
children in; nothing walks the whole trace on a key press.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from mlptui.keys import TREE_KEYS
from mlptui.trace.model import ANNOTATION, CPU_OP, LAUNCH_CATS, PYTHON, Trace
from mlptui.viewmodels import fmt
from mlptui.widgets.lines import Cell, Column, LineList

AUTO_EXPAND_ROWS = 400      # a scope whose whole tree is at most this many rows opens fully expanded
EXPAND_ALL_CAP = 20_000     # `e` never splices in more rows than this at once


class OpTree(LineList):
    BINDINGS = [*TREE_KEYS]
    MEASURE = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            [Column("CPU op", 0, min_width=26), Column("total", 9, ">", drop=2), Column("self", 9, ">", drop=3),
             Column("GPU", 9, ">"), Column("input shapes", 24, drop=4)],
            id=id,
        )
        self.trace: Trace | None = None
        self.ids: list[int] = []         # op id, or -1 - thread index for a thread's heading row
        self.depths: list[int] = []
        self.expanded: set[int] = set()
        self._root_ts: list[list[float]] = []

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace
        self._root_ts = [[trace.ops[r].ts for r in th.roots] for th in trace.threads]

    def _loaded(self) -> Trace:
        """The trace: there are rows to act on only once set_trace has run."""
        assert self.trace is not None, "OpTree used before set_trace"
        return self.trace

    # -- scope -----------------------------------------------------------------------------
    def show_scope(self, start: float | None, end: float | None) -> None:
        """Show the roots that start in [start, end) (everything when None), auto-expanded if small."""
        trace = self.trace
        if trace is None:
            return
        ids: list[int] = []
        depths: list[int] = []
        for t, thread in enumerate(trace.threads):
            if start is None or end is None:
                roots = thread.roots
            else:
                ts = self._root_ts[t]
                roots = thread.roots[bisect_left(ts, start - 1e-3): bisect_left(ts, end - 1e-3)]
            if not roots:
                continue
            if len(trace.threads) > 1:
                ids.append(-1 - t)
                depths.append(0)
            base = 1 if len(trace.threads) > 1 else 0
            ids.extend(roots)
            depths.extend([base] * len(roots))
        self.ids, self.depths = ids, depths
        self.expanded = set()
        if self._subtree_rows(ids, AUTO_EXPAND_ROWS) <= AUTO_EXPAND_ROWS:
            self._expand_all_from(0, len(ids), AUTO_EXPAND_ROWS)
        else:
            self._expand_all_from(0, min(len(ids), 1), 64)
        # the cursor starts on the first real op (aten::linear), not on the step annotation
        ops = trace.ops
        first = next((i for i, n in enumerate(self.ids[:256]) if n >= 0 and ops[n].cat == CPU_OP), 0)
        self.reset_rows(first)

    def _subtree_rows(self, roots: list[int], cap: int) -> int:
        ops = self._loaded().ops
        n, stack = 0, [r for r in roots if r >= 0]
        while stack and n <= cap:
            op = stack.pop()
            n += 1
            stack.extend(ops[op].children)
        return n

    # -- rows --------------------------------------------------------------------------------
    def row_count(self) -> int:
        return len(self.ids)

    def row_cells(self, index: int) -> list[Cell]:
        trace, node, depth = self._loaded(), self.ids[index], self.depths[index]
        if node < 0:
            thread = trace.threads[-1 - node]
            return [(f"{thread.name}  (pid {thread.pid})", "header"), "", "", "", ""]
        op = trace.ops[node]
        glyph = ("▾ " if node in self.expanded else "▸ ") if op.children else "  "
        name = "  " * depth + glyph + op.name
        tone = "base"
        if op.cat in LAUNCH_CATS:
            tone = "warn" if op.gpu else "dim"
        gpu: Cell
        if op.gpu_us > 0:
            gpu = fmt.us(op.gpu_us)
        elif op.cat in (CPU_OP, ANNOTATION, PYTHON):
            gpu = ("no GPU", "dim")
        else:
            gpu = ""
        shapes = fmt.dims(trace.op_args(node).get("Input Dims")) if op.cat == CPU_OP else ""
        return [(name, tone), fmt.us(op.dur), fmt.us(op.self_us), gpu, shapes]

    def current_op(self) -> int:
        if not self.ids:
            return -1
        node = self.ids[self.cursor]
        return node if node >= 0 else -1

    # -- expansion ---------------------------------------------------------------------------
    def _children_rows(self, node: int, depth: int) -> tuple[list[int], list[int]]:
        children = self._loaded().ops[node].children
        return list(children), [depth + 1] * len(children)

    def _subtree_end(self, index: int) -> int:
        depth, end = self.depths[index], index + 1
        while end < len(self.ids) and self.depths[end] > depth:
            end += 1
        return end

    def expand_row(self, index: int) -> None:
        node = self.ids[index]
        if node < 0 or node in self.expanded or not self._loaded().ops[node].children:
            return
        ids, depths = self._children_rows(node, self.depths[index])
        self.ids[index + 1: index + 1] = ids
        self.depths[index + 1: index + 1] = depths
        self.expanded.add(node)
        self.rows_changed()

    def collapse_row(self, index: int) -> None:
        node = self.ids[index]
        if node not in self.expanded:
            return
        end = self._subtree_end(index)
        for other in self.ids[index + 1: end]:
            self.expanded.discard(other)
        del self.ids[index + 1: end]
        del self.depths[index + 1: end]
        self.expanded.discard(node)
        self.rows_changed()

    def _expand_all_from(self, start: int, stop: int, cap: int) -> int:
        """Expand every node in rows [start, stop) and below, adding at most `cap` rows."""
        added, index = 0, start
        while index < stop + added and added < cap:
            node = self.ids[index]
            if node >= 0 and node not in self.expanded and self._loaded().ops[node].children:
                ids, depths = self._children_rows(node, self.depths[index])
                self.ids[index + 1: index + 1] = ids
                self.depths[index + 1: index + 1] = depths
                self.expanded.add(node)
                added += len(ids)
            index += 1
        return added

    def action_expand(self) -> None:
        if self.ids:
            node = self.ids[self.cursor]
            if node >= 0 and node in self.expanded and self._loaded().ops[node].children:
                self.move_cursor(self.cursor + 1)
            else:
                self.expand_row(self.cursor)

    def action_collapse(self) -> None:
        if not self.ids:
            return
        node = self.ids[self.cursor]
        if node >= 0 and node in self.expanded:
            self.collapse_row(self.cursor)
            return
        depth = self.depths[self.cursor]
        for index in range(self.cursor - 1, -1, -1):
            if self.depths[index] < depth:
                self.move_cursor(index)
                return

    def action_expand_all(self) -> None:
        if self.ids:
            self._expand_all_from(self.cursor, self._subtree_end(self.cursor), EXPAND_ALL_CAP)
            self.rows_changed()

    def action_select(self) -> None:
        if not self.ids:
            return
        node = self.ids[self.cursor]
        if node >= 0 and node in self.expanded:
            self.collapse_row(self.cursor)
        else:
            self.expand_row(self.cursor)
        super().action_select()

    # -- find an op: expand its ancestors and put the cursor on it ---------------------------
    def reveal(self, op_id: int) -> bool:
        trace = self._loaded()
        chain = []
        node = op_id
        while node != -1:
            chain.append(node)
            node = trace.ops[node].parent
        chain.reverse()
        try:
            index = self.ids.index(chain[0])
        except ValueError:
            return False
        for ancestor in chain[1:]:
            self.expand_row(index)
            end = self._subtree_end(index)
            try:
                index = self.ids.index(ancestor, index + 1, end)
            except ValueError:
                return False
        self.move_cursor(index, center=True)
        return True

    def search_ops(self, needle: str) -> Iterator[int]:
        """Op ids in scope whose name contains `needle` (case-insensitive), in tree order."""
        needle = needle.lower()
        ops = self._loaded().ops
        roots = [n for n in self.ids if n >= 0 and ops[n].parent == -1]
        stack = list(reversed(roots))
        while stack:
            node = stack.pop()
            op = ops[node]
            if needle in op.name.lower():
                yield node
            stack.extend(reversed(op.children))
