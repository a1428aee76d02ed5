"""Per-step stats and the verdict rule."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import trace_bytes, x

from mlptui.trace.analysis.steps.steps import (
    COMPUTE_BOUND,
    CPU_ONLY,
    GPU_NOT_RECORDED,
    OVERHEAD_BOUND,
    all_step_stats,
    busy_us,
    step_stats,
    verdict,
)
from mlptui.trace.parse.load import load_trace, load_trace_bytes


def test_busy_is_the_union_of_intervals() -> None:
    assert busy_us([]) == 0.0
    assert busy_us([(0.0, 10.0), (5.0, 12.0), (20.0, 21.0), (20.5, 20.7)]) == 13.0


def test_verdict_rule() -> None:
    assert verdict(10.0, 10.1, 3) == OVERHEAD_BOUND
    assert verdict(10.0, 10.0, 3) == COMPUTE_BOUND
    assert verdict(0.0, 0.0, 0) == CPU_ONLY


def _two_streams() -> bytes:
    return trace_bytes([
        x("ProfilerStep#0", "user_annotation", 0.0, 100.0),
        x("cudaLaunchKernel", "cuda_runtime", 10.0, 5.0, correlation=1),
        x("cudaLaunchKernel", "cuda_runtime", 20.0, 5.0, correlation=2),
        x("cudaMemsetAsync", "cuda_runtime", 30.0, 2.0, correlation=3),
        x("cudaStreamSynchronize", "cuda_runtime", 40.0, 50.0, correlation=4),
        x("cudaMalloc", "cuda_runtime", 92.0, 3.0, correlation=5),
        x("k1", "kernel", 15.0, 40.0, pid=0, tid=7, correlation=1),
        x("k2", "kernel", 30.0, 60.0, pid=0, tid=8, correlation=2),   # overlaps k1, ends after the step
        x("Memset (Device)", "gpu_memset", 95.0, 1.0, pid=0, tid=7, correlation=3),
        x("ProfilerStep#1", "user_annotation", 100.0, 50.0),
    ])


def test_step_figures() -> None:
    t = load_trace_bytes(_two_streams(), source="mem")
    s0, s1 = all_step_stats(t)
    assert (s0.name, s0.cpu_us, s0.kernels, s0.launches) == ("ProfilerStep#0", 100.0, 2, 2)
    assert s0.gpu_busy_us == pytest.approx(76.0)        # [15, 90] + [95, 96]
    assert s0.gpu_idle_us == pytest.approx(100.0 - 76.0)
    assert s0.launch_overhead_us == pytest.approx(12.0)  # the sync and the malloc are not launch overhead
    assert s0.verdict == COMPUTE_BOUND
    assert (s1.kernels, s1.verdict) == (0, CPU_ONLY)
    both = step_stats(t, None)
    assert (both.index, both.kernels, both.cpu_us) == (-1, 2, 150.0)
    assert step_stats(t, 0) == s0
    with pytest.raises(IndexError):
        step_stats(t, 2)


def test_trace_without_steps_is_one_window() -> None:
    t = load_trace_bytes(trace_bytes([
        x("cudaLaunchKernel", "cuda_runtime", 0.0, 5.0, correlation=1),
        x("k", "kernel", 10.0, 2.0, pid=0, tid=7, correlation=1),
    ]), source="mem")
    s = step_stats(t, None)
    assert (s.name, s.cpu_us, s.gpu_busy_us, s.gpu_idle_us, s.verdict) == ("whole trace", 5.0, 2.0, 10.0, OVERHEAD_BOUND)


def test_samples_linear_is_overhead_bound_mlp_counts(sample_trace: Callable[..., Path]) -> None:
    lin = all_step_stats(load_trace(sample_trace("linear", "eager")))
    assert [s.verdict for s in lin] == [OVERHEAD_BOUND] * 3 and [s.kernels for s in lin] == [1, 1, 1]
    mlp = all_step_stats(load_trace(sample_trace("mlp", "eager")))
    assert [(s.kernels, s.launches) for s in mlp] == [(5, 5)] * 3
    ro = all_step_stats(load_trace(sample_trace("mlp", "reduce-overhead")))
    assert [(s.kernels, s.launches) for s in ro] == [(5, 2)] * 3     # one graph replay + the input copy


def _pipelined() -> bytes:
    """The CPU runs ahead: each step's kernel runs during the next step's window, the device never waits."""
    return trace_bytes([
        x("ProfilerStep#0", "user_annotation", 0.0, 10.0),
        x("cudaLaunchKernel", "cuda_runtime", 1.0, 1.0, correlation=1),
        x("ProfilerStep#1", "user_annotation", 10.0, 10.0),
        x("cudaLaunchKernel", "cuda_runtime", 11.0, 1.0, correlation=2),
        x("k0", "kernel", 2.0, 18.0, pid=0, tid=7, correlation=1),    # runs from step 0 into step 1
        x("k1", "kernel", 20.0, 18.0, pid=0, tid=7, correlation=2),   # runs after step 1 has closed
    ])


def test_pipelined_steps_use_the_device_utilisation() -> None:
    t = load_trace_bytes(_pipelined(), source="mem")
    s0, s1 = all_step_stats(t)
    # step 1's own work starts only at 20: 10 of its 28 µs window look idle by launch...
    assert (s1.gpu_busy_us, s1.gpu_idle_us, s1.window_us) == pytest.approx((18.0, 10.0, 28.0))
    # ...but the device ran step 0's kernel then: it never waited on the host in that window
    assert (s1.device_busy_us, s1.device_idle_us) == pytest.approx((28.0, 0.0))
    assert (s0.device_busy_us, s0.device_idle_us) == pytest.approx((18.0, 2.0))
    assert s0.verdict == s1.verdict == COMPUTE_BOUND
    both = step_stats(t, None)
    # windows [0, 20] and [10, 38] overlap: counted once, not added
    assert (both.window_us, both.device_busy_us, both.device_idle_us) == pytest.approx((38.0, 36.0, 2.0))
    assert both.gpu_busy_us == pytest.approx(36.0) and both.cpu_us == pytest.approx(20.0)


def test_launches_without_gpu_activity_are_not_cpu_only() -> None:
    t = load_trace_bytes(trace_bytes([x("cudaLaunchKernel", "cuda_runtime", 0.0, 5.0, correlation=1)]), source="mem")
    assert step_stats(t, None).verdict == GPU_NOT_RECORDED
