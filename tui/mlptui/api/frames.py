"""`.to_pandas()` of every table the API returns: its rows as a DataFrame, one column per field of a typed
row (or key of a plain one), in order. pandas is imported on the call only (the `pandas` extra)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    import pandas


def _record(row: Any) -> Any:
    if dataclasses.is_dataclass(row) and not isinstance(row, type):
        return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
    return row


class Rows:
    """A result with `rows`; gives them as a DataFrame."""

    __slots__ = ()
    rows: Any

    def to_pandas(self) -> pandas.DataFrame:
        try:
            import pandas
        except ImportError:
            raise MlptuiError("to_pandas() needs pandas: pip install 'mlptui[pandas]'") from None
        records = [_record(r) for r in self.rows]
        if not records:
            return pandas.DataFrame()
        return pandas.DataFrame.from_records(records, columns=list(records[0]))
