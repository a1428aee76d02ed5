"""Every trace in the corpus loads, or is refused with its reason; counts checked against an independent
`json.load` pass over the same files (kept as literals here so the test does not re-derive them)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from mlptui.base.errors import TraceError
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.model import DRIVER, KERNEL, RUNTIME
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.parse.load import load_trace

# file -> (CPU slices, GPU kernels+memcpys+memsets, kernels, ProfilerSteps, GPU events with a launch call)
EXPECTED: dict[str, tuple[int, int, int, int, int]] = {
    "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz": (94, 16, 14, 2, 16),
    "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": (15, 0, 0, 1, 0),
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz": (728, 98, 79, 0, 98),
    "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz": (45, 6, 3, 0, 6),
    "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz": (2322, 0, 0, 0, 0),
    "df_index_resolver__df_index_resolver.json.gz": (101088, 22290, 19370, 5, 22290),
    "mtia_inference_trace__mtia_inference_rank_0.json.gz": (12865, 974, 97, 0, 730),   # MTIA device lanes
    "nccl_parser_config__nccl_data.json.gz": (23128, 3774, 2700, 3, 3774),
    "negative_queue_length_values_check__rank0.json.gz": (59469, 7747, 6080, 5, 6875),
    "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": (39309, 6095, 4350, 5, 6095),
    "rank_non_gpu__rank_non_gpu.json.gz": (2467, 0, 0, 1, 0),
    "timeline_analysis__sampled_rank-0.json.gz": (3606, 1204, 1154, 2, 1204),
    "trace_compare__base__base.json.gz": (15, 18, 6, 2, 2),
    "trace_compare__test__test.json.gz": (17, 17, 5, 2, 1),
    "trace_diff__control__control.json.gz": (65486, 9450, 8568, 6, 9450),
    "trace_diff__test__test.json.gz": (52691, 15632, 9876, 6, 15018),
    "trace_file_list__inference_rank_1.json.gz": (8, 4, 4, 0, 4),
    "triton_example__triton_example.json.gz": (6, 1, 1, 1, 1),
}
REFUSED: dict[str, str] = {
    "execution_trace__benchmark_simple_add_et.json.gz": "this is a PyTorch execution trace, not a profiler trace",
}
# Big enough to take a while; loaded once per session.
_cache: dict[str, object] = {}


def _load(corpus: Path, name: str):
    if name not in _cache:
        _cache[name] = load_trace(corpus / name)
    return _cache[name]


def test_corpus_is_fully_covered(corpus_dir: Path) -> None:
    assert sorted(p.name for p in corpus_dir.glob("*.json*")) == sorted(EXPECTED | REFUSED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loads_with_exact_counts(corpus_dir: Path, name: str) -> None:
    trace = _load(corpus_dir, name)
    ops, gpu, kernels, steps, linked = EXPECTED[name]
    assert len(trace.ops) == ops
    assert len(trace.gpu) == gpu
    assert sum(1 for g in trace.gpu if g.cat == KERNEL) == kernels
    assert len(trace.steps) == steps
    assert sum(1 for g in trace.gpu if g.launch >= 0) == linked
    for g in trace.gpu:
        if g.launch >= 0:
            call = trace.ops[g.launch]
            assert call.cat in (RUNTIME, DRIVER) and call.correlation == g.correlation
            assert g.id in call.gpu
    # every op sits inside its parent (to the ns): nesting is by true containment, partial overlaps included
    assert all(op.end <= trace.ops[op.parent].end + 1e-3 and op.ts >= trace.ops[op.parent].ts - 1e-3
               for op in trace.ops if op.parent >= 0)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_reason(corpus_dir: Path, name: str) -> None:
    with pytest.raises(TraceError) as err:
        load_trace(corpus_dir / name)
    msg = str(err.value)
    assert REFUSED[name] in msg and "\n" not in msg


def test_alexnet_occupancy_queries_and_launches(corpus_dir: Path) -> None:
    trace = _load(corpus_dir, "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz")
    names = collections.Counter(op.name for op in trace.ops if op.cat == RUNTIME)
    assert names["cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"] == 18
    assert names["cudaLaunchKernel"] == 79
    stats = {s.name: s for s in launch_calls(trace)}
    occ = stats["cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"]
    assert (occ.kind, occ.count) == ("occupancy", 18)
    assert classify_call("cudaLaunchKernel") == "launch"
    assert trace.device_name == "NVIDIA A100-PG509-200"
    # torch 1.x integer µs: the first event sits at 0, the origin keeps the epoch
    assert min(op.ts for op in trace.ops) == 0.0
    assert trace.origin_us == 1695835542514261.0


def test_old_capitalised_categories_link(corpus_dir: Path) -> None:
    trace = _load(corpus_dir, "trace_file_list__inference_rank_1.json.gz")
    assert {op.cat for op in trace.ops} == {RUNTIME}
    assert all(g.cat == KERNEL and g.launch >= 0 for g in trace.gpu)
    # lower-case "external id" in these old traces
    assert [op.external_id for op in trace.ops][:4] == [0, 6294, 6294, 6294]


def test_rocm_hip_calls_link_to_kernels(corpus_dir: Path) -> None:
    trace = _load(corpus_dir, "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert trace.device_name == "AMD Radeon Graphics"
    launches = [s for s in launch_calls(trace) if s.kind == "launch"]
    assert {s.name: s.count for s in launches} == {"hipLaunchKernel": 12, "hipExtModuleLaunchKernel": 2}
    addmm = [g for g in trace.gpu if g.op >= 0 and trace.ops[g.op].name == "aten::addmm"]
    assert any(g.name.startswith("Cijk_") for g in addmm)   # hipBLASLt GEMM under aten::addmm


def test_mtia_runtime_and_many_threads(corpus_dir: Path) -> None:
    trace = _load(corpus_dir, "mtia_inference_trace__mtia_inference_rank_0.json.gz")
    assert trace.device_name == "ARTEMIS"
    assert sum(1 for op in trace.ops if op.cat == RUNTIME) == 823
    assert len(trace.threads) == 47
    assert trace.meta["device_side_events"] == 291 + 48      # event_record / event_wait: ordering, not work


def test_cpu_only_trace(corpus_dir: Path) -> None:
    trace = _load(corpus_dir, "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    assert trace.gpu == [] and trace.device is None
    assert trace.meta["baseTimeNanoseconds"] == 1719853884000000000
    assert {t.name for t in trace.threads} == {"thread 3553 (pt_main_thread)", "thread 1074 (pt_main_thread)",
                                              "thread 3554 (pt_main_thread)"}
