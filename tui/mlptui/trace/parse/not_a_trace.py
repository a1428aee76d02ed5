"""Tell a PyTorch-profiler trace from other JSON that merely looks like one, and say what it is.

    refusal(decoded) -> str | None     the one-line reason to refuse it, or None for a profiler trace

Refused: a JSON list whose items are not trace events at all (torch's memory-timeline raw export is a
list of integer lists); and a Chrome trace whose events all carry categories the PyTorch profiler never
writes (a TensorFlow trace-viewer file: B/E/C/I/P events of its own categories). A profiler trace is
known by its top-level keys (schemaVersion, deviceProperties, ...) or by the categories of its events;
the legacy autograd profiler wrote complete events with no category at all, and those still load.
"""

from __future__ import annotations

from mlptui.trace.parse.classify import CATEGORY
from mlptui.trace.parse.decode import Decoded

# Categories only the PyTorch profiler writes, beyond the ones the index files (CATEGORY).
_PROFILER_CATS = frozenset(CATEGORY) | {
    "ac2g", "async", "fwdbwd", "Trace", "mtia_ccp_events", "cpu_instant_event", "overhead", "cuda_profiler_range",
    "gpu_user_annotation", "python_function", "Python", "xpu_runtime", "hip_runtime", "mtia_runtime",
    "cpu_to_cuda", "async_gpu", "async_cpu_to_gpu",
}
# Top-level keys the profiler writes; displayTimeUnit is plain Chrome-trace and does not count.
_PROFILER_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "record_shapes", "with_stack",
                  "cuda_runtime_version", "hip_runtime_version", "roctracer_version", "baseTimeNanoseconds",
                  "traceName", "trace_id")


def refusal(decoded: Decoded) -> str | None:
    n = decoded.n_events or len(decoded.events)
    if not n:
        skipped = decoded.meta.get("malformed_events", 0)
        if skipped and decoded.meta.get("bare_array"):
            return (f"a JSON list of {skipped} items that are not trace events (like torch's memory-timeline "
                    "export), not a profiler trace")
        return None
    if any(decoded.meta.get(k) is not None for k in _PROFILER_KEYS):
        return None
    # (phase, category) of every event: read from the kinds when the events were classified as decoded
    pairs = ({k[:2] for k in decoded.classified.kinds} if decoded.classified is not None
             else {(e.ph, e.cat) for e in decoded.events})
    cats = _PROFILER_CATS
    if any(cat in cats for _, cat in pairs):
        return None
    if not any(cat for _, cat in pairs) and any(ph == "X" for ph, _ in pairs):
        return None       # the legacy autograd profiler: complete events without categories
    return (f"a Chrome trace, but not from the PyTorch profiler (none of its {n} events has a "
            "profiler category; record one with torch.profiler)")
