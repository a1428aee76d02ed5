"""Figures that cannot be known are "n/a" with the reason, never a made-up 0.

- SM efficiency needs every kernel's block count: a kernel replayed from a CUDA/HIP graph carries no
  grid, and counting it as 0 blocks understates the figure, so a window holding such kernel time has
  no SM efficiency, and says how much of its kernel time is without a grid.
- Kineto writes `est. achieved occupancy %` = 0 where it did not measure: that is no measurement, so
  0 % values are left out of every average, and a window or kernel with no other value is "n/a".
Raw events are read here with json + gzip only.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from typing import Any

import pytest
from conftest import ROOT, trace_bytes, x
from test_overview_all_steps import _ns, _union, raw_windows

from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.parse.load import load_trace, load_trace_bytes
from mlptui.viewmodels.profile_views import build_profile, overview_text

CORPUS = ROOT.parent / "shared" / "corpus"
SMS = 132


def _graph_replay() -> list[dict[str, Any]]:
    """One eager GEMM with its grid, then a CUDA graph replay of three kernels that carry none."""
    events = [x("aten::mm", "cpu_op", 0, 20, **{"External id": 1}),
              x("cudaLaunchKernel", "cuda_runtime", 2, 5, correlation=10, **{"External id": 1}),
              x("gemm", "kernel", 30, 10, pid=0, tid=7, correlation=10, grid=[264, 1, 1], block=[128, 1, 1],
                **{"registers per thread": 32, "shared memory": 0}),
              x("cudaGraphLaunch", "cuda_runtime", 50, 5, correlation=11)]
    events += [x(f"replayed_{i}", "kernel", 60 + 12 * i, 10, pid=0, tid=7, correlation=11) for i in range(3)]
    return events


def test_sm_efficiency_is_na_where_graph_replays_carry_no_grid() -> None:
    events = _graph_replay()
    trace = load_trace_bytes(trace_bytes(events, deviceProperties=[{"id": 0, "name": "GPU", "numSms": SMS}]),
                             source="graph.json")
    total = overview(trace).total
    kernels = [e for e in events if e["cat"] == "kernel"]
    without = sum(e["dur"] for e in kernels if "grid" not in e.get("args", {}))
    share = without / sum(e["dur"] for e in kernels)
    assert total.sm_efficiency is None
    assert f"{share:.0%} of the kernel time" in total.sm_efficiency_na
    text = overview_text(build_profile(trace), 100).plain
    assert "SM eff n/a:" in text and "n/a" in text.splitlines()[2]


def test_sm_efficiency_is_measured_where_every_kernel_has_a_grid() -> None:
    events = [e for e in _graph_replay() if not e["name"].startswith("replayed_")]
    trace = load_trace_bytes(trace_bytes(events, deviceProperties=[{"id": 0, "name": "GPU", "numSms": SMS}]),
                             source="eager.json")
    total = overview(trace).total
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    busy = sum(min(e["args"]["grid"][0] / SMS, 1.0) * e["dur"] for e in events if e["cat"] == "kernel")
    assert total.sm_efficiency_na is None
    assert total.sm_efficiency == pytest.approx(round(busy / (end - start), 4))


def test_steps_with_gridless_kernels_are_na_on_a_real_trace() -> None:
    """MI300X DDP rank: some kernels in the trace carry no grid."""
    path = CORPUS / "real" / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz"
    if not path.exists():
        pytest.skip("corpus not available")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    per_device: dict[Any, int] = defaultdict(int)
    for e in kernels:
        per_device[e.get("pid")] += 1
    main = max(per_device, key=lambda d: per_device[d])
    gridless = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in kernels
                if e.get("pid") == main and "grid" not in (e.get("args") or {}) and e["dur"] > 0]
    ov = overview(load_trace(path))
    windows = raw_windows(events)
    assert len(ov.steps) == len(windows)
    expect_na = [any(a < w_end and b > w_start for a, b in gridless) for w_start, w_end in windows]
    assert any(expect_na)
    assert [s.sm_efficiency is None for s in ov.steps] == expect_na
    assert [bool(s.sm_efficiency_na) for s in ov.steps] == expect_na
    pieces = _union(windows)
    assert (ov.total.sm_efficiency is None) == any(a < y and b > x_ for a, b in gridless for x_, y in pieces)


def _sample(name: str) -> Any:
    paths = sorted((ROOT / "sample_traces").glob(name))
    if not paths:
        pytest.skip(f"no sample {name}")
    return paths[-1]


def test_zero_achieved_occupancy_is_not_a_measurement() -> None:
    """Bundled eager MLP (H200): Kineto reports 0 % for most kernels."""
    path = _sample("mlp-eager-64x128x768x3072-bf16-*.pt.trace.json.gz")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "kernel"]
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in events:
        occ = (e.get("args") or {}).get("est. achieved occupancy %")
        sums[e["name"]]
        if isinstance(occ, int | float) and occ > 0:
            sums[e["name"]][0] += occ * e["dur"]
            sums[e["name"]][1] += e["dur"]
    want = {name: (w / d / 100 if d else None) for name, (w, d) in sums.items()}
    assert None in want.values() and any(v is not None for v in want.values())
    got = {k.name: k.achieved_occupancy for k in kernel_stats(load_trace(path))}
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name] == (None if value is None else pytest.approx(value)), name


def test_a_trace_with_only_zero_occupancy_says_not_measured() -> None:
    path = _sample("linear-eager-1024x32x64-bf16-*.pt.trace.json.gz")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert events and all((e.get("args") or {}).get("est. achieved occupancy %") == 0 for e in events)
    total = overview(load_trace(path)).total
    assert total.achieved_occupancy is None
    assert total.achieved_occupancy_na.startswith("not measured")
