"""Collective-communication kernels: NCCL / RCCL.

NCCL ≥ 2.19 names device kernels `ncclDevKernel_<Coll>_<RedOp>_<dtype>_<ALGO>_<PROTO>`; older
releases `ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<type>(args)`. Read each field by what it is,
not by position.
"""

from __future__ import annotations

from mlptui.trace.names.common import KernelName, short_dtype

_COLLECTIVES = {
    "allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
    "broadcast": "Broadcast", "reduce": "Reduce", "sendrecv": "SendRecv", "alltoall": "AllToAll",
    "send": "Send", "recv": "Recv", "generic": "Generic",
}
_ALGOS = {"RING", "TREE", "COLLNET", "COLLNETDIRECT", "COLLNETCHAIN", "NVLS", "NVLSTREE", "PAT"}
_PROTOS = {"LL", "LL128", "SIMPLE"}
_REDOPS = {"Sum", "Prod", "Max", "Min", "Avg", "PreMulSum", "SumPostDiv", "MinMax"}


def decode_nccl(raw: str) -> KernelName:
    name = raw[5:] if raw.startswith("void ") else raw
    name = name.split("(", 1)[0].split("<", 1)[0]
    tokens = name.split("_")[1:]
    coll = algo = proto = redop = dtype = None
    for i, tok in enumerate(tokens):
        if coll is None and tok.lower() in _COLLECTIVES:
            coll = _COLLECTIVES[tok.lower()]
        elif tok.upper() in _ALGOS and algo is None:
            algo = tok.upper()
            # COLLNET_DIRECT / NVLS_TREE arrive split in two tokens
            if i + 1 < len(tokens) and (tok + tokens[i + 1]).upper() in _ALGOS:
                algo = (tok + "_" + tokens[i + 1]).upper()
        elif tok.upper() in _PROTOS and proto is None:
            proto = tok.upper()
        elif tok in _REDOPS and redop is None:
            redop = tok
        elif dtype is None and short_dtype(tok) is not None:
            dtype = short_dtype(tok)
    library = "RCCL" if "rccl" in raw.lower() else "NCCL"
    coll = coll or "collective"
    parts = [library, coll] + [p for p in (redop, dtype) if p]
    if algo or proto:
        parts.append("/".join(p for p in (algo, proto) if p))
    variant = "/".join(p for p in (algo, proto) if p) or None
    return KernelName(raw=raw, short=" ".join(parts), family="comm", library=library, kind=coll.lower(),
                      ops=(coll.lower(),) + ((redop.lower(),) if redop else ()), dtype=dtype, variant=variant)
