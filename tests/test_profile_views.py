"""The profiler views (overview, breakdown, operators, completed kernels, memory, modules,
recommendations) on real traces, each checked against a plain reading of the same file."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, SAMPLES

from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
from mlptui.trace.analysis.kernels.tensor_cores import tc_eligible, uses_tensor_cores
from mlptui.trace.analysis.memory.memory import memory_report
from mlptui.trace.analysis.operators.modules import module_tree
from mlptui.trace.analysis.operators.operators import call_sites, operators
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.analysis.steps.breakdown import CATEGORIES, breakdown, step_windows
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.parse.load import load_trace

REAL = ROOT.parent / "shared" / "corpus" / "real"
V100 = "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
BERT = "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz"


def real(name: str) -> Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"real-trace corpus not found at {REAL}")
    return path


def raw_events(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return orjson.loads(data)["traceEvents"]


@pytest.fixture(scope="module")
def v100():
    return load_trace(real(V100))


def test_v100_resnet_breakdown_shows_the_dataloader(v100) -> None:
    ov = overview(v100)
    total = ov.total
    parts = total.breakdown_us
    # single-process DataLoader (num_workers=0): its __next__ is a large share of the training loop
    assert parts["dataloader"] / total.duration_us > 0.2
    assert parts["kernel"] > parts["memcpy"] > 0
    assert 0 < total.gpu_util < 1
    assert total.sm_efficiency <= total.gpu_util
    assert ov.devices[0].name == "Tesla V100-DGXS-32GB" and ov.devices[0].arch == "sm_70"


def test_v100_cudnn_convolutions_are_tensor_core_eligible_but_ran_fp32(v100) -> None:
    ops = {o.name: o for o in operators(v100)}
    conv = ops["aten::cudnn_convolution"]
    assert conv.tc_eligible and conv.calls > 0 and conv.device_self_us > 0
    # fp32 training on a V100: cuDNN picked the single-precision kernels (scudnn, implicit sgemm)
    assert conv.tc_share == 0.0
    names = {v100.gpu[k].name for o in conv.ops for k in v100.ops[o].gpu}
    assert any("scudnn" in n or "implicit_convolve_sgemm" in n for n in names)
    assert not any(uses_tensor_cores(n) for n in names)
    assert overview(v100).total.tensor_core_share == 0.0
    rules = {r.rule: r for r in summarize(v100).recommendations}
    assert rules["dataloader"].figures["share"] > 0.2
    assert rules["tensor_cores"].figures["share"] > 0.1
    sites = dict(call_sites(v100, conv.ops))
    assert any("aten::_convolution" in s for s in sites)


def test_v100_kernel_stats_match_a_plain_reading(v100) -> None:
    events = [e for e in raw_events(real(V100)) if e.get("cat") == "Kernel"]
    name = "volta_sgemm_64x64_nt"
    mine = [e for e in events if e["name"] == name]
    row = next(k for k in kernel_stats(v100) if k.name == name)
    assert row.calls == len(mine) and not row.tensor_cores
    assert row.total_us == pytest.approx(sum(e["dur"] for e in mine))
    assert row.min_us == min(e["dur"] for e in mine) and row.max_us == max(e["dur"] for e in mine)
    weighted = sum(e["args"]["est. achieved occupancy %"] * e["dur"] for e in mine) / sum(e["dur"] for e in mine)
    assert row.achieved_occupancy == pytest.approx(weighted / 100)
    by_op = kernel_stats(v100, by_op=True)
    assert sum(k.calls for k in by_op if k.name == name) == len(mine)


def test_old_trace_memory_curve_is_the_running_sum_of_bytes(v100) -> None:
    rep = memory_report(v100)
    assert rep is not None
    cuda = next(d for d in rep.devices if d.kind == "cuda")
    assert not cuda.totals_recorded       # torch 1.9: no Total Allocated in the events
    running, peak = 0, 0
    for e in raw_events(real(V100)):
        if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1:
            running += e["args"]["Bytes"]
            peak = max(peak, running)
    assert cuda.peak_allocated == peak and cuda.allocated[-1] == running


def test_bert_with_stack_gives_the_module_tree() -> None:
    trace = load_trace(real(BERT))
    rows = module_tree(trace)
    assert rows is not None
    assert rows[0].path == ("BertLMHeadModel_0",)
    paths = {r.path for r in rows}
    assert ("BertLMHeadModel_0", "BertModel_0", "BertEmbeddings_0") in paths
    for r in rows:                          # a child's parent row is listed, and contains it in time
        if len(r.path) > 1:
            assert r.path[:-1] in paths
    root = rows[0]
    children = [r for r in rows if len(r.path) == 2]
    assert sum(c.host_us for c in children) <= root.host_us
    assert 0 < root.device_us <= sum(g.dur for g in trace.gpu)
    assert summarize(trace).modules[0].path == ["BertLMHeadModel_0"]


def test_bert_memory_peak_is_the_largest_total_allocated() -> None:
    path = real(BERT)
    rep = memory_report(load_trace(path))
    assert rep is not None
    cuda = next(d for d in rep.devices if d.kind == "cuda")
    plain = max(e["args"]["Total Allocated"] for e in raw_events(path)
                if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1)
    assert cuda.totals_recorded and cuda.peak_allocated == plain
    assert cuda.peak_op and cuda.peak_op != "(no op)"
    assert any(o.name == "aten::addmm" and o.allocs > 0 for o in rep.ops)


def test_training_sample_memory_peak_and_modules() -> None:
    found = sorted(SAMPLES.glob("mlp-train-*.pt.trace.json.gz"))
    if not found:
        pytest.skip("no training sample recorded")
    path = found[-1]
    trace = load_trace(path)
    rep = memory_report(trace)
    assert rep is not None
    cuda = next(d for d in rep.devices if d.kind == "cuda")
    plain = max(e["args"]["Total Allocated"] for e in raw_events(path)
                if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1)
    assert cuda.peak_allocated == plain
    names = [r.name for r in module_tree(trace) or []]
    assert names[:1] == ["SimpleGeGLUMLP_0"] and {"Linear_0", "Linear_1", "Linear_2"} <= set(names)
    kernels = {g.name for g in trace.gpu}
    assert any("multi_tensor_apply" in k for k in kernels)     # AdamW(foreach=True)
    ops = {o.name for o in operators(trace)}
    assert "aten::mm" in ops and any(n.startswith("autograd::engine::evaluate_function: MmBackward") for n in ops)


def _all_traces() -> list[Path]:
    folders = [REAL, ROOT.parent / "shared" / "corpus" / "hta", SAMPLES]
    found = [p for f in folders if f.is_dir() for p in sorted(f.iterdir())
             if p.name.endswith((".json", ".json.gz")) and "manifest" not in p.name]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("path", _all_traces(), ids=lambda p: p.name[:60])
def test_every_step_breakdown_sums_exactly_to_its_window(path: Path) -> None:
    try:
        trace = load_trace(path)
    except Exception as exc:            # the corpus's non-traces are refused by the loader
        pytest.skip(f"not a trace: {exc}")
    windows = step_windows(trace)
    rows = breakdown(trace, windows)
    assert len(rows) == len(windows) >= 1
    for w, row in zip(windows, rows, strict=True):
        assert set(row) == set(CATEGORIES)
        assert sum(row.values()) == w.dur_ns
        assert all(v >= 0 for v in row.values())
    for step in overview(trace).steps:
        assert sum(step.breakdown_us.values()) == pytest.approx(step.duration_us, abs=1e-6)


def test_breakdown_on_a_sample_sums_exactly() -> None:
    path = sorted(SAMPLES.glob("mlp-eager-*.pt.trace.json.gz"))[-1]
    trace = load_trace(path)
    windows = step_windows(trace)
    for w, row in zip(windows, breakdown(trace, windows), strict=True):
        assert sum(row.values()) == w.dur_ns and row["kernel"] > 0 and row["runtime"] > 0


def test_tensor_core_names() -> None:
    assert uses_tensor_cores("nvjet_tst_64x8_64x16_4x1_v_bz_TNT")
    assert uses_tensor_cores("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_"
                             "execute_segment_k_off_kernel__5x_cublas")
    assert uses_tensor_cores("volta_h884gemm_64x64_ldg8_nn")
    assert uses_tensor_cores("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0")
    assert not uses_tensor_cores("volta_sgemm_64x64_nt")
    assert not uses_tensor_cores("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>")
    assert tc_eligible("aten::addmm") and tc_eligible("MmBackward0") and not tc_eligible("aten::add")


def test_summary_json_has_the_profiler_sections() -> None:
    path = sorted(SAMPLES.glob("mlp-eager-*.pt.trace.json.gz"))[-1]
    d = orjson.loads(orjson.dumps(summarize(load_trace(path))))
    assert set(d["overview"]) >= {"devices", "steps", "total"}
    step = d["overview"]["steps"][0]
    assert set(step) >= {"name", "gpu_util", "sm_efficiency", "achieved_occupancy", "tensor_core_share",
                         "breakdown_us"}
    assert set(step["breakdown_us"]) == set(CATEGORIES)
    assert d["memory"] is None and d["modules"] is None     # recorded without memory or modules
    op = d["operators"][0]
    assert set(op) == {"name", "input_shapes", "calls", "host_self_us", "host_total_us", "device_self_us",
                       "device_total_us", "tc_eligible", "tc_share"}
    gemm = next(o for o in d["operators"] if o["name"] == "aten::mm")
    assert gemm["tc_eligible"] and gemm["tc_share"] == 1.0          # bf16 nvjet GEMMs on an H200
    assert all({"rule", "message", "figures"} <= set(r) for r in d["recommendations"])
    by_shape = operators(load_trace(path), by_shapes=True)
    assert any(o.input_shapes and o.input_shapes != "[]" for o in by_shape if o.name == "aten::mm")
