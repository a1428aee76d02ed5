"""The profiler views scoped to one step, checked against a plain filter of the raw events (the training
sample, two steps) and against the figures written into a small synthetic trace (two steps, memory on
two devices, kernels under nn.Module frames)."""

from __future__ import annotations

import gzip
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
from conftest import SAMPLES, trace_bytes
from scoped_trace import GEMM_US, ODD, RELU_US, memory_event, scoped_events, write_scoped_trace
from test_operator_merge import merged_inner

from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
from mlptui.trace.analysis.memory.memory import memory_report, memory_span_us
from mlptui.trace.analysis.operators.modules import module_tree
from mlptui.trace.analysis.operators.operators import operators_in_steps
from mlptui.trace.analysis.report.profile_sections import memory_section, profile_sections
from mlptui.trace.analysis.steps.breakdown import step_windows
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.parse.load import load_trace

TRAIN = sorted(SAMPLES.glob("mlp-train-*.pt.trace.json.gz"))[-1]


def raw_events(path: Path) -> list[dict]:
    return orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


@pytest.fixture(scope="module")
def train():
    return load_trace(TRAIN)


@pytest.fixture(scope="module")
def scoped(tmp_path_factory):
    return load_trace(write_scoped_trace(tmp_path_factory.mktemp("scoped")))


def test_training_sample_has_several_steps(train) -> None:
    assert len(train.steps) >= 2


@pytest.mark.parametrize("step", [0, 1])
def test_one_step_operators_and_kernels_are_a_filter_of_the_raw_events(train, step: int) -> None:
    events = raw_events(TRAIN)
    marks = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    mark = marks[step]
    assert train.steps[step].name == mark["name"]
    lo, hi = mark["ts"], mark["ts"] + mark["dur"]
    calls: dict[str, int] = defaultdict(int)
    host: dict[str, float] = defaultdict(float)
    merged = merged_inner([e for e in events if e.get("ph") == "X"])     # one call with a same-name parent
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and lo <= e["ts"] < hi and id(e) not in merged:
            calls[e["name"]] += 1
            host[e["name"]] += e["dur"]
    rows = operators_in_steps(train, step=step)
    assert {r.name: r.calls for r in rows} == dict(calls)
    for r in rows:
        assert r.host_total_us == pytest.approx(host[r.name], abs=1e-3)
    # kernels launched in the step: their launch call (same correlation id) starts inside its window
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernel_us: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "kernel" and lo <= launch_ts.get(e["args"].get("correlation"), -1) < hi:
            kernel_us[e["name"]] += e["dur"]
    stats = kernel_stats(train, step)
    assert {k.name: round(k.total_us, 3) for k in stats} == {n: round(us, 3) for n, us in kernel_us.items()}
    # and the two steps together are the all-steps scope
    both = {r.name: r.calls for r in operators_in_steps(train)}
    one = {r.name: r.calls for r in operators_in_steps(train, step=0)}
    two = {r.name: r.calls for r in operators_in_steps(train, step=1)}
    assert both == {n: one.get(n, 0) + two.get(n, 0) for n in one.keys() | two.keys()}


def test_one_step_overview_covers_only_its_window(train) -> None:
    windows = step_windows(train)
    for w in windows:
        total = overview(train, step=w.index).total
        assert total.name == w.name
        assert total.duration_us == pytest.approx(w.dur_ns / 1000)
        assert sum(total.breakdown_us.values()) == pytest.approx(w.dur_ns / 1000)
    every = overview(train)
    assert [s.name for s in every.steps] == [w.name for w in windows]


def test_one_step_memory_holds_only_the_events_of_its_window(train) -> None:
    (start, end) = next((w.start_ns / 1000, w.end_ns / 1000) for w in step_windows(train) if w.index == 1)
    inside = [m for m in train.memory if start <= m.ts <= end]
    report = memory_report(train, 1)
    assert report is not None and report.events == len(inside) > 0
    cuda = next(d for d in report.devices if d.label == "cuda:0")
    totals = [train.args(m.event)["Total Allocated"] for m in inside if train.args(m.event)["Device Type"] == 1]
    assert cuda.peak_allocated == max(totals)
    assert min(cuda.ts) >= start and max(cuda.ts) <= end


def test_synthetic_steps_give_the_figures_written_into_them(scoped) -> None:
    for step in (0, 1):
        kernels = {k.name: (k.calls, k.total_us) for k in kernel_stats(scoped, step)}
        assert kernels == {"ampere_sgemm_128x64_tn": (1, GEMM_US[step]), "relu_kernel": (1, RELU_US[step])}
        ops = {o.name: o.calls for o in operators_in_steps(scoped, step=step)}
        assert ops == {"aten::mm": 1, ODD: 1}
        sections = profile_sections(scoped, step)
        assert sections.overview.total.name == f"ProfilerStep#{step + 1}"
        assert sections.overview.total.breakdown_us["kernel"] == GEMM_US[step] + RELU_US[step]
    every = {k.name: k.total_us for k in kernel_stats(scoped, steps_only=True)}
    assert every == {"ampere_sgemm_128x64_tn": sum(GEMM_US), "relu_kernel": sum(RELU_US)}


def test_memory_of_every_device_and_unfreed_per_scope(scoped) -> None:
    whole = memory_report(scoped)
    assert whole is not None
    assert [(d.label, d.peak_allocated) for d in whole.devices] == [("cuda:0", 2000), ("cuda:1", 1000)]
    assert memory_section(whole).devices[1].id == 1
    # step 2's blocks are never freed; step 1's are freed in step 2, so its scope leaves nothing unfreed
    assert dict(whole.unfreed) == {"aten::mm": 2000, ODD: 500}
    first = memory_report(scoped, 0)
    assert first is not None and first.unfreed == [] and first.events == 2
    assert [(d.label, d.peak_allocated) for d in first.devices] == [("cuda:0", 1000), ("cuda:1", 500)]
    second = memory_report(scoped, 1)
    assert second is not None and second.events == 4 and dict(second.unfreed) == {"aten::mm": 2000, ODD: 500}


def test_module_rows_list_their_ops_and_the_kernels_launched_beneath(scoped) -> None:
    rows = {r.path: r for r in module_tree(scoped) or []}
    net, linear = rows[("Net_0",)], rows[("Net_0", "Linear_0")]
    assert net.kernels == {"ampere_sgemm_128x64_tn": [2, sum(GEMM_US)], "relu_kernel": [2, sum(RELU_US)]}
    assert linear.kernels == {"ampere_sgemm_128x64_tn": [2, sum(GEMM_US)]}
    assert net.ops == {"aten::mm": [2, sum(GEMM_US)], ODD: [2, sum(RELU_US)]}
    one = {r.path: r for r in module_tree(scoped, 1) or []}
    assert one[("Net_0",)].kernels == {"ampere_sgemm_128x64_tn": [1, GEMM_US[1]], "relu_kernel": [1, RELU_US[1]]}


def test_training_sample_module_kernels_add_up_to_its_device_time(train) -> None:
    rows = module_tree(train) or []
    assert rows
    for row in rows:
        kernel_us = sum(us for _, us in row.kernels.values())
        # device time also counts memcpys and memsets; the kernels are most of it and never more
        assert 0 < kernel_us <= row.device_us + 1e-6


def test_all_steps_memory_covers_the_steps_span_only(tmp_path: Path) -> None:
    """Allocations before the first step (model set-up) and after the last (teardown) are out of the
    all-steps scope, as every other view's events are; a free after the steps still frees."""
    events = scoped_events() + [
        memory_event(-500.0, 0, 0x9000, 5000, 5000),           # before the steps: a larger total
        memory_event(2500.0, 0, 0x9100, 8000, 10000),          # after them: the largest total
        memory_event(2600.0, 0, 0x1001, -2000, 8000),          # step 2's device-0 block, freed after
    ]
    path = tmp_path / "outside.pt.trace.json"
    path.write_bytes(trace_bytes(events))
    trace = load_trace(path)
    start, end = memory_span_us(trace, None)
    inside = [m for m in trace.memory if start <= m.ts <= end]
    assert len(inside) == len(trace.memory) - 3 > 0
    report = memory_report(trace)
    assert report is not None and report.events == len(inside)
    assert [(d.label, d.peak_allocated) for d in report.devices] == [("cuda:0", 2000), ("cuda:1", 1000)]
    assert all(start <= ts <= end for d in report.devices for ts in d.ts)
    assert dict(report.unfreed) == {ODD: 500}
    assert profile_sections(trace).memory == memory_section(report)
    # the steps' scope is the union of the steps' windows
    windows = step_windows(trace)
    assert (start, end) == (windows[0].start_ns / 1000, windows[-1].end_ns / 1000)


def test_all_steps_without_memory_inside_the_steps_has_none(tmp_path: Path) -> None:
    events = [e for e in scoped_events() if e["name"] != "[memory]"] + [memory_event(-500.0, 0, 0x9000, 5000, 5000)]
    path = tmp_path / "before.pt.trace.json"
    path.write_bytes(trace_bytes(events))
    trace = load_trace(path)
    assert trace.memory and trace.steps
    assert memory_report(trace) is None
