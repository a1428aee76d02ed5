"""`mlptui bench mlp --sweep`: rows × model-family dims, the fused MLP against eager, torch.compile and
Liger, forward and forward+backward; and, first, the crossover table the fused module routes by.

1. Crossover (per family): FusedGeGLUMLP forced onto its fused path and the eager MLP, each row count's
   GPU time by CUDA-graph replay (weights fixed, so the fused launcher captures its eager plan) and each
   path's host time per call (calls enqueued back to back, timed before the synchronize). The table
   is installed for this process and goes into the report (`crossover`) to be committed as
   runners/mlptui/runners/fused/crossover.json.
2. Calibration (per family, both passes): the fused path forced on and eager (timed twice: the cell's
   noise), timed as the verification times them (timed_cell) at every row count. These pairs are folded
   into the installed model (crossover.with_calibration): at a row count this calibration measured, the
   fused module takes its fused path only where it was measured faster (at the slow end of the paired
   ratio's interval), elsewhere where the model predicts it faster; a pair noisier than its margin
   decides nothing.
3. Verification: per family and pass, each mode's time at every row count (timed_cell: medians of
   alternating synchronized calls), the fused module routing by the model just folded, eager timed
   twice; the fused module, eager, its twin and the fused path forced on in one group, torch.compile
   and Liger with eager in another (verification_groups says why). torch.compile is built once per
   family, dynamic=True.

Every result row: shape ("DIMxHIDDEN"), rows, dim, hidden, mode, pass, median_us, every mode but eager its
paired ratio against eager (paired_vs_eager: median, low, high), and the fused row the ratios of the other
modes' medians against its own (vs_MODE). Calibration rows carry "calibration": true and the
modes "fused-forced" and "eager".
"""

from __future__ import annotations

import functools
import gc
import json
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from mlptui.runners.bench.modes import enqueue_us, rel_err
from mlptui.runners.bench.pairing import EAGER_AGAIN, balanced_orders, medians_us, noise, paired_ratio
from mlptui.runners.workloads.modules import LigerConfig, SimpleGeGLUMLP, seeded

if TYPE_CHECKING:
    from mlptui.runners.fused.module import FusedGeGLUMLP

FAMILIES: tuple[tuple[int, int], ...] = ((768, 3072), (1024, 2816), (2048, 5632), (1536, 8960), (4096, 11008),
                                         (5120, 13824))
HOST_BOUND_CALLS = 400  # calls per mode where calls are short, interleaved
CELL_BUDGET_S = 1.5  # of timed calls per cell, all modes together, where calls are long
BURN_S = 0.1
MIN_CALLS = 20
L2_FLUSH_BYTES = 256 * 1024 * 1024  # as do_bench's cache flush


def _graph_us(fn: Callable[[], Any], rep_ms: float) -> float:
    from triton.testing import do_bench_cudagraph

    return float(do_bench_cudagraph(fn, rep=rep_ms, return_mode="median")) * 1e3


def share_parameters(dst: torch.nn.Module, src: torch.nn.Module) -> None:
    """Make every parameter of `dst` the very tensor of `src` with the same qualified name (same weights,
    same memory), so two modules differ by their code only."""
    theirs = dict(src.named_parameters())
    for prefix, mod in dst.named_modules():
        for name, mine in list(mod._parameters.items()):
            if mine is None:  # an absent bias stays absent
                continue
            key = f"{prefix}.{name}" if prefix else name
            if key not in theirs:
                raise KeyError(f"{type(src).__name__} has no parameter {key}")
            mod._parameters[name] = theirs[key]


def mode_modules(dim: int, hidden: int, dtype: torch.dtype, modes: tuple[str, ...],
             info: dict[str, Any], shared: bool = False) -> dict[str, Any]:
    """Each mode's module or compiled callable, with the reference's weights: copied into each module's own
    tensors, or with `shared`, eager's very tensors in every module (placement is then no difference
    between modes; only the fused path's interleaved copy is its own)."""
    from mlptui.runners.fused import FusedGeGLUMLP

    ref = seeded(lambda: SimpleGeGLUMLP(dim, hidden))
    state = ref.state_dict()
    out: dict[str, Any] = {}      # mode -> module or compiled callable
    eager = SimpleGeGLUMLP(dim, hidden).to("cuda", dtype)
    eager.load_state_dict(state)
    out["eager"] = eager

    def weigh(m: torch.nn.Module) -> torch.nn.Module:
        if shared:
            share_parameters(m, eager)
        else:
            m.load_state_dict(state)
        return m

    # eager's twin: with its own copy of the weights, it also shows what a different allocation costs
    out[EAGER_AGAIN] = weigh(SimpleGeGLUMLP(dim, hidden).to("cuda", dtype))
    if "fused" in modes:
        out["fused"] = weigh(FusedGeGLUMLP(dim, hidden, device="cuda", dtype=dtype))
    if "compile" in modes:
        out["compile"] = torch.compile(weigh(SimpleGeGLUMLP(dim, hidden).to("cuda", dtype)), dynamic=True)
    if "kernels" in modes:
        try:
            from mlptui.runners.workloads.liger_source import load_liger_geglu_mlp

            found = load_liger_geglu_mlp()
            info["kernels_source"] = found.source
            out["kernels"] = weigh(found.cls(LigerConfig(dim, hidden)).to("cuda", dtype))
        except Exception as exc:  # no Liger here: the cell says so
            info["kernels_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    info["weights"] = "shared: every mode reads eager's weight tensors" if shared else "a copy per mode"
    return out


def eager_and_forced(dim: int, hidden: int, dtype: torch.dtype) -> tuple[torch.nn.Module, FusedGeGLUMLP]:
    """Eager SimpleGeGLUMLP and FusedGeGLUMLP with its fused path forced on, on the GPU, with the same seeded
    weights (each its own copy)."""
    from mlptui.runners.fused import FusedGeGLUMLP

    state = seeded(functools.partial(SimpleGeGLUMLP, dim, hidden)).state_dict()
    eager = SimpleGeGLUMLP(dim, hidden).to("cuda", dtype)
    eager.load_state_dict(state)
    fused = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=dtype)
    fused.load_state_dict(state)
    return eager, fused


def measure_crossover(families: tuple[tuple[int, int], ...], rows: tuple[int, ...], dtype: torch.dtype,
                      rep_ms: float, note: Callable[[str], None]) -> dict[str, Any]:
    """One GPU's crossover entry: per family, each path's GPU µs per row count and host µs per call."""
    fams = []
    for dim, hidden in families:
        eager, fused = eager_and_forced(dim, hidden, dtype)
        g_f, g_e, h_f, h_e = [], [], [], []
        start = time.perf_counter()
        with torch.no_grad():
            for r in rows:
                x = torch.randn(r, dim, device="cuda", dtype=dtype)
                fused(x)  # tunes this bucket
                fused.launcher().graph_safe = False  # time the eager plan (weights fixed here)
                run_f, run_e = partial(fused, x), partial(eager, x)  # type: ignore[misc, unused-ignore]  # torch-less mypy: Any base
                g_f.append(round(_graph_us(run_f, rep_ms), 2))
                g_e.append(round(_graph_us(run_e, rep_ms), 2))
                h_f.append(enqueue_us(run_f))
                h_e.append(enqueue_us(run_e))
        hf, he = sorted(h_f)[len(h_f) // 2], sorted(h_e)[len(h_e) // 2]
        fams.append({"dim": dim, "hidden": hidden, "rows": list(rows), "fused_gpu_us": g_f, "eager_gpu_us": g_e,
                     "fused_host_us": round(hf, 2), "eager_host_us": round(he, 2),
                     "fused_host_us_per_rows": [round(v, 2) for v in h_f],
                     "eager_host_us_per_rows": [round(v, 2) for v in h_e]})
        note(f"crossover {dim}x{hidden}: host fused {hf:.1f} us, eager {he:.1f} us; GPU fused/eager "
             + " ".join(f"{r}:{f:.0f}/{e:.0f}" for r, f, e in zip(rows, g_f, g_e, strict=True))
             + f" ({time.perf_counter() - start:.0f} s)")
    return {"families": fams, "method": "GPU: do_bench_cudagraph median; host: min over 3 loops of 50 calls "
                                        "enqueued, timed before the synchronize, median over the row counts"}


def pass_call(module: torch.nn.Module, x: torch.Tensor, bwd: bool) -> Callable[[], Any]:
    if not bwd:
        return lambda: module(x)
    params = [p for p in module.parameters() if p.requires_grad]
    xg = x.detach().requires_grad_(True)
    inputs = [xg, *params]
    grad_out = torch.randn_like(x)

    def step() -> Any:
        return torch.autograd.grad(module(xg), inputs, grad_out)
    return step


def interleaved_times(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, list[float]]:
    """Seconds of each synchronized call, per mode, the modes alternating call by call in balanced orders
    (balanced_orders), so a drift of the host's speed or the GPU's clocks, and the warmth a call leaves
    for the next, reach every mode alike; L2 is flushed before each call, as do_bench does. Call k of
    every mode was made in the same round."""
    modes = list(fns)
    orders = balanced_orders(len(modes))
    times: dict[str, list[float]] = {m: [] for m in fns}
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    for k in range(calls):
        for i in orders[k % len(orders)]:
            m = modes[i]
            flush.zero_()  # no mode finds the weights of the one before it in L2
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fns[m]()
            torch.cuda.synchronize()
            times[m].append(time.perf_counter() - t0)
    return times


def interleaved_us(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    """Median µs of one call per mode (interleaved_times)."""
    return medians_us(interleaved_times(fns, calls))


def best_us(fns: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Median µs of one call per mode in this cell (cell_times)."""
    return medians_us(cell_times(fns))


def cell_times(fns: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Seconds of each timed call per mode in this cell: alternating synchronized calls
    (interleaved_times), HOST_BOUND_CALLS each where a call is short, fewer (at least MIN_CALLS) where
    CELL_BUDGET_S would not hold them, with the collector paused (a collection in one callable's window
    would be charged to it alone). The GPU is first kept busy for BURN_S with the cell's own work, so
    every mode is timed at the clocks of sustained load. A call's time is its latency, from the call to
    the GPU's last kernel: where the host's work is longer than the GPU's, the host's is what it measures.

    Why not do_bench's blocks of back-to-back calls: two modules running identical kernels read further apart
    in GPU-bound cells that way than by alternation (benchmarks/results/fused-mlp.md, "Timing method")."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        end, passes = start + BURN_S, 0
        while time.perf_counter() < end:
            for fn in fns.values():
                fn()
            passes += 1
        torch.cuda.synchronize()
        round_s = (time.perf_counter() - start) / passes
        calls = max(MIN_CALLS, min(HOST_BOUND_CALLS, int(CELL_BUDGET_S / round_s)))
        return interleaved_times(fns, calls)
    finally:
        gc.enable()


def timed_cell(fns: dict[str, Callable[[], Any]]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Each mode's median µs in this cell (cell_times), and each other mode's paired ratio against eager
    with its interval (paired_ratio: [median, low, high]), the figure the verdicts read: on identical code
    timed as two modes it strays less from 1 than the ratio of the two medians
    (benchmarks/results/fused-mlp.md, "Paired ratios")."""
    times = cell_times(fns)
    best = medians_us(times)
    paired = {m: [round(v, 4) for v in paired_ratio(times, m)] for m in times if m != "eager"} \
        if "eager" in times else {}
    return best, paired


FORCED = "fused-forced"  # the fused module with its fused path forced on: the route's other choice
HEAD_TO_HEAD = ("eager", EAGER_AGAIN, "fused", FORCED)


def verification_groups(modes: list[str]) -> list[list[str]]:
    """The timing groups of a verification cell: the fused module head to head with eager, eager's twin
    and the fused path forced on (so the route is judged against both of its choices timed in the same
    moments), then the other modes with eager (all modes in one group where that split leaves nothing to
    pair).

    Why: a call of torch.compile's or Liger's MLP between two calls of the fused path slowed its kernel
    against eager in weight-bound cells, while plain Python work between them did not; a model runs one
    of the two implementations, not both in turn with a compiled copy (benchmarks/mode_mix_gpu.py;
    benchmarks/results/fused-mlp.md, "Mixed modes"). The calibration times the same three modes."""
    first = [m for m in modes if m in HEAD_TO_HEAD]
    rest = [m for m in modes if m not in HEAD_TO_HEAD]
    if len(first) < 2 or "eager" not in first or not rest:
        return [modes]
    return [first, ["eager", *rest]]


def timed_groups(fns: dict[str, Callable[[], Any]]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """timed_cell over each verification group: every mode's median µs and paired ratio against eager from
    its own group (eager's median from the first)."""
    best: dict[str, float] = {}
    paired: dict[str, list[float]] = {}
    for group in verification_groups(list(fns)):
        b, p = timed_cell({m: fns[m] for m in group})
        for m, us in b.items():
            best.setdefault(m, us)
        for m, ratio in p.items():
            paired.setdefault(m, ratio)
    return best, paired


def vs_fused(best: dict[str, float], paired: dict[str, list[float]], mode: str) -> float:
    """`mode`'s time over the fused module's: through their paired ratios against eager where both have one
    (modes timed in different groups meet through eager), else from the two medians."""
    mine = [1.0] if mode == "eager" else paired.get(mode)
    fused = paired.get("fused")
    if mine and fused:
        return mine[0] / fused[0]
    return best[mode] / best["fused"]


def cell_rows(best: dict[str, float], paired: dict[str, list[float]], cell: dict[str, Any]) -> list[dict[str, Any]]:
    """One result row per mode of a timed cell: the cell's fields, the mode, its median µs and, for every
    mode but eager, its paired ratio against eager."""
    rows = []
    for m, us in best.items():
        row = {**cell, "mode": m, "median_us": round(us, 2)}
        if m in paired:
            row["paired_vs_eager"] = paired[m]
        rows.append(row)
    return rows


def _first_line(exc: BaseException) -> str:
    msg = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    return f"{type(exc).__name__}: {msg[:200]}"


def forced_module(dim: int, hidden: int, dtype: torch.dtype, eager: torch.nn.Module) -> torch.nn.Module:
    """The fused module with its fused path forced on, with eager's weights (its own copy)."""
    from mlptui.runners.fused import FusedGeGLUMLP

    forced = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=dtype)
    forced.load_state_dict(eager.state_dict())
    return forced


def calibrate(dim: int, hidden: int, eager: torch.nn.Module, again: torch.nn.Module, forced: torch.nn.Module,
              rows: tuple[int, ...], passes: tuple[str, ...], note: Callable[[str], None],
              errors: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per pass and row count, the fused path forced on and eager (and eager's twin `again`, with its own
    weights: see mode_modules), timed as the sweep times them."""
    dtype = next(eager.parameters()).dtype
    shape = f"{dim}x{hidden}"
    out: list[dict[str, Any]] = []
    for ps in passes:
        bwd = ps == "fwd+bwd"
        with torch.set_grad_enabled(bwd):
            for r in rows:
                x = torch.randn(r, dim, device="cuda", dtype=dtype)
                fns = {"eager": pass_call(eager, x, bwd), EAGER_AGAIN: pass_call(again, x, bwd)}
                try:
                    fn = pass_call(forced, x, bwd)
                    fn()  # tunes this bucket
                    fns[FORCED] = fn
                except Exception as exc:
                    errors.append({"mode": FORCED, "shape": shape, "rows": str(r), "pass": ps,
                                   "kind": "failed", "error": _first_line(exc)})
                best, paired = timed_cell(fns)
                spread = noise(paired)
                out.extend(cell_rows(best, paired, {"shape": shape, "rows": r, "dim": dim, "hidden": hidden,
                                                    "pass": ps, "calibration": True, "noise": spread}))
                if FORCED in best:
                    note(f"calibration {shape} {ps} rows {r}: fused {best[FORCED]:.1f} us, "
                         f"eager {best['eager']:.1f} / {best[EAGER_AGAIN]:.1f} us")
    return out


def _install_calibration(calibration: list[dict[str, Any]], note: Callable[[str], None]) -> None:
    """Fold the calibration into this GPU's installed crossover model (none installed: the module keeps its
    default rule, and the note says so)."""
    from mlptui.runners.fused import crossover

    device = torch.cuda.get_device_name()
    model = crossover.model_for(device)
    if model is None:
        note(f"no crossover table for {device}: the calibration is recorded but routes nothing")
        return
    crossover.install(crossover.with_calibration(model, calibration))


def sweep(families: tuple[tuple[int, int], ...], rows: tuple[int, ...], modes: tuple[str, ...],
          passes: tuple[str, ...], dtype: torch.dtype, note: Callable[[str], None],
          shared: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, str]], dict[str, Any]]:
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    info: dict[str, Any] = {}
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    for dim, hidden in families:
        shape = f"{dim}x{hidden}"
        start = time.perf_counter()
        mods = mode_modules(dim, hidden, dtype, modes, info, shared)
        if "fused" in mods:
            mods[FORCED] = forced_module(dim, hidden, dtype, mods["eager"])
            calibration = calibrate(dim, hidden, mods["eager"], mods[EAGER_AGAIN], mods[FORCED], rows, passes,
                                    note, errors)
            results.extend(calibration)
            _install_calibration(calibration, note)
        ref = seeded(functools.partial(SimpleGeGLUMLP, dim, hidden)).to("cuda")
        for ps in passes:
            bwd = ps == "fwd+bwd"
            with torch.set_grad_enabled(bwd):
                for r in rows:
                    x = torch.randn(r, dim, device="cuda", dtype=dtype)
                    fns: dict[str, Callable[[], Any]] = {}
                    for mode, mod in mods.items():
                        try:
                            fn = pass_call(mod, x, bwd)
                            fn()  # compiles / tunes
                            fns[mode] = fn
                        except Exception as exc:
                            errors.append({"mode": mode, "shape": shape, "rows": str(r), "pass": ps,
                                           "kind": "failed", "error": _first_line(exc)})
                    if not bwd and "fused" in mods:
                        with torch.no_grad():
                            err = rel_err(mods["fused"](x), ref(x.float()))
                        if not err <= 1e-2:
                            errors.append({"mode": "fused", "shape": shape, "rows": str(r), "pass": ps,
                                           "kind": "inaccurate", "error": f"relative error {err:.3g}"})
                    best, paired = timed_groups(fns)
                    path = mods["fused"].path_for(r, train=bwd) if "fused" in mods else None
                    spread = noise(paired)
                    for row in cell_rows(best, paired, {"shape": shape, "rows": r, "dim": dim, "hidden": hidden,
                                                        "pass": ps, "sweep": True, "noise": spread}):
                        if row["mode"] == "fused":
                            row["path"] = path
                        results.append(row)
                    f = best.get("fused")
                    cells = " ".join(f"{m}={us:.1f}" for m, us in best.items())
                    note(f"{shape} {ps} rows {r}: {cells} (fused path {path})")
                    if f:
                        for m in best:
                            if m != "fused":
                                results[-len(best) + list(best).index("fused")][f"vs_{m}"] = \
                                    round(vs_fused(best, paired, m), 3)
        note(f"{shape}: {time.perf_counter() - start:.0f} s")
        partial = os.environ.get("MLPTUI_SWEEP_PARTIAL")
        if partial:  # a long sweep leaves what it has measured so far
            Path(partial).write_text(json.dumps({"results": results, "errors": errors, **info}, indent=1))
        del mods
        torch.cuda.empty_cache()
    return results, errors, info
