"""`mlptui summary PATH [--json|--md]`: a headless report of one trace (a folder lists its traces)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlptui.trace.reports.summary import SummaryReport

# the report's tables (lists of rows of one shape), by their key in `--json`
CSV_TABLES = ("steps", "breakdown", "operators", "kernel_stats", "kernels", "memory_ops", "launch_calls", "dispatch")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="trace file (.json, .json.gz, *.pt.trace.json[.gz]), folder, host:path or hf://")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable JSON (shape documented in docs/json.md)")
    fmt.add_argument("--md", action="store_true", help="Markdown, for a pull-request comment")
    fmt.add_argument("--csv", metavar="TABLE", choices=CSV_TABLES,
                     help=f"one table of the report as CSV, unformatted figures: {', '.join(CSV_TABLES)}")
    parser.add_argument("--top", type=int, default=15, metavar="N",
                        help="rows per table in text and Markdown (default 15; --json has everything)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="a folder of ranks: read them on this Dask scheduler's workers instead of local "
                             "processes (needs the `cluster` extra: pip install '.[cluster]' in the mlptui checkout)")
    parser.add_argument("--worker-wait", type=_seconds, default=60.0, metavar="SECONDS",
                        help="with --scheduler: how long to wait for a worker to be there, and the longest time "
                             "the scheduler may have none while ranks are read (default 60)")
    parser.add_argument("--rank-timeout", type=_seconds, default=600.0, metavar="SECONDS",
                        help="with --scheduler: a rank not read this long after the last one finished is "
                             "reported lost (default 600)")


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86_400):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 and at most 86400")
    return value


def run(args: argparse.Namespace) -> int:
    from mlptui.base.errors import MlptuiError
    from mlptui.commands.output import dumps_json, safe_doc, safe_lines
    from mlptui.gc_policy import bulk_allocation
    from mlptui.sources.dispatch import is_folder, list_traces, open_trace

    if getattr(args, "scheduler", None):
        from mlptui.commands.summary_ranks import scheduler_summary

        return scheduler_summary(args)
    if is_folder(args.path):
        if getattr(args, "csv", None):
            raise MlptuiError("--csv reports one trace: name a trace file, not a folder")
        found = list_traces(args.path)
        if not found:      # the same one line and exit status as `mlptui view` of an empty folder
            raise MlptuiError(_no_traces(args.path))
        from mlptui.commands.summary_ranks import rank_run_summary

        outcome = rank_run_summary(args, found)
        if outcome is True:
            return 0
        why = outcome or None
        if args.json:
            sys.stdout.write(dumps_json({"folder": args.path, "traces": found, "ranks": None, "not_a_run": why}))
        else:
            if why:
                print(safe_lines([f"not one run: {why}"]))
            print(safe_lines([f"{len(found)} trace(s) in {args.path}; `mlptui summary <one of them>` reports one:"]))
            print(safe_lines(found))
        return 0
    with bulk_allocation():      # the report's imports too: the collector's passes over them free nothing
        from mlptui.trace.analysis.report.summary import summarize

        trace = open_trace(args.path)
        # the critical path's segments only in JSON: the text, Markdown and CSV never show them
        report = summarize(trace, path_segments=bool(args.json))
    if getattr(args, "csv", None):
        from mlptui.viewmodels.table_export import dict_rows_csv

        if args.csv == "breakdown":
            from mlptui.trace.analysis.report.profile_sections import breakdown_rows

            rows = breakdown_rows(report.overview)
        else:
            rows = [_row(r) for r in getattr(report, args.csv) or []]
        sys.stdout.write(dict_rows_csv(safe_doc(rows)))
        return 0
    if args.json:
        from mlptui.commands.output import write_json

        write_json(report)
        return 0
    sys.stdout.write(format_report(report, "md" if args.md else "text", top=args.top))
    return 0


def _row(row: Any) -> dict[str, Any]:
    """A table's row as CSV takes it: a typed row's fields in order, or the row as it is."""
    import dataclasses

    return dataclasses.asdict(row) if dataclasses.is_dataclass(row) and not isinstance(row, type) else dict(row)


def format_report(report: SummaryReport, fmt: str, top: int = 15) -> str:
    """The report as `mlptui summary` writes it: "json" (exact), "md" or "text" (terminal-safe)."""
    from mlptui.commands.output import dumps_json, safe_doc
    from mlptui.render.summary_text import render_markdown, render_text
    from mlptui.viewmodels.trust_text import trust_banner

    if fmt == "json":
        return dumps_json(report)
    render = render_markdown if fmt == "md" else render_text
    doc: SummaryReport = safe_doc(report)
    text = render(doc, top=top)
    banner = trust_banner(doc.integrity)      # first: nothing below reads right without it
    if banner is None:
        return text
    return (f"> **{banner}**\n\n" if fmt == "md" else f"{banner}\n") + text


def _no_traces(spec: str) -> str:
    """Where a folder's traces are, when it holds none itself (a local folder of run folders)."""
    from mlptui.sources.dispatch import source_kind
    from mlptui.trace.parse.discover import no_traces_message

    if source_kind(spec) != "local":
        return f"no traces (*.json, *.json.gz) in {spec}"
    return no_traces_message(Path(spec).expanduser(), spec)
