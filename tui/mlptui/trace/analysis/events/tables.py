"""A trace's ops and GPU ops as numpy columns, for the analyses that weigh every op.

    tables(trace) -> Tables        the trace's own columns (mlptui.trace.store.TraceColumns)

The columns are the trace's stored form, so a report that reads only these never makes the 200,000 Op
and GpuOp objects of a 100 MB trace. Strings are ids into `Tables.strings`; categories too (`cat_ids`
turns a set of normalised categories into the ids to test against).
"""

from __future__ import annotations

from mlptui.trace.model import Trace
from mlptui.trace.store import TraceColumns as Tables
from mlptui.trace.store import distinct, unique_ids

__all__ = ["Tables", "distinct", "tables", "unique_ids"]


def tables(trace: Trace) -> Tables:
    """The columns of `trace` (see the module docstring)."""
    return trace.columns
