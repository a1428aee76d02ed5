"""Advice fits the hardware: every rule says which device types and architectures it applies to, the
device it judged and the threshold that fired it; Volta gets no TF32/bf16 advice (it has neither), an
accelerator whose launch call waits for the work is not launch-bound, and a memcpy rule needs memcpy
to take a share of the step time that matters. Raw events are read here with json + gzip only."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, trace_bytes, x
from test_overview_all_steps import _ns, _union, raw_windows

from mlptui.trace.analysis.advice.recommendations import MEMCPY_SHARE
from mlptui.trace.parse.load import load_trace, load_trace_bytes
from mlptui.viewmodels.profile_views import build_profile

CORPUS = ROOT.parent / "shared" / "corpus"


def _doc(path: Path) -> dict[str, Any]:
    if not path.exists():
        pytest.skip("corpus not available")
    return json.loads(gzip.decompress(path.read_bytes()))


def _rules(trace: Any) -> dict[str, dict[str, Any]]:
    return {r.rule: r for r in build_profile(trace).recommendations}


@pytest.mark.parametrize("name", ["real/pytorch__kineto__worker0.1623143089861.pt.trace.json.gz",
                                  "hta/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"])
def test_volta_is_told_fp16_not_tf32_or_bf16(name: str) -> None:
    path = CORPUS / name
    props = _doc(path)["deviceProperties"][0]
    assert (props["computeMajor"], props["computeMinor"]) == (7, 0)        # Volta
    rule = _rules(load_trace(path))["tensor_cores"]
    assert "fp16" in rule.message and "TF32" not in rule.message and "bf16" not in rule.message
    assert rule.figures["device"] == "NVIDIA sm_70"
    assert "sm_70 and newer" in rule.applies_to
    assert rule.figures["share"] >= rule.figures["threshold"]


def _blocking_accelerator(device_process: str) -> bytes:
    """20 GEMMs, each submitted by a call that returns only after the device ran it."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 17, "tid": 0, "args": {"name": device_process}}]
    for i in range(20):
        t0 = 100.0 * i
        events += [x("aten::mm", "cpu_op", t0, 60, pid=1, tid=1),
                   x("runFunction - job_prep_and_submit_for_execution", "mtia_runtime", t0 + 5, 50, pid=1, tid=1,
                     correlation=1000 + i),
                   x("fc-dtype_Float", "mtia_ccp_events", t0 + 10, 30, pid=17, tid=3, correlation=1000 + i)]
    return trace_bytes(events)


def test_an_accelerator_whose_launch_waits_is_not_launch_bound() -> None:
    raw = json.loads(_blocking_accelerator("MTIA 17"))["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in raw if e.get("cat") == "mtia_runtime"}
    work = [e for e in raw if e.get("cat") == "mtia_ccp_events"]
    inside = [e for e in work if calls[e["args"]["correlation"]]["ts"] <= e["ts"]
              and e["ts"] + e["dur"] <= calls[e["args"]["correlation"]]["ts"] + calls[e["args"]["correlation"]]["dur"]]
    assert len(inside) == len(work) >= 10
    rules = _rules(load_trace_bytes(_blocking_accelerator("MTIA 17"), source="mtia.json"))
    assert not {"launch_bound", "tensor_cores", "small_kernels"} & set(rules)


def test_a_gpu_kernel_inside_its_blocking_launch_is_not_launch_overhead() -> None:
    trace = load_trace_bytes(_blocking_accelerator("GPU 17"), source="sync.json")
    rules = _rules(trace)
    assert "launch_bound" not in rules         # every kernel ran inside its own launch call


def test_no_memcpy_advice_at_a_negligible_share() -> None:
    """HTA's sampled rank: host↔device copies inside the steps, but memcpy takes almost none of the time."""
    path = CORPUS / "hta" / "timeline_analysis__sampled_rank-0.json.gz"
    events = [e for e in _doc(path)["traceEvents"] if e.get("ph") == "X"]
    pieces = _union(raw_windows(events))

    def union(cats: set[str]) -> list[tuple[int, int]]:
        return _union([(_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))) for e in events if e.get("cat") in cats])

    kernels = union({"kernel", "Kernel"})
    copies = union({"gpu_memcpy", "Memcpy"})

    def inside(a: int, b: int, spans: list[tuple[int, int]]) -> int:
        return sum(max(0, min(b, y) - max(a, x_)) for x_, y in spans)

    # memcpy time in the windows that no kernel covers: the breakdown's memcpy share
    memcpy_only = sum(inside(max(a, x_), min(b, y), [(x_, y)]) - inside(max(a, x_), min(b, y), kernels)
                      for a, b in copies for x_, y in pieces if min(b, y) > max(a, x_))
    share = memcpy_only / sum(b - a for a, b in pieces)
    assert copies and share < MEMCPY_SHARE
    rules = _rules(load_trace(path))
    assert "memcpy" not in rules


@pytest.mark.parametrize("path", sorted((ROOT / "sample_traces").glob("*.pt.trace.json*"))
                         + [CORPUS / "real" / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz"],
                         ids=lambda p: p.name[:40])
def test_every_rule_says_what_it_applies_to_and_its_threshold(path: Path) -> None:
    if not path.exists():
        pytest.skip("corpus not available")
    for rule in build_profile(load_trace(path)).recommendations:
        figures = rule.figures
        assert rule.applies_to and figures["device"] and "threshold" in figures, rule.rule
        if "share" in figures:
            assert figures["share"] >= figures["threshold"], rule.rule
        if rule.rule == "tensor_cores" and figures["device"].startswith("AMD"):
            assert "TF32" not in rule.message


@pytest.mark.slow
def test_the_mtia_training_trace_gets_no_gpu_advice() -> None:
    """HTA's MTIA rank: every submission call blocks until its device work is done."""
    path = CORPUS / "real" / "facebookresearch__HolisticTraceAnalysis__mtia_trace_single_rank_mtia_rank_0.json.gz"
    events = [e for e in _doc(path)["traceEvents"] if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") == "mtia_runtime" and "correlation" in (e.get("args") or {})}
    work = [e for e in events if e.get("cat") == "mtia_ccp_events" and (e.get("args") or {}).get("correlation") in calls]
    inside = [e for e in work if calls[e["args"]["correlation"]]["ts"] <= e["ts"]
              and e["ts"] + e["dur"] <= calls[e["args"]["correlation"]]["ts"] + calls[e["args"]["correlation"]]["dur"]]
    assert len(inside) > len(work) / 2
    rules = _rules(load_trace(path))
    assert not {"launch_bound", "tensor_cores", "small_kernels"} & set(rules)
    assert all(r.figures["device"] == "MTIA" for r in rules.values())
