"""The operator view counts calls as torch's `EventList` and the TensorBoard plugin do, checked against
readings of the raw events written here (json + gzip, no mlptui code):

- an operator whose only slice beneath (Python frames left out) is an operator of the same name is one
  call with it: `aten::nan_to_num` on the 128-rank DLRM trace wraps a second `aten::nan_to_num` at every
  call;
- `Optimizer.step#…`, `Optimizer.zero_grad#…` and `enumerate(DataLoader)#…`, which torch 1.9 writes as
  operators, are no rows of the operator view, but stay in the dispatch tree.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from conftest import ROOT
from test_operator_self_time import LAUNCH_CATS, PYTHON_CATS, _by_thread, _events, _is_operator, _nest

from mlptui.trace.analysis.operators.operators import operators
from mlptui.trace.parse.load import load_trace

REAL = ROOT.parent / "shared" / "corpus" / "real"
DLRM = REAL / "facebookresearch__HolisticTraceAnalysis__trace_filter_sampled_rank-1.json.gz"
V100 = REAL / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
MARKS = ("Optimizer.step#", "Optimizer.zero_grad#", "enumerate(DataLoader)#")


def merged_inner(events: list[dict[str, Any]]) -> set[int]:
    """id() of each operator event merged into the one just above it (Python frames left out): that one
    has the same name and no other slice beneath it."""
    out: set[int] = set()
    for slices in _by_thread(events, lambda e: e.get("cat") not in PYTHON_CATS).values():
        parent = _nest(slices)
        beneath: dict[int, int] = defaultdict(int)
        for p in parent:
            beneath[p] += 1
        for i, p in enumerate(parent):
            if p >= 0 and _is_operator(slices[i]) and _is_operator(slices[p]) \
                    and slices[p]["name"] == slices[i]["name"] and beneath[p] == 1:
                out.add(id(slices[i]))
    return out


def test_a_same_name_only_child_is_one_call_with_its_parent() -> None:
    if not DLRM.exists():
        pytest.skip("corpus not available")
    events = _events(DLRM)
    assert events is not None
    merged = merged_inner(events)
    ours = [e for e in events if e.get("name") == "aten::nan_to_num"]
    outer = [e for e in ours if id(e) not in merged]
    # the trace as it is: every call wraps one of its own name, which wraps a launch call alone
    assert len(ours) == 16 and len(outer) == 8
    launches = {(e["pid"], e["tid"], e["ts"]): e["dur"] for e in events if e.get("cat") in LAUNCH_CATS}
    inner_launch_us = sum(dur for (pid, tid, ts), dur in launches.items()
                          if any(e["pid"] == pid and e["tid"] == tid and e["ts"] <= ts <= e["ts"] + e["dur"]
                                 for e in ours if id(e) in merged))
    host_total = sum(e["dur"] for e in outer)
    # the merged op's self time: the outer op's time outside the inner one's children
    host_self = host_total - inner_launch_us

    row = next(r for r in operators(load_trace(DLRM)) if r.name == "aten::nan_to_num")
    assert (row.calls, row.host_total_us) == (len(outer), pytest.approx(host_total))     # 8 calls, 174 µs
    assert row.host_self_us == pytest.approx(host_self)
    assert row.device_total_us == pytest.approx(row.device_self_us)   # no nested row holds its kernels twice


def test_optimizer_and_dataloader_marks_are_no_operators() -> None:
    if not V100.exists():
        pytest.skip("corpus not available")
    slices = _events(V100)
    assert slices is not None
    marked = {e["name"] for e in slices if str(e["name"]).startswith(MARKS)}
    dataloader_us = sum(e["dur"] for e in slices if str(e["name"]).startswith("enumerate(DataLoader)#"))
    assert marked and dataloader_us > 400_000       # torch 1.9 writes them as `Operator` slices
    trace = load_trace(V100)
    names = {r.name for r in operators(trace)}
    assert not names & marked
    # ... while the dispatch tree keeps them
    assert marked <= {op.name for op in trace.ops}
