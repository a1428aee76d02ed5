"""`.to_pandas()` of every table the API returns, and `to_pandas(rows)` for any other list of a report's
typed rows (a diff's kernels, a run's ranks): a DataFrame with one column per field, in order. pandas is
imported on the call only (the `pandas` extra)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    import pandas


def _record(row: Any) -> dict[str, Any]:
    """A typed row's fields, in order (nested values kept as they are)."""
    if not dataclasses.is_dataclass(row) or isinstance(row, type):
        raise MlptuiError(f"to_pandas() takes a report's typed rows, not {type(row).__name__}")
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def to_pandas(rows: Sequence[Any]) -> pandas.DataFrame:
    """`rows` (typed rows of one report table) as a DataFrame: a column per field, in the fields' order."""
    try:
        import pandas
    except ImportError:
        raise MlptuiError("to_pandas() needs pandas: pip install 'mlptui[pandas]'") from None
    records = [_record(r) for r in rows]
    if not records:
        return pandas.DataFrame()
    return pandas.DataFrame.from_records(records, columns=list(records[0]))


class Rows:
    """A result with `rows`; gives them as a DataFrame."""

    __slots__ = ()
    rows: Any

    def to_pandas(self) -> pandas.DataFrame:
        return to_pandas(self.rows)
