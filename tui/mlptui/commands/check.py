"""`mlptui check TRACE|FOLDER --expect "…"`: guess first, then look. Prints each expectation with what the
trace shows; exit 0 when all hold, 1 on any mismatch (with a one-line reason on stderr), 2 for a malformed
expectation or an unreadable trace. Without --expect, the expectations come from `expect.toml` beside the
trace (or --expectations FILE); a folder checks each of its traces that way. The language:
mlptui.trace.analysis.expectations.expectations (docs/check.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE",
                        help="a trace file (.json, .json.gz, .pt.trace.json.gz), or a folder of them")
    parser.add_argument("--expect", action="append", default=[], metavar="EXPECTATION",
                        help='e.g. "kernels per step == 1", "no memcpy", "attention kernel: flash", '
                             '"tensor cores: all GEMMs" (repeatable; docs/check.md)')
    parser.add_argument("--expectations", metavar="FILE",
                        help="a TOML expectations file (default: expect.toml beside the trace, when no --expect)")


def run(args: argparse.Namespace) -> int:
    from mlptui.trace.parse.discover import is_trace_name

    path = Path(args.trace)
    if not path.is_dir():
        missed = _check_one(path, args)
        if missed:
            print(f"mlptui: {missed}", file=sys.stderr)
            return 1
        return 0
    traces = sorted(p for p in path.iterdir() if p.is_file() and is_trace_name(p.name))
    if not traces:
        from mlptui.trace.parse.discover import no_traces_message

        raise MlptuiError(no_traces_message(path, str(path)))
    failures = []
    for trace in traces:
        missed = _check_one(trace, args)
        if missed:
            failures.append(f"{trace.name}: {missed}")
    if failures:
        more = f" (and {len(failures) - 1} more trace{'s' if len(failures) > 2 else ''})" if len(failures) > 1 else ""
        print(f"mlptui: {printable(failures[0])}{more}", file=sys.stderr)
        return 1
    return 0


def _check_one(path: Path, args: argparse.Namespace) -> str | None:
    """Check one trace and print its outcomes; the first mismatch as one line, or None."""
    from mlptui.render.check_text import first_mismatch, outcome_lines
    from mlptui.trace.analysis.expectations.expect_file import EXPECT_FILE, beside, expectations_for
    from mlptui.trace.analysis.expectations.expectations import check, parse
    from mlptui.trace.parse.load import load_trace

    texts = list(args.expect)
    file = Path(args.expectations) if args.expectations else (None if texts else beside(path))
    if file is not None:
        texts += expectations_for(path, file)
    if not texts:
        raise MlptuiError(f"nothing to check: give --expect, or put {EXPECT_FILE} beside the trace")
    expectations = [parse(t) for t in texts]          # a malformed one stops before the trace loads
    outcomes = check(load_trace(path), expectations)
    print("\n".join(outcome_lines(path.name, outcomes)))
    return first_mismatch(outcomes)
