"""The API's functions over more than one trace, each the function behind its command: `diff` is
`mlptui diff --json`, `check` is `mlptui check`, `load_run` is `mlptui summary RUN_DIR --json`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.api import compare
from mlptui.api.handle import Trace, load
from mlptui.api.results import Check, Ranks
from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    from mlptui.trace.reports.diff import DiffReport


def _handle(trace: Trace | str | Path) -> Trace:
    return trace if isinstance(trace, Trace) else load(trace)


def diff(a: Trace | str | Path, b: Trace | str | Path, step_a: int | None = None,
         step_b: int | None = None) -> DiffReport:
    """B against A, aligned on ProfilerStep#step_a of A and #step_b of B (default: each one's median step)."""
    return compare.diff(_handle(a).trace, _handle(b).trace, step_a, step_b)


def check(trace: Trace | str | Path, expectations: list[str] | str) -> Check:
    """Each expectation (docs/check.md) against the trace: whether it holds and what the trace shows. A
    malformed expectation raises MlptuiError before the trace is read."""
    parsed = compare.parse_all(expectations)
    return compare.check(_handle(trace).trace, parsed)


def load_run(run_dir: str | Path) -> Ranks:
    """The report of a folder whose traces are the ranks of one run, read in local worker processes."""
    from mlptui.sources.dispatch import is_folder, list_traces, source_kind
    from mlptui.trace.parse.rank_hint import rank_files_or_why
    from mlptui.trace.runs.run_summary import summarize_run

    spec = str(run_dir)
    if source_kind(spec) != "local":
        raise MlptuiError(f"ranks reads a run folder on this machine, not {spec}")
    if not is_folder(spec):
        raise MlptuiError(f"{spec} is not a folder: ranks reads a folder of rank traces")
    found = list_traces(spec)
    if not found:
        raise MlptuiError(f"no traces (*.json, *.json.gz) in {spec}")
    files, why = rank_files_or_why([Path(f) for f in found])
    if files is None:
        raise MlptuiError(f"{spec}: not one run: {why or 'the traces name no ranks'}")
    run = summarize_run(files)
    if run.report is None:
        more = f" (and {len(run.failed) - 1} more)" if len(run.failed) > 1 else ""
        raise MlptuiError(f"no rank of the run could be read: {run.failed[0]}{more}")
    return Ranks(report=run.report, sources=run.sources, failed=run.failed)
