"""Collective-communication kernels of one trace (NCCL, RCCL), decoded into what moved and how fast.

Each field comes from the most direct record there is:
1. the kernel's own args (torch ≥ 2.1 with NCCL): `Collective name`, `In msg nelems`, `Out msg nelems`,
   `Group size`, `dtype`, `Process Group Name`, `Process Group Ranks`;
2. the CPU op that launched it: `record_param_comms` (the same keys), or the `nccl:<collective>`
   annotation with its `Input Dims` and `Input type` (older torch); found through the launch, or
   through the External id when NCCL launched the kernel without a runtime call of its own;
3. the kernel name (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL`): collective, dtype, algorithm.
NCCL's sequence number of the call in its process group, `Seq`, is read from the kernel (Kineto copies it
there from `record_param_comms` since 2026, torch ≥ 2.12), else from the launching `record_param_comms`.

Bytes are nccl-tests' "size": the larger of the input and output buffers (the whole gathered buffer
of an all-gather, the whole input of a reduce-scatter). Algorithm bandwidth is bytes over the kernel's
duration; bus bandwidth scales it by what each GPU must send for that collective over n ranks:
all-reduce 2(n−1)/n, all-gather / reduce-scatter / all-to-all (n−1)/n, the others 1. A kernel's
duration includes the time it waited for the other ranks to arrive, so these are lower bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mlptui.trace.model import KERNEL, GpuOp, Trace
from mlptui.trace.names.common import short_dtype

ELEMENT_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "int8": 1, "uint8": 1, "int32": 4, "uint32": 4,
                 "int64": 8, "uint64": 8, "bool": 1, "fp8": 1, "fp8e4m3": 1, "fp8e5m2": 1}
# torch's dtype names as NCCL args and `Input type` spell them, beyond what short_dtype knows
_TORCH_DTYPES = {"byte": "uint8", "unsigned char": "uint8", "char": "int8", "signed char": "int8",
                 "short": "int16", "long int": "int64", "c10::bfloat16": "bf16", "c10::half": "f16",
                 "float8_e4m3fn": "fp8e4m3", "float8_e5m2": "fp8e5m2"}
ELEMENT_BYTES["int16"] = 2
# names seen for one collective -> one spelling
_COLLECTIVES = {"allreduce": "allreduce", "all_reduce": "allreduce", "allgather": "allgather",
                "all_gather": "allgather", "_all_gather_base": "allgather", "all_gather_into_tensor": "allgather",
                "_allgather_base": "allgather", "reducescatter": "reducescatter", "reduce_scatter": "reducescatter",
                "_reduce_scatter_base": "reducescatter", "reduce_scatter_tensor": "reducescatter",
                "alltoall": "alltoall", "all_to_all": "alltoall", "alltoall_base": "alltoall",
                "all_to_allv": "alltoall", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv",
                "send": "send", "recv": "recv", "barrier": "barrier", "gather": "gather", "scatter": "scatter"}
_NAME_TOKENS = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "sendrecv", "alltoall",
                "send", "recv"}
_ALGOS = ("NVLS_TREE", "NVLSTREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "COLLNET", "NVLS", "RING", "TREE", "PAT")


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of `collective` over `n` ranks."""
    if n <= 1:
        return 1.0
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def is_comm_kernel(name: str) -> bool:
    low = name.lower()
    return "nccl" in low or "rccl" in low


@dataclass(frozen=True, slots=True)
class Collective:
    gpu: int                    # GpuOp id of the kernel
    collective: str             # allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv, ...
    dtype: str | None           # bf16, f32, ... (short_dtype's vocabulary)
    in_nelems: int | None
    out_nelems: int | None
    bytes: int | None           # max(in, out) × element size; None when no size was recorded
    group_size: int | None
    group: str | None           # process group name (and its ranks, when recorded)
    algorithm: str | None       # NCCL's algorithm from the kernel name (RING, TREE, ...)
    ts: float
    dur: float
    seq: int | None = None      # NCCL's sequence number of the call in its process group

    @property
    def algbw_gbps(self) -> float | None:
        return None if not self.bytes or self.dur <= 0 else self.bytes / self.dur / 1e3

    @property
    def busbw_gbps(self) -> float | None:
        alg = self.algbw_gbps
        return None if alg is None else alg * bus_factor(self.collective, self.group_size or 1)


def _dtype(text: Any) -> str | None:
    if not isinstance(text, str) or not text:
        return None
    low = text.strip().lower()
    return _TORCH_DTYPES.get(low) or short_dtype(low)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _from_name(raw: str) -> tuple[str | None, str | None, str | None]:
    """(collective, dtype, algorithm) as far as the kernel name tells them."""
    base = raw[5:] if raw.startswith("void ") else raw
    base = base.split("(", 1)[0].split("<", 1)[0]
    tokens = base.split("_")[1:]
    coll = next((t.lower() for t in tokens if t.lower() in _NAME_TOKENS), None)
    dtype = next((d for d in (short_dtype(t) for t in tokens) if d), None)
    upper = base.upper()
    algo = next((a.replace("_", "") if a.startswith("NVLS") else a for a in _ALGOS if f"_{a}_" in upper + "_"),
                None)
    return coll, dtype, algo


def _op_args(trace: Trace, g: GpuOp, by_external: dict[int, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Args of the CPU ops that launched `g`: (record_param_comms-like args, nccl:* annotation args)."""
    start = g.op
    if start < 0 and g.launch >= 0:
        start = trace.ops[g.launch].parent
    if start < 0 and g.external_id is not None:
        start = by_external.get(g.external_id, -1)
    comms: dict[str, Any] = {}
    annotation: dict[str, Any] = {}
    op_id, hops = start, 0
    while op_id >= 0 and hops < 6 and not (comms and annotation):
        op = trace.ops[op_id]
        if not comms and op.name == "record_param_comms":
            comms = trace.op_args(op_id)
        elif not annotation and op.name.startswith("nccl:"):
            annotation = {"name": op.name, **trace.op_args(op_id)}
        op_id, hops = op.parent, hops + 1
    return comms, annotation


def _group_size(trace: Trace) -> int | None:
    info = trace.meta.get("distributedInfo")
    if isinstance(info, dict):
        return _int(info.get("world_size"))
    return None


def _first_dim(args: dict[str, Any]) -> int | None:
    dims = args.get("Input Dims")
    if isinstance(dims, list) and dims:
        first = dims[0]
        while isinstance(first, list) and first and isinstance(first[0], list):
            first = first[0]
        if isinstance(first, list) and first and all(isinstance(d, int) for d in first):
            n = 1
            for d in first:
                n *= d
            return n
    return None


def decode_collective(trace: Trace, g: GpuOp, by_external: dict[int, int] | None = None) -> Collective:
    coll_n, dtype_n, algo = _from_name(g.name)
    kernel = trace.gpu_args(g.id)
    comms, annotation = _op_args(trace, g, by_external or {})
    src = kernel if "Collective name" in kernel else comms
    coll = _COLLECTIVES.get(str(src.get("Collective name", "")).lower())
    if coll is None and annotation:
        coll = _COLLECTIVES.get(annotation["name"].removeprefix("nccl:").lower())
    coll = coll or coll_n or "collective"
    dtype = _dtype(src.get("dtype"))
    in_n, out_n = _int(src.get("In msg nelems")), _int(src.get("Out msg nelems"))
    if in_n is None and annotation:
        in_n = _first_dim(annotation)
        types = annotation.get("Input type")
        if dtype is None and isinstance(types, list) and types:
            dtype = _dtype(types[0])
    dtype = dtype or dtype_n
    size = ELEMENT_BYTES.get(dtype or "")
    counts = [n for n in (in_n, out_n) if n is not None]
    nbytes = max(counts) * size if counts and size else None
    group_size = _int(src.get("Group size")) or _group_size(trace)
    group = None
    if "Process Group Name" in src:
        group = str(src["Process Group Name"])
        ranks = src.get("Process Group Ranks")
        if isinstance(ranks, str) and ranks and ranks != "[]":
            group += f" {ranks}"
    seq = _int(kernel.get("Seq"))
    if seq is None:
        seq = _int(comms.get("Seq"))
    return Collective(g.id, coll, dtype, in_n, out_n, nbytes, group_size, group, algo, g.ts, g.dur, seq)


def collectives(trace: Trace) -> list[Collective]:
    """Every NCCL/RCCL kernel of the trace, decoded, in time order."""
    by_external: dict[int, int] = {}
    for op in trace.ops:
        if op.external_id is not None and op.name.startswith(("nccl:", "record_param_comms")):
            by_external.setdefault(op.external_id, op.id)
    found = [decode_collective(trace, g, by_external) for g in trace.gpu
             if g.cat == KERNEL and is_comm_kernel(g.name)]
    found.sort(key=lambda c: c.ts)
    return found


_RANKS_RE = re.compile(r"\[([0-9, ]*)\]")
