"""The profiler views of `summary --json` (overview, recommendations, operators, kernel_stats, memory,
modules), typed as mlptui.trace.reports.profile. Scope: the steps, or the whole trace when it has none; or
one step. Their text and Markdown: mlptui.render.profile_text."""

from __future__ import annotations

from mlptui.trace.analysis.advice.recommendations import recommendations
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.kernels.kernel_stats import KernelGroup, kernel_stats
from mlptui.trace.analysis.memory.memory import MemoryReport, memory_report
from mlptui.trace.analysis.operators.modules import ModuleRow, module_tree
from mlptui.trace.analysis.operators.operators import OpGroup, operators_in_steps
from mlptui.trace.analysis.steps.breakdown import CATEGORIES
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.model import Trace
from mlptui.trace.reports.profile import (
    DevicePeak,
    KernelStat,
    MemorySection,
    ModuleStat,
    OpAllocations,
    OperatorStat,
    OverviewReport,
    ProfileSections,
    Unfreed,
)


def profile_sections(trace: Trace, step: int | None = None) -> ProfileSections:
    """Every section over the scope: every step (the whole trace when it has none), or `step`."""
    ov = overview(trace, step=step)
    ops = operators_in_steps(trace, step=step)
    mem = memory_report(trace, step)
    mods = module_tree(trace, step)
    kernels = kernel_stats(trace, step, steps_only=bool(trace.steps))
    return ProfileSections(
        overview=ov,
        recommendations=recommendations(trace, ov, ops, step),
        operators=[operator_stat(o) for o in ops],
        kernel_stats=[kernel_stat(k, kernel_name(trace, k.name).short) for k in kernels],
        memory=None if mem is None else memory_section(mem),
        modules=None if mods is None else [module_stat(m) for m in mods],
    )


def sections_by_key(sections: ProfileSections) -> dict[str, object]:
    """The sections by their key in `summary --json`, in its order."""
    return {"overview": sections.overview, "recommendations": sections.recommendations,
            "operators": sections.operators, "kernel_stats": sections.kernel_stats, "memory": sections.memory,
            "modules": sections.modules}


def operator_stat(o: OpGroup) -> OperatorStat:
    share = o.tc_share
    return OperatorStat(name=o.name, input_shapes=o.input_shapes, calls=o.calls, host_self_us=round(o.host_self_us, 3),
                        host_total_us=round(o.host_total_us, 3), device_self_us=round(o.device_self_us, 3),
                        device_total_us=round(o.device_total_us, 3), tc_eligible=o.tc_eligible,
                        tc_share=None if share is None else round(share, 4))


def kernel_stat(k: KernelGroup, short: str) -> KernelStat:
    bps, occ = k.blocks_per_sm, k.achieved_occupancy
    return KernelStat(name=k.name, op=k.op, tensor_cores=k.tensor_cores, calls=k.calls, total_us=round(k.total_us, 3),
                      mean_us=round(k.mean_us, 3), min_us=round(k.min_us, 3), max_us=round(k.max_us, 3),
                      blocks_per_sm=None if bps is None else round(bps, 3),
                      achieved_occupancy=None if occ is None else round(occ, 4), short=short)


def memory_section(m: MemoryReport) -> MemorySection:
    return MemorySection(
        devices=[DevicePeak(id=d.id, kind=d.kind, peak_allocated_bytes=d.peak_allocated,
                            peak_reserved_bytes=d.peak_reserved,
                            peak_ts=None if d.peak_ts is None else round(d.peak_ts, 3), peak_op=d.peak_op,
                            totals_recorded=d.totals_recorded) for d in m.devices],
        ops=[OpAllocations(name=o.name, allocs=o.allocs, frees=o.frees, bytes_allocated=o.bytes_allocated,
                           net_bytes=o.net_bytes if o.net_known else None,
                           net_bytes_with_children=o.net_bytes_with_children if o.net_known else None)
             for o in m.ops],
        unfreed=[Unfreed(op=name, bytes=n) for name, n in m.unfreed],
    )


def module_stat(m: ModuleRow) -> ModuleStat:
    return ModuleStat(path=list(m.path), calls=m.calls, host_us=round(m.host_us, 3), device_us=round(m.device_us, 3))


def breakdown_rows(ov: OverviewReport) -> list[dict[str, str | float]]:
    """The step-time breakdown as flat rows (`summary --csv breakdown`): each step of the overview, then
    the scope's total when there are several, with its duration and each category's µs."""
    steps = ov.steps + ([ov.total] if len(ov.steps) > 1 else [])
    return [{"name": s.name, "duration_us": s.duration_us, **{f"{c}_us": s.breakdown_us[c] for c in CATEGORIES}}
            for s in steps]
