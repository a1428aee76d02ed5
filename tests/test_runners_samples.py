"""The bundled sample traces are what `mlptui run ladder` recorded on a real GPU: every rung of the ladder
is there, with its manifest entry, its record_function label, GPU kernels, and the device's name."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from mlptui.runners.workloads.registry import WORKLOADS, ladder
from mlptui.trace.model import KERNEL
from mlptui.trace.parse.load import load_trace

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
MANIFEST = orjson.loads((SAMPLES / "manifest.json").read_bytes())
# The attention rung has a folder of its own (sample_traces/attention/, its own manifest).
ATTENTION = SAMPLES / "attention"
RUNS = {r["trace"]: r for r in MANIFEST["runs"]} | {
    r["trace"]: r for r in orjson.loads((ATTENTION / "manifest.json").read_bytes())["runs"]}
# Rungs the GPU machine could not run, each skipped with one line there (sample_traces/README.md says why).
NOT_RECORDED = {"attention-kernels": "no `kernels` package, Hub, HF cache, LOCAL_KERNELS or flash-attn wheel there"}


def sample(workload: str, mode: str, dtype: str = "bf16") -> Path:
    pattern = re.compile(rf"^{re.escape(workload)}-{re.escape(mode)}-[0-9x]+-{dtype}-[a-z0-9]+-\d{{8}}T\d{{6}}")
    found = [p for folder in (SAMPLES, ATTENTION) for p in folder.glob("*.pt.trace.json.gz") if pattern.match(p.name)]
    if not found and workload in NOT_RECORDED:
        pytest.skip(f"{workload} was not recorded: {NOT_RECORDED[workload]}")
    assert len(found) == 1, (workload, mode, dtype, found)
    return found[0]


def test_manifest_lists_exactly_the_traces_in_the_folder() -> None:
    assert MANIFEST["mlptui_manifest"] == 1
    assert sorted(RUNS) == sorted(p.name for folder in (SAMPLES, ATTENTION) for p in folder.glob("*.pt.trace.json.gz"))


@pytest.mark.parametrize(("workload", "mode"), [(w.name, m) for w, m in ladder()])
def test_each_rung_of_the_ladder_was_recorded_on_a_gpu(workload: str, mode: str) -> None:
    path = sample(workload, mode)
    run = RUNS[path.name]
    assert (run["workload"], run["mode"], run["dtype"]) == (workload, mode, "bf16")
    assert run["args"]["device"] == "cuda" and run["args"]["with_stack"] is False
    trace = load_trace(path)
    assert trace.device_name == run["device"]["name"]
    assert re.match(r"NVIDIA H[12]00", trace.device_name)
    assert run["device"]["slug"] in path.name
    label = WORKLOADS[workload].label
    assert sum(op.name == label for op in trace.ops) == 3  # one per active profiler step
    assert len(trace.steps) == 3 and any(g.cat == KERNEL for g in trace.gpu)
    t = run["timing"]
    assert 0 < t["p10_us"] <= t["median_us"] <= t["p90_us"] and t["iters"] >= 10
    assert run["max_rel_err_vs_fp32"] < 2e-2  # bf16 against the fp32 eager reference


def test_the_mlp_rungs_tell_the_article_story() -> None:
    """Compile beats eager on the MLP (fewer round trips through memory for the GELU and multiply),
    and the three bias-free GEMMs run as GPU kernels in every version."""
    eager, compiled = (RUNS[sample("mlp", m).name] for m in ("eager", "compile"))
    assert compiled["timing"]["median_us"] < eager["timing"]["median_us"]
    assert eager["flops"] == compiled["flops"] == 6 * 64 * 128 * 768 * 3072
    kernels_mlp = RUNS[sample("kernels-mlp", "eager").name]
    assert kernels_mlp["kernel_source"].split(" ")[0] in ("hub", "hf-cache", "LOCAL_KERNELS", "liger-kernel")
    trace = load_trace(sample("mlp", "compile"))
    names = {op.name for op in trace.ops}
    assert any(n.startswith("Torch-Compiled Region") for n in names)
    assert any(g.name.startswith("triton_") for g in trace.gpu)
