"""The words runners write and the viewer reads: workload names in the article's ladder order, profiling
modes, dtypes and the trace file suffix. One list each, so a new workload or mode needs one edit."""

from __future__ import annotations

# The article's ladder, in the order the picker shows it.
WORKLOAD_NAMES: tuple[str, ...] = (
    "linear", "mlp", "kernels-mlp", "fused-mlp",
    "attention-naive", "attention-inplace", "attention-sdpa-math", "attention-sdpa-efficient",
    "attention-sdpa-flash", "attention-sdpa-cudnn", "attention-sdpa-auto", "attention-kernels",
)
# How a workload is run under the profiler (`mlptui run --mode`).
MODES: tuple[str, ...] = ("eager", "compile", "reduce-overhead", "max-autotune")
DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32")
# What `mlptui run` names its traces (torch.profiler's own convention, gzipped).
TRACE_SUFFIX = ".pt.trace.json.gz"
