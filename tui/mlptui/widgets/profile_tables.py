"""The tables of the profiler views: operators, kernels (completed), memory per op and the nn.Module
tree. Each is a LineList over a list of rows already computed (mlptui.viewmodels.profile_views);
`s`/`S` sort by the next column (each table has at most a few thousand rows)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from mlptui.base import units
from mlptui.keys import TABLE_KEYS
from mlptui.trace.analysis.critical_path.critical_path import Segment
from mlptui.trace.analysis.critical_path.critical_path_report import label
from mlptui.trace.analysis.kernels.kernel_stats import KernelGroup
from mlptui.trace.analysis.memory.memory import OpMemory
from mlptui.trace.analysis.operators.modules import ModuleRow
from mlptui.trace.analysis.operators.operators import OpGroup
from mlptui.trace.model import Trace
from mlptui.trace.reports.diff import OpSide
from mlptui.viewmodels import fmt
from mlptui.viewmodels.group_launch import GroupLaunch, group_launch
from mlptui.viewmodels.kernel_labels import distinct_labels
from mlptui.widgets.lines import Cell, Column, LineList, SideScrolling

KEPT_LAUNCHES = 8192        # rows whose launch figures the kernels view keeps


def _opt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


class SortedTable(SideScrolling, LineList):
    """Rows plus, per column, the cell text and the sort key of a row."""

    BINDINGS = [b for b in TABLE_KEYS if b.id not in ("sort", "sort-reverse")]
    CELLS: list[Callable[[Any], Cell]] = []
    KEYS: list[Callable[[Any], Any]] = []

    def __init__(self, columns: list[Column], *, id: str | None = None) -> None:
        super().__init__(columns, id=id)
        self.rows: list[Any] = []
        self.sort_column = -1           # -1: the order given (most time first)
        self.sort_reverse = False
        self.filter = ""                # `/`: only rows whose name holds this (case-insensitive)
        self._given: list[Any] = []

    def show(self, rows: list[Any]) -> None:
        self._given = list(rows)
        self._apply()

    def set_filter(self, needle: str) -> None:
        self.filter = needle.strip()
        self._apply()

    def row_matches(self, row: Any, needle: str) -> bool:
        """Whether `row`'s name holds `needle` (lower case)."""
        return needle in str(self.KEYS[0](row)).lower()

    def _apply(self) -> None:
        needle = self.filter.lower()
        rows = [r for r in self._given if self.row_matches(r, needle)] if needle else list(self._given)
        if self.sort_column >= 0:
            key = self.KEYS[self.sort_column]
            rows.sort(key=key, reverse=self.sort_reverse)
        self.rows = rows
        self.reset_rows(0)

    def sort_by(self, column: int, reverse: bool) -> None:
        self.sort_column, self.sort_reverse = column, reverse
        self._apply()

    def sort_next(self, reverse: bool = False) -> str:
        if reverse:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column = (self.sort_column + 1) % len(self.columns)
            self.sort_reverse = self.sort_column > 0     # numbers: largest first
        self._apply()
        return self.columns[self.sort_column].title

    def header_cells(self) -> list[str]:
        heads = [c.title for c in self.columns]
        if self.sort_column >= 0:
            heads[self.sort_column] += "▼" if self.sort_reverse else "▲"
        return heads

    def row_count(self) -> int:
        return len(self.rows)

    def row_cells(self, index: int) -> list[Cell]:
        row = self.rows[index]
        return [f(row) for f in self.CELLS]

    def current(self) -> Any:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def search_rows(self, needle: str) -> list[int]:
        low = needle.lower()
        return [i for i, r in enumerate(self.rows) if self.row_matches(r, low)]

    def export_row(self, row: Any) -> dict[str, Any]:
        """A row for CSV: its figures unformatted (µs, bytes, fractions), as `summary --json` has them."""
        to_dict = getattr(row, "to_dict", None)
        if callable(to_dict):
            exported: dict[str, Any] = to_dict()
            return exported
        return dataclasses.asdict(row) if dataclasses.is_dataclass(row) and not isinstance(row, type) else dict(row)

    def export_rows(self) -> list[dict[str, Any]]:
        """The rows the table shows (filtered and sorted as on screen), for CSV."""
        return [self.export_row(r) for r in self.rows]


def _tc(o: OpGroup) -> Cell:
    if not o.tc_eligible:
        return ""
    share = o.tc_share
    if share is None:
        return (units.MISSING, "dim")      # eligible, but no kernel of its own to measure
    return (fmt.pct(share), "good" if share >= 0.5 else "warn")


class OperatorTable(SortedTable):
    CELLS = [
        lambda o: o.name if o.input_shapes is None else f"{o.name} {o.input_shapes}",
        lambda o: fmt.count(o.calls), lambda o: fmt.us(o.host_self_us), lambda o: fmt.us(o.host_total_us),
        lambda o: fmt.us(o.device_self_us), lambda o: fmt.us(o.device_total_us), _tc,
    ]
    KEYS = [
        lambda o: (o.name, o.input_shapes or ""), lambda o: o.calls, lambda o: o.host_self_us,
        lambda o: o.host_total_us, lambda o: o.device_self_us, lambda o: o.device_total_us,
        lambda o: -1.0 if o.tc_share is None else o.tc_share,
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("operator", 0, min_width=24), Column("calls", 6, ">", drop=6),
                          Column("host self", 9, ">", drop=3), Column("host total", 10, ">"),
                          Column("dev self", 9, ">", drop=4), Column("dev total", 9, ">"),
                          Column("TC", 5, ">", drop=5)], id=id)


class KernelStatsTable(SortedTable):
    """Kernels, completed: names told apart where two decode alike (`r`: raw names), and each group's
    launch (grid, block, registers, shared memory) as the kernels pane shows one launch's."""

    KEYS = [
        lambda k: (k.name, k.op or ""), lambda k: k.tensor_cores, lambda k: k.calls, lambda k: k.total_us,
        lambda k: k.mean_us, lambda k: k.min_us, lambda k: k.max_us,
        lambda k: -1.0 if k.blocks_per_sm is None else k.blocks_per_sm,
        lambda k: -1.0 if k.achieved_occupancy is None else k.achieved_occupancy,
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("kernel", 0, min_width=24), Column("TC", 2, drop=7),
                          Column("calls", 6, ">", drop=6), Column("total", 9, ">"), Column("mean", 9, ">"),
                          Column("min", 9, ">", drop=3), Column("max", 9, ">", drop=4),
                          Column("blk/SM", 6, ">", drop=5), Column("occ", 4, ">", drop=8),
                          Column("grid", 11, drop=12), Column("block", 9, drop=11),
                          Column("regs", 4, ">", drop=10), Column("smem", 8, ">", drop=9)], id=id)
        self.trace: Trace | None = None
        self.raw = False
        self.labels: dict[str, str] = {}
        # each row's launch figures (they read its kernels' args), kept across shows: `a` and `[` `]` come
        # back to the same rows; by id, with the row itself, so a new row at a reused id is never misread
        self._launches: dict[int, tuple[KernelGroup, GroupLaunch]] = {}
        # launch figures sort as text ("varies" after the numbers); they are read for the rows asked only
        self.KEYS = [*type(self).KEYS, *(lambda k, f=f: getattr(self._launch(k), f) for f in
                                        ("grid", "block", "registers", "shared_memory"))]

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace
        self._launches.clear()

    def show(self, rows: list[Any]) -> None:
        self.labels = distinct_labels((k.name for k in rows), self.trace)
        if len(self._launches) > KEPT_LAUNCHES:
            self._launches.clear()
        super().show(rows)

    def label(self, k: KernelGroup) -> str:
        return k.name if self.raw else self.labels.get(k.name) or k.name

    def _launch(self, k: KernelGroup) -> GroupLaunch:
        kept = self._launches.get(id(k))
        if kept is not None and kept[0] is k:
            return kept[1]
        found = GroupLaunch("", "", "", "") if self.trace is None else group_launch(self.trace, k.ids)
        self._launches[id(k)] = (k, found)
        return found

    def row_cells(self, index: int) -> list[Cell]:
        k = self.rows[index]
        launch = self._launch(k)
        return [
            self.label(k) + (f"  ← {k.op}" if k.op else ""),
            ("TC", "good") if k.tensor_cores else "", fmt.count(k.calls),
            fmt.us(k.total_us), fmt.us(k.mean_us), fmt.us(k.min_us), fmt.us(k.max_us),
            _opt(k.blocks_per_sm), "n/a" if k.achieved_occupancy is None else fmt.pct(k.achieved_occupancy),
            launch.grid, launch.block, launch.registers, launch.shared_memory,
        ]

    def row_matches(self, row: Any, needle: str) -> bool:
        return needle in row.name.lower() or needle in self.labels.get(row.name, "").lower() \
            or needle in (row.op or "").lower()

    def toggle_raw(self) -> None:
        self.raw = not self.raw
        self.refresh_text()

    def export_row(self, row: Any) -> dict[str, Any]:
        exported = super().export_row(row)
        launch = self._launch(row)
        exported = {"kernel": self.labels.get(row.name, row.name), **exported}
        exported.update(grid=launch.grid, block=launch.block, registers=launch.registers,
                        shared_memory_bytes=launch.shared_memory_bytes)
        return exported


class MemoryOpTable(SortedTable):
    CELLS = [
        lambda m: m.name, lambda m: fmt.count(m.allocs), lambda m: fmt.count(m.frees),
        lambda m: fmt.size_bytes(m.bytes_allocated), lambda m: _signed(m.net_bytes) if m.net_known else "n/a",
        lambda m: _signed(m.net_bytes_with_children) if m.net_known else "n/a",
    ]
    KEYS = [lambda m: m.name, lambda m: m.allocs, lambda m: m.frees, lambda m: m.bytes_allocated,
            lambda m: m.net_bytes, lambda m: m.net_bytes_with_children]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("operator", 0, min_width=20), Column("allocs", 6, ">", drop=4),
                          Column("frees", 6, ">", drop=5), Column("allocated", 10, ">"), Column("net", 11, ">"),
                          Column("net +children", 13, ">", drop=3)], id=id)


def _signed(n: int) -> str:
    return ("+" if n > 0 else "") + fmt.size_bytes(n)


class SegmentTable(SortedTable):
    """The critical path's segments, in time order (from the step's start)."""

    CELLS = [
        lambda s: label(s.name, s.kind) or "—", lambda s: s.kind.replace("_", " "), lambda s: fmt.us(s.dur_us),
        lambda s: fmt.us(s.start_us), lambda s: s.op or "",
    ]
    KEYS = [lambda s: s.name, lambda s: s.kind, lambda s: s.dur_us, lambda s: s.start_us, lambda s: s.op or ""]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("on the path", 0, min_width=24), Column("kind", 12), Column("time", 9, ">"),
                          Column("at", 10, ">", drop=4), Column("op", 20, drop=3)], id=id)

    def show_path(self, segments: list[Segment], start_us: float) -> None:
        """The segments, each at its time from the step's start."""
        self.show([dataclasses.replace(s, start_us=s.start_us - start_us) for s in segments])


class ModuleTable(SortedTable):
    CELLS = [
        lambda m: "  " * m.depth + m.name, lambda m: fmt.count(m.calls), lambda m: fmt.us(m.host_us),
        lambda m: fmt.us(m.device_us),
    ]
    KEYS = [lambda m: m.path, lambda m: m.calls, lambda m: m.host_us, lambda m: m.device_us]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("module", 0, min_width=24), Column("calls", 6, ">"), Column("host", 9, ">"),
                          Column("device", 9, ">")], id=id)


__all__ = ["KernelGroup", "KernelStatsTable", "MemoryOpTable", "ModuleRow", "ModuleTable", "OpGroup",
           "OpMemory", "OperatorTable"]


_DIFF_MARK = {"same": ("=", "base"), "changed": ("~", "warn"), "added": ("+", "good"), "removed": ("-", "hot")}


def _host(side: OpSide | None) -> float | None:
    return None if side is None else side.host_total_us


def _device(side: OpSide | None) -> float | None:
    return None if side is None else side.device_total_us


class OperatorDiffTable(SortedTable):
    """The diff's operator rows (mlptui.trace.diff.profile_diff.operator_diff): A and B side by side."""

    CELLS = [
        lambda r: _DIFF_MARK[r.status], lambda r: r.name,
        lambda r: units.MISSING if r.a is None else fmt.count(r.a.calls),
        lambda r: units.MISSING if r.b is None else fmt.count(r.b.calls),
        lambda r: fmt.us(_host(r.a)), lambda r: fmt.us(_host(r.b)),
        lambda r: fmt.us(_device(r.a)), lambda r: fmt.us(_device(r.b)),
    ]
    KEYS = [
        lambda r: r.status, lambda r: r.name,
        lambda r: -1 if r.a is None else r.a.calls, lambda r: -1 if r.b is None else r.b.calls,
        lambda r: _host(r.a) or -1.0, lambda r: _host(r.b) or -1.0,
        lambda r: _device(r.a) or -1.0, lambda r: _device(r.b) or -1.0,
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("", 1), Column("operator", 0, min_width=20), Column("calls A", 7, ">", drop=5),
                          Column("calls B", 7, ">", drop=6), Column("host A", 9, ">", drop=3),
                          Column("host B", 9, ">", drop=4), Column("dev A", 9, ">"), Column("dev B", 9, ">")], id=id)
