"""The `not linked` line on the real traces that have device work with no launch call and no op: it names
at most three kinds by their decoded names and counts the rest, so a trace whose unlinked kernels are C++
templates (`void at::native::vectorized_elementwise_kernel<4, …>(…)`) or hipBLASLt tile names hundreds of
characters long still reads as one line. The counts and the time are computed here from the raw events
with json + gzip only."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.parse.load import load_trace
from mlptui.viewmodels.profile_views import build_profile, overview_text

REAL = ROOT.parent / "shared" / "corpus" / "real"
MI300X = REAL / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz"
DLRM_RANK1 = REAL / "facebookresearch__param__dlrm_kineto_worker1_step_12.1694128201556.pt.trace.json.gz"
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset"}
CALLS = {"cuda_runtime", "cuda_driver"}
OPS = {"cpu_op", "user_annotation"}


def _lost(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The device ops whose correlation no runtime call has and whose External id no op has; all device ops."""
    if not path.exists():
        pytest.skip("corpus not available")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]
    calls = {(e.get("args") or {}).get("correlation") for e in events if e.get("cat") in CALLS} - {None}
    ops = {(e.get("args") or {}).get("External id") for e in events if e.get("cat") in OPS} - {None}
    device = [e for e in events if e.get("cat") in DEVICE]
    lost = [e for e in device if (e.get("args") or {}).get("correlation") not in calls
            and (e.get("args") or {}).get("External id") not in ops]
    return lost, len(device)


def _line(path: Path) -> str:
    return next(line for line in trace_findings(load_trace(path)) if line.startswith("not linked:"))


@pytest.mark.parametrize("path", [MI300X, DLRM_RANK1], ids=["mi300x", "dlrm-rank1"])
def test_the_line_counts_and_times_what_is_not_linked(path: Path) -> None:
    lost, device = _lost(path)
    us = sum(float(e["dur"]) for e in lost)
    unit = f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.2f} µs"      # the documented duration form
    assert _line(path).startswith(f"not linked: {len(lost):,} of {device:,} device ops ({unit} of device time; ")


@pytest.mark.parametrize("path", [MI300X, DLRM_RANK1], ids=["mi300x", "dlrm-rank1"])
def test_the_line_names_three_decoded_kinds_and_counts_the_rest(path: Path) -> None:
    lost, _ = _lost(path)
    raw = Counter(e["name"] for e in lost)
    line = _line(path)
    named = line.split("; ", 1)[1].split(") have no launch call", 1)[0]
    assert len(raw) > 3 and not any(name in line for name in raw if name.startswith("void "))
    assert "<" not in named and len(line) < 400
    kinds = named.split(" and ")
    assert len(kinds[0].split(" ×")) == 4                   # three kinds, each with its count
    rest = int(kinds[1].split()[0])
    assert 1 <= rest <= len(raw) - 3                        # kinds are decoded names: raw names merge, never split
    # the most frequent raw name is also the most frequent kind here, with its own count
    count = raw.most_common(1)[0][1]
    assert kinds[0].split(" ×")[1].split(",")[0] == f"{count:,}"


def test_the_overview_says_the_same_line_on_the_mi300x() -> None:
    line = _line(MI300X)
    assert line in overview_text(build_profile(load_trace(MI300X)), 200).plain
