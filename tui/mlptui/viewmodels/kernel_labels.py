"""Kernel names a table can tell apart: the decoded short name, and where several raw names decode to the
same short name, the raw name's own words that the others lack (`cuBLAS nvjet GEMM 128x160 NTT ‹4x1 v›`
beside `… ‹2x4 h›`); labels still alike after that get `#1`, `#2` in raw-name order. The rule is the
core's (mlptui.trace.names.distinct), so `summary` and the findings name kernels as the views do."""

from __future__ import annotations

from collections.abc import Iterable

from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.model import Trace
from mlptui.trace.names import distinct

__all__ = ["distinct_labels", "every_kernel_labels"]


def distinct_labels(raw_names: Iterable[str], trace: Trace | None = None) -> dict[str, str]:
    """Each raw name's label (mlptui.trace.names.distinct): its short name, with the dtype the launching
    ops' inputs give where the name is ambiguous and `trace` is given."""
    return distinct.distinct_labels(raw_names, None if trace is None else lambda raw: kernel_name(trace, raw).short)


def every_kernel_labels(trace: Trace) -> dict[str, str]:
    """The labels of all the trace's GPU ops together (the all-steps scope); through `Trace.derive`, so a
    worker can make them before the scope is first shown."""
    return distinct_labels({g.name for g in trace.gpu}, trace)

