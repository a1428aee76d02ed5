"""Each CPU op's input shapes: its `Input Dims` arg as text ("[]" when absent), read at most once per
trace and kept in `Trace.derived`. Decoding an op's args is most of what grouping operators by shapes
costs; kept, every scope and every later grouping shares that decoding instead of repeating it.
"""

from __future__ import annotations

from mlptui.trace.model import Trace

_KEY = "op_input_shapes"


def input_shapes(trace: Trace, op_id: int) -> str:
    """`str` of the op's `Input Dims` arg, "[]" when it has none."""
    cache: list[str | None] | None = trace.derived.get(_KEY)
    if cache is None:       # setdefault: two workers starting at once share one list
        cache = trace.derived.setdefault(_KEY, [None] * len(trace.ops))
    text = cache[op_id]
    if text is None:
        dims = trace.op_args(op_id).get("Input Dims")
        text = cache[op_id] = str(dims) if dims is not None else "[]"
    return text
