"""CPU time of the critical path section in one process, step by step and piece by piece.

    python benchmarks/bench_critical_path.py TRACE                # critical_path() and the report's rows, and
                                                                  # critical_paths() and the rows of every step
                                                                  # (as summary makes them)
    python benchmarks/bench_critical_path.py TRACE --pieces       # and each piece of critical_path() alone
    python benchmarks/bench_critical_path.py TRACE --stages       # and each stage of critical_paths(), as summary
                                                                  # runs them, summed over the groups of steps
    python benchmarks/bench_critical_path.py TRACE --every 9 --repeats 15

The trace is loaded once; every `--every`-th step is taken, the set is timed `--repeats` times with the
collector off (each time over the same steps, so per-trace results kept with the trace are paid before),
and the best time is given per step and scaled to all the trace's steps. bench_summary.py times the
section as `summary` pays it, in fresh processes, where the machine's load moves each figure by ±10 %;
this one is for telling two versions of the code apart: run it with an older tree first on PYTHONPATH
(the pieces' functions that an older tree does not have are left out).
"""

from __future__ import annotations

import argparse
import gc
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from mlptui.trace.analysis.critical_path import (
    critical_flow,
    critical_graph,
    critical_path,
    critical_path_report,
)
from mlptui.trace.parse.load import load_trace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--every", type=int, default=9, help="take every Nth step (default 9)")
    parser.add_argument("--repeats", type=int, default=15, help="time the steps this many times; the best counts")
    parser.add_argument("--pieces", action="store_true", help="also time each piece of critical_path() alone")
    parser.add_argument("--stages", action="store_true",
                        help="also time each stage of critical_paths() over every step, group by group")
    args = parser.parse_args()
    trace = load_trace(args.trace)
    if not trace.steps:
        raise SystemExit("bench_critical_path: the trace has no steps")
    steps = list(range(0, len(trace.steps), args.every))
    paths = [critical_path.critical_path(trace, s) for s in steps]          # pays the per-trace results
    gc.disable()

    def line(label: str, fn: Callable[[], Any]) -> None:
        best = min(timeit.repeat(fn, number=1, repeat=args.repeats)) / len(steps)
        print(f"{label:<36} {best * 1e6:8.1f} µs a step {best * len(trace.steps):7.3f} s for "
              f"{len(trace.steps)} steps")

    print(f"{len(steps)} of {len(trace.steps)} steps, best of {args.repeats}")
    line("critical_path()", lambda: [critical_path.critical_path(trace, s) for s in steps])
    line("report rows (path_report)", lambda: [critical_path_report.path_report(p) for p in paths])
    # every step at once (summary's way; an older tree makes them step by step): the best of a few passes
    every = min(timeit.repeat(lambda: critical_path.critical_paths(trace), number=1, repeat=max(args.repeats // 3, 1)))
    print(f"{'critical_paths(), every step':<36} {every * 1e6 / len(trace.steps):8.1f} µs a step {every:7.3f} s for "
          f"{len(trace.steps)} steps")
    # the report's rows for every step, as critical_path_report makes them (an older tree: step by step)
    all_paths = critical_path.critical_paths(trace)
    report = critical_path_report
    if hasattr(report, "_segment_rows"):
        def rows() -> Any:
            return [report._step_report(p, r) for p, r in zip(all_paths, report._segment_rows(all_paths), strict=True)]
    else:
        def rows() -> Any:
            return [report.path_report(p) for p in all_paths]
    made = min(timeit.repeat(rows, number=1, repeat=max(args.repeats // 3, 1)))
    print(f"{'report rows, every step':<36} {made * 1e6 / len(trace.steps):8.1f} µs a step {made:7.3f} s for "
          f"{len(trace.steps)} steps")
    if args.pieces:
        _pieces(trace, steps, line)
    if args.stages:
        _stages(trace, args.repeats)
    return 0


class _Ticks:
    """CPU seconds since the last tick, summed by label."""

    def __init__(self) -> None:
        self.took: dict[str, float] = {}
        self.clock = time.process_time()

    def tick(self, label: str) -> None:
        now = time.process_time()
        self.took[label] = self.took.get(label, 0.0) + now - self.clock
        self.clock = now


def _stages(trace: Any, repeats: int) -> None:
    """critical_paths()'s stages as critical_batch runs them (its `tick`), each summed over the groups of
    steps, and the report's rows; the best of `repeats // 3` passes of each (a tree whose critical_batch
    takes no tick says so)."""
    import inspect

    from mlptui.trace.analysis.critical_path import critical_batch as batch

    if "tick" not in inspect.signature(batch.every_path).parameters:
        print("stages: this tree builds its groups another way")
        return
    best: dict[str, float] = {}
    for _ in range(max(repeats // 3, 1)):
        ticks = _Ticks()
        paths = batch.every_path(trace, critical_path._Part, critical_path.path_of, critical_path.TOP,
                                 critical_path._OWN_KIND, tick=ticks.tick)
        report = critical_path_report
        [report._step_report(p, r) for p, r in zip(paths, report._segment_rows(paths), strict=True)]
        ticks.tick("report rows")
        for label, took_s in ticks.took.items():
            best[label] = min(best.get(label, took_s), took_s)
    for label, took_s in best.items():
        print(f"  {label:<34} {took_s:7.3f} s")
    print(f"  {'all of them':<34} {sum(best.values()):7.3f} s")


def _pieces(trace: Any, steps: list[int], line: Callable[[str, Callable[[], Any]], None]) -> None:
    graphs = [critical_graph.build_graph(trace, s) for s in steps]
    flows = [critical_flow.Flow(g) for g in graphs]
    dists = [f.longest(g.weight) for f, g in zip(flows, graphs, strict=True)]
    walks = [f.backtrack(d, g.weight) for f, g, d in zip(flows, graphs, dists, strict=True)]
    rows = trace.derive(critical_graph._rows_by_step)
    line("  graph: CPU chains (_Cpu)", lambda: [critical_graph._Cpu(trace, trace.columns, rows.ops[s],
                                                                     trace.steps[s].ts) for s in steps])
    line("  graph: all (build_graph)", lambda: [critical_graph.build_graph(trace, s) for s in steps])
    line("  Flow's indexes", lambda: [critical_flow.Flow(g) for g in graphs])
    line("  longest distances of the path", lambda: [f.longest(g.weight) for f, g in zip(flows, graphs, strict=True)])
    line("  walk back", lambda: [f.backtrack(d, g.weight) for f, g, d in zip(flows, graphs, dists, strict=True)])
    line("  segments' columns", lambda: [critical_path._segments(trace, g, w, d)
                                         for g, w, d in zip(graphs, walks, dists, strict=True)])
    try:
        from mlptui.trace.analysis.critical_path.critical_tops import group_tops
    except ImportError:
        print("  top names, what-ifs: this tree ranks its names another way")
        return
    top, own_kind = critical_path.TOP, critical_path._OWN_KIND

    def tops_alone() -> list[Any]:      # each step's top names and the edges of its what-ifs, a group of one
        return [group_tops(trace, g, [w], np.array([0, len(g.weight)]), top, own_kind)
                for g, w in zip(graphs, walks, strict=True)]

    line("  top names and their edges", tops_alone)
    tops = tops_alone()
    line("  what-ifs (the rounds)", lambda: [f.sink_without(g.weight, t.gone, t.row, len(t.ranked[0]))
                                            for f, g, t in zip(flows, graphs, tops, strict=True)])


if __name__ == "__main__":
    raise SystemExit(main())
