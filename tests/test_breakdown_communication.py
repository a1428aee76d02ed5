"""The step-time breakdown's communication category: collective (NCCL/RCCL) kernel time that overlaps no
compute kernel, memcpy or memset, taken out of "kernel" (the TensorBoard plugin's precedence: kernel,
memcpy, memset, communication, runtime, …).

The expected figures are read from the raw events with json + gzip: each step's window (the raw reading
of test_overview_all_steps), the union of the compute kernels' intervals inside it, and the part of the
collective kernels' union that no compute kernel, memcpy or memset covers. mlptui rounds an interval's
end from ts + dur in floating point, the reading here from ts and dur each: they may differ by a
nanosecond at a boundary, hence the 5 ns tolerance.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from test_overview_all_steps import _events, _ns, _union, raw_windows

from mlptui.cli import main
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.parse.load import load_trace

NS5 = 0.005
CORPUS = ROOT.parent / "shared" / "corpus"
KERNEL = {"kernel", "Kernel"}
COPY = {"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
TRACES = [
    "hta/nccl_parser_config__nccl_data.json.gz",
    "real/facebookresearch__param__dlrm_kineto_worker0_step_12.1694128201545.pt.trace.json.gz",
    "real/facebookresearch__param__dlrm_kineto_worker1_step_12.1694128201556.pt.trace.json.gz",
    *(str(p.relative_to(ROOT)) for p in sorted(ROOT.glob("sample_traces/*-x2-*/*rank-*.pt.trace.json.gz"))),
]


def _path(name: str) -> Path:
    return ROOT / name if name.startswith("sample_traces/") else CORPUS / name


def _collective(e: dict[str, Any]) -> bool:
    name = str(e.get("name", "")).lower()
    return "nccl" in name or "rccl" in name


def _inside(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in _union(spans))


def _spans(events: list[dict[str, Any]], keep: Any) -> list[tuple[int, int]]:
    return [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))) for e in events if keep(e)]


@pytest.mark.parametrize("name", TRACES, ids=lambda n: Path(n).name[:48])
def test_communication_is_collective_time_no_compute_covers(name: str) -> None:
    path = _path(name)
    if not path.exists():
        pytest.skip("corpus not available")
    events = _events(path)
    compute = _spans(events, lambda e: e.get("cat") in KERNEL and not _collective(e))
    comm = _spans(events, lambda e: e.get("cat") in KERNEL and _collective(e))
    above = compute + _spans(events, lambda e: e.get("cat") in COPY)      # what takes precedence over it
    assert comm, "the trace runs collective kernels"
    steps = overview(load_trace(path)).steps
    windows = raw_windows(events)
    assert len(steps) == len(windows)
    for step, (lo, hi) in zip(steps, windows, strict=True):
        b = step.breakdown_us
        assert b["kernel"] == pytest.approx(_inside(compute, lo, hi) / 1000, abs=NS5)
        alone = _inside(comm + above, lo, hi) - _inside(above, lo, hi)
        assert b["communication"] == pytest.approx(alone / 1000, abs=NS5)
        assert sum(b.values()) == pytest.approx((hi - lo) / 1000, abs=NS5)


def test_a_collective_bound_rank_reads_communication_not_kernel() -> None:
    """Rank 0 of the bundled tensor-parallel run waits in its all-reduces most of each step: that time
    was read as "kernel" before there was a communication category."""
    path = _tp_rank0()
    events = _events(path)
    (lo, hi), *_ = raw_windows(events)
    every_kernel = _inside(_spans(events, lambda e: e.get("cat") in KERNEL), lo, hi)
    b = overview(load_trace(path)).steps[0].breakdown_us
    assert b["communication"] > 0.5 * (hi - lo) / 1000           # most of the step
    assert b["kernel"] < 0.1 * every_kernel / 1000                # compute is a sliver of the kernel time


def _tp_rank0() -> Path:
    path = next(ROOT.glob("sample_traces/tp-mlp-eager-*-x2-20261126T*/*rank-0.pt.trace.json.gz"), None)
    if path is None:
        pytest.skip("sample not bundled")
    return path


def test_summary_csv_and_text_carry_communication(capsys: pytest.CaptureFixture[str]) -> None:
    path = _tp_rank0()
    events = _events(path)
    compute = _spans(events, lambda e: e.get("cat") in KERNEL and not _collective(e))
    comm = _spans(events, lambda e: e.get("cat") in KERNEL and _collective(e))
    above = compute + _spans(events, lambda e: e.get("cat") in COPY)
    windows = raw_windows(events)
    assert main(["summary", str(path), "--csv", "breakdown"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["name"] for r in rows][-1] == f"all {len(windows)} steps"
    for row, (lo, hi) in zip(rows, windows, strict=False):
        alone = _inside(comm + above, lo, hi) - _inside(above, lo, hi)
        assert float(row["communication_us"]) == pytest.approx(alone / 1000, abs=NS5)
        parts = sum(float(v) for k, v in row.items() if k.endswith("_us") and k != "duration_us")
        assert parts == pytest.approx(float(row["duration_us"]), abs=NS5)
    assert main(["summary", str(path)]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.split()[:2] == ["step", "duration"])
    assert "communication" in header.split()
