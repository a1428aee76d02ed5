"""The operator view's self times by the TensorBoard profiler plugin's definition, against a reading of
the raw events written here (json + gzip, no mlptui code), on every trace of ../shared/corpus and
sample_traces.

- Device self time of an operator: the GPU work (kernels, memcpys, memsets, MTIA compute) whose launch
  call lies inside it with no other operator in between on the launching thread. Python frames and
  `record_function` annotations are not operators, so the reading simply leaves them out before nesting.
  Over the trace the device self times add up to the GPU time launched inside operators.
- Host self time: duration minus the slices (operators, annotations, launch calls) nested directly
  beneath it once Python frames are left out: a frame between an op and its children hides nothing.
- The optimizer's and the DataLoader's marks (`Optimizer.step#…`, `enumerate(DataLoader)#…`, operators in
  torch 1.9) are annotations, not operators. An op merged into a same-name parent moves its figures to a
  row of the same name, so the sums per name here need no merging (tests/test_operator_merge.py counts calls).
"""

from __future__ import annotations

import gzip
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ROOT

from mlptui.base.errors import TraceError
from mlptui.base.units import duration
from mlptui.render.profile_text import na_notes
from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
from mlptui.trace.analysis.operators.operators import operators
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.parse.load import load_trace

CORPUS = ROOT.parent / "shared" / "corpus"
TRACES = sorted(p for sub in ("hta", "real") for p in (CORPUS / sub).glob("*.json*")) \
    + sorted((ROOT / "sample_traces").glob("*.pt.trace.json*"))

OPERATOR_CATS = {"cpu_op", "Operator", "operator"}
PYTHON_CATS = {"python_function", "python_function_call"}
LAUNCH_CATS = {"cuda_runtime", "Runtime", "runtime", "cuda_driver", "Driver", "hip_runtime", "mtia_runtime",
               "xpu_runtime", "xpu_driver", "privateuse1_runtime", "privateuse1_driver"}
WORK_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
NOT_HOST = WORK_CATS | {"gpu_user_annotation", "cuda_sync", "ac2g", "Trace", "mtia_ccp_events"}


def _is_work(e: dict[str, Any]) -> bool:
    if e.get("cat") == "mtia_ccp_events":
        return e.get("name") not in ("event_record", "event_wait")     # those only order streams
    return e.get("cat") in WORK_CATS


def _ns(v: Any) -> int:
    """Integer ns. Epoch µs (old traces) times 1000 is past a double's 53 bits: scale the whole µs and
    the fraction apart."""
    whole = int(v)
    return whole * 1000 + round((float(v) - whole) * 1000)


@cache
def _events(path: Path) -> list[dict[str, Any]] | None:
    raw = path.read_bytes()
    try:
        doc = orjson.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except orjson.JSONDecodeError:
        return None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return None
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and e.get("ts") is not None]


def _nest(slices: list[dict[str, Any]]) -> list[int]:
    """Parent index (-1: none) of each slice among `slices` (one thread's), by time containment."""
    order = sorted(range(len(slices)), key=lambda i: (_ns(slices[i]["ts"]), -_ns(slices[i].get("dur", 0)), i))
    parent = [-1] * len(slices)
    stack: list[int] = []
    for i in order:
        start = _ns(slices[i]["ts"])
        end = start + _ns(slices[i].get("dur", 0))
        while stack and _ns(slices[stack[-1]]["ts"]) + _ns(slices[stack[-1]].get("dur", 0)) <= start \
                and not (_ns(slices[stack[-1]].get("dur", 0)) == 0 == end - start
                         and _ns(slices[stack[-1]]["ts"]) == start):
            stack.pop()
        for j in reversed(stack):        # the innermost open slice that contains this one
            if _ns(slices[j]["ts"]) + _ns(slices[j].get("dur", 0)) >= end:
                parent[i] = j
                break
        stack.append(i)
    return parent


def _by_thread(events: list[dict[str, Any]], keep: Any) -> dict[tuple[Any, Any], list[dict[str, Any]]]:
    out: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("cat") not in NOT_HOST and keep(e):
            out[(e.get("pid"), e.get("tid"))].append(e)
    return out


def _is_step(e: dict[str, Any]) -> bool:
    return str(e.get("name", "")).startswith("ProfilerStep#")


ANNOTATION_MARKS = ("Optimizer.step#", "Optimizer.zero_grad#", "enumerate(DataLoader)#")


def _is_operator(e: dict[str, Any]) -> bool:
    return e.get("cat") in OPERATOR_CATS and not _is_step(e) and not str(e.get("name", "")).startswith(ANNOTATION_MARKS)


def raw_device_self(events: list[dict[str, Any]]) -> dict[str, float]:
    """Per operator name: Σ duration of the GPU work launched with that operator innermost around the call."""
    work: dict[Any, float] = defaultdict(float)
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if _is_work(e) and corr is not None:
            work[corr] += float(e.get("dur", 0))
    out: dict[str, float] = defaultdict(float)
    kept = _by_thread(events, lambda e: _is_operator(e) or e.get("cat") in LAUNCH_CATS)
    for slices in kept.values():
        parent = _nest(slices)
        for i, s in enumerate(slices):
            if s.get("cat") not in LAUNCH_CATS:
                continue
            corr = (s.get("args") or {}).get("correlation")
            p = parent[i]
            while p >= 0 and slices[p].get("cat") in LAUNCH_CATS:
                p = parent[p]
            if p >= 0 and corr in work:
                out[slices[p]["name"]] += work.pop(corr)     # a graph launch's correlation counts once
    return dict(out)


def raw_host_self(events: list[dict[str, Any]]) -> dict[str, float]:
    """Per operator name: Σ (duration − the durations of the slices nested directly beneath), Python
    frames left out."""
    out: dict[str, float] = defaultdict(float)
    for slices in _by_thread(events, lambda e: e.get("cat") not in PYTHON_CATS).values():
        parent = _nest(slices)
        beneath = [0.0] * len(slices)
        for i, p in enumerate(parent):
            if p >= 0:
                beneath[p] += float(slices[i].get("dur", 0))
        for i, s in enumerate(slices):
            if _is_operator(s):
                out[s["name"]] += max(float(s.get("dur", 0)) - beneath[i], 0.0)
    return dict(out)


def _mlptui(path: Path) -> Any:
    try:
        return load_trace(path)
    except TraceError:
        return None


BIG = 1 << 20       # bytes on disk: reading these with json takes seconds each; the quick loop leaves them out


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stat().st_size > BIG else p
                                  for p in TRACES], ids=lambda p: p.name[:60])
def test_operator_self_times_match_the_raw_events(path: Path) -> None:
    events = _events(path)
    trace = _mlptui(path)
    if events is None or trace is None:
        pytest.skip("not a profiler trace (refused in one line elsewhere)")
    rows = operators(trace)
    device: dict[str, float] = defaultdict(float)
    host: dict[str, float] = defaultdict(float)
    for r in rows:
        device[r.name] += r.device_self_us
        host[r.name] += r.host_self_us
    want_device = raw_device_self(events)
    launched = sum(want_device.values())
    # The sum: the GPU time launched inside operators, to 1 %.
    assert sum(device.values()) == pytest.approx(launched, rel=0.01, abs=0.01)
    # Each operator's figure.
    for name, us in want_device.items():
        assert device.get(name, 0.0) == pytest.approx(us, rel=1e-6, abs=1e-3), name
    want_host = raw_host_self(events)
    for name, us in want_host.items():
        assert host.get(name, 0.0) == pytest.approx(us, rel=1e-6, abs=1e-2), name


def _named(name: str) -> Path:
    path = CORPUS / "real" / name
    if not path.exists():
        pytest.skip("corpus not available")
    return path


def _row_and_events(trace_name: str, op: str) -> tuple[Any, list[dict[str, Any]]]:
    """The operator view's row of `op` in a corpus trace, and the trace's raw events to check it against."""
    path = _named(trace_name)
    events = _events(path)
    assert events is not None
    return next(r for r in operators(load_trace(path)) if r.name == op), events


def test_a_custom_op_owns_the_kernels_its_python_code_launched() -> None:
    """B200 serving step recorded with_stack: `vllm::moe_forward` launches its kernels from Python code."""
    row, events = _row_and_events("AMD-AGI__TraceLens__b200_eager_trace.json.gz", "vllm::moe_forward")
    want = raw_device_self(events)["vllm::moe_forward"]
    assert want > 0.9 * row.device_total_us > 0          # nearly all of its GPU time is its own
    assert row.device_self_us == pytest.approx(want, rel=1e-6)


def test_nccl_kernels_belong_to_record_param_comms() -> None:
    """DDP rank on MI300X: the all-reduce kernels are launched under `nccl:all_reduce` annotations."""
    row, events = _row_and_events("AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz", "record_param_comms")
    want = raw_device_self(events)["record_param_comms"]
    assert want > 0
    assert row.device_self_us == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("path", [p for p in TRACES if p.stat().st_size <= BIG], ids=lambda p: p.name[:60])
def test_kernels_by_op_add_up_to_each_operators_kernel_self_time(path: Path) -> None:
    """The kernel view grouped by launching op and the operator view attribute kernels alike."""
    trace = _mlptui(path)
    if trace is None:
        pytest.skip("not a profiler trace")
    by_op: dict[str, float] = defaultdict(float)
    for k in kernel_stats(trace, by_op=True):
        if k.op != "(no op)":
            by_op[k.op or ""] += k.total_us
    kernel_self: dict[str, float] = defaultdict(float)
    for r in operators(trace):
        if r.kernel_self_us:
            kernel_self[r.name] += r.kernel_self_us
    assert by_op.keys() == kernel_self.keys()
    for name, us in kernel_self.items():
        assert by_op[name] == pytest.approx(us, rel=1e-9), name


def test_host_self_time_looks_through_python_frames() -> None:
    """B200 serving step recorded with_stack: `vllm::unified_attention_with_output` runs Python code whose
    frames sit between it and the ops it calls; those frames are its own time, not children to subtract."""
    name = "vllm::unified_attention_with_output"
    row, events = _row_and_events("AMD-AGI__TraceLens__b200_eager_trace.json.gz", name)
    frames_subtracted = _host_self_with_frames(events)[name]
    want = raw_host_self(events)[name]
    assert want > 10 * frames_subtracted        # the frames hid most of its own time
    assert row.host_self_us == pytest.approx(want, rel=1e-6)


def _host_self_with_frames(events: list[dict[str, Any]]) -> dict[str, float]:
    """Host self time with Python frames counted as children (what the frames would hide)."""
    out: dict[str, float] = defaultdict(float)
    for slices in _by_thread(events, lambda e: True).values():
        parent = _nest(slices)
        beneath = [0.0] * len(slices)
        for i, p in enumerate(parent):
            if p >= 0:
                beneath[p] += float(slices[i].get("dur", 0))
        for i, s in enumerate(slices):
            if s.get("cat") in OPERATOR_CATS:
                out[s["name"]] += max(float(s.get("dur", 0)) - beneath[i], 0.0)
    return dict(out)


def _launched_inside(events: list[dict[str, Any]], cats: set[str]) -> float:
    """GPU time whose launch call lies inside a slice of `cats` (ProfilerStep#N left out) on its thread."""
    work: dict[Any, float] = defaultdict(float)
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if _is_work(e) and corr is not None:
            work[corr] += float(e.get("dur", 0))
    total = 0.0
    kept = _by_thread(events, lambda e: (e.get("cat") in cats and not _is_step(e)) or e.get("cat") in LAUNCH_CATS)
    for slices in kept.values():
        parent = _nest(slices)
        for i, s in enumerate(slices):
            corr = (s.get("args") or {}).get("correlation")
            p = parent[i]
            while p >= 0 and slices[p].get("cat") in LAUNCH_CATS:
                p = parent[p]
            if s.get("cat") in LAUNCH_CATS and p >= 0 and corr in work:
                total += work.pop(corr)
    return total


def test_work_launched_outside_every_operator_is_said() -> None:
    """Our fused MLP: its Triton kernels are launched under a record_function annotation, no op around."""
    paths = sorted((ROOT / "sample_traces").glob("fused-mlp-eager-*.pt.trace.json*"))
    if not paths:
        pytest.skip("no fused-mlp sample")
    events = _events(paths[-1])
    assert events is not None
    outside = _launched_inside(events, OPERATOR_CATS | PYTHON_CATS | {"user_annotation"}) \
        - _launched_inside(events, OPERATOR_CATS)
    assert outside > 0
    notes = na_notes(overview(load_trace(paths[-1])))
    # written in the documented units (mlptui.base.units.duration: 368.41 µs)
    assert any(n.startswith(f"outside every operator: {duration(outside)} of device time") for n in notes), notes
