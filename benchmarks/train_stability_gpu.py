"""Why the fused module's training time moves from process to process, and what a new process's first
call costs, on a CUDA GPU.

    python3 benchmarks/train_stability_gpu.py [--procs 3] [--rows 8192] [--dims 768x3072] [--shared-cache]

1. Stability: `--procs` fresh processes, each with its own tuning cache (the worst case: each tunes for
   itself) or, with `--shared-cache`, one cache that the first fills. In each: eager (plain nn.Linear
   modules) and FusedGeGLUMLP (automatic route, and its fused path forced on), forward+backward (gradients
   of the input and the three weights), do_bench medians with L2 flushed, 5 rounds in rotated order; the
   plans the launcher chose; then, per candidate configuration of the bucket, the training kernel forced
   to it: the module's forward+backward and the gate/up kernel alone (inference and training epilogue),
   so the spread between configurations can be set against the spread between processes.
2. First call: a fresh process at the bucket the processes above tuned (Triton's kernel cache warm), its
   first call's wall time through Triton's dispatcher (MLPTUI_KEPT_KERNELS=off) and through the recorded
   kernel (=on), alternating, a cProfile of each, and the module's first forward against eager's.

Writes $OUT/train_stability.json (or .bench/train_stability.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHILD = r"""
import json, sys, time
import torch
from triton.testing import do_bench
from mlptui.runners.bench.sweep import pass_call
from mlptui.runners.fused import FusedGeGLUMLP
from mlptui.runners.fused.configs import candidate_configs, m_bucket, training_config
from mlptui.runners.fused.launcher import Plan
from mlptui.runners.workloads.modules import SimpleGeGLUMLP

rows, dim, hidden = (int(v) for v in sys.argv[1:4])
torch.manual_seed(0)
eager = SimpleGeGLUMLP(dim, hidden).to("cuda", torch.bfloat16)
auto = FusedGeGLUMLP(dim, hidden, device="cuda", dtype=torch.bfloat16)
auto.load_state_dict(eager.state_dict())
forced = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=torch.bfloat16)
forced.load_state_dict(eager.state_dict())
x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
fns = {"eager": pass_call(eager, x, True), "fused-auto": pass_call(auto, x, True),
       "fused-forced": pass_call(forced, x, True)}
t0 = time.perf_counter()
for fn in fns.values():
    fn()
torch.cuda.synchronize()
setup_s = time.perf_counter() - t0
names = list(fns)
rounds = {n: [] for n in names}
for r in range(5):
    for n in names[r % 3:] + names[: r % 3]:
        rounds[n].append(float(do_bench(fns[n], warmup=25, rep=200, return_mode="median")) * 1e3)
med = {n: sorted(v)[2] for n, v in rounds.items()}
out = {"setup_s": setup_s, "route_train": auto.path_for(rows, train=True), "rounds_us": rounds,
       "median_us": med, "auto_over_eager": med["fused-auto"] / med["eager"],
       "forced_over_eager": med["fused-forced"] / med["eager"],
       "plans_auto": auto.launcher().tuned(), "plans_forced": forced.launcher().tuned()}
lau = forced.launcher()
bucket = m_bucket(rows)
per_config = []
h = torch.empty(rows, hidden, device="cuda", dtype=torch.bfloat16)
for cfg in candidate_configs(rows):
    row = {"config": cfg.label(), "train_config": training_config(cfg).label()}
    try:
        for store_gu, c in ((False, cfg), (True, training_config(cfg))):
            lau._plans[(bucket, store_gu)] = Plan(c, True, store_gu)
        lau._rows.clear()
        row["fwd_bwd_us"] = [float(do_bench(fns["fused-forced"], warmup=25, rep=200, return_mode="median")) * 1e3
                             for _ in range(3)]
        row["gateup_infer_us"] = float(do_bench(lambda: lau(x), warmup=25, rep=100, return_mode="median")) * 1e3
        row["gateup_train_us"] = float(do_bench(lambda: lau(x, store_gu=True), warmup=25, rep=100,
                                                return_mode="median")) * 1e3
    except Exception as exc:
        row["error"] = str(exc).splitlines()[0][:300]
    per_config.append(row)
out["per_config"] = per_config
out["eager_again_us"] = float(do_bench(fns["eager"], warmup=25, rep=200, return_mode="median")) * 1e3
print("RESULT " + json.dumps(out))
"""

FIRST = r"""
import cProfile, io, json, os, pstats, sys, time
import torch
from mlptui.runners.fused.launcher import GateUpLauncher
rows, dim, hidden = (int(v) for v in sys.argv[1:4])
torch.manual_seed(0)
wg = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16)
wu = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16)
x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
launcher = GateUpLauncher(wg, wu)
prof = cProfile.Profile() if os.environ.get("PROBE_PROFILE") else None
start = time.perf_counter()
if prof:
    prof.enable()
launcher(x)
torch.cuda.synchronize()
if prof:
    prof.disable()
first = time.perf_counter() - start
steady = []
for _ in range(20):
    t = time.perf_counter(); launcher(x); torch.cuda.synchronize(); steady.append(time.perf_counter() - t)
text = ""
if prof:
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(40)
    text = s.getvalue()[-9000:]
from mlptui.runners.fused import kernel_key
plan = next(iter(launcher._plans.values()))
print("RESULT " + json.dumps({"first_ms": first * 1e3, "steady_ms": sorted(steady)[10] * 1e3,
                              "key_settled": kernel_key._DONE[:], "plan": launcher.tuned(),
                              "direct": any(d is not None for d in plan.direct.values()),
                              "direct_error": launcher.direct_error, "profile": text}))
"""

# The module's first forward (inference) in a new process, the fused module or the plain eager one: both
# pay the process's first cuBLAS call (the down projection), which the launcher-level figure leaves out.
MODULE_FIRST = r"""
import json, sys, time
import torch
from mlptui.runners.fused import FusedGeGLUMLP
from mlptui.runners.workloads.modules import SimpleGeGLUMLP
rows, dim, hidden = (int(v) for v in sys.argv[1:4])
which = sys.argv[4]
torch.manual_seed(0)
mlp = (FusedGeGLUMLP(dim, hidden, device="cuda", dtype=torch.bfloat16) if which == "fused"
       else SimpleGeGLUMLP(dim, hidden).to("cuda", torch.bfloat16))
x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
with torch.no_grad():
    start = time.perf_counter(); mlp(x); torch.cuda.synchronize(); first = time.perf_counter() - start
    steady = []
    for _ in range(20):
        t = time.perf_counter(); mlp(x); torch.cuda.synchronize(); steady.append(time.perf_counter() - t)
route = mlp.path_for(rows) if which == "fused" else "eager"
print("RESULT " + json.dumps({"which": which, "route": route, "first_ms": first * 1e3,
                              "steady_ms": sorted(steady)[10] * 1e3}))
"""


def child(code: str, env: dict[str, str], args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    return {"error": out.stderr[-3000:]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--dims", default="768x3072")
    ap.add_argument("--shared-cache", action="store_true")
    ap.add_argument("--first-calls", type=int, default=2)
    ap.add_argument("--name", default="", help="the result file's name under $OUT")
    args = ap.parse_args()
    dim, hidden = (int(v) for v in args.dims.split("x"))
    shape = [str(args.rows), str(dim), str(hidden)]
    shared = tempfile.mkdtemp(prefix="mlptui-stability-")
    procs = []
    for i in range(args.procs):
        cache = shared if args.shared_cache or i == 0 else tempfile.mkdtemp(prefix=f"mlptui-stability-{i}-")
        result = child(CHILD, {**os.environ, "XDG_CACHE_HOME": cache}, shape)
        procs.append(result)
        print(f"process {i}: " + json.dumps({k: result.get(k) for k in
                                             ("median_us", "auto_over_eager", "plans_auto", "error")}), flush=True)
    # the first-call probes read the tuning cache the first process left; the first probe also records
    # the checked kernel of the probe's bucket (if the processes above did not), then the dispatcher's
    # first call (records off) and the recorded kernel's alternate, each a fresh process
    env = {**os.environ, "XDG_CACHE_HOME": shared, "MLPTUI_KEPT_KERNELS": "on"}
    off = {**env, "MLPTUI_KEPT_KERNELS": "off"}
    prime = child(FIRST, env, shape)
    first_off, first_kept = [], []
    for _ in range(args.first_calls):
        first_off.append(child(FIRST, off, shape))
        first_kept.append(child(FIRST, env, shape))
    profiled = {"dispatcher": child(FIRST, {**off, "PROBE_PROFILE": "1"}, shape),
                "kept": child(FIRST, {**env, "PROBE_PROFILE": "1"}, shape)}
    modules = [child(MODULE_FIRST, env, [*shape, which]) for _ in range(args.first_calls)
               for which in ("fused", "eager")]
    for name, runs in (("dispatcher", first_off), ("kept", first_kept)):
        firsts = ", ".join(f"{f.get('first_ms', -1):.1f}" for f in runs)
        steadies = ", ".join(f"{f.get('steady_ms', -1):.3f}" for f in runs)
        print(f"first call, {name}: {firsts} ms (steady {steadies} ms; direct {[f.get('direct') for f in runs]})",
              flush=True)
    for m in modules:
        print(f"module first forward: {json.dumps(m)}", flush=True)
    import torch
    import triton

    doc = {"command": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]), "rows": args.rows,
           "dims": args.dims, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "triton": triton.__version__, "cuda": torch.version.cuda, "shared_cache": args.shared_cache,
           "processes": procs, "first_call_prime": prime, "first_call_dispatcher": first_off,
           "first_call_kept": first_kept, "first_call_profiled": profiled, "module_first_forward": modules}
    folder = Path(os.environ.get("OUT", ".bench"))
    folder.mkdir(parents=True, exist_ok=True)
    name = args.name or ("train_stability_shared.json" if args.shared_cache else "train_stability.json")
    (folder / name).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
