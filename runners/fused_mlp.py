"""A GeGLU MLP whose gate and up projections run as one Triton GEMM with the GeGLU in its epilogue.

`fused_geglu_gateup_gemm_kernel` reads each x tile once, multiplies it by the paired gate and up weight
tiles into two fp32 accumulators, applies gelu_tanh(gate) * up in registers and writes only
h = [M, hidden]; the gate and up activations never reach device memory. The down projection is a
cuBLAS GEMM (`torch.mm`). Forward only.

Two load paths share the tile loop and the epilogue: tensor descriptors (`tl.make_tensor_descriptor`,
TMA on Hopper, for 16-byte aligned rows) and plain masked pointer loads (any strides, and what the
CPU interpreter runs in tests). The grid is persistent: one program per SM walks the output tiles.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import nn

# Below this many rows the fused kernel has too little work to beat cuBLAS + one pointwise kernel;
# FusedGeGLUMLP then runs the unfused path. Measured on an H100 and an H200 (benchmarks/FUSED_NOTES.md).
FUSED_MIN_ROWS = 128


@triton.jit
def geglu_tanh(gate, up):
    """gelu(gate, approximate="tanh") * up, in fp32.

    gelu_tanh(g) = g * sigmoid(2*sqrt(2/pi) * (g + 0.044715 g^3)) and sigmoid(z) = 1 / (1 + 2^(-z log2 e)):
    one exp2 and one fast division per element. Constants: 2*sqrt(2/pi) = 1.5957691216057308,
    times 0.044715 = 0.07135481627159072, log2(e) = 1.4426950408889634.
    """
    g = gate.to(tl.float32)
    z = g * (1.5957691216057308 + 0.07135481627159072 * (g * g))
    return tl.fdiv(g * up.to(tl.float32), 1.0 + tl.exp2(z * -1.4426950408889634))


@triton.jit
def _dot_wt(a, w, acc, UPCAST: tl.constexpr):
    """acc + a @ w.T. UPCAST is set only under TRITON_INTERPRET, whose numpy dot has no bf16."""
    if UPCAST:
        acc = tl.dot(a.to(tl.float32), w.to(tl.float32).T, acc)
    else:
        acc = tl.dot(a, w.T, acc)
    return acc


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Grouped order: GROUP_M row-blocks share each weight column block while it is hot in L2.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def fused_geglu_gateup_gemm_kernel(
    x_ptr, wg_ptr, wu_ptr, h_ptr,
    M, N, K,
    stride_xm, stride_wg, stride_wu, stride_hm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
    USE_TMA: tl.constexpr, INTERLEAVED: tl.constexpr, FLATTEN: tl.constexpr, UPCAST: tl.constexpr = False,
):
    """h[M, N] = gelu_tanh(x @ wg.T) * (x @ wu.T); x [M, K], wg/wu [N, K], unit stride in the last dim.

    INTERLEAVED: wg_ptr holds both weights as [2 * cdiv(N, BLOCK_N) * BLOCK_N, K], alternating BLOCK_N
    gate rows and BLOCK_N up rows (interleave_gate_up), so each k-step is one [BLOCK_M, 2*BLOCK_N] dot.
    """
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    out_dtype = h_ptr.dtype.element_ty

    if USE_TMA:
        # Out-of-range rows and columns read as zero and are not written: no masks needed.
        x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        h_desc = tl.make_tensor_descriptor(h_ptr, shape=[M, N], strides=[stride_hm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
        if INTERLEAVED:
            w_desc = tl.make_tensor_descriptor(wg_ptr, shape=[2 * num_pid_n * BLOCK_N, K],
                                               strides=[stride_wg, 1], block_shape=[2 * BLOCK_N, BLOCK_K])
        else:
            wg_desc = tl.make_tensor_descriptor(wg_ptr, shape=[N, K], strides=[stride_wg, 1],
                                                block_shape=[BLOCK_N, BLOCK_K])
            wu_desc = tl.make_tensor_descriptor(wu_ptr, shape=[N, K], strides=[stride_wu, 1],
                                                block_shape=[BLOCK_N, BLOCK_K])

    # The epilogue recomputes its tile's coordinates from its own counter so that, with FLATTEN, the
    # loads of the next tile do not wait on the stores of this one.
    tile_id_c = start_pid - NUM_PROGRAMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        rk = tl.arange(0, BLOCK_K)
        # Pointer loads: rows past M wrap onto valid rows (their results are never stored), so only
        # the K tail needs a mask.
        rm = (off_m + tl.arange(0, BLOCK_M)) % M
        if INTERLEAVED:
            acc = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
            if USE_TMA:
                for ki in range(k_tiles):
                    a = x_desc.load([off_m, ki * BLOCK_K])
                    b = w_desc.load([2 * off_n, ki * BLOCK_K])
                    acc = _dot_wt(a, b, acc, UPCAST)
            else:
                rw = 2 * off_n + tl.arange(0, 2 * BLOCK_N)  # the interleaved weight is padded: in range
                x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :]
                w_ptrs = wg_ptr + rw[:, None] * stride_wg + rk[None, :]
                for ki in range(k_tiles):
                    k_mask = rk[None, :] < K - ki * BLOCK_K
                    a = tl.load(x_ptrs, mask=k_mask, other=0.0)
                    b = tl.load(w_ptrs, mask=k_mask, other=0.0)
                    acc = _dot_wt(a, b, acc, UPCAST)
                    x_ptrs += BLOCK_K
                    w_ptrs += BLOCK_K
            # columns [0, BLOCK_N) are gate, [BLOCK_N, 2*BLOCK_N) up; each thread holds both halves
            acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        else:
            acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            if USE_TMA:
                for ki in range(k_tiles):
                    a = x_desc.load([off_m, ki * BLOCK_K])
                    bg = wg_desc.load([off_n, ki * BLOCK_K])
                    bu = wu_desc.load([off_n, ki * BLOCK_K])
                    acc_g = _dot_wt(a, bg, acc_g, UPCAST)
                    acc_u = _dot_wt(a, bu, acc_u, UPCAST)
            else:
                rn = (off_n + tl.arange(0, BLOCK_N)) % N
                x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :]
                wg_ptrs = wg_ptr + rn[:, None] * stride_wg + rk[None, :]
                wu_ptrs = wu_ptr + rn[:, None] * stride_wu + rk[None, :]
                for ki in range(k_tiles):
                    k_mask = rk[None, :] < K - ki * BLOCK_K
                    a = tl.load(x_ptrs, mask=k_mask, other=0.0)
                    bg = tl.load(wg_ptrs, mask=k_mask, other=0.0)
                    bu = tl.load(wu_ptrs, mask=k_mask, other=0.0)
                    acc_g = _dot_wt(a, bg, acc_g, UPCAST)
                    acc_u = _dot_wt(a, bu, acc_u, UPCAST)
                    x_ptrs += BLOCK_K
                    wg_ptrs += BLOCK_K
                    wu_ptrs += BLOCK_K

        tile_id_c += NUM_PROGRAMS
        pid_m_c, pid_n_c = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        h = geglu_tanh(acc_g, acc_u).to(out_dtype)
        if USE_TMA:
            h_desc.store([pid_m_c * BLOCK_M, pid_n_c * BLOCK_N], h)
        else:
            cm = pid_m_c * BLOCK_M + tl.arange(0, BLOCK_M)
            cn = pid_n_c * BLOCK_N + tl.arange(0, BLOCK_N)
            h_ptrs = h_ptr + cm[:, None] * stride_hm + cn[None, :]
            tl.store(h_ptrs, h, mask=(cm[:, None] < M) & (cn[None, :] < N))


@dataclass(frozen=True)
class GateUpConfig:
    """One launch configuration of fused_geglu_gateup_gemm_kernel."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    group_m: int = 8
    flatten: bool = False
    interleaved: bool = False

    def fits(self, smem_limit: int = 227 * 1024) -> bool:
        stage = (self.block_m + 2 * self.block_n) * self.block_k * 2
        epilogue = self.block_m * self.block_n * 2
        # two fp32 accumulators spread over the CTA's threads; past ~128 registers each they spill
        acc_regs = 2 * self.block_m * self.block_n // (32 * self.num_warps)
        box_ok = 2 * self.block_n <= 256 or not self.interleaved  # a TMA box has at most 256 rows
        return self.num_stages * stage + epilogue <= smem_limit and acc_regs <= 128 and box_ok

    def label(self) -> str:
        flags = ("-flat" if self.flatten else "") + ("-il" if self.interleaved else "")
        return (f"{self.block_m}x{self.block_n}x{self.block_k}-w{self.num_warps}-s{self.num_stages}"
                f"-g{self.group_m}{flags}")

    def as_dict(self) -> dict[str, int | bool]:
        return asdict(self)


def candidate_configs(m: int) -> list[GateUpConfig]:
    """The small set of configurations tried for a row count (tuned once per m_bucket).

    From the sweep in benchmarks/FUSED_NOTES.md: at large M, 128x128 tiles over interleaved weights
    (one 128x256 wgmma per k-step) with the tile loop flattened into the k loop win by 10-15 %.
    """
    C = GateUpConfig
    if m <= 64:  # decode-like: weight-bandwidth bound; narrow N tiles give enough programs
        cands = [C(16, 32, 128, 4, 4), C(16, 64, 128, 4, 4), C(32, 32, 128, 4, 4), C(64, 32, 128, 4, 3),
                 C(64, 64, 64, 4, 4, interleaved=True)]
    elif m <= 512:
        cands = [C(64, 64, 64, 4, 4, interleaved=True), C(128, 64, 64, 4, 4, interleaved=True),
                 C(64, 128, 64, 4, 4, interleaved=True), C(128, 128, 64, 8, 4, flatten=True, interleaved=True),
                 C(64, 64, 64, 4, 4)]
    else:
        cands = [C(128, 128, 64, 8, 4, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 3, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 4, group_m=16, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 3, interleaved=True), C(128, 64, 64, 4, 4, flatten=True, interleaved=True),
                 C(128, 128, 64, 8, 3)]
    return [c for c in cands if c.fits()]


def m_bucket(m: int) -> int:
    """Row counts share a tuned configuration within a power-of-two bucket (16 … 8192+)."""
    return min(max(16, 1 << (max(m, 1) - 1).bit_length()), 8192)


def interleave_gate_up(w_gate: torch.Tensor, w_up: torch.Tensor, block_n: int) -> torch.Tensor:
    """[2 * cdiv(N, block_n) * block_n, K]: block_n gate rows, then block_n up rows, and so on.

    Rows past N are zero, so the padded columns of a tile compute gelu(0) * 0 and are never stored.
    """
    n, k = w_gate.shape
    blocks = triton.cdiv(n, block_n)
    pair = w_gate.new_zeros((blocks, 2, block_n, k))
    for i, w in enumerate((w_gate, w_up)):
        padded = w.new_zeros((blocks * block_n, k))
        padded[:n] = w
        pair[:, i] = padded.view(blocks, block_n, k)
    return pair.view(2 * blocks * block_n, k)


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


_SMS: dict[int | None, int] = {}


def _num_programs(device: torch.device) -> int:
    if device.type != "cuda":
        return 4
    sms = _SMS.get(device.index)
    if sms is None:
        sms = _SMS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return sms


def _tma_ok(*tensors: torch.Tensor) -> bool:
    # TMA needs 16-byte aligned base addresses and row strides.
    for t in tensors:
        if t.data_ptr() % 16 or (t.stride(0) * t.element_size()) % 16:
            return False
    return True


_allocator_set = False


def _ensure_allocator() -> None:
    # Device-side tensor descriptors live in a small global scratch buffer that Triton asks for.
    global _allocator_set
    if not _allocator_set:
        device = "cpu" if _interpreting() else "cuda"
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))
        _allocator_set = True


# Interleaved copies of (gate, up) weights, keyed by block_n (a FusedGeGLUMLP keeps its own store; direct
# calls share this small one). An entry holds aliases of the source weights: while it lives their
# storage cannot be freed and reused, so the same data_ptr and version mean the same, unchanged data.
WeightStore = dict[tuple[int, int, int], tuple[torch.Tensor, torch.Tensor, int, int, torch.Tensor]]
_INTERLEAVED: WeightStore = {}
_INTERLEAVED_MAX = 8


def _interleaved_weight(w_gate: torch.Tensor, w_up: torch.Tensor, block_n: int,
                        store: WeightStore | None = None) -> torch.Tensor:
    store = _INTERLEAVED if store is None else store
    key = (w_gate.data_ptr(), w_up.data_ptr(), block_n)
    hit = store.get(key)
    if hit is not None and hit[0].data_ptr() == key[0] and hit[1].data_ptr() == key[1] and \
            (hit[2], hit[3]) == (w_gate._version, w_up._version) and hit[4].dtype == w_gate.dtype:
        return hit[4]
    w = interleave_gate_up(w_gate.detach(), w_up.detach(), block_n)
    if key not in store and len(store) >= _INTERLEAVED_MAX:
        store.pop(next(iter(store)))
    store[key] = (w_gate.detach(), w_up.detach(), w_gate._version, w_up._version, w)
    return w


# (m_bucket, N, K, dtype, TMA allowed, device index) -> chosen (config, use_tma)
_TUNED: dict[tuple, tuple[GateUpConfig, bool]] = {}


def _launch(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, h: torch.Tensor,
            cfg: GateUpConfig, use_tma: bool, store: WeightStore | None = None):
    M, K = x.shape
    N = wg.shape[0]
    if cfg.interleaved:
        wg = wu = _interleaved_weight(wg, wu, cfg.block_n, store)
    tiles = -(-M // cfg.block_m) * -(-N // cfg.block_n)  # ceil divisions
    programs = max(1, min(_num_programs(x.device), tiles))
    if use_tma:
        _ensure_allocator()
    return fused_geglu_gateup_gemm_kernel[(programs,)](
        x, wg, wu, h, M, N, K,
        x.stride(0), wg.stride(0), wu.stride(0), h.stride(0),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m,
        NUM_PROGRAMS=programs, USE_TMA=use_tma, INTERLEAVED=cfg.interleaved, FLATTEN=cfg.flatten,
        UPCAST=_interpreting() and x.dtype == torch.bfloat16,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )


def _tune(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, h: torch.Tensor,
          candidates: list[tuple[GateUpConfig, bool]], store: WeightStore | None) -> tuple[GateUpConfig, bool]:
    from triton.testing import do_bench

    best: tuple[float, GateUpConfig, bool] | None = None
    for cfg, use_tma in candidates:
        try:
            _launch(x, wg, wu, h, cfg, use_tma, store)
            ms = do_bench(lambda c=cfg, t=use_tma: _launch(x, wg, wu, h, c, t, store), warmup=5, rep=20,
                          return_mode="median")
        except Exception:  # a configuration this GPU / compiler cannot build is skipped
            continue
        if best is None or ms < best[0]:
            best = (ms, cfg, use_tma)
    if best is None:
        raise RuntimeError("no configuration of fused_geglu_gateup_gemm_kernel could run")
    return best[1], best[2]


def fused_geglu_gateup(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, *,
                       config: GateUpConfig | None = None, use_tma: bool | None = None,
                       out: torch.Tensor | None = None, weight_store: WeightStore | None = None) -> torch.Tensor:
    """gelu_tanh(x @ w_gate.T) * (x @ w_up.T) for x [M, K] and weights [N, K], one kernel launch.

    `out` ([M, N], x's dtype, unit last stride) receives h; by default a new tensor. `weight_store`
    keeps the interleaved weight copies of one caller (FusedGeGLUMLP passes its own).
    """
    if x.dim() != 2 or w_gate.dim() != 2 or w_gate.shape != w_up.shape or w_gate.shape[1] != x.shape[1]:
        raise ValueError(f"shapes do not match: x {tuple(x.shape)}, gate {tuple(w_gate.shape)}, "
                         f"up {tuple(w_up.shape)}")
    if x.dtype not in (torch.bfloat16, torch.float16) or w_gate.dtype != x.dtype or w_up.dtype != x.dtype:
        raise ValueError(f"fused_geglu_gateup takes bf16 or fp16 for all inputs, got {x.dtype}, "
                         f"{w_gate.dtype}, {w_up.dtype}")
    if x.stride(-1) != 1:
        x = x.contiguous()
    if w_gate.stride(-1) != 1 or w_up.stride(-1) != 1:
        w_gate, w_up = w_gate.contiguous(), w_up.contiguous()
    M, K = x.shape
    N = w_gate.shape[0]
    if out is None:
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    elif out.shape != (M, N) or out.dtype != x.dtype or out.stride(-1) != 1:
        raise ValueError(f"out must be [{M}, {N}] {x.dtype} with unit last stride")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    if config is None:
        aligned = _tma_ok(x, w_gate, w_up, out)
        key = (m_bucket(M), N, K, x.dtype, aligned if use_tma is None else use_tma, x.device.index)
        tuned = _TUNED.get(key)
        if tuned is None:
            cands = candidate_configs(M)
            # TMA where the rows allow it; at decode-like M the pointer path (no descriptor set-up)
            # competes too
            paths = [use_tma] if use_tma is not None else [True, False] if aligned and M <= 64 else [aligned]
            if _interpreting() or x.device.type != "cuda":
                tuned = (cands[0], paths[0])
            else:
                tuned = _tune(x, w_gate, w_up, out, [(c, t) for t in paths for c in cands], weight_store)
            _TUNED[key] = tuned
        config, use_tma = tuned
    elif use_tma is None:
        use_tma = _tma_ok(x, w_gate, w_up, out)
    _launch(x, w_gate, w_up, out, config, use_tma, weight_store)
    return out


def tuned_configs() -> dict[str, str]:
    """What the tuner chose so far, for benchmark reports."""
    return {f"m{k[0]}-n{k[1]}-k{k[2]}-{str(k[3]).removeprefix('torch.')}":
            f"{cfg.label()}-{'tma' if tma else 'ptr'}" for k, (cfg, tma) in _TUNED.items()}


class FusedGeGLUMLP(nn.Module):
    """Same parameters and function as SimpleGeGLUMLP: down(gelu_tanh(gate(x)) * up(x)).

    On a GPU (or under TRITON_INTERPRET=1), bf16/fp16, at least FUSED_MIN_ROWS rows and no autograd,
    gate+up+GeGLU run as fused_geglu_gateup_gemm_kernel and the down projection as one cuBLAS GEMM;
    otherwise the unfused eager path runs (the kernel has no backward). `path_for(rows)` says which.
    """

    def __init__(self, dim: int, hidden: int, *, min_rows: int = FUSED_MIN_ROWS,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.up_proj = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.down_proj = nn.Linear(hidden, dim, bias=False, device=device, dtype=dtype)
        self.min_rows = min_rows
        self._weight_store: WeightStore = {}  # interleaved gate/up copies, rebuilt when the weights change

    def fallback_reason(self, rows: int, device: torch.device | None = None, dtype: torch.dtype | None = None,
                        *, grad: bool = False) -> str | None:
        """Why a call with `rows` rows takes the unfused path, or None when it runs the fused kernel."""
        device = device or self.gate_proj.weight.device
        dtype = dtype or self.gate_proj.weight.dtype
        if device.type != "cuda" and not _interpreting():
            return f"no Triton on {device.type}"
        if dtype not in (torch.bfloat16, torch.float16):
            return f"{str(dtype).removeprefix('torch.')} (the kernel takes bf16/fp16)"
        if grad:
            return "autograd is on (the kernel is forward only)"
        if rows < self.min_rows:
            return f"{rows} rows < {self.min_rows}: too little work for the fused kernel to win"
        return None

    def path_for(self, rows: int, device: torch.device | None = None, dtype: torch.dtype | None = None,
                 *, grad: bool = False) -> str:
        return "unfused" if self.fallback_reason(rows, device, dtype, grad=grad) else "fused"

    def forward_unfused(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = x.shape[-1]
        rows = x.numel() // dim if dim else 0
        # the cheapest test first: at decode-like sizes the fallback must cost no more than eager
        if rows < self.min_rows:
            return self.forward_unfused(x)
        w = self.gate_proj.weight
        grad = torch.is_grad_enabled() and (x.requires_grad or w.requires_grad)
        if x.dtype != w.dtype or self.fallback_reason(rows, x.device, x.dtype, grad=grad) is not None:
            return self.forward_unfused(x)
        h = fused_geglu_gateup(x.reshape(rows, dim), w, self.up_proj.weight, weight_store=self._weight_store)
        out = torch.mm(h, self.down_proj.weight.t())
        return out.view(*x.shape[:-1], out.shape[-1])


def build_fused_mlp(shape, dtype: torch.dtype, device: str):
    """Registry builder of the `fused-mlp` workload (mlptui.runners.workloads): the article's MLP, same seeded
    weights and input, as FusedGeGLUMLP. The manifest's kernel_source says which path runs and why."""
    from mlptui.runners.modules import Built, mlp_flops, mlp_input, reference_mlp

    ref = reference_mlp(shape, device)
    module = FusedGeGLUMLP(shape.dim, shape.hidden, device=device, dtype=dtype)
    module.load_state_dict(ref.state_dict())
    why = module.fallback_reason(shape.batch * shape.seq)
    source = ("triton fused_geglu_gateup_gemm_kernel (runners/fused_mlp.py) + cuBLAS down projection" if why is None
              else f"unfused eager path: {why}")
    return Built(module, (mlp_input(shape, dtype, device),), ref, mlp_flops(shape), source)

