"""Index: per-thread trees, names from M events, launch linking, GPU time and steps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import trace_bytes, x

from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace, load_trace_bytes


def _load(events: list[dict]) -> Trace:
    return load_trace_bytes(trace_bytes(events), source="mem")


def _by_name(t: Trace) -> dict[str, int]:
    return {op.name: op.id for op in t.ops}


def test_equal_starts_nest_longest_first_and_zero_durations() -> None:
    t = _load([
        x("inner", "cpu_op", 10.0, 5.0),
        x("outer", "cpu_op", 10.0, 20.0),
        x("zero_at_start", "cpu_op", 10.0, 0.0),
        x("zero_at_end", "cpu_op", 30.0, 0.0),
        x("next", "cpu_op", 30.0, 4.0),
        x("z1", "cpu_op", 40.0, 0.0),
        x("z2", "cpu_op", 40.0, 0.0),
    ])
    ids = _by_name(t)
    parent = {op.name: (t.ops[op.parent].name if op.parent >= 0 else None) for op in t.ops}
    assert parent["outer"] is None and parent["inner"] == "outer"
    assert parent["zero_at_start"] in ("outer", "inner")
    assert parent["next"] is None                  # starts when outer ends: a sibling, not a child
    assert parent["zero_at_end"] == "next"         # an instant at a slice's start belongs to that slice
    assert parent["z1"] is None and parent["z2"] is None               # two instants at one time: siblings
    assert t.ops[ids["outer"]].id < t.ops[ids["inner"]].id
    assert not t.warnings
    assert t.threads[0].roots == sorted(t.threads[0].roots)


def test_partial_overlap_nests_by_true_containment_and_is_counted() -> None:
    t = _load([x("a", "cpu_op", 0.0, 10.0), x("b", "cpu_op", 5.0, 10.0), x("c", "cpu_op", 20.0, 1.0),
               x("frame", "python_function", 0.0, 30.0), x("in_b", "cpu_op", 8.0, 1.0)])
    ids = _by_name(t)
    assert t.ops[ids["b"]].parent == ids["frame"]      # b starts in a but outlives it: not a's child
    assert t.ops[ids["in_b"]].parent == ids["b"]       # inside both a and b: a was closed when b began
    assert t.warnings == ["1 CPU slice(s) end after the slice they start in (partial overlap); "
                          "each nested under the innermost slice that contains it"]


def test_threads_are_separate_trees_and_named_from_metadata() -> None:
    t = _load([
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "pt_autograd_0"}},
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
        x("main", "cpu_op", 0.0, 100.0, tid=1),
        x("bwd", "cpu_op", 10.0, 5.0, tid=2),
        x("k", "kernel", 50.0, 1.0, pid=0, tid=7),
    ])
    names = {(th.pid, th.tid): th.name for th in t.threads}
    assert names == {(1, 1): "thread 1", (1, 2): "pt_autograd_0"}
    assert t.ops[_by_name(t)["bwd"]].parent == -1
    assert [(s.device, s.stream, s.name) for s in t.streams] == [(0, 7, "stream 7")]
    assert t.meta["process_names"] == {"1": "python3"}


def test_graph_launch_links_every_replayed_kernel_and_gpu_time_rolls_up() -> None:
    kernels = [x(f"k{i}", "kernel", 100.0 + 10 * i, 4.0, pid=0, tid=7, correlation=5) for i in range(3)]
    t = _load([
        x("ProfilerStep#3", "user_annotation", 0.0, 60.0),
        x("replay", "cpu_op", 5.0, 40.0),
        x("cudaGraphLaunch", "cuda_runtime", 10.0, 8.0, correlation=5),
        *kernels,                                    # run after the step's annotation has closed
        x("ProfilerStep#4", "user_annotation", 60.0, 100.0),
    ])
    ids = _by_name(t)
    launch = ids["cudaGraphLaunch"]
    assert [g.launch for g in t.gpu] == [launch] * 3
    assert [g.op for g in t.gpu] == [ids["replay"]] * 3
    assert t.ops[launch].gpu == [0, 1, 2]
    assert [t.ops[i].gpu_us for i in (ids["ProfilerStep#3"], ids["replay"], launch)] == [12.0, 12.0, 12.0]
    assert t.ops[ids["ProfilerStep#4"]].gpu_us == 0.0
    # the kernels ran inside ProfilerStep#4's window but belong to the step that launched them
    assert [g.step for g in t.gpu] == [0, 0, 0]
    assert t.ops[ids["replay"]].self_us == 32.0


def test_external_id_fallback_when_the_launch_is_missing() -> None:
    t = _load([
        x("aten::copy_", "cpu_op", 0.0, 10.0, **{"External id": 11}),
        x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 3.0, 2.0, pid=0, tid=7, correlation=77,
          **{"External id": 11}),
    ])
    g = t.gpu[0]
    assert g.launch == -1 and t.ops[g.op].name == "aten::copy_" and t.ops[g.op].gpu_us == 2.0
    assert t.meta["unlinked_gpu_ops"] == 0


def test_linear_eager_dispatch_path_and_one_gemm_per_step(sample_trace: Callable[..., Path]) -> None:
    t = load_trace(sample_trace("linear", "eager"))
    assert len(t.steps) == 3
    for step in range(3):
        kernels = [g for g in t.gpu if g.step == step and g.cat == "kernel"]
        assert len(kernels) == 1
        g = kernels[0]
        assert g.name.startswith("nvjet_") and t.ops[g.launch].name == "cuLaunchKernelEx"
        path = []
        p = g.op
        while p >= 0:
            path.append(t.ops[p].name)
            p = t.ops[p].parent
        assert path[:2] == ["aten::addmm", "aten::linear"] and path[-1] == t.steps[step].name
        assert t.ops[g.op].gpu_us == pytest.approx(g.dur)


def test_mlp_eager_five_kernels_compile_four_with_inductor(sample_trace: Callable[..., Path]) -> None:
    eager = load_trace(sample_trace("mlp", "eager"))
    comp = load_trace(sample_trace("mlp", "compile"))
    for t, n in ((eager, 5), (comp, 4)):
        per_step = Counter(g.step for g in t.gpu if g.cat == "kernel")
        assert per_step == {0: n, 1: n, 2: n}
    fused = [g for g in comp.gpu if g.name == "triton_poi_fused__unsafe_view_gelu_mul_0"]
    assert len(fused) == 3
    for g in fused:
        assert comp.ops[g.launch].name == "cuLaunchKernel"
        assert comp.ops[g.op].name == "triton_poi_fused__unsafe_view_gelu_mul_0"


def test_reduce_overhead_graph_replay(sample_trace: Callable[..., Path]) -> None:
    t = load_trace(sample_trace("mlp", "reduce-overhead"))
    graph = [op for op in t.ops if op.name == "cudaGraphLaunch"]
    assert len(graph) == 3
    for op in graph:
        cats = Counter(t.gpu[g].cat for g in op.gpu)
        assert cats == {"kernel": 4, "gpu_memset": 2}      # the captured graph's GEMMs, gelu·mul and memsets
        assert len({t.gpu[g].correlation for g in op.gpu}) == 1
        assert op.gpu_us == pytest.approx(sum(t.gpu[g].dur for g in op.gpu))


def test_every_sample_links_all_gpu_work(sample_trace: Callable[..., Path]) -> None:
    for workload, mode in (("linear", "eager"), ("linear", "compile"), ("mlp", "eager"), ("mlp", "compile"),
                           ("mlp", "reduce-overhead"), ("kernels-mlp", "eager")):
        t = load_trace(sample_trace(workload, mode))
        assert t.warnings == [] and t.device_name == "NVIDIA H200"
        assert all(g.launch >= 0 and g.op >= 0 and g.step >= 0 for g in t.gpu), (workload, mode)
        # GPU time of a step annotation equals its GPU work's total
        for s in t.steps:
            assert t.ops[s.op].gpu_us == pytest.approx(sum(g.dur for g in t.gpu if g.step == s.index))


def test_liger_and_fused_mlp_kernels_per_step(sample_trace: Callable[..., Path]) -> None:
    # Liger's GeGLU replaces gelu+mul (2 kernels) with one; the fused MLP puts the GeGLU in the GEMM epilogue
    for workload, n in (("kernels-mlp", 4), ("fused-mlp", 2)):
        t = load_trace(sample_trace(workload, "eager"))
        assert Counter(g.step for g in t.gpu if g.cat == "kernel") == {0: n, 1: n, 2: n}, workload
    fused = load_trace(sample_trace("fused-mlp", "eager"))
    triton = [g for g in fused.gpu if g.cat == "kernel" and not g.name.startswith("nvjet")]
    # a hand-written @triton.jit kernel has no CPU op of its own: it belongs to the annotation around it
    assert all(fused.ops[g.op].cat == "user_annotation" for g in triton) and len(triton) == 3
