"""Labels and advice that fit the trace: a cuDNN kernel whose name says f16 is labelled by its op's inputs
(bf16 attention); the off-Tensor-Core advice counts only matrix kernels that TF32 or autocast could move
(not the f32 GEMMs SDPA's math backend makes from bf16 inputs, not an all-bf16 model's kernels); the
reason SM efficiency is n/a names how the grid-less kernels were launched, not graph replays on an eager
trace. The expected facts are read from the raw events with json + gzip."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from attention_support import attention_sample
from conftest import ROOT, trace_bytes, x

from mlptui.cli import main
from mlptui.trace.analysis.advice.tc_miss import tc_miss
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.operators.operators import operators_in_steps
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.diff.trace_diff import diff_traces
from mlptui.trace.parse.load import load_trace, load_trace_bytes
from mlptui.viewmodels.kernel_labels import every_kernel_labels

CORPUS = ROOT.parent / "shared" / "corpus"
V100 = CORPUS / "real" / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
MI300 = CORPUS / "real" / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz"
MI250 = CORPUS / "hta" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        pytest.skip("corpus not available")
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["traceEvents"]


def _by_external(events: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {e["args"]["External id"]: e for e in events
            if e.get("cat") == "cpu_op" and "External id" in (e.get("args") or {})}


def test_cudnn_attention_is_labelled_bf16_from_its_ops_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    path = attention_sample("attention-sdpa-cudnn")
    events = _events(path)
    ops = _by_external(events)
    kernels = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("cudnn_generated")]
    assert kernels and all("_f16_" in k["name"] for k in kernels)                  # the name says f16 …
    assert all("c10::BFloat16" in ops[k["args"]["External id"]]["args"]["Input type"] for k in kernels)  # … bf16 ran
    raw = kernels[0]["name"]
    trace = load_trace(path)
    report = summarize(trace)
    short = next(k.short for k in report.kernels if k.name == raw)
    assert short == "cuDNN attention fwd bf16"
    assert next(k.short for k in report.kernel_stats if k.name == raw) == short
    assert every_kernel_labels(trace)[raw] == short
    assert "cuDNN attention fwd bf16" in " ".join(str(f) for f in report.findings)
    doc = diff_traces(trace, trace).report()
    assert short in {s for row in doc.kernels for s in row.a_short}
    assert main(["summary", str(path)]) == 0
    assert " f16" not in capsys.readouterr().out.replace("fwd bf16", "")


def test_sdpa_math_upcast_is_not_an_autocast_problem() -> None:
    """bf16 inputs, f32 GEMMs inside `aten::_scaled_dot_product_attention_math`: autocast cannot change
    them (the attention findings say what can); the Tensor-Core advice must not fire on them."""
    path = attention_sample("attention-sdpa-math")
    events = _events(path)
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    math = [e for e in ops if e["name"] == "aten::_scaled_dot_product_attention_math"]
    assert math and all("c10::BFloat16" in e["args"]["Input type"] for e in math)
    bmm = [e for e in ops if e["name"] == "aten::bmm"]
    assert bmm and all(set(e["args"]["Input type"]) == {"float"} for e in bmm)
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    in_steps = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in steps)}
    gemm_us = sum(e["dur"] for e in events if e.get("cat") == "kernel" and "gemm" in e["name"]
                  and e["args"]["correlation"] in in_steps)
    assert gemm_us > 0
    trace = load_trace(path)
    miss = tc_miss(trace, operators_in_steps(trace))
    assert miss.upcast_us == pytest.approx(gemm_us, abs=1e-3) and miss.missed_us == 0
    assert miss.upcast_ops == ["aten::_scaled_dot_product_attention_math"]
    assert not [r for r in summarize(trace).recommendations if r.rule == "tensor_cores"]


def test_an_all_bf16_model_gets_no_autocast_advice() -> None:
    events = _events(MI300)
    eligible = [e for e in events if e.get("cat") == "cpu_op"
                and e["name"] in ("aten::miopen_convolution", "aten::convolution_backward", "aten::mm", "aten::addmm")]
    assert eligible and all("c10::BFloat16" in e["args"].get("Input type", []) for e in eligible)
    trace = load_trace(MI300)
    miss = tc_miss(trace, operators_in_steps(trace))
    assert miss.missed_us == 0 and miss.sixteen_bit_us > 0
    assert not [r for r in summarize(trace).recommendations if r.rule == "tensor_cores"]


def test_an_fp32_model_still_gets_the_advice() -> None:
    events = _events(V100)
    convs = [e for e in events if e.get("name") == "aten::cudnn_convolution"]
    assert convs and all("float" in e["args"]["Input type"] for e in convs)
    fired = [r for r in summarize(load_trace(V100)).recommendations if r.rule == "tensor_cores"]
    assert len(fired) == 1 and "fp16 autocast" in fired[0].message
    assert "aten::cudnn_convolution" in fired[0].figures["ops"] and fired[0].figures["upcast_us"] == 0


def test_sm_efficiency_na_names_how_an_eager_trace_launched_its_gridless_kernels() -> None:
    events = _events(MI250)
    calls = {e["args"]["correlation"]: e["name"] for e in events
             if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})}
    gridless = [e for e in events if e.get("cat") == "kernel" and "grid" not in e["args"]]
    launchers = sorted({calls[k["args"]["correlation"]] for k in gridless})
    assert gridless and not any("Graph" in name for name in calls.values())           # an eager trace
    total = summarize(load_trace(MI250)).overview.total
    why = total.sm_efficiency_na
    assert why.endswith(f"carry no grid (launched by {', '.join(launchers)})")
    assert "graph" not in why


def test_an_op_whose_only_kernel_is_triton_is_not_judged_off_the_matrix_cores() -> None:
    """A Triton attention kernel (as ROCm's flash attention launches) may use the matrix cores through
    `tl.dot`; its name cannot say, so the advice neither counts it off nor fires on it."""
    props = {"id": 0, "name": "AMD Instinct MI300X", "gcnArchName": "gfx942:sramecc+:xnack-", "numSms": 304}
    events: list[dict[str, Any]] = []
    for i in range(4):
        t0 = 1000.0 * i
        events += [x("aten::_flash_attention_forward", "cpu_op", t0, 50, **{"External id": 10 + i,
                     "Input type": ["float", "float", "float"]}),
                   x("hipLaunchKernel", "cuda_runtime", t0 + 5, 10, correlation=100 + i, **{"External id": 10 + i}),
                   x("_attn_fwd", "kernel", t0 + 20, 900, pid=0, tid=7, correlation=100 + i, stream=7,
                     grid=[64, 16, 1], block=[256, 1, 1])]
    trace = load_trace_bytes(trace_bytes(events, deviceProperties=[props]), source="triton-attention.json")
    assert kernel_name(trace, "_attn_fwd").library == "Triton"
    miss = tc_miss(trace, operators_in_steps(trace))
    assert miss.unknown_us == pytest.approx(4 * 900) and miss.missed_us == 0
    assert not [r for r in summarize(trace).recommendations if r.rule == "tensor_cores"]
