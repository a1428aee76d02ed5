"""`x`: the table on screen as a CSV file, and one line saying where it went (or why it could not)."""

from __future__ import annotations

from typing import Any

from textual.widget import Widget

from mlptui.viewmodels.table_export import dict_rows_csv, export_csv
from mlptui.widgets.lines import LineList


def table_rows(table: LineList) -> list[dict[str, Any]]:
    """The table's own export when it has one (unformatted figures), else the text of every cell."""
    export = getattr(table, "export_rows", None)
    if callable(export):
        rows: list[dict[str, Any]] = export()
        return rows
    heads = [c.title or f"column {j + 1}" for j, c in enumerate(table.columns)]
    return [dict(zip(heads, (c if isinstance(c, str) else c[0] for c in table.cells(i)), strict=False))
            for i in range(table.row_count())]


def export_table(node: Widget, table: LineList, stem: str) -> None:
    rows = table_rows(table)
    try:
        path = export_csv(stem, dict_rows_csv(rows))
    except OSError as error:
        node.notify(f"no CSV written: {error.strerror or error}", severity="error", timeout=4)
        return
    node.notify(f"{len(rows)} rows → {path}", timeout=4)
