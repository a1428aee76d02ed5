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
start = time.perf_counter(); launcher(x); torch.cuda.synchronize(); first = time.perf_counter() - start
steady = []
for _ in range(20):
    start = time.perf_counter(); launcher(x); torch.cuda.synchronize(); steady.append(time.perf_counter() - start)
h = launcher(x).float()
ref = torch.nn.functional.gelu(x.float() @ wg.float().T, approximate="tanh") * (x.float() @ wu.float().T)
print(json.dumps({"first_ms": first * 1e3, "steady_ms": sorted(steady)[10] * 1e3, "plan": launcher.tuned(),
                  "rel_err": float((h - ref).norm() / ref.norm()), "kept": launcher.direct_error}))
"""


def probe(env: dict[str, str], rows: int, dim: int, hidden: int) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(rows), str(dim), str(hidden)], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        return {"error": out.stderr.strip().splitlines()[-1][:500], "first_ms": -1, "steady_ms": -1,
                "rel_err": None, "kept": None}
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
        warm = probe(env, args.rows, dim, hidden)  # reads the choice and the kept kernel
        again = probe(env, args.rows, dim, hidden)
        subprocess.run([sys.executable, "-m", "mlptui.cli", "bench", "mlp", "--warm", "--sweep-families",
                        args.dims, "--sweep-rows", "1,16,64,128,256,512,1024,2048,4096,8192"], env=env, check=True,
                       capture_output=True)
        after_warm = probe(env, 3000, dim, hidden)  # a bucket only the --warm run tuned
        odd = {rows: [probe(env, rows, dim, hidden) for _ in range(2)] for rows in (8000, 1, 15)}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps({"rows": args.rows, "dims": args.dims, "tuning cache cold": cold,
                      "tuning cache kept by the previous process": warm, "and once more": again,
                      "3000 rows after bench mlp --warm": after_warm,
                      "other row counts, twice each": odd}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
