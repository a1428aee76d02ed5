"""A list pane of plain text rows under a header: the ranks view's tables."""

from __future__ import annotations

from mlptui.widgets.lines import Cell, Column, LineList


class TextTable(LineList):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__([Column("", 0)], id=id)
        self.rows: list[list[str]] = []

    def show(self, headers: list[str], rows: list[list[str]], right: set[int], cursor: int = 0,
             drop: dict[int, int] | None = None) -> None:
        """`drop`: column index -> rank; on a narrow screen the highest ranks go first."""
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
        self.columns = [Column(h, w, ">" if i in right else "<", min_width=w, drop=(drop or {}).get(i, 0))
                        for i, (h, w) in enumerate(zip(headers, widths, strict=True))]
        self.rows = rows
        self.reset_rows(min(cursor, max(len(rows) - 1, 0)))

    def row_count(self) -> int:
        return len(self.rows)

    def row_cells(self, index: int) -> list[Cell]:
        return list(self.rows[index])
