"""What a host-side runtime or driver call is, from its name alone:

    classify_call(name) -> kind   launch | occupancy | memset | memcpy | attribute | sync | graph | other

Read by the indexer (to count launches while it builds the trace) and by the analyses above it.
"""

from __future__ import annotations

from functools import lru_cache

# First match wins; matched against the call name with its vendor prefix (cuda/cu/hip) kept. Lower-case
# needles catch MTIA's runtime ("enqueueCommand memcpyHtoDAsync", "synchronizeStream").
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("graph", ("GraphLaunch",)),
    ("launch", ("LaunchKernel", "LaunchCooperativeKernel", "ModuleLaunch")),
    ("occupancy", ("Occupancy",)),
    ("memset", ("Memset", "memset")),
    ("memcpy", ("Memcpy", "memcpy")),
    ("attribute", ("Attribute", "FuncGetAttributes", "GetProperties")),
    ("sync", ("Synchronize", "WaitEvent", "EventQuery", "StreamQuery", "synchronize")),
)


@lru_cache(maxsize=4096)
def classify_call(name: str) -> str:
    for kind, needles in _RULES:
        if any(n in name for n in needles):
            return kind
    return "other"
