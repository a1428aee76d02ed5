"""The step list: an "all steps" row and one row per ProfilerStep, with the verdict of each."""

from __future__ import annotations

from typing import Any

from mlptui.viewmodels import fmt
from mlptui.widgets.lines import Cell, Column, LineList


class StepList(LineList):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            [Column("step", 16), Column("CPU", 9, ">"), Column("GPU busy", 9, ">"), Column("GPU idle", 9, ">"),
             Column("kernels", 7, ">"), Column("launches", 8, ">"), Column("launch ovh", 10, ">", drop=1),
             Column("verdict", 0, min_width=14)],
            id=id,
        )
        self.stats: list[Any] = []      # StepStats: [all steps, step 0, step 1, ...]

    def show(self, stats: list[Any], cursor: int = 0) -> None:
        self.stats = stats
        self.reset_rows(cursor)

    def row_count(self) -> int:
        return len(self.stats)

    def row_cells(self, index: int) -> list[Cell]:
        s = self.stats[index]
        verdict = s.verdict or ""
        tone = "warn" if "overhead" in verdict else "good" if "compute" in verdict else "base"
        name = "all steps" if index == 0 else s.name
        return [
            (name, "header") if index == 0 else name, fmt.us(s.cpu_us), fmt.us(s.gpu_busy_us),
            fmt.us(s.gpu_idle_us), fmt.count(s.kernels), fmt.count(s.launches), fmt.us(s.launch_overhead_us),
            (verdict, tone),
        ]
