"""`mlptui diff` against the number of distinct kernel names: time and peak RSS of the aligner now beside
the aligner before it scored pairs without a class-by-class matrix (read from git at OLD_ALIGNER), measured
side by side in one run. Goal: 30,000 distinct names in <= 20 s and <= 500 MB.

    python benchmarks/bench_diff_names.py [--sizes 1000,3000,10000,30000] [--old-max-mb 1500]

Each size is a pair of synthetic one-step traces: A runs N kernels of N distinct names, each launched by
one of 50 ATen ops; B renames every tenth kernel and runs its last quarter in reverse order (exact matches,
same-role pairs and a long stretch to align all take part). Every measurement is a fresh subprocess:
seconds are `diff_traces` alone (names decoded, kernels aligned, CPU side compared), peak RSS is the
whole process (ru_maxrss, the two traces included). The old aligner runs only where the matrix it would
allocate (distinct classes squared, int32) stays under --old-max-mb; above that the matrix size is
printed instead.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
OLD_ALIGNER = "134c2e4"       # the last commit whose aligner built the class-by-class matrix
GOAL_S, GOAL_MB, GOAL_NAMES = 20.0, 500.0, 30_000

CHILD = r"""
import importlib.util, json, resource, sys, time
from mlptui.trace.diff import trace_diff
from mlptui.trace.parse.load import load_trace
if sys.argv[1] != "now":
    spec = importlib.util.spec_from_file_location("old_align", sys.argv[1])
    old = sys.modules["old_align"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    trace_diff.align = old.align
a, b = load_trace(sys.argv[2]), load_trace(sys.argv[3])
t = time.perf_counter()
d = trace_diff.diff_traces(a, b)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "counts": d.counts()}))
"""


def _events(names: list[str], ops: list[str]) -> bytes:
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
           "dur": 10 * len(names) + 100}]
    for k, (name, op) in enumerate(zip(names, ops, strict=True)):
        t, ids = 10 + 10 * k, {"External id": k + 1}
        ev += [{"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 5, "args": ids},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
                "dur": 2, "args": {**ids, "correlation": k + 1}},
               {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t + 3, "dur": 4,
                "args": {**ids, "correlation": k + 1}}]
    return orjson.dumps({"schemaVersion": 1, "traceEvents": ev})


def write_pair(folder: Path, n: int) -> tuple[Path, Path, int]:
    """The two traces of size n, and how many distinct kernel names they hold together."""
    names = [f"generated_kernel_{k}" for k in range(n)]
    ops = [f"aten::op{k % 50}" for k in range(n)]
    b_names = [f"{x}_renamed" if k % 10 == 0 else x for k, x in enumerate(names)]
    cut = n - n // 4
    b_names, b_ops = b_names[:cut] + b_names[cut:][::-1], ops[:cut] + ops[cut:][::-1]
    a, b = folder / f"a-{n}.json", folder / f"b-{n}.json"
    a.write_bytes(_events(names, ops))
    b.write_bytes(_events(b_names, b_ops))
    return a, b, len(set(names) | set(b_names))


def measure(aligner: str, a: Path, b: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, aligner, str(a), str(b)], capture_output=True, text=True,
                         env={"MLPTUI_NO_CACHE": "1", "PATH": "/usr/bin:/bin"}, check=False)
    if out.returncode:
        raise SystemExit(f"bench_diff_names: the {'old' if aligner != 'now' else 'new'} aligner failed: "
                         f"{(out.stderr.strip().splitlines() or ['no output'])[-1]}")
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _old_aligner(folder: Path) -> Path:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_ALIGNER}:tui/trace/diff/align.py"],
                          capture_output=True, text=True, check=True).stdout
    path = folder / "old_align.py"
    path.write_text(text)
    return path


def _growth(rows: list[tuple[int, float]]) -> str:
    """The exponent k of value ~ names^k between the first and the last size."""
    (n0, v0), (n1, v1) = rows[0], rows[-1]
    return f"{math.log(v1 / v0) / math.log(n1 / n0):.2f}" if len(rows) > 1 and v0 > 0 and n1 > n0 else "n/a"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,3000,10000,30000")
    p.add_argument("--old-max-mb", type=float, default=1500.0)
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    now_t, now_m, old_t, old_m = [], [], [], []
    print(f"{'names':>7}  {'now s':>7}  {'now MB':>7}  {'old s':>7}  {'old MB':>7}  {'old/now s':>9}  "
          f"{'old/now MB':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old = _old_aligner(folder)
        for n in sizes:
            a, b, distinct = write_pair(folder, n)
            now = measure("now", a, b)
            now_t.append((distinct, now["seconds"]))
            now_m.append((distinct, now["rss_mb"]))
            matrix_mb = distinct * distinct * 4 / 2**20
            line = f"{distinct:>7}  {now['seconds']:7.2f}  {now['rss_mb']:7.0f}"
            if matrix_mb <= args.old_max_mb:
                was = measure(str(old), a, b)
                if was["counts"] != now["counts"]:
                    print(f"rows differ at {distinct} names: old {was['counts']}, now {now['counts']}")
                old_t.append((distinct, was["seconds"]))
                old_m.append((distinct, was["rss_mb"]))
                line += (f"  {was['seconds']:7.2f}  {was['rss_mb']:7.0f}  {was['seconds'] / now['seconds']:9.1f}"
                         f"  {was['rss_mb'] / now['rss_mb']:10.1f}")
            else:
                line += f"  not run: its matrix alone would take {matrix_mb / 1024:.2f} GiB"
            print(line, flush=True)
    print(f"growth with names (value ~ names^k): now time k={_growth(now_t)}, RSS k={_growth(now_m)}; "
          f"old time k={_growth(old_t)}, RSS k={_growth(old_m)}")
    big = [(n, t, m) for (n, t), (_, m) in zip(now_t, now_m, strict=True) if n >= GOAL_NAMES]
    for n, t, m in big:
        met = t <= GOAL_S and m <= GOAL_MB
        print(f"{n} names: {t:.1f} s, {m:.0f} MB; goal <= {GOAL_S:.0f} s and <= {GOAL_MB:.0f} MB "
              f"{'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
