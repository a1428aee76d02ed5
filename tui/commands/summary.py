"""`mlptui summary PATH [--json|--md]`: a headless report of one trace (a folder lists its traces)."""

from __future__ import annotations

import argparse
import sys

import orjson


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="trace file (.json, .json.gz, *.pt.trace.json[.gz]), folder, host:path or hf://")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable JSON (shape documented in README)")
    fmt.add_argument("--md", action="store_true", help="Markdown, for a pull-request comment")
    parser.add_argument("--top", type=int, default=15, metavar="N",
                        help="rows per table in text and Markdown (default 15; --json has everything)")


def run(args: argparse.Namespace) -> int:
    from mlptui.gc_policy import bulk_allocation
    from mlptui.sources.dispatch import is_folder, list_traces, open_trace
    from mlptui.trace.analysis.summary import render_markdown, render_text, summarize

    if is_folder(args.path):
        found = list_traces(args.path)
        from mlptui.commands.summary_ranks import rank_run_summary

        if rank_run_summary(args, found):
            return 0
        if args.json:
            sys.stdout.write(orjson.dumps({"folder": args.path, "traces": found, "ranks": None},
                                          option=orjson.OPT_INDENT_2).decode() + "\n")
        elif not found:
            print(f"{args.path}: no traces in this folder")
        else:
            print(f"{len(found)} trace(s) in {args.path}; `mlptui summary <one of them>` reports one:")
            print("\n".join(found))
        return 0
    with bulk_allocation():
        trace = open_trace(args.path)
        report = summarize(trace)
    report["ranks"] = None  # one trace; a folder of rank traces has a "ranks" section
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    elif args.md:
        sys.stdout.write(render_markdown(report, top=args.top))
    else:
        sys.stdout.write(render_text(report, top=args.top))
    return 0
