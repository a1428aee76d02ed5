"""CPU and wall seconds of each section of `mlptui summary --json`, in one process, uncached.

    python benchmarks/bench_summary.py TRACE              # load, then summarize() with each section timed
    python benchmarks/bench_summary.py TRACE --ops-first  # make the Op and GpuOp objects first, on their own line
    python benchmarks/bench_summary.py TRACE --runs 3     # each run in a fresh process; medians
    python benchmarks/bench_summary.py TRACE --runs 5 --without critical_path
    python benchmarks/bench_summary.py TRACE --runs 5 --without critical_path --text
                                                          # the same for plain `summary`, its text written
                                                          # and, in turn, runs without that section: the
                                                          # whole child's time with / without, side by side

The sections are timed by wrapping the functions that `summarize` calls (in mlptui.trace.analysis.report.summary
and .profile_sections) for the one call, so the figures are what the command pays, shared work included:
per-trace results kept with the trace (`Trace.derive`) are paid by the first section that asks. Nested lines (the
profile sections, the kernels' args re-read) are part of the line above them. A name the code under test
does not have is left out, so the same script times an older tree (run it with that tree's package first
on PYTHONPATH). CPU time is `time.process_time`; the load average is printed because the box is shared.

`--without critical_path` runs a second child per run, in turn with the first (with, without, with, ...),
whose summary leaves the section out (its function returns no steps, as for a trace it has nothing to say
about); it prints the child's whole time from the start of its imports to the JSON written, for both, and
the median of the runs' with/without ratios (pairs keep the ratio fair when the machine's load drifts).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from mlptui.trace.reports.summary import CriticalPathReport

# (module, function, label, nesting level), in the order summarize() calls them.
_SECTIONS = (
    ("mlptui.trace.analysis.report.summary", "trace_findings", "findings", 0),
    ("mlptui.trace.analysis.report.summary", "all_step_stats", "step figures: each step", 0),
    ("mlptui.trace.analysis.report.summary", "step_stats", "step figures: all steps", 0),
    ("mlptui.trace.analysis.report.summary", "_grouped", "kernels, memcpy/memset groups", 0),
    ("mlptui.trace.analysis.report.summary", "launch_calls", "launch calls", 0),
    ("mlptui.trace.analysis.report.summary", "_dispatch", "dispatch paths", 0),
    ("mlptui.trace.analysis.report.summary", "dispatch_paths", "dispatch paths", 0),
    ("mlptui.trace.analysis.report.summary", "critical_path_report", "critical path", 0),
    ("mlptui.trace.analysis.report.summary", "profile_sections", "profile sections", 0),
    ("mlptui.trace.analysis.report.profile_sections", "overview", "overview", 1),
    ("mlptui.trace.analysis.kernels.kernel_figures", "trace_launches", "kernels' args re-read", 2),
    ("mlptui.trace.analysis.kernels.kernel_figures", "event_launches", "kernels' args re-read", 2),
    ("mlptui.trace.analysis.report.profile_sections", "operators_in_steps", "operators", 1),
    ("mlptui.trace.analysis.report.profile_sections", "memory_report", "memory", 1),
    ("mlptui.trace.analysis.report.profile_sections", "module_tree", "modules", 1),
    ("mlptui.trace.analysis.report.profile_sections", "kernel_stats", "kernel stats", 1),
    ("mlptui.trace.analysis.report.profile_sections", "recommendations", "recommendations", 1),
)


def _timer(rows: dict[str, list[float]], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            row = rows.setdefault(label, [0.0, 0.0])
            row[0] += time.process_time() - c0
            row[1] += time.perf_counter() - t0
    return timed


# sections --without can leave out: (module, function, what it returns instead)
_LEAVE_OUT = {"critical_path": ("mlptui.trace.analysis.report.summary", "critical_path_report",
                                lambda trace, **_: CriticalPathReport(steps=[], collectives=""))}


def measure(path: str, ops_first: bool, without: str | None = None, text: bool = False) -> dict[str, Any]:
    c0, t0 = time.process_time(), time.perf_counter()
    if without:
        module, name, stand_in = _LEAVE_OUT[without]
        setattr(importlib.import_module(module), name, stand_in)
    from mlptui.commands import output
    from mlptui.gc_policy import bulk_allocation
    from mlptui.trace.analysis.report.summary import summarize
    from mlptui.trace.parse.load import load_trace
    rows: dict[str, list[float]] = {"imports": [time.process_time() - c0, time.perf_counter() - t0]}
    levels = {"imports": 0}
    for module, name, label, level in _SECTIONS:
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            setattr(mod, name, _timer(rows, label, getattr(mod, name)))
            levels[label] = level
    with bulk_allocation():
        trace = _timer(rows, "load + index", load_trace)(path)
        levels["load + index"] = 0
        if ops_first:
            _timer(rows, "Op and GpuOp objects", lambda: (len(trace.ops), len(trace.gpu)))()
            levels["Op and GpuOp objects"] = 0
        # as the command asks: plain `summary` leaves the critical path's segments out (an older tree has them)
        bare = text and "path_segments" in inspect.signature(summarize).parameters
        report = _timer(rows, "report (summarize)", summarize)(trace, **({"path_segments": False} if bare else {}))
        levels["report (summarize)"] = 0
    if text:    # what plain `summary` pays to make its output: the text it writes
        from mlptui.commands.summary import format_report
        _timer(rows, "text out", format_report)(report, "text")
        levels["text out"] = 0
    else:       # what `summary --json` pays to make its output: the bytes it writes (an older tree: its str)
        _timer(rows, "JSON out", getattr(output, "json_bytes", None) or output.dumps_json)(report)
        levels["JSON out"] = 0
    whole = [time.process_time() - c0, time.perf_counter() - t0]
    return {"rows": rows, "levels": levels, "made_ops": "ops" in trace.__dict__, "whole": whole}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--ops-first", action="store_true", help="make the Op objects before the report")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--without", choices=sorted(_LEAVE_OUT), help="also time runs without this section")
    parser.add_argument("--text", action="store_true", help="time plain `summary` (its text) instead of --json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-without", choices=sorted(_LEAVE_OUT), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.trace, args.ops_first, args.child_without, args.text)))
        return 0
    env = {**os.environ, "MLPTUI_NO_CACHE": "1"}
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[:3]}")
    runs, bare = [], []
    out_line = "text out" if args.text else "JSON out"
    for _ in range(args.runs):
        argv = [sys.executable, __file__, args.trace, "--child"] + (["--ops-first"] if args.ops_first else [])
        argv += ["--text"] if args.text else []
        out = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        if args.without:
            out = subprocess.run([*argv, "--child-without", args.without], capture_output=True, text=True, env=env,
                                 check=True)
            bare.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'section':<36} {'CPU s':>7} {'wall s':>7}   (median of {len(runs)}; Op objects made: "
          f"{runs[0]['made_ops']})")
    levels = runs[0]["levels"]
    outer = ("imports", "load + index", "Op and GpuOp objects", "report (summarize)")
    order = [(k, 0) for k in outer if k in levels]
    order += [(k, v + 1) for k, v in levels.items() if k not in outer and k != out_line]
    order.append((out_line, 0))
    for label, level in order:
        if label not in runs[0]["rows"]:
            continue
        cpu = statistics.median(r["rows"].get(label, [0.0, 0.0])[0] for r in runs)
        wall = statistics.median(r["rows"].get(label, [0.0, 0.0])[1] for r in runs)
        print(f"{'  ' * level + label:<36} {cpu:7.3f} {wall:7.3f}")
    if bare:
        print(f"\nwhole child, imports to {out_line} (median of {len(runs)} pairs, run in turn):")
        print(f"{'':<36} {'CPU s':>7} {'wall s':>7}")
        for label, rs in ((f"with {args.without}", runs), (f"without {args.without}", bare)):
            print(f"{label:<36} {statistics.median(r['whole'][0] for r in rs):7.3f} "
                  f"{statistics.median(r['whole'][1] for r in rs):7.3f}")
        ratio = [statistics.median(a["whole"][j] / b["whole"][j] for a, b in zip(runs, bare, strict=True))
                 for j in (0, 1)]
        print(f"{'ratio with / without':<36} {ratio[0]:7.2f} {ratio[1]:7.2f}")
        # the top-level lines of both kinds of child: where the with / without difference comes from (the
        # lines before the summary do the same work in both, so a difference there is the machine's)
        print(f"\n{'top-level lines, CPU s (medians)':<38} {'with':>7} {'without':>8}")
        for label in [lb for lb in ("imports", "load + index", "report (summarize)", out_line)
                      if lb in runs[0]["rows"]]:
            a = statistics.median(r["rows"].get(label, [0.0])[0] for r in runs)
            b = statistics.median(r["rows"].get(label, [0.0])[0] for r in bare)
            print(f"  {label:<36} {a:7.3f} {b:8.3f}")
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
