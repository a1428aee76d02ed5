"""The facts a trace tells at a glance, computed from its data (never from its file name).

For the steady-state step (the last profiled step): which kernels ran and what they fuse, how they
were launched (occupancy queries or not), and the CPU dispatch chain of the first GEMM with the ops
that launch nothing marked.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from mlptui.trace.analysis.events.device_arch import device_arch
from mlptui.trace.analysis.events.graph_capture import graph_capture
from mlptui.trace.analysis.events.tables import TraceColumns, tables, unique_ids
from mlptui.trace.analysis.events.unlinked import unlinked_line
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.model import ANNOTATION, CPU_OP, KERNEL, LAUNCH_CATS, Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.parse.index import STEP_PREFIX


def focus_step(trace: Trace) -> int | None:
    """The step the findings speak of: the last one (warm), or None for a trace without steps."""
    return trace.steps[-1].index if trace.steps else None


def step_gpu(trace: Trace, step: int | None) -> list[int]:
    t = tables(trace)
    return list(range(t.n_gpu)) if step is None else np.flatnonzero(t.gpu_step == step).tolist()


def _in_step(t: TraceColumns, step: int | None) -> np.ndarray:
    return np.ones(t.n_ops, dtype=bool) if step is None else t.op_step == step


def _cpu_ops(t: TraceColumns) -> np.ndarray:
    """Per op: mlptui.trace.analysis.steps.steps.is_cpu_op."""
    mask: np.ndarray = t.op_is((CPU_OP, ANNOTATION)) & ~t.names_where(lambda s: s.startswith(STEP_PREFIX))[t.op_name]
    return mask


def step_ops(trace: Trace, step: int | None) -> list[int]:
    """The step's CPU ops (ops and annotations; mlptui.trace.analysis.steps.steps.is_cpu_op)."""
    t = tables(trace)
    ids: list[int] = np.flatnonzero(_cpu_ops(t) & _in_step(t, step)).tolist()
    return ids


def _kernel_names(trace: Trace, gpu_ids: list[int]) -> list[str]:
    """The names of the kernels among `gpu_ids`, in that order."""
    return [name for name, _ in _kernels(trace, gpu_ids)]


def _kernels(trace: Trace, gpu_ids: list[int]) -> list[tuple[str, float]]:
    """(name, duration µs) of the kernels among `gpu_ids`, in that order."""
    t = tables(trace)
    at = np.asarray(gpu_ids, dtype=np.int64)
    at = at[np.isin(t.gpu_cat[at], t.cat_ids((KERNEL,)))]
    return [(t.strings[i], d) for i, d in zip(t.gpu_name[at].tolist(), t.gpu_dur[at].tolist(), strict=True)]


def kernel_label(raw: str, trace: Trace | None = None) -> str:
    """One kernel for a findings line: a short name as the trace has it, a long one decoded (its dtype
    from the launching ops' inputs where the name is ambiguous, given the trace), with family and library
    said once (`gelu (ATen, vec8; pointwise)`, `aten::mul.out-dtype_Float (other, custom)`); the ops it
    computes are added only when the name does not already say them."""
    name = decode_kernel(raw) if trace is None else kernel_name(trace, raw)
    label = raw if len(raw) <= 48 else name.short
    low = label.casefold()
    ops = f" = {'·'.join(name.ops)}" if name.ops and not all(o.casefold() in low for o in name.ops) else ""
    if label.endswith(")") and name.library in label:
        return f"{label[:-1]}; {name.family}){ops}"
    return f"{label}{ops} ({name.family}, {name.library})"


def kernel_line(trace: Trace, gpu_ids: list[int]) -> str:
    kernels = _kernel_names(trace, gpu_ids)
    others = len(gpu_ids) - len(kernels)
    groups: Counter[str] = Counter()
    for raw in kernels:
        name = decode_kernel(raw)
        if name.family == "gemm":
            groups[f"GEMM ({name.library})"] += 1
        else:
            groups[kernel_label(raw, trace)] += 1
    if not kernels:
        return "no GPU kernels" + (f" ({others} memset/memcpy)" if others else "")
    ranked = sorted(groups.items(), key=lambda item: -item[1]) if len(groups) > 6 else list(groups.items())
    parts = [f"{n}× {label}" if n > 1 else label for label, n in ranked[:6]]
    if len(groups) > 6:
        parts.append(f"{len(groups) - 6} more kinds")
    extra = f" + {others} memset/memcpy" if others else ""
    return f"{len(kernels)} kernel{'s' if len(kernels) != 1 else ''}{extra}: " + "; ".join(parts)


def kernel_mix(trace: Trace, gpu_ids: list[int]) -> str:
    """`3 GEMM + mul + gelu`, `3 GEMM + triton_poi_fused__unsafe_view_gelu_mul_0`: the step's kernels,
    repeats folded, most GPU time first (a row cut short keeps the kernels that matter)."""
    counts: Counter[str] = Counter()
    time: dict[str, float] = {}
    for raw, dur in _kernels(trace, gpu_ids):
        name = decode_kernel(raw)
        if name.family == "gemm":
            label = "GEMM" + (f"+{name.epilogue}" if name.epilogue else "")
        elif "ATen" in name.library and name.ops:
            label = "·".join(name.ops)
        else:
            label = raw if len(raw) <= 48 else kernel_name(trace, raw).short
        counts[label] += 1
        time[label] = time.get(label, 0.0) + dur
    order = sorted(counts, key=lambda label: -time[label])      # stable: ties keep first appearance
    parts = [f"{counts[label]} {label}" if counts[label] > 1 else label for label in order]
    return " + ".join(parts) if parts else "no kernels"


def launch_line(trace: Trace, step: int | None) -> str:
    """The step's runtime/driver calls by name (syncs left out); in the whole trace, every call, made
    inside a CPU op or not (GPU-only traces record no CPU ops at all)."""
    t = tables(trace)
    at = t.op_name[t.op_is(LAUNCH_CATS) & _in_step(t, step)]
    ids, first, counts = unique_ids(at, return_index=True, return_counts=True)
    calls: Counter[str] = Counter()      # by first call, as most_common breaks ties
    kinds: Counter[str] = Counter()
    for k in np.argsort(first, kind="stable").tolist():
        name, n = t.strings[int(ids[k])], int(counts[k])
        kind = classify_call(name)
        if kind != "sync":
            calls[name] += n
            kinds[kind] += n
    if not calls:
        return "no launch calls recorded"
    text = ", ".join(f"{name} ×{n}" for name, n in calls.most_common(5))
    occupancy = kinds.get("occupancy", 0)
    return f"occupancy queries: {occupancy if occupancy else 'none'}; launch calls: {text}"


# The calls that prepare or make a launch; stream queries, mallocs and syncs are left out of the path.
_LAUNCH_PATH_KINDS = frozenset({"occupancy", "attribute", "memset", "launch", "graph"})


def _folded(calls: tuple[str, ...]) -> str:
    """`a → a → b` as `2× a → b`."""
    runs: list[tuple[str, int]] = []
    for name in calls:
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1] + 1)
        else:
            runs.append((name, 1))
    return " → ".join(f"{n}× {name}" if n > 1 else name for name, n in runs)


def gemm_launch_line(trace: Trace, gpu_ids: list[int]) -> str | None:
    """How the step's GEMMs reach the GPU: the runtime/driver calls made for each since the previous
    launch, e.g. `cudaMemsetAsync → cuLaunchKernelEx` (Hopper cuBLAS) or
    `cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags → cudaLaunchKernel` (Ampere)."""
    t = tables(trace)
    ptr, kids = t.children()
    launch_cats = t.cat_ids(LAUNCH_CATS)
    kernel = t.string_id(KERNEL)
    patterns: Counter[tuple[str, ...]] = Counter()
    for g in gpu_ids:
        launch = int(t.gpu_launch[g])
        if t.gpu_cat[g] != kernel or launch < 0 or decode_kernel(t.strings[t.gpu_name[g]]).family != "gemm":
            continue
        parent = int(t.op_parent[launch])
        siblings = kids[ptr[parent]:ptr[parent + 1]].tolist() if parent >= 0 else [launch]
        calls: list[str] = []
        for c in siblings:
            name = t.strings[t.op_name[c]]
            if t.op_cat[c] not in launch_cats or classify_call(name) not in _LAUNCH_PATH_KINDS:
                continue
            if c == launch:
                calls.append(name)
                break
            if classify_call(name) in ("launch", "graph"):
                calls = []          # an earlier kernel's launch: what follows belongs to this one
            else:
                calls.append(name)
        if calls:               # a launch through calls of no known kind (MTIA's job submission) says nothing
            patterns[tuple(calls)] += 1
    if not patterns:
        return None
    parts = [f"{_folded(p)} ({n} GEMM{'s' if n > 1 else ''})" for p, n in patterns.most_common(3)]
    queries = any(classify_call(name) == "occupancy" for p in patterns for name in p)
    info = device_arch(trace.device, trace.meta)
    arch = f" on {info.word}" if info.arch else ""
    return f"GEMM launch{arch}: " + "; ".join(parts) + ("" if queries else "; no occupancy queries")


_CHAIN_CATS = frozenset({CPU_OP, ANNOTATION})
_CHAIN_MAX = 8


def chain_line(trace: Trace, gpu_ids: list[int]) -> str | None:
    """`aten::linear → aten::addmm ⇒ kernel` for the first GEMM of the step: the launching op and its
    ancestors (ops and record_function annotations; Python frames and the step itself left out)."""
    t = tables(trace)
    chain_cats = t.cat_ids(_CHAIN_CATS)
    for g in gpu_ids:
        name = decode_kernel(t.strings[t.gpu_name[g]])
        launch, p = int(t.gpu_launch[g]), int(t.gpu_op[g])
        if launch >= 0 and classify_call(t.strings[t.op_name[launch]]) != "launch":
            continue
        if name.family != "gemm" or p < 0:
            continue
        chain: list[str] = []
        while p >= 0:
            op_name = t.strings[t.op_name[p]]
            if op_name.startswith(STEP_PREFIX):
                break
            if t.op_cat[p] in chain_cats:
                chain.append(op_name)
            p = int(t.op_parent[p])
        if not chain:
            continue
        chain.reverse()
        if len(chain) > _CHAIN_MAX:
            chain = chain[:2] + [f"… {len(chain) - _CHAIN_MAX + 2} more"] + chain[-(_CHAIN_MAX - 3):]
        epilogue = f" (epilogue: {name.epilogue})" if name.epilogue else ""
        return " → ".join(chain) + f" ⇒ {name.short}{epilogue}"
    return None


def not_recorded_line(trace: Trace) -> str | None:
    """Launch calls but no GPU activity at all: the profiler did not capture the device."""
    t = tables(trace)
    if t.n_gpu:
        return None
    names = t.op_name[t.op_is(LAUNCH_CATS)]
    launches = int(t.names_where(lambda s: classify_call(s) in ("launch", "graph"), names)[names].sum())
    if not launches:
        return None
    return (f"GPU activity was not recorded: {launches} kernel launch call(s) but no kernel, memcpy or memset "
            "events (profile with the GPU activity, e.g. ProfilerActivity.CUDA, enabled)")


def trace_findings(trace: Trace) -> list[str]:
    step = focus_step(trace)
    gpu_ids = step_gpu(trace, step)
    where = trace.steps[step].name if step is not None else "whole trace"
    missing = not_recorded_line(trace)
    kernels = missing if missing is not None else kernel_line(trace, gpu_ids)
    lines = [f"{where}: {kernels}", launch_line(trace, step)]
    capture = graph_capture(trace)
    if capture is not None:
        lines.insert(0, capture.line())
    gemm_launch = gemm_launch_line(trace, gpu_ids)
    if gemm_launch:
        lines.append(gemm_launch)
    chain = chain_line(trace, gpu_ids)
    if chain:
        lines.append("first GEMM: " + chain)
    t = tables(trace)
    in_step = _in_step(t, step)
    ops = _cpu_ops(t) & in_step
    idle = int((ops & (t.op_gpu_us == 0)).sum())
    compiled = bool((t.names_where(lambda s: s.startswith("Torch-Compiled Region"))[t.op_name] & in_step).any())
    if not t.op_is((CPU_OP,)).any():
        cpu = "CPU: no CPU ops recorded" + (" (a GPU-only trace: kernels and runtime calls)" if t.n_gpu else "")
    else:
        cpu = f"CPU: {int(ops.sum())} ops, {idle} of them launch nothing on the GPU"
    if compiled:
        cpu += "; runs a torch.compile region"
    calls = t.op_name[t.op_is(LAUNCH_CATS) & in_step]
    graphs = int(t.names_where(lambda s: classify_call(s) == "graph", calls)[calls].sum())
    if graphs:
        cpu += f"; {graphs} CUDA graph launch{'es' if graphs > 1 else ''}"
    lines.append(cpu)
    from mlptui.trace.analysis.attention.attention import (  # it builds on this module
        attention_facts,
        attention_lines,
    )

    attention = attention_facts(trace)
    if attention is not None:
        lines += attention_lines(attention)
    unlinked = unlinked_line(trace)
    if unlinked:
        lines.append(unlinked)
    return lines
