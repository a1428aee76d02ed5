"""The CPU dispatch tree: per-thread op hierarchy, expanded lazily, rendered line by line.

Visible rows are two parallel lists (op id or thread marker, depth). Expanding a node splices its
children in; nothing walks the whole trace on a key press.

Names stay readable however deep the tree (a with_stack trace nests ops under dozens of Python frames):
rows are indented from the shallowest row on screen, compressed past a few levels and capped at a share
of the name column (mlptui.viewmodels.dispatch_rows); the header holds the path above the cursor; `H`
`L` slide the names sideways; `f` hides or shows the Python frames.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator

from mlptui.keys import TREE_KEYS
from mlptui.trace.model import ANNOTATION, CPU_OP, LAUNCH_CATS, PYTHON, Op, Trace
from mlptui.viewmodels import fmt
from mlptui.viewmodels.dispatch_rows import (
    breadcrumb,
    indent_width,
    shown_chain,
    shown_children,
    shown_nodes,
    shown_self_us,
)
from mlptui.widgets.lines import Cell, Column, Frame, LineList

AUTO_EXPAND_ROWS = 400      # a scope whose whole tree is at most this many rows opens fully expanded
EXPAND_ALL_CAP = 20_000     # `e` never splices in more rows than this at once
SIDE_STEP = 8               # columns `H` `L` slide the names by


class OpTree(LineList):
    BINDINGS = [*TREE_KEYS]
    MEASURE = False
    SCOPES_KEPT = 32

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            [Column("CPU op", 0, min_width=40), Column("total", 9, ">", drop=2), Column("self", 9, ">", drop=3),
             Column("GPU", 9, ">"), Column("input shapes", 24, drop=4)],
            id=id,
        )
        self.trace: Trace | None = None
        # The rows, as typed arrays: lists of a whole trace's ids would be walked by every full collection
        # of the garbage collector (a pause between two keys on a big trace).
        self.ids: array[int] = array("q")         # op id, or -1 - thread index for a thread's heading row
        self.depths: array[int] = array("q")
        self.expanded: set[int] = set()
        # a scope's first rows, kept: coming back to a step restores them instead of walking its ops again
        self._opened: OrderedDict[tuple[object, ...], tuple[array[int], array[int], frozenset[int], int]] = (
            OrderedDict())
        self._root_ts: list[list[float]] = []
        self._root_longest: list[float] = []
        self._scope: tuple[float, float] | None = None
        self.hide_python = False
        self.name_shift = 0              # columns the names are slid left by (`L`)
        self._base = (-1, -1, 0)         # (first row on screen, page) -> shallowest depth on screen
        self._drawn_for: tuple[int, int, int] = (0, 0, 0)    # (base depth, name width, shift) of cached rows
        self._self_us: dict[int, float] = {}
        self._ops: list[Op] = []         # trace.ops, looked up once: the scope walks call it per child

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace
        self._ops = trace.ops
        self._opened.clear()
        self._root_ts = [[trace.ops[r].ts for r in th.roots] for th in trace.threads]
        self._root_longest = [max((trace.ops[r].dur for r in th.roots), default=0.0) for th in trace.threads]

    def _overlaps(self, op_id: int) -> bool:
        """In the scope's window: overlapping it (a Python frame that starts before the step and ends
        after it is in), or a zero-length slice at an instant inside it."""
        if self._scope is None:
            return True
        start, end = self._scope
        op = self._ops[op_id]
        return op.ts < end - 1e-3 and (op.end > start + 1e-3 or op.ts >= start - 1e-3)

    def _keep(self) -> Callable[[int], bool] | None:
        """The filter of the rows in scope: none for every step."""
        return None if self._scope is None else self._overlaps

    def _loaded(self) -> Trace:
        """The trace: there are rows to act on only once set_trace has run."""
        assert self.trace is not None, "OpTree used before set_trace"
        return self.trace

    # -- scope -----------------------------------------------------------------------------
    def show_scope(self, start: float | None, end: float | None, focus: int = -1) -> None:
        """Show the slices that overlap [start, end) (everything when None), by true containment: roots and,
        as they are expanded, children; auto-expanded if small."""
        trace = self.trace
        if trace is None:
            return
        key = self._scope_key(start, end, focus)
        self._scope = key[0]
        kept = self._opened.get(key)
        if kept is None:
            kept = self._open_scope(key, focus)
        else:
            self._opened.move_to_end(key)
        self.ids, self.depths, self.expanded = array("q", kept[0]), array("q", kept[1]), set(kept[2])
        self.reset_rows(kept[3])

    def _scope_key(self, start: float | None, end: float | None, focus: int) -> tuple[tuple[float, float] | None, int, bool]:
        """How a scope's walk is kept: its span (None: everything), the op it opens to, Python frames shown."""
        return (None if start is None or end is None else (start, end)), focus, self.hide_python

    def prepare_scope(self, start: float | None, end: float | None, focus: int = -1) -> None:
        """Walk a scope's first rows ahead (the step a key is likely to show next) and keep them for
        show_scope; the rows shown are left as they are."""
        if self.trace is None:
            return
        key = self._scope_key(start, end, focus)
        if key in self._opened:
            return
        shown = (self._scope, self.ids, self.depths, self.expanded)
        try:
            self._scope = key[0]
            self._open_scope(key, focus)
        finally:
            self._scope, self.ids, self.depths, self.expanded = shown

    def roots_in(self, start: float | None, end: float | None) -> int:
        """How many roots start in [start, end) (an upper bound of the rows a scope's walk lists first);
        every root when None."""
        if start is None or end is None:
            return sum(len(ts) for ts in self._root_ts)
        return sum(bisect_left(ts, end - 1e-3) - bisect_left(ts, start - self._root_longest[t] - 1e-3)
                   for t, ts in enumerate(self._root_ts))

    def _open_scope(self, key: tuple[object, ...], focus: int) -> tuple[array[int], array[int], frozenset[int], int]:
        """The first rows of the scope set in `_scope` (roots, auto-expanded), and the cursor's row, kept.
        Works in `ids`, `depths` and `expanded`, which the caller sets afterwards."""
        trace = self._loaded()
        start, end = self._scope if self._scope is not None else (None, None)
        ids: list[int] = []
        depths: list[int] = []
        for t, thread in enumerate(trace.threads):
            if start is None or end is None:
                roots = thread.roots
            else:
                ts = self._root_ts[t]
                lo = bisect_left(ts, start - self._root_longest[t] - 1e-3)
                roots = [r for r in thread.roots[lo: bisect_left(ts, end - 1e-3)] if self._overlaps(r)]
            roots = shown_nodes(trace.ops, roots, self.hide_python, self._keep())
            if not roots:
                continue
            if len(trace.threads) > 1:
                ids.append(-1 - t)
                depths.append(0)
            base = 1 if len(trace.threads) > 1 else 0
            ids.extend(roots)
            depths.extend([base] * len(roots))
        self.ids, self.depths = array("q", ids), array("q", depths)
        self.expanded = set()
        at = 0
        if self._subtree_rows(ids, AUTO_EXPAND_ROWS) <= AUTO_EXPAND_ROWS:
            self._expand_all_from(0, len(ids), AUTO_EXPAND_ROWS)
        elif focus >= 0 and self._open_to(focus):
            # `focus` (the step's annotation) sits inside Python frames: open the way to it, then below it
            at = self.ids.index(focus)
            self._expand_all_from(at, at + 1, AUTO_EXPAND_ROWS)
        else:
            self._expand_all_from(0, min(len(ids), 1), 64)
        # the cursor starts on the first real op (aten::linear), not on the step annotation
        ops = trace.ops
        first = next((i for i, n in enumerate(self.ids[at:at + 256], at) if n >= 0 and ops[n].cat == CPU_OP), at)
        kept = self._opened[key] = (self.ids, self.depths, frozenset(self.expanded), first)
        if len(self._opened) > self.SCOPES_KEPT:
            self._opened.popitem(last=False)
        return kept

    def first_op(self, start: float | None, end: float | None, focus: int = -1) -> int:
        """The op the cursor starts on in a scope walked before (-1: not walked, or no op)."""
        kept = self._opened.get(self._scope_key(start, end, focus))
        if kept is None or not len(kept[0]):
            return -1
        node = kept[0][min(kept[3], len(kept[0]) - 1)]
        return node if node >= 0 else -1

    def _open_to(self, op_id: int) -> bool:
        """Expand the ancestors of `op_id` so that it has a row; False when it is not in the tree."""
        chain = shown_chain(self._loaded().ops, op_id, self.hide_python)
        if chain[0] not in self.ids:
            return False
        index = self.ids.index(chain[0])
        for ancestor in chain[1:]:
            if self.ids[index] not in self.expanded:
                ids, depths = self._children_rows(self.ids[index], self.depths[index])
                self.ids[index + 1: index + 1] = array("q", ids)
                self.depths[index + 1: index + 1] = array("q", depths)
                self.expanded.add(self.ids[index])
            try:
                index = self.ids.index(ancestor, index + 1, self._subtree_end(index))
            except ValueError:
                return False
        return True

    def _subtree_rows(self, roots: list[int], cap: int) -> int:
        ops = self._loaded().ops
        if len(roots) - len(self._loaded().threads) > cap:     # more roots than the cap (thread rows aside)
            return cap + 1
        keep = self._keep()
        n, stack = 0, [r for r in roots if r >= 0]
        while stack and n <= cap:
            op = stack.pop()
            n += 1
            stack.extend(shown_children(ops, op, self.hide_python, keep))
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
        base, width, shift = self._drawn_for
        name = (" " * indent_width(max(0, depth - base), width) + glyph + op.name)[shift:]
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
        return [(name, tone), fmt.us(op.dur), fmt.us(self._shown_self(node)), gpu, shapes]

    def frame_extra(self) -> Hashable:
        return self._drawn_for

    def row_key(self, index: int) -> Hashable:
        # the cells of a row: its op, its depth, whether it is open, Python frames shown or not (the
        # indentation basis is the frame's, `frame_extra`)
        node = self.ids[index]
        return node, self.depths[index], node in self.expanded, self.hide_python

    def _shown_self(self, node: int) -> float:
        cached = self._self_us.get(node)
        if cached is None:
            cached = self._self_us[node] = shown_self_us(self._loaded().ops, node, self.hide_python)
        return cached

    def header_cells(self) -> list[str]:
        """The name column's title is the path above the cursor (the rows on screen may start deep)."""
        heads = super().header_cells()
        if not self.ids or self.trace is None:
            return heads
        node = self.ids[min(self.cursor, len(self.ids) - 1)]
        if node >= 0:
            ops = self.trace.ops
            above = [ops[n].name for n in shown_chain(ops, node, self.hide_python)[:-1]]
            if above:
                laid_out = self._layout[1]      # the widths of the last layout (none before the first)
                width = laid_out[0] if laid_out else 40
                heads[0] = breadcrumb(above, max(width, 8) - 2) + " ›"
        return heads

    def _base_depth(self) -> int:
        """The shallowest depth among the rows on screen: indentation counts from it."""
        top, page = round(self.scroll_offset.y), self._page()
        if self._base[:2] != (top, page):
            self._base = (top, page, min(self.depths[top: top + page], default=0))
        return self._base[2]

    def _forget(self) -> None:
        self._base = (-1, -1, 0)        # rows came or went: the shallowest row on screen is looked up again
        super()._forget()

    def _frame_geometry(self) -> Frame:
        # the rows' indentation depends on the rows on screen, the name column's width and the slide
        widths = self._layout_widths()
        drawn_for = (self._base_depth(), widths[0] if widths else 0, self.name_shift)
        if drawn_for != self._drawn_for:
            self._drawn_for = drawn_for
            super()._forget()
        return super()._frame_geometry()

    def current_op(self) -> int:
        if not self.ids:
            return -1
        node = self.ids[self.cursor]
        return node if node >= 0 else -1

    # -- expansion ---------------------------------------------------------------------------
    def _children_rows(self, node: int, depth: int) -> tuple[list[int], list[int]]:
        children = shown_children(self._ops, node, self.hide_python, self._keep())
        return children, [depth + 1] * len(children)

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
        self.ids[index + 1: index + 1] = array("q", ids)
        self.depths[index + 1: index + 1] = array("q", depths)
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
            if node >= 0 and node not in self.expanded and self._ops[node].children:
                ids, depths = self._children_rows(node, self.depths[index])
                self.ids[index + 1: index + 1] = array("q", ids)
                self.depths[index + 1: index + 1] = array("q", depths)
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
        ops = self._loaded().ops
        while self.hide_python and op_id >= 0 and ops[op_id].cat == PYTHON:
            op_id = ops[op_id].parent        # a hidden frame: its nearest shown ancestor stands for it
        if op_id < 0:
            return False
        chain = shown_chain(self._loaded().ops, op_id, self.hide_python)
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
            if needle in op.name.lower() and not (self.hide_python and op.cat == PYTHON):
                yield node
            stack.extend(reversed(op.children))

    # -- Python frames, sideways sliding -------------------------------------------------------
    def action_toggle_python(self) -> None:
        """Hide or show the Python frames; the cursor stays on its op (a frame's nearest op when hidden)."""
        trace = self.trace
        if trace is None:
            return
        node = self.current_op()
        self.hide_python = not self.hide_python
        self._self_us.clear()
        ops = trace.ops
        if self.hide_python:
            while node >= 0 and ops[node].cat == PYTHON:
                node = ops[node].parent
        scope = self._scope
        self.show_scope(*(scope if scope is not None else (None, None)))
        if node >= 0:
            self.reveal(node)
        self.app.notify("Python frames hidden: ops under their nearest op" if self.hide_python
                        else "Python frames shown", timeout=1.5)

    def action_slide_right(self) -> None:
        self.name_shift += SIDE_STEP
        self.refresh()

    def action_slide_left(self) -> None:
        self.name_shift = max(0, self.name_shift - SIDE_STEP)
        self.refresh()
