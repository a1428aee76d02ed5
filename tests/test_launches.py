"""Runtime/driver call classification and grouping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mlptui.trace.analysis.events.launches import launch_calls, launches_by_op
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.parse.load import load_trace


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("cudaLaunchKernel", "launch"), ("cudaLaunchKernelExC", "launch"), ("cuLaunchKernel", "launch"),
        ("cuLaunchKernelEx", "launch"), ("hipLaunchKernel", "launch"), ("hipExtModuleLaunchKernel", "launch"),
        ("cudaGraphLaunch", "graph"), ("hipGraphLaunch", "graph"),
        ("cudaOccupancyMaxActiveBlocksPerMultiprocessor", "occupancy"),
        ("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "occupancy"),
        ("cudaMemsetAsync", "memset"), ("cudaMemcpyAsync", "memcpy"), ("hipMemcpyWithStream", "memcpy"),
        ("cudaFuncSetAttribute", "attribute"), ("cudaDeviceGetAttribute", "attribute"),
        ("cudaDeviceSynchronize", "sync"), ("cudaStreamSynchronize", "sync"), ("cudaStreamWaitEvent", "sync"),
        ("cudaStreamIsCapturing", "other"), ("cudaMalloc", "other"), ("cudaLaunchHostFunc", "other"),
        ("enqueueCommand memcpyHtoDAsync", "memcpy"), ("synchronizeStream", "sync"),
    ],
)
def test_classify_call(name: str, kind: str) -> None:
    assert classify_call(name) == kind


def test_linear_eager_launch_calls_per_step(sample_trace: Callable[..., Path]) -> None:
    t = load_trace(sample_trace("linear", "eager"))
    rows = {s.name: (s.kind, s.count) for s in launch_calls(t, step=1)}
    assert rows == {"cuLaunchKernelEx": ("launch", 1), "cudaDeviceSynchronize": ("sync", 1)}
    by_op = [o for o in launches_by_op(t, step=1) if o.kernels]
    assert len(by_op) == 1
    op = t.ops[by_op[0].op]
    assert op.name == "aten::addmm"
    assert [t.ops[c].name for c in by_op[0].calls] == ["cuLaunchKernelEx"]
    assert t.gpu[by_op[0].kernels[0]].name.startswith("nvjet_")


def test_mlp_eager_memset_before_gemm(sample_trace: Callable[..., Path]) -> None:
    t = load_trace(sample_trace("mlp", "eager"))
    groups = [o for o in launches_by_op(t, step=0) if o.op >= 0 and t.ops[o.op].name == "aten::mm"]
    assert groups
    calls = [t.ops[c].name for c in groups[0].calls]
    assert calls == ["cudaMemsetAsync", "cuLaunchKernelEx"]
    assert [t.gpu[k].cat for k in groups[0].kernels] == ["gpu_memset", "kernel"]
    total = launch_calls(t)
    assert sum(s.count for s in total if s.kind == "launch") == 15
