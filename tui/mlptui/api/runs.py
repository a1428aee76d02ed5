"""The API's functions over more than one trace, each the function behind its command: `diff` is
`mlptui diff --json`, `check` is `mlptui check`, `ranks` is `mlptui summary RUN_DIR --json`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from mlptui.api.handle import TraceHandle, open_trace
from mlptui.api.results import Check, Diff, Ranks
from mlptui.api.rows import OutcomeRow
from mlptui.base.errors import MlptuiError


def _handle(trace: TraceHandle | str) -> TraceHandle:
    return trace if isinstance(trace, TraceHandle) else open_trace(trace)


def diff(a: TraceHandle | str, b: TraceHandle | str, step_a: int | None = None,
         step_b: int | None = None) -> Diff:
    """B against A, aligned on ProfilerStep#step_a of A and #step_b of B (default: each one's median step)."""
    from mlptui.trace.diff.trace_diff import diff_traces, step_by_number

    ta, tb = _handle(a).trace, _handle(b).trace
    ia = None if step_a is None else step_by_number(ta, step_a, "A")
    ib = None if step_b is None else step_by_number(tb, step_b, "B")
    doc = asdict(diff_traces(ta, tb, ia, ib).report())
    speedup = doc.get("speedup")
    return Diff(doc=doc, rows=list(doc.get("kernels") or []),
                speedup=float(speedup) if isinstance(speedup, (int, float)) else None)


def check(trace: TraceHandle | str, expectations: list[str] | str) -> Check:
    """Each expectation (docs/check.md) against the trace: whether it holds and what the trace shows. A
    malformed expectation raises MlptuiError before the trace is read."""
    from mlptui.render.check_text import shows_text
    from mlptui.trace.analysis.expectations.expectations import check as check_all
    from mlptui.trace.analysis.expectations.expectations import parse

    texts = [expectations] if isinstance(expectations, str) else list(expectations)
    if not texts:
        raise MlptuiError("nothing to check: give one expectation or more (docs/check.md)")
    parsed = [parse(t) for t in texts]
    outcomes = check_all(_handle(trace).trace, parsed)
    rows: list[OutcomeRow] = [{"expectation": o.expectation, "ok": o.ok, "shows": shows_text(o.shown)}
                              for o in outcomes]
    return Check(ok=all(r["ok"] for r in rows), rows=rows)


def ranks(run_dir: str | Path) -> Ranks:
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
    return Ranks(report=asdict(run.report), sources=run.sources, failed=run.failed)
