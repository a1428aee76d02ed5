"""A thousand small ranks summarised locally and on a Dask LocalCluster, side by side, with the per-rank
cost each measured: what docs/scale.md extrapolates a real cluster of N workers from.

    python benchmarks/bench_cluster.py                       # 1,000 ranks of 0.2 MB
    python benchmarks/bench_cluster.py --ranks 200 --mb 1

Rows (each in a fresh process, the cache off so that every rank is read):
- local: `summarize_run` as `mlptui summary RUN_DIR` runs it (this process or local worker processes);
- cluster: the same on a LocalCluster of one worker process per CPU (one thread each), started before the
  clock starts, through its tcp:// scheduler, as `--scheduler` does.
Prints wall seconds, the per-rank cost (each rank digested one after another in one process), what each
way added per rank (wall × workers − that cost, over the ranks), the scheduler's own cost per task (no-op
tasks), and checks that both reports are identical.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"

CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
import orjson
from mlptui.trace.parse.rank_hint import rank_files
from mlptui.trace.runs.run_summary import summarize_run
folder, scheduler, workers = Path(sys.argv[1]), sys.argv[2] or None, int(sys.argv[3])
paths = sorted(folder.glob("rank-*.pt.trace.json"))
t0 = time.perf_counter()
files = rank_files(paths)
listed = time.perf_counter() - t0
task_s = []
run = summarize_run(files, scheduler=scheduler, workers=workers or None,
                    on_progress=None)
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "listed": listed, "ranks": len(run.sources), "failed": len(run.failed),
                  "hosts": len(run.hosts), "digest": hashlib.sha256(orjson.dumps(run.report)).hexdigest()}))
"""

TASKS = r"""
import json, sys, time
from pathlib import Path
from mlptui.trace.runs.rank_map import digest_file
paths = sorted(Path(sys.argv[1]).glob("rank-*.pt.trace.json"))
t0 = time.perf_counter()
per = [digest_file(str(p)).seconds for p in paths]
print(json.dumps({"sum": sum(per), "wall": time.perf_counter() - t0}))
"""


NOOP = r"""
import json, sys, time
from distributed import Client, as_completed
client = Client(sys.argv[1])
client.submit(len, [], pure=False).result()
n = int(sys.argv[2])
t0 = time.perf_counter()
for fut in as_completed([client.submit(len, [i], pure=False) for i in range(n)]):
    fut.result()
print(json.dumps({"per_task": (time.perf_counter() - t0) / n}))
client.close()
"""


def generate(folder: Path, ranks: int, mb: float) -> None:
    spec = importlib.util.spec_from_file_location("gen_kineto_trace", GENERATOR)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        p = folder / f"rank-{r}.pt.trace.json"
        if not p.exists():
            gen.generate(str(p), mb, seed=r, rank=r, world_size=ranks)


def child(script: str, *args: str) -> dict:
    env = {**os.environ, "MLPTUI_NO_CACHE": "1"}
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--mb", type=float, default=0.2)
    parser.add_argument("--keep", type=Path, help="folder to build (and reuse) the rank traces in")
    args = parser.parse_args()
    if not GENERATOR.exists():
        print(f"generator not found at {GENERATOR}", file=sys.stderr)
        return 2
    from distributed import LocalCluster

    os.environ["MLPTUI_NO_CACHE"] = "1"      # the cluster's workers inherit it: every rank is parsed
    cpus = os.cpu_count() or 1
    print(f"python {sys.version.split()[0]}, {cpus} CPU(s), load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "run"
        generate(folder, args.ranks, args.mb)
        total_mb = sum(p.stat().st_size for p in folder.glob("rank-*.pt.trace.json")) / 1e6
        print(f"\n{args.ranks} ranks, {total_mb:.0f} MB in all, cache off")
        one = child(TASKS, str(folder))
        print(f"  per-rank cost, one after another in one process: {one['sum'] / args.ranks * 1e3:.2f} ms "
              f"(map only; {one['wall']:.2f} s for all)")
        rows = [("local (default)", child(CHILD, str(folder), "", "0"), cpus)]
        with LocalCluster(n_workers=cpus, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster:
            rows.append((f"LocalCluster, {cpus} worker processes", child(CHILD, str(folder),
                                                                       cluster.scheduler_address, "0"), cpus))
            noop = child(NOOP, cluster.scheduler_address, str(args.ranks))
        print(f"  {'':34} {'wall':>8} {'per rank':>9} {'added/rank':>11} {'failed':>7}")
        for label, r, workers in rows:
            added = (r["wall"] * workers - one["sum"]) / args.ranks
            print(f"  {label:34} {r['wall']:7.2f}s {r['wall'] / args.ranks * 1e3:7.2f}ms {added * 1e3:9.2f}ms "
                  f"{r['failed']:7d}")
        print(f"  the scheduler's own cost: {noop['per_task'] * 1e3:.2f} ms per task ({args.ranks} no-op tasks "
              "submitted at once, results as they finish)")
        same = len({r["digest"] for _, r, _ in rows}) == 1 and all(r["ranks"] == args.ranks for _, r, _ in rows)
        print(f"  reports identical: {same}")
        print(f"  report sha256: {hashlib.sha256(rows[0][1]['digest'].encode()).hexdigest()[:16]}")
        busy = os.getloadavg()[0]
        if busy > cpus:
            print(f"  note: load average {busy:.1f} on {cpus} CPU(s): other work shared the box")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
