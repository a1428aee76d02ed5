"""Time `mlptui diff` on the trace_diff control/test pair (A100 vs V100, ~35 MB of JSON each), beside
the time to load the two traces alone. Goal: the diff itself in <= 3 s on a 2-core box.

    python benchmarks/bench_diff.py [A B] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlptui.render.diff_text import render_text  # noqa: E402
from mlptui.trace.diff.trace_diff import diff_traces  # noqa: E402
from mlptui.trace.parse.load import load_trace  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "hta"
GOAL_S = 3.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", nargs="?", default=str(CORPUS / "trace_diff__control__control.json.gz"))
    p.add_argument("b", nargs="?", default=str(CORPUS / "trace_diff__test__test.json.gz"))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    for path in (args.a, args.b):
        if not Path(path).exists():
            print(f"bench_diff: {path} not found", file=sys.stderr)
            return 2

    loads, diffs, reports = [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        a = load_trace(args.a)
        b = load_trace(args.b)
        t1 = time.perf_counter()
        d = diff_traces(a, b)
        t2 = time.perf_counter()
        render_text(d.report())
        t3 = time.perf_counter()
        loads.append(t1 - t0)
        diffs.append(t2 - t1)
        reports.append(t3 - t2)

    load_s, diff_s, report_s = (statistics.median(x) for x in (loads, diffs, reports))
    gpu_a = sum(len(r.a) for r in d.rows)
    gpu_b = sum(len(r.b) for r in d.rows)
    print(f"A: {args.a} ({a.device_name}, {len(a.gpu):,} GPU ops, aligned {d.a.step}: {gpu_a:,})")
    print(f"B: {args.b} ({b.device_name}, {len(b.gpu):,} GPU ops, aligned {d.b.step}: {gpu_b:,})")
    print(f"rows: {d.counts()}")
    print(f"median of {args.repeat} runs, seconds")
    print(f"  load both traces     {load_s:7.3f}")
    print(f"  diff (align + CPU)   {diff_s:7.3f}   {diff_s / load_s:5.2f}x the load")
    print(f"  text report          {report_s:7.3f}")
    print(f"  load + diff + report {load_s + diff_s + report_s:7.3f}   goal for the diff: <= {GOAL_S:.1f} s "
          f"({'met' if diff_s <= GOAL_S else 'NOT met'}; end to end {'met' if load_s + diff_s + report_s <= GOAL_S else 'over'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
