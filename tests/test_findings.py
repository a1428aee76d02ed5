"""The findings a trace tells at a glance, on real traces: the Hopper GEMM launch path (memset +
cuLaunchKernelEx, no occupancy query) against the A100's occupancy query before cudaLaunchKernel."""

from __future__ import annotations

from mlptui.trace.analysis.advice.findings import (
    focus_step,
    gemm_launch_line,
    kernel_mix,
    step_gpu,
    trace_findings,
)
from mlptui.trace.parse.load import load_trace


def _gemm_launch(path) -> str | None:
    trace = load_trace(path)
    return gemm_launch_line(trace, step_gpu(trace, focus_step(trace)))


def test_hopper_mlp_gemms_launch_after_a_memset_without_occupancy_queries(sample_trace) -> None:
    line = _gemm_launch(sample_trace("mlp", "eager"))
    assert line == ("GEMM launch on sm90: cudaMemsetAsync → cuLaunchKernelEx (2 GEMMs); "
                    "cuLaunchKernelEx (1 GEMM); no occupancy queries")


def test_cuda_graph_replay_launches_every_gemm_through_the_graph(sample_trace) -> None:
    assert _gemm_launch(sample_trace("mlp", "reduce-overhead")) == (
        "GEMM launch on sm90: cudaGraphLaunch (3 GEMMs); no occupancy queries")


def test_fp32_linear_on_hopper_uses_cudaLaunchKernelExC(sample_trace) -> None:
    assert _gemm_launch(sample_trace("linear", "eager", dtype="fp32")) == (
        "GEMM launch on sm90: cudaLaunchKernelExC (1 GEMM); no occupancy queries")


def test_a100_gemms_query_occupancy_before_cudaLaunchKernel(corpus_dir) -> None:
    line = _gemm_launch(corpus_dir / "trace_diff__control__control.json.gz")
    assert line is not None and line.startswith(
        "GEMM launch on sm80: 2× cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags → "
        "2× cudaFuncSetAttribute → cudaLaunchKernel (225 GEMMs)")
    assert "no occupancy queries" not in line


def test_findings_tell_the_ladder_apart(sample_trace) -> None:
    mixes = {}
    for workload, mode in [("mlp", "eager"), ("mlp", "compile"), ("kernels-mlp", "eager"), ("fused-mlp", "eager")]:
        trace = load_trace(sample_trace(workload, mode))
        mixes[workload, mode] = kernel_mix(trace, step_gpu(trace, focus_step(trace)))
    assert mixes == {
        ("mlp", "eager"): "3 GEMM + mul + gelu",     # most GPU time first
        ("mlp", "compile"): "3 GEMM + triton_poi_fused__unsafe_view_gelu_mul_0",
        ("kernels-mlp", "eager"): "3 GEMM + _geglu_tanh_forward_kernel",
        ("fused-mlp", "eager"): "GEMM+geglu + GEMM",
    }
    linear = trace_findings(load_trace(sample_trace("linear", "eager")))
    # the first GEMM's chain is the launching op and its ancestors: aten::t, a sibling, is not on it
    assert any(line.startswith("first GEMM: linear_fwd → aten::linear → aten::addmm ⇒ ") and "epilogue: bias" in line
               for line in linear)


def test_summary_json_carries_the_findings(sample_trace, capsys) -> None:
    import orjson

    from mlptui.cli import main

    assert main(["summary", str(sample_trace("mlp", "compile")), "--json"]) == 0
    findings = orjson.loads(capsys.readouterr().out)["findings"]
    assert findings[0].startswith("ProfilerStep#4: 4 kernels")
    assert ("GEMM launch on sm90: cudaMemsetAsync → cuLaunchKernelEx (2 GEMMs); cuLaunchKernelEx (1 GEMM); "
            "no occupancy queries") in findings
    assert any("runs a torch.compile region" in line for line in findings)


def test_first_gemm_chain_is_the_launching_ops_ancestors(sample_trace) -> None:
    fused = trace_findings(load_trace(sample_trace("fused-mlp", "eager")))
    chain = next(line for line in fused if line.startswith("first GEMM: "))
    # the Triton kernel is launched under fused_mlp_fwd itself: no aten::mm on the way to it
    assert chain.startswith("first GEMM: fused_mlp_fwd ⇒ ") and "aten::mm" not in chain


def test_one_cpu_op_count_in_findings_picker_and_diff(sample_trace) -> None:
    from mlptui.trace.diff.trace_diff import diff_traces
    from mlptui.viewmodels.facts import build_facts

    eager, compiled = load_trace(sample_trace("mlp", "eager")), load_trace(sample_trace("mlp", "compile"))
    d = diff_traces(eager, compiled)
    for trace, counts in ((eager, d.cpu.a_counts), (compiled, d.cpu.b_counts)):
        picker = build_facts(trace).focus_cpu_ops
        cpu_line = next(line for line in trace_findings(trace) if line.startswith("CPU: "))
        assert picker == sum(counts.values()) and cpu_line.startswith(f"CPU: {picker} ops")
    assert build_facts(compiled).focus_cpu_ops < build_facts(eager).focus_cpu_ops
