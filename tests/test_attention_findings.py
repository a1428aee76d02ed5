"""The article's Part 3 findings, computed by mlptui from the recorded H100 attention traces, checked
against the raw events read here without the project's loader."""

from __future__ import annotations

import math

import pytest
from attention_support import Raw, attention_sample

from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.analysis.attention.attention import attention_facts
from mlptui.trace.parse.load import load_trace


def _facts(workload: str, mode: str = "eager"):
    path = attention_sample(workload, mode)
    facts = attention_facts(load_trace(path))
    assert facts is not None
    return facts, Raw(path)


def test_naive_attention_has_a_hidden_copy_launched_inside_masked_fill() -> None:
    facts, raw = _facts("attention-naive")
    last = len(raw.steps) - 1
    copies = raw.gpu_in_step(last, "gpu_memcpy")
    assert len(copies) == 1 and len(facts.memcpys) == 1
    launch = raw.launch_of(copies[0])
    assert launch["name"] == "cudaMemcpyAsync"
    around = raw.enclosing(launch)           # by time containment on the launching thread
    assert around[-1] == facts.memcpys[0].op == "aten::copy_"
    assert "aten::masked_fill" in around and "aten::masked_fill" in facts.memcpys[0].chain
    lines = trace_findings(load_trace(attention_sample("attention-naive")))
    copy_line = next(line for line in lines if line.startswith("hidden copy: "))
    assert f"launched by {around[-1]} inside {around[0]} (" in copy_line      # the op the code called
    assert facts.memcpys[0].us == pytest.approx(copies[0]["dur"])
    assert facts.memcpy_steps == len(raw.steps) == sum(bool(raw.gpu_in_step(i, "gpu_memcpy"))
                                                       for i in range(len(raw.steps)))


def test_the_in_place_twin_has_no_copy_and_one_kernel_less_on_the_cpu_side() -> None:
    facts, raw = _facts("attention-inplace")
    assert not [g for g in raw.gpu if g["cat"] == "gpu_memcpy"]
    assert facts.memcpys == [] and facts.memcpy_steps == 0
    assert any(line.startswith("hidden copy: none") for line in trace_findings(load_trace(
        attention_sample("attention-inplace"))))
    assert "aten::masked_fill_" in {o["name"] for o in raw.cpu_ops}
    assert "aten::clone" not in {o["name"] for o in raw.cpu_ops}


@pytest.mark.parametrize(("workload", "kernels"), [("attention-naive", 5), ("attention-inplace", 5),
                                                   ("attention-sdpa-math", 20), ("attention-sdpa-flash", 1),
                                                   ("attention-sdpa-efficient", 1), ("attention-sdpa-cudnn", 1)])
def test_kernels_per_forward_match_the_raw_events(workload: str, kernels: int) -> None:
    facts, raw = _facts(workload)
    per_step = [len(raw.gpu_in_step(i)) for i in range(len(raw.steps))]
    assert per_step == facts.kernels_per_step
    assert set(per_step) == {kernels}      # the article's count (naive: 5 kernels + the Memcpy = its 6)


def test_math_backend_runs_fp32_gemms_without_tensor_cores_and_bf16_attention_gemms_with_them() -> None:
    math_facts, raw = _facts("attention-sdpa-math")
    gemms = [g["name"] for g in raw.gpu_in_step(len(raw.steps) - 1) if "gemm" in g["name"].lower()]
    assert len(gemms) == len(math_facts.gemms) == 2
    assert all("f32f32" in n and "_ffma_" in n for n in gemms)     # the FP32 FMA pipe, no MMA instruction
    assert all(not g.tensor_cores and g.fp32 for g in math_facts.gemms)
    naive, raw_naive = _facts("attention-naive")
    assert all(g["name"].startswith("nvjet_") for g in raw_naive.gpu_in_step(0) if "nvjet" in g["name"])
    assert len(naive.gemms) == 2 and all(g.tensor_cores for g in naive.gemms)


def test_math_backend_rebuilds_the_causal_mask_every_call() -> None:
    facts, raw = _facts("attention-sdpa-math")
    for i in range(len(raw.steps)):
        names = [o["name"] for o in sorted(raw.cpu_in_step(i), key=lambda o: o["ts"])]
        assert "aten::tril" in names and "aten::ones" in names and "aten::where" in names
        assert names.index("aten::ones") < names.index("aten::tril") < len(names) - names[::-1].index("aten::where")
    assert facts.mask_steps == len(raw.steps)
    assert facts.mask_chain[:2] == ("aten::ones", "aten::tril") and facts.mask_chain[-1] == "aten::where"
    assert facts.safe_softmax and "aten::_safe_softmax" in {o["name"] for o in raw.cpu_ops}
    flash, _ = _facts("attention-sdpa-flash")
    assert flash.mask_chain == () and flash.mask_steps == 0


@pytest.mark.parametrize(("workload", "needle", "word", "label", "backend", "launch"), [
    ("attention-sdpa-flash", "pytorch_flash::flash_fwd_kernel", "flash", "FlashAttention-2", "flash",
     ("cudaFuncSetAttribute", "cudaLaunchKernel")),
    ("attention-sdpa-efficient", "fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "efficient",
     "memory-efficient attention (CUTLASS", "efficient", ("cudaLaunchKernel",)),
    ("attention-sdpa-cudnn", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", "cudnn", "cuDNN", "cudnn",
     ("cudaMemsetAsync", "cuLaunchKernelEx")),
])
def test_one_fused_kernel_named_by_library_backend_and_launch_path(workload, needle, word, label, backend,
                                                                   launch) -> None:
    facts, raw = _facts(workload)
    kernels = raw.gpu_in_step(len(raw.steps) - 1)
    assert len(kernels) == 1 and needle in kernels[0]["name"]
    assert len(facts.fused) == 1
    fused = facts.fused[0]
    assert fused.raw == kernels[0]["name"] and fused.word == word and fused.implementation.startswith(label)
    assert fused.backend == backend
    assert raw.launch_of(kernels[0])["name"] == launch[-1] == fused.launch_path[-1]
    assert fused.launch_path == launch


def _occupancy_by_hand(regs: int, threads: int, smem: int) -> tuple[int, float, str]:
    """The CUDA occupancy calculator for sm90 (65,536 registers and 233,472 B of shared memory per SM,
    64 warps, 32 blocks): registers per warp in units of 256 across 4 sub-partitions, 1 KB reserved per
    block and 128-byte units for shared memory."""
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(regs * 32 / 256) * 256
    by_regs = (65536 // 4 // per_warp) * 4 // warps
    by_smem = 233472 // (math.ceil((smem + 1024) / 128) * 128)
    by_warps = 64 // warps
    blocks = min(by_regs, by_smem, by_warps, 32)
    limiter = "+".join(n for n, v in (("warps", by_warps), ("registers", by_regs), ("shared memory", by_smem),
                                      ("blocks", 32)) if v == blocks)
    return blocks, blocks * warps / 64, limiter


@pytest.mark.parametrize("workload", ["attention-sdpa-flash", "attention-sdpa-efficient", "attention-sdpa-cudnn"])
def test_theoretical_occupancy_and_its_limiter_beside_kinetos_figure(workload: str) -> None:
    facts, raw = _facts(workload)
    args = raw.gpu_in_step(len(raw.steps) - 1)[0]["args"]
    threads = args["block"][0] * args["block"][1] * args["block"][2]
    blocks, fraction, limiter = _occupancy_by_hand(args["registers per thread"], threads, args["shared memory"])
    occ = facts.fused[0].occupancy
    assert occ is not None
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)
    assert occ.theoretical == pytest.approx(fraction)
    assert occ.kineto_pct == args["est. achieved occupancy %"]
    if args["est. achieved occupancy %"] == 0:
        assert args["shared memory"] > 48 * 1024 and occ.kineto_note is not None and "opt-in" in occ.kineto_note
    else:
        assert occ.kineto_note is None


def test_flash_reads_13_percent_because_registers_allow_two_blocks() -> None:
    facts, _ = _facts("attention-sdpa-flash")
    lines = trace_findings(load_trace(attention_sample("attention-sdpa-flash")))
    occ = facts.fused[0].occupancy
    assert occ is not None and occ.limiter == "registers" and occ.blocks_per_sm == 2
    assert any(line.startswith("attention occupancy: theoretical 12% (2 blocks × 4 warps = 8 of 64 warps per SM)")
               and "Kineto's estimate 13%" in line for line in lines)


def test_cudnn_zero_occupancy_is_reported_as_not_measured() -> None:
    lines = trace_findings(load_trace(attention_sample("attention-sdpa-cudnn")))
    occ_line = next(line for line in lines if line.startswith("attention occupancy:"))
    assert "not measured" in occ_line and " 0 %" not in occ_line


@pytest.mark.parametrize("workload", ["attention-naive", "attention-sdpa-math", "attention-sdpa-flash",
                                      "attention-sdpa-cudnn", "attention-sdpa-efficient"])
def test_cpu_cost_per_call_beside_gpu_time(workload: str) -> None:
    facts, raw = _facts(workload)
    assert facts.cpu_us == pytest.approx(raw.median_annotation_us())
    assert facts.gpu_us == pytest.approx(raw.median_step_gpu_us())
    assert facts.call_label == raw.annotations[0]["name"]


def test_mlp_traces_get_no_attention_findings(sample_trace) -> None:
    assert attention_facts(load_trace(sample_trace("mlp", "eager"))) is None


def test_summary_json_carries_the_attention_figures(capsys) -> None:
    import orjson

    from mlptui.cli import main

    path = attention_sample("attention-sdpa-flash")
    raw = Raw(path)
    assert main(["summary", str(path), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    att = doc["attention"]
    assert att["kernels_per_step"] == [len(raw.gpu_in_step(i)) for i in range(len(raw.steps))]
    assert att["fused"][0]["word"] == "flash" and att["fused"][0]["occupancy"]["limiter"] == "registers"
    assert any(line.startswith("fused attention: 1 kernel per step, FlashAttention-2") for line in doc["findings"])
    assert main(["summary", str(attention_sample("attention-naive")), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["attention"]["memcpys"][0]["op"] == "aten::copy_"


def test_a_copy_the_code_asked_for_is_a_memcpy_not_a_hidden_one(corpus_dir) -> None:
    """The MI300X serving trace moves inputs with aten::to: each Memcpy's outer op is a transfer."""
    path = corpus_dir.parent / "real" / "AMD-AGI__TraceLens__inference_sglang_prefilldecode_sglang_Qwen3-8B_prefilldecode.json.gz"
    if not path.exists():
        pytest.skip("corpus trace not found")
    lines = trace_findings(load_trace(path))
    copies = [line for line in lines if line.startswith(("memcpy: ", "hidden copy: "))]
    assert copies and all(line.startswith("memcpy: ") for line in copies)
    assert any("inside aten::to (" in line for line in copies)
