"""The Python API: the figures of `mlptui summary --json`, `diff --json` and `check`, as typed results.

    import mlptui
    t = mlptui.load("run.pt.trace.json.gz")
    t.summary().total.gpu_busy_us
    t.operators().to_pandas()

Documented in docs/api.md. Imports neither textual nor rich."""

from mlptui.api.frames import to_pandas
from mlptui.api.handle import Trace, load
from mlptui.api.results import (
    Check,
    CheckedOutcome,
    Dispatch,
    Findings,
    Memory,
    Modules,
    Overview,
    Ranks,
    Table,
)
from mlptui.api.runs import check, diff, load_run
from mlptui.base.errors import MlptuiError
from mlptui.trace.reports.common import StepStats
from mlptui.trace.reports.diff import DiffReport
from mlptui.trace.reports.ranks import RanksReport
from mlptui.trace.reports.summary import SummaryReport

__all__ = [
    "Check", "CheckedOutcome", "DiffReport", "Dispatch", "Findings", "Memory", "MlptuiError", "Modules", "Overview",
    "Ranks", "RanksReport", "StepStats", "SummaryReport", "Table", "Trace", "check", "diff", "load", "load_run",
    "to_pandas",
]
