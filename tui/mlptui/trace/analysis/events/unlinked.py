"""Device work the trace does not link to the host: no launch call (by correlation or flow) and no op
(by External id). It ran, so it counts in device busy and in the timeline, but in no step's own GPU
work, no op's device time and no launch count: every pane attributes work by the same link, and this
line says what is left out, so panes that differ by it can be told apart (MTIA traces leave their DMA
copies unlinked).

    unlinked_line(trace) -> str | None
    outside_operators_line(trace) -> str | None   linked work no operator owns: in no operator-view row
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from mlptui.base.units import duration
from mlptui.trace.analysis.events.op_owner import owners
from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.model import Trace
from mlptui.trace.names.common import truncate
from mlptui.trace.names.kernel import decode_kernel

TOP_NAMES = 3
NAME_WIDTH = 64     # a decoded name is one short line; the line names three of them at most


def _kinds(strings: list[str], names: list[int], counts: list[int]) -> str:
    """The most frequent decoded names, `short ×count`, then how many kinds are left: raw names are C++
    signatures or hipBLASLt tile names hundreds of characters long, which would fill a pane."""
    kinds: Counter[str] = Counter()
    for n, c in zip(names, counts, strict=True):
        kinds[truncate(decode_kernel(strings[n]).short, NAME_WIDTH)] += c
    ranked = sorted(kinds.items(), key=lambda kind: (-kind[1], kind[0]))
    top = ", ".join(f"{short} ×{c:,}" for short, c in ranked[:TOP_NAMES])
    rest = len(ranked) - TOP_NAMES
    return top + (f" and {rest} more kind{'s' if rest > 1 else ''}" if rest > 0 else "")


def unlinked_line(trace: Trace) -> str | None:
    t = tables(trace)
    lost = np.flatnonzero((t.gpu_launch < 0) & (t.gpu_op < 0))
    if not len(lost):
        return None
    names, counts = unique_ids(t.gpu_name[lost], return_counts=True)
    top = _kinds(t.strings, names.tolist(), counts.tolist())
    spent = duration(float(t.gpu_dur[lost].sum()))
    return (f"not linked: {len(lost):,} of {t.n_gpu:,} device ops ({spent} of device time; {top}) have no "
            "launch call or op in the trace: counted in device busy, not in any step's own GPU work, op or launch")


def outside_operators_line(trace: Trace) -> str | None:
    """Device work linked to the host but launched under no operator (under a `record_function`
    annotation or Python frames alone, as a hand-written Triton kernel is): the operator view has no row
    for it, so its device self times add up to less than the linked device time by this much."""
    t = tables(trace)
    outside = np.flatnonzero((t.gpu_op >= 0) & (owners(trace).gpu_owner < 0))
    if not len(outside):
        return None
    names, weights = unique_ids(t.op_name[t.gpu_op[outside]], return_inverse=True)
    us = np.bincount(weights.reshape(-1), weights=t.gpu_dur[outside], minlength=len(names))
    top = ", ".join(f"{t.strings[int(names[k])]} {duration(float(us[k]))}" for k in np.argsort(-us)[:TOP_NAMES].tolist())
    return (f"outside every operator: {duration(float(t.gpu_dur[outside].sum()))} of device time was launched under "
            f"annotations or Python frames alone ({top}): in no operator row")
