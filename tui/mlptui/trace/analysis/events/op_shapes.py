"""Each CPU op's input shapes: its `Input Dims` arg as text ("[]" when absent), read at most once per
trace and kept with it (`Trace.derive`). Decoding an op's args is most of what grouping operators by shapes
costs; kept, every scope and every later grouping shares that decoding instead of repeating it.
"""

from __future__ import annotations

from mlptui.trace.model import Trace


def input_shapes(trace: Trace, op_id: int) -> str:
    """`str` of the op's `Input Dims` arg, "[]" when it has none."""
    cache = trace.derive(_no_shapes_yet)      # one list per trace, whichever worker asks first
    text = cache[op_id]
    if text is None:
        dims = trace.op_args(op_id).get("Input Dims")
        text = cache[op_id] = str(dims) if dims is not None else "[]"
    return text


def _no_shapes_yet(trace: Trace) -> list[str | None]:
    return [None] * trace.columns.n_ops
