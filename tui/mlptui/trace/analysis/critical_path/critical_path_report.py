"""The critical path's part of `mlptui summary --json` (shape in docs/json.md), and the label a view gives a
name on the path.

    critical_path_report(trace, segments=True) -> CriticalPathReport
    label(name, kind, shorts) -> str
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from mlptui.trace.analysis.critical_path.critical_path import CriticalPath, critical_paths
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.reports.summary import CriticalPathReport, CriticalPathStep, PathSegment, PathShare, WhatIf

COLLECTIVES_NOTE = ("collective kernels count as device work with their measured duration (one rank's trace does "
                    "not say which rank each waited for)")


def _r(x: float) -> float:
    return round(x, 3)


def _r_all(values: np.ndarray) -> list[float]:
    """round(x, 3) of each, through numpy: rint(x * 1000) / 1000 is the same float wherever x * 1000 is
    not within reach of a half (those, and values too large for it, are rounded one by one)."""
    x = values.astype(np.float64, copy=False)
    y = x * 1000.0
    r = np.rint(y)
    out = r / 1000.0
    doubt = ~(np.abs(np.abs(y - r) - 0.5) > 1e-6) | ~(np.abs(y) < 2.0**50)
    for i in np.flatnonzero(doubt).tolist():
        out[i] = round(float(x[i]), 3)
    rounded: list[float] = out.tolist()
    return rounded


def path_report(p: CriticalPath) -> CriticalPathStep:
    return _step_report(p, _segment_rows([p])[0])


def _step_report(p: CriticalPath, segments: list[PathSegment]) -> CriticalPathStep:
    return CriticalPathStep(
        step=p.name, length_us=_r(p.length_us), window_us=_r(p.window_us), remainder_us=_r(p.remainder_us) + 0.0,
        unexplained_us=_r(p.unexplained_us), gpu_share=round(p.gpu_share, 4),
        breakdown_us={k: _r(v) for k, v in p.breakdown_us.items()},
        top=[PathShare(name=n, kind=k, us=_r(us)) for n, k, us in p.top],
        what_if=[WhatIf(name=n, step_us=_r(us)) for n, us in p.what_if],
        segments=segments,
    )


def _segment_rows(paths: list[CriticalPath]) -> list[list[PathSegment]]:
    """Each path's segments as the report's rows, every path's made in one pass: the rounding is one set of
    numpy calls and the rows one loop for the whole trace, then cut path by path."""
    cols = [p.columns for p in paths]
    if not cols:
        return []
    bounds = np.cumsum([0] + [len(c) for c in cols]).tolist()
    starts = _r_all(np.concatenate([c.start_us for c in cols]))
    durs = _r_all(np.concatenate([c.dur_us for c in cols]))
    kinds = chain.from_iterable(c.kind for c in cols)
    names = chain.from_iterable(c.name for c in cols)
    ops = chain.from_iterable(c.op for c in cols)
    rows: list[PathSegment] = [{"kind": k, "name": n, "start_us": s, "dur_us": d, "op": o}
                               for k, n, s, d, o in zip(kinds, names, starts, durs, ops, strict=True)]
    return [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def critical_path_report(trace: Trace, *, segments: bool = True) -> CriticalPathReport:
    """Every step's path; `segments=False` leaves the rows out (each step's `segments` empty) for a rendering
    that shows only the breakdown, top names and what-ifs."""
    paths = critical_paths(trace)
    rows = _segment_rows(paths) if segments else [[] for _ in paths]
    return CriticalPathReport(steps=[_step_report(p, r) for p, r in zip(paths, rows, strict=True)],
                              collectives=COLLECTIVES_NOTE)


def label(name: str, kind: str, shorts: dict[str, str] | None = None) -> str:
    """A kernel by its short name (the report's own, which its op's inputs may have settled, else the decoded
    one; the JSON keeps the raw name); anything else as recorded."""
    if kind != "kernel":
        return name
    return (shorts or {}).get(name) or decode_kernel(name).short
