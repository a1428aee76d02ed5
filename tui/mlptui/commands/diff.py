"""`mlptui diff A B [--json|--md] [--step-a N --step-b N]`: the headless diff of two traces."""

from __future__ import annotations

import argparse
import shutil
import sys

from mlptui.base.errors import MlptuiError
from mlptui.base.units import duration


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="the reference trace (file, host:path, hf://...)")
    parser.add_argument("b", metavar="B", help="the trace compared with A")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    fmt.add_argument("--md", action="store_true", help="Markdown (for a pull request)")
    parser.add_argument("--step-a", type=int, metavar="N",
                        help="align ProfilerStep#N of A (default: A's median-duration step)")
    parser.add_argument("--step-b", type=int, metavar="N",
                        help="align ProfilerStep#N of B (default: B's median-duration step)")
    parser.add_argument("--raw", action="store_true", help="raw kernel names instead of short ones")
    parser.add_argument("--only-diff", action="store_true", help="leave out rows whose status is `same`")
    parser.add_argument("--fail-if-slower", metavar="PCT",
                        help="a regression gate: exit 1 when B is more than PCT%% slower than A on the figure "
                             "--on names; prints the Markdown report")
    parser.add_argument("--on", choices=("step", "gpu-busy", "unprofiled"),
                        help="the figure --fail-if-slower judges: step (median step window), gpu-busy, or "
                             "unprofiled (the runs' manifests' timings); default: unprofiled when both runs have "
                             "it, else step")


def run(args: argparse.Namespace) -> int:
    from mlptui.commands.output import dumps_json, safe_doc
    from mlptui.gc_policy import bulk_allocation
    from mlptui.sources.dispatch import open_trace

    with bulk_allocation():      # the diff's imports too: the collector's passes over them free nothing
        from mlptui.trace.diff.gate import with_gate
        from mlptui.trace.diff.trace_diff import diff_traces, step_by_number

        a = open_trace(args.a)
        b = open_trace(args.b)
        step_a = None if args.step_a is None else step_by_number(a, args.step_a, "A")
        step_b = None if args.step_b is None else step_by_number(b, args.step_b, "B")
        doc = diff_traces(a, b, step_a, step_b).report()
    checks = None
    if args.fail_if_slower is not None:
        from mlptui.trace.diff.gate import gate, parse_pct

        pct = parse_pct(args.fail_if_slower)
        checks = gate(doc, pct, args.on)
    elif args.on is not None:
        raise MlptuiError("--on names the figure --fail-if-slower judges: give --fail-if-slower PCT too")
    if args.json:
        out = dumps_json(doc if checks is None else with_gate(doc, checks))
    elif args.md or checks is not None:   # the gate's report is Markdown, for a pull request
        from mlptui.render.diff_text import render_markdown
        from mlptui.render.gate_text import gate_lines

        out = render_markdown(safe_doc(doc), raw=args.raw, only_diff=args.only_diff)
        if checks is not None:
            out = out.rstrip("\n") + "\n" + "\n".join(gate_lines(checks, pct)) + "\n"
    else:
        from mlptui.render.diff_text import render_text

        width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
        out = render_text(safe_doc(doc), raw=args.raw, width=max(80, width), only_diff=args.only_diff)
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise MlptuiError(f"cannot write the report ({exc.strerror or exc})") from None
    failed = [c for c in checks or [] if c.failed]
    if failed:
        print("mlptui: B is slower than A beyond the gate, judged on " + "; ".join(
            f"{c.what} +{c.slower_pct:.1f}% ({duration(c.a_us)} → {duration(c.b_us)})" for c in failed), file=sys.stderr)
        return 1
    return 0
