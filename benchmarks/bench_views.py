"""CPU and wall seconds of each profiler view's computation, for the all-steps scope and for one step.

    python benchmarks/bench_views.py TRACE              # both scopes, each in a fresh process
    python benchmarks/bench_views.py TRACE --step 7     # that step (default: the middle one)
    python benchmarks/bench_views.py TRACE --scope all  # one scope only, in this process

Each scope is measured in its own process after loading the trace, so a scope pays the per-trace work it
triggers (what a first open in the app pays) and nothing another scope left behind. Re-reading the
trace for full args happens once per trace whatever asks first: it is forced and timed on its own line
before the views. Sections run in the order the app computes them (mlptui.viewmodels.profile_views),
each under the same collector policy. CPU time is `time.process_time`; the load average is printed
beside it because wall time on a shared machine is noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _timed(rows: list[tuple[str, float, float]], label: str, work: Callable[[], Any]) -> Any:
    c0, t0 = time.process_time(), time.perf_counter()
    result = work()
    rows.append((label, time.process_time() - c0, time.perf_counter() - t0))
    return result


def _loaded(trace: Any) -> Any:
    """The trace with its ops built: one read from the index cache builds them on first use."""
    len(trace.ops), len(trace.gpu)
    return trace


def measure(path: str, scope: str, step: int | None) -> dict[str, Any]:
    """Per section (label, CPU s, wall s) of one scope: "all" or "step"."""
    from mlptui.gc_policy import bulk_allocation
    from mlptui.trace.analysis.advice.recommendations import recommendations
    from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
    from mlptui.trace.analysis.memory.memory import memory_report
    from mlptui.trace.analysis.operators.modules import module_tree
    from mlptui.trace.analysis.operators.operators import operators_in_steps
    from mlptui.trace.analysis.steps.breakdown import category_intervals
    from mlptui.trace.analysis.steps.overview import overview
    from mlptui.trace.parse.load import load_trace

    rows: list[tuple[str, float, float]] = []
    with bulk_allocation():
        trace = _timed(rows, "load", lambda: _loaded(load_trace(path)))
        _timed(rows, "args re-read (once per trace)", lambda: trace.args(0))
    if scope == "step":
        step = len(trace.steps) // 2 if step is None else step
        if not 0 <= step < len(trace.steps):
            raise SystemExit(f"bench_views: the trace has {len(trace.steps)} steps, no step {step}")
    else:
        step = None
    only = bool(trace.steps)
    with bulk_allocation():
        spans = _timed(rows, "category intervals", lambda: category_intervals(trace))
        ov = _timed(rows, "overview", lambda: overview(trace, step=step, spans=spans))
        ops = _timed(rows, "operators", lambda: operators_in_steps(trace, step=step))
        _timed(rows, "recommendations", lambda: recommendations(trace, ov, ops, step))
        _timed(rows, "kernels", lambda: kernel_stats(trace, step, steps_only=only))
        _timed(rows, "memory", lambda: memory_report(trace, step))
        _timed(rows, "modules", lambda: module_tree(trace, step))
        _timed(rows, "operators by input shapes", lambda: operators_in_steps(trace, by_shapes=True, step=step))
        _timed(rows, "kernels by launching op", lambda: kernel_stats(trace, step, by_op=True, steps_only=only))
    name = "all steps" if step is None else f"step {step} ({trace.steps[step].name})"
    return {"scope": name, "rows": rows, "events": f"{len(trace.ops)} ops, {len(trace.gpu)} GPU ops, "
                                                   f"{len(trace.memory)} memory events, {len(trace.steps)} steps"}


def _print(result: dict[str, Any]) -> None:
    print(f"scope: {result['scope']}  ({result['events']})")
    print(f"  {'section':<32} {'CPU s':>8} {'wall s':>8}")
    views = 0.0
    for label, cpu, wall in result["rows"]:
        print(f"  {label:<32} {cpu:8.2f} {wall:8.2f}")
        if label not in ("load", "args re-read (once per trace)"):
            views += cpu
    print(f"  {'views in all (CPU)':<32} {views:8.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--step", type=int, help="the step of the one-step scope (default: the middle one)")
    parser.add_argument("--scope", choices=("all", "step"), help="measure one scope here, not both in children")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)   # a child's answer
    args = parser.parse_args()
    if not os.path.exists(args.trace):
        print(f"bench_views: no such trace: {args.trace}", file=sys.stderr)
        return 2
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[:3]}")
    if args.scope is not None:
        result = measure(args.trace, args.scope, args.step)
        if args.json:
            print(json.dumps(result))
        else:
            _print(result)
        return 0
    for scope in ("all", "step"):
        argv = [sys.executable, __file__, args.trace, "--scope", scope, "--json"]
        if args.step is not None:
            argv += ["--step", str(args.step)]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "bench_views: a child failed",
                  file=sys.stderr)
            return 1
        _print(json.loads(proc.stdout.strip().splitlines()[-1]))
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
