"""The warp-specialized Hopper gate/up kernel (runners/mlptui/runners/fused/gateup_hopper_ws.py) against cuBLAS's GEMM of
the same work and the portable fused kernel, at the article shape (x [8192, 768], hidden 3072).

    python3 benchmarks/gateup_ws_gpu.py [--out report.json] [--quick]

Per configuration: compile (registers, spills, shared memory), the error against an fp32 reference, and
do_bench medians (L2 flushed before every call) in three rounds, the order rotated each round. Baselines in
the same process: cuBLAS [8192, 768] x [768, 6144] (gate and up as one GEMM, no epilogue), the portable
fused kernel as tuned, and the down GEMM (for the module's sum). Needs capability 9.x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import traceback

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench


def reference(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return F.gelu(xf @ wg.float().T, approximate="tanh") * (xf @ wu.float().T)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref).norm() / ref.norm())


CONFIGS = [
    dict(bm=128, bn=64, bk=64, stages=5, pingpong=False),
    dict(bm=128, bn=64, bk=64, stages=6, pingpong=False),
    dict(bm=128, bn=64, bk=64, stages=3),
    dict(bm=128, bn=64, bk=64, stages=2),
    dict(bm=128, bn=64, bk=64, stages=3, group_m=16),
    dict(bm=128, bn=64, bk=64, stages=3, maxnreg=None),
    dict(bm=64, bn=128, bk=64, stages=2),
    # ping-pong over one shared ring whose consumers' main loops take turns (run 25)
    dict(bm=128, bn=64, bk=64, stages=6, ordered=True),
    dict(bm=128, bn=64, bk=64, stages=5, ordered=True),
    dict(bm=128, bn=64, bk=64, stages=6, group_m=16, ordered=True),
]


def kind(cfg: dict) -> str:
    """single, pingpong (a ring per consumer) or ordered (one ring, main loops in turn)."""
    if not cfg.get("pingpong", True):
        return "single"
    return "ordered" if cfg.get("ordered") else "pingpong"


def one_case(pingpong: bool, m: int, n: int, k: int) -> int:
    """Run one shape in this process and print its error against the reference (for --diagnose)."""
    from mlptui.runners.fused.gateup_hopper_ws import gateup_ws

    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    wg = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    wu = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    out = gateup_ws(x, wg, wu, pingpong=pingpong)
    torch.cuda.synchronize()
    print(json.dumps({"pingpong": pingpong, "shape": [m, n, k], "rel_err": rel_err(out, reference(x, wg, wu))}))
    return 0


def diagnose() -> int:
    """Each variant and shape in its own process (a fault poisons the CUDA context), small shapes first;
    the smallest failing case again under compute-sanitizer."""
    import subprocess

    failing = None
    for pingpong in (True, False):
        for m, n, k in ((1024, 512, 768), (8192, 3072, 768)) if pingpong else ((8192, 3072, 768),):
            cmd = [sys.executable, __file__, "--case", str(int(pingpong)), str(m), str(n), str(k)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
            print(f"pingpong={pingpong} {m}x{n}x{k}: rc={r.returncode} {tail[0][:300]}", flush=True)
            if r.returncode and failing is None:
                failing = cmd
    if failing is not None and os.environ.get("SANITIZE"):
        r = subprocess.run(["compute-sanitizer", "--print-limit", "4", *failing], capture_output=True, text=True,
                           timeout=240)
        print("compute-sanitizer:", (r.stdout + r.stderr)[-4000:], flush=True)
    return 0


def time_dtype(dtype: torch.dtype, configs: list[dict], rounds: int, report: dict) -> None:
    """The article shape in one dtype: every configuration, cuBLAS and the portable kernel, side by side."""
    from mlptui.runners.fused.gateup_hopper_ws import gateup_ws
    from mlptui.runners.fused.launcher import GateUpLauncher

    m, k, n = 8192, 768, 3072
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    wg = torch.randn(n, k, device="cuda", dtype=dtype) / k ** 0.5
    wu = torch.randn(n, k, device="cuda", dtype=dtype) / k ** 0.5
    wd = torch.randn(k, n, device="cuda", dtype=dtype) / n ** 0.5
    w_gu = torch.cat([wg, wu]).contiguous()
    ref = reference(x, wg, wu)
    portable = GateUpLauncher(wg, wu)
    h_port = portable(x)
    cands: dict[str, object] = {
        "cublas gate+up GEMM": lambda: x @ w_gu.T,
        "portable fused": lambda: portable(x),
        "down GEMM": lambda h=h_port: h @ wd.T,
    }
    errs = {"portable fused": rel_err(h_port, ref), "cublas gate+up GEMM (eager gelu*mul)":
            rel_err(F.gelu(x @ wg.T, approximate="tanh") * (x @ wu.T), ref)}
    for cfg in configs:
        label = "ws " + ",".join(f"{a}={b}" for a, b in cfg.items())
        try:
            out = gateup_ws(x, wg, wu, **cfg)  # type: ignore[arg-type]
            torch.cuda.synchronize()
            errs[label] = rel_err(out, ref)
            if errs[label] > 2e-2:
                report["results"].append({"dtype": str(dtype), "label": label, "error": f"wrong result: rel err {errs[label]:.3g}"})
                continue
            cands[label] = lambda c=cfg: gateup_ws(x, wg, wu, **c)  # type: ignore[arg-type]
        except Exception as exc:  # a configuration that does not build is reported, the rest go on
            report["results"].append({"dtype": str(dtype), "label": label,
                                      "error": f"{type(exc).__name__}: {exc}"[:2000],
                                      "trace": traceback.format_exc()[-3000:]})
            print(label, "FAILED", type(exc).__name__, str(exc)[:800], file=sys.stderr)
    times: dict[str, list[float]] = {name: [] for name in cands}
    names = list(cands)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            times[name].append(do_bench(cands[name], warmup=25, rep=200, return_mode="median") * 1e3)  # type: ignore[arg-type]
    for name in names:
        row = {"dtype": str(dtype), "label": name, "median_us": statistics.median(times[name]),
               "rounds_us": times[name], "rel_err": errs.get(name)}
        report["results"].append(row)
        print(f"{str(dtype):15s} {name:55s} {row['median_us']:8.1f} us  err {row['rel_err']}")
    base = statistics.median(times["cublas gate+up GEMM"])
    down = statistics.median(times["down GEMM"])
    for name in names:
        if name.startswith("ws"):
            t = statistics.median(times[name])
            print(f"   {name}: {t / base:.3f}x cuBLAS gate+up; module estimate {t + down:.1f} us")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--case", nargs=4, type=int)
    ap.add_argument("--only", choices=("single", "pingpong", "ordered"),
                    help="time only one-consumer, ping-pong or turn-taking ping-pong configurations")
    args = ap.parse_args()
    if args.case:
        return one_case(bool(args.case[0]), *args.case[1:])
    if args.diagnose:
        return diagnose()
    cap = torch.cuda.get_device_capability()
    report: dict = {"device": torch.cuda.get_device_name(), "capability": list(cap), "torch": torch.__version__,
                    "triton": triton.__version__, "command": "python3 benchmarks/gateup_ws_gpu.py", "results": []}
    if cap[0] != 9:
        print(f"needs Hopper (sm90), this is sm{cap[0]}{cap[1]}")
        return 2
    configs = [c for c in CONFIGS if args.only is None or kind(c) == args.only]
    for dtype in (torch.bfloat16, torch.float16):
        time_dtype(dtype, configs[:2] if args.quick else configs, 1 if args.quick else 3, report)
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
