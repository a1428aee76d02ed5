"""Load + index speed and peak memory of `load_trace`, side by side with `orjson.loads` of the same bytes.

    python benchmarks/bench_load.py                 # builds a 100 MB synthetic Kineto trace, 3 runs each
    python benchmarks/bench_load.py --mb 100 500    # several sizes
    python benchmarks/bench_load.py --trace FILE    # an existing trace instead

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
import json, resource, sys, time
from mlptui.gc_policy import bulk_allocation
from mlptui.trace.parse.load import load_trace
t0 = time.perf_counter(); c0 = time.process_time()
with bulk_allocation():
    trace = load_trace(sys.argv[1])
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss,
                  "what": f"{len(trace.ops)} ops, {len(trace.gpu)} GPU ops, {len(trace.steps)} steps"}))
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
    ours = measure(OURS, path, runs)
    ref = measure(ORJSON, path, runs)
    mb = size / 1e6
    print(f"\n{path.name}: {mb:.1f} MB, {runs} run(s) each, fresh process per run")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, nargs="*", default=[100], help="synthetic trace sizes to build (MB)")
    parser.add_argument("--trace", type=Path, action="append", default=[], help="measure this trace file too")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="folder to build (and reuse) synthetic traces in")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s), load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
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
