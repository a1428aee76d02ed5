"""The attention rung's findings, computed from the trace: what *Profiling in PyTorch (Part 3)* reads off
its traces by eye.

Scope: the focus step (the last profiled step, as every finding), and for the per-call figures every
profiled step. A trace counts as an attention trace when that step ran a fused attention kernel or a CPU
op of attention (`aten::scaled_dot_product_attention` and its backends, `aten::softmax`,
`aten::_safe_softmax`); other traces get none of these findings.

- **Hidden copy**: every Memcpy of the step (up to three lines), with the CPU op that launched it, the
  outermost aten op around that (the one the code called) and the whole chain (`attn_fwd →
  aten::masked_fill → aten::clone → aten::copy_`); called a *hidden copy* when that outer op is not a
  copy or transfer itself (`COPY_OPS`: copy_, to, clone, contiguous, item, …), a *memcpy* otherwise;
  "none" when the step has no Memcpy.
- **GEMMs**: each GEMM kernel of the step and whether its name shows a Tensor-Core path
  (`tensor_cores.uses_tensor_cores`); those without one are called FP32 GEMMs without Tensor Cores
  when every one's name says f32 (`sgemm`, `gemm_f32f32`, `ffma`), else GEMMs whose name shows no
  Tensor-Core path (the name does not tell).
- **Mask rebuilt each call**: when the step builds a triangle (`aten::tril`/`triu`), the causal mask's
  ops (`aten::ones`, `aten::tril`/`triu`, the fill value's `aten::scalar_tensor`/`aten::fill_`, and
  `aten::where`; none inside `aten::_safe_softmax` or inside another of them) in their order in the step,
  the profiled steps that build it, and the GPU time they launched (with everything beneath them).
- **Fused attention kernel**: each attention kernel of the step, named by implementation (FlashAttention-2,
  the memory-efficient CUTLASS kernel from xFormers, cuDNN's generated flash kernel, CK-tile FMHA,
  aiter, FlashInfer, TensorRT-LLM, Triton), by the SDPA backend op it ran under, with its launch path
  (the runtime/driver calls its launching op made from the previous launch up to this one: occupancy
  queries, attribute calls, memsets, the launch itself).
- **Occupancy**: the kernel's theoretical occupancy (`occupancy.theoretical_occupancy`) with the resource
  that limits it, beside Kineto's `est. achieved occupancy %`. Kineto's 0 % is a measurement gap, never
  a measurement: it is shown as "not measured" with the reason (`occupancy.kineto_estimate_pct`
  reproduces Kineto's arithmetic, which leaves out the shared-memory opt-in).
- **Per call**: CPU time = the step's record_function annotation around the call (the step itself when
  there is none); GPU time = the summed duration of the kernels, copies and memsets the step launched;
  both the median over the profiled steps.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlptui.base.units import duration, share, size
from mlptui.trace.analysis.events.tables import tables
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.kernels.occupancy import (
    DEFAULT_SMEM_PER_BLOCK,
    device_for,
    kernel_launch,
    kineto_estimate_pct,
)
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, MEMCPY, Trace
from mlptui.trace.names.distinct import distinct_labels
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.parse.index import STEP_PREFIX
from mlptui.trace.reports.attention import AttentionFacts, CopyFact, FusedFact, GemmFact, OccupancyFact

# The op SDPA dispatches to, per backend (forward; CPU's flash kernel included).
SDPA_BACKEND_OPS = {
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_flash_attention_forward": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_efficient_attention_forward": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_cudnn_attention_forward": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math",
}
ATTENTION_OPS = frozenset({"aten::scaled_dot_product_attention", "aten::softmax", "aten::_softmax",
                           "aten::_safe_softmax", *SDPA_BACKEND_OPS})
MASK_OPS = ("aten::ones", "aten::tril", "aten::triu", "aten::scalar_tensor", "aten::fill_", "aten::where")
_MASK_BUILDERS = frozenset({"aten::tril", "aten::triu"})
_LAUNCH_PATH_KINDS = frozenset({"occupancy", "attribute", "memset", "launch", "graph"})
_CHAIN_MAX = 6
# Ops whose purpose is a copy or a transfer: a Memcpy they launch is the one the code asked for.
COPY_OPS = frozenset({"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous", "aten::item",
                      "aten::_local_scalar_dense", "aten::cpu", "aten::cuda", "aten::index_put_", "aten::_copy_from"})


@dataclass(frozen=True)
class Implementation:
    label: str      # "FlashAttention-2", "memory-efficient attention (CUTLASS, from xFormers)", ...
    word: str       # the `attention kernel:` word of `mlptui check`: flash, efficient, cudnn, ...


# (word, label) per implementation, in the order `implementation` tests them.
IMPLEMENTATION_WORDS: dict[str, str] = {
    "flash": "FlashAttention", "efficient": "memory-efficient attention (CUTLASS, from xFormers)",
    "cudnn": "cuDNN generated flash attention", "ck": "CK-tile FMHA", "aiter": "aiter FMHA",
    "flashinfer": "FlashInfer", "trtllm": "TensorRT-LLM FMHA", "triton": "Triton attention",
    "unknown": "attention kernel of an unnamed library",
}


def implementation(raw: str) -> Implementation | None:
    """Which attention implementation a kernel name belongs to; None when it is no attention kernel."""
    name = decode_kernel(raw)
    if name.family != "attention":
        return None
    low = raw.lower()
    library = name.library
    if library == "cuDNN":
        return Implementation("cuDNN (generated per problem" + (", flash fprop)" if "flash" in low else ")"),
                              "cudnn")
    if library == "CUTLASS":
        return Implementation(IMPLEMENTATION_WORDS["efficient"], "efficient")
    if library == "FlashAttention":
        if "flashattnfwdsm90" in low or "flash_fwd_sm90" in low or "hopper" in low:
            return Implementation("FlashAttention-3", "flash")
        vendored = " (PyTorch's vendored copy)" if "pytorch_flash" in low else ""
        return Implementation("FlashAttention-2" + vendored, "flash")
    words = {"CK-tile": "ck", "aiter": "aiter", "FlashInfer": "flashinfer", "TensorRT-LLM": "trtllm",
             "Triton": "triton"}
    word = words.get(library, "unknown")
    return Implementation(IMPLEMENTATION_WORDS[word], word)


def focus_step(trace: Trace) -> int | None:
    """The last profiled step, as every finding (findings.focus_step; that module builds on this one)."""
    return trace.steps[-1].index if trace.steps else None


def step_gpu(trace: Trace, step: int | None) -> list[int]:
    t = tables(trace)
    ids: list[int] = list(range(t.n_gpu)) if step is None else np.flatnonzero(t.gpu_step == step).tolist()
    return ids


def is_attention_trace(trace: Trace, step: int | None = None, gpu_ids: list[int] | None = None) -> bool:
    step = focus_step(trace) if step is None else step
    gpu_ids = step_gpu(trace, step) if gpu_ids is None else gpu_ids
    t = tables(trace)     # read as columns (no GpuOp object made); the name test once per distinct name
    kernel = t.gpu_is((KERNEL,))
    if any(kernel[g] and implementation(t.strings[t.gpu_name[g]]) for g in gpu_ids):
        return True
    named = t.names_where(lambda name: name in ATTENTION_OPS)[t.op_name]
    return bool((named & ((t.op_step == step) if step is not None else True)).any())


def _step_ops(trace: Trace, step: int | None) -> list[Any]:
    return [op for op in trace.ops if op.cat in (CPU_OP, ANNOTATION) and (step is None or op.step == step)
            and not op.name.startswith(STEP_PREFIX)]


def _chain(trace: Trace, op_id: int) -> tuple[str, ...]:
    names: list[str] = []
    while op_id >= 0:
        op = trace.ops[op_id]
        if op.name.startswith(STEP_PREFIX):
            break
        if op.cat in (CPU_OP, ANNOTATION):
            names.append(op.name)
        op_id = op.parent
    names.reverse()
    if len(names) > _CHAIN_MAX:
        names = names[:2] + [f"… {len(names) - _CHAIN_MAX + 1} more"] + names[-(_CHAIN_MAX - 3):]
    return tuple(names)


def _backend(trace: Trace, op_id: int) -> tuple[str | None, str | None]:
    while op_id >= 0:
        op = trace.ops[op_id]
        if op.name in SDPA_BACKEND_OPS:
            return SDPA_BACKEND_OPS[op.name], op.name
        op_id = op.parent
    return None, None


def launch_path(trace: Trace, gpu_id: int) -> tuple[str, ...]:
    """The calls made for this launch: those of the launch call's parent op since its previous launch."""
    launch = trace.gpu[gpu_id].launch
    if launch < 0:
        return ()
    parent = trace.ops[launch].parent
    siblings = trace.ops[parent].children if parent >= 0 else [launch]
    calls: list[str] = []
    for c in siblings:
        op = trace.ops[c]
        if op.cat not in LAUNCH_CATS or classify_call(op.name) not in _LAUNCH_PATH_KINDS:
            continue
        if c == launch:
            calls.append(op.name)
            break
        if classify_call(op.name) in ("launch", "graph"):
            calls = []
        else:
            calls.append(op.name)
    return tuple(calls)


def _occupancy(trace: Trace, gpu_id: int) -> OccupancyFact | None:
    kl = kernel_launch(trace, gpu_id)
    if kl is None:
        return None
    occ = kl.occupancy
    note = None
    if kl.reported_occupancy_pct == 0:
        device = device_for(trace, trace.gpu[gpu_id].device) or {}
        value = device.get("sharedMemPerBlock")      # whatever the file says: a number only if it is one
        default = (int(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
                   and 0 < value < 1 << 40 else DEFAULT_SMEM_PER_BLOCK)
        grid_blocks = kl.grid[0] * kl.grid[1] * kl.grid[2]
        again = kineto_estimate_pct(device, grid_blocks, kl.threads_per_block, kl.regs_per_thread,
                                    kl.smem_per_block) if device else None
        if kl.smem_per_block > default and again == 0:
            note = (f"Kineto's estimate leaves out the shared-memory opt-in: {size(kl.smem_per_block)} "
                    f"per block > the {size(default)} default, so it reads 0")
        else:
            note = "Kineto recorded 0 for this launch (it could not estimate it)"
    return OccupancyFact(
        theoretical=occ.fraction if occ else None, blocks_per_sm=occ.blocks_per_sm if occ else None,
        warps_per_sm=occ.warps_per_sm if occ else None, max_warps_per_sm=occ.max_warps_per_sm if occ else None,
        limiter=occ.limiter if occ else None, regs_per_thread=kl.regs_per_thread,
        threads_per_block=kl.threads_per_block, regs_per_block=occ.regs_per_block if occ else None,
        smem_per_block=kl.smem_per_block, kineto_pct=kl.reported_occupancy_pct, kineto_note=note)


def _per_call(trace: Trace) -> tuple[float | None, float | None, str | None]:
    """Median CPU time of the call's annotation and median GPU time the step launched, over the steps."""
    if not trace.steps:
        return None, None, None
    cpu: list[float] = []
    gpu: dict[int, float] = {s.index: 0.0 for s in trace.steps}
    label = None
    for s in trace.steps:
        step_op = trace.ops[s.op] if 0 <= s.op < len(trace.ops) else None
        inner = [trace.ops[c] for c in (step_op.children if step_op else [])
                 if trace.ops[c].cat == ANNOTATION]
        if inner:
            cpu.append(sum(o.dur for o in inner))
            label = inner[0].name
        else:
            cpu.append(s.dur)
    for g in trace.gpu:
        if g.step in gpu:
            gpu[g.step] += g.dur
    return statistics.median(cpu), statistics.median(gpu.values()), label


def attention_facts(trace: Trace) -> AttentionFacts | None:
    """The findings' figures, or None when the trace is no attention trace (module docstring)."""
    return trace.derive(_compute)


def _compute(trace: Trace) -> AttentionFacts | None:
    step = focus_step(trace)
    gpu_ids = step_gpu(trace, step)
    if not is_attention_trace(trace, step, gpu_ids):
        return None
    per_step = [sum(1 for g in trace.gpu if g.step == s.index and g.cat == KERNEL) for s in trace.steps]
    memcpys: list[CopyFact] = []
    gemms: list[GemmFact] = []
    fused: dict[str, list[int]] = {}
    for g in gpu_ids:
        gop = trace.gpu[g]
        if gop.cat == MEMCPY:
            op = trace.ops[gop.op].name if gop.op >= 0 else ""
            memcpys.append(CopyFact(name=gop.name, us=gop.dur, op=op,
                                    chain=_chain(trace, gop.op) if gop.op >= 0 else ()))
        if gop.cat != KERNEL:
            continue
        name = decode_kernel(gop.name)
        if name.family == "gemm":
            low = gop.name.lower()
            fp32 = name.dtype == "f32" or "sgemm" in low or "ffma" in low or "f32f32" in low
            gemms.append(GemmFact(short=name.short, tensor_cores=uses_tensor_cores(gop.name), fp32=fp32))
        elif implementation(gop.name) is not None:
            fused.setdefault(gop.name, []).append(g)
    kernels: list[FusedFact] = []
    for raw, ids in fused.items():
        impl = implementation(raw)
        assert impl is not None
        first = ids[0]
        backend, backend_op = _backend(trace, trace.gpu[first].op)
        kernels.append(FusedFact(
            raw=raw, short=kernel_name(trace, raw).short, implementation=impl.label, word=impl.word, backend=backend,
            backend_op=backend_op, launch_path=launch_path(trace, first), count=len(ids),
            us=sum(trace.gpu[g].dur for g in ids), occupancy=_occupancy(trace, first)))
    mask = _mask(trace, step)
    cpu_us, gpu_us, call_label = _per_call(trace)
    return AttentionFacts(
        step=trace.steps[step].name if step is not None else "whole trace", steps=len(trace.steps),
        kernels_per_step=per_step or [sum(1 for g in gpu_ids if trace.gpu[g].cat == KERNEL)], memcpys=memcpys,
        memcpy_steps=len({g.step for g in trace.gpu if g.cat == MEMCPY and g.step >= 0}), gemms=gemms,
        mask_chain=mask.chain, mask_steps=mask.steps, mask_us=mask.us, safe_softmax=mask.safe_softmax,
        fused=kernels, cpu_us=cpu_us, gpu_us=gpu_us, call_label=call_label)


def _inside(trace: Trace, op_id: int, name: str) -> bool:
    p = trace.ops[op_id].parent
    while p >= 0:
        if trace.ops[p].name == name:
            return True
        p = trace.ops[p].parent
    return False


@dataclass(frozen=True, slots=True)
class _Mask:
    safe_softmax: bool
    chain: tuple[str, ...] = ()
    steps: int = 0
    us: float = 0.0


def _mask(trace: Trace, step: int | None) -> _Mask:
    ops = _step_ops(trace, step)
    safe_softmax = any(op.name == "aten::_safe_softmax" for op in ops)
    # the mask's own ops, not those inside another of them (aten::ones fills through aten::fill_)
    mask = [op for op in sorted(ops, key=lambda o: o.ts) if op.name in MASK_OPS
            and not _inside(trace, op.id, "aten::_safe_softmax")
            and not (op.parent >= 0 and trace.ops[op.parent].name in MASK_OPS)]
    if not any(op.name in _MASK_BUILDERS for op in mask):
        return _Mask(safe_softmax)
    chain: list[str] = []
    for op in mask:
        if op.name not in chain:
            chain.append(op.name)
    return _Mask(safe_softmax, tuple(chain),
                 len({op.step for op in trace.ops if op.name in _MASK_BUILDERS and op.step >= 0}),
                 sum(op.gpu_us for op in mask))


def occupancy_text(occ: OccupancyFact) -> str:
    """`theoretical 12% (2 blocks × 4 warps = 8 of 64 warps per SM), limited by registers (…) · Kineto's
    estimate 13%`: shares and durations as every surface writes them (mlptui.base.units)."""
    if occ.theoretical is None:
        ours = "theoretical n/a (no device properties or launch data)"
    else:
        warps_per_block = (occ.warps_per_sm or 0) // max(occ.blocks_per_sm or 1, 1)
        ours = (f"theoretical {share(occ.theoretical)} ({occ.blocks_per_sm} block"
                f"{'s' if occ.blocks_per_sm != 1 else ''} × {warps_per_block} warps = {occ.warps_per_sm} of "
                f"{occ.max_warps_per_sm} warps per SM), limited by {occ.limiter}")
        why = []
        if occ.limiter and "registers" in occ.limiter:
            why.append(f"{occ.regs_per_thread} registers × {occ.threads_per_block} threads "
                       f"= {occ.regs_per_block:,} allocated per block")
        if occ.limiter and "shared memory" in occ.limiter:
            why.append(f"{size(occ.smem_per_block)} shared memory per block")
        if occ.limiter and "warps" in occ.limiter:
            why.append(f"{occ.threads_per_block} threads per block")
        if why:
            ours += " (" + "; ".join(why) + ")"
    if occ.kineto_pct is None:
        kineto = "Kineto's estimate: not recorded"
    elif occ.kineto_pct == 0:
        kineto = f"Kineto's estimate: not measured ({occ.kineto_note})"
    else:
        kineto = f"Kineto's estimate {occ.kineto_pct:g}%"
    return f"{ours} · {kineto}"


def attention_lines(facts: AttentionFacts) -> list[str]:
    """The findings as lines, in the article's order."""
    lines: list[str] = []
    if facts.memcpys:
        for c in facts.memcpys[:3]:
            # hidden: made inside an op the code called for something else (masked_fill's clone, a
            # tensor's truth value read back); a copy the code asked for is just a memcpy
            outer = next((n for n in c.chain if n.startswith("aten::")), c.op)
            label = "memcpy" if outer in COPY_OPS else "hidden copy"
            # the outermost op of the call (below its record_function) is what the user wrote
            outer = next((n for n in c.chain if n.startswith("aten::")), c.op)
            inside = f" inside {outer}" if outer != c.op else ""
            where = f", launched by {c.op}{inside}" if c.op else ", launched outside any CPU op"
            chain = f" ({' → '.join(c.chain)})" if len(c.chain) > 1 else ""
            lines.append(f"{label}: {c.name} {duration(c.us)}{where}{chain}")
    else:
        lines.append(f"hidden copy: none (no Memcpy in {facts.step})")
    if facts.gemms:
        on = [g for g in facts.gemms if g.tensor_cores]
        off = [g for g in facts.gemms if not g.tensor_cores]
        parts = []
        if off:
            plural = "s" if len(off) > 1 else ""
            # an FP32 name (sgemm, f32f32, ffma) says CUDA cores; any other name only fails to say
            what = (f"FP32 GEMM{plural} without Tensor Cores" if all(g.fp32 for g in off)
                    else f"GEMM{plural} whose name shows no Tensor-Core path")
            parts.append(f"{len(off)} {what} ({', '.join(dict.fromkeys(g.short for g in off))})")
        if on:
            parts.append(f"{len(on)} on Tensor Cores ({', '.join(dict.fromkeys(g.short for g in on))})")
        lines.append("GEMMs: " + "; ".join(parts))
    if facts.mask_chain:
        lines.append(f"causal mask rebuilt each call ({facts.mask_steps} of {facts.steps} steps): "
                     + " → ".join(facts.mask_chain) + f", {duration(facts.mask_us)} of GPU work in {facts.step}")
    if facts.safe_softmax:
        lines.append("softmax: aten::_safe_softmax (guards fully-masked rows against NaN)")
    lines += _fused_lines(facts)
    if facts.cpu_us is not None and facts.gpu_us is not None:
        label = f" ({facts.call_label})" if facts.call_label else ""
        lines.append(f"per call{label}: CPU {duration(facts.cpu_us)}, GPU {duration(facts.gpu_us)} "
                     f"(median of {facts.steps} steps)")
    return lines


def _fused_lines(facts: AttentionFacts) -> list[str]:
    """A line per fused kernel, named as the views name it (kernels whose names decode alike get the words
    that differ); its launch path and occupancy follow it, said once for the kernels in a row that share
    them (the B200 trace's two TensorRT-LLM kernels differ by `SlidingOrChunked` alone)."""
    shorts = {f.raw: f.short for f in facts.fused}          # dtype settled by the launching ops' inputs
    labels = distinct_labels(shorts, shorts.__getitem__)
    where = "per step" if facts.steps else "in the whole trace"
    lines: list[str] = []
    run = 0
    for k, f in enumerate(facts.fused):
        via = f" via the {f.backend} backend ({f.backend_op})" if f.backend else ""
        lines.append(f"fused attention: {f.count} kernel{'s' if f.count > 1 else ''} {where}, {f.implementation}"
                     f"{via}: {labels[f.raw]}")
        run += 1
        after = facts.fused[k + 1] if k + 1 < len(facts.fused) else None
        if after is not None and (after.launch_path, after.occupancy) == (f.launch_path, f.occupancy):
            continue
        of = "" if run == 1 else " (both kernels above)" if run == 2 else f" (the {run} kernels above)"
        run = 0
        if f.launch_path:
            lines.append(f"attention launch{of}: {' → '.join(f.launch_path)}")
        if f.occupancy is not None:
            lines.append(f"attention occupancy{of}: " + occupancy_text(f.occupancy))
    return lines

