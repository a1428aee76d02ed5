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
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn

from mlptui.runners.workloads.modules import LigerConfig, SimpleGeGLUMLP, seeded, seeded_input

if TYPE_CHECKING:
    from mlptui.runners.fused import FusedGeGLUMLP

MlpFn = Callable[[torch.Tensor], torch.Tensor]


def _as_fn(module: nn.Module | Callable[..., Any]) -> MlpFn:
    """Every mode's module maps the input tensor to the output tensor; torch types its __call__ as
    returning Any (and torch.compile's result as any callable)."""
    return cast(MlpFn, module)

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


def enqueue_us(fn: Callable[[], Any], iters: int = 50) -> float:
    """Host time per call alone: calls enqueued back to back, timed before waiting for the GPU (the
    launch queue holds ~1000 kernels, so it never blocks at this count)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - start) / iters * 1e6)
        torch.cuda.synchronize()
    return best


def _median_us(fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")) * 1e3


def _build(mode: str, ref: SimpleGeGLUMLP, shape: BenchShape, dtype: torch.dtype,
           info: dict[str, Any]) -> MlpFn:
    """The callable of one mode, with the reference's weights in `dtype`; notes go into `info`."""
    state = ref.state_dict()
    if mode in ("eager", "compile", "max-autotune"):
        module = SimpleGeGLUMLP(shape.dim, shape.hidden).to("cuda", dtype)
        module.load_state_dict(state)
        if mode == "eager":
            return _as_fn(module)
        torch._dynamo.reset()  # each compiled mode starts from a clean cache
        kwargs: dict[str, Any] = {"dynamic": False}
        if mode == "max-autotune":
            kwargs["mode"] = "max-autotune"
        return _as_fn(torch.compile(module, **kwargs))
    if mode == "kernels":
        from mlptui.runners.workloads.liger_source import load_liger_geglu_mlp

        found = load_liger_geglu_mlp()
        info["source"] = found.source
        if found.tried:
            info["tried"] = list(found.tried)
        liger = found.cls(LigerConfig(shape.dim, shape.hidden))
        liger.load_state_dict(state)
        return _as_fn(liger.to("cuda", dtype))
    if mode == "fused":
        from mlptui.runners.fused import FusedGeGLUMLP

        fused = FusedGeGLUMLP(shape.dim, shape.hidden, device="cuda", dtype=dtype)
        fused.load_state_dict(state)
        info["path"] = fused.path_for(shape.rows, torch.device("cuda"), dtype)
        why = fused.fallback_reason(shape.rows, torch.device("cuda"), dtype)
        if why:
            info["why"] = why
        return _as_fn(fused)
    raise ValueError(mode)


def _floor_fn(ref: SimpleGeGLUMLP, x2: torch.Tensor, dtype: torch.dtype) -> Callable[[], Any]:
    wg, wu, wd = (m.weight.detach().to(dtype) for m in (ref.gate_proj, ref.up_proj, ref.down_proj))
    h = torch.randn(x2.shape[0], wg.shape[0], device="cuda", dtype=dtype)

    def three_gemms() -> tuple[torch.Tensor, ...]:
        return torch.mm(x2, wg.t()), torch.mm(x2, wu.t()), torch.mm(h, wd.t())

    return three_gemms


def _row(mode: str, shape: BenchShape, us: float, floor_us: float, **extra: Any) -> dict[str, Any]:
    """floor_pct: the three-GEMM floor's time as a percentage of this mode's (100 = at the floor)."""
    row: dict[str, Any] = {"mode": mode, "shape": shape.name, "rows": shape.rows, "dim": shape.dim,
                           "hidden": shape.hidden, "pass": "fwd", "median_us": round(us, 2),
                           "tflops": round(shape.flops / us / 1e6, 1), "floor_pct": round(100.0 * floor_us / us, 1)}
    row.update(extra)
    return row


COMPILED_MODES = ("compile", "max-autotune")
ROUNDS = 3  # do_bench medians per mode; the best is kept (host jitter only ever adds time)


def _graph_us(fn: Callable[[], Any], rep_ms: float) -> float | None:
    """GPU time alone: fn captured in a CUDA graph and replayed (None where it cannot be captured,
    e.g. max-autotune, which replays its own graphs)."""
    from triton.testing import do_bench_cudagraph

    try:
        return float(do_bench_cudagraph(fn, rep=rep_ms, return_mode="median")) * 1e3
    except Exception:
        torch.cuda.synchronize()
        return None


def _stop_compile_workers() -> None:
    # Inductor's compile/benchmark worker processes outlive the compile; stopped, they cannot steal
    # host time from the calls timed after them.
    from torch._inductor import async_compile

    stop = getattr(async_compile, "shutdown_compile_workers", None)
    if stop is not None:
        stop()


def _time(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, expected: torch.Tensor,
          warmup_ms: float, rep_ms: float, compiled: bool, graph: bool = True) -> dict[str, Any]:
    """rel err of the first call, best of ROUNDS do_bench medians, CUDA-graph and host-loop µs."""
    err = rel_err(fn(x), expected)  # the first call compiles / tunes
    if compiled:
        _stop_compile_workers()
    us = min(_median_us(lambda: fn(x), warmup_ms, rep_ms) for _ in range(ROUNDS))
    graph_us = _graph_us(lambda: fn(x), rep_ms) if graph else None
    return {"err": err, "us": us, "graph": graph_us, "host": host_loop_us(lambda: fn(x)),
            "enqueue": enqueue_us(lambda: fn(x))}


def _extra(t: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"rel_err": float(f"{t['err']:.3g}"), "host_us": round(t["host"], 2),
                           "enqueue_us": round(t["enqueue"], 2)}
    if t["graph"] is not None:
        out["graph_us"] = round(t["graph"], 2)
    return out


@dataclass
class _ShapeRun:
    shape: BenchShape
    ref: SimpleGeGLUMLP
    x: torch.Tensor
    expected: torch.Tensor
    floor_us: float


def _prepare(shape: BenchShape, dtype: torch.dtype, warmup_ms: float, rep_ms: float,
             results: list[dict[str, Any]], note: Callable[[str], None]) -> _ShapeRun:
    ref = seeded(lambda: SimpleGeGLUMLP(shape.dim, shape.hidden)).to("cuda")
    x = seeded_input((shape.batch, shape.seq, shape.dim), dtype, "cuda")
    floor_fn = _floor_fn(ref, x.reshape(shape.rows, shape.dim), dtype)
    floor_us = min(_median_us(floor_fn, warmup_ms, rep_ms) for _ in range(ROUNDS))
    graph = _graph_us(floor_fn, rep_ms)
    results.append(_row(FLOOR_MODE, shape, floor_us, floor_us, **({"graph_us": round(graph, 2)} if graph else {})))
    note(f"{shape.name}: three cuBLAS GEMMs {floor_us:.1f} us")
    return _ShapeRun(shape, ref, x, ref(x.float()), floor_us)


def _bench_mode(run: _ShapeRun, mode: str, dtype: torch.dtype, warmup_ms: float, rep_ms: float,
                results: list[dict[str, Any]], errors: list[dict[str, str]], note: Callable[[str], None]) -> None:
    shape = run.shape
    info: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        fn = _build(mode, run.ref, shape, dtype, info)
        # max-autotune replays CUDA graphs of its own, which cannot be captured into another
        t = _time(fn, run.x, run.expected, warmup_ms, rep_ms, mode in COMPILED_MODES, mode != "max-autotune")
    except Exception as exc:  # one mode failing (no Liger, a compile error) is reported, not fatal
        msg = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        errors.append({"mode": mode, "shape": shape.name, "kind": "failed", "error": f"{type(exc).__name__}: {msg}"})
        note(f"{shape.name} {mode}: failed: {type(exc).__name__}: {msg}")
        return
    if not t["err"] <= 1e-2:  # NaN fails too
        errors.append({"mode": mode, "shape": shape.name, "kind": "inaccurate",
                       "error": f"relative error {t['err']:.3g} vs the fp32 reference exceeds 1e-2"})
    setup_s = time.perf_counter() - start
    results.append(_row(mode, shape, t["us"], run.floor_us, **_extra(t), setup_s=round(setup_s, 1), **info))
    note(f"{shape.name} {mode}: {t['us']:.1f} us (graph {t['graph'] or float('nan'):.1f}, host loop "
         f"{t['host']:.1f}, rel err {t['err']:.2e}, {setup_s:.0f} s)")
    if mode == "fused" and info.get("path") != "fused":
        # the unfused fallback was chosen here: time the kernel path too, so the crossover shows
        cast("FusedGeGLUMLP", fn).policy = "fused"     # _build returned the FusedGeGLUMLP itself for this mode
        t = _time(fn, run.x, run.expected, warmup_ms, rep_ms, False)
        results.append(_row("fused-kernel", shape, t["us"], run.floor_us, **_extra(t), path="fused"))
        note(f"{shape.name} fused-kernel (not chosen): {t['us']:.1f} us (graph {t['graph'] or float('nan'):.1f})")


def bench_mlp(shapes: list[BenchShape], modes: list[str], *, dtype: torch.dtype = torch.bfloat16,
              warmup_ms: float = 25.0, rep_ms: float = 100.0,
              note: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Time every mode at every shape; returns the report (cli_bench describes its JSON layout).

    The modes that need no compiler run first for every shape, torch.compile's last: its worker
    processes and autotuning would otherwise load the host while the others are timed.
    """
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    order = [m for m in modes if m not in COMPILED_MODES] + [m for m in modes if m in COMPILED_MODES]
    with torch.no_grad():
        runs = [_prepare(shape, dtype, warmup_ms, rep_ms, results, note) for shape in shapes]
        for mode in order:
            for run in runs:
                _bench_mode(run, mode, dtype, warmup_ms, rep_ms, results, errors, note)
    del runs
    torch.cuda.empty_cache()
    rank = {m: i for i, m in enumerate([FLOOR_MODE, *MODES, "fused-kernel"])}
    position = {s.name: i for i, s in enumerate(shapes)}
    results.sort(key=lambda r: (position[r["shape"]], rank[r["mode"]]))
    for shape in shapes:
        rows = [r for r in results if r["shape"] == shape.name]
        eager_us = next((r["median_us"] for r in rows if r["mode"] == "eager"), None)
        for row in rows:
            if eager_us and row["mode"] != FLOOR_MODE:
                row["speedup_vs_eager"] = round(eager_us / row["median_us"], 3)
    from mlptui.runners.fused import crossover, tuned_configs

    return {"results": results, "errors": errors,
            "fused": {"route": "crossover model (runners/mlptui/runners/fused/crossover.py)", "margin": crossover.MARGIN,
                      "tuned": tuned_configs(),
                      "kernel": "fused_geglu_gateup_gemm_kernel (gate+up GEMM, GeGLU epilogue) + cuBLAS down"},
            "timing": {"method": f"triton.testing.do_bench median, L2 flushed before each call; best of {ROUNDS} "
                                 "medians",
                       "warmup_ms": warmup_ms, "rep_ms": rep_ms,
                       "graph_us": "do_bench_cudagraph median: GPU time without host launch cost",
                       "host_us": "mean of 50 back-to-back calls without a flush (host-inclusive)",
                       "enqueue_us": "host time per call: 50 calls enqueued, timed before the synchronize",
                       "order": "per mode over all shapes; torch.compile modes last"},
            "dtype": str(dtype).removeprefix("torch."),
            "shapes": {s.name: s.as_dict() for s in shapes}}


def render_table(report: dict[str, Any]) -> str:
    """Plain-text table: one line per (shape, mode)."""
    head = (f"{'shape':9} {'mode':14} {'median µs':>10} {'TFLOP/s':>8} {'% floor':>8} {'× eager':>8} "
            f"{'graph µs':>9} {'host µs':>8}  note")
    lines = [head, "-" * len(head)]
    for r in (r for r in report["results"] if not r.get("sweep") and not r.get("calibration")):
        spd = f"{r['speedup_vs_eager']:.2f}" if "speedup_vs_eager" in r else ""
        graph = f"{r['graph_us']:.1f}" if "graph_us" in r else ""
        host = f"{r['host_us']:.1f}" if "host_us" in r else ""
        note = r.get("source") or (f"path={r['path']}" if "path" in r else "")
        if r["mode"] == FLOOR_MODE:
            note = "floor: gate, up, down GEMMs alone"
        lines.append(f"{r['shape']:9} {r['mode']:14} {r['median_us']:10.1f} {r['tflops']:8.1f} "
                     f"{r['floor_pct']:8.1f} {spd:>8} {graph:>9} {host:>8}  {note}")
    cells: dict[tuple[str, int, str], dict[str, float]] = {}
    for r in (r for r in report["results"] if r.get("sweep")):
        cells.setdefault((r["shape"], r["rows"], r["pass"]), {})[r["mode"]] = r["median_us"]
    if cells:
        modes = [m for m in ("eager", "fused", "compile", "kernels") if any(m in c for c in cells.values())]
        lines.append("")
        lines.append(f"{'sweep':11} {'rows':>6} {'pass':8}" + "".join(f"{m + ' µs':>12}" for m in modes)
                     + "".join(f"{'÷' + m:>10}" for m in modes if m != "fused"))
        for (shape, rows, ps), c in cells.items():
            f = c.get("fused")
            lines.append(f"{shape:11} {rows:6} {ps:8}" + "".join(f"{c[m]:12.1f}" if m in c else f"{'':12}" for m in modes)
                         + "".join(f"{c[m] / f:10.3f}" if f and m in c else f"{'':10}" for m in modes if m != "fused"))
    for e in report.get("errors", []):
        lines.append(f"error: {e['shape']} {e['mode']}: {e['error']}")
    return "\n".join(lines)
