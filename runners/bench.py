"""Unprofiled timings of every mode of the GeGLU MLP in one process, on the same inputs and weights.

Modes: eager, compile (torch.compile default), max-autotune, kernels (Liger's GeGLU MLP through the
runners' loader and its fallback chain), fused (FusedGeGLUMLP). Beside them, in the same run, the
floor of this design: the three cuBLAS GEMMs alone (gate, up, down; no GeGLU). Each time is
`triton.testing.do_bench`'s median (warm-up first; the L2 is flushed before every call, so every call
reads its weights and inputs from device memory). `host_us` is the mean of back-to-back calls without a
flush, which is what a caller sees when the host, not the GPU, is the bottleneck (small M).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from runners.modules import LigerConfig, SimpleGeGLUMLP, seeded, seeded_input

MODES: tuple[str, ...] = ("eager", "compile", "max-autotune", "kernels", "fused")
FLOOR_MODE = "cublas-3gemm"


@dataclass(frozen=True)
class BenchShape:
    name: str
    batch: int
    seq: int
    dim: int
    hidden: int

    @property
    def rows(self) -> int:
        return self.batch * self.seq

    @property
    def flops(self) -> int:
        return 3 * 2 * self.rows * self.dim * self.hidden

    def as_dict(self) -> dict[str, int]:
        return {"batch": self.batch, "seq": self.seq, "dim": self.dim, "hidden": self.hidden, "rows": self.rows}


SHAPES: dict[str, BenchShape] = {s.name: s for s in (
    BenchShape("article", 64, 128, 768, 3072),  # the article's x[64, 128, 768], hidden 3072
    BenchShape("seed", 8, 128, 1024, 4096),  # batch*seq 1024, dim 1024, hidden 4096
    BenchShape("decode16", 16, 1, 768, 3072),  # decode-like: one token for each of 16 sequences
    BenchShape("decode64", 64, 1, 768, 3072),
)}
SHAPE_GROUPS: dict[str, tuple[str, ...]] = {"decode": ("decode16", "decode64")}


def resolve_shapes(spec: str) -> list[BenchShape]:
    """"article,seed,decode" -> shapes in that order; unknown names raise ValueError."""
    names: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        for name in SHAPE_GROUPS.get(part, (part,)):
            if name not in SHAPES:
                known = ", ".join([*SHAPES, *SHAPE_GROUPS])
                raise ValueError(f"unknown shape {part!r} (choose from {known})")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("no shapes given")
    return [SHAPES[n] for n in names]


def resolve_modes(spec: str) -> list[str]:
    modes = [m.strip() for m in spec.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"unknown mode {', '.join(unknown) or spec!r} (choose from {', '.join(MODES)})")
    return [m for m in MODES if m in modes]


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in fp32; NaN when out has a non-finite value (NaN never passes)."""
    out32 = out.float()
    if not bool(torch.isfinite(out32).all()):
        return float("nan")
    return float((out32 - ref).norm() / ref.norm())


def host_loop_us(fn: Callable[[], Any], iters: int = 50) -> float:
    """Mean µs of back-to-back calls (no flush): host-bound when each call's GPU work is short."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e6


def _median_us(fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")) * 1e3


def _build(mode: str, ref: SimpleGeGLUMLP, shape: BenchShape, dtype: torch.dtype,
           info: dict[str, Any]) -> Callable[[torch.Tensor], torch.Tensor]:
    """The callable of one mode, with the reference's weights in `dtype`; notes go into `info`."""
    state = ref.state_dict()
    if mode in ("eager", "compile", "max-autotune"):
        module = SimpleGeGLUMLP(shape.dim, shape.hidden).to("cuda", dtype)
        module.load_state_dict(state)
        if mode == "eager":
            return module
        torch._dynamo.reset()  # each compiled mode starts from a clean cache
        kwargs: dict[str, Any] = {"dynamic": False}
        if mode == "max-autotune":
            kwargs["mode"] = "max-autotune"
        return torch.compile(module, **kwargs)
    if mode == "kernels":
        from runners.liger_source import load_liger_geglu_mlp

        found = load_liger_geglu_mlp()
        info["source"] = found.source
        if found.tried:
            info["tried"] = list(found.tried)
        module = found.cls(LigerConfig(shape.dim, shape.hidden))
        module.load_state_dict(state)
        return module.to("cuda", dtype)
    if mode == "fused":
        from runners.fused_mlp import FusedGeGLUMLP

        module = FusedGeGLUMLP(shape.dim, shape.hidden, device="cuda", dtype=dtype)
        module.load_state_dict(state)
        info["path"] = module.path_for(shape.rows, torch.device("cuda"), dtype)
        info["min_rows"] = module.min_rows
        return module
    raise ValueError(mode)


def _floor_fn(ref: SimpleGeGLUMLP, x2: torch.Tensor, dtype: torch.dtype) -> Callable[[], Any]:
    wg, wu, wd = (m.weight.detach().to(dtype) for m in (ref.gate_proj, ref.up_proj, ref.down_proj))
    h = torch.randn(x2.shape[0], wg.shape[0], device="cuda", dtype=dtype)

    def three_gemms() -> tuple[torch.Tensor, ...]:
        return torch.mm(x2, wg.t()), torch.mm(x2, wu.t()), torch.mm(h, wd.t())

    return three_gemms


def _row(mode: str, shape: BenchShape, us: float, floor_us: float, **extra: Any) -> dict[str, Any]:
    """floor_pct: the three-GEMM floor's time as a percentage of this mode's (100 = at the floor)."""
    row: dict[str, Any] = {"mode": mode, "shape": shape.name, "median_us": round(us, 2),
                           "tflops": round(shape.flops / us / 1e6, 1), "floor_pct": round(100.0 * floor_us / us, 1)}
    row.update(extra)
    return row


def _time(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, expected: torch.Tensor,
          warmup_ms: float, rep_ms: float) -> tuple[float, float, float]:
    """(rel err of the first call, do_bench median µs, host-loop µs) of fn(x)."""
    err = rel_err(fn(x), expected)  # the first call compiles / tunes
    us = _median_us(lambda: fn(x), warmup_ms, rep_ms)
    return err, us, host_loop_us(lambda: fn(x))


def _bench_shape(shape: BenchShape, modes: list[str], dtype: torch.dtype, warmup_ms: float, rep_ms: float,
                 note: Callable[[str], None]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    ref = seeded(lambda: SimpleGeGLUMLP(shape.dim, shape.hidden)).to("cuda")
    x = seeded_input((shape.batch, shape.seq, shape.dim), dtype, "cuda")
    expected = ref(x.float())
    floor_us = _median_us(_floor_fn(ref, x.reshape(shape.rows, shape.dim), dtype), warmup_ms, rep_ms)
    results.append(_row(FLOOR_MODE, shape, floor_us, floor_us))
    note(f"{shape.name}: three cuBLAS GEMMs {floor_us:.1f} us")
    for mode in modes:
        info: dict[str, Any] = {}
        start = time.perf_counter()
        try:
            err, us, host = _time(_build(mode, ref, shape, dtype, info), x, expected, warmup_ms, rep_ms)
        except Exception as exc:  # one mode failing (no Liger, a compile error) is reported, not fatal
            msg = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            errors.append({"mode": mode, "shape": shape.name, "kind": "failed", "error": f"{type(exc).__name__}: {msg}"})
            note(f"{shape.name} {mode}: failed: {type(exc).__name__}: {msg}")
            continue
        if not err <= 1e-2:  # NaN fails too
            errors.append({"mode": mode, "shape": shape.name, "kind": "inaccurate",
                           "error": f"relative error {err:.3g} vs the fp32 reference exceeds 1e-2"})
        setup_s = time.perf_counter() - start
        results.append(_row(mode, shape, us, floor_us, rel_err=float(f"{err:.3g}"), host_us=round(host, 2),
                            setup_s=round(setup_s, 1), **info))
        note(f"{shape.name} {mode}: {us:.1f} us (host loop {host:.1f} us, rel err {err:.2e}, {setup_s:.0f} s)")
        if mode == "fused" and info.get("path") != "fused":
            # the unfused fallback was chosen here: time the kernel path too, so the crossover shows
            forced = _build("fused", ref, shape, dtype, {})
            forced.min_rows = 0
            err, us, host = _time(forced, x, expected, warmup_ms, rep_ms)
            results.append(_row("fused-kernel", shape, us, floor_us, rel_err=float(f"{err:.3g}"),
                                host_us=round(host, 2), path="fused"))
            note(f"{shape.name} fused-kernel (not chosen): {us:.1f} us (host loop {host:.1f} us)")
    eager_us = next((r["median_us"] for r in results if r["mode"] == "eager"), None)
    if eager_us:
        for row in results:
            if row["mode"] != FLOOR_MODE:
                row["speedup_vs_eager"] = round(eager_us / row["median_us"], 3)
    return results, errors


def bench_mlp(shapes: list[BenchShape], modes: list[str], *, dtype: torch.dtype = torch.bfloat16,
              warmup_ms: float = 25.0, rep_ms: float = 100.0,
              note: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Time every mode at every shape; returns the report (cli_bench describes its JSON layout)."""
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for shape in shapes:
        with torch.no_grad():
            rows, errs = _bench_shape(shape, modes, dtype, warmup_ms, rep_ms, note)
        results += rows
        errors += errs
        torch.cuda.empty_cache()
    from runners.fused_mlp import FUSED_MIN_ROWS, tuned_configs

    return {"results": results, "errors": errors,
            "fused": {"min_rows": FUSED_MIN_ROWS, "tuned": tuned_configs(),
                      "kernel": "fused_geglu_gateup_gemm_kernel (gate+up GEMM, GeGLU epilogue) + cuBLAS down"},
            "timing": {"method": "triton.testing.do_bench median, L2 flushed before each call",
                       "warmup_ms": warmup_ms, "rep_ms": rep_ms, "host_us": "mean of 50 back-to-back calls"},
            "dtype": str(dtype).removeprefix("torch."),
            "shapes": {s.name: s.as_dict() for s in shapes}}


def render_table(report: dict[str, Any]) -> str:
    """Plain-text table: one line per (shape, mode)."""
    head = f"{'shape':9} {'mode':14} {'median µs':>10} {'TFLOP/s':>8} {'% floor':>8} {'× eager':>8} " \
           f"{'host µs':>8}  note"
    lines = [head, "-" * len(head)]
    for r in report["results"]:
        pct = f"{r['floor_pct']:.1f}" if "floor_pct" in r else ""
        spd = f"{r['speedup_vs_eager']:.2f}" if "speedup_vs_eager" in r else ""
        host = f"{r['host_us']:.1f}" if "host_us" in r else ""
        note = r.get("source") or (f"path={r['path']}" if "path" in r else "")
        if r["mode"] == FLOOR_MODE:
            note = "floor: gate, up, down GEMMs alone"
        lines.append(f"{r['shape']:9} {r['mode']:14} {r['median_us']:10.1f} {r['tflops']:8.1f} {pct:>8} "
                     f"{spd:>8} {host:>8}  {note}")
    for e in report.get("errors", []):
        lines.append(f"error: {e['shape']} {e['mode']}: {e['error']}")
    return "\n".join(lines)
