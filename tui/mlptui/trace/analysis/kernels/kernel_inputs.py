"""Kernel names whose dtype the name cannot tell, settled by the inputs of the op that launched them.

cuDNN's generated kernels write `f16` for any 16-bit float (`cudnn_generated_fort_native_sdpa_sm90_flash_
fprop_wgmma_f16_…` runs bf16 attention too); the launching op's `Input type` (`record_shapes=True`) says
`c10::BFloat16` or `c10::Half`. A name is relabelled only when every launch of it in the trace has 16-bit
float inputs of one kind; otherwise the name's own reading stands.

    kernel_name(trace, raw)      # the KernelName a view shows for `raw` in this trace
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mlptui.trace.analysis.events.tables import distinct, tables
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.names.common import KernelName
from mlptui.trace.names.kernel import decode_kernel

SIXTEEN_BIT = {"c10::BFloat16": "bf16", "c10::Half": "f16"}
_HOPS = 4          # the launching op, then its parents: aten::_cudnn_attention_forward sits under the SDPA op


def ambiguous(name: KernelName) -> bool:
    """A name whose dtype may be another 16-bit float than it says."""
    return name.library == "cuDNN" and name.dtype == "f16"


def input_dtype(trace: Trace, op: int) -> str | None:
    """The 16-bit float type of the inputs of `op` (or its nearest ancestor that records `Input type`):
    "bf16" or "f16"; None when no such op records one kind only."""
    parents = tables(trace).op_parent
    for _ in range(_HOPS):
        if op < 0:
            return None
        types = trace.op_args(op).get("Input type")
        if isinstance(types, list):
            found = {SIXTEEN_BIT[x] for x in types if isinstance(x, str) and x in SIXTEEN_BIT}
            if found:
                return found.pop() if len(found) == 1 else None
        op = int(parents[op])
    return None


def _relabelled(trace: Trace) -> dict[str, KernelName]:
    t = tables(trace)
    kernels = np.flatnonzero(t.gpu_is((KERNEL,)))
    names = {int(i) for i in distinct(t.gpu_name[kernels]).tolist()}
    out: dict[str, KernelName] = {}
    for sid in names:
        name = decode_kernel(t.strings[sid])
        if not ambiguous(name):
            continue
        launches = kernels[t.gpu_name[kernels] == sid]
        found = {input_dtype(trace, int(t.gpu_op[g])) for g in launches.tolist()}
        if len(found) == 1 and (dtype := found.pop()) is not None and dtype != name.dtype:
            words = name.short.split(" ")
            short = " ".join(dtype if w == name.dtype else w for w in words)
            out[name.raw] = replace(name, dtype=dtype, short=short)
    return out


def kernel_name(trace: Trace, raw: str) -> KernelName:
    """`raw` decoded, its dtype taken from the launching ops' inputs where the name is ambiguous."""
    return trace.derive(_relabelled).get(raw) or decode_kernel(raw)
