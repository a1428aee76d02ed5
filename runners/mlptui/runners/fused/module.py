"""FusedGeGLUMLP: the GeGLU MLP with gate+up+GeGLU as one Triton kernel and a cuBLAS down projection, a
drop-in for SimpleGeGLUMLP (same parameters, same function), in eager, under torch.compile and in
training; and the `fused-mlp` workload's builder."""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import profiler as autograd_profiler
from torch.nn.modules import module as module_hooks

from mlptui.runners.fused import crossover
from mlptui.runners.fused.launcher import GateUpLauncher, interpreting
from mlptui.runners.fused.ops import GeGLUGateUp
from mlptui.runners.workloads.modules import geglu_mlp

POLICIES = ("auto", "fused", "unfused")


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type


def _globally_plain() -> bool:
    """No global module hook is set, no profiler is recording and no JIT trace runs: what Module.__call__
    checks for every module before its forward (a profile shows the projections as modules, as in eager)."""
    return not (module_hooks._global_forward_hooks or module_hooks._global_forward_pre_hooks
                or module_hooks._global_backward_hooks or module_hooks._global_backward_pre_hooks
                or getattr(autograd_profiler, "_is_profiler_enabled", True) or torch._C._get_tracing_state())


def _plain(m: nn.Module) -> bool:
    """Calling F.linear on `m`'s weight does exactly what calling `m` does: a plain nn.Linear with no hook."""
    return type(m) is nn.Linear and not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                                         or m._backward_pre_hooks)


def _linear(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    if _plain(m):
        p = m._parameters
        return F.linear(x, cast(torch.Tensor, p["weight"]), p["bias"])
    return cast(torch.Tensor, m(x))


def _unfused(x: torch.Tensor, gate: nn.Module, up: nn.Module, down: nn.Module) -> torch.Tensor:
    """geglu_mlp, with each projection's F.linear called directly where nothing could tell it from the
    module's call. Module.__call__'s host time per projection is a large share of the unfused
    MLP's whole call on the host. Each projection is checked right before its own launch, as
    Module.__call__ checks it: in weight-bandwidth-bound calls the time to the first launch is on the
    critical path, and checking all three up front put the route behind eager there
    (benchmarks/results/fused-mlp.md, "Unfused route")."""
    if not _globally_plain():
        return geglu_mlp(x, gate, up, down)
    h = F.gelu(_linear(gate, x), approximate="tanh") * _linear(up, x)
    return _linear(down, h)


_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}  # the crossover table's names


@torch.compiler.assume_constant_result
def _route_traced(rows: int, dim: int, hidden: int, device_index: int, train: bool, half: bool) -> bool:
    """The crossover rule, evaluated once while torch.compile traces (the result is baked into the graph);
    `half`: fp16 (else bf16) weights."""
    name = torch.cuda.get_device_name(device_index) if device_index >= 0 else "cpu"
    model = crossover.model_for(name, dtype="fp16" if half else "bf16")
    return crossover.use_fused(rows, dim, hidden, model, train)


class FusedGeGLUMLP(nn.Module):
    """Same parameters and function as SimpleGeGLUMLP: down(gelu_tanh(gate(x)) * up(x)).

    `policy="auto"` (default) takes the fused path where the crossover model (crossover.py) predicts it
    faster than the unfused one for this GPU, dims and row count, else the unfused path (eager's own
    five kernels, its projections' F.linear called directly where no hook, profiler or JIT trace could
    tell the difference: less host time than eager's module calls); "fused" / "unfused" force one. The
    answer is cached per row count, so a call costs a dict look-up before its launches. With autograd on,
    the fused path saves gate/up and runs the fused backward. Under torch.compile the kernel is the registered op `mlptui::geglu_gateup(_train)`.
    `path_for(rows)` / `fallback_reason(rows)` say which path runs and why.
    """

    def __init__(self, dim: int, hidden: int, *, policy: str = "auto", min_rows: int | None = None,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        self.gate_proj = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.up_proj = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.down_proj = nn.Linear(hidden, dim, bias=False, device=device, dtype=dtype)
        self.dim, self.hidden = dim, hidden
        self.policy = policy
        self.min_rows = min_rows  # a fixed threshold instead of the model (tests, experiments)
        self._routes: dict[int, bool] = {}
        self._train_routes: dict[int, bool] = {}
        self._launcher: GateUpLauncher | None = None

    # -- which path ----------------------------------------------------------------------------------

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> FusedGeGLUMLP:
        self._launcher = None  # new device / dtype: launcher and routes are rebuilt on the next call
        self._routes.clear()
        self._train_routes.clear()
        return super()._apply(fn, *args, **kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("policy", "min_rows") and "_routes" in self.__dict__:
            self._routes.clear()
            self._train_routes.clear()
        super().__setattr__(name, value)

    def fallback_reason(self, rows: int, device: torch.device | None = None,
                        dtype: torch.dtype | None = None, *, train: bool = False) -> str | None:
        """Why a call with `rows` rows (forward only, or with `train` forward+backward) takes the unfused
        path, or None when it runs the fused kernel."""
        device = device or self.gate_proj.weight.device
        dtype = dtype or self.gate_proj.weight.dtype
        if device.type != "cuda" and not interpreting():
            return f"no Triton on {device.type}"
        if dtype not in (torch.bfloat16, torch.float16):
            return f"{str(dtype).removeprefix('torch.')} (the kernel takes bf16/fp16)"
        if rows <= 0:
            return "no rows"
        if self.policy == "fused":
            return None
        if self.policy == "unfused":
            return "policy='unfused'"
        if self.min_rows is not None:
            return None if rows >= self.min_rows else f"{rows} rows < min_rows {self.min_rows}"
        model = crossover.model_for(_device_name(device), dtype=_DTYPE_NAMES[dtype])
        if crossover.use_fused(rows, self.dim, self.hidden, model, train):
            return None
        if model is None:
            return (f"{rows} rows < {crossover.DEFAULT_MIN_ROWS} (no crossover table for "
                    f"{_device_name(device)})")
        if train:
            return (f"training: the sweep on {model.device} did not measure the fused forward+backward faster "
                    f"near {rows} rows")
        if model.measured(rows, self.dim, self.hidden) is False:
            return f"the sweep on {model.device} did not measure the fused path faster near {rows} rows"
        p = model.predict(rows, self.dim, self.hidden)
        return (f"crossover model: fused {p['fused']:.1f} us vs unfused {p['unfused']:.1f} us per call at "
                f"{rows} rows on {model.device}")

    def path_for(self, rows: int, device: torch.device | None = None, dtype: torch.dtype | None = None,
                 *, train: bool = False) -> str:
        return "unfused" if self.fallback_reason(rows, device, dtype, train=train) else "fused"

    def _route(self, rows: int, train: bool) -> bool:
        routes = self._train_routes if train else self._routes
        fused = self.fallback_reason(rows, train=train) is None
        if len(routes) > 4096:
            routes.clear()
        routes[rows] = fused
        return fused

    def launcher(self) -> GateUpLauncher:
        wg, wu = self.gate_proj.weight, self.up_proj.weight
        lau = self._launcher
        if lau is None or lau.w_gate is not wg or lau.w_up is not wu:
            lau = self._launcher = GateUpLauncher(wg, wu)
        return lau

    # -- forward -------------------------------------------------------------------------------------

    def forward_unfused(self, x: torch.Tensor) -> torch.Tensor:
        return geglu_mlp(x, self.gate_proj, self.up_proj, self.down_proj)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Inference on a row count already routed unfused: eager's five kernels before any other Python,
        # through _unfused (F.linear on the weights where nothing could tell it from the projections'
        # Module.__call__). In the sweep's alternating calls (cold host caches), every line ahead of the
        # first launch shows in the latency of weight-bandwidth-bound cells: going through eager's own
        # function or the full routing read behind eager, _unfused called directly ahead of both
        # (benchmarks/results/fused-mlp.md, "Unfused route").
        if not torch.is_grad_enabled() and not torch.compiler.is_compiling():
            shape = x.shape
            if len(shape) == 2 and self._routes.get(shape[0]) is False:
                mods = self._modules
                return _unfused(x, mods["gate_proj"], mods["up_proj"], mods["down_proj"])  # type: ignore[arg-type, unused-ignore]  # arg-type with torch installed only
        return self._forward_routed(x)

    def _forward_routed(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return self._forward_traced(x)
        # Submodules and weights are read from the module's own dicts: `self.gate_proj.weight` goes through
        # Module.__getattr__ twice (as much host time as a launch's Python), and the unfused route
        # must cost no more host time than eager's own call. The dicts are what setattr and
        # load_state_dict change, so a replaced weight or submodule is seen at once.
        mods = self._modules
        gate, up, down = mods["gate_proj"], mods["up_proj"], mods["down_proj"]
        assert gate is not None and up is not None and down is not None
        shape = x.shape
        dim = shape[-1]
        flat = len(shape) == 2
        rows = shape[0] if flat else (x.numel() // dim if dim else 0)
        wg = wu = None
        if torch.is_grad_enabled():
            wg, wu = gate._parameters["weight"], up._parameters["weight"]
            train = bool(x.requires_grad or (wg is not None and wg.requires_grad)
                         or (wu is not None and wu.requires_grad))
        else:
            train = False
        fused = (self._train_routes if train else self._routes).get(rows)
        if fused is None:
            fused = self._route(rows, train)
        if not fused:
            return _unfused(x, gate, up, down)
        if wg is None or wu is None:
            wg, wu = gate._parameters["weight"], up._parameters["weight"]
        if wg is None or wu is None or x.dtype != wg.dtype:
            return _unfused(x, gate, up, down)
        lau = self._launcher
        if lau is None or lau.w_gate is not wg or lau.w_up is not wu:
            lau = self.launcher()
        x2 = x if flat else x.reshape(rows, dim)
        if not x2.is_contiguous():
            x2 = x2.contiguous()
        wd = down._parameters["weight"]
        assert wd is not None
        h = GeGLUGateUp.apply(x2, wg, wu, lau) if train else lau(x2)
        out = F.linear(h, wd)
        return out if flat else out.view(*shape[:-1], self.dim)

    def _forward_traced(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        dim = shape[-1]
        x2 = x.reshape(-1, dim)
        rows = x2.shape[0]
        wg, wu = self.gate_proj.weight, self.up_proj.weight
        if x.dtype != wg.dtype or wg.dtype not in (torch.bfloat16, torch.float16):
            return self.forward_unfused(x)
        if self.policy == "unfused":
            return self.forward_unfused(x)
        train = torch.is_grad_enabled() and (x.requires_grad or wg.requires_grad or wu.requires_grad)
        if self.policy == "auto" and isinstance(rows, int):
            index = wg.device.index if wg.device.type == "cuda" else -1
            if self.min_rows is not None:
                if rows < self.min_rows:
                    return self.forward_unfused(x)
            elif not _route_traced(rows, self.dim, self.hidden, -1 if index is None else index, train,
                                   wg.dtype == torch.float16):
                return self.forward_unfused(x)
        if train:
            h = torch.ops.mlptui.geglu_gateup_train(x2, wg, wu)[0]
        else:
            h = torch.ops.mlptui.geglu_gateup(x2, wg, wu)
        return F.linear(h, self.down_proj.weight).view(*shape[:-1], self.dim)


def build_fused_mlp(shape: Any, dtype: torch.dtype, device: str) -> Any:
    """Registry builder of the `fused-mlp` workload (mlptui.runners.workloads.registry): the article's MLP, same seeded
    weights and input, as FusedGeGLUMLP. The manifest's kernel_source says which path runs and why."""
    from mlptui.runners.workloads.modules import Built, mlp_flops, mlp_input, reference_mlp

    ref = reference_mlp(shape, device)
    module = FusedGeGLUMLP(shape.dim, shape.hidden, device=device, dtype=dtype)
    module.load_state_dict(ref.state_dict())
    why = module.fallback_reason(shape.batch * shape.seq)
    source = ("triton fused_geglu_gateup_gemm_kernel (runners/mlptui/runners/fused/kernels.py) + cuBLAS down projection"
              if why is None else f"unfused eager path: {why}")
    return Built(module, (mlp_input(shape, dtype, device),), ref, mlp_flops(shape), source)
