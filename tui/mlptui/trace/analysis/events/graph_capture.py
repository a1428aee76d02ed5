"""Whether a trace records a CUDA (or HIP) graph capture rather than work that ran.

While a stream is being captured into a graph (`torch.cuda.graph`, vLLM's and SGLang's start-up
capture, torch.compile mode="reduce-overhead" warming up), every kernel launch call is recorded on the
host but its kernel does not run: it is added to the graph. The trace then holds hundreds of launch calls
with no kernel and a few kernels that did run (before or between captures), so its GPU looks nearly idle;
the low-utilisation advice would be wrong.

    graph_capture(trace) -> GraphCapture | None

A trace records a capture when it holds a capture or instantiation call (`cudaStreamBeginCapture`,
`cudaStreamEndCapture`, `cudaGraphInstantiate…`, and the `hip…` equivalents) and at least MIN_CAPTURED
kernel launch calls (launch kind, mlptui.trace.analysis.events.launches) that launched no GPU work.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.model import KERNEL, LAUNCH_CATS, Trace
from mlptui.trace.names.runtime_calls import classify_call

MIN_CAPTURED = 10
_MARKERS = ("StreamBeginCapture", "StreamEndCapture", "GraphInstantiate")


@dataclass(frozen=True)
class GraphCapture:
    launches: int           # kernel launch calls
    captured: int           # of them, those that launched no GPU work (added to a graph)
    kernels: int            # kernels that ran
    markers: dict[str, int]     # capture and instantiation calls by name

    def line(self) -> str:
        marks = ", ".join(f"{name} ×{n}" for name, n in self.markers.items())
        return (f"this trace records a graph capture: {self.captured} of {self.launches} kernel launch calls "
                f"were captured into a graph ({marks}), so their kernels did not run while it was recorded; "
                f"{self.kernels} kernel{'s' if self.kernels != 1 else ''} ran. Profile the graph's replay "
                "(after capture) to see the GPU's work")


def graph_capture(trace: Trace) -> GraphCapture | None:
    return trace.derive(_graph_capture)


def _graph_capture(trace: Trace) -> GraphCapture | None:
    t = tables(trace)                # read as columns: no Op object made for it
    rows = np.flatnonzero(t.op_is(LAUNCH_CATS))
    launched = np.diff(t.op_gpu_ptr)[rows] > 0
    # Each distinct call name decided once: a capture marker, or a kernel launch call.
    ids, first, inverse, per_name = unique_ids(t.op_name[rows], return_index=True, return_inverse=True,
                                               return_counts=True)
    marker = np.zeros(len(ids), dtype=bool)
    launch = np.zeros(len(ids), dtype=bool)
    for k, name in enumerate(map(t.strings.__getitem__, ids.tolist())):
        marker[k] = any(m in name for m in _MARKERS)
        launch[k] = not marker[k] and classify_call(name) == "launch"
    is_launch = launch[inverse]
    launches = int(is_launch.sum())
    captured = int((is_launch & ~launched).sum())
    markers: Counter[str] = Counter()       # by name, in order of first call
    for k in np.argsort(first, kind="stable").tolist():
        if marker[k]:
            markers[t.strings[int(ids[k])]] += int(per_name[k])
    found = None
    if markers and captured >= MIN_CAPTURED:
        kernels = int(t.gpu_is((KERNEL,)).sum())
        found = GraphCapture(launches, captured, kernels, dict(markers))
    return found
