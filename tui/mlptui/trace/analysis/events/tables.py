"""A trace's ops and GPU ops as numpy columns, for the analyses that weigh every op.

    tables(trace) -> TraceColumns  the trace's own columns (mlptui.trace.store)

The columns are the trace's stored form, so a report that reads only these never makes the 200,000 Op
and GpuOp objects of a 100 MB trace. Strings are ids into `TraceColumns.strings`; categories too (`cat_ids`
turns a set of normalised categories into the ids to test against).
"""

from __future__ import annotations

from mlptui.trace.model import Trace
from mlptui.trace.store import TraceColumns, distinct, unique_ids

__all__ = ["TraceColumns", "distinct", "tables", "unique_ids"]


def tables(trace: Trace) -> TraceColumns:
    """The columns of `trace` (see the module docstring)."""
    return trace.columns
