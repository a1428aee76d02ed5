"""Why the fused module's unfused route reads slower than eager in some sweep cells, on a CUDA GPU.

The route runs eager's own five kernels, so a gap can come from two places only: host time per call
(the module's routing and checks against eager's four Module.__call__), or where the route's weights
sit in memory (each mode of a sweep cell has its own copy). This script tells them apart per cell:

- `routed`: FusedGeGLUMLP (policy auto, so the unfused route in these cells), its own weights;
- `routed-shared`: the same module built on eager's very parameter tensors (same placement as eager);
- `eager-again`: a second eager module with its own weights (what a different allocation costs);

each timed as the sweep times them (runners/mlptui/runners/bench/sweep.py::cell_times, balanced call orders, L2 flushed),
in several fresh allocations per cell (the modules rebuilt each time, in a rotated order), plus each
mode's host µs per call (enqueued back to back, timed before the synchronize).

Then, at the article's shape (8192 rows, dim 768, hidden 3072), the gate/up kernel's time per
configuration (the tuner's candidates and a few more), against the chosen one.

Writes $OUT/unfused_route.json. Usage:
  python3 benchmarks/unfused_route_gpu.py [--cells DIMxHIDDEN:ROWS:PASS ...] [--allocations 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from mlptui.runners.bench.modes import enqueue_us
from mlptui.runners.bench.sweep import cell_times, paired_ratio, pass_call
from mlptui.runners.fused import FusedGeGLUMLP
from mlptui.runners.fused.configs import GateUpConfig, candidate_configs
from mlptui.runners.fused.launcher import fused_geglu_gateup
from mlptui.runners.workloads.modules import SimpleGeGLUMLP

DEFAULT_CELLS = ("4096x11008:1:fwd", "4096x11008:16:fwd", "5120x13824:256:fwd", "1536x8960:512:fwd",
                 "2048x5632:512:fwd", "768x3072:1:fwd", "1024x2816:1:fwd+bwd", "1024x2816:2048:fwd+bwd")


def log(msg: str) -> None:
    print(msg, flush=True)


def build(dim: int, hidden: int, state: dict[str, torch.Tensor], turn: int) -> dict[str, torch.nn.Module]:
    """Fresh modules on fresh weights; the allocation order rotates with `turn`."""
    dtype = torch.bfloat16
    makers = {
        "eager": lambda: SimpleGeGLUMLP(dim, hidden).to("cuda", dtype),
        "eager-again": lambda: SimpleGeGLUMLP(dim, hidden).to("cuda", dtype),
        "routed": lambda: FusedGeGLUMLP(dim, hidden, device="cuda", dtype=dtype),
    }
    names = list(makers)
    names = names[turn % len(names):] + names[:turn % len(names)]
    mods: dict[str, torch.nn.Module] = {}
    for name in names:
        m = makers[name]()
        m.load_state_dict(state)
        mods[name] = m
    shared = FusedGeGLUMLP(dim, hidden, device="meta", dtype=dtype)
    eager = mods["eager"]
    for proj in ("gate_proj", "up_proj", "down_proj"):
        getattr(shared, proj).weight = getattr(eager, proj).weight  # eager's own parameters
    mods["routed-shared"] = shared
    return {k: mods[k] for k in ("eager", "eager-again", "routed", "routed-shared")}


def cell(spec: str, allocations: int) -> dict[str, Any]:
    shape, rows_s, ps = spec.split(":")
    dim, hidden = (int(v) for v in shape.split("x"))
    rows, bwd = int(rows_s), ps == "fwd+bwd"
    torch.manual_seed(0)
    state = SimpleGeGLUMLP(dim, hidden).to(torch.bfloat16).state_dict()
    runs = []
    for turn in range(allocations):
        mods = build(dim, hidden, state, turn)
        x = torch.randn(rows, dim, device="cuda", dtype=torch.bfloat16)
        with torch.set_grad_enabled(bwd):
            fns = {name: pass_call(m, x, bwd) for name, m in mods.items()}
            for fn in fns.values():
                fn()
            times = cell_times(fns)
            host = {name: round(enqueue_us(fn), 2) for name, fn in fns.items()}
        best = {m: statistics.median(ts) * 1e6 for m, ts in times.items()}
        paired = {m: [round(v, 4) for v in paired_ratio(times, m)] for m in times if m != "eager"}
        path = mods["routed"].path_for(rows, train=bwd)  # type: ignore[operator]
        runs.append({"median_us": {k: round(v, 2) for k, v in best.items()}, "host_us": host, "path": path,
                     "paired_vs_eager": paired, "calls": len(times["eager"])})
        log(f"{spec} alloc {turn}: " + " ".join(f"{k}={v:.1f}" for k, v in best.items())
            + " | paired " + " ".join(f"{k}={v[0]:.3f} [{v[1]:.3f},{v[2]:.3f}]" for k, v in paired.items())
            + " | host " + " ".join(f"{k}={v:.1f}" for k, v in host.items()) + f" | route {path}")
        del mods, fns
        torch.cuda.empty_cache()
    ratios = {m: [r["median_us"][m] / r["median_us"]["eager"] for r in runs] for m in runs[0]["median_us"]}
    pooled = {m: statistics.median(r["median_us"][m] for r in runs) for m in runs[0]["median_us"]}
    summary = {m: round(pooled[m] / pooled["eager"], 4) for m in pooled}
    log(f"{spec}: over {allocations} allocations, median-of-medians / eager: "
        + " ".join(f"{m}={v:.3f}" for m, v in summary.items())
        + " | per allocation, ratio of medians vs paired: " + "; ".join(
            f"{m} " + " ".join(f"{a:.3f}/{r['paired_vs_eager'][m][0]:.3f}" for a, r in zip(ratios[m], runs, strict=True))
            for m in ("eager-again", "routed", "routed-shared")))
    return {"cell": spec, "runs": runs, "pooled_vs_eager": summary,
            "per_allocation_vs_eager": {m: [round(v, 4) for v in vs] for m, vs in ratios.items()}}


def article_configs() -> dict[str, Any]:
    """The gate/up kernel alone at the article's shape, per configuration (do_bench median, µs)."""
    from triton.testing import do_bench

    m, dim, hidden = 8192, 768, 3072
    torch.manual_seed(0)
    x = torch.randn(m, dim, device="cuda", dtype=torch.bfloat16)
    wg = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16) / dim ** 0.5
    wu = torch.randn(hidden, dim, device="cuda", dtype=torch.bfloat16) / dim ** 0.5
    module = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        module.gate_proj.weight.copy_(wg)
        module.up_proj.weight.copy_(wu)
        module(x)
    chosen = module.launcher().tuned()
    C = GateUpConfig
    extra = [C(128, 128, 128, 8, 2, flatten=True, interleaved=True), C(128, 128, 64, 8, 4, group_m=4, flatten=True,
                                                                      interleaved=True),
             C(64, 128, 64, 4, 4, flatten=True, interleaved=True), C(256, 128, 64, 16, 2, flatten=True,
                                                                     interleaved=True),
             C(128, 128, 32, 8, 6, flatten=True, interleaved=True), C(128, 64, 64, 4, 5, flatten=True,
                                                                      interleaved=True),
             C(128, 128, 64, 8, 4, group_m=32, flatten=True, interleaved=True)]
    ref = fused_geglu_gateup(x, wg, wu)
    out: dict[str, Any] = {"chosen": chosen, "configs": {}}
    for cfg in [*candidate_configs(m), *extra]:
        if not cfg.fits():
            out["configs"][cfg.label()] = "does not fit"
            continue
        for tma in (True, False):
            label = f"{cfg.label()}-{'tma' if tma else 'ptr'}"
            try:
                h = fused_geglu_gateup(x, wg, wu, config=cfg, use_tma=tma)
                err = float((h.float() - ref.float()).abs().max())
                us = float(do_bench(lambda c=cfg, t=tma: fused_geglu_gateup(x, wg, wu, config=c, use_tma=t),
                                    warmup=25, rep=200, return_mode="median")) * 1e3
                out["configs"][label] = {"us": round(us, 2), "max_abs_diff_vs_chosen": err}
                log(f"article gate/up {label}: {us:.1f} us (max |diff| {err:.3g})")
            except Exception as exc:
                out["configs"][label] = f"{type(exc).__name__}: {str(exc)[:120]}"
                log(f"article gate/up {label}: {out['configs'][label]}")
    down = module.down_proj.weight
    h = fused_geglu_gateup(x, wg, wu)
    out["down_us"] = round(float(do_bench(lambda: torch.nn.functional.linear(h, down), warmup=25, rep=200,
                                          return_mode="median")) * 1e3, 2)
    out["module_us"] = round(float(do_bench(lambda: module(x), warmup=25, rep=200, return_mode="median")) * 1e3, 2)
    log(f"article: chosen {chosen}; down projection {out['down_us']} us; whole module {out['module_us']} us")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", default=list(DEFAULT_CELLS))
    ap.add_argument("--allocations", type=int, default=3)
    ap.add_argument("--no-configs", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("unfused_route_gpu: needs a CUDA GPU", file=sys.stderr)
        return 2
    start = time.perf_counter()
    report: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cells": [cell(c, args.allocations) for c in args.cells]}
    if not args.no_configs:
        with torch.no_grad():
            report["article_configs"] = article_configs()
    out = Path(os.environ.get("OUT", ".bench")) / "unfused_route.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    log(f"wrote {out} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
