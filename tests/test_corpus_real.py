"""Every file of ../shared/corpus (hta/ and real/) against a plain, independent reading of the same file.

`Plain` below reads a trace with json + gzip only (no mlptui code) and derives, by the Kineto format's
own rules: the ProfilerStep#N annotations, which step each kernel was launched in (its runtime call,
found by `correlation` or by the `ac2g` flow, starting inside the step's window), runtime/driver calls
by name, the device's vendor and architecture, memcpy and memset counts. mlptui must say the same.
Files that are not profiler traces must be refused in one line. Then, for the traces that were read
wrong before, the specific fact that was wrong.
"""

from __future__ import annotations

import collections
import gzip
import json
from bisect import bisect_right
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from mlptui.base.errors import TraceError
from mlptui.render.summary_text import render_text
from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.analysis.events.device_arch import device_arch
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.analysis.steps.steps import OVERHEAD_BOUND, all_step_stats, step_stats
from mlptui.trace.model import KERNEL, MEMCPY, MEMSET, Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.parse.load import load_trace

CORPUS = ROOT.parent / "shared" / "corpus"
FILES = sorted(p for sub in ("hta", "real") for p in (CORPUS / sub).glob("*") if p.name != "README.md") \
    if CORPUS.is_dir() else []
pytestmark = pytest.mark.skipif(not FILES, reason="trace corpus not available")

# The format's categories, written out here rather than taken from mlptui.
RUNTIME_CATS = {"cuda_runtime", "Runtime", "runtime", "cuda_driver", "Driver", "hip_runtime", "mtia_runtime",
                "xpu_runtime", "xpu_driver", "privateuse1_runtime", "privateuse1_driver"}
KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
PROFILER_CATS = RUNTIME_CATS | KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS | {
    "cpu_op", "Operator", "user_annotation", "python_function", "ac2g", "gpu_user_annotation", "mtia_ccp_events"}
PROFILER_KEYS = {"schemaVersion", "deviceProperties", "traceName", "baseTimeNanoseconds", "distributedInfo"}
STEP_CATS = {"user_annotation", "Operator", "cpu_op"}
# AMD Instinct products and their gfx targets (AMD's own documentation).
AMD_TARGETS = {"MI300X": "gfx942", "MI210": "gfx90a", "MI250": "gfx90a"}


def _mtia_kind(e: dict[str, Any]) -> str | None:
    """MTIA device lanes: DMA is a copy, event record/wait only orders streams, the rest is compute."""
    if e.get("cat") != "mtia_ccp_events":
        return None
    name = e.get("name", "")
    if name in ("event_record", "event_wait"):
        return None
    return "memcpy" if name.startswith("dma") else "kernel"


class Plain:
    """What a trace holds, read with json + gzip and the format's rules only."""

    def __init__(self, path: Path) -> None:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        self.doc: Any = json.loads(raw)
        doc = self.doc
        events = doc.get("traceEvents") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
        self.events: list[dict[str, Any]] = [e for e in events or [] if isinstance(e, dict)]
        keys = set(doc) if isinstance(doc, dict) else set()
        self.is_trace = bool(self.events) and (bool(keys & PROFILER_KEYS)
                                              or any(e.get("cat") in PROFILER_CATS for e in self.events))
        complete = [e for e in self.events if e.get("ph") == "X" and e.get("ts") is not None]
        self.steps = sorted((e["ts"], e["name"], e.get("dur", 0)) for e in complete
                             if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") in STEP_CATS)
        self.calls = collections.Counter(e["name"] for e in complete if e.get("cat") in RUNTIME_CATS)
        kinds = [(e, "kernel" if e.get("cat") in KERNEL_CATS else "memcpy" if e.get("cat") in MEMCPY_CATS
                  else "memset" if e.get("cat") in MEMSET_CATS else _mtia_kind(e)) for e in complete]
        self.kernels = [e for e, k in kinds if k == "kernel"]
        self.memcpys = sum(1 for _, k in kinds if k == "memcpy")
        self.memsets = sum(1 for _, k in kinds if k == "memset")
        self.runtime = [e for e in complete if e.get("cat") in RUNTIME_CATS]
        devices = doc.get("deviceProperties") if isinstance(doc, dict) else None
        self.devices = [d for d in devices or [] if isinstance(d, dict)]

    def _flows(self) -> tuple[dict, dict]:
        starts: dict = {}
        ends: dict = {}
        for e in self.events:
            if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
                (starts if e["ph"] == "s" else ends)[(str(e.get("pid")), str(e.get("tid")), e.get("ts"))] = e.get("id")
        return starts, ends

    def kernels_per_step(self) -> dict[str, int]:
        """Kernels by the step their launch call starts in ("" for none); only kernels whose call is found."""
        starts, ends = self._flows()

        def corr(e: dict[str, Any], flows: dict) -> Any:
            c = (e.get("args") or {}).get("correlation")
            return c if c is not None else flows.get((str(e.get("pid")), str(e.get("tid")), e.get("ts")))

        launch_ts = {}
        for e in self.runtime:
            c = corr(e, starts)
            if c is not None:
                launch_ts[c] = e["ts"]
        step_starts = [ts for ts, _, _ in self.steps]
        out: collections.Counter[str] = collections.Counter()
        for k in self.kernels:
            ts = launch_ts.get(corr(k, ends))
            if ts is None:
                continue
            i = bisect_right(step_starts, ts) - 1
            inside = i >= 0 and ts < self.steps[i][0] + self.steps[i][2]
            out[self.steps[i][1] if inside else ""] += 1
        return dict(out)

    def vendor_arch(self) -> tuple[str, str | None]:
        if not self.devices:
            return "unknown", None
        d = self.devices[0]
        name = str(d.get("name") or "")
        if "AMD" in name or "Instinct" in name or d.get("warpSize") == 64:
            return "AMD", next((gfx for product, gfx in AMD_TARGETS.items() if product in name), None)
        if d.get("computeMajor") is not None:
            return "NVIDIA", f"sm_{d['computeMajor']}{d.get('computeMinor', 0)}"
        return "unknown", None


@cache
def plain(name: str) -> Plain:
    return Plain(_path(name))


@cache
def loaded(name: str) -> Trace:
    return load_trace(_path(name))


def _path(name: str) -> Path:
    return next(p for p in FILES if p.name == name)


# The two largest files (50-90 MB of JSON) take seconds each: `pytest -m "not slow"` leaves them out.
NAMES = [pytest.param(p.name, marks=pytest.mark.slow) if p.stat().st_size > 2_500_000 else p.name for p in FILES]


@pytest.mark.parametrize("name", NAMES)
def test_profiler_traces_load_and_the_rest_are_refused_in_one_line(name: str) -> None:
    try:
        p = plain(name)
    except ValueError:
        p = None
    if p is not None and p.is_trace:
        assert loaded(name).ops or loaded(name).gpu
        return
    with pytest.raises(TraceError) as err:
        load_trace(_path(name))
    assert "\n" not in str(err.value) and "not" in str(err.value)


@pytest.fixture(scope="module", params=NAMES)
def pair(request: pytest.FixtureRequest) -> tuple[Plain, Trace]:
    try:
        p = plain(request.param)
    except ValueError:
        p = None
    if p is None or not p.is_trace:
        pytest.skip("not a profiler trace (refused: see the test above)")
    return p, loaded(request.param)


def test_steps_by_name(pair: tuple[Plain, Trace]) -> None:
    p, t = pair
    assert [s.name for s in t.steps] == [name for _, name, _ in p.steps]


def test_kernels_per_step(pair: tuple[Plain, Trace]) -> None:
    p, t = pair
    names = {s.index: s.name for s in t.steps}
    got = collections.Counter(names.get(g.step, "") for g in t.gpu if g.cat == KERNEL and g.launch >= 0)
    assert dict(got) == p.kernels_per_step()
    assert sum(1 for g in t.gpu if g.cat == KERNEL) == len(p.kernels)


def test_launch_calls_by_name(pair: tuple[Plain, Trace]) -> None:
    p, t = pair
    assert {c.name: c.count for c in launch_calls(t)} == dict(p.calls)


def test_device_vendor_and_architecture(pair: tuple[Plain, Trace]) -> None:
    p, t = pair
    vendor, arch = p.vendor_arch()
    got = device_arch(t.device, t.meta)
    assert got.vendor == vendor
    if arch is not None:
        assert got.arch == arch
    if vendor == "AMD":
        assert got.arch is not None and got.arch.startswith("gfx") and got.units == "CUs"
        device_line = render_text(summarize(t)).splitlines()[1]
        assert "sm" not in device_line.replace("SMs", "")


def test_memcpy_and_memset_counts(pair: tuple[Plain, Trace]) -> None:
    p, t = pair
    assert sum(1 for g in t.gpu if g.cat == MEMCPY) == p.memcpys
    assert sum(1 for g in t.gpu if g.cat == MEMSET) == p.memsets


def test_slices_nest_by_true_containment_and_gpu_time_rolls_up_only_into_them(pair: tuple[Plain, Trace]) -> None:
    _, t = pair
    ops = t.ops
    assert all(ops[o.parent].ts <= o.ts + 1e-3 and o.end <= ops[o.parent].end + 1e-3 for o in ops if o.parent >= 0)
    for g in t.gpu:                      # the launch call of each kernel lies inside every op its time goes to
        node = t.ops[g.launch].parent if g.launch >= 0 else -1
        while node >= 0:
            assert ops[node].ts <= ops[g.launch].ts and ops[g.launch].end <= ops[node].end + 1e-3
            node = ops[node].parent


def test_headless_dispatch_has_every_leaf_path(pair: tuple[Plain, Trace]) -> None:
    _, t = pair
    rows = summarize(t).dispatch
    step_ops = [o for o in t.ops if o.cat in ("cpu_op", "user_annotation") and not o.name.startswith("ProfilerStep#")
                and (o.step >= 0 or not t.steps)]
    assert bool(rows) == bool(step_ops)
    if not t.gpu:
        assert all(r.gpu_kernels == [] for r in rows)


# ---------------------------------------------------------------- the facts that were wrong

def _real(stem: str) -> str:
    return next(p.name for p in FILES if p.parent.name == "real" and stem in p.name)


def test_old_torch_steps_have_operator_category_and_a_short_chain() -> None:
    name = _real("kineto__worker0")
    t = loaded(name)
    assert [s.name for s in t.steps] == [f"ProfilerStep#{n}" for n in range(5, 11)]
    chain = next(line for line in trace_findings(t) if line.startswith("first GEMM: "))
    assert len(chain) < 300 and "ProfilerStep#" not in chain


def test_with_stack_steps_nest_inside_the_python_frames_that_contain_them() -> None:
    t = loaded(_real("bert-small"))
    step_op = t.ops[t.steps[0].op]
    assert step_op.parent >= 0 and t.ops[step_op.parent].cat == "python_function"
    assert t.ops[step_op.parent].end >= step_op.end
    total_gpu = sum(g.dur for g in t.gpu)
    assert all(op.gpu_us <= total_gpu + 1e-3 for op in t.ops)
    # the headless dispatch of the step is not empty, and its paths are ops of the step
    assert summarize(t).dispatch


def test_pipelined_steps_are_not_overhead_bound() -> None:
    t = loaded(_real("mi300_resnet"))
    stats = all_step_stats(t)
    assert [s.name for s in stats] == ["ProfilerStep#15", "ProfilerStep#16", "ProfilerStep#17"]
    for s in stats:
        assert s.verdict != OVERHEAD_BOUND
        assert s.device_idle_us < 0.1 * s.window_us < s.gpu_idle_us     # by launch it looked idle; it was not
    both = step_stats(t, None)
    assert both.window_us <= sum(s.window_us for s in stats) and both.verdict != OVERHEAD_BOUND
    assert both.gpu_idle_us < sum(s.gpu_idle_us for s in stats)        # overlapping windows counted once


def test_gpu_only_trace_findings_count_the_launches_the_table_counts() -> None:
    name = _real("gpu_only")
    t = loaded(name)
    lines = trace_findings(t)
    assert "no launch calls recorded" not in lines
    launch = next(line for line in lines if line.startswith("occupancy queries"))
    for call, n in plain(name).calls.most_common(2):
        assert f"{call} ×{n}" in launch
    assert any("gfx90a" in line for line in lines) and not any("sm9" in line for line in lines)


def test_launches_without_gpu_activity_are_said_not_recorded() -> None:
    name = _real("zoology")
    t = loaded(name)
    launches = sum(n for call, n in plain(name).calls.items() if "Launch" in call)
    assert any("GPU activity was not recorded" in w and str(launches) in w for w in t.warnings)
    report = summarize(t)
    assert report.total.verdict == "gpu-not-recorded"
    assert "cpu-only" not in render_text(report).splitlines()[3]


@pytest.mark.slow
def test_mtia_device_work_is_device_work() -> None:
    name = _real("mtia_rank_0")
    t = loaded(name)
    p = plain(name)
    assert sum(1 for g in t.gpu if g.cat == KERNEL) == len(p.kernels) > 0
    assert t.streams and summarize(t).total.verdict != "cpu-only"
    from mlptui.viewmodels.lanes import build_lanes

    device_lanes = [lane for lane in build_lanes(t) if lane.kind == "gpu"]
    assert len(device_lanes) == len(t.streams) and all(lane.label.startswith("MTIA") for lane in device_lanes)


def test_first_gemm_chain_is_the_launching_ops_ancestors() -> None:
    t = loaded(_real("trace_filter_sampled_rank-1"))
    chain = next(line for line in trace_findings(t) if line.startswith("first GEMM: "))
    names = chain[len("first GEMM: "):].split(" ⇒ ")[0].split(" → ")
    step = t.steps[-1].index
    gemm = next(g for g in t.gpu if g.step == step and g.cat == KERNEL and g.op >= 0
                and decode_kernel(g.name).family == "gemm" and g.launch >= 0)
    ancestors = []
    node = gemm.op
    while node >= 0:
        ancestors.append(t.ops[node].name)
        node = t.ops[node].parent
    assert names[-1] == t.ops[gemm.op].name and all(n in ancestors for n in names)


def test_serving_kernels_name_their_own_libraries() -> None:
    sglang = loaded(_real("sglang"))
    fmha = [decode_kernel(g.name) for g in sglang.gpu if "Fmha" in g.name]
    assert fmha and all((k.family, k.library, k.dtype) == ("attention", "CK-tile", "bf16") for k in fmha)
    b200 = loaded(_real("b200"))
    families = {decode_kernel(g.name).family for g in b200.gpu if "multimem_all_reduce" in g.name}
    assert families == {"comm"}
    quant = {decode_kernel(g.name).family for g in b200.gpu if "quantize_with_block_size" in g.name}
    assert quant == {"other"}


def test_volta_cudnn_time_is_convolution() -> None:
    t = loaded(_real("kineto__worker0"))
    conv = [g for g in t.gpu if "scudnn" in g.name or "implicit_convolve_sgemm" in g.name]
    assert conv and all(decode_kernel(g.name).library == "cuDNN" for g in conv)
