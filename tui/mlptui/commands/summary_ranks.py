"""`mlptui summary RUN_DIR`: a folder whose traces are the ranks of one job, reported as one run.

Each rank becomes a small digest where it is read — in this process, in local worker processes, or with
`--scheduler tcp://host:8786` on a Dask cluster — and the digests reduce to the report
(mlptui.trace.runs). A rank that cannot be read is named with its reason and the others are reported;
a folder whose traces name ranks but are not one run says why it is listed as files instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    from mlptui.trace.runs.run_summary import RunSummary


def _progress() -> Callable[[int, int, str], None] | None:
    """A one-line counter on stderr as ranks finish, when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, path: str) -> None:
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r\x1b[Kranks: {done} of {total} done{end}")
        sys.stderr.flush()

    return show


def rank_run_summary(args: argparse.Namespace, found: list[str]) -> bool | str:
    """Print the run's report and return True when `found` (a local folder's traces) are its ranks;
    otherwise False, or why traces that name ranks are not one run."""
    from mlptui.sources.dispatch import source_kind
    from mlptui.trace.parse.rank_hint import rank_files_or_why
    from mlptui.trace.runs.run_summary import summarize_run

    if source_kind(args.path) != "local" or len(found) < 1:
        return False
    files, why = rank_files_or_why([Path(f) for f in found])
    if files is None:
        return why or False
    run = summarize_run(files, on_progress=_progress())
    _print_run(args, run)
    return True


def scheduler_summary(args: argparse.Namespace) -> int:
    """`summary RUN_DIR --scheduler tcp://host:port`: the ranks read on the Dask cluster's workers. A
    `host:path` folder is on that host's disk: its listing and every rank are read by workers there."""
    from mlptui.sources.dispatch import is_folder, list_traces, source_kind
    from mlptui.sources.ssh_spec import parse_ssh_spec
    from mlptui.trace.parse.rank_hint import rank_files_or_why
    from mlptui.trace.runs.dask_map import Limits, list_run
    from mlptui.trace.runs.run_summary import summarize_run

    limits = Limits(getattr(args, "worker_wait", 60.0), getattr(args, "rank_timeout", 600.0))
    host = None
    kind = source_kind(args.path)
    if kind == "ssh":
        spec = parse_ssh_spec(args.path)
        host = spec.host
        files, why = list_run(args.scheduler, host, spec.path, limits)
    elif kind == "local":
        if not is_folder(args.path):
            raise MlptuiError("--scheduler reads the ranks of a run folder; give a folder, not one trace")
        found = list_traces(args.path)
        if not found:
            from mlptui.trace.parse.discover import no_traces_message

            raise MlptuiError(no_traces_message(Path(args.path).expanduser(), args.path))
        files, why = rank_files_or_why([Path(f) for f in found])
    else:
        raise MlptuiError(f"--scheduler reads a run folder on this machine or on a worker's host (host:path), "
                          f"not {args.path}")
    if files is None:
        raise MlptuiError(f"{args.path}: not one run: {why or 'the traces name no ranks'}")
    run = summarize_run(files, scheduler=args.scheduler, host=host, on_progress=_progress(), limits=limits)
    _print_run(args, run)
    return 0


def _print_run(args: argparse.Namespace, run: RunSummary) -> None:
    from mlptui.commands.output import dumps_json, safe_doc, safe_lines
    from mlptui.render.ranks_text import render_ranks_text
    from mlptui.trace.analysis.comms.links import link_for

    if run.report is None:
        more = f" (and {len(run.failed) - 1} more)" if len(run.failed) > 1 else ""
        raise MlptuiError(f"no rank of the run could be read: {run.failed[0]}{more}")
    for line in run.failed:
        print(safe_lines([f"mlptui: rank left out: {line}"]), file=sys.stderr)
    if args.json:
        doc = {"folder": args.path, "traces": run.sources, "failed": run.failed, "ranks": run.report}
        sys.stdout.write(dumps_json(doc))
        return
    text = render_ranks_text(safe_doc(run.report), link_for(run.device))
    if run.failed:
        text += "\n" + safe_lines([f"left out (could not be read): {line}" for line in run.failed]) + "\n"
    sys.stdout.write(f"# {args.path}\n\n```\n{text}```\n" if args.md else text)
