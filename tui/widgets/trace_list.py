"""The trace list: one row per trace of a folder with what it holds at a glance (kernel mix, launches,
CPU ops, GPU busy, occupancy queries, device), in the article's ladder order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlptui.base import units
from mlptui.contract.vocabulary import MODES, WORKLOAD_NAMES
from mlptui.viewmodels import fmt
from mlptui.widgets.lines import Cell, Column, LineList

if TYPE_CHECKING:      # numpy and the analyses come with it: not before the first paint
    from mlptui.viewmodels.facts import TraceFacts


def ladder_key(spec: str) -> tuple[int, bool, int, str]:
    """Sort the article's ladder in its order: linear, mlp, Liger, fused; eager before compile."""
    name = spec.rstrip("/").rsplit("/", 1)[-1]
    workload = max((w for w in WORKLOAD_NAMES if name.startswith(w + "-")), key=len, default="")
    rest = name[len(workload) + 1:] if workload else name
    mode = max((m for m in MODES if rest.startswith(m + "-")), key=len, default="")
    return (WORKLOAD_NAMES.index(workload) if workload else len(WORKLOAD_NAMES), "-fp32-" in name,
            MODES.index(mode) if mode else len(MODES), name)


class TraceList(LineList):
    def __init__(self, specs: list[str], *, id: str | None = None) -> None:
        super().__init__(
            [Column("#", 2, ">"), Column("trace", 28), Column("kernels", 7, ">"),
             Column("the step's kernels", 0, min_width=36), Column("launches", 8, ">", drop=6),
             Column("CPU ops", 7, ">", drop=4), Column("GPU busy", 9, ">", drop=5), Column("CPU", 9, ">", drop=7),
             Column("occ.q", 5, ">"), Column("device", 11, drop=8), Column("file", 30, drop=9)],
            id=id,
        )
        self.specs = specs
        self.facts: dict[str, TraceFacts] = {}
        self.errors: dict[str, str] = {}
        self.labels: dict[str, str] = {}        # the manifest's label of a row not summarised
        self.marked_spec: str | None = None

    def row_count(self) -> int:
        return len(self.specs)

    def row_cells(self, index: int) -> list[Cell]:
        spec = self.specs[index]
        name = spec.rstrip("/").rsplit("/", 1)[-1]
        mark = "[A] " if spec == self.marked_spec else ""
        facts = self.facts.get(spec)
        if facts is None:
            state = self.errors.get(spec, "…")
            label = self.labels.get(spec, name)
            return [str(index + 1), (mark + label, "base"), "", (state, "dim"), "", "", "", "", "", "", name]
        f = self._figures(facts)
        return [str(index + 1), mark + facts.label, f["kernels"], facts.focus_mix, f["launches"], f["cpu_ops"],
                f["gpu_busy"], f["cpu"], (f["occupancy"], "warn" if f["occupancy"] != "0" else "dim"),
                f["device"], name]

    @staticmethod
    def _figures(facts: TraceFacts) -> dict[str, str]:
        """The row's figures as its cells and the findings' first line write them."""
        from mlptui.viewmodels.facts import call_stats, kernel_count  # loaded with the first facts anyway

        s = facts.per_step()
        occupancy = sum(c.count for c in call_stats(facts, s.index if s.index >= 0 else None)
                        if c.kind == "occupancy")
        return {"kernels": str(kernel_count(facts)), "launches": str(s.launches), "cpu_ops": str(facts.focus_cpu_ops),
                "gpu_busy": fmt.us(s.gpu_busy_us), "cpu": fmt.us(s.cpu_us), "occupancy": str(occupancy),
                "device": (facts.trace.device_name or units.MISSING).replace("NVIDIA ", "")}

    def figures_line(self, facts: TraceFacts) -> str:
        """Every column of a summarised row, in full: a narrow list drops or cuts some, the findings keep them."""
        f = self._figures(facts)
        return (f"{_counted(f['kernels'], 'kernel')}: {facts.focus_mix} · {_counted(f['launches'], 'launch')} · "
                f"{_counted(f['cpu_ops'], 'CPU op')} · GPU busy {f['gpu_busy']} · CPU {f['cpu']} · "
                f"{_counted(f['occupancy'], 'occupancy query')}")


def _counted(n: str, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "es" if noun.endswith("h") else noun + "s"
    return f"{n} {noun if n == '1' else plural}"
