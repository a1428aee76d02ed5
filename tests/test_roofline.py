"""Roofline: FLOPs/bytes from recorded shapes (hand-computed), the peak table, and achieved
throughput of the real H200 sample traces."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from mlptui.trace.analysis.kernels.gpu_specs import (
    A100_PCIE_80,
    A100_SXM_40,
    A100_SXM_80,
    ALL_PEAKS,
    H100_NVL,
    H100_PCIE,
    H100_SXM,
    H200_SXM,
    L4,
    L40S,
    MI250X,
    MI300X,
    V100_SXM2,
    peak_for,
)
from mlptui.trace.analysis.kernels.roofline import kernel_roofline, op_work
from mlptui.trace.model import KERNEL
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.parse.load import load_trace, load_trace_bytes

REPO = Path(__file__).resolve().parents[1]
BF16 = "c10::BFloat16"


def test_mm_flops_and_bytes() -> None:
    w = op_work("aten::mm", {"Input Dims": [[8192, 768], [768, 3072]], "Input type": [BF16, BF16]})
    assert w is not None
    assert w.flops == 2 * 8192 * 768 * 3072 == 38_654_705_664
    assert w.bytes == (8192 * 768 + 768 * 3072 + 8192 * 3072) * 2
    assert w.dtype == "bf16"


def test_addmm_counts_the_bias_read() -> None:
    args = {"Input Dims": [[64], [1024, 32], [32, 64], [], []], "Input type": [BF16, BF16, BF16, "Scalar", "Scalar"]}
    w = op_work("aten::addmm", args)
    assert w is not None
    assert w.flops == 2 * 1024 * 32 * 64
    assert w.bytes == (64 + 1024 * 32 + 32 * 64 + 1024 * 64) * 2


def test_linear_weight_is_out_by_in() -> None:
    args = {"Input Dims": [[64, 128, 768], [3072, 768], []], "Input type": [BF16, BF16, ""]}
    w = op_work("aten::linear", args)
    assert w is not None
    assert w.flops == 2 * (64 * 128) * 768 * 3072
    with_bias = op_work("aten::linear", {"Input Dims": [[1024, 32], [64, 32], [64]], "Input type": [BF16] * 3})
    assert with_bias is not None and with_bias.bytes == (1024 * 32 + 64 * 32 + 1024 * 64 + 64) * 2
    assert op_work("aten::linear", {"Input Dims": [[4, 5], [6, 7], []], "Input type": [BF16, BF16, ""]}) is None


def test_batched_matmuls() -> None:
    f32 = "float"
    w = op_work("aten::bmm", {"Input Dims": [[12, 128, 64], [12, 64, 128]], "Input type": [f32, f32]})
    assert w is not None and w.flops == 2 * 12 * 128 * 128 * 64 and w.dtype == "f32"
    assert w.bytes == (12 * 128 * 64 * 2 + 12 * 128 * 128) * 4
    w = op_work("aten::baddbmm", {"Input Dims": [[12, 128, 128], [12, 128, 64], [12, 64, 128], [], []],
                                  "Input type": [f32, f32, f32, "Scalar", "Scalar"]})
    assert w is not None and w.flops == 2 * 12 * 128 * 128 * 64
    # matmul broadcasts a 3-D activation against a 2-D weight: batch 64 of [128, 768] @ [768, 3072]
    w = op_work("aten::matmul", {"Input Dims": [[64, 128, 768], [768, 3072]], "Input type": [BF16, BF16]})
    assert w is not None and w.flops == 2 * 64 * 128 * 768 * 3072
    assert w.bytes == (64 * 128 * 768 + 768 * 3072 + 64 * 128 * 3072) * 2
    # matrix @ vector
    w = op_work("aten::matmul", {"Input Dims": [[32, 16], [16]], "Input type": [f32, f32]})
    assert w is not None and w.flops == 2 * 32 * 16
    assert op_work("aten::bmm", {"Input Dims": [[2, 3, 4], [2, 5, 6]], "Input type": [f32, f32]}) is None


def test_elementwise_bytes() -> None:
    x = [64, 128, 3072]
    n = 64 * 128 * 3072
    gelu = op_work("aten::gelu", {"Input Dims": [x, []], "Input type": [BF16, ""]})
    assert gelu is not None and gelu.flops is None and gelu.bytes == 2 * n * 2
    mul = op_work("aten::mul", {"Input Dims": [x, x], "Input type": [BF16, BF16]})
    assert mul is not None and mul.bytes == 3 * n * 2
    # broadcast bias add in fp32: read x and the row, write x-shaped output
    add = op_work("aten::add", {"Input Dims": [[1024, 64], [64], []], "Input type": ["float", "float", "Scalar"]})
    assert add is not None and add.bytes == (1024 * 64 + 64 + 1024 * 64) * 4
    inplace = op_work("aten::mul_", {"Input Dims": [x, []], "Input type": [BF16, "Scalar"]})
    assert inplace is not None and inplace.bytes == 2 * n * 2
    copy = op_work("aten::copy_", {"Input Dims": [[1024], [1024], []], "Input type": [BF16, "float", ""]})
    assert copy is not None and copy.bytes == 1024 * 2 + 1024 * 4
    fill = op_work("aten::fill_", {"Input Dims": [[256, 256], []], "Input type": ["float", "Scalar"]})
    assert fill is not None and fill.bytes == 256 * 256 * 4


def test_unmodelled_or_shapeless_ops_give_none() -> None:
    assert op_work("aten::mm", {}) is None                       # recorded without record_shapes
    assert op_work("triton_poi_fused__unsafe_view_gelu_mul_0", {"Input Dims": [[8], [8]]}) is None
    assert op_work("aten::softmax", {"Input Dims": [[8, 8], [], []], "Input type": ["float", "Scalar", ""]}) is None
    assert op_work("aten::mul", {"Input Dims": [[3, 4], [5, 4]], "Input type": ["float", "float"]}) is None


@pytest.mark.parametrize(("name", "mem", "want"), [
    ("NVIDIA H100 80GB HBM3", None, H100_SXM),
    ("NVIDIA H100", None, H100_SXM),
    ("NVIDIA H100 PCIe", None, H100_PCIE),
    ("NVIDIA H100 NVL", None, H100_NVL),
    ("NVIDIA H200", None, H200_SXM),
    ("NVIDIA A100-SXM4-80GB", None, A100_SXM_80),
    ("NVIDIA A100-SXM4-40GB", None, A100_SXM_40),
    ("NVIDIA A100-PG509-200", 42297524224, A100_SXM_40),
    ("NVIDIA A100 80GB PCIe", None, A100_PCIE_80),
    ("NVIDIA L4", None, L4),
    ("NVIDIA L40S", None, L40S),
    ("Tesla V100-SXM2-32GB", None, V100_SXM2),
    ("AMD Instinct MI250X", None, MI250X),
    ("AMD Instinct MI300X", None, MI300X),
    ("NVIDIA GH200 480GB", None, None),
    ("NVIDIA L40", None, None),
    ("AMD Radeon Graphics", None, None),
    (None, None, None),
])
def test_peak_for_kineto_device_names(name: str | None, mem: int | None, want: object) -> None:
    assert peak_for(name, mem) is want


def test_peak_table_is_dense_and_sourced() -> None:
    for p in ALL_PEAKS:
        assert p.source.endswith("datasheet")
        assert p.mem_tbps > 0
    assert H100_SXM.tflops_for("bf16") == pytest.approx(1979 / 2)     # datasheet's 1,979 is with sparsity
    assert H200_SXM.mem_gbps == 4800
    assert MI250X.tflops_for("bf16") == pytest.approx(383 / 2)       # one GCD of two
    assert V100_SXM2.tflops_for("bf16") is None


def _sample(glob: str) -> Path:
    paths = sorted((REPO / "sample_traces").glob(glob))
    if not paths:
        pytest.skip(f"no sample trace {glob}")
    return paths[0]


def test_mlp_eager_gate_gemm_roofline() -> None:
    trace = load_trace(_sample("mlp-eager-*bf16*.pt.trace.json.gz"))
    gemm = next(g for g in trace.gpu if g.name.startswith("nvjet_sm90_tst_256x128"))
    r = kernel_roofline(trace, gemm.id)
    assert r is not None
    assert r.flops == 2 * 8192 * 768 * 3072             # x[8192,768] @ W^T[768,3072]
    seconds = gemm.dur * 1e-6
    assert r.tflops == pytest.approx(r.flops / seconds / 1e12)
    assert r.dtype == "bf16" and r.bound == "compute"
    assert r.peak is H200_SXM
    assert r.pct_of_peak == pytest.approx(100 * r.tflops / 989.5)
    assert 40 < r.pct_of_peak < 100


def test_mlp_eager_elementwise_rooflines() -> None:
    trace = load_trace(_sample("mlp-eager-*bf16*.pt.trace.json.gz"))
    n = 64 * 128 * 3072
    seen = set()
    for g in trace.gpu:
        if g.cat != KERNEL:
            assert kernel_roofline(trace, g.id) is None
            continue
        kn = decode_kernel(g.name)
        r = kernel_roofline(trace, g.id)
        assert r is not None, kn.short
        if kn.ops == ("gelu",):
            assert r.bytes == 2 * n * 2 and r.flops is None and r.bound == "memory"
            assert r.gbps == pytest.approx(r.bytes / (g.dur * 1e-6) / 1e9)
            assert r.pct_of_peak == pytest.approx(100 * r.gbps / 4800)
            seen.add("gelu")
        elif kn.ops == ("mul",):
            assert r.bytes == 3 * n * 2
            seen.add("mul")
    assert seen == {"gelu", "mul"}


def test_linear_with_bias_is_memory_bound_at_this_size() -> None:
    trace = load_trace(_sample("linear-eager-*bf16*.pt.trace.json.gz"))
    kernels = [g for g in trace.gpu if g.cat == KERNEL]
    assert kernels
    for g in kernels:
        assert trace.ops[g.op].name == "aten::addmm"
        r = kernel_roofline(trace, g.id)
        assert r is not None
        assert r.flops == 2 * 1024 * 32 * 64
        assert r.bound == "memory"          # 21 FLOP/byte, far below the H200's ridge of ~206


def test_fp32_linear_uses_the_fp32_peak() -> None:
    trace = load_trace(_sample("linear-eager-*fp32*.pt.trace.json.gz"))
    g = next(g for g in trace.gpu if g.cat == KERNEL)
    r = kernel_roofline(trace, g.id)
    assert r is not None and r.dtype == "f32"
    assert r.pct_of_peak == pytest.approx(100 * r.tflops / 67)


def test_compiled_and_triton_kernels_get_no_invented_roofline() -> None:
    for glob in ("mlp-compile-*bf16*.pt.trace.json.gz", "kernels-mlp-eager-*.pt.trace.json.gz"):
        trace = load_trace(_sample(glob))
        for g in trace.gpu:
            kn = decode_kernel(g.name)
            if kn.library in ("Triton (Inductor)", "Triton"):
                assert kernel_roofline(trace, g.id) is None
            elif kn.family == "gemm":
                assert kernel_roofline(trace, g.id) is not None     # Inductor calls aten::mm for GEMMs


def test_unknown_device_still_reports_achieved_throughput() -> None:
    doc = orjson.loads(gzip.decompress(_sample("mlp-eager-*bf16*.pt.trace.json.gz").read_bytes()))
    doc["deviceProperties"] = [{**doc["deviceProperties"][0], "name": "Some Future GPU"}]
    trace = load_trace_bytes(orjson.dumps(doc), source="renamed-device")
    gemm = next(g for g in trace.gpu if g.name.startswith("nvjet_sm90_tst_256x128"))
    r = kernel_roofline(trace, gemm.id)
    assert r is not None and r.peak is None
    assert r.tflops == pytest.approx(2 * 8192 * 768 * 3072 / (gemm.dur * 1e-6) / 1e12)
    assert r.pct_of_peak is None and r.pct_of_roofline is None and r.bound == "unknown"
    gelu = next(g for g in trace.gpu if "GeluCUDAKernelImpl" in g.name)
    r = kernel_roofline(trace, gelu.id)
    assert r is not None and r.bound == "memory" and r.pct_of_peak is None and r.gbps > 0
