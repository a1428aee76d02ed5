"""The GPU kernels table: one row per kernel, memset and memcpy of the scope, sortable by any column.

Cells come from the view-model (`viewmodels/kernel_facts.py`: decoded names, occupancy, roofline) for
the rows on screen only; a sort computes its one column for every row, once per sort.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable
from typing import Any

from textual import work

from mlptui.keys import KERNEL_KEYS, TABLE_KEYS
from mlptui.trace.analysis.kernels.occupancy import Occupancy
from mlptui.trace.analysis.kernels.roofline import Roofline
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import KernelName
from mlptui.viewmodels import fmt
from mlptui.viewmodels.kernel_facts import KernelFacts
from mlptui.viewmodels.kernel_labels import distinct_labels, every_kernel_labels
from mlptui.widgets.lines import Cell, Column, LineList, SideScrolling
from mlptui.widgets.worker_errors import ReportsWorkerErrors


def _triple(value: Any) -> str:
    if isinstance(value, list):
        return "x".join(str(v) for v in value)
    return "" if value is None else str(value)


def _num(value: Any) -> float:
    # args may hold anything: a bool, a string, an integer too wide for a float
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e300 \
        else -1.0


def _dims(value: Any) -> float:
    if isinstance(value, list):
        product = 1
        for v in value:
            product *= v if isinstance(v, int) else 1
        return float(product)
    return -1.0


SORT_IN_WORKER = 20_000     # kernel lists longer than this are sorted off the UI thread


class KernelTable(ReportsWorkerErrors, SideScrolling, LineList):
    BINDINGS = [*TABLE_KEYS, *KERNEL_KEYS]
    MEASURE = False

    COLUMNS = [
        Column("#", 3, ">", drop=20), Column("kernel", 0, min_width=30), Column("time", 9, ">"),
        Column("family", 9, drop=8), Column("library", 12, drop=9), Column("tile", 9, drop=10),
        Column("layout", 6, drop=12), Column("dtype", 5, drop=11), Column("grid", 11, drop=6),
        Column("block", 9, drop=7), Column("regs", 4, ">", drop=5), Column("smem", 9, ">", drop=4),
        Column("occ.th", 6, ">", drop=3), Column("occ.rep", 7, ">", drop=13), Column("perf", 13, ">", drop=2),
        Column("%peak", 5, ">", drop=1),
    ]
    # grouped by kernel (`a`): the first column is the group's call count, kept at any width
    GROUPED_COLUMNS = [Column("calls", 6, ">"), *COLUMNS[1:]]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self.COLUMNS, id=id)
        self.trace: Trace | None = None
        self.rows: list[int] = []          # GpuOp ids, in display order
        self.order: list[int] = []         # the same ids in time order (the default sort)
        self._position: dict[int, int] | None = None     # only when sorted by another column
        self.raw = False
        self.sort_column = 0
        self.sort_reverse = False
        self.facts: KernelFacts | None = None
        self.grouped = False
        self._groups: dict[str, tuple[int, int, float]] = {}   # raw name -> (first GpuOp id, count, total µs)
        self._grouped_order: list[int] | None = None
        self.labels: dict[str, str] = {}     # raw name -> short name, told apart from others alike
        # the labels of each id list shown (a step's list is one object for the trace's life): coming back
        # to a step costs no pass over its kernels (every kernel of the trace, for all steps)
        self._labels_of: dict[int, tuple[list[int], dict[str, str]]] = {}

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace
        self.facts = KernelFacts(trace)
        self._labels_of.clear()

    def _loaded(self) -> Trace:
        """The trace: there are kernels to show only once set_trace has run."""
        assert self.trace is not None, "KernelTable used before set_trace"
        return self.trace

    def show(self, gpu_ids: list[int]) -> None:
        self.order = gpu_ids
        self.labels = self._labels_for(gpu_ids)
        self._apply_sort()

    def prepare(self, gpu_ids: list[int], count: int) -> None:
        """Work out ahead what the first `count` rows of a list will show (the step a key is likely to show
        next): its labels and those kernels' decoded names, args, occupancy and roofline, kept."""
        self._labels_for(gpu_ids)
        trace, facts = self._loaded(), self._facts()
        for gid in gpu_ids[:count]:
            trace.gpu_args(gid)
            facts.decoded(gid)
            facts.occupancy(gid)
            facts.perf(gid)

    def _labels_for(self, gpu_ids: list[int]) -> dict[str, str]:
        known = self._labels_of.get(id(gpu_ids))
        if known is None or known[0] is not gpu_ids:
            if len(self._labels_of) >= 1024:     # lists made per call (an empty scope) must not pile up
                self._labels_of.clear()
            trace = self._loaded()
            gpu = trace.gpu
            # ids are distinct: as many as the trace has means all of them (made ahead, off this thread)
            labels = (trace.derive(every_kernel_labels) if len(gpu_ids) == len(gpu)
                      else distinct_labels({gpu[g].name for g in gpu_ids}, trace))
            known = self._labels_of[id(gpu_ids)] = (gpu_ids, labels)
        return known[1]

    def label(self, gid: int) -> str:
        raw = self._loaded().gpu[gid].name
        return raw if self.raw else self.labels.get(raw) or self.decoded(gid).short

    def _facts(self) -> KernelFacts:
        assert self.facts is not None, "KernelTable used before set_trace"
        return self.facts

    def decoded(self, gid: int) -> KernelName:
        return self._facts().decoded(gid)

    def occupancy(self, gid: int) -> Occupancy | None:
        return self._facts().occupancy(gid)

    def roofline(self, gid: int) -> Roofline | None:
        return self._facts().roofline(gid)

    # -- rows --------------------------------------------------------------------------------
    def row_count(self) -> int:
        return len(self.rows)

    def header_cells(self) -> list[str]:
        heads = [c.title for c in self.columns]
        if self.grouped:
            heads[2] = "total"
        if self.sort_column or self.sort_reverse:
            heads[self.sort_column] += "▼" if self.sort_reverse else "▲"
        return heads

    def row_cells(self, index: int) -> list[Cell]:
        gid = self.rows[index]
        trace = self._loaded()
        op = trace.gpu[gid]
        name = self.decoded(gid)
        args = trace.gpu_args(gid)
        occ = self.occupancy(gid)
        reported = args.get("est. achieved occupancy %")
        perf, pct = self._facts().perf(gid)
        peak: Cell = "" if pct is None else (fmt.pct(pct / 100), "good" if pct >= 50 else "warn")
        tone = {"gemm": "hot", "memset": "dim", "copy": "dim"}.get(name.family, "base")
        if self.grouped:
            _, count, total = self._groups[op.name]
            first, time_text = fmt.count(count), fmt.us(total)
        else:
            first, time_text = str(self.order_index(gid) + 1), fmt.us(op.dur)
        return [
            first, (self.label(gid), tone), time_text,
            name.family, name.library, name.tile or "", name.layout or "", name.dtype or "",
            _triple(args.get("grid")), _triple(args.get("block")),
            str(args.get("registers per thread", "")),
            fmt.size_bytes(args["shared memory"]) if "shared memory" in args else "",
            fmt.pct(occ.fraction) if occ is not None else "",
            f"{reported}%" if isinstance(reported, int | float) else "",
            perf, peak,
        ]

    def row_key(self, index: int) -> Hashable | None:
        # a kernel's row: the kernel, its place in the step's time order, and its label (made per step list);
        # a grouped row's count and total are the scope's
        if self.grouped:
            return None
        gid = self.rows[index]
        return gid, self.order_index(gid), self.label(gid)

    def order_index(self, gid: int) -> int:
        """Position of a kernel in time order (`order` holds ascending GpuOp ids, which are in time order)."""
        i = bisect_left(self.order, gid)
        return i if i < len(self.order) and self.order[i] == gid else -1

    def row_of(self, gid: int) -> int | None:
        if gid < 0:             # no kernel (an empty scope's current())
            return None
        if self.grouped:
            group = self._groups.get(self._loaded().gpu[gid].name)
            return None if group is None or self._position is None else self._position.get(group[0])
        if self._position is None:
            i = self.order_index(gid)
            return None if i < 0 else i
        return self._position.get(gid)

    def current(self) -> int:
        return self.rows[self.cursor] if self.rows else -1

    def select_gpu(self, gid: int) -> bool:
        index = self.row_of(gid)
        if index is None:
            return False
        self.move_cursor(index, center=True)
        return True

    def set_marked(self, gpu_ids: list[int]) -> None:
        marked = {i for g in gpu_ids if (i := self.row_of(g)) is not None}
        if marked != self.marked:
            self.marked = marked
            self.refresh()

    def toggle_raw(self) -> None:
        self.raw = not self.raw
        self.refresh_text()

    # -- sorting -----------------------------------------------------------------------------
    def _sort_key(self, column: int) -> Callable[[int], Any]:
        trace = self._loaded()
        gpu = trace.gpu
        args = trace.gpu_args
        by_name: dict[int, Callable[[int], Any]] = {
            1: self.label, 2: lambda g: gpu[g].dur,
            3: lambda g: self.decoded(g).family, 4: lambda g: self.decoded(g).library,
            5: lambda g: self.decoded(g).tile or "", 6: lambda g: self.decoded(g).layout or "",
            7: lambda g: self.decoded(g).dtype or "",
            8: lambda g: _dims(args(g).get("grid")), 9: lambda g: _dims(args(g).get("block")),
            10: lambda g: _num(args(g).get("registers per thread")), 11: lambda g: _num(args(g).get("shared memory")),
            12: lambda g: (o.fraction if (o := self.occupancy(g)) is not None else -1.0),
            13: lambda g: _num(args(g).get("est. achieved occupancy %")),
            14: lambda g: (r.tflops or r.gbps or 0.0) if (r := self.roofline(g)) is not None else -1.0,
            15: lambda g: (r.pct_of_peak or 0.0) if (r := self.roofline(g)) is not None else -1.0,
        }
        if self.grouped and column in (0, 2):
            index = 1 if column == 0 else 2
            return lambda g: self._groups[gpu[g].name][index]
        return by_name.get(column, lambda g: gpu[g].ts)

    def _group(self) -> list[int]:
        """One representative per kernel name of the scope, by total time (computed once per scope)."""
        if self._grouped_order is not self.order:
            gpu = self._loaded().gpu
            groups: dict[str, tuple[int, int, float]] = {}
            for g in self.order:
                entry = groups.get(gpu[g].name)
                if entry is None:
                    groups[gpu[g].name] = (g, 1, gpu[g].dur)
                else:
                    groups[gpu[g].name] = (entry[0], entry[1] + 1, entry[2] + gpu[g].dur)
            self._groups = groups
            self._grouped_order = self.order
        return sorted((rep for rep, _, _ in self._groups.values()),
                      key=lambda g: -self._groups[self._loaded().gpu[g].name][2])

    def _apply_sort(self, keep: int | None = None) -> None:
        if self.grouped:
            reps = self._group()
            if self.sort_column or self.sort_reverse:
                reps = sorted(reps, key=self._sort_key(self.sort_column), reverse=self.sort_reverse)
            self._set_sorted(self.order, reps, keep)
            return
        if self.sort_column == 0 and not self.sort_reverse:
            self.rows = self.order
            self._position = None
        elif len(self.order) > SORT_IN_WORKER:
            # time order until the sorted order lands: a big sort never freezes the keyboard
            self.rows = self.order
            self._position = None
            self.app.notify(f"sorting {len(self.order):,} kernels by {self.columns[self.sort_column].title}…",
                            timeout=2)
            self._sort_off_thread(self.order, self.sort_column, self.sort_reverse, keep)
        else:
            self._set_sorted(self.order, sorted(self.order, key=self._sort_key(self.sort_column),
                                                reverse=self.sort_reverse), keep)
            return
        cursor = (self.row_of(keep) or 0) if keep is not None else 0
        self.marked = set()
        self.reset_rows(cursor)

    @work(thread=True, exclusive=True, group="kernel-sort", exit_on_error=False)
    def _sort_off_thread(self, order: list[int], column: int, reverse: bool, keep: int | None) -> None:
        rows = sorted(order, key=self._sort_key(column), reverse=reverse)
        self.app.call_from_thread(self._set_sorted, order, rows, keep)

    def _set_sorted(self, order: list[int], rows: list[int], keep: int | None) -> None:
        if order is not self.order:     # the scope changed while sorting
            return
        self.rows = rows
        self._position = {g: i for i, g in enumerate(rows)}
        cursor = (self.row_of(keep) or 0) if keep is not None else 0
        self.marked = set()
        self.reset_rows(cursor)

    def action_sort_next(self) -> None:
        self.sort_column = (self.sort_column + 1) % len(self.columns)
        self.sort_reverse = self.sort_column in (2, 8, 9, 10, 11, 12, 13, 14, 15)
        self._apply_sort(self.current())
        self.app.notify(f"kernels sorted by {self.columns[self.sort_column].title}", timeout=1.5)

    def action_sort_reverse(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._apply_sort(self.current())

    def action_toggle_grouped(self) -> None:
        self.grouped = not self.grouped
        self.columns = list(self.GROUPED_COLUMNS if self.grouped else self.COLUMNS)
        self.sort_column, self.sort_reverse = 0, False
        self._apply_sort(self.current())
        self.app.notify("one row per kernel name: count and total time" if self.grouped
                        else "one row per kernel launch, in time order", timeout=1.5)

    def search_rows(self, needle: str) -> list[int]:
        needle = needle.lower()
        gpu = self._loaded().gpu
        return [i for i, g in enumerate(self.rows)
                if needle in gpu[g].name.lower() or needle in self.label(g).lower()]

    def export_rows(self) -> list[dict[str, Any]]:
        """The rows as shown (sorted, grouped), their figures unformatted, for CSV."""
        trace = self._loaded()
        rows = []
        for gid in self.rows:
            g, name, args = trace.gpu[gid], self.decoded(gid), trace.gpu_args(gid)
            occ, roof = self.occupancy(gid), self.roofline(gid)
            first: dict[str, Any]
            if self.grouped:
                _, count, total = self._groups[g.name]
                first = {"calls": count, "kernel": self.labels.get(g.name, name.short), "total_us": round(total, 3)}
            else:
                first = {"index": self.order_index(gid) + 1, "kernel": self.labels.get(g.name, name.short),
                         "start_us": round(g.ts, 3), "time_us": round(g.dur, 3)}
            rows.append({**first, "raw_name": g.name, "family": name.family, "library": name.library,
                         "tile": name.tile, "layout": name.layout, "dtype": name.dtype,
                         "grid": _triple(args.get("grid")), "block": _triple(args.get("block")),
                         "registers": args.get("registers per thread"), "shared_memory": args.get("shared memory"),
                         "occupancy_theoretical": None if occ is None else round(occ.fraction, 4),
                         "occupancy_reported_pct": args.get("est. achieved occupancy %"),
                         "tflops": None if roof is None else roof.tflops, "gbps": None if roof is None else roof.gbps,
                         "pct_of_peak": None if roof is None else roof.pct_of_peak, "stream": g.stream})
        return rows
