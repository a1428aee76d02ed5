"""The trace list: one row per trace of a folder with what it holds at a glance (kernel mix, launches,
CPU ops, GPU busy, occupancy queries, device), in the article's ladder order."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.cells import cell_len

from mlptui.base import units
from mlptui.contract.vocabulary import MODES, WORKLOAD_NAMES
from mlptui.trace.names.distinct import differing_words
from mlptui.viewmodels import fmt
from mlptui.widgets.lines import Cell, Column, LineList, fit_cell

LEAD = 6        # letters kept before the first difference of labels a cut made alike
ROUNDS = 4      # rounds of re-cutting labels still alike
FOLDER_COLS = 28    # the trace column's widest for a folder's label (its files' own width at least)
LABEL_COLS = 48     # and for a file's (LineList's own limit)

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
    def __init__(self, specs: list[str], *, id: str | None = None, folders: set[str] | None = None) -> None:
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
        self.folders = folders or set()         # rows that are folders of traces (enter lists or opens them)
        self._shown: dict[str, str] = {}
        self._shown_key: tuple[object, ...] = ()
        self._fitted: dict[int, dict[str, str]] = {}     # by column width: each label as cut to it

    def row_count(self) -> int:
        return len(self.specs)

    def _label(self, spec: str) -> str:
        facts = self.facts.get(spec)
        return facts.label if facts is not None else self.labels.get(spec, _name(spec))

    def shown_labels(self) -> dict[str, str]:
        """Each row's label; rows whose labels are alike (two runs of one workload) get the words of their
        file or folder names that the others lack (`‹20261126T104426›`), as kernels do."""
        key = (len(self.facts), len(self.labels), tuple(self.specs))
        if key != self._shown_key:
            shown = {spec: self._label(spec) for spec in self.specs}
            alike: dict[str, list[str]] = {}
            for spec, label in shown.items():
                alike.setdefault(label, []).append(spec)
            for label, specs in alike.items():
                if len(specs) > 1:
                    for spec, own in zip(specs, differing_words([_name(s) for s in specs]), strict=True):
                        shown[spec] = f"{label} ‹{own}›"
            self._shown, self._shown_key, self._fitted = shown, key, {}
        return self._shown

    def measured_widths(self) -> list[int]:
        """A folder's label (`mlp · train · eager · bf16 · 2 ranks ‹20261126T104443›`) widens the trace
        column no further than FOLDER_COLS: it is cut where it differs from the others instead, and the
        kernel mix keeps its room."""
        widths = super().measured_widths()
        shown = self.shown_labels()
        files = [cell_len(shown[s]) for s in self.specs if s not in self.folders]
        widths[1] = min(widths[1], max(self.columns[1].width, FOLDER_COLS, min(max(files, default=0), LABEL_COLS)))
        return widths

    def fit_text(self, column: int, text: str, width: int) -> str:
        """The trace column: labels that a cut would make alike are cut where they differ instead."""
        if column != 1:
            return fit_cell(text, width)
        fitted = self._fitted.get(width)
        if fitted is None:
            fitted = self._fitted[width] = distinct_cuts(list(self.shown_labels().values()), width)
        return fitted.get(text) or fit_cell(text, width)

    def row_cells(self, index: int) -> list[Cell]:
        spec = self.specs[index]
        name = _name(spec)
        mark = "[A] " if spec == self.marked_spec else ""
        label = self.shown_labels()[spec]
        facts = self.facts.get(spec)
        if facts is None:
            state = self.errors.get(spec, "…")
            return [str(index + 1), (mark + label, "base"), "", (state, "dim"), "", "", "", "", "", "", name]
        f = self._figures(facts)
        return [str(index + 1), mark + label, f["kernels"], facts.focus_mix, f["launches"], f["cpu_ops"],
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


def _name(spec: str) -> str:
    return spec.rstrip("/").rsplit("/", 1)[-1]


def distinct_cuts(labels: list[str], width: int) -> dict[str, str]:
    """Each label cut to `width` cells; labels the usual cut would make alike (long file names sharing
    their first `width` letters) are shown from a little before the first letter where each differs from
    the others alike; a few rounds, as such a cut may meet another label's."""
    out = {label: _cut(label, width) for label in sorted(set(labels))}
    lead = max(min(LEAD, (width - 3) // 2), 0)
    for _ in range(ROUNDS):
        seen: dict[str, list[str]] = {}
        for label, cut in out.items():
            seen.setdefault(cut, []).append(label)
        alike_sets = [alike for alike in seen.values() if len(alike) > 1]
        if not alike_sets:
            break
        for alike in alike_sets:
            for label in alike:
                same = max(len(os.path.commonprefix([label, other])) for other in alike if other != label)
                out[label] = _cut("…" + label[same - lead:], width) if same > lead else _cut(label, width)
    return out


def _cut(text: str, width: int) -> str:
    return fit_cell(text, width) if cell_len(text) > width else text
