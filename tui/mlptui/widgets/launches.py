"""Launches & occupancy queries: for each launching CPU op, the runtime/driver calls it made, in order.

"A linear is query + launch, a pointwise op is just launch" on Ampere; memset + cuLaunchKernelEx on
Hopper; cuLaunchKernel for Triton; cudaGraphLaunch for graphs. The rows come from
`mlptui.trace.analysis.events.launches.launches_by_op`, computed once per trace and grouped by step.
"""

from __future__ import annotations

from collections.abc import Hashable

from mlptui.keys import TABLE_KEYS
from mlptui.trace.analysis.events.launches import LaunchCallStat, OpLaunches
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.viewmodels import fmt
from mlptui.widgets.lines import Cell, Column, LineList, SideScrolling


def call_chain(trace: Trace, calls: list[int]) -> str:
    """`cudaMemsetAsync 3.10 µs → cuLaunchKernelEx 10.70 µs`, repeated calls folded as `×N`."""
    parts: list[str] = []
    last, run, run_us = None, 0, 0.0
    for call in calls + [-1]:
        name = trace.ops[call].name if call >= 0 else None
        if name == last:
            run += 1
            run_us += trace.ops[call].dur
            continue
        if last is not None:
            parts.append(f"{last}{f' ×{run}' if run > 1 else ''} {fmt.us(run_us)}")
        if call >= 0:
            last, run, run_us = name, 1, trace.ops[call].dur
    return " → ".join(parts)


class LaunchTable(SideScrolling, LineList):
    BINDINGS = [*TABLE_KEYS]
    MEASURE = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            [Column("launching op", 22), Column("runtime / driver calls, in order", 0, min_width=30),
             Column("kernels launched", 30, drop=2), Column("call time", 9, ">", drop=1)],
            id=id,
        )
        self.trace: Trace | None = None
        self.rows: list[OpLaunches] = []
        self.raw = False

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace

    def _loaded(self) -> Trace:
        """The trace: there are rows only once set_trace has run."""
        assert self.trace is not None, "LaunchTable used before set_trace"
        return self.trace

    def show(self, rows: list[OpLaunches]) -> None:
        self.rows = rows
        self.marked = set()
        self.reset_rows(0)

    def row_count(self) -> int:
        return len(self.rows)

    def row_cells(self, index: int) -> list[Cell]:
        return self._cells_of(self.rows[index])

    def prepare(self, rows: list[OpLaunches], count: int) -> None:
        """Draw ahead the first `count` rows of a list (the step a key is likely to show next), kept as the
        lines of rows with an identity are."""
        self.predraw((self._key_of(row), self._cells_of(row)) for row in rows[:count])

    def _cells_of(self, row: OpLaunches) -> list[Cell]:
        trace = self._loaded()
        kinds = {classify_call(trace.ops[c].name) for c in row.calls}
        tone = "warn" if "occupancy" in kinds else "base"
        names = []
        for g in row.kernels[:4]:
            raw = trace.gpu[g].name
            names.append(raw if self.raw else decode_kernel(raw).short)
        if len(row.kernels) > 4:
            names.append(f"+{len(row.kernels) - 4}")
        op_name = trace.ops[row.op].name if row.op >= 0 else "(no CPU op)"
        return [
            op_name, (call_chain(trace, list(row.calls)), tone), ", ".join(names),
            fmt.us(sum(trace.ops[c].dur for c in row.calls)),
        ]

    def row_key(self, index: int) -> Hashable:
        return self._key_of(self.rows[index])

    @staticmethod
    def _key_of(row: OpLaunches) -> Hashable:
        # a launching op (or, with none, its first call) has one row, the same in every scope that shows it
        return row.op, row.calls[0] if len(row.calls) else -1, len(row.calls), len(row.kernels)

    def current(self) -> OpLaunches | None:
        return self.rows[self.cursor] if self.rows else None

    def select_op(self, op_id: int) -> bool:
        for i, row in enumerate(self.rows):
            if row.op == op_id or op_id in row.calls:
                self.move_cursor(i, center=True)
                return True
        return False

    def set_marked_op(self, op_id: int) -> None:
        marked = {i for i, row in enumerate(self.rows) if row.op == op_id or op_id in row.calls} \
            if len(self.rows) < 5000 else set()
        if marked != self.marked:
            self.marked = marked
            self.refresh()

    def toggle_raw(self) -> None:
        self.raw = not self.raw
        self.refresh_text()

    def action_sort_next(self) -> None:
        self.rows = sorted(self.rows, key=lambda r: -sum(self._loaded().ops[c].dur for c in r.calls))
        self.reset_rows(0)
        self.app.notify("launches sorted by call time", timeout=1.5)

    def action_sort_reverse(self) -> None:
        self.rows = list(reversed(self.rows))
        self.reset_rows(0)

    def search_rows(self, needle: str) -> list[int]:
        needle = needle.lower()
        ops = self._loaded().ops
        return [i for i, r in enumerate(self.rows)
                if (r.op >= 0 and needle in ops[r.op].name.lower())
                or any(needle in ops[c].name.lower() for c in r.calls)]


def summary_line(stats: list[LaunchCallStat]) -> str:
    """One line per kind from `launch_calls`: the counts that tell Ampere from Hopper at a glance."""
    by_kind: dict[str, list[LaunchCallStat]] = {}
    for stat in stats:
        by_kind.setdefault(stat.kind, []).append(stat)
    parts = []
    for kind in ("occupancy", "launch", "memset", "memcpy", "graph", "sync", "attribute", "other"):
        group = by_kind.get(kind)
        if not group:
            if kind == "occupancy":
                parts.append("occupancy queries: none")
            continue
        names = ", ".join(f"{s.name} ×{s.count}" for s in sorted(group, key=lambda s: -s.count)[:3])
        parts.append(f"{'occupancy queries' if kind == 'occupancy' else kind}: {names}")
    return "  ·  ".join(parts)
