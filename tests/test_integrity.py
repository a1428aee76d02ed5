"""A trace that cannot be trusted says so: the integrity problems, each counted against a reading of the raw
events written here (json + gzip, no mlptui code), on small crafted traces (a cut file, launches whose
kernels are missing from the first step, a kernel before its launch) and on the real traces that show
each case; the verdicts that rest on a broken part read "unknown"; `summary` prints the trust banner
first and `mlptui check` takes `integrity = "ok"`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, find_sample, trace_bytes, x

from mlptui.cli import main
from mlptui.commands.summary import format_report
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.analysis.steps.integrity import FIRST_STEP_LOSS, integrity
from mlptui.trace.analysis.steps.steps import all_step_stats, step_stats
from mlptui.trace.parse.load import load_trace, load_trace_bytes
from mlptui.trace.reports.summary import IntegrityReport

LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "Runtime")


def _raw(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        pytest.skip("corpus not available")
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _problems(trace: Any) -> dict[str, Any]:
    return {p.kind: p for p in integrity(trace).problems}


# ---------------------------------------------------------------- crafted traces

def _step(n: int, t0: float, kernels: bool, corr0: int) -> list[dict[str, Any]]:
    """A step of two launches; their kernels only when `kernels`."""
    events = [x(f"ProfilerStep#{n}", "user_annotation", t0, 100), x("aten::mm", "cpu_op", t0 + 10, 60)]
    for k in range(2):
        corr = corr0 + k
        events.append(x("cudaLaunchKernel", "cuda_runtime", t0 + 20 + 20 * k, 5, correlation=corr))
        if kernels:
            events.append(x("gemm_kernel", "kernel", t0 + 30 + 20 * k, 8, pid=0, tid=7, correlation=corr,
                            stream=7, device=0))
    return events


def _launches_without_kernels(events: list[dict[str, Any]]) -> dict[str, int]:
    """Per step name: launch calls whose correlation no kernel carries."""
    ran = {e["args"]["correlation"] for e in events if e.get("cat") == "kernel"}
    steps = [e for e in events if str(e["name"]).startswith("ProfilerStep#")]
    out: dict[str, int] = {}
    for e in events:
        if e["name"] == "cudaLaunchKernel" and e["args"]["correlation"] not in ran:
            step = next(s["name"] for s in steps if s["ts"] <= e["ts"] < s["ts"] + s["dur"])
            out[step] = out.get(step, 0) + 1
    return out


def _first_step_lost(**top: Any) -> tuple[Any, list[dict[str, Any]]]:
    events = _step(1, 0, False, 100) + _step(2, 200, True, 200) + _step(3, 400, True, 300)
    return load_trace_bytes(trace_bytes(events, **top), source="first-step.json"), events


def test_launches_without_kernels_in_the_first_step_name_the_profilers_loss() -> None:
    trace, events = _first_step_lost(cuda_runtime_version=12080)
    want = _launches_without_kernels(events)
    assert want == {"ProfilerStep#1": 2}
    problem = _problems(trace)["launches_without_device_work"]
    assert problem.count == sum(want.values())
    assert "ProfilerStep#1 2" in problem.detail and FIRST_STEP_LOSS in problem.detail
    verdicts = [s.verdict for s in all_step_stats(trace)]
    assert verdicts[0] == "unknown"                   # it read cpu-only: its kernels are simply not in the file
    assert verdicts[1:] == ["overhead-bound"] * 2     # 16 µs of kernels in a 100 µs window
    assert step_stats(trace, None).verdict == "unknown"
    assert not integrity(trace).ok


def test_the_first_step_pattern_is_not_named_on_cuda_13_1() -> None:
    trace, _ = _first_step_lost(cuda_runtime_version=13010)
    problem = _problems(trace)["launches_without_device_work"]
    assert problem.count == 2 and FIRST_STEP_LOSS not in problem.detail


def test_a_kernel_before_its_launch_is_a_clock_problem() -> None:
    events = _step(1, 0, True, 100)
    kernel = next(e for e in events if e["cat"] == "kernel")
    launch = next(e for e in events if e.get("args", {}).get("correlation") == kernel["args"]["correlation"]
                  and e["cat"] == "cuda_runtime")
    kernel["ts"] = launch["ts"] - 3                  # the device clock runs behind the host's
    trace = load_trace_bytes(trace_bytes(events), source="skew.json")
    early = [e for e in events if e["cat"] == "kernel" and e["ts"] < next(
        c["ts"] for c in events if c["cat"] == "cuda_runtime" and c["args"]["correlation"] == e["args"]["correlation"])]
    clock = _problems(trace)["clock"]
    assert clock.count == len(early) == 1
    assert "start before their launch call (by up to 3.000 µs)" in clock.detail


def test_a_sound_trace_has_no_problem() -> None:
    events = _step(1, 0, True, 100) + _step(2, 200, True, 200)
    trace = load_trace_bytes(trace_bytes(events), source="sound.json")
    assert integrity(trace).report() == IntegrityReport(ok=True, problems=[], notes=[])


# ---------------------------------------------------------------- a cut file

def _cut(data: bytes) -> bytes:
    """The first 30 % of a trace, as a run killed while writing it leaves it: the sample's kernels come
    later in the file, so what is left holds launch calls and no GPU work."""
    return data[: int(len(data) * 0.3)]


@pytest.mark.parametrize("how", ["json", "gzip"])
def test_a_cut_trace_has_no_definite_verdict(how: str) -> None:
    path = find_sample("mlp", "eager")
    full = gzip.decompress(path.read_bytes())
    data = _cut(full) if how == "json" else _cut(gzip.compress(full))
    trace = load_trace_bytes(data, source=f"cut.{how}")
    report = summarize(trace)
    assert report.integrity.ok is False
    assert report.integrity.problems[0].kind == "truncated"
    assert {s.verdict for s in report.steps} | {report.total.verdict} == {"unknown"}
    text = format_report(report, "text")
    first, *rest = text.splitlines()
    assert first.startswith("⚠ not to be trusted as is: the file is cut")
    assert "verdict: cpu-only" not in text and not any(line.rstrip().endswith("cpu-only") for line in rest)
    assert any(line.startswith("verdict: unknown (") for line in rest)
    assert format_report(report, "md").startswith("> **⚠ not to be trusted as is: the file is cut")


def test_the_uncut_sample_is_sound() -> None:
    trace = load_trace(find_sample("mlp", "eager"))
    assert integrity(trace).ok
    assert not format_report(summarize(trace), "text").startswith("⚠")


# ---------------------------------------------------------------- real traces

REAL = CORPUS.parent / "real"
HTA = CORPUS


def test_launches_of_a_trace_without_gpu_activity() -> None:
    """zoology: 260 launch calls and no GPU event at all."""
    path = REAL / "HazyResearch__zoology__trace.json"
    events = _raw(path)
    launches = [e for e in events if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS
                and "LaunchKernel" in e["name"]]
    assert not any(e.get("cat") == "kernel" for e in events)
    problem = _problems(load_trace(path))["launches_without_device_work"]
    assert problem.count == len(launches) == 260
    assert "no GPU activity" in problem.detail


def test_device_work_without_a_launch_call() -> None:
    """DLRM rank 1: kernels whose correlation no runtime call carries."""
    path = REAL / "facebookresearch__param__dlrm_kineto_worker1_step_12.1694128201556.pt.trace.json.gz"
    events = _raw(path)
    calls = {e["args"].get("correlation") for e in events if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS
             and "args" in e}
    work = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    lost = [e for e in work if e["args"].get("correlation") not in calls]   # their flows end at no call
    problem = _problems(load_trace(path))["device_work_without_launch"]
    assert problem.count == len(lost) > 0


def test_slices_after_the_profilers_span_are_a_clock_problem() -> None:
    """ns-resolution HTA trace: cudaEventQuery calls recorded after the profiler's own span ended."""
    path = HTA / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    events = _raw(path)
    span = next(e for e in events if e.get("cat") == "Trace")
    lo, hi = span["ts"], span["ts"] + span["dur"]
    outside = [e for e in events if e.get("ph") == "X" and e.get("cat") not in ("Trace", "gpu_user_annotation")
               and (e["ts"] < lo - 1e-3 or e["ts"] + e.get("dur", 0) > hi + 1e-3)]
    clock = _problems(load_trace(path))["clock"]
    assert clock.count == len(outside) == 5
    assert "outside the profiler's own span" in clock.detail


def test_a_step_whose_kernels_ran_after_recording_stopped() -> None:
    """HTA trace_compare test: the last launch call of the last step has no kernel in the trace."""
    path = HTA / "trace_compare__test__test.json.gz"
    events = _raw(path)
    launches = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS
                       and "LaunchKernel" in e["name"]), key=lambda e: e["ts"])
    ran = {e["args"].get("correlation") for e in events if e.get("cat") == "kernel"}
    last = launches[-1]
    assert last["args"]["correlation"] not in ran
    step = next(e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                and e["ts"] <= last["ts"] < e["ts"] + e["dur"])
    trace = load_trace(path)
    problem = _problems(trace)["steps_incomplete"]
    assert problem.count == 1 and step in problem.detail
    index = next(s.index for s in trace.steps if s.name == step)
    assert all_step_stats(trace)[index].verdict == "unknown"


def test_graph_replays_are_a_note() -> None:
    path = find_sample("mlp", "reduce-overhead")
    events = _raw(path)
    graph = {e["args"]["correlation"] for e in events if e.get("ph") == "X" and "GraphLaunch" in e["name"]}
    replayed = [e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in graph]
    found = integrity(load_trace(path))
    assert found.ok
    assert found.notes[0].startswith(f"graph_replay: {len(replayed)} kernel(s) ran in {len(graph)} graph replay(s)")


# ---------------------------------------------------------------- check

def test_check_takes_integrity_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sound = find_sample("mlp", "eager")
    assert main(["check", str(sound), "--expect", 'integrity = "ok"']) == 0
    cut = tmp_path / "cut.json"
    cut.write_bytes(_cut(gzip.decompress(sound.read_bytes())))
    capsys.readouterr()
    assert main(["check", str(cut), "--expect", "integrity == ok"]) == 1
    assert "truncated (1)" in capsys.readouterr().out


# ---------------------------------------------------------------- the app

async def test_the_trace_header_leads_with_the_trust_banner(tmp_path: Path) -> None:
    from app_support import wait_for_screen
    from textual.widgets import Static

    from mlptui.app import make_app
    from mlptui.screens.trace_screen import TraceScreen

    cut = tmp_path / "cut.json"
    cut.write_bytes(_cut(gzip.decompress(find_sample("mlp", "eager").read_bytes())))
    app = make_app([str(cut)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        header = str(screen.query_one("#trace-header", Static).render()).splitlines()
        assert header[0] == "⚠ not to be trusted as is: the file is cut; the verdicts resting on it read unknown"
        steps = screen.query_one("#steps").stats
        assert {s.verdict for s in steps} == {"unknown"}
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        assert "⚠" not in str(screen.query_one("#trace-header", Static).render())
