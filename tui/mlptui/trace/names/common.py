"""`KernelName` and the small string helpers every kernel-name decoder shares.

Kernel names come in three shapes: library identifiers with fields joined by `_`
(`nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT`), demangled C++ signatures with nested
templates and lambdas (`void at::native::vectorized_elementwise_kernel<4, ...>(...)`), and bare
or mangled symbols (`_geglu_tanh_forward_kernel`, `_ZN19cutlass_cudnn_train6Kernel...`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FAMILIES = ("gemm", "pointwise", "reduction", "norm", "attention", "copy", "memset", "comm", "other")


@dataclass(frozen=True, slots=True)
class KernelName:
    raw: str                        # the name exactly as the trace has it
    short: str                      # one readable line
    family: str                     # one of FAMILIES
    library: str                    # "cuBLAS nvjet", "ATen", "Triton (Inductor)", ...
    kind: str                       # finer than family: "gemm", "conv", "softmax", "foreach", "memcpy HtoD", ...
    ops: tuple[str, ...] = ()       # the ops the kernel computes, as far as the name tells
    tile: str | None = None         # CTA tile "MxN" (GEMMs)
    stages: int | None = None       # software pipeline stages
    cluster: str | None = None      # thread-block cluster "1x2" (Hopper)
    dtype: str | None = None        # bf16, f16, f32, tf32, f64, int8, ...
    layout: str | None = None       # operand transposes as the library writes them: "tn", "TNT", ...
    epilogue: str | None = None     # fused epilogue: "bias", "relu", "gelu", ...
    vector_width: int | None = None  # elements per vectorized access (ATen vectorized kernels)
    k_tile: int | None = None       # K depth of one main-loop step (GEMMs)
    variant: str | None = None      # library-specific schedule marker: "coopA", "ffma", "splitK", ...


_ANON = "(anonymous namespace)"


def split_template(text: str, start: int) -> tuple[list[str], int]:
    """Split the template argument list opening at `text[start] == '<'` on its top-level commas.

    Returns the stripped arguments and the index just past the closing '>' (len(text) when the
    name was cut off before it closed, as Kineto does for very long names).
    """
    args: list[str] = []
    depth = 0
    begin = start + 1
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c in "<({[":
            depth += 1
        elif c in ">)}]":
            depth -= 1
            if depth == 0:
                args.append(text[begin:i].strip())
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[begin:i].strip())
            begin = i + 1
        i += 1
    tail = text[begin:].strip()
    if tail:
        args.append(tail)
    return args, n


def function_path(raw: str) -> tuple[str, list[str]]:
    """The qualified function name of a demangled signature and its top-level template args.

    `void at::native::vectorized_elementwise_kernel<4, F, A>(int, F, A)` gives
    ("at::native::vectorized_elementwise_kernel", ["4", "F", "A"]). Return types such as
    `void` or `std::enable_if<...>::type` are skipped: the name is the last space-separated
    chunk before the first top-level '('.
    """
    text = raw.replace(_ANON, "anon")
    depth = 0
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "<({[":
            if c == "(" and depth == 0:
                break
            depth += 1
        elif c in ">)}]":
            depth = max(0, depth - 1)
        elif c == " " and depth == 0:
            start = i + 1
        i += 1
    segment = text[start:i].strip()
    lt = segment.find("<")
    if lt < 0:
        return segment, []
    args, _ = split_template(segment, lt)
    return segment[:lt], args


def last_component(path: str) -> str:
    return path.rsplit("::", 1)[-1] if path else path


_MANGLED_PART = re.compile(r"(\d+)")


def demangle_outline(raw: str) -> str | None:
    """A best-effort outline of an Itanium-mangled name: its leading nested source names joined by
    '::' (`_ZN19cutlass_cudnn_train6KernelI...` gives 'cutlass_cudnn_train::Kernel'). Template
    arguments are not decoded; None when `raw` is not a mangled name."""
    if not raw.startswith("_Z"):
        return None
    i = 2
    if raw[i:i + 1] == "N":
        i += 1
    parts: list[str] = []
    while i < len(raw) and raw[i].isdigit():
        m = _MANGLED_PART.match(raw, i)
        if m is None:
            break
        length = int(m.group(1))
        i = m.end()
        if length <= 0 or i + length > len(raw):
            break
        parts.append(raw[i:i + length])
        i += length
    return "::".join(parts) if parts else None


# An upper-case run's last letter starts a new word: HTTPServer -> HTTP_Server. Written as lookarounds
# so that a long upper-case run costs linear time (`([A-Z]+)([A-Z][a-z])` backtracks quadratically).
_ACRONYM = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """CompareEq -> compare_eq, GeluCUDAKernelImpl -> gelu_cuda_kernel_impl; snake names pass through."""
    return _CAMEL.sub(r"\1_\2", _ACRONYM.sub("_", name)).lower()


def short_dtype(token: str) -> str | None:
    """Map the dtype spellings kernel names use to one vocabulary."""
    t = token.lower()
    table = {
        "bf16": "bf16", "bfloat16": "bf16", "c10::bfloat16": "bf16", "__nv_bfloat16": "bf16",
        "f16": "f16", "fp16": "f16", "half": "f16", "c10::half": "f16", "__half": "f16", "h": "f16",
        "f32": "f32", "fp32": "f32", "float": "f32", "s": "f32",
        "tf32": "tf32", "f64": "f64", "double": "f64", "d": "f64",
        "i8": "int8", "int8": "int8", "int8_t": "int8", "s8": "int8", "u8": "uint8", "uint8": "uint8",
        "uint8_t": "uint8", "i32": "int32", "int32": "int32", "int": "int32", "int32_t": "int32",
        "u32": "uint32", "uint32": "uint32", "i64": "int64", "int64": "int64", "long": "int64",
        "int64_t": "int64", "u64": "uint64", "uint64": "uint64", "bool": "bool",
        "e4m3": "fp8e4m3", "e5m2": "fp8e5m2", "fp8": "fp8", "f8": "fp8",
    }
    return table.get(t)


def truncate(text: str, width: int = 72) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
