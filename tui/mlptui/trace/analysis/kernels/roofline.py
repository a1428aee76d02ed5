"""Per-kernel roofline: the work an op asked for (FLOPs of a matrix multiply, bytes an elementwise
op must move) from its recorded `Input Dims` / `Input type`, divided by the kernel's duration,
against the device's peak from `gpu_specs`.

Only the op that launched a kernel can tell its work, so a kernel gets a roofline when its
innermost launching op is one of the ops below and that op launched no other kernel of the same
kind. Inductor and hand-written Triton kernels are launched by ops named after the kernel with no
shapes: they get None rather than a made-up figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from mlptui.trace.analysis.kernels.gpu_specs import GpuPeak, peak_for
from mlptui.trace.analysis.kernels.occupancy import device_for
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.names.kernel import decode_kernel

# Kineto's "Input type" strings -> (dtype, bytes per element)
TYPE_SIZES: dict[str, tuple[str, int]] = {
    "c10::BFloat16": ("bf16", 2), "c10::Half": ("f16", 2), "float": ("f32", 4), "double": ("f64", 8),
    "c10::Float8_e4m3fn": ("fp8e4m3", 1), "c10::Float8_e5m2": ("fp8e5m2", 1), "c10::Float8_e4m3fnuz": ("fp8e4m3", 1),
    "c10::Float8_e5m2fnuz": ("fp8e5m2", 1), "long int": ("int64", 8), "long": ("int64", 8), "int": ("int32", 4),
    "short int": ("int16", 2), "short": ("int16", 2), "signed char": ("int8", 1), "unsigned char": ("uint8", 1),
    "bool": ("bool", 1), "c10::complex<float>": ("c64", 8), "c10::complex<double>": ("c128", 16),
}

GEMM_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"})
# Elementwise ops whose memory traffic is "read every tensor input once, write one output".
ELEMENTWISE_OPS = frozenset({
    "gelu", "relu", "silu", "sigmoid", "tanh", "mul", "add", "sub", "div", "neg", "exp", "log", "sqrt", "rsqrt",
    "pow", "abs", "clamp", "where", "gelu_backward", "silu_backward", "threshold_backward", "sigmoid_backward",
    "tanh_backward", "clone", "masked_fill", "addcmul", "addcdiv", "lerp", "maximum", "minimum", "erf", "sin", "cos",
    "reciprocal", "square", "hardtanh", "leaky_relu", "elu", "mish", "hardswish", "hardsigmoid", "softplus",
    "threshold", "sign", "floor", "ceil", "round", "eq", "ne", "lt", "le", "gt", "ge", "rsub",
})
WRITE_ONLY_OPS = frozenset({"fill_", "zero_"})


@dataclass(frozen=True, slots=True)
class Work:
    flops: int | None           # floating-point operations (multiply-add = 2); None for data movement
    bytes: int                  # bytes read + written, each tensor once
    dtype: str | None           # of the inputs


@dataclass(frozen=True, slots=True)
class Roofline:
    flops: int | None
    bytes: int
    tflops: float | None        # achieved
    gbps: float                 # achieved
    pct_of_peak: float | None   # GEMMs: of the dtype's peak TFLOP/s; data movement: of peak bandwidth
    bound: str                  # "compute" or "memory": which roof the op's intensity is under ("unknown": no peak)
    dtype: str | None = None    # the peak's dtype (tf32 when the kernel says TF32 though the tensors are f32)
    intensity: float | None = None       # FLOPs per byte
    peak: GpuPeak | None = None
    pct_of_roofline: float | None = None  # of min(peak FLOP/s, intensity x bandwidth)


def _tensors(args: dict[str, Any]) -> list[tuple[list[int], str, int]]:
    """(shape, dtype, element size) of each tensor input, in order; non-tensors are skipped."""
    dims = args.get("Input Dims")
    types = args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):    # what a file says may be anything
        return []
    out: list[tuple[list[int], str, int]] = []
    for shape, typ in zip(dims, types, strict=False):
        spec = TYPE_SIZES.get(typ) if isinstance(typ, str) else None
        if spec is None or not isinstance(shape, list) or len(shape) > 8 or not all(
                type(d) is int and 0 <= d < 1 << 31 for d in shape):
            continue
        out.append((shape, spec[0], spec[1]))
    return out


def _broadcast(*shapes: list[int]) -> list[int] | None:
    ndim = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for i in range(1, ndim + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(sizes) > 1:
            return None
        result.insert(0, sizes.pop() if sizes else 1)
    return result


def _gemm(name: str, ts: list[tuple[list[int], str, int]]) -> Work | None:
    extra: list[tuple[list[int], str, int]] = []          # bias / C operand read besides A and B
    if name in ("aten::addmm", "aten::baddbmm"):
        if len(ts) < 3:
            return None
        extra, ts = ts[:1], ts[1:3]
    if len(ts) < 2:
        return None
    (a, dtype, esize), (b, _, bsize) = ts[0], ts[1]
    if name == "aten::linear":
        extra = ts[2:3]
        if len(a) < 1 or len(b) != 2 or b[1] != a[-1]:
            return None
        batch, m, k, n = 1, prod(a[:-1]), a[-1], b[0]
    elif name in ("aten::mm", "aten::addmm"):
        if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
            return None
        batch, m, k, n = 1, a[0], a[1], b[1]
    elif name in ("aten::bmm", "aten::baddbmm"):
        if len(a) != 3 or len(b) != 3 or a[2] != b[1] or a[0] != b[0]:
            return None
        batch, m, k, n = a[0], a[1], a[2], b[2]
    else:   # aten::matmul: vectors, matrices, broadcast batches
        a2 = [1, *a] if len(a) == 1 else a
        b2 = [*b, 1] if len(b) == 1 else b
        if len(a2) < 2 or len(b2) < 2 or a2[-1] != b2[-2]:
            return None
        batch_shape = _broadcast(a2[:-2], b2[:-2])
        if batch_shape is None:
            return None
        batch, m, k, n = prod(batch_shape), a2[-2], a2[-1], b2[-1]
    flops = 2 * batch * m * n * k
    moved = prod(a) * esize + prod(b) * bsize + batch * m * n * esize
    moved += sum(prod(s) * size for s, _, size in extra)
    return Work(flops=flops, bytes=moved, dtype=dtype)


def _elementwise(base: str, ts: list[tuple[list[int], str, int]]) -> Work | None:
    if not ts:
        return None
    if base in WRITE_ONLY_OPS:
        shape, dtype, esize = ts[0]
        return Work(flops=None, bytes=prod(shape) * esize, dtype=dtype)
    if base == "copy_":
        if len(ts) < 2:
            return None
        (dst, dtype, dsize), (src, _, ssize) = ts[0], ts[1]
        return Work(flops=None, bytes=prod(dst) * dsize + prod(src) * ssize, dtype=dtype)
    op = base[:-1] if base.endswith("_") else base
    if op not in ELEMENTWISE_OPS:
        return None
    out_shape = _broadcast(*(s for s, _, _ in ts))
    if out_shape is None:
        return None
    # the result takes the widest type among tensors that have dimensions (0-dim tensors don't promote)
    shaped = [t for t in ts if t[0]] or ts
    out = max(shaped, key=lambda t: t[2])
    read = sum(prod(s) * size for s, _, size in ts)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        out_size = 1
    else:
        out_size = out[2]
    return Work(flops=None, bytes=read + prod(out_shape) * out_size, dtype=out[1])


def op_work(op_name: str, args: dict[str, Any]) -> Work | None:
    """FLOPs and bytes of one CPU op from its recorded shapes; None when the op is not one we model
    or the trace was recorded without shapes (record_shapes=False)."""
    ts = _tensors(args)
    if op_name in GEMM_OPS:
        return _gemm(op_name, ts)
    if op_name.startswith("aten::"):
        return _elementwise(op_name[len("aten::"):], ts)
    return None


def kernel_roofline(trace: Trace, gpu_id: int) -> Roofline | None:
    """Achieved throughput of kernel `gpu_id` against the device's peak, from the op that launched it."""
    g = trace.gpu[gpu_id]
    if g.cat != KERNEL or g.op < 0 or g.dur <= 0:
        return None
    op = trace.ops[g.op]
    work = op_work(op.name, trace.op_args(g.op))
    if work is None:
        return None
    kn = decode_kernel(g.name)
    is_gemm_op = op.name in GEMM_OPS
    if is_gemm_op != (kn.family == "gemm"):
        return None     # e.g. a copy kernel aten::mm launched to make an operand contiguous
    # the op's work belongs to this kernel only if no other kernel of its kind shares it
    same_kind = [i for i in op.gpu if trace.gpu[i].cat == KERNEL
                 and (decode_kernel(trace.gpu[i].name).family == "gemm") == is_gemm_op]
    if same_kind != [gpu_id]:
        return None
    device = device_for(trace, g.device) or {}
    peak = peak_for(device.get("name"), device.get("totalGlobalMem"))
    seconds = g.dur * 1e-6
    gbps = work.bytes / seconds / 1e9
    dtype = work.dtype
    if work.flops is not None and dtype == "f32" and kn.dtype == "tf32":
        dtype = "tf32"
    tflops = work.flops / seconds / 1e12 if work.flops is not None else None
    intensity = work.flops / work.bytes if work.flops is not None and work.bytes else None
    peak_tflops = peak.tflops_for(dtype) if peak is not None else None
    peak_gbps = peak.mem_gbps if peak is not None else None
    pct_roof: float | None
    if intensity is not None and peak_tflops and peak_gbps:
        ridge = peak_tflops * 1e12 / (peak_gbps * 1e9)
        bound = "compute" if intensity >= ridge else "memory"
        attainable = min(peak_tflops, intensity * peak_gbps / 1e3)
        pct_roof = 100.0 * (tflops or 0.0) / attainable if attainable > 0 else None   # no work: no roof
    else:   # data movement is memory-bound by nature; a GEMM's side needs the peaks to tell
        bound = "memory" if work.flops is None else "unknown"
        pct_roof = 100.0 * gbps / peak_gbps if work.flops is None and peak_gbps else None
    if work.flops is not None:
        pct = 100.0 * tflops / peak_tflops if tflops is not None and peak_tflops else None
    else:
        pct = 100.0 * gbps / peak_gbps if peak_gbps else None
    return Roofline(flops=work.flops, bytes=work.bytes, tflops=tflops, gbps=gbps, pct_of_peak=pct, bound=bound,
                    dtype=dtype, intensity=intensity, peak=peak, pct_of_roofline=pct_roof)
