"""The kernel figures (blocks per SM, reported and theoretical occupancy) from the launch columns the load
reads are those that reading each kernel's full args gives: every bundled sample, every corpus trace and
the hostile inputs, against a reference that reads `Trace.gpu_args` kernel by kernel with the occupancy
module's own argument checks."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from fuzz import hostile

from mlptui.base.errors import TraceError
from mlptui.trace.analysis.kernels.kernel_figures import kernel_figures
from mlptui.trace.analysis.kernels.occupancy import device_for, launch_config, theoretical_occupancy
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse.limits import finite_number
from mlptui.trace.parse.load import load_trace, load_trace_bytes

CORPUS = ROOT.parent / "shared" / "corpus"
SAMPLES = sorted(p for p in (ROOT / "sample_traces").rglob("*") if p.name.endswith((".json", ".json.gz"))
                 and "bench" not in p.parts and p.name != "manifest.json")
CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "README.md"
                      and p.stat().st_size < 1_300_000) if CORPUS.is_dir() else []


def _reference(trace: Trace) -> tuple[list[float], list[float], list[float]]:
    """Per GpuOp id: blocks per SM, reported occupancy %, theoretical fraction; NaN where unknown."""
    n = len(trace.gpu)
    bps, pct, theory = [math.nan] * n, [math.nan] * n, [math.nan] * n
    for g in trace.gpu:
        if g.cat != KERNEL:
            continue
        args = trace.gpu_args(g.id)
        device = device_for(trace, g.device)
        reported = finite_number(args.get("blocks per SM"))
        grid, sms = args.get("grid"), (device or {}).get("numSms")
        # ROCm's hipExtModuleLaunchKernel records the grid in work-items: workgroups = ceil(grid / block)
        work_items = g.launch >= 0 and trace.ops[g.launch].name == "hipExtModuleLaunchKernel"
        if work_items:
            block = args.get("block")
            whole = isinstance(grid, list) and isinstance(block, list) and grid and len(grid) == len(block) \
                and all(type(v) is int and v > 0 for v in grid + block)
            if whole and type(sms) is int and sms:
                bps[g.id] = float(math.prod(-(-a // b) for a, b in zip(grid, block, strict=True))) / sms
        elif reported is not None and reported > 0:
            bps[g.id] = float(reported)
        elif isinstance(grid, list) and grid and all(type(v) is int for v in grid) and type(sms) is int and sms:
            bps[g.id] = float(math.prod(grid)) / sms
        occ = args.get("est. achieved occupancy %")
        if type(occ) in (int, float) and occ > 0:       # 0 %: Kineto did not measure
            pct[g.id] = float(occ)
        cfg = launch_config(args)
        if cfg is not None:
            found = theoretical_occupancy(device, cfg[1], cfg[2], cfg[3])
            theory[g.id] = math.nan if found is None else found.fraction
    return bps, pct, theory


def _check(trace: Trace) -> int:
    figures = kernel_figures(trace)
    want = _reference(trace)
    for got, expected in zip((figures.blocks_per_sm, figures.occupancy_pct, figures.theoretical), want,
                             strict=True):
        np.testing.assert_array_equal(got, np.asarray(expected, dtype=np.float64))
    return int(np.count_nonzero(~np.isnan(figures.theoretical)))


@pytest.mark.parametrize("path", SAMPLES + CORPUS_FILES, ids=lambda p: p.name)
def test_files(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    try:
        trace = load_trace(path)
    except TraceError:
        return
    _check(trace)


def test_the_samples_have_launch_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: the bundled CUDA samples do carry launches, and the figures find them."""
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    known = sum(_check(load_trace(p)) for p in SAMPLES)
    assert known > 20


@pytest.mark.parametrize("name", sorted(hostile.cases()))
def test_hostile_inputs(name: str) -> None:
    try:
        trace = load_trace_bytes(hostile.cases()[name], source=name)
    except TraceError:
        return
    _check(trace)


def _one_kernel(**kernel_args: Any) -> bytes:
    import json
    return json.dumps(hostile.doc(hostile.events(kernel_args=kernel_args))).encode()


@pytest.mark.parametrize("args, theory_known", [
    ({}, True),
    ({"shared memory": None}, True),                       # missing shared memory reads as 0
    ({"registers per thread": 40.7}, True),                # a float count is truncated, as int() does
    ({"block": [128, 1]}, True),                           # two dims: the third counts 1
    ({"block": [2**41, 1, 1]}, False),                     # a dim past any real launch
    ({"registers per thread": -1}, False),
    ({"grid": [], "blocks per SM": 0}, True),              # no reported figure, no grid: blocks per SM unknown
])
def test_launch_edge_cases(args: dict[str, Any], theory_known: bool) -> None:
    trace = load_trace_bytes(_one_kernel(**args), source="one kernel")
    known = _check(trace)
    assert known == int(theory_known)


def test_a_launch_value_with_bad_utf8_reads_as_the_views_read_it() -> None:
    """A launch key whose string value is not UTF-8 (msgspec raises UnicodeDecodeError there, found by the
    fuzz target): the load repairs the bytes and the figures are those of the args the views read."""
    data = _one_kernel(grid="GRID", **{"registers per thread": 40}).replace(b'"GRID"', b'"\xff"')
    trace = load_trace_bytes(data, source="bad utf-8 in a launch key")
    kernel = next(g for g in trace.gpu if g.cat == KERNEL)
    assert trace.gpu_args(kernel.id)["grid"] == "\ufffd"
    assert any("invalid UTF-8" in w for w in trace.warnings)
    _check(trace)
