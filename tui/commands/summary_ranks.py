"""`mlptui summary RUN_DIR`: a folder whose traces are the ranks of one job, reported as one run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlptui.base.errors import MlptuiError


def rank_run_summary(args: argparse.Namespace, found: list[str]) -> bool:
    """Print the run's report and return True when `found` (a local folder's traces) are its ranks."""
    from mlptui.commands.output import dumps_json, safe_doc
    from mlptui.sources.dispatch import source_kind
    from mlptui.trace.analysis.links import link_for
    from mlptui.trace.analysis.ranks import rank_run, ranks_report
    from mlptui.trace.analysis.ranks_render import render_ranks_text
    from mlptui.trace.parse.load_many import load_many
    from mlptui.trace.parse.rank_hint import rank_files

    if source_kind(args.path) != "local" or len(found) < 1:
        return False
    files = rank_files([Path(f) for f in found])
    if files is None:
        return False
    traces = []
    for path, result in load_many([str(p) for _, p in files]):
        if isinstance(result, MlptuiError):
            raise result if path in str(result) else MlptuiError(f"{path}: {result}")
        traces.append(result)
    ranked = rank_run(traces)
    if ranked is None:
        return False
    report = ranks_report(ranked)
    if args.json:
        doc = {"folder": args.path, "traces": [t.source for _, t in ranked], "ranks": report}
        sys.stdout.write(dumps_json(doc))
        return True
    text = render_ranks_text(safe_doc(report), link_for(ranked[0][1].device_name))
    sys.stdout.write(f"# {args.path}\n\n```\n{text}```\n" if args.md else text)
    return True
