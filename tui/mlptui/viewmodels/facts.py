"""Everything the trace screen shows that costs more than a key press to compute, computed once per
trace off the UI thread: step stats, per-step kernel and launch lists, timeline lanes, findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlptui.trace.analysis.advice.findings import focus_step, kernel_mix, trace_findings
from mlptui.trace.analysis.events.launches import (
    LaunchCallStat,
    OpLaunches,
    call_kinds,
    launch_calls,
    launches_by_op,
)
from mlptui.trace.analysis.expectations.expect_file import outcomes_beside
from mlptui.trace.analysis.steps.integrity import integrity
from mlptui.trace.analysis.steps.steps import StepStats, all_step_stats, is_cpu_op, step_stats
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.reports.check import Outcome
from mlptui.viewmodels.lanes import Lane, build_lanes
from mlptui.viewmodels.trust_text import trust_banner


@dataclass
class TraceFacts:
    trace: Trace
    stats: list[StepStats]                               # [all steps, step 0, step 1, ...]
    gpu_by_step: dict[int | None, list[int]]             # None: all steps
    launches_by_step: dict[int | None, list[OpLaunches]] | None    # None until `add_launches` ran
    calls_by_step: dict[int | None, list[LaunchCallStat]] = field(default_factory=dict)
    lanes: list[Lane] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    focus_mix: str = ""          # kernel_mix of the findings' step: `3 GEMM + gelu + mul`
    focus_cpu_ops: int = 0       # CPU ops in that step (steps.is_cpu_op: ops and annotations)
    profile: object | None = None    # mlptui.viewmodels.profile_views.ProfileViews, once the views were opened
    expectations: list[Outcome] = field(default_factory=list)    # expect.toml beside the trace, mismatches first
    expect_problem: str | None = None    # why that file could not be used
    trust: str | None = None     # the trust banner (viewmodels.trust_text) when the trace has integrity problems

    @property
    def label(self) -> str:
        return trace_label(self.trace)

    def per_step(self) -> StepStats:
        """The stats of the step the findings speak of (or of the whole trace)."""
        step = focus_step(self.trace)
        return self.stats[0] if step is None else self.stats[step + 1]


def trace_label(trace: Trace) -> str:
    """`mlp · eager · bf16` from the manifest, else the file name."""
    return run_label(trace.manifest, trace.source)


def run_label(run: dict[str, Any] | None, source: str) -> str:
    """`mlp · eager · bf16` from a manifest entry, else the file name of `source` without its suffixes."""
    run = run or {}
    parts = [str(run[k]) for k in ("workload", "mode", "dtype") if run.get(k)]
    if parts and run.get("train"):
        parts.insert(1, "train")
    if parts:
        return " · ".join(parts)
    name = Path(source.rstrip("/")).name
    return name.removesuffix(".gz").removesuffix(".json").removesuffix(".pt.trace")


INLINE_LAUNCH_OPS = 200_000   # traces with fewer ops get their launch lists before the screen shows


def build_facts(trace: Trace) -> TraceFacts:
    """Step stats, per-step kernel lists, lanes and findings; launch lists too for all but big traces
    (those come from `add_launches`, run by the trace screen in a worker after it shows)."""
    stats = [step_stats(trace, None), *all_step_stats(trace)]
    gpu_by_step: dict[int | None, list[int]] = {None: [g.id for g in trace.gpu]}
    for g in trace.gpu:
        gpu_by_step.setdefault(g.step, []).append(g.id)
    step = focus_step(trace)
    cpu_ops = sum(1 for o in trace.ops if is_cpu_op(o) and o.step == (-1 if step is None else step))
    facts = TraceFacts(trace, stats, gpu_by_step, None, {}, build_lanes(trace), trace_findings(trace),
                       kernel_mix(trace, gpu_by_step.get(step, [])), cpu_ops)
    facts.expectations, facts.expect_problem = outcomes_beside(trace)
    facts.trust = trust_banner(integrity(trace).report())
    if len(trace.ops) <= INLINE_LAUNCH_OPS:
        add_launches(facts)
    return facts


def add_launches(facts: TraceFacts) -> None:
    trace = facts.trace
    launches = launches_by_op(trace, None)
    by_step: dict[int | None, list[OpLaunches]] = {None: launches}
    for row in launches:
        step = trace.ops[row.calls[0]].step if row.calls else (trace.ops[row.op].step if row.op >= 0 else -1)
        by_step.setdefault(step, []).append(row)
    facts.calls_by_step = {None: launch_calls(trace, None)}
    facts.launches_by_step = by_step


def call_stats(facts: TraceFacts, step: int | None) -> list[LaunchCallStat]:
    """`launch_calls` of one step, summed from that step's launch rows (cached; cheap per step)."""
    cached = facts.calls_by_step.get(step)
    if cached is not None or facts.launches_by_step is None:
        return cached or []
    ops = facts.trace.ops
    totals: dict[str, list[float]] = {}
    for row in facts.launches_by_step.get(step, []):
        for c in row.calls:
            entry = totals.setdefault(ops[c].name, [0, 0.0])
            entry[0] += 1
            entry[1] += ops[c].dur
    kinds = call_kinds(facts.trace)
    stats = [LaunchCallStat(name, kinds.get(name) or classify_call(name), int(n), us) for name, (n, us) in totals.items()]
    stats.sort(key=lambda s: -s.total_us)
    facts.calls_by_step[step] = stats
    return stats


def kernel_count(facts: TraceFacts) -> int:
    step = focus_step(facts.trace)
    return sum(1 for g in facts.gpu_by_step.get(step, []) if facts.trace.gpu[g].cat == KERNEL)
