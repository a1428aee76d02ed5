"""mlptui: see what PyTorch does on the GPU, from its profiler traces.

    import mlptui
    t = mlptui.load("run.pt.trace.json.gz")      # a file, a run folder, host:path or hf://
    t.summary().total

The Python API (docs/api.md) is `mlptui.api`; its public names are reached from here too, loaded on first
use, so `import mlptui` (which every command, runner and test does) costs nothing.
"""

from __future__ import annotations

from pkgutil import extend_path
from typing import TYPE_CHECKING, Any

# One package over two source roots in a development install: tui/mlptui (the core and the viewer) and
# runners/mlptui (the runners); a wheel merges them into one folder. Extended in place, so the package's
# spec (which import-linter reads) lists both roots too.
__path__[:] = extend_path(__path__, __name__)

if TYPE_CHECKING:
    from mlptui.api import (
        Check,
        CheckedOutcome,
        DiffReport,
        Dispatch,
        Findings,
        Memory,
        MlptuiError,
        Modules,
        Overview,
        Ranks,
        RanksReport,
        StepStats,
        SummaryReport,
        Table,
        Trace,
        check,
        diff,
        load,
        load_run,
        to_pandas,
    )

# The API's public names (mlptui.api.__all__), loaded on first use by __getattr__ below.
__all__ = [
    "Check", "CheckedOutcome", "DiffReport", "Dispatch", "Findings", "Memory", "MlptuiError", "Modules", "Overview",
    "Ranks", "RanksReport", "StepStats", "SummaryReport", "Table", "Trace", "check", "diff", "load", "load_run",
    "to_pandas",
]


def _api() -> Any:
    import mlptui.api

    return mlptui.api


def __getattr__(name: str) -> Any:
    api = _api()
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'mlptui' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_api().__all__})
