"""Text and Markdown of the profiler views (mlptui.trace.reports.profile): the devices, the
recommendations, then a table per view (overview, operators, kernels, memory, modules), with the
overview's n/a figures said why."""

from __future__ import annotations

from mlptui.base.units import MISSING, duration, share, size
from mlptui.render.tables import md_table, text_table
from mlptui.trace.analysis.steps.breakdown import CATEGORIES
from mlptui.trace.reports.profile import (
    OverviewReport,
    OverviewRow,
    ProfileSections,
    UsedDevice,
)


def na_notes(ov: OverviewReport) -> list[str]:
    """One line per figure of the scope's total that is "n/a", saying why; then what the trace could not
    link (mlptui.trace.analysis.events.unlinked)."""
    total = ov.total
    notes = [(figure, why) for figure, why, measured in (
        ("SM eff", total.sm_efficiency_na, total.sm_efficiency_measured),
        ("achieved occupancy", total.achieved_occupancy_na, total.achieved_occupancy_measured)) if measured is None]
    measured = [f"{figure} {value:.0%}" for figure, value in (
        ("SM eff", total.sm_efficiency_measured), ("achieved occupancy", total.achieved_occupancy_measured),
        ("SM throughput", total.sm_throughput_measured)) if value is not None]
    lines = [f"{figure} n/a: {why}" for figure, why in notes if why]
    if measured:
        lines.append("m: measured by the GPU's hardware counters (CUPTI PM sampling, mean of the samples in the "
                     f"window) in place of the estimate: {', '.join(measured)}")
    return lines + [line for line in (ov.unlinked, ov.outside_operators) if line]


def _na(estimate: float | None, why: str | None, measured: float | None) -> str:
    """A share, or "n/a" where the overview says why it cannot be known; a figure hardware counters measured
    in place of the estimate, marked "m"."""
    if measured is not None:
        return f"{share(measured)} m"
    return "n/a" if why else share(estimate)


def _net(n: int | None) -> str:
    """Net bytes per op; None: not known (frees without Addr)."""
    return "n/a" if n is None else size(n)


_OV_HEAD = ["step", "duration", "GPU util", "SM eff", "occ ach/th", "TC"] + list(CATEGORIES)


def _ov_row(s: OverviewRow) -> list[str]:
    b = s.breakdown_us
    return [s.name, duration(s.duration_us), share(s.gpu_util),
            _na(s.sm_efficiency, s.sm_efficiency_na, s.sm_efficiency_measured),
            f"{_na(s.achieved_occupancy, s.achieved_occupancy_na, s.achieved_occupancy_measured)}/"
            f"{share(s.theoretical_occupancy)}", share(s.tensor_core_share)] + [duration(b[c]) for c in CATEGORIES]


_OP_HEAD = ["op", "calls", "host self", "host total", "dev self", "dev total", "TC elig/share"]


def _tables(p: ProfileSections, labels: dict[str, str], top: int) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, headers, rows) of each section, shared by the text and Markdown renderings."""
    ov = p.overview
    steps = ov.steps[:top] + ([ov.total] if len(ov.steps) > 1 else [])
    out = [("overview", _OV_HEAD, [_ov_row(s) for s in steps])]
    out.append(("operators (most device time first)", _OP_HEAD,
                [[o.name, str(o.calls), duration(o.host_self_us), duration(o.host_total_us),
                  duration(o.device_self_us), duration(o.device_total_us),
                  ("yes " + share(o.tc_share)) if o.tc_eligible else ""] for o in p.operators[:top]]))
    out.append(("kernels, completed", ["kernel", "TC", "calls", "total", "mean", "min", "max", "blk/SM", "occ"],
                [[labels[k.name], "yes" if k.tensor_cores else "", str(k.calls), duration(k.total_us),
                  duration(k.mean_us), duration(k.min_us), duration(k.max_us),
                  "n/a" if k.blocks_per_sm is None else f"{k.blocks_per_sm:.2f}",
                  "n/a" if k.achieved_occupancy is None else share(k.achieved_occupancy)]
                 for k in p.kernel_stats[:top]]))
    mem = p.memory
    if mem is not None:
        out.append(("memory peaks", ["device", "peak allocated", "peak reserved", "at", "op"],
                    [[("cpu" if m.kind == "cpu" else f"{m.kind}:{m.id}"), size(m.peak_allocated_bytes),
                      size(m.peak_reserved_bytes), duration(m.peak_ts), m.peak_op or MISSING] for m in mem.devices]))
        out.append(("memory by op", ["op", "allocs", "frees", "allocated", "net", "net w/ children"],
                    [[o.name, str(o.allocs), str(o.frees), size(o.bytes_allocated), _net(o.net_bytes),
                      _net(o.net_bytes_with_children)] for o in mem.ops[:top]]))
    if p.modules is not None:
        out.append(("modules", ["module", "calls", "host", "device"],
                    [["  " * (len(m.path) - 1) + m.path[-1], str(m.calls), duration(m.host_us), duration(m.device_us)]
                     for m in p.modules[:top * 2]]))
    return out


def _device_lines(ov: OverviewReport) -> list[str]:
    lines = []
    for dev in ov.devices:
        if not isinstance(dev, UsedDevice):
            continue
        memory = f", {size(dev.memory_bytes)}" if isinstance(dev.memory_bytes, (int, float)) else ""
        lines.append(f"device {dev.id}: {dev.label}{memory}; {dev.kernels} kernels, "
                     f"GPU util {share(dev.gpu_util)}, "
                     f"SM eff {_na(dev.sm_efficiency, dev.sm_efficiency_na, dev.sm_efficiency_measured)}, "
                     f"TC {share(dev.tensor_core_share)}")
    return lines


def render_profile_text(p: ProfileSections, labels: dict[str, str], top: int = 15) -> list[str]:
    """The profiler views of a summary, as lines of text; kernels named by `labels` (raw name -> label)."""
    out = [""] + _device_lines(p.overview)
    if p.recommendations:
        out += ["", "recommendations"] + [f"  [{r.rule}] {r.message} ({r.figures.get('device')}; the rule "
                                          f"applies to {r.applies_to})" for r in p.recommendations]
    for title, head, rows in _tables(p, labels, top):
        if rows:
            out += ["", title] + ["  " + r for r in text_table(head, rows, set(range(1, len(head))))]
            if title == "overview":
                out += ["  " + note for note in na_notes(p.overview)]
    return out


def render_profile_markdown(p: ProfileSections, labels: dict[str, str], top: int = 15) -> list[str]:
    """The profiler views of a summary, as Markdown lines; kernels named by `labels` (raw name -> label)."""
    out = ["", "#### Devices", ""] + [f"- {line}" for line in _device_lines(p.overview)]
    if p.recommendations:
        out += ["", "#### Recommendations", ""] + [f"- **{r.rule}**: {r.message} ({r.figures.get('device')}; "
                                                   f"the rule applies to {r.applies_to})" for r in p.recommendations]
    for title, head, rows in _tables(p, labels, top):
        if rows:
            out += ["", f"#### {title[0].upper()}{title[1:]}", ""] + md_table(head, rows)
            if title == "overview":
                out += [""] + [f"- {note}" for note in na_notes(p.overview)]
    return out
