"""The critical path of the aligned steps, side by side: its length and its time by kind on A and on B.

Each side's path is mlptui.trace.analysis.critical_path's for its aligned step (the whole trace when it has
no steps); `delta_us` is B minus A. Every kind is listed, in KINDS' order. Its text is
mlptui.render.critical_diff_text's.
"""

from __future__ import annotations

from mlptui.trace.analysis.critical_path.critical_graph import KINDS
from mlptui.trace.analysis.critical_path.critical_path import critical_path
from mlptui.trace.model import Trace
from mlptui.trace.reports.diff import CriticalPathDiff, KindDelta, SharePair


def _r(x: float) -> float:
    return round(x, 3) + 0.0        # + 0.0: never a negative zero


def critical_path_diff(a: Trace, b: Trace, step_a: int | None, step_b: int | None) -> CriticalPathDiff:
    pa, pb = critical_path(a, step_a), critical_path(b, step_b)
    return CriticalPathDiff(
        a_step=pa.name, b_step=pb.name,
        a_us=_r(pa.length_us), b_us=_r(pb.length_us), delta_us=_r(pb.length_us - pa.length_us),
        gpu_share=SharePair(a=round(pa.gpu_share, 4), b=round(pb.gpu_share, 4)),
        by_kind=[KindDelta(kind=k, a_us=_r(pa.breakdown_us[k]), b_us=_r(pb.breakdown_us[k]),
                           delta_us=_r(pb.breakdown_us[k] - pa.breakdown_us[k])) for k in KINDS],
    )


def swapped(cp: CriticalPathDiff) -> CriticalPathDiff:
    """The same block with A and B exchanged."""
    return CriticalPathDiff(
        a_step=cp.b_step, b_step=cp.a_step, a_us=cp.b_us, b_us=cp.a_us, delta_us=-cp.delta_us + 0.0,
        gpu_share=SharePair(a=cp.gpu_share.b, b=cp.gpu_share.a),
        by_kind=[KindDelta(kind=r.kind, a_us=r.b_us, b_us=r.a_us, delta_us=-r.delta_us + 0.0) for r in cp.by_kind])
