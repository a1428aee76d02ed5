"""The committed 2-rank runs (sample_traces/*-x2-*/): one all-reduce of the output per tensor-parallel
step, with rows × dim × 2 bytes; DDP's gradient all-reduces running beside backward kernels; the
manifest's distributed block; `summary RUN_DIR --json` and `diff` of two ranks."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mlptui.cli import main
from mlptui.trace.analysis.comms.collectives import collectives, is_comm_kernel
from mlptui.trace.analysis.events import intervals
from mlptui.trace.analysis.ranks.ranks import rank_run
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse.load import load_trace

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


def delayed(folder: Path) -> bool:
    """Whether one rank of this run was made to arrive late on purpose (`run --delay-rank`)."""
    return "delay" in orjson.loads((folder / "manifest.json").read_bytes())["distributed"]


def run_dir(prefix: str) -> Path:
    found = sorted(p for p in SAMPLES.glob(f"{prefix}-*-x2-*") if not delayed(p))
    assert found, f"no {prefix} run in {SAMPLES}"
    return found[-1]


def ranks(folder: Path) -> list[Trace]:
    return [load_trace(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]


def test_tp_mlp_has_one_all_reduce_of_the_output_per_step() -> None:
    folder = run_dir("tp-mlp-eager")
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    shape = manifest["runs"][0]["shape"]
    rows, dim = shape["batch"] * shape["seq"], shape["dim"]
    traces = ranks(folder)
    assert [r for r, _ in rank_run(traces)] == [0, 1]
    for trace in traces:
        assert len(trace.steps) == 3
        per_step = {s.index: [] for s in trace.steps}
        for c in collectives(trace):
            per_step[trace.gpu[c.gpu].step].append(c)
        for calls in per_step.values():
            (c,) = calls  # exactly one collective per step
            assert (c.collective, c.dtype, c.group_size) == ("allreduce", "bf16", 2)
            assert c.bytes == rows * dim * 2 == 8192 * 768 * 2
        # the same, read plainly from the file
        with gzip.open(trace.source) as f:
            doc = json.load(f)
        nccl = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"]]
        assert [(e["args"]["Collective name"], e["args"]["In msg nelems"], e["args"]["dtype"]) for e in nccl] == \
            [("allreduce", rows * dim, "BFloat16")] * 3


def backward_kernels(trace: Trace) -> list[tuple[float, float]]:
    """Kernels launched from autograd's backward (an `autograd::engine::evaluate_function` above them)."""
    out = []
    for g in trace.gpu:
        op = g.op
        while op >= 0 and not trace.ops[op].name.startswith("autograd::engine::evaluate_function"):
            op = trace.ops[op].parent
        if g.cat == KERNEL and op >= 0 and not is_comm_kernel(g.name):
            out.append((g.ts, g.end))
    return out


def test_ddp_gradient_all_reduce_overlaps_backward_kernels() -> None:
    folder = run_dir("mlp-train-eager")
    for trace in ranks(folder):
        grads = [c for c in collectives(trace) if c.collective == "allreduce"]
        # two gradient buckets a step: down_proj's weight (hidden × dim), then gate_proj's and up_proj's
        assert sorted({c.bytes for c in grads}) == [768 * 3072 * 2, 2 * 768 * 3072 * 2]
        assert len(grads) == 2 * len(trace.steps)
        backward = intervals.merged(backward_kernels(trace))
        assert backward
        overlapped = [c for c in grads if intervals.overlap([(c.ts, c.ts + c.dur)], backward) > 0]
        # the first bucket of every step is all-reduced while backward GEMMs still run
        first = [c for c in grads if c.bytes == 768 * 3072 * 2]
        assert first and all(c in overlapped for c in first)


@pytest.mark.parametrize("prefix", ["tp-mlp-eager", "mlp-train-eager"])
def test_manifest_lists_the_ranks(prefix: str) -> None:
    folder = run_dir(prefix)
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    dist = manifest["distributed"]
    assert dist["world_size"] == 2 and dist["backend"] == "nccl" and dist["nccl_version"].count(".") == 2
    assert dist["nvls"]["NCCL_NVLS_ENABLE"] == "0"
    traces = sorted(p.name for p in folder.glob("*.pt.trace.json.gz"))
    assert [r["trace"] for r in dist["ranks"]] == traces and [r["rank"] for r in dist["ranks"]] == [0, 1]
    runs = {r["trace"]: r for r in manifest["runs"]}
    for r in dist["ranks"]:
        assert r["step_us"] == runs[r["trace"]]["timing"]["median_us"] > 0
        assert runs[r["trace"]]["max_rel_err_vs_fp32"] < 2e-2


def test_summary_json_of_a_run_folder_has_the_ranks_section(capsys: pytest.CaptureFixture[str]) -> None:
    folder = run_dir("mlp-train-eager")
    assert main(["summary", str(folder), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    sec = doc["ranks"]
    assert set(sec) == {"world_size", "backend", "clock", "ranks", "stragglers", "calls", "collectives",
                        "critical_path"}
    assert (sec["world_size"], sec["backend"]) == (2, "nccl")
    for r in sec["ranks"]:
        assert set(r) == {"rank", "source", "steps", "compute_us", "comm_us", "overlap_share", "comm_wait_us",
                          "late_us", "arrived_last"}
        assert [set(s) for s in r["steps"]] == [{"name", "step_us"}] * 3
        assert 0 < r["overlap_share"] <= 1 and r["comm_wait_us"] >= 0
    assert {s["step"] for s in sec["stragglers"]} == {"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"}
    for s in sec["stragglers"]:
        assert set(s) == {"step", "rank", "late_us", "last_at", "calls"} and s["late_us"] >= 0
    for c in sec["collectives"]:
        assert set(c) == {"rank", "collective", "dtype", "bytes", "group_size", "count", "total_us", "wait_us",
                          "transfer_us", "algbw_gbps", "busbw_gbps"}
        # two ranks: the all-reduce's bus factor 2(n−1)/n is 1
        assert c["busbw_gbps"] == pytest.approx(c["algbw_gbps"]) == pytest.approx(
            c["bytes"] * c["count"] / c["transfer_us"] / 1e3, rel=1e-3)
    # one rank arrives last at each all-reduce; the other waits for it
    assert min(r["comm_wait_us"] for r in sec["ranks"]) < max(r["comm_wait_us"] for r in sec["ranks"])


def test_summary_of_one_trace_has_null_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    one = sorted(run_dir("tp-mlp-eager").glob("*rank-0*"))[0]
    assert main(["summary", str(one), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["ranks"] is None


def test_summary_text_of_a_run_names_the_link_peak(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(run_dir("tp-mlp-eager"))]) == 0
    out = capsys.readouterr().out
    assert "run of 2 rank(s), world size 2, backend nccl" in out
    assert "over NVLink 4's 450.0 GB/s per GPU one way" in out and "12.0 MiB" in out


def test_diff_of_two_ranks_works_as_of_two_traces() -> None:
    a, b = sorted(run_dir("mlp-train-eager").glob("*.pt.trace.json.gz"))
    res = subprocess.run([sys.executable, "-m", "mlptui.cli", "diff", str(a), str(b), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    names = json.dumps(doc)
    assert "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" in names
