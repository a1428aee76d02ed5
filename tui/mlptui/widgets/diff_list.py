"""The diff screen's two-column list: one diff row per line (a fused row takes one line per kernel
of its longer side), A on the left, B on the right, marker and colour per status; the CPU section
(mlptui.viewmodels.diff_cpu_section) follows the kernel rows in the same columns and markers."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import set_cell_size
from rich.segment import Segment

from mlptui.render.diff_text import MARKERS, fmt_delta
from mlptui.trace.diff.trace_diff import SAME, DiffKernel, DiffRow, TraceDiff
from mlptui.viewmodels.diff_cpu_section import CpuLine, cpu_section
from mlptui.viewmodels.fmt import us
from mlptui.widgets.lines import Cell, Column, LineList

# Status -> component class suffix (colours in tui/mlptui/diff.tcss); the marker carries it without colour.
TONES = {"same": "same", "changed": "changed", "added": "added", "removed": "removed", "fused": "fused"}

COLUMNS = [
    Column("", 1),
    Column("A", 0, min_width=12),
    Column("time", 10, ">"),
    Column("B", 0, min_width=12),
    Column("time", 10, ">"),
    Column("Δ", 10, ">"),
]


class DiffList(LineList):
    """Rows of a TraceDiff; cells are built only for lines on screen."""

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {f"line-list--{t}" for t in TONES.values()} | {
        "line-list--section"}

    def __init__(self, diff: TraceDiff, *, id: str | None = None) -> None:
        super().__init__(COLUMNS, id=id)
        self.raw = False
        self.set_diff(diff, reset=False)

    # -- data --------------------------------------------------------------------------------
    def set_diff(self, diff: TraceDiff, *, reset: bool = True) -> None:
        self.diff = diff
        # (row number, kernel number within the row) per line
        self.lines: list[tuple[int, int]] = [
            (r, k) for r, row in enumerate(diff.rows) for k in range(max(len(row.a), len(row.b), 1))]
        self.first_line = [0] * len(diff.rows)
        for n, (r, k) in enumerate(self.lines):
            if k == 0:
                self.first_line[r] = n
        self.cpu_lines: list[CpuLine] = cpu_section(diff)
        self.cpu_start = len(self.lines)      # the line of the CPU section's title
        self._kernel_cursor = 0               # where `c` returns to from the CPU section
        if reset:
            self.reset_rows(0)

    def row_at(self, line: int) -> int:
        return self.lines[line][0] if 0 <= line < len(self.lines) else -1

    @property
    def current_row(self) -> DiffRow | None:
        r = self.row_at(self.cursor)
        return self.diff.rows[r] if r >= 0 else None

    def cpu_line(self, line: int) -> CpuLine | None:
        n = line - self.cpu_start
        return self.cpu_lines[n] if 0 <= n < len(self.cpu_lines) else None

    def jump_cpu(self) -> None:
        """To the CPU section's title, shown from the top of the pane; from the section, back to
        the kernel line the cursor left."""
        if self.cursor >= self.cpu_start:
            self.move_cursor(min(self._kernel_cursor, self.cpu_start - 1), center=True)
            return
        self._kernel_cursor = self.cursor
        self.move_cursor(self.cpu_start)
        self.scroll_to(y=self.cpu_start, animate=False, immediate=True)

    def jump_difference(self, direction: int) -> bool:
        """Move to the first line of the next (1) or previous (-1) row that is not `same`."""
        rows = self.diff.rows
        # From the CPU section every kernel row is above.
        r = self.row_at(self.cursor) if self.cursor < self.cpu_start else len(rows)
        step = 1 if direction > 0 else -1
        k = r + step
        while 0 <= k < len(rows):
            if rows[k].status != SAME:
                self.move_cursor(self.first_line[k], center=True)
                return True
            k += step
        return False

    # -- LineList ----------------------------------------------------------------------------
    def header_cells(self) -> list[str]:
        d = self.diff
        return ["", f"A  {d.a.label}", "time", f"B  {d.b.label}", "time", "Δ"]

    def row_count(self) -> int:
        return len(self.lines) + len(self.cpu_lines)

    def row_cells(self, index: int) -> list[Cell]:
        if index >= self.cpu_start:
            return _cpu_cells(self.cpu_lines[index - self.cpu_start])
        r, k = self.lines[index]
        row = self.diff.rows[r]
        tone = TONES[row.status]
        a = row.a[k] if k < len(row.a) else None
        b = row.b[k] if k < len(row.b) else None
        if k == 0:
            marker = MARKERS[row.status]
            a_us = us(row.a_us) if row.a else ""
            b_us = us(row.b_us) if row.b else ""
            delta = fmt_delta(row.delta_us)
        else:
            marker, a_us, b_us, delta = "│", "", "", ""
        return [
            (marker, tone),
            (self._kernel_label(a), tone),
            (a_us, "dim" if row.status == SAME else tone),
            (self._kernel_label(b), tone),
            (b_us, "dim" if row.status == SAME else tone),
            (delta, _delta_tone(row.delta_us)),
        ]

    def names_line(self, index: int) -> str | None:
        """A differing kernel row's names in full (`⊕ gelu (ATen, vec8) + mul (ATen, vec8) → Inductor fused …`):
        the columns cut them at 80; None on a row that is the same on both sides, or off the kernel rows."""
        if index >= self.cpu_start or not self.lines:
            return None
        row = self.diff.rows[self.lines[index][0]]
        if row.status == SAME:
            return None
        sides = [" + ".join(self._kernel_label(k) for k in side) for side in (row.a, row.b)]
        return f"{MARKERS[row.status]} " + " → ".join(side for side in sides if side)

    def _kernel_label(self, kernel: DiffKernel | None) -> str:
        if kernel is None:
            return ""
        return kernel.name if self.raw else kernel.short or kernel.name

    def fit_widths(self, room: int, natural: list[int]) -> list[int]:
        # Two flexible name columns share the room the fixed columns leave.
        widths = [c.width for c in self.columns]
        free = max(24, room - len(self.SEPARATOR) * (len(widths) - 1) - sum(widths))
        widths[1] = free // 2
        widths[3] = free - free // 2
        return widths

    def measured_widths(self) -> list[int]:
        return [c.width for c in self.columns]

    def _line(self, texts: Sequence[Cell], widths: list[int], gutter: str, tone: str) -> list[Segment]:
        if len(texts) != 1:
            return super()._line(texts, widths, gutter, tone)
        # A section title: one cell across every column, ruled to the right edge.
        text, cell_tone = texts[0] if isinstance(texts[0], tuple) else (texts[0], "section")
        room = sum(widths) + len(self.SEPARATOR) * (sum(1 for w in widths if w) - 1)
        line = f"── {text} "
        line = set_cell_size(line + "─" * max(0, room - len(line)), room)
        style = self._style(cell_tone) if tone == "base" else self._style(cell_tone) + self._style(tone)
        return [Segment(gutter, self._style(tone)), Segment(line, style)]


def _cpu_cells(line: CpuLine) -> list[Cell]:
    if line.kind == "title":
        return [(line.a, "section")]
    tone = TONES.get(line.kind, "same")
    value_tone = "dim" if line.kind == "none" else tone
    return [
        (line.marker, tone),
        (line.a, "dim" if line.kind == "none" else tone),
        (line.a_value, value_tone),
        (line.b, tone),
        (line.b_value, value_tone),
        (line.delta_text, _delta_tone(line.delta)),
    ]


def _delta_tone(delta: float | None) -> str:
    if delta is None or abs(delta) < 0.05:
        return "dim"
    return "good" if delta < 0 else "warn"
