"""The step list: an "all steps" row and one row per ProfilerStep, with the verdict of each.

GPU busy/idle: the step's own GPU work (by launch); dev idle: the device's idle time over the step's
window with all work on it counted (what the verdict reads; it differs when the CPU runs ahead)."""

from __future__ import annotations

from typing import Any

from textual.reactive import reactive

from mlptui.viewmodels import fmt
from mlptui.viewmodels.scope import Scope
from mlptui.widgets.lines import Cell, Column, LineList


class StepList(LineList):
    # Bound to the trace screen's scope: the cursor sits on the scope's row whoever changed it.
    scope: reactive[Scope | None] = reactive(None, always_update=True, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            [Column("step", 16), Column("CPU", 9, ">"), Column("GPU busy", 9, ">"), Column("GPU idle", 9, ">"),
             Column("dev idle", 9, ">", drop=2), Column("kernels", 7, ">"), Column("launches", 8, ">"), Column("launch ovh", 10, ">", drop=1),
             Column("verdict", 0, min_width=14)],
            id=id,
        )
        self.stats: list[Any] = []      # StepStats: [all steps, step 0, step 1, ...]

    def show(self, stats: list[Any], cursor: int = 0) -> None:
        self.stats = stats
        self.reset_rows(cursor)

    def watch_scope(self, scope: Scope | None) -> None:
        if scope is not None and self.cursor != scope.row:
            self.cursor = scope.row
            self.refresh()

    def row_count(self) -> int:
        return len(self.stats)

    def row_cells(self, index: int) -> list[Cell]:
        s = self.stats[index]
        verdict = s.verdict or ""
        tone = "warn" if "overhead" in verdict else "good" if "compute" in verdict else "base"
        name = "all steps" if index == 0 else s.name
        return [
            (name, "header") if index == 0 else name, fmt.us(s.cpu_us), fmt.us(s.gpu_busy_us),
            fmt.us(s.gpu_idle_us), fmt.us(s.device_idle_us), fmt.count(s.kernels), fmt.count(s.launches), fmt.us(s.launch_overhead_us),
            (verdict, tone),
        ]
