"""Loading the ranks of a run: one after another uncached, side by side with load_many (worker processes)
uncached, with a cold index cache (workers write it) and a warm one; then the cross-rank reduction.

    python benchmarks/bench_ranks.py                   # 64 synthetic ranks of 2 MB (rank-N.pt.trace.json)
    python benchmarks/bench_ranks.py --ranks 16 --mb 8

"CPU here" is the parent process only (forkserver workers are not its children). Each configuration runs in a fresh process with a fresh private cache folder (XDG_CACHE_HOME), so no
run profits from another's cache or memory. Prints wall and CPU seconds, ratios to the sequential
uncached load, and the figures extrapolated to 1,024 ranks (linear in ranks, divided by the CPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from mlptui.trace.analysis.rank_digest import rank_digest
from mlptui.trace.analysis.ranks import reduce_digests
from mlptui.trace.parse.load import load_trace
from mlptui.trace.parse.load_many import load_many
mode, folder = sys.argv[1], Path(sys.argv[2])
paths = sorted(folder.glob("rank-*.pt.trace.json"), key=lambda p: int(p.name.split("-")[1].split(".")[0]))
t0 = time.perf_counter(); c0 = time.process_time()
first = None
digests = []
if mode == "sequential":
    for p in paths:
        digests.append(rank_digest(len(digests), load_trace(p)))
        first = first or time.perf_counter() - t0
else:
    for name, trace in load_many(paths):
        digests.append(rank_digest(int(name.rsplit('rank-', 1)[1].split('.')[0]), trace))
        first = first or time.perf_counter() - t0
loaded = time.perf_counter() - t0
t1 = time.perf_counter()
run = reduce_digests(digests)
reduce_s = time.perf_counter() - t1
self_ = resource.getrusage(resource.RUSAGE_SELF); kids = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime
print(json.dumps({"wall": loaded, "first": first, "reduce": reduce_s, "cpu": cpu, "ranks": len(digests),
                  "rss": self_.ru_maxrss * 1024,
                  "straggler": [s["rank"] for s in run["stragglers"]][:3]}))
"""


def run(mode: str, folder: Path, cache: str, no_cache: bool) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    env.pop("MLPTUI_NO_CACHE", None)
    if no_cache:
        env["MLPTUI_NO_CACHE"] = "1"
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(folder)], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="folder to build (and reuse) the rank traces in")
    args = parser.parse_args()
    if not GENERATOR.exists():
        print(f"generator not found at {GENERATOR}", file=sys.stderr)
        return 2
    cpus = os.cpu_count() or 1
    print(f"python {sys.version.split()[0]}, {cpus} CPU(s), load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "run"
        folder.mkdir(parents=True, exist_ok=True)
        for r in range(args.ranks):
            p = folder / f"rank-{r}.pt.trace.json"
            if not p.exists():
                subprocess.run([sys.executable, str(GENERATOR), str(p), "--mb", str(args.mb), "--rank", str(r),
                                "--seed", str(r)], check=True, stdout=subprocess.DEVNULL)
        total_mb = sum(p.stat().st_size for p in folder.glob("rank-*.pt.trace.json")) / 1e6
        print(f"\n{args.ranks} ranks, {total_mb:.0f} MB in all; fresh process and cache folder per row")
        rows = []
        with tempfile.TemporaryDirectory() as c1:
            rows.append(("one after another, uncached", run("sequential", folder, c1, True)))
        with tempfile.TemporaryDirectory() as c2:
            rows.append(("load_many, uncached", run("parallel", folder, c2, True)))
        with tempfile.TemporaryDirectory() as c3:
            rows.append(("load_many, cold cache", run("parallel", folder, c3, False)))
            rows.append(("load_many, warm cache", run("parallel", folder, c3, False)))
            rows.append(("one after another, warm", run("sequential", folder, c3, False)))
        base = rows[0][1]
        print(f"  {'':30} {'wall':>8} {'x':>6} {'1st rank':>9} {'CPU here':>8} {'reduce':>8} {'RSS':>7}")
        for label, r in rows:
            print(f"  {label:30} {r['wall']:7.2f}s {base['wall'] / r['wall']:5.2f}x {r['first']:8.3f}s "
                  f"{r['cpu']:7.2f}s {r['reduce'] * 1e3:6.1f}ms {r['rss'] / 1e6:5.0f}MB")
        assert all(r["ranks"] == args.ranks for _, r in rows)
        scale = 1024 / args.ranks
        print(f"\n  extrapolated to 1,024 ranks of {args.mb} MB ({scale:.0f}x the ranks, linear):")
        for label, r in rows:
            print(f"  {label:30} {r['wall'] * scale:7.1f}s wall, reduction {r['reduce'] * scale * 1e3:.0f} ms")
        per_rank_cpu = rows[0][1]["cpu"] / args.ranks
        print(f"  uncached CPU per rank {per_rank_cpu:.3f}s: 1,024 ranks on N cores ~ {per_rank_cpu * 1024:.0f}/N s "
              f"(this box: N = {cpus})")
        busy = os.getloadavg()[0]
        if busy > cpus:
            print(f"  note: load average {busy:.1f} on {cpus} CPU(s): other work shared the box; wall times are "
                  "inflated, ratios less so")
    return 0


if __name__ == "__main__":
    sys.exit(main())
