"""The headless report of one trace: `summarize(trace) -> SummaryReport` (mlptui.trace.reports.summary holds
its shape, which is `mlptui summary PATH --json`'s; mlptui.render.summary_text writes it as text and
Markdown)."""

from __future__ import annotations

import dataclasses

import numpy as np

from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.analysis.critical_path.critical_path_report import critical_path_report
from mlptui.trace.analysis.events.device_arch import device_arch
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.operators.dispatch import dispatch_paths
from mlptui.trace.analysis.report.profile_sections import profile_sections
from mlptui.trace.analysis.steps.integrity import integrity
from mlptui.trace.analysis.steps.steps import VERDICT_RULE, all_step_stats, step_stats
from mlptui.trace.model import KERNEL, MEMCPY, MEMSET, Trace
from mlptui.trace.reports.attention import AttentionFacts
from mlptui.trace.reports.common import StepStats
from mlptui.trace.reports.summary import (
    Counts,
    DeviceMarks,
    KernelGroup,
    LaunchCallGroup,
    MemoryOpGroup,
    SummaryReport,
)


def _r(x: float) -> float:
    return round(x, 3)


def _rounded(s: StepStats) -> StepStats:
    return dataclasses.replace(
        s, cpu_us=_r(s.cpu_us), gpu_busy_us=_r(s.gpu_busy_us), gpu_idle_us=_r(s.gpu_idle_us),
        launch_overhead_us=_r(s.launch_overhead_us), window_us=_r(s.window_us),
        device_busy_us=_r(s.device_busy_us), device_idle_us=_r(s.device_idle_us))


def _grouped(trace: Trace, cats: frozenset[str]) -> list[tuple[str, str, int, float]]:
    """(name, category, count, total µs) of the GPU ops of `cats`, by name, most time first."""
    t = tables(trace)
    pick = np.flatnonzero(t.gpu_is(cats))
    names, first, inverse = unique_ids(t.gpu_name[pick], return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(names)).tolist()
    totals = np.bincount(inverse, weights=t.gpu_dur[pick], minlength=len(names)).tolist()   # in order, as +=
    cat_of = t.gpu_cat[pick[first]].tolist()
    rows = [(t.strings[name], t.strings[cat], n, total)
            for name, cat, n, total in zip(names.tolist(), cat_of, counts, totals, strict=True)]
    rows.sort(key=lambda r: (-r[3], r[0]))
    return rows


def _kernels(trace: Trace) -> list[KernelGroup]:
    out = []
    for name, _cat, n, total in _grouped(trace, frozenset({KERNEL})):
        k = kernel_name(trace, name)
        out.append(KernelGroup(name=name, short=k.short, family=k.family, library=k.library, count=n,
                               total_us=_r(total), mean_us=_r(total / n)))
    return out


def _device_marks(trace: Trace) -> DeviceMarks | None:
    from mlptui.trace.analysis.steps.device_marks import device_marks_section

    return device_marks_section(trace)


def _attention(trace: Trace) -> AttentionFacts | None:
    from mlptui.trace.analysis.attention.attention import attention_facts

    return attention_facts(trace)


def summarize(trace: Trace, *, path_segments: bool = True) -> SummaryReport:
    """The whole report. `path_segments=False` leaves each critical-path step's segments out (an empty list): the
    text and Markdown renderings never show them, and on a big trace they are most of the report (a row per
    segment of every step, which the text rendering's terminal-safe copy would walk one by one)."""
    t = tables(trace)
    memory = [MemoryOpGroup(name=name, kind="memcpy" if cat == MEMCPY else "memset", count=n, total_us=_r(total),
                            mean_us=_r(total / n))
              for name, cat, n, total in _grouped(trace, frozenset({MEMCPY, MEMSET}))]
    profile = profile_sections(trace)
    return SummaryReport(
        source=trace.source,
        format=trace.format,
        device=trace.device,
        device_arch=device_arch(trace.device, trace.meta),
        warnings=list(trace.warnings),
        integrity=integrity(trace).report(),
        manifest=trace.manifest,
        findings=trace_findings(trace),
        attention=_attention(trace),
        counts=Counts(events=trace.meta.get("events", 0), cpu_ops=t.n_ops, gpu_ops=t.n_gpu,
                      threads=len(trace.threads), streams=len(trace.streams), steps=len(trace.steps),
                      unlinked_gpu_ops=int(((t.gpu_launch < 0) & (t.gpu_op < 0)).sum())),
        verdict_rule=VERDICT_RULE,
        steps=[_rounded(s) for s in all_step_stats(trace)],
        total=_rounded(step_stats(trace, None)),
        kernels=_kernels(trace),
        memory_ops=memory,
        launch_calls=[LaunchCallGroup(name=c.name, kind=c.kind, count=c.count, total_us=_r(c.total_us))
                      for c in launch_calls(trace)],
        dispatch=dispatch_paths(trace),
        device_marks=_device_marks(trace),
        critical_path=critical_path_report(trace, segments=path_segments),
        overview=profile.overview,
        recommendations=profile.recommendations,
        operators=profile.operators,
        kernel_stats=profile.kernel_stats,
        memory=profile.memory,
        modules=profile.modules,
    )
