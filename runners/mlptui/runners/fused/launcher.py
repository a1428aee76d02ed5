"""Launching fused_geglu_gateup_gemm_kernel with as little host work per call as there can be.

A `GateUpLauncher` belongs to one pair of (gate, up) weights on one device. It keeps everything that
does not depend on the input: the interleaved weight copies (refreshed when the weights change: new
storage or a new version), and per row bucket a `Plan` (the chosen configuration and load path), and per
row count the compiled kernel's own launcher. A call then costs a dict look-up, the weight stamp check,
`torch.empty` for the output and one direct launch of the compiled kernel (no argument binding and
specialisation through Triton's JIT dispatcher, which costs more host time than the whole rest).

The direct launch is checked once against the JIT launch (same output, bit for bit) before it is
trusted; where it differs, raises, or a launch hook is set (a profiler), the JIT launch is kept.

Under CUDA-graph capture (`mode="reduce-overhead"`) nothing is tuned and no interleaved copy is read:
the captured kernel reads the live weights (the first configuration of the bucket that does not
interleave), so a replayed graph sees weight updates made between replays, as in training. A launcher
with `graph_safe = False` captures its eager plans instead (benchmarks that time the eager path's GPU
work by graph replay, with weights that do not change).
"""

from __future__ import annotations

import functools
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import triton
from triton.runtime.errors import OutOfResources

from mlptui.runners.fused import kept_kernels, kernel_key, tuning_cache
from mlptui.runners.fused.configs import GateUpConfig, candidate_configs, m_bucket, training_config
from mlptui.runners.fused.kernels import fused_geglu_gateup_gemm_kernel

ROWS_CACHE_MAX = 4096  # distinct row counts remembered per launcher (variable sequence lengths)
TUNE_ROUNDS = 3  # timings of each candidate when tuning a bucket
TUNE_MARGIN = 0.02  # a later candidate must be this much faster than an earlier one to be chosen

# What the tuner chose, per (device, N, K, dtype, row bucket, aligned, persistent, training), for every launcher in
# this process (and, through tuning_cache, for later processes): two modules of the same dims run the
# same configuration. Why: each launcher tuning on
# its own could pick differently between configurations a few % apart, so the sweep's calibration (one
# module) and its verification (another) timed different kernels.
_TUNED: dict[tuple[Any, ...], tuple[GateUpConfig, bool]] = {}


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def tma_ok(*tensors: torch.Tensor) -> bool:
    """TMA needs 16-byte aligned base addresses and row strides."""
    return all(not (t.data_ptr() % 16 or (t.stride(0) * t.element_size()) % 16) for t in tensors)


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


class _Scratch:
    """Triton's global-scratch allocator (device-side tensor descriptors): one buffer per stream, kept,
    so a TMA launch allocates nothing. Kernels on one stream run one after the other, so they can share."""

    def __init__(self, keep: bool = True) -> None:
        self._bufs: dict[Any, torch.Tensor] = {}
        self.keep = keep

    def __call__(self, size: int, alignment: int, stream: Any) -> torch.Tensor:
        if not self.keep:
            return torch.empty(size, dtype=torch.int8, device="cpu" if interpreting() else "cuda")
        buf = self._bufs.get(stream)
        if buf is None or buf.numel() < size:
            device = "cpu" if interpreting() else "cuda"
            buf = self._bufs[stream] = torch.empty(max(size, 1 << 16), dtype=torch.int8, device=device)
        return buf


SCRATCH = _Scratch()
SCRATCH_PER_LAUNCH = _Scratch(keep=False)  # launchers that must keep no buffer (see `persistent`)


def _hook_active(hook: Any) -> bool:
    """A launch hook (a profiler's) is set: None, or an empty HookChain (Triton 3.5+), is not."""
    if hook is None:
        return False
    calls = getattr(hook, "calls", None)
    return calls is None or len(calls) > 0


def _launch_hooks_set() -> bool:
    try:
        from triton import knobs

        return _hook_active(knobs.runtime.launch_enter_hook) or _hook_active(knobs.runtime.launch_exit_hook)
    except Exception:  # an older Triton: keep its own launch path
        return True


def _fill_interleaved(buf: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, block_n: int) -> None:
    """Copy the weights into the interleaved layout of interleave_gate_up (padding rows stay zero)."""
    n, k = w_gate.shape
    v = buf.view(-1, 2, block_n, k)
    full = n // block_n
    for i, w in enumerate((w_gate, w_up)):
        if full:
            v[:full, i].copy_(w[: full * block_n].view(full, block_n, k))
        if n > full * block_n:
            v[full, i, : n - full * block_n].copy_(w[full * block_n:])


@dataclass
class Plan:
    """The configuration and load path chosen for one row bucket."""

    config: GateUpConfig
    use_tma: bool
    store_gu: bool
    # (programs, int_spec(rows)) -> (run, function, packed metadata) of the compiled kernel, or None: JIT
    # launch. The row count's spec is in the key because Triton compiles a variant per integer
    # specialization (1, a multiple of 16, other): a kernel compiled for 8192 rows may assume M % 16 == 0.
    direct: dict[tuple[int, int], tuple[Any, Any, Any] | None] = field(default_factory=dict)

    def label(self) -> str:
        return f"{self.config.label()}-{'tma' if self.use_tma else 'ptr'}"


class GateUpLauncher:
    """gelu_tanh(x @ w_gate.T) * (x @ w_up.T) for one pair of weights, with the per-call host work cut
    to what depends on the input. `launcher(x)` -> h; `launcher(x, store_gu=True)` -> (h, gu)."""

    def __init__(self, w_gate: torch.Tensor, w_up: torch.Tensor, *, tune: bool = True,
                 persistent: bool = True) -> None:
        if w_gate.shape != w_up.shape or w_gate.dim() != 2 or w_gate.dtype != w_up.dtype:
            raise ValueError(f"gate {tuple(w_gate.shape)} and up {tuple(w_up.shape)} weights do not pair")
        if w_gate.stride(-1) != 1 or w_up.stride(-1) != 1:
            w_gate, w_up = w_gate.contiguous(), w_up.contiguous()
        self.w_gate, self.w_up = w_gate, w_up  # the live tensors (their updates are seen)
        self.n, self.k = w_gate.shape
        self.dtype, self.device = w_gate.dtype, w_gate.device
        self.tune = tune and self.device.type == "cuda" and not interpreting()
        self.sms = torch.cuda.get_device_properties(self.device).multi_processor_count \
            if self.device.type == "cuda" else 4
        self._stream_of = (lambda: torch._C._cuda_getCurrentRawStream(self.device.index)) \
            if self.device.type == "cuda" else (lambda: 0)
        self._stamp: tuple[int, ...] = self.stamp()
        self._interleaved: dict[int, torch.Tensor] = {}
        self._plans: dict[tuple[int, bool], Plan] = {}
        self._rows: OrderedDict[tuple[int, bool], Callable[..., None]] = OrderedDict()
        self.weight_refreshes = 0  # how often the interleaved copies were rebuilt (tests, reports)
        self.graph_safe = True
        # persistent=False: no buffer outlives a call (no interleaved copy, no kept TMA scratch), as the
        # registered op needs: torch.compile's CUDA-graph trees run it with allocations going to their own
        # pool and refuse tensors there that are not the graph's outputs
        self.persistent = persistent
        self._scratch = SCRATCH if persistent else SCRATCH_PER_LAUNCH
        self.direct_error: str | None = None  # why the compiled kernel's own launcher is not used
        self._cuda = self.device.type == "cuda"

    # -- weights -------------------------------------------------------------------------------------

    def stamp(self) -> tuple[int, ...]:
        wg, wu = self.w_gate, self.w_up
        return (wg.data_ptr(), wu.data_ptr(), wg._version, wu._version)

    def _sync_weights(self) -> None:
        """Refill the interleaved copies from the live weights (in place: plans keep their pointers)."""
        stamp = self.stamp()
        if stamp == self._stamp:
            return
        if stamp[:2] != self._stamp[:2]:  # new storage: bound launches that hold the old weights go
            self._rows.clear()
            for plan in self._plans.values():
                plan.direct.clear()
        with torch.no_grad():
            for block_n, buf in self._interleaved.items():
                _fill_interleaved(buf, self.w_gate.detach(), self.w_up.detach(), block_n)
        self._stamp = stamp
        self.weight_refreshes += 1

    def interleaved(self, block_n: int) -> torch.Tensor:
        buf = self._interleaved.get(block_n)
        if buf is None:
            rows = 2 * triton.cdiv(self.n, block_n) * block_n
            buf = self._interleaved[block_n] = torch.zeros((rows, self.k), dtype=self.dtype, device=self.device)
            with torch.no_grad():
                _fill_interleaved(buf, self.w_gate.detach(), self.w_up.detach(), block_n)
        return buf

    # -- calls ---------------------------------------------------------------------------------------

    def __call__(self, x: torch.Tensor, store_gu: bool = False) -> Any:
        """x [M, K] contiguous, the weights' dtype and device."""
        if self._stamp != self.stamp():
            self._sync_weights()
        m = x.shape[0]
        h = torch.empty((m, self.n), device=self.device, dtype=self.dtype)
        gu = torch.empty((m, 2 * self.n), device=self.device, dtype=self.dtype) if store_gu else h
        if m == 0 or self.n == 0:
            return (h, gu) if store_gu else h
        if self.k == 0:
            h.zero_()
            gu.zero_()
            return (h, gu) if store_gu else h
        if self._cuda and self.graph_safe and torch._C._cuda_isCurrentStreamCapturing():
            self._capture_plan(x, m, store_gu)(x, h, gu, m)
            return (h, gu) if store_gu else h
        if x.data_ptr() % 16:  # the bound binaries were specialised (and TMA chosen) for 16-byte aligned inputs
            x = x.clone()
        launch = self._rows.get((m, store_gu))
        if launch is None:
            launch = self._prepare(x, m, store_gu)
        launch(x, h, gu, m)
        return (h, gu) if store_gu else h

    def _capture_plan(self, x: torch.Tensor, m: int, store_gu: bool) -> Callable[..., None]:
        """A launch that reads the live weights (no interleaved copy), for a graph being captured."""
        plan = self._plans.get((m_bucket(m), store_gu))
        if plan is None or plan.config.interleaved:
            cands = candidate_configs(m)
            cfg = next((c for c in cands if not c.interleaved), None) or GateUpConfig(64, 64, 64, 4, 3)
            aligned = self.k % 8 == 0 and self.n % 8 == 0 and tma_ok(x)
            plan = Plan(cfg, plan.use_tma if plan is not None else aligned, store_gu)
        programs = plan.config.programs(m, self.n, self.sms)

        def jit(x: torch.Tensor, h: torch.Tensor, gu: torch.Tensor, m: int) -> None:
            self._jit_launch(plan, x, h, gu, m, programs)
        return jit

    def _prepare(self, x: torch.Tensor, m: int, store_gu: bool) -> Callable[..., None]:
        plan = self.plan_for(x, m, store_gu)
        cfg = plan.config
        programs = cfg.programs(m, self.n, self.sms)
        key = (programs, int_spec(m))
        if key not in plan.direct:
            direct = self._kept_launcher(plan, x, m, programs)
            if direct is None:
                try:
                    direct = self._direct_launcher(plan, x, m, programs)
                except OutOfResources:
                    if plan.config.num_stages <= 2:
                        raise
                    # the compiler needs more shared memory than fits() estimates: one stage fewer
                    smaller = Plan(replace(plan.config, num_stages=plan.config.num_stages - 1), plan.use_tma,
                                   plan.store_gu)
                    self._plans[(m_bucket(m), store_gu)] = smaller
                    return self._prepare(x, m, store_gu)
            plan.direct[key] = direct
        launch = self._bind(plan, programs, key[1])
        if len(self._rows) >= ROWS_CACHE_MAX:
            self._rows.popitem(last=False)
        self._rows[(m, store_gu)] = launch
        return launch

    def plan_for(self, x: torch.Tensor, m: int, store_gu: bool) -> Plan:
        """The plan of `m`'s bucket: kept in this process, else kept on disk, else tuned (and kept), else
        (no tuning here) the bucket's first candidate. Training (store_gu) is tuned on its own kernel, whose
        epilogue writes three tiles where inference writes one: the candidates' training kernels rank in
        another order than their inference forms (benchmarks/results/fused-mlp.md, "Training tuning")."""
        bucket = m_bucket(m)
        plan = self._plans.get((bucket, store_gu))
        if plan is not None:
            return plan
        aligned = self._aligned(x)
        cands = candidate_configs(m)
        if not self.persistent:
            cands = [c for c in cands if not c.interleaved] or [GateUpConfig(64, 64, 64, 4, 3)]
        if store_gu:
            cands = list(dict.fromkeys(training_config(c) for c in cands))
        paths = [True, False] if aligned and m <= 64 else [aligned]
        key = (str(self.device), self.n, self.k, self.dtype, bucket, aligned, self.persistent, store_gu)
        chosen = _TUNED.get(key) if self.tune else None
        disk_key = self._entry_key(bucket, aligned, store_gu)
        if chosen is None and (self.tune or interpreting()):  # interpreted: what a warm-up chose
            chosen = tuning_cache.lookup(self.disk_cache(), disk_key, store_gu=store_gu)
            if chosen is not None and not self.persistent and chosen[0].interleaved:
                chosen = None
        if chosen is not None:
            plan = Plan(chosen[0], chosen[1], store_gu)
            _TUNED[key] = chosen
        elif self.tune and not _capturing():
            plan = self._tune(x, m, [Plan(c, t, store_gu) for t in paths for c in cands])
            _TUNED[key] = (plan.config, plan.use_tma)
            tuning_cache.store(self.disk_cache(), disk_key, plan.config, plan.use_tma)
        else:
            plan = Plan(cands[0], paths[0], store_gu)
        self._plans[(bucket, store_gu)] = plan
        return plan

    def _aligned(self, x: torch.Tensor) -> bool:
        return self.k % 8 == 0 and self.n % 8 == 0 and tma_ok(x)

    def _entry_key(self, bucket: int, aligned: bool, store_gu: bool) -> str:
        return tuning_cache.entry_key(self.n, self.k, str(self.dtype).removeprefix("torch."), bucket, aligned,
                                      self.persistent, train=store_gu)

    def _kept_key(self, plan: Plan, x: torch.Tensor, m: int, programs: int) -> str:
        entry = self._entry_key(m_bucket(m), self._aligned(x), plan.store_gu)
        return kept_kernels.record_key(entry, plan.label(), programs, int_spec(m))

    def disk_cache(self) -> Any:
        """The tuning cache's file for this GPU model and Triton version."""
        if self._cuda:
            major, minor = torch.cuda.get_device_capability(self.device)
            device = f"{torch.cuda.get_device_name(self.device)} sm{major}{minor}"
        else:
            device = "triton-interpreter"
        return tuning_cache.cache_file(device, triton.__version__)

    def tuned(self) -> dict[str, str]:
        """What was chosen per row bucket, for reports."""
        return {f"m{b}-n{self.n}-k{self.k}-{str(self.dtype).removeprefix('torch.')}{'-train' if s else ''}":
                p.label() for (b, s), p in self._plans.items()}

    # -- launching -----------------------------------------------------------------------------------

    def _args(self, plan: Plan, x: torch.Tensor, h: torch.Tensor, gu: torch.Tensor, m: int,
              programs: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        cfg = plan.config
        packed = self.interleaved(cfg.block_n) if cfg.interleaved else None
        w0, w1 = (packed, packed) if packed is not None else (self.w_gate.detach(), self.w_up.detach())
        args = (x, w0, w1, h, gu, m, self.n, self.k, self.k, w0.stride(0), w1.stride(0), self.n, 2 * self.n)
        meta = dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m,
                    NUM_PROGRAMS=programs, USE_TMA=plan.use_tma, INTERLEAVED=cfg.interleaved,
                    FLATTEN=cfg.flatten, STORE_GU=plan.store_gu,
                    UPCAST=interpreting() and self.dtype == torch.bfloat16)
        return args, meta

    def _jit_launch(self, plan: Plan, x: torch.Tensor, h: torch.Tensor, gu: torch.Tensor, m: int,
                    programs: int) -> Any:
        args, meta = self._args(plan, x, h, gu, m, programs)
        if self._cuda:
            kernel_key.settle()  # before Triton's dispatcher first computes its cache key
        if plan.use_tma:
            triton.set_allocator(self._scratch)
        return fused_geglu_gateup_gemm_kernel[(programs,)](
            *args, **meta, num_warps=plan.config.num_warps, num_stages=plan.config.num_stages)

    def _direct_launcher(self, plan: Plan, x: torch.Tensor, m: int, programs: int) -> tuple[Any, Any, Any] | None:
        """The compiled kernel's own launcher, once it gave the JIT launch's output bit for bit."""
        h = torch.empty((m, self.n), device=self.device, dtype=self.dtype)
        gu = torch.empty((m, 2 * self.n), device=self.device, dtype=self.dtype) if plan.store_gu else h
        compiled = self._jit_launch(plan, x, h, gu, m, programs)  # compiles if needed
        if self.device.type != "cuda" or compiled is None or _capturing() or _launch_hooks_set():
            return None
        try:
            direct = (compiled.run, compiled.function, compiled.packed_metadata)
            args, meta = self._args(plan, x, h, gu, m, programs)
            h2, gu2 = torch.full_like(h, float("nan")), torch.full_like(gu, float("nan"))
            args2 = (args[0], args[1], args[2], h2, gu2 if plan.store_gu else h2, *args[5:])
            direct[0](programs, 1, 1, self._stream_of(), direct[1], direct[2], None, None, None,
                      *args2, *meta.values())
            ok = torch.equal(h, h2) and (not plan.store_gu or torch.equal(gu, gu2))
        except Exception as exc:
            self.direct_error = f"{type(exc).__name__}: {exc}"[:300]
            return None
        if not ok:
            self.direct_error = "the direct launch's output differs from the JIT launch's"
            return None
        if self.tune and kept_kernels.enabled():
            kept_kernels.remember(kept_kernels.records_file(self.disk_cache()), self._kept_key(plan, x, m, programs),
                                  compiled)
        return direct

    def _kept_launcher(self, plan: Plan, x: torch.Tensor, m: int, programs: int) -> tuple[Any, Any, Any] | None:
        """The compiled kernel's own launcher rebuilt from Triton's cache by a record an earlier process made
        after checking it (kept_kernels), without the dispatcher; None where there is none to trust."""
        if not (self._cuda and self.tune and kept_kernels.enabled()) or _capturing() or _launch_hooks_set():
            return None
        return kept_kernels.load(kept_kernels.records_file(self.disk_cache()), self._kept_key(plan, x, m, programs),
                                 fused_geglu_gateup_gemm_kernel)

    def _bind(self, plan: Plan, programs: int, spec: int) -> Callable[..., None]:
        direct = plan.direct.get((programs, spec))
        cfg = plan.config
        if direct is None:
            def jit(x: torch.Tensor, h: torch.Tensor, gu: torch.Tensor, m: int) -> None:
                self._jit_launch(plan, x, h, gu, m, programs)
            return jit
        run, function, packed = direct
        stream_of = self._stream_of
        w0, w1 = (self.interleaved(cfg.block_n),) * 2 if cfg.interleaved else \
            (self.w_gate.detach(), self.w_up.detach())
        tail = (self.n, self.k, self.k, w0.stride(0), w1.stride(0), self.n, 2 * self.n,
                cfg.block_m, cfg.block_n, cfg.block_k, cfg.group_m, programs, plan.use_tma, cfg.interleaved,
                cfg.flatten, plan.store_gu, False)
        use_tma = plan.use_tma
        scratch = self._scratch

        def fast(x: torch.Tensor, h: torch.Tensor, gu: torch.Tensor, m: int) -> None:
            if use_tma:
                triton.set_allocator(scratch)
            run(programs, 1, 1, stream_of(), function, packed, None, None, None, x, w0, w1, h, gu, m, *tail)

        return fast

    def _tune(self, x: torch.Tensor, m: int, candidates: list[Plan]) -> Plan:
        """The earliest candidate within TUNE_MARGIN of the fastest, each timed TUNE_ROUNDS times in
        rotated order (the median counts). Candidates are listed best-first by earlier sweeps, so where
        several are within noise of each other every process keeps the same one: a plain minimum of one
        timing each picked between near-equal configurations by chance (processes on one GPU picked
        different groups: benchmarks/results/fused-mlp.md, "Training tuning")."""
        h = torch.empty((m, self.n), device=self.device, dtype=self.dtype)
        gu = torch.empty((m, 2 * self.n), device=self.device, dtype=self.dtype) if candidates[0].store_gu else h
        runs: list[tuple[Plan, Callable[[], Any]]] = []
        for plan in candidates:
            programs = plan.config.programs(m, self.n, self.sms)
            try:
                self._jit_launch(plan, x, h, gu, m, programs)  # compiles, or raises where it cannot build
            except Exception:  # a configuration this GPU / compiler cannot build is skipped
                continue
            runs.append((plan, functools.partial(self._jit_launch, plan, x, h, gu, m, programs)))
        if not runs:
            raise RuntimeError("no configuration of fused_geglu_gateup_gemm_kernel could run")
        times: list[list[float]] = [[] for _ in runs]
        for r in range(TUNE_ROUNDS if len(runs) > 1 else 1):
            for i in [*range(r % len(runs), len(runs)), *range(r % len(runs))]:
                times[i].append(_median_ms(runs[i][1], self._cuda))
        medians = [sorted(t)[len(t) // 2] for t in times]
        fastest = min(medians)
        return next(plan for (plan, _), t in zip(runs, medians, strict=True) if t <= fastest * (1 + TUNE_MARGIN))


def int_spec(m: int) -> int:
    """How Triton specializes an integer argument: 1, a multiple of 16 (as 16), or neither (0)."""
    return 1 if m == 1 else 16 if m % 16 == 0 else 0


def _median_ms(fn: Callable[[], Any], cuda: bool) -> float:
    """do_bench's median on a GPU; off it (the interpreter, warming a cache in tests) a wall-clock median."""
    if cuda:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=5, rep=20, return_mode="median"))
    import time

    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[1]


def warm(n: int, k: int, dtype: torch.dtype, rows: list[int], device: str = "cuda") -> dict[str, str]:
    """Tune (or read from the disk cache) every row bucket of `rows` for [N, K] weights, inference and
    training, so later processes start without tuning. Returns the chosen plan per bucket."""
    w_gate = torch.randn((n, k), device=device, dtype=dtype) / k ** 0.5
    w_up = torch.randn((n, k), device=device, dtype=dtype) / k ** 0.5
    launcher = GateUpLauncher(w_gate, w_up)
    launcher.tune = True
    for m in sorted({m_bucket(r) for r in rows}):
        x = torch.randn((m, k), device=device, dtype=dtype)
        launcher(x)
        launcher(x, store_gu=True)
    return launcher.tuned()


# Launchers for calls that come with bare weight tensors (the functional API and the registered op),
# keyed by the weights' storage; an entry holds the weights, so their storage cannot be reused under it.
_LAUNCHERS: OrderedDict[tuple[int, int, tuple[int, ...], torch.dtype, torch.device], GateUpLauncher] = OrderedDict()
LAUNCHERS_MAX = 16


def launcher_for(w_gate: torch.Tensor, w_up: torch.Tensor) -> GateUpLauncher:
    key = (w_gate.data_ptr(), w_up.data_ptr(), tuple(w_gate.shape), w_gate.dtype, w_gate.device)
    found = _LAUNCHERS.get(key)
    if found is not None:
        return found
    if len(_LAUNCHERS) >= LAUNCHERS_MAX:
        _LAUNCHERS.popitem(last=False)
    found = _LAUNCHERS[key] = GateUpLauncher(w_gate.detach(), w_up.detach(), persistent=False)
    return found


def tuned_configs() -> dict[str, str]:
    """What the shared launchers chose so far (modules report their own), for benchmark reports."""
    out: dict[str, str] = {}
    for launcher in _LAUNCHERS.values():
        out.update(launcher.tuned())
    return out


def fused_geglu_gateup(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, *,
                       config: GateUpConfig | None = None, use_tma: bool | None = None,
                       out: torch.Tensor | None = None, launcher: GateUpLauncher | None = None) -> torch.Tensor:
    """gelu_tanh(x @ w_gate.T) * (x @ w_up.T) for x [M, K] and weights [N, K], one kernel launch.

    Checks its inputs (the module's fast path does not go through here). `config` / `use_tma` force a
    configuration (tests, sweeps); `out` ([M, N], x's dtype, unit last stride) receives h.
    """
    if x.dim() != 2 or w_gate.dim() != 2 or w_gate.shape != w_up.shape or w_gate.shape[1] != x.shape[1]:
        raise ValueError(f"shapes do not match: x {tuple(x.shape)}, gate {tuple(w_gate.shape)}, "
                         f"up {tuple(w_up.shape)}")
    if x.dtype not in (torch.bfloat16, torch.float16) or w_gate.dtype != x.dtype or w_up.dtype != x.dtype:
        raise ValueError(f"fused_geglu_gateup takes bf16 or fp16 for all inputs, got {x.dtype}, "
                         f"{w_gate.dtype}, {w_up.dtype}")
    m, k = x.shape
    n = w_gate.shape[0]
    if out is not None and (out.shape != (m, n) or out.dtype != x.dtype or out.stride(-1) != 1):
        raise ValueError(f"out must be [{m}, {n}] {x.dtype} with unit last stride")
    if not x.is_contiguous():
        x = x.contiguous()
    launcher = launcher or launcher_for(w_gate, w_up)
    if config is None and use_tma is None:
        h = launcher(x)
        return h if out is None else out.copy_(h)
    if out is None or not out.is_contiguous():
        h = torch.empty((m, n), device=x.device, dtype=x.dtype)
    else:
        h = out
    if m and n:
        if k == 0:
            h.zero_()
        else:
            aligned = k % 8 == 0 and n % 8 == 0 and tma_ok(x)
            plan = Plan(config or candidate_configs(m)[0], aligned if use_tma is None else use_tma, False)
            programs = plan.config.programs(m, n, launcher.sms)
            launcher._sync_weights()
            launcher._jit_launch(plan, x, h, h, m, programs)
    return h if out is None or h is out else out.copy_(h)
