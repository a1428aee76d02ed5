"""`mlptui summary RUN_DIR --json` on a run of synthetic ranks, whole process, side by side: without the
cache, on a cold cache (the run writes it) and on a warm one (digests read back, no rank parsed); with
the parent process's own peak RSS (its workers not counted) beside each.

    python benchmarks/bench_ranks.py                      # 64 ranks of 2 MB (rank-N.pt.trace.json)
    python benchmarks/bench_ranks.py --ranks 8 --mb 100   # the parent's memory on big ranks
    python benchmarks/bench_ranks.py --repeat 3           # median of 3 interleaved runs per row

Each row runs in a fresh process; the cache folder (XDG_CACHE_HOME) is fresh for the uncached and cold
rows and shared by cold and warm. Prints wall seconds, the ratio to the cold row, the parent's peak RSS,
and per-rank cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"

# the CLI in this process, then this process's own peak RSS (not its children's) on stderr
CHILD = r"""
import resource, sys
from mlptui.cli import main
rc = main(sys.argv[1:])
sys.stderr.write(f"\nRSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}\n")
sys.exit(rc)
"""


def make_ranks(folder: Path, ranks: int, mb: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        p = folder / f"rank-{r}.pt.trace.json"
        if not p.exists():
            subprocess.run([sys.executable, str(GENERATOR), str(p), "--mb", str(mb), "--rank", str(r),
                            "--world-size", str(ranks), "--seed", str(r)], check=True, stdout=subprocess.DEVNULL)


def summary(folder: Path, cache: Path, *, no_cache: bool = False) -> tuple[float, int, bytes]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("MLPTUI_NO_CACHE", None)
    if no_cache:
        env["MLPTUI_NO_CACHE"] = "1"
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CHILD, "summary", str(folder), "--json"], env=env,
                         capture_output=True, check=True)
    wall = time.perf_counter() - start
    rss = int(res.stderr.decode().rsplit("RSS ", 1)[1])
    return wall, rss, res.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
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
        make_ranks(folder, args.ranks, args.mb)
        total_mb = sum(p.stat().st_size for p in folder.glob("rank-*.pt.trace.json")) / 1e6
        print(f"\n`mlptui summary RUN_DIR --json`, {args.ranks} ranks, {total_mb:.0f} MB in all, whole process, "
              f"median of {args.repeat}")
        rows: dict[str, list[tuple[float, int]]] = {"uncached": [], "cold cache": [], "warm cache": []}
        outputs = set()
        for i in range(args.repeat):
            base = Path(tmp) / f"cache-{i}"
            w, r, out = summary(folder, base / "none", no_cache=True)
            rows["uncached"].append((w, r))
            outputs.add(out)
            w, r, out = summary(folder, base / "c")
            rows["cold cache"].append((w, r))
            outputs.add(out)
            w, r, out = summary(folder, base / "c")
            rows["warm cache"].append((w, r))
            outputs.add(out)
            shutil.rmtree(base, ignore_errors=True)
        assert len(outputs) == 1, "the three ways gave different reports"
        med = {k: (statistics.median(w for w, _ in v), max(r for _, r in v)) for k, v in rows.items()}
        cold = med["cold cache"][0]
        print(f"  {'':12} {'wall':>8} {'cold/this':>10} {'parent RSS':>11} {'per rank':>9}")
        for label, (wall, rss) in med.items():
            print(f"  {label:12} {wall:7.2f}s {cold / wall:9.2f}x {rss / 1e6:9.0f}MB {wall / args.ranks * 1e3:7.1f}ms")
        busy = os.getloadavg()[0]
        if busy > cpus:
            print(f"  note: load average {busy:.1f} on {cpus} CPU(s): other work shared the box")
    return 0


if __name__ == "__main__":
    sys.exit(main())
