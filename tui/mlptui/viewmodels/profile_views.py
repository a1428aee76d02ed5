"""What the profiler views show, computed once per trace off the UI thread (`build_profile`), and the
overview's text: device lines, the per-step table and a stacked bar per step.

The bar draws each category with its own letter (K kernel, M memcpy, S memset, N communication,
R runtime, D DataLoader, C CPU exec, · other), coloured from the 16 standard colours, so it reads in 16 colours and under
NO_COLOR alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from mlptui.render.profile_text import na_notes
from mlptui.trace.analysis.advice.recommendations import recommendations
from mlptui.trace.analysis.critical_path.critical_path import CriticalPath, critical_path
from mlptui.trace.analysis.critical_path.critical_path_report import label
from mlptui.trace.analysis.kernels.kernel_stats import KernelGroup, kernel_stats
from mlptui.trace.analysis.memory.memory import MemoryReport, memory_report
from mlptui.trace.analysis.operators.modules import ModuleRow, module_tree
from mlptui.trace.analysis.operators.operators import OpGroup, operators_in_steps
from mlptui.trace.analysis.steps.breakdown import CATEGORIES, Spans, category_intervals
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.model import Trace
from mlptui.trace.reports.profile import OverviewReport, OverviewRow, Recommendation, UsedDevice
from mlptui.viewmodels import fmt

GLYPHS = {"kernel": "K", "memcpy": "M", "memset": "S", "communication": "N", "runtime": "R", "dataloader": "D",
          "cpu_exec": "C", "other": "·"}
STYLES = {"kernel": "bold white on blue", "memcpy": "black on magenta", "memset": "black on cyan",
          "communication": "black on white", "runtime": "black on yellow", "dataloader": "white on red", "cpu_exec": "black on green", "other": "dim"}
MAX_STEPS = 12             # steps listed in the overview; the rest are summed in the total
LABELS = {"kernel": "kernel", "memcpy": "memcpy", "memset": "memset", "communication": "communication",
          "runtime": "runtime", "dataloader": "DataLoader", "cpu_exec": "CPU exec", "other": "other"}


@dataclass
class ProfileData:
    trace: Trace
    step: int | None                # the scope: one step, or None for every step (the whole trace without steps)
    overview: OverviewReport
    recommendations: list[Recommendation]
    operators: list[OpGroup]
    kernels: list[KernelGroup]
    memory: MemoryReport | None
    modules: list[ModuleRow] | None
    grouped: dict[str, list[Any]] = field(default_factory=dict)   # "operators-shapes", "kernels-op", once asked
    critical: CriticalPath | None = None     # the scope's step (every step: the last one), once asked

    @property
    def scope(self) -> str:
        return self.overview.total.name


class ProfileViews:
    """The views of one trace per scope, each computed once (off the UI thread) and kept; the category
    intervals every scope's breakdown starts from are computed once for all of them."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.scopes: dict[int | None, ProfileData] = {}
        self._spans: Spans | None = None

    def get(self, step: int | None) -> ProfileData | None:
        return self.scopes.get(step)

    def build(self, step: int | None, groupings: bool = True) -> ProfileData:
        """The scope's views; `groupings=False` leaves the other groupings to `build_groupings` (the
        views can show before them: the operators by input shapes read every op's args)."""
        data = self.scopes.get(step)
        if data is None:
            if self._spans is None:
                self._spans = category_intervals(self.trace)
            data = self.scopes[step] = build_profile(self.trace, step, self._spans, groupings=groupings)
        elif groupings:
            self.build_groupings(step)
        return data

    def build_groupings(self, step: int | None) -> None:
        data = self.scopes.get(step)
        if data is not None:
            regrouped(data, "operators-shapes")
            regrouped(data, "kernels-op")


def build_profile(trace: Trace, step: int | None = None, spans: Spans | None = None, *,
                  groupings: bool = True) -> ProfileData:
    """Every view's rows over the scope, both groupings included (unless `groupings` is False): `a` then
    costs a repaint, not a pass over the trace while the keys wait for the interpreter lock."""
    ov = overview(trace, step=step, spans=spans)
    ops = operators_in_steps(trace, step=step)
    data = ProfileData(trace, step, ov, recommendations(trace, ov, ops, step), ops,
                       kernel_stats(trace, step, steps_only=bool(trace.steps)), memory_report(trace, step),
                       module_tree(trace, step))
    if groupings:
        regrouped(data, "operators-shapes")
        regrouped(data, "kernels-op")
    return data


def regrouped(data: ProfileData, which: str) -> list[Any]:
    """The other grouping of a view (operators by input shapes; kernels by launching op), computed once."""
    if which not in data.grouped:
        if which == "operators-shapes":
            data.grouped[which] = operators_in_steps(data.trace, by_shapes=True, step=data.step)
        else:
            data.grouped[which] = kernel_stats(data.trace, data.step, by_op=True, steps_only=bool(data.trace.steps))
    return data.grouped[which]


def critical_of(data: ProfileData) -> CriticalPath:
    """The critical path of the scope's step; of the last step for every step (the whole trace without
    steps). Computed once, when the view is first shown."""
    if data.critical is None:
        trace = data.trace
        step = data.step if data.step is not None else (len(trace.steps) - 1 if trace.steps else None)
        data.critical = critical_path(trace, step)
    return data.critical


def critical_text(p: CriticalPath) -> Text:
    """The path's length, its time by kind, and the what-if of its top names."""
    out = Text()
    out.append(f"{p.name}: critical path {fmt.us(p.length_us)}", "bold")
    out.append(f" (the step window; device work {fmt.pct(p.gpu_share)} of it)\n")
    parts = "  ".join(f"{k.replace('_', ' ')} {fmt.us(us)}" for k, us in p.breakdown_us.items() if us > 0)
    out.append(f"  {parts}\n")
    kinds = {name: kind for name, kind, _us in p.top}
    for name, us in p.what_if:
        out.append(f"  without {label(name, kinds.get(name, ''))}: {fmt.us(us)} (saves {fmt.us(p.length_us - us)})\n", "dim")
    if p.unexplained_us > 0:
        out.append(f"  {fmt.us(p.unexplained_us)} follows no recorded dependency\n", "dim")
    return out


def bar_widths(parts: dict[str, float], width: int) -> list[tuple[str, int]]:
    """Cells per category for a bar `width` wide: proportional, largest remainders first, so the cells
    add up to `width` exactly (a category under half a cell may get none)."""
    total = sum(parts.values())
    if total <= 0 or width <= 0:
        return [("other", max(width, 0))]
    exact = [(c, parts.get(c, 0.0) * width / total) for c in CATEGORIES]
    cells = {c: int(x) for c, x in exact}
    left = width - sum(cells.values())
    for c, _x in sorted(exact, key=lambda cx: -(cx[1] - int(cx[1])))[:left]:
        cells[c] += 1
    return [(c, cells[c]) for c in CATEGORIES if cells[c]]


def stacked_bar(parts: dict[str, float], width: int) -> Text:
    text = Text()
    for c, n in bar_widths(parts, width):
        text.append(GLYPHS[c] * n, STYLES[c])
    return text


def legend() -> Text:
    text = Text("  ")
    for c in CATEGORIES:
        text.append(GLYPHS[c], STYLES[c])
        text.append(f" {LABELS[c]}  ")
    return text


def _na(estimate: float | None, why: str | None, measured: float | None) -> str:
    if measured is not None:
        return f"{fmt.pct(measured)} m"      # measured by hardware counters (na_notes says so)
    return "n/a" if why else fmt.pct(estimate)


def overview_text(data: ProfileData, width: int) -> Text:
    ov = data.overview
    out = Text()
    for dev in ov.devices:
        if not isinstance(dev, UsedDevice):
            continue
        out.append(f"device {dev.id}: ", "bold")
        memory = f", {fmt.size_bytes(dev.memory_bytes)}" if isinstance(dev.memory_bytes, (int, float)) else ""
        out.append(f"{dev.label}{memory}; {dev.kernels} kernels\n")
    steps: list[OverviewRow | str] = list(ov.steps)     # a str: the steps left out, in words
    if len(steps) > MAX_STEPS:      # the first and the last steps; `summary --json` has them all
        first = steps[: MAX_STEPS // 2]
        steps = [*first, f"… {len(steps) - MAX_STEPS} more", *steps[len(steps) - (MAX_STEPS - len(first)):]]
    steps = steps + ([ov.total] if len(ov.steps) > 1 else [])
    name_w = max([len(s if isinstance(s, str) else s.name) for s in steps] + [4])
    head = f"{'step':<{name_w}} {'time':>9} {'GPU util':>8} {'SM eff':>6} {'occ ach/th':>10} {'TC':>4}\n"
    out.append(head, "bold")
    for s in steps:
        if isinstance(s, str):
            out.append(f"{s}\n", "dim")
            continue
        occ = (f"{_na(s.achieved_occupancy, s.achieved_occupancy_na, s.achieved_occupancy_measured)}/"
               f"{fmt.pct(s.theoretical_occupancy)}")
        sm = _na(s.sm_efficiency, s.sm_efficiency_na, s.sm_efficiency_measured)
        out.append(f"{s.name:<{name_w}} {fmt.us(s.duration_us):>9} {fmt.pct(s.gpu_util):>8} "
                   f"{sm:>6} {occ:>10} {fmt.pct(s.tensor_core_share):>4}\n")
    for note in na_notes(ov):
        out.append(f"  {note}\n", "dim")
    out.append("\nstep-time breakdown (each µs once, first of: K M S N R D C ·)\n", "bold")
    bar_w = max(10, width - name_w - 2)
    for s in steps:
        if isinstance(s, str):
            out.append(f"{s}\n", "dim")
            continue
        out.append(f"{s.name:<{name_w}} ")
        out.append_text(stacked_bar(s.breakdown_us, bar_w))
        out.append("\n")
    out.append_text(legend())
    out.append("\n")
    total = ov.total
    dur = total.duration_us or 1.0
    parts = "  ".join(f"{LABELS[c]} {fmt.us(total.breakdown_us[c])} ({fmt.pct(total.breakdown_us[c] / dur)})"
                      for c in CATEGORIES if total.breakdown_us[c] > 0)
    out.append(f"  {total.name}: {parts}\n")
    out.append("\nrecommendations\n", "bold")
    if not data.recommendations:
        out.append("  none of the rules fired\n", "dim")
    for r in data.recommendations:
        out.append(f"  [{r.rule}] ", "bold")
        out.append(f"{r.message}\n")
        figures = ", ".join(f"{k}={v}" for k, v in r.figures.items())
        out.append(f"      {figures}; the rule applies to {r.applies_to}\n", "dim")
    return out
