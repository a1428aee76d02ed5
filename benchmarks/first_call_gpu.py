"""What a new process's first call of the fused gate/up kernel costs at a row bucket, with the tuning cache
cold and after `mlptui bench mlp --warm` filled it (each figure a fresh process; Triton's own kernel cache
is warm in both, as it is on any machine that ran the kernel once).

    python3 benchmarks/first_call_gpu.py [--rows 8192] [--dims 768x3072]

Prints, per case, the first call's wall time and a steady call's (the median of the next 20), in ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = r"""
import json, sys, time
import torch
from mlptui.runners.fused.launcher import GateUpLauncher
rows, dim, hidden = (int(v) for v in sys.argv[1:4])
torch.manual_seed(0)
wg = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16)
wu = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16)
x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
launcher = GateUpLauncher(wg, wu)
import cProfile, io, pstats
prof = cProfile.Profile()
start = time.perf_counter(); prof.enable(); launcher(x); torch.cuda.synchronize(); prof.disable(); first = time.perf_counter() - start
buf = io.StringIO(); pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(18)
print(buf.getvalue()[-3500:], file=sys.stderr)
steady = []
for _ in range(20):
    start = time.perf_counter(); launcher(x); torch.cuda.synchronize(); steady.append(time.perf_counter() - start)
print(json.dumps({"first_ms": first * 1e3, "steady_ms": sorted(steady)[10] * 1e3, "plan": launcher.tuned()}))
"""


def probe(env: dict[str, str], rows: int, dim: int, hidden: int) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(rows), str(dim), str(hidden)], env=env,
                         capture_output=True, text=True, check=True)
    print(out.stderr, file=sys.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--dims", default="768x3072")
    args = ap.parse_args()
    dim, hidden = (int(v) for v in args.dims.split("x"))
    cache = tempfile.mkdtemp(prefix="mlptui-first-call-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    try:
        probe(env, args.rows, dim, hidden)  # fills Triton's kernel cache (compilation), not timed
        shutil.rmtree(os.path.join(cache, "mlptui"), ignore_errors=True)
        cold = probe(env, args.rows, dim, hidden)  # tunes, and keeps the choice
        warm = probe(env, args.rows, dim, hidden)  # reads the choice
        subprocess.run([sys.executable, "-m", "mlptui.cli", "bench", "mlp", "--warm", "--sweep-families",
                        args.dims, "--sweep-rows", "1,16,64,128,256,512,1024,2048,4096,8192"], env=env, check=True,
                       capture_output=True)
        after_warm = probe(env, 3000, dim, hidden)  # a bucket only the --warm run tuned
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps({"rows": args.rows, "dims": args.dims, "tuning cache cold": cold,
                      "tuning cache kept by the previous process": warm,
                      "3000 rows after bench mlp --warm": after_warm}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
