"""Load + index speed and peak memory of `load_trace`, side by side with its anchors.

    python benchmarks/bench_load.py                 # builds a 100 MB synthetic Kineto trace, 3 runs each
    python benchmarks/bench_load.py --mb 100 500    # several sizes
    python benchmarks/bench_load.py --trace FILE    # an existing trace instead
    python benchmarks/bench_load.py --diff A B      # and `mlptui diff A B` against decoding both files
    python benchmarks/bench_load.py --start         # and the explorer's cold start against a bare Textual app
    python benchmarks/bench_load.py --trace T100.json --diff A B --only-pairs --runs 9
                                                    # only the two whole-process ratios, side by side

Printed side by side, each pair in one run (goals of the scale work in brackets):
- load + index against the typed-decode floor: reading the file and msgspec's decode of the whole document
  into the loader's own event structs, nothing else (<= 1.5x in wall time; the CPU time of every process
  is printed beside it); peak RSS against the file size (<= 1.3x at 1 GB; with decode workers, this
  process's peak plus the largest worker's once per worker, an upper bound of their sum);
  `--workers 0 1 3` prints the same per number of decode workers;
- `mlptui summary --json`, uncached, as a whole process, against a process that only reads the file and
  `orjson.loads` it (<= 0.45x);
- `mlptui diff A B --json` against a process that reads, gunzips and `orjson.loads` both files (<= 1.0x);
- cold start to the first painted picker against a bare Textual app (benchmarks/bench_app.py, <= 1.5x).
Whole-process pairs run in turn (A B A B ...) and their ratio is the median of the pairs' ratios.

Every measurement runs in a fresh subprocess, so peak RSS (ru_maxrss) is that one load's and nothing
else's. Both sides read the file inside the timed region. The reference is plain `orjson.loads` with the
garbage collector on (what a straightforward loader does); ours is decode + index (trees, links, steps).
Goals on the 2-core development box: 100 MB in <= 0.6 s, peak RSS <= 3x the file size; the whole
`mlptui summary --json` process in <= 0.8 s (both uncached: MLPTUI_NO_CACHE=1); with the index cache,
a second open >= 10x faster than the first (a fresh, private cache folder per size). `summary --json` is
also timed through the cache: a first run that writes the entries, then a second one that reads them
(a fresh, private cache folder per pair).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"

# Each child prints one JSON line: wall seconds, CPU seconds, peak RSS in bytes, and what it built.
OURS = r"""
import json, os, resource, sys, time
from mlptui.gc_policy import bulk_allocation
from mlptui.trace.parse.decode_parallel import workers_for as decode_workers
from mlptui.trace.parse.load import load_trace
t0 = time.perf_counter(); c0 = time.process_time()
with bulk_allocation():
    trace = load_trace(sys.argv[1])
wall = time.perf_counter() - t0
kids = resource.getrusage(resource.RUSAGE_CHILDREN)     # the decode's worker processes, if it started any
cpu = time.process_time() - c0 + kids.ru_utime + kids.ru_stime
# peak RSS: this process's, plus the largest worker's once per worker (an upper bound of their sum)
workers = decode_workers(os.stat(sys.argv[1]).st_size)
rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + workers * kids.ru_maxrss) * 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss, "workers": workers,   # the stored form: no Op objects
                  "what": f"{trace.columns.n_ops} ops, {trace.columns.n_gpu} GPU ops, {len(trace.steps)} steps"}))
"""
# The typed-decode floor: the file read as the loader reads it, and the whole document decoded by msgspec into
# the loader's own event structs (mlptui.trace.parse.decode) - no classification, no index.
FLOOR = r"""
import json, resource, sys, time
from mlptui.gc_policy import bulk_allocation
from mlptui.trace.parse.decode import _DOC
t0 = time.perf_counter(); c0 = time.process_time()
with bulk_allocation():
    with open(sys.argv[1], "rb") as f:
        doc = _DOC.decode(f.read())
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss, "what": f"{len(doc.traceEvents)} typed events"}))
"""
# A process that only decodes: the anchor of the whole-process timings (`summary`, `diff`).
ORJSON_ONLY = r"""
import gzip, sys, orjson
for name in sys.argv[1:]:
    data = open(name, "rb").read()
    orjson.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
"""
ORJSON = r"""
import json, resource, sys, time
import orjson
t0 = time.perf_counter(); c0 = time.process_time()
with open(sys.argv[1], "rb") as f:
    doc = orjson.loads(f.read())
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss, "what": f"{len(doc['traceEvents'])} event dicts"}))
"""


# The first and the second open through the index cache, each in its own process, and the first open's
# ops touched too (a cache hit makes them on first use). Like the app and the commands, the open and the
# first use of the ops run with the collector paused (mlptui.gc_policy).
CACHED = r"""
import json, resource, sys, time
from mlptui.gc_policy import bulk_allocation
from mlptui.trace.parse.load import load_trace
t0 = time.perf_counter(); c0 = time.process_time()
with bulk_allocation():
    trace = load_trace(sys.argv[1])
    wall = time.perf_counter() - t0
    n = len(trace.ops) + len(trace.gpu)
wall_all = time.perf_counter() - t0; cpu = time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall": wall, "wall_all": wall_all, "cpu": cpu, "rss": rss, "what": f"{n} ops + GPU ops"}))
"""
UNCACHED = {**os.environ, "MLPTUI_NO_CACHE": "1"}


def measure(script: str, path: Path, runs: int, env: dict | None = None) -> dict:
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True,
                             check=True, env=env if env is not None else UNCACHED)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "wall_min": min(r["wall"] for r in results),
        "wall_median": statistics.median(r["wall"] for r in results),
        "cpu_median": statistics.median(r["cpu"] for r in results),
        "rss": max(r["rss"] for r in results),
        "what": results[0]["what"],
        "wall_all_median": statistics.median(r.get("wall_all", r["wall"]) for r in results),
    }


def summary_once(path: Path, env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of `mlptui summary PATH --json` as a whole process (interpreter start, imports,
    load, report, output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mlptui.cli", "summary", str(path), "--json"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def process_once(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def paired(ours: list[str], anchor: list[str], runs: int, env: dict | None = None) -> dict:
    """Both processes in turn, `runs` times: medians of each, and the median of the pairs' wall ratios."""
    rows = []
    for _ in range(runs):
        a = process_once(ours, env if env is not None else UNCACHED)
        b = process_once(anchor, env if env is not None else UNCACHED)
        rows.append((a, b))
    return {"ours": statistics.median(a[0] for a, _ in rows), "ours_cpu": statistics.median(a[1] for a, _ in rows),
            "anchor": statistics.median(b[0] for _, b in rows), "anchor_cpu": statistics.median(b[1] for _, b in rows),
            "ratio": statistics.median(a[0] / b[0] for a, b in rows),
            "ratio_cpu": statistics.median(a[1] / b[1] for a, b in rows)}


def print_pair(label: str, anchor: str, r: dict, goal: float) -> None:
    print(f"  {label:34} {r['ours']:7.3f}s wall {r['ours_cpu']:7.3f}s CPU | {anchor:34} {r['anchor']:7.3f}s wall "
          f"{r['anchor_cpu']:7.3f}s CPU -> {r['ratio']:.3f}x wall, {r['ratio_cpu']:.3f}x CPU "
          f"(goal <= {goal:.2f}x: {'met' if r['ratio'] <= goal else 'NOT met'} on wall, "
          f"{'met' if r['ratio_cpu'] <= goal else 'NOT met'} on CPU)")


def summary_pair(path: Path, runs: int) -> None:
    """`mlptui summary PATH --json` against the orjson-only process, in turn, uncached."""
    print_pair("mlptui summary --json, uncached", "orjson-only process",
               paired([sys.executable, "-m", "mlptui.cli", "summary", str(path), "--json"],
                      [sys.executable, "-c", ORJSON_ONLY, str(path)], runs), 0.45)


def _medians(rows: list[tuple[float, float]]) -> dict:
    return {"wall_median": statistics.median(r[0] for r in rows), "cpu_median": statistics.median(r[1] for r in rows)}


def measure_summary(path: Path, runs: int) -> dict:
    """`summary --json`, uncached (MLPTUI_NO_CACHE=1)."""
    return _medians([summary_once(path, UNCACHED) for _ in range(runs)])


def measure_summary_cached(path: Path, runs: int) -> tuple[dict, dict]:
    """(first, second) `summary --json` through the cache, a fresh private cache folder for each pair: the
    first writes the entries, the second reads them."""
    firsts, seconds = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache}
            env.pop("MLPTUI_NO_CACHE", None)
            firsts.append(summary_once(path, env))
            seconds.append(summary_once(path, env))
    return _medians(firsts), _medians(seconds)


def measure_cache(path: Path, runs: int) -> tuple[dict, dict]:
    """(first open, second open) with a fresh private cache folder for each pair."""
    firsts, seconds = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache}
            env.pop("MLPTUI_NO_CACHE", None)
            firsts.append(measure(CACHED, path, 1, env))
            seconds.append(measure(CACHED, path, 1, env))

    def med(rows: list[dict]) -> dict:
        return {k: statistics.median(r[k] for r in rows) for k in ("wall_median", "wall_all_median", "cpu_median")}
    return med(firsts), med(seconds)


def make_trace(mb: int, folder: Path) -> Path:
    path = folder / f"synthetic-{mb}mb.json"
    if not path.exists():
        subprocess.run([sys.executable, str(GENERATOR), str(path), "--mb", str(mb)], check=True,
                       stdout=subprocess.DEVNULL)
    return path


def report(path: Path, runs: int) -> None:
    size = path.stat().st_size
    ours, floor = [], []
    for _ in range(runs):          # in turn, so that both meet the same load on the machine
        ours.append(measure(OURS, path, 1))
        floor.append(measure(FLOOR, path, 1))
    mb = size / 1e6
    print(f"\n{path.name}: {mb:.1f} MB, {runs} run(s) each, fresh process per run")
    ratio = statistics.median(o["cpu_median"] / f["cpu_median"] for o, f in zip(ours, floor, strict=True))
    ratio_wall = statistics.median(o["wall_median"] / f["wall_median"] for o, f in zip(ours, floor, strict=True))
    o_cpu = statistics.median(o["cpu_median"] for o in ours)
    f_cpu = statistics.median(f["cpu_median"] for f in floor)
    o_rss, f_rss = max(o["rss"] for o in ours), max(f["rss"] for f in floor)
    print(f"  {'load + index':34} {o_cpu:7.3f}s CPU, peak RSS {o_rss / 1e6:6.0f} MB ({o_rss / size:.2f}x the file) | "
          f"typed-decode floor {f_cpu:7.3f}s CPU, peak RSS {f_rss / 1e6:6.0f} MB ({f_rss / size:.2f}x)")
    print(f"  {'':34} -> {ratio_wall:.2f}x the floor (wall; goal <= 1.5x: {'met' if ratio_wall <= 1.5 else 'NOT met'}), "
          f"{ratio:.2f}x (CPU of every process: the decode workers trade CPU for wall time); RSS "
          f"{o_rss / size:.2f}x the file (goal <= 1.3x at 1 GB: {'met' if o_rss <= 1.3 * size else 'NOT met'})")
    summary_pair(path, runs)
    ours = measure(OURS, path, runs)
    ref = measure(ORJSON, path, runs)
    print(f"  {'':26} {'wall min':>9} {'wall med':>9} {'CPU med':>9} {'peak RSS':>10} {'RSS/file':>9}  built")
    for label, r in (("mlptui load_trace+index", ours), ("orjson.loads (GC on)", ref)):
        print(f"  {label:26} {r['wall_min']:8.3f}s {r['wall_median']:8.3f}s {r['cpu_median']:8.3f}s "
              f"{r['rss'] / 1e6:8.0f}MB {r['rss'] / size:8.2f}x  {r['what']}")
    print(f"  ratio (orjson / ours): wall {ref['wall_median'] / ours['wall_median']:.2f}x faster, "
          f"peak RSS {ref['rss'] / ours['rss']:.2f}x smaller")
    summary = measure_summary(path, runs)
    print(f"  {'mlptui summary --json':26} {'':9} {summary['wall_median']:8.3f}s {summary['cpu_median']:8.3f}s"
          "  (whole process, uncached)")
    cold, warm = measure_summary_cached(path, runs)
    print(f"  {'  first, writing the cache':26} {'':9} {cold['wall_median']:8.3f}s {cold['cpu_median']:8.3f}s")
    print(f"  {'  second, warm cache':26} {'':9} {warm['wall_median']:8.3f}s {warm['cpu_median']:8.3f}s"
          f"  -> {summary['wall_median'] / warm['wall_median']:.2f}x faster than uncached (wall), "
          f"{summary['cpu_median'] / warm['cpu_median']:.2f}x (CPU)")
    first, second = measure_cache(path, runs)
    print(f"  index cache, first open  {first['wall_median']:8.3f}s (writes the entry; "
          f"{first['wall_median'] / ours['wall_median']:.2f}x the uncached load); with every op made: "
          f"{first['wall_all_median']:.3f}s wall, {first['cpu_median']:.3f}s CPU")
    print(f"  index cache, second open {second['wall_median']:8.3f}s -> {first['wall_median'] / second['wall_median']:.1f}x "
          f"faster; with every op made: {second['wall_all_median']:.3f}s wall -> "
          f"{first['wall_all_median'] / second['wall_all_median']:.1f}x faster, {second['cpu_median']:.3f}s CPU -> "
          f"{first['cpu_median'] / second['cpu_median']:.1f}x")
    goal_s = 0.6 * mb / 100
    print(f"  goal: summary --json <= {0.8 * mb / 100:.2f} s -> "
          f"{'met' if summary['wall_median'] <= 0.8 * mb / 100 else 'NOT met'} (wall), "
          f"{'met' if summary['cpu_median'] <= 0.8 * mb / 100 else 'NOT met'} (CPU); second open >= 10x -> "
          f"{'met' if first['wall_median'] >= 10 * second['wall_median'] else 'NOT met'}")
    print(f"  goal: <= {goal_s:.2f} s and <= 3.0x file size -> "
          f"{'met' if ours['wall_median'] <= goal_s else 'NOT met'} (wall, median), "
          f"{'met' if ours['cpu_median'] <= goal_s else 'NOT met'} (CPU, median), "
          f"{'met' if ours['rss'] <= 3 * size else 'NOT met'} (memory)")
    busy = os.getloadavg()[0]
    if busy > (os.cpu_count() or 1):
        print(f"  note: load average {busy:.1f} on {os.cpu_count()} CPU(s): other work shared the box, so wall "
              "times are inflated; CPU times are the fairer comparison")


def scaling(path: Path, workers: list[int], runs: int) -> None:
    """Load + index with each number of decode workers, interleaved with the floor (median of `runs`)."""
    size = path.stat().st_size
    rows: dict[int, list[dict]] = {n: [] for n in workers}
    floor: list[dict] = []
    for _ in range(runs):
        floor.append(measure(FLOOR, path, 1))
        for n in workers:
            rows[n].append(measure(OURS, path, 1, {**UNCACHED, "MLPTUI_DECODE_WORKERS": str(n)}))
    f_wall = statistics.median(f["wall_median"] for f in floor)
    f_cpu = statistics.median(f["cpu_median"] for f in floor)
    print(f"\n{path.name}: {size / 1e6:.1f} MB, {runs} run(s) each, {os.cpu_count()} CPU(s); typed-decode floor "
          f"{f_wall:.3f}s wall, {f_cpu:.3f}s CPU, peak RSS {max(f['rss'] for f in floor) / size:.2f}x the file")
    print(f"  {'workers':>7} {'wall':>8} {'CPU (all)':>10} {'wall/floor':>11} {'CPU/floor':>10} {'peak RSS/file':>14}")
    for n, got in rows.items():
        wall = statistics.median(r["wall_median"] for r in got)
        cpu = statistics.median(r["cpu_median"] for r in got)
        print(f"  {n:7d} {wall:7.3f}s {cpu:9.3f}s {wall / f_wall:10.2f}x {cpu / f_cpu:9.2f}x "
              f"{max(r['rss'] for r in got) / size:13.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, nargs="*", default=[100], help="synthetic trace sizes to build (MB)")
    parser.add_argument("--trace", type=Path, action="append", default=[], help="measure this trace file too")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="folder to build (and reuse) synthetic traces in")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("A", "B"),
                        help="time `mlptui diff A B --json` against decoding both files")
    parser.add_argument("--start", action="store_true", help="time the cold start against a bare Textual app")
    parser.add_argument("--workers", type=int, nargs="+", metavar="N",
                        help="only load + index of each --trace with N decode workers (MLPTUI_DECODE_WORKERS), "
                             "against the typed-decode floor")
    parser.add_argument("--only-pairs", action="store_true",
                        help="only the whole-process pairs: --diff, --start, and `summary --json` of each --trace")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s), load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.diff:
        a, b = args.diff
        print(f"\ndiff {a.name} {b.name} ({(a.stat().st_size + b.stat().st_size) / 1e6:.1f} MB as stored)")
        print_pair("mlptui diff --json, uncached", "read + gunzip + orjson of both",
                   paired([sys.executable, "-m", "mlptui.cli", "diff", str(a), str(b), "--json"],
                          [sys.executable, "-c", ORJSON_ONLY, str(a), str(b)], args.runs), 1.0)
    if args.start:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_app import cold_start
        print()
        cold_start(args.runs)
    if args.workers:
        for path in args.trace:
            scaling(path, args.workers, args.runs)
        return 0
    if args.only_pairs:
        for path in args.trace:
            print(f"\nsummary {path.name} ({path.stat().st_size / 1e6:.1f} MB)")
            summary_pair(path, args.runs)
        print(f"\n(median of {args.runs} interleaved pairs; load average now "
              f"{', '.join(f'{x:.2f}' for x in os.getloadavg())})")
        return 0
    for path in args.trace:
        report(path, args.runs)
    if args.mb:
        if not GENERATOR.exists():
            print(f"generator not found at {GENERATOR}; use --trace FILE", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            folder = args.keep or Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for mb in args.mb:
                report(make_trace(mb, folder), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
