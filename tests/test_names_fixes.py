"""Decoding of real kernel names that used to come out wrong: torch's `_foreach_*` kernels by their op
(sqrt, addcmul, addcdiv, lerp), ROCm's `elementwise_kernel_manual_unroll` by its functor, Triton `attn_fwd`
as attention, trtllm-gen's Blackwell MXFP4/MXFP8 GEMMs as Tensor-Core GEMMs; and the lines that print
them: findings say family and library once, `summary` prints decoded names. Names are read from the raw
trace files (gzip + JSON here, not through mlptui's loader)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from conftest import SAMPLES

from mlptui.trace.analysis.advice.findings import kernel_label
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
from mlptui.trace.names.kernel import decode_kernel

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "real"
TRAIN = SAMPLES / "mlp-train-eager-64x2048x768x3072-bf16-h200-x2-20261122T143342" / \
    "mlp-train-eager-64x2048x768x3072-bf16-h200-rank-0.pt.trace.json.gz"
B200 = REAL / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"
MI300 = REAL / "AMD-AGI__TraceLens__inference_sglang_prefilldecode_sglang_Qwen3-8B_prefilldecode.json.gz"


def _kernel_names(path: Path) -> set[str]:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return {e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel"}


def test_foreach_kernels_are_named_by_their_op() -> None:
    foreach = [n for n in _kernel_names(TRAIN) if "multi_tensor_apply_kernel" in n]
    by_op = {}
    for raw in foreach:
        # the op argument of multi_tensor_apply_kernel<Metadata, Functor, Op, ...>, read here by hand
        functor = re.search(r"anonymous namespace\)::(\w+)Functor<", raw).group(1)
        op = re.search(r"Functor<[^<>]*>, ([\w:]+)<", raw).group(1).rsplit("::", 1)[-1]
        by_op[functor, op] = decode_kernel(raw).short
    assert by_op[("UnaryOp", "Sqrt")] == "foreach sqrt (ATen)"                # AdamW's _foreach_sqrt
    assert by_op[("PointwiseOpScalar", "multiplies")] == "foreach addcmul (ATen)"
    assert by_op[("PointwiseOpScalarList", "divides")] == "foreach addcdiv (ATen)"
    assert by_op[("TernaryOpScalar", "LerpFunctor")] == "foreach lerp (ATen)"
    assert by_op[("BinaryOpScalar", "multiplies")] == "foreach mul (ATen)"
    assert not any("foreach foreach" in s for s in by_op.values())


def test_rocm_manual_unroll_kernels_are_named_by_their_op() -> None:
    names = [n for n in _kernel_names(MI300) if "elementwise_kernel_manual_unroll" in n]
    assert len(names) >= 3
    for raw in names:
        kn = decode_kernel(raw)
        want = "copy" if "direct_copy_kernel" in raw else "add" if "CUDAFunctor_add" in raw else None
        assert "manual_unroll" not in kn.short and kn.library == "ATen", kn.short
        if want:
            assert kn.ops == (want,) and kn.short.startswith(f"{want} (ATen"), kn.short


def test_blackwell_mx_gemms_are_tensor_core_gemms() -> None:
    gemms = sorted(n for n in _kernel_names(B200) if n.startswith("bmm_"))
    assert len(gemms) == 2
    for raw in gemms:
        kn = decode_kernel(raw)
        out = raw.split("_")[1]
        assert (kn.family, kn.library, kn.tile, kn.k_tile, kn.stages) == ("gemm", "TensorRT-LLM", "128x16", 256, 3)
        assert kn.dtype == "mxfp4×mxfp8"          # MxE2m1 weights × MxE4m3 activations
        assert uses_tensor_cores(raw)
        assert kn.short.endswith("+swiglu") == ("swiGlu" in raw)
        assert ("→mxfp8" in kn.short) == (out == "MxE4m3") and ("→bf16" in kn.short) == (out == "Bfloat16")


def test_attn_fwd_is_attention() -> None:
    for raw in ("attn_fwd", "_attn_fwd", "attn_bwd"):
        kn = decode_kernel(raw)
        assert kn.family == "attention" and kn.library == "Triton", (raw, kn)
    assert decode_kernel("attn_bwd").kind == "attention backward"


def test_findings_say_family_and_library_once() -> None:
    gelu = next(n for n in _kernel_names(SAMPLES / next(p.name for p in SAMPLES.glob("mlp-eager-*bf16*")))
                if "Gelu" in n or "gelu" in n)
    assert kernel_label(gelu) == "gelu (ATen, vec8; pointwise)"
    mtia = "aten::mul.out-dtype_Float"          # an MTIA kernel name as the trace has it
    assert kernel_label(mtia) == "aten::mul.out-dtype_Float (other, custom)"


def test_summary_lists_completed_kernels_by_decoded_name(capsys: pytest.CaptureFixture[str]) -> None:
    from mlptui.cli import main

    path = next(SAMPLES.glob("mlp-eager-*bf16*"))
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    section = out.split("kernels, completed\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    names = [re.split(r"\s{2,}", line.strip())[0] for line in section]
    raw = _kernel_names(path)
    assert "gelu (ATen, vec8)" in names and "mul (ATen, vec8)" in names
    assert len(set(names)) == len(names)
    shorts = {decode_kernel(n).short for n in raw}
    assert all(name in shorts or name.split(" ‹")[0] in shorts for name in names)


def test_the_kernel_mix_puts_the_most_gpu_time_first() -> None:
    from mlptui.trace.analysis.advice.findings import focus_step, kernel_mix, step_gpu
    from mlptui.trace.parse.load import load_trace

    path = next(SAMPLES.glob("mlp-eager-*bf16*"))
    trace = load_trace(path)
    step = focus_step(trace)
    mix = kernel_mix(trace, step_gpu(trace, step)).split(" + ")
    # The same step from the raw events: its launch calls' correlations, their kernels' durations.
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    win = next(e for e in events if e.get("name") == trace.steps[step].name)
    corr = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and win["ts"] <= e["ts"] <= win["ts"] + win["dur"] and "correlation" in e.get("args", {})}
    time: dict[str, float] = {}
    for e in events:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in corr:
            label = "GEMM" if e["name"].startswith("nvjet") else "gelu" if "Gelu" in e["name"] else "mul"
            time[label] = time.get(label, 0.0) + e["dur"]
    want = sorted(time, key=lambda k: -time[k])
    assert [part.split(" ")[-1] for part in mix] == want
    assert time["mul"] != time["gelu"]
