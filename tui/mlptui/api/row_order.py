"""`sort=` and `filter=` of the API's tables, over typed rows (the core's frozen dataclasses): a column is a
field, read by attribute."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RowT = TypeVar("RowT", bound="DataclassInstance")


def matching(rows: list[RowT], text: str | None, fields: tuple[str, ...]) -> list[RowT]:
    """Rows whose name (or another of `fields`) holds `text`, any case; all rows for None."""
    if not text:
        return list(rows)
    needle = text.lower()
    return [r for r in rows if any(needle in str(getattr(r, f) or "").lower() for f in fields)]


def sorted_by(rows: list[RowT], sort: str | None) -> list[RowT]:
    """Rows by `sort` (a field: figures largest first, names A to Z; a leading "-" reverses); as the
    report orders them for None."""
    if not sort or not rows:
        return rows
    key = sort.lstrip("-")
    columns = [f.name for f in dataclasses.fields(rows[0])]
    if key not in columns:
        raise MlptuiError(f"cannot sort by {key!r}: the columns are {', '.join(columns)}")
    values = [getattr(r, key) for r in rows]
    numeric = any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)

    def value(v: Any) -> float | str:
        if numeric:
            return float("-inf") if not isinstance(v, (int, float)) else float(v)
        return str(v or "")

    order = sorted(range(len(rows)), key=lambda i: value(values[i]), reverse=numeric != sort.startswith("-"))
    return [rows[i] for i in order]
