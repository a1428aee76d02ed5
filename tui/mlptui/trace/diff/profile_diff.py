"""The profiler views of a diff: the operator table of the aligned steps side by side, and both
sides' overview figures (over all their steps).

Operator rows are joined by op name; status "added" (B only), "removed" (A only), "changed" (calls
differ) or "same". Rows are ordered by the larger side's device total time, then host total time.
"""

from __future__ import annotations

from mlptui.trace.analysis.operators.operators import OpGroup, operators
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.model import Trace
from mlptui.trace.reports.diff import OperatorDiffRow, OpSide, OverviewPair, OverviewSide, ProfileDiff
from mlptui.trace.reports.profile import UsedDevice


def _side(g: OpGroup | None) -> OpSide | None:
    if g is None:
        return None
    return OpSide(calls=g.calls, host_self_us=round(g.host_self_us, 3), host_total_us=round(g.host_total_us, 3),
                  device_self_us=round(g.device_self_us, 3), device_total_us=round(g.device_total_us, 3))


def operator_diff(a: Trace, b: Trace, step_a: int | None, step_b: int | None) -> list[OperatorDiffRow]:
    """Each op of either side's aligned step, with its calls and host/device self/total µs on each side."""
    ga = {g.name: g for g in operators(a, step_a)}
    gb = {g.name: g for g in operators(b, step_b)}
    rows = []
    for name in ga.keys() | gb.keys():
        x, y = ga.get(name), gb.get(name)
        status = "added" if x is None else "removed" if y is None else "changed" if x.calls != y.calls else "same"
        rows.append(OperatorDiffRow(name=name, status=status, a=_side(x), b=_side(y)))

    def weight(r: OperatorDiffRow) -> tuple[float, float, str]:
        sides = [s for s in (r.a, r.b) if s is not None]
        return (-max(s.device_total_us for s in sides), -max(s.host_total_us for s in sides), r.name)

    rows.sort(key=weight)
    return rows


def _overview_side(trace: Trace) -> OverviewSide:
    ov = overview(trace)
    total = ov.total
    return OverviewSide(scope=total.name, gpu_util=total.gpu_util, sm_efficiency=total.sm_efficiency,
                        achieved_occupancy=total.achieved_occupancy, theoretical_occupancy=total.theoretical_occupancy,
                        tensor_core_share=total.tensor_core_share, duration_us=total.duration_us,
                        breakdown_us=total.breakdown_us, devices=[d for d in ov.devices if isinstance(d, UsedDevice)])


def overview_pair(a: Trace, b: Trace) -> OverviewPair:
    """Each side's overview total (all steps) and devices."""
    return OverviewPair(a=_overview_side(a), b=_overview_side(b))


def profile_diff(a: Trace, b: Trace, step_a: int | None, step_b: int | None) -> ProfileDiff:
    """The `operators` and `overview` of `mlptui diff --json`."""
    return ProfileDiff(operators=operator_diff(a, b, step_a, step_b), overview=overview_pair(a, b))
