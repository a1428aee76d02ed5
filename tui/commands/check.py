"""`mlptui check TRACE --expect "…"`: guess first, then look. Prints each expectation with what the trace
shows; exit 0 when all hold, 1 on any mismatch (with a one-line reason on stderr), 2 for a malformed
expectation or an unreadable trace. Without --expect, the expectations come from `expect.toml` beside
the trace (or --expectations FILE). The language: mlptui.trace.analysis.expectations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace file (.json, .json.gz, .pt.trace.json.gz)")
    parser.add_argument("--expect", action="append", default=[], metavar="EXPECTATION",
                        help='e.g. "kernels per step == 1", "no memcpy", "attention kernel: flash", '
                             '"tensor cores: all GEMMs" (repeatable; see README: mlptui check)')
    parser.add_argument("--expectations", metavar="FILE",
                        help="a TOML expectations file (default: expect.toml beside the trace, when no --expect)")


def run(args: argparse.Namespace) -> int:
    from mlptui.trace.analysis.expect_file import EXPECT_FILE, beside, expectations_for
    from mlptui.trace.analysis.expectations import check, parse
    from mlptui.trace.parse.load import load_trace

    path = Path(args.trace)
    texts = list(args.expect)
    file = Path(args.expectations) if args.expectations else (None if texts else beside(path))
    if file is not None:
        texts += expectations_for(path, file)
    if not texts:
        raise MlptuiError(f"nothing to check: give --expect, or put {EXPECT_FILE} beside the trace")
    expectations = [parse(t) for t in texts]          # a malformed one stops before the trace loads
    outcomes = check(load_trace(path), expectations)
    width = max(len(o.expectation.text) for o in outcomes)
    print(f"{printable(path.name)}: {sum(o.ok for o in outcomes)} of {len(outcomes)} expectations hold")
    for o in outcomes:
        mark = "ok      " if o.ok else "MISMATCH"
        print(f"  {mark}  {printable(o.expectation.text):<{width}}  the trace shows: {printable(o.shows)}")
    missed = [o for o in outcomes if not o.ok]
    if missed:
        first = missed[0]
        more = f" (and {len(missed) - 1} more)" if len(missed) > 1 else ""
        print(f"mlptui: expected {printable(first.expectation.text)!r}, the trace shows "
              f"{printable(first.shows)}{more}", file=sys.stderr)
        return 1
    return 0
