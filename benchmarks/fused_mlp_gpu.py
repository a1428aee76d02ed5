"""Check, tune and time fused_geglu_gateup_gemm_kernel on a CUDA GPU in one process.

1. correctness: every candidate configuration, both load paths (TMA descriptors and pointers), on fresh
   random inputs with a NaN-poisoned output, against an fp32 reference (rel. error <= 1e-2, all finite);
2. the sweep: each configuration's median time at the article's shape, twice (the spread is the noise);
3. the baselines in the same run: the three cuBLAS GEMMs alone (the floor), gate+up as one concatenated
   cuBLAS GEMM, eager, torch.compile, Liger, and the fused MLP (kernel + cuBLAS down projection);
4. the crossover over the seed and decode shapes; the compiled kernel's registers, spills, shared memory.

Prints a short table last and writes everything to $OUT/fused_gpu.json (or .bench/ without $OUT).
Usage: python3 benchmarks/fused_mlp_gpu.py [--no-sweep] [--no-compile] [--shapes article,seed,decode]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from mlptui.runners import fused_mlp as fm  # noqa: E402

SHAPES = {  # name -> (rows M, dim K, hidden N)
    "article": (64 * 128, 768, 3072),
    "seed": (1024, 1024, 4096),
    "decode16": (16, 768, 3072),
    "decode64": (64, 768, 3072),
}
ODD_SHAPES = [(1000, 776, 3000), (333, 770, 3001), (129, 64, 200), (8192, 768, 3072)]


def log(msg: str) -> None:
    print(msg, flush=True)


def bench_us(fn, warmup: int = 25, rep: int = 100) -> float:
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median") * 1e3


def make_weights(M: int, K: int, N: int, dtype: torch.dtype, seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    bound_k, bound_n = 1 / K ** 0.5, 1 / N ** 0.5  # nn.Linear's init range
    x = torch.randn(M, K, device="cuda", dtype=dtype, generator=g)
    wg = (torch.rand(N, K, device="cuda", generator=g) * 2 - 1).mul_(bound_k).to(dtype)
    wu = (torch.rand(N, K, device="cuda", generator=g) * 2 - 1).mul_(bound_k).to(dtype)
    wd = (torch.rand(K, N, device="cuda", generator=g) * 2 - 1).mul_(bound_n).to(dtype)
    return x, wg, wu, wd


def reference_h(x, wg, wu) -> torch.Tensor:
    xf = x.float()
    return F.gelu(xf @ wg.float().T, approximate="tanh") * (xf @ wu.float().T)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    if not torch.isfinite(out).all():
        return float("nan")
    return ((out.float() - ref).norm() / ref.norm()).item()


def check(M: int, K: int, N: int, cfg: fm.GateUpConfig, use_tma: bool, seed: int) -> float:
    x, wg, wu, _ = make_weights(M, K, N, torch.bfloat16, seed)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    fm.fused_geglu_gateup(x, wg, wu, config=cfg, use_tma=use_tma, out=out)
    torch.cuda.synchronize()
    return rel_err(out, reference_h(x, wg, wu))


class Eager(torch.nn.Module):
    def __init__(self, wg, wu, wd):
        super().__init__()
        self.gate_proj = torch.nn.Linear(wg.shape[1], wg.shape[0], bias=False, device="cuda", dtype=wg.dtype)
        self.up_proj = torch.nn.Linear(wg.shape[1], wg.shape[0], bias=False, device="cuda", dtype=wg.dtype)
        self.down_proj = torch.nn.Linear(wd.shape[1], wd.shape[0], bias=False, device="cuda", dtype=wg.dtype)
        with torch.no_grad():
            self.gate_proj.weight.copy_(wg)
            self.up_proj.weight.copy_(wu)
            self.down_proj.weight.copy_(wd)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


def kernel_report(x, wg, wu, cfg: fm.GateUpConfig, use_tma: bool) -> dict:
    h = torch.empty(x.shape[0], wg.shape[0], device="cuda", dtype=x.dtype)
    k = fm._launch(x, wg, wu, h, cfg, use_tma)
    ptx = k.asm.get("ptx", "")
    return {"config": cfg.label(), "tma": use_tma, "n_regs": getattr(k, "n_regs", None),
            "n_spills": getattr(k, "n_spills", None), "shared": k.metadata.shared,
            "wgmma_in_ptx": ptx.count("wgmma.mma_async"), "mma_sync_in_ptx": ptx.count("mma.sync"),
            "cp_async_bulk_tensor": ptx.count("cp.async.bulk.tensor"), "name": k.name}


def run_shape(name: str, use_compile: bool) -> dict:
    """Every mode at one shape, same inputs, each timed twice."""
    M, K, N = SHAPES[name]
    x, wg, wu, wd = make_weights(M, K, N, torch.bfloat16, seed=2)
    flops = 2 * 3 * M * K * N
    wgu = torch.cat([wg, wu])
    eager = Eager(wg, wu, wd)
    fused_mod = fm.FusedGeGLUMLP(K, N, min_rows=0, device="cuda", dtype=torch.bfloat16)
    fused_mod.load_state_dict(eager.state_dict())
    h_s = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    g_s, u_s = torch.randn_like(h_s), torch.randn_like(h_s)
    modes = {
        "floor-3gemm": lambda: (torch.mm(x, wg.T), torch.mm(x, wu.T), torch.mm(h_s, wd.T)),
        "cublas-gateup-concat": lambda: torch.mm(x, wgu.T),
        "eager": lambda: eager(x),
        "gelu-mul": lambda: F.gelu(g_s, approximate="tanh") * u_s,
        "fused-gateup": lambda: fm.fused_geglu_gateup(x, wg, wu),
        "fused": lambda: fused_mod(x),
    }
    with torch.no_grad():
        ref = eager(x).float()
        out = fused_mod(x)
        err = rel_err(out, ref)
        log(f"{name}: fused MLP vs eager rel err {err:.2e}; tuned {fm.tuned_configs()}")
        if use_compile and name in ("article", "seed"):
            torch._dynamo.reset()
            comp = torch.compile(eager, dynamic=False)
            comp(x)
            modes["compile"] = lambda: comp(x)
        try:
            from liger_kernel.transformers import LigerGEGLUMLP

            class Cfg:
                hidden_size, intermediate_size, hidden_act = K, N, "gelu_pytorch_tanh"

            lg = LigerGEGLUMLP(Cfg()).to("cuda", torch.bfloat16)
            lg.load_state_dict(eager.state_dict())
            modes["liger"] = lambda: lg(x)
        except Exception as exc:
            log(f"  liger unavailable: {type(exc).__name__}: {exc}")
        row = {"shape": name, "M": M, "K": K, "N": N, "fused_rel_err": err}
        for mode, fn in modes.items():
            try:
                fn()
                a, b = bench_us(fn), bench_us(fn)
            except Exception:
                log(f"  {mode} failed: {traceback.format_exc().splitlines()[-1]}")
                continue
            row[mode] = [a, b]
        floor = min(row.get("floor-3gemm", [float("nan")]))
        for mode in modes:
            if mode in row:
                us = min(row[mode])
                fl = flops if mode not in ("cublas-gateup-concat", "fused-gateup") else flops * 2 / 3
                log(f"  {name:9s} {mode:22s} {row[mode][0]:8.1f} {row[mode][1]:8.1f} us "
                    f"{fl / us / 1e6:6.0f} TFLOP/s  {us / floor:5.2f}x floor")
    return row


def _decode_rows(m: int, graph_us) -> None:
    M, K, N = m, 768, 3072
    x, wg, wu, wd = make_weights(M, K, N, torch.bfloat16, seed=3)
    h = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    eager = Eager(wg, wu, wd)
    rows = {"eager": lambda: eager(x), "cublas-gateup-2mm": lambda: (torch.mm(x, wg.T), torch.mm(x, wu.T)),
            "gelu-mul": lambda: F.gelu(h, approximate="tanh") * h}
    for cfg in fm.candidate_configs(M):
        for t in (True, False):
            rows[f"{cfg.label()}-{'tma' if t else 'ptr'}"] = lambda c=cfg, tt=t: fm._launch(x, wg, wu, h, c, tt)
    with torch.no_grad():
        for name, fn in rows.items():
            try:
                fn()
                a, g = bench_us(fn), graph_us(fn)
                t0 = time.perf_counter()
                for _ in range(200):
                    fn()
                torch.cuda.synchronize()
                loop = (time.perf_counter() - t0) / 200 * 1e6
            except Exception as exc:
                log(f"  m={m} {name}: {type(exc).__name__}")
                continue
            log(f"  m={m:3d} {name:40s} do_bench {a:7.1f}  graph {g:7.1f}  loop {loop:7.1f} us")


def _crossover_row(rows: int, do_bench_cudagraph) -> list[float]:
    x, wg, wu, wd = make_weights(rows, 768, 3072, torch.bfloat16, seed=rows)
    eager = Eager(wg, wu, wd)
    fused = fm.FusedGeGLUMLP(768, 3072, min_rows=0, device="cuda", dtype=torch.bfloat16)
    fused.load_state_dict(eager.state_dict())
    fns = (lambda: eager(x), lambda: fused(x))
    cols = []
    with torch.no_grad():
        err = rel_err(fused(x), eager(x).float())
        assert err <= 1e-2, (rows, err)
        cols += [bench_us(fn) for fn in fns]
        cols += [do_bench_cudagraph(fn, rep=50, return_mode="median") * 1e3 for fn in fns]
        for fn in fns:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                fn()
            torch.cuda.synchronize()
            cols.append((time.perf_counter() - t0) / 200 * 1e6)
    return cols


def crossover() -> int:
    """Eager vs the fused MLP (forced on) over row counts at dim 768 / hidden 3072: where to fall back."""
    from triton.testing import do_bench_cudagraph

    log(f"{'rows':>6} {'eager':>8} {'fused':>8} {'eager graph':>12} {'fused graph':>12} {'eager loop':>11} "
        f"{'fused loop':>11}  (µs)")
    for rows in (16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048):
        cols = _crossover_row(rows, do_bench_cudagraph)
        log(f"{rows:6d} " + " ".join(f"{c:{w}.1f}" for c, w in zip(cols, (8, 8, 12, 12, 11, 11), strict=True)))
    return 0


def decode_diagnosis() -> int:
    """At decode-like M: each candidate on both paths, timed with do_bench (L2 flushed; host launch
    cost hidden behind the flush) and do_bench_cudagraph (GPU time only), next to eager and cuBLAS."""
    from triton.testing import do_bench_cudagraph

    def graph_us(fn) -> float:
        return do_bench_cudagraph(fn, rep=50, return_mode="median") * 1e3

    for m in (16, 64):
        _decode_rows(m, graph_us)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--shapes", default="article,seed,decode16,decode64")
    ap.add_argument("--decode", action="store_true", help="only the decode-size diagnosis")
    ap.add_argument("--crossover", action="store_true", help="only eager vs fused MLP over row counts")
    args = ap.parse_args()
    if args.decode:
        return decode_diagnosis()
    if args.crossover:
        return crossover()
    out_dir = Path(os.environ.get("OUT", ".bench"))
    out_dir.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    env = {"device": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
           "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:])}
    log(json.dumps(env))
    import inspect

    import triton.language as tl
    log(f"tl.make_tensor_descriptor: {hasattr(tl, 'make_tensor_descriptor')}; tl.range: "
        f"{inspect.signature(tl.range.__init__)}")
    results: dict = {"env": env, "correctness": [], "sweep": [], "baselines": [], "kernels": []}
    t0 = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference stays fp32

    # 1. correctness over the candidates at the article shape, and odd shapes with a few configs
    M, K, N = SHAPES["article"]
    art_cands = fm.candidate_configs(M)
    bad = 0
    for i, (m, k, n) in enumerate(ODD_SHAPES):
        cands = art_cands if (m, k, n) == SHAPES["article"] else fm.candidate_configs(m)[:2] + [
            c for c in fm.candidate_configs(m) if c.interleaved][:1]
        for cfg in cands:
            for use_tma in (True, False):
                aligned = k % 8 == 0 and n % 8 == 0
                if use_tma and not aligned:
                    continue
                try:
                    err = check(m, k, n, cfg, use_tma, seed=100 + i)
                except Exception as exc:  # record and go on: one config failing to build is data
                    err = float("nan")
                    log(f"  build/run failed {cfg.label()} tma={use_tma} {m}x{k}x{n}: "
                        f"{type(exc).__name__}: {str(exc).splitlines()[-1][:200] if str(exc) else ''}")
                ok = err == err and err <= 1e-2
                bad += not ok
                results["correctness"].append({"shape": [m, k, n], "config": cfg.label(), "tma": use_tma,
                                               "rel_err": err, "ok": ok})
    for m in (16, 64, 300):
        for cfg in fm.candidate_configs(m):
            for use_tma in (True, False):
                try:
                    err = check(m, 768, 3072, cfg, use_tma, seed=7 + m)
                except Exception as exc:
                    err = float("nan")
                    log(f"  build/run failed {cfg.label()} tma={use_tma} m={m}: {type(exc).__name__}")
                ok = err == err and err <= 1e-2
                bad += not ok
                results["correctness"].append({"shape": [m, 768, 3072], "config": cfg.label(),
                                               "tma": use_tma, "rel_err": err, "ok": ok})
    worst = max((r["rel_err"] for r in results["correctness"] if r["ok"]), default=float("nan"))
    log(f"correctness: {len(results['correctness']) - bad} ok, {bad} failed, worst ok rel err {worst:.2e} "
        f"({time.time() - t0:.0f}s)")

    # 2. sweep at the article shape
    x, wg, wu, wd = make_weights(M, K, N, torch.bfloat16, seed=1)
    flops_gu = 2 * 2 * M * K * N
    h = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    best: dict[bool, tuple[float, fm.GateUpConfig]] = {}
    if not args.no_sweep:
        for use_tma in (True, False):
            for cfg in art_cands:
                try:
                    fn = lambda c=cfg, t=use_tma: fm._launch(x, wg, wu, h, c, t)  # noqa: E731
                    fn()
                    a, b = bench_us(fn), bench_us(fn)
                except Exception as exc:
                    log(f"  sweep failed {cfg.label()} tma={use_tma}: {type(exc).__name__}")
                    continue
                us = min(a, b)
                results["sweep"].append({"config": cfg.label(), "tma": use_tma, "us": [a, b],
                                         "tflops": flops_gu / us / 1e6})
                log(f"  sweep {cfg.label():34s} tma={use_tma!s:5s} {a:8.1f} {b:8.1f} us "
                    f"{flops_gu / us / 1e6:6.0f} TFLOP/s")
                if use_tma not in best or us < best[use_tma][0]:
                    best[use_tma] = (us, cfg)
        for use_tma, (us, cfg) in best.items():
            try:
                results["kernels"].append(kernel_report(x, wg, wu, cfg, use_tma) | {"us": us})
            except Exception as exc:
                log(f"  report failed: {type(exc).__name__}: {exc}")
        log(f"sweep done ({time.time() - t0:.0f}s)")

    # 3./4. baselines and crossover, per shape
    shape_names = []
    for s in args.shapes.split(","):
        shape_names += ["decode16", "decode64"] if s == "decode" else [s]
    for name in shape_names:
        results["baselines"].append(run_shape(name, not args.no_compile))
    (out_dir / "fused_gpu.json").write_text(json.dumps(results, indent=1, default=str))
    log(f"total {time.time() - t0:.0f}s")
    log("best: " + json.dumps({str(k): (round(v[0], 1), v[1].label()) for k, v in best.items()}))
    for r in results["kernels"]:
        log("kernel: " + json.dumps(r))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
