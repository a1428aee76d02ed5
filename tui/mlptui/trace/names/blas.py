"""GEMM and convolution kernels: cuBLAS (nvjet, xmma, per-architecture gemms, gemv), CUTLASS,
cuDNN and Tensile (hipBLASLt / rocBLAS) names.

These libraries spell a kernel's configuration into its name with `_`-joined fields:
`nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT` is a bf16 (`t`) GEMM with a 256x128 CTA tile,
K-steps of 64 in a 4-stage pipeline, a 1x2 cluster, and A/B/D transposes `TNT`;
`ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn` a bf16 GEMM on the m16n8k16
tensor-core instruction with a 128x128 tile and 32x5 (K x stages); Tensile's
`Cijk_Alik_Bljk_SB_..._MT64x16x32_...` writes A/B index orders and the macro tile.
"""

from __future__ import annotations

import re
from typing import TypedDict

from mlptui.trace.names.common import KernelName, short_dtype

_DIM2 = re.compile(r"^(\d+)x(\d+)$")
_DIM3 = re.compile(r"^(\d+)x(\d+)x(\d+)$")
_LAYOUT = re.compile(r"^[tnTN]{2,4}$")
_INSTR = re.compile(r"^([a-z]*?)(\d{3,6})(gemm|fprop|dgrad|wgrad)$")
_LETTER_GEMM = re.compile(r"^([sdhczg]{1,2})(gemm|gemv)$")
_MULTI_DTYPE = re.compile(r"^((?:bf16|tf32|f16|f32|f64|fp16|fp32|e4m3|e5m2|i8|s8|u8|i32|s32)+)$")
_DTYPE_PIECE = re.compile(r"bf16|tf32|f16|f32|f64|fp16|fp32|e4m3|e5m2|i8|s8|u8|i32|s32")

EPILOGUES = frozenset({
    "bias", "relu", "gelu", "dgelu", "drelu", "silu", "swish", "sigmoid", "tanh", "aux", "bgrad",
    "bgrada", "bgradb", "gelu_aux", "relu_aux", "bias_relu", "bias_gelu",
})
_LETTER_TYPES = {"s": "f32", "d": "f64", "h": "f16", "c": "c64", "z": "c128", "g": "c64", "t": "bf16", "q": "fp8"}


def _dtype_of_token(token: str) -> str | None:
    m = _MULTI_DTYPE.match(token)
    if m:
        return short_dtype(_DTYPE_PIECE.findall(token)[0])
    return short_dtype(token) if token in {"bf16", "fp16", "f16", "f32", "fp32", "tf32", "f64", "int8", "i8"} else None


class _ShortFields(TypedDict):
    """What the one-line name of a GEMM shows."""

    dtype: str | None
    tile: str | None
    layout: str | None
    epilogue: str | None


class _GemmFields(_ShortFields):
    k_tile: int | None
    stages: int | None
    cluster: str | None
    instr: str | None
    variants: list[str]


def _gemm_fields(tokens: list[str]) -> _GemmFields:
    """Pick tile / K-tile / stages / cluster / dtype / layout / epilogue out of a token list."""
    out: _GemmFields = {"tile": None, "k_tile": None, "stages": None, "cluster": None, "dtype": None,
                 "layout": None, "epilogue": None, "instr": None, "variants": []}
    dims2: list[tuple[int, int]] = []
    epis: list[str] = []
    for i, tok in enumerate(tokens):
        low = tok.lower()
        if low.startswith("cgasize"):          # Hopper xmma: thread-block cluster ("CGA") shape
            m = _DIM3.match(low[7:])
            if m:
                out["cluster"] = f"{m.group(1)}x{m.group(2)}" + ("" if m.group(3) == "1" else f"x{m.group(3)}")
            continue
        if low.startswith("tilesize"):
            m = _DIM3.match(low[8:]) or _DIM2.match(low[8:])
            if m:
                out["tile"] = f"{m.group(1)}x{m.group(2)}"
                if m.re is _DIM3:
                    out["k_tile"] = int(m.group(3))
            continue
        nxt = _DIM2.match(tokens[i + 1]) if low == "stages" and i + 1 < len(tokens) else None
        if nxt:
            out["k_tile"], out["stages"] = int(nxt.group(1)), int(nxt.group(2))
            tokens[i + 1] = ""
            continue
        if re.match(r"^stages?\d+$", low):
            out["stages"] = int(re.sub(r"\D", "", low))
            continue
        m3 = _DIM3.match(low)
        if m3:
            if out["tile"] is None:
                out["tile"] = f"{m3.group(1)}x{m3.group(2)}"
                out["k_tile"] = int(m3.group(3))
            elif out["cluster"] is None:
                out["cluster"] = f"{m3.group(1)}x{m3.group(2)}" + ("" if m3.group(3) == "1" else f"x{m3.group(3)}")
            continue
        m2 = _DIM2.match(low)
        if m2:
            dims2.append((int(m2.group(1)), int(m2.group(2))))
            continue
        mi = _INSTR.match(low)
        if mi:
            out["instr"] = tok
            if mi.group(1) and out["dtype"] is None and mi.group(1) in _LETTER_TYPES and mi.group(1) != "s":
                out["dtype"] = _LETTER_TYPES[mi.group(1)]
            continue
        ml = _LETTER_GEMM.match(low)
        if ml:
            if out["dtype"] is None:
                out["dtype"] = _LETTER_TYPES.get(ml.group(1)[-1])
            continue
        dt = _dtype_of_token(low)
        if dt is not None:
            if out["dtype"] is None:
                out["dtype"] = dt
            continue
        if low in EPILOGUES:
            epis.append(low)
            continue
        if _LAYOUT.match(tok):
            if out["layout"] is None:
                out["layout"] = tok
            continue
        if low.startswith(("coop", "pingpong", "splitk", "split_k", "sliced", "ffma", "warpspecialized")):
            out["variants"].append(tok)
    if dims2:
        if out["tile"] is None:
            out["tile"] = f"{dims2[0][0]}x{dims2[0][1]}"
            dims2 = dims2[1:]
        if dims2 and out["k_tile"] is None:
            out["k_tile"], out["stages"] = dims2[0]
            dims2 = dims2[1:]
        if dims2 and out["cluster"] is None:
            out["cluster"] = f"{dims2[0][0]}x{dims2[0][1]}"
    if epis:
        out["epilogue"] = "+".join(dict.fromkeys(epis))
    if out["dtype"] is None and out["instr"] and out["instr"].startswith("s1688"):
        out["dtype"] = "tf32"    # s1688 without a storage type is the TF32 tensor-core path for f32 data
    return out


def _with_dtype(f: _GemmFields, dtype: str | None) -> _GemmFields:
    out = f.copy()
    out["dtype"] = dtype
    return out


def _gemm_short(library: str, what: str, f: _ShortFields, extra: str | None = None) -> str:
    parts = [library, what]
    for value in (f["dtype"], f["tile"], f["layout"]):
        if value:
            parts.append(str(value))
    if extra:
        parts.append(extra)
    if f["epilogue"]:
        parts.append("+" + f["epilogue"])
    return " ".join(parts)


def _ops(base: str, f: _ShortFields) -> tuple[str, ...]:
    return (base, *f["epilogue"].split("+")) if f["epilogue"] else (base,)


def decode_nvjet(raw: str) -> KernelName:
    tokens = raw.split("_")[1:]
    if tokens and re.match(r"^sm\d+$", tokens[0]):
        tokens = tokens[1:]
    dtype = None
    if tokens and re.match(r"^[a-z]{3}$", tokens[0]) and tokens[0][0] in _LETTER_TYPES:
        dtype = _LETTER_TYPES[tokens[0][0]]    # A/B, compute, D types: 'tst' = bf16 in, f32 compute, bf16 out
        tokens = tokens[1:]
    f = _gemm_fields(tokens)
    f["dtype"] = dtype or f["dtype"]
    variant = next((t for t in tokens if t.startswith("coop") or t == "pp"), None)
    return KernelName(
        raw=raw, short=_gemm_short("cuBLAS nvjet", "GEMM", _with_dtype(f, None), variant),
        family="gemm", library="cuBLAS nvjet", kind="gemm", ops=_ops("gemm", f), tile=f["tile"],
        stages=f["stages"], cluster=f["cluster"], dtype=f["dtype"], layout=f["layout"],
        epilogue=f["epilogue"], k_tile=f["k_tile"], variant=variant)


_CUDNN_XMMA = re.compile(r"_(fprop|dgrad|wgrad)_")


def decode_arch_gemm(raw: str) -> KernelName:
    """ampere_*/volta_*/turing_*/sm80_xmma_*/sm90_xmma_* names: cuBLAS, or cuDNN when they say so."""
    tokens = raw.split("_")
    f = _gemm_fields(tokens[1:])
    is_cudnn = "cudnn" in raw
    conv = _CUDNN_XMMA.search(raw)
    gemv = "gemv" in raw
    if is_cudnn or conv:
        what = f"conv {conv.group(1)}" if conv else "conv"
        library, kind, base = "cuDNN", what, "conv"
    else:
        what = "GEMV" if gemv else "GEMM"
        library, kind, base = "cuBLAS", "gemv" if gemv else "gemm", "gemm"
    variant = f["variants"][0] if f["variants"] else None
    if "split_k" in raw or "splitK" in raw:
        variant = variant or "splitK"
    return KernelName(
        raw=raw, short=_gemm_short(library, what, f), family="gemm", library=library, kind=kind,
        ops=_ops(base, f), tile=f["tile"], stages=f["stages"], cluster=f["cluster"], dtype=f["dtype"],
        layout=f["layout"], epilogue=f["epilogue"], k_tile=f["k_tile"], variant=variant)


def decode_cudnn_legacy(raw: str) -> KernelName:
    """cudnn_[infer_|train_]<arch>_[s|h]cudnn_... convolution kernels."""
    tokens = raw.split("_")
    f = _gemm_fields(tokens)
    dtype = None
    for t in tokens:
        if t.endswith("cudnn") and len(t) > 5:
            dtype = _LETTER_TYPES.get(t[0])
    what = "conv winograd" if "winograd" in tokens else "conv"
    return KernelName(
        raw=raw, short=_gemm_short("cuDNN", what, _with_dtype(f, dtype)), family="gemm", library="cuDNN",
        kind=what, ops=_ops("conv", f), tile=f["tile"], stages=f["stages"], dtype=dtype,
        layout=f["layout"], epilogue=f["epilogue"], k_tile=f["k_tile"])


def decode_cutlass(raw: str, name: str, library: str = "CUTLASS") -> KernelName:
    """`cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8` and the CUTLASS 3
    `cutlass3x_sm90_tensorop_gemm_...` form; `name` is the configuration name pulled out of
    `cutlass::Kernel<...>` when the raw name is a signature."""
    tokens = name.split("_")
    f = _gemm_fields(tokens[1:])
    conv = re.search(r"(fprop|dgrad|wgrad)", name)
    align = next((t for t in tokens if t.startswith("align")), None)
    variant = "wmma" if "wmma" in tokens else ("simt" if "simt" in tokens else None)
    schedule = next((t for t in tokens if t in ("cooperative", "pingpong", "ptr")), None)
    variant = " ".join(x for x in (variant, schedule) if x) or None
    if conv:
        what, base = f"conv {conv.group(1)}", "conv"
        layout = next((t for t in tokens if t in ("nhwc", "nchw", "ndhwc", "ncdhw")), None)
        f["layout"] = layout
    else:
        what, base = "GEMM", "gemm"
    return KernelName(
        raw=raw, short=_gemm_short(library, what, f, variant), family="gemm", library=library,
        kind=what.lower() if base == "gemm" else what, ops=_ops(base, f), tile=f["tile"], stages=f["stages"],
        cluster=f["cluster"], dtype=f["dtype"], layout=f["layout"], epilogue=f["epilogue"],
        k_tile=f["k_tile"], variant=" ".join(x for x in (variant, align) if x) or None)


_TENSILE_TYPES = {"S": "f32", "D": "f64", "H": "f16", "B": "bf16", "C": "c64", "Z": "c128", "I8": "int8",
                  "F8": "fp8", "B8": "fp8", "4xi8": "int8"}


def decode_tensile(raw: str) -> KernelName:
    """Tensile kernels (hipBLASLt, rocBLAS): Cijk_<A index order>_<B index order>_<types>_..._MT<tile>_..."""
    tokens = raw.split("_")
    layout = None
    if len(tokens) > 2:
        a = "T" if tokens[1].startswith("Ali") else "N"
        b = "N" if tokens[2].startswith("Blj") else "T"
        layout = a + b
    dtype = None
    if len(tokens) > 3:
        t = tokens[3]
        for code, name in sorted(_TENSILE_TYPES.items(), key=lambda kv: -len(kv[0])):
            if t.startswith(code):
                dtype = name
                break
    tile = k_tile = None
    variant = None
    for t in tokens:
        m = re.match(r"^MT(\d+)x(\d+)x(\d+)$", t)
        if m:
            tile, k_tile = f"{m.group(1)}x{m.group(2)}", int(m.group(3))
        elif t.startswith("MI") and _DIM3.match(t[2:]):
            variant = t
    epilogue = "bias" if "Bias" in tokens else None
    library = "hipBLASLt" if "UserArgs" in tokens or "SAV" in tokens else "rocBLAS"
    f: _ShortFields = {"dtype": dtype, "tile": tile, "layout": layout, "epilogue": epilogue}
    return KernelName(
        raw=raw, short=_gemm_short(library, "GEMM", f), family="gemm", library=library, kind="gemm",
        ops=("gemm", "bias") if epilogue else ("gemm",), tile=tile, dtype=dtype, layout=layout,
        epilogue=epilogue, k_tile=k_tile, variant=variant)


_CUBLAS_HELPERS = (
    ("gemv", "gemv", "gemm", "GEMV"),
    ("gemmk1", "gemm", "gemm", "GEMM (k=1)"),
    ("gemmSN", "gemm", "gemm", "GEMM (small N)"),
    ("sgemm", "gemm", "gemm", "GEMM"),
    ("magma_", "gemm", "gemm", "GEMM"),
    ("splitKreduce", "splitK reduce", "reduction", "split-K reduce"),
    ("globalKernel", "epilogue", "pointwise", "epilogue"),
    ("scal_kernel", "scal", "pointwise", "scal"),
    ("axpy", "axpy", "pointwise", "axpy"),
    ("dot_kernel", "dot", "reduction", "dot"),
    ("reduce_1Block_kernel", "reduction", "reduction", "reduce"),
    ("nrm2", "nrm2", "reduction", "nrm2"),
)


def decode_cublas_helper(raw: str, fn: str, targs: list[str]) -> KernelName | None:
    """cuBLAS kernels written as C++ templates: gemv, gemmk1, split-K reduction, epilogues."""
    for needle, kind, family, label in _CUBLAS_HELPERS:
        if needle in fn:
            found = [short_dtype(a.replace(" const", "").strip()) for a in targs]
            floats = [d for d in found if d in ("f32", "f16", "bf16", "f64", "tf32")]
            dtype = floats[0] if floats else next((d for d in found if d), None)
            short = f"cuBLAS {label}" + (f" {dtype}" if dtype else "")
            return KernelName(raw=raw, short=short, family=family, library="cuBLAS", kind=kind,
                              ops=("gemm",) if family == "gemm" else (kind,), dtype=dtype)
    return None
