"""Weight-bandwidth-bound gate/up: which launch shapes of fused_geglu_gateup_gemm_kernel read the weights
fastest at few rows, on one CUDA GPU, in one process.

Why: at 1-256 rows and the large families (2048x5632 … 5120x13824) one fused call moves mostly weight
bytes, and the persistent grid runs one program per SM; when the tile count is not a multiple of the SM
count the last round of tiles leaves SMs idle, and one program per SM may keep too few bytes in flight.

Per family and row count: eager's gate/up (two cuBLAS GEMMs, gelu, mul) and whole MLP, the launcher's
tuned plan, and every candidate configuration × load path × programs per SM (1, 2, 3, or 8: one per tile where
there are fewer tiles);
GPU µs by do_bench (L2 flushed before each call, as the sweep flushes it), each variant checked against
the tuned plan's output. The weight bytes over the time give the bandwidth, beside a device-to-device
copy's (bytes read + written).

Writes $OUT/decode_gateup.json (or .bench/). Usage: python3 benchmarks/decode_gateup_gpu.py [FAMILIES] [ROWS]
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

from mlptui.runners.fused.configs import GateUpConfig, candidate_configs
from mlptui.runners.fused.launcher import GateUpLauncher, Plan, int_spec

C = GateUpConfig
SMALL_EXTRA = [C(16, 32, 256, 4, 3), C(16, 64, 256, 4, 3), C(16, 16, 256, 4, 4), C(16, 32, 128, 4, 6),
               C(16, 32, 64, 4, 8), C(16, 32, 128, 8, 4), C(16, 64, 128, 8, 4), C(16, 32, 128, 4, 4, interleaved=True),
               C(16, 64, 128, 4, 4, interleaved=True), C(16, 32, 256, 4, 3, interleaved=True)]
MID_EXTRA = [C(64, 32, 128, 4, 4), C(64, 64, 128, 4, 3, interleaved=True), C(32, 64, 128, 4, 4, interleaved=True)]
BUDGET_S = float(os.environ.get("DECODE_BUDGET_S", "480"))


def log(msg: str) -> None:
    print(msg, flush=True)


def us(fn) -> float:
    return float(do_bench(fn, warmup=5, rep=25, return_mode="median")) * 1e3


def copy_bandwidth() -> float:
    """GB/s of a 1 GiB device-to-device copy, bytes read plus written."""
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
    b = torch.empty_like(a)
    t = us(lambda: b.copy_(a))
    return 2 * a.numel() / (t * 1e-6) / 1e9


def measure(lau: GateUpLauncher, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor, m: int,
            start: float) -> dict:
    """One family and row count: eager's gate/up and MLP, the tuned plan, every variant."""
    hidden, dim = wg.shape
    x = torch.randn(m, dim, device="cuda", dtype=torch.bfloat16)
    ref = lau(x)  # tunes this bucket
    tuned = lau.plan_for(x, m, False)
    cell: dict = {"dim": dim, "hidden": hidden, "rows": m, "tuned": tuned.label(),
                  "eager_gateup_us": round(us(lambda: F.gelu(F.linear(x, wg), approximate="tanh")
                                              * F.linear(x, wu)), 2),
                  "eager_mlp_us": round(us(lambda: F.linear(F.gelu(F.linear(x, wg), approximate="tanh")
                                                            * F.linear(x, wu), wd)), 2),
                  "down_us": round(us(lambda: F.linear(ref, wd)), 2),
                  "tuned_us": round(us(lambda: lau(x)), 2), "variants": []}
    base = candidate_configs(m)
    extra = SMALL_EXTRA if m <= 64 else MID_EXTRA
    cfgs = [c for c in base + [e for e in extra if e not in base] if c.fits()]
    paths = [True, False] if m <= 64 else [True]
    h = torch.empty(m, hidden, device="cuda", dtype=torch.bfloat16)
    for base_cfg in cfgs:
        variants = {replace(base_cfg, programs_per_sm=k) for k in (1, 2, 3, 8)}  # 8: one per tile, mostly
        seen: set[int] = set()
        for cfg in sorted(variants, key=lambda c: c.programs_per_sm):
            programs = cfg.programs(m, hidden, lau.sms)
            if programs in seen:  # capped at the tile count: the same grid as a smaller multiple
                continue
            seen.add(programs)
            for tma in paths:
                if time.perf_counter() - start > BUDGET_S:
                    break
                plan = Plan(cfg, tma, False)
                try:
                    plan.direct[(programs, int_spec(m))] = lau._direct_launcher(plan, x, m, programs)
                    fast = lau._bind(plan, programs, int_spec(m))
                    h.fill_(float("nan"))
                    fast(x, h, h, m)
                    err = float((h.float() - ref.float()).norm() / ref.float().norm())
                    t = us(lambda f=fast: f(x, h, h, m))
                except Exception as exc:
                    cell["variants"].append({"plan": plan.label(), "programs": programs,
                                             "error": f"{type(exc).__name__}: {str(exc)[:120]}"})
                    continue
                cell["variants"].append({"plan": plan.label(), "programs": programs, "us": round(t, 2),
                                         "rel_err": round(err, 5)})
    ok = sorted((v for v in cell["variants"] if "us" in v and v["rel_err"] < 1e-2), key=lambda v: v["us"])
    cell["ranked"] = ok[:8]
    weight_bytes = 2 * hidden * dim * 2
    if ok:
        cell["best"] = ok[0]
        cell["best_GBps"] = round(weight_bytes / (ok[0]["us"] * 1e-6) / 1e9, 1)
        cell["tuned_GBps"] = round(weight_bytes / (cell["tuned_us"] * 1e-6) / 1e9, 1)
        cell["eager_gateup_GBps"] = round(weight_bytes / (cell["eager_gateup_us"] * 1e-6) / 1e9, 1)
    return cell


def main() -> int:
    out_dir = Path(os.environ.get("OUT", ".bench"))
    out_dir.mkdir(parents=True, exist_ok=True)
    fams = [tuple(int(v) for v in f.split("x")) for f in
            (sys.argv[1] if len(sys.argv) > 1 else "4096x11008,5120x13824,2048x5632,1536x8960").split(",")]
    rows_list = [int(r) for r in (sys.argv[2] if len(sys.argv) > 2 else "1,16,64,128,256").split(",")]
    start = time.perf_counter()
    doc: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                 "copy_GBps": round(copy_bandwidth(), 1), "cells": []}
    log(f"{doc['device']}: copy {doc['copy_GBps']} GB/s")
    torch.manual_seed(0)
    for dim, hidden in fams:
        wg = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16) * dim ** -0.5
        wu = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16) * dim ** -0.5
        wd = torch.randn(dim, hidden, device="cuda", dtype=torch.bfloat16) * hidden ** -0.5
        lau = GateUpLauncher(wg, wu)
        for m in rows_list:
            if time.perf_counter() - start > BUDGET_S:
                log("budget spent: stopping")
                break
            cell = measure(lau, wg, wu, wd, m, start)
            doc["cells"].append(cell)
            (out_dir / "decode_gateup.json").write_text(json.dumps(doc, indent=1))
            ok = cell["ranked"]
            top = ", ".join(f"{v['plan']}@{v['programs']}={v['us']}" for v in ok[:4])
            log(f"{dim}x{hidden} m={m}: eager gate/up {cell['eager_gateup_us']} (mlp {cell['eager_mlp_us']}, "
                f"down {cell['down_us']}), tuned {cell['tuned']} {cell['tuned_us']}; best {top} "
                f"[{time.perf_counter() - start:.0f} s]")
    log("\nsummary (us): family rows | eager gate/up | tuned | best (plan@programs) | best GB/s")
    for c in doc["cells"]:
        b = c.get("best", {})
        log(f"{c['dim']}x{c['hidden']} {c['rows']:>4} | {c['eager_gateup_us']:>7} | {c['tuned_us']:>7} | "
            f"{b.get('us')} ({b.get('plan')}@{b.get('programs')}) | {c.get('best_GBps')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
