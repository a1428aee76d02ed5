"""The Python API: the figures of `mlptui summary --json`, `diff --json` and `check`, as typed results.

    import mlptui.api as m
    t = m.open_trace("run.pt.trace.json.gz")
    t.summary().total["gpu_busy_us"]
    pandas.DataFrame(t.operators(sort="device_self_us").rows)

Documented in docs/api.md. Imports neither textual nor rich."""

from mlptui.api.handle import TraceHandle, open_trace
from mlptui.api.results import (
    Check,
    Diff,
    Dispatch,
    Findings,
    Memory,
    Modules,
    Overview,
    Ranks,
    Summary,
    Table,
)
from mlptui.api.runs import check, diff, ranks
from mlptui.base.errors import MlptuiError

__all__ = [
    "Check", "Diff", "Dispatch", "Findings", "Memory", "MlptuiError", "Modules", "Overview", "Ranks", "Summary",
    "Table", "TraceHandle", "check", "diff", "open_trace", "ranks",
]
