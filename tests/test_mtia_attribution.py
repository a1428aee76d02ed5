"""MTIA: every pane attributes device work by the same link, and says what could not be linked.

MTIA's runtime submits compute through `runFunction - job_prep_and_submit_for_execution`, a call of no
name any launch rule knows; it is a launch because the device work it launched carries its correlation.
The steps pane, the launch-calls pane and the findings count those calls alike. Device work with no
launch call and no op (the DMA copies) is named in one line with its count and time. Raw events are
read here with json + gzip only.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from conftest import ROOT

from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.analysis.steps.steps import step_stats
from mlptui.trace.parse.load import load_trace
from mlptui.viewmodels.profile_views import build_profile, overview_text

MTIA = ROOT.parent / "shared" / "corpus" / "hta" / "mtia_inference_trace__mtia_inference_rank_0.json.gz"
BOOKKEEPING = {"event_record", "event_wait"}      # order streams, run nothing


def _events() -> list[dict[str, Any]]:
    if not MTIA.exists():
        pytest.skip("corpus not available")
    return [e for e in json.loads(gzip.decompress(MTIA.read_bytes()))["traceEvents"] if e.get("ph") == "X"]


def _device_work(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("cat") == "mtia_ccp_events" and e["name"] not in BOOKKEEPING]


def test_the_submit_call_is_a_launch_in_every_pane() -> None:
    events = _events()
    compute = {(e.get("args") or {}).get("correlation") for e in _device_work(events)
               if not e["name"].startswith("dma")} - {None}
    runtime = [e for e in events if e.get("cat") == "mtia_runtime"]
    launching = [e for e in runtime if (e.get("args") or {}).get("correlation") in compute]
    names = {e["name"] for e in launching}
    assert launching and all("LaunchKernel" not in n for n in names)
    # A call name is a launch once one of its calls launched device compute; all its calls count then,
    # as every cudaLaunchKernel does whether or not its kernel was recorded.
    submits = [e for e in runtime if e["name"] in names]
    trace = load_trace(MTIA)
    assert step_stats(trace, None).launches == len(submits)
    kinds = {c.name: (c.kind, c.count) for c in launch_calls(trace)}
    for name in names:
        assert kinds[name] == ("launch", sum(e["name"] == name for e in submits))
    line = next(line for line in trace_findings(trace) if "launch calls:" in line)
    assert f"{next(iter(names))} ×{len(submits)}" in line


def test_what_could_not_be_linked_is_said_once_with_its_count_and_time() -> None:
    events = _events()
    calls = {(e.get("args") or {}).get("correlation") for e in events if e.get("cat") == "mtia_runtime"} - {None}
    ops = {(e.get("args") or {}).get("External id") for e in events
           if e.get("cat") in ("cpu_op", "user_annotation")} - {None}
    lost = [e for e in _device_work(events)
            if (e.get("args") or {}).get("correlation") not in calls
            and (e.get("args") or {}).get("External id") not in ops]
    assert lost
    work = _device_work(events)
    us = sum(float(e["dur"]) for e in lost)
    trace = load_trace(MTIA)
    want = f"not linked: {len(lost):,} of {len(work):,} device ops ({us / 1e3:.2f} ms of device time"
    assert any(line.startswith(want) for line in trace_findings(trace))
    assert want in overview_text(build_profile(trace), 200).plain
