"""One rank of `mlptui run tp-mlp|mlp --train --nproc N`, started by torch.distributed.run.

`python -m mlptui.runners.distributed.rank_main SPEC.json`: reads the launcher's spec, joins the process group
(NCCL on CUDA, gloo on the CPU), builds and checks its part of the workload, profiles it into a
temporary trace file in the run folder, times unprofiled steps, and leaves `rank-N.json` (or
`rank-N.error`, one line) in the spec's results folder. The launcher publishes the traces and the
manifest only once every rank has finished.
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import torch
import torch.distributed as dist

from mlptui.runners.record import output, profiling
from mlptui.runners.record.environment import device_info, versions
from mlptui.runners.workloads.shapes import MLP_SHAPE, Shape

TIMED_STEPS = {"cuda": 50, "cpu": 10}  # the same count on every rank, so their collectives pair up
WARMUP_STEPS = 5
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def tolerance(dtype: str) -> float:
    """Largest max-relative error accepted against the fp32 one-process reference."""
    return 1e-3 if dtype == "fp32" else 5e-2


def nccl_version() -> str | None:
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        return None
    return ".".join(str(v) for v in torch.cuda.nccl.version())


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_steps(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], device: str) -> dict[str, Any]:
    """Unprofiled step times: a fixed number of calls on every rank after a barrier, each timed with CUDA
    events (or perf_counter on the CPU). The median is the rank's step time."""
    if device == "cuda":
        profiling.busy_gpu()
    for _ in range(WARMUP_STEPS):
        fn(*inputs)
    sync(device)
    dist.barrier()
    times: list[float] = []
    n = TIMED_STEPS[device]
    if device == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for i in range(n):
            starts[i].record()
            fn(*inputs)
            ends[i].record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)]
        method = f"cuda events around each of {n} steps after {WARMUP_STEPS} warm-up steps and a barrier"
    else:
        for _ in range(n):
            t0 = time.perf_counter()
            fn(*inputs)
            times.append((time.perf_counter() - t0) * 1e6)
        method = f"time.perf_counter around each of {n} steps after {WARMUP_STEPS} warm-up steps and a barrier"
    q = statistics.quantiles(times, n=10, method="inclusive")
    return {"median_us": round(statistics.median(times), 3), "p10_us": round(q[0], 3),
            "p90_us": round(q[-1], 3), "iters": n, "method": method}


def _tp(spec: dict[str, Any], shape: Shape, rank: int, world: int) -> dict[str, Any]:
    from mlptui.runners.distributed.tp_mlp import TensorParallelGeGLUMLP
    from mlptui.runners.workloads.modules import SimpleGeGLUMLP, mlp_flops, mlp_input, seeded

    device, dtype = spec["device"], DTYPES[spec["dtype"]]
    full = seeded(lambda: SimpleGeGLUMLP(shape.dim, shape.hidden)).to(device)
    module = TensorParallelGeGLUMLP(full, rank, world).to(device=device, dtype=dtype)
    fn = profiling.compiled(module, spec["mode"])
    x = mlp_input(shape, dtype, device)  # tensor parallelism: every rank sees the whole input
    with torch.no_grad():
        out, compile_s = profiling.first_calls(fn, (x,), device, spec["mode"])
        err = profiling.max_rel_err(out, full(x.float()))
        one_gpu = profiling.max_rel_err(out, full.to(dtype)(x))
        del full
        if not err <= tolerance(spec["dtype"]):
            raise RuntimeError(f"rank {rank}: the tensor-parallel output is off the one-GPU MLP's by {err:.3g}")
        return {"fn": fn, "inputs": (x,), "compile_s": compile_s, "flops": mlp_flops(shape) // world,
                "checks": {"max_rel_err_vs_fp32": err, "max_rel_err_vs_one_gpu": one_gpu}}


def _ddp(spec: dict[str, Any], shape: Shape, rank: int, world: int, local_rank: int) -> dict[str, Any]:
    from mlptui.runners.distributed.ddp_train import (
        build_ddp,
        check_gradients,
        loss_fn,
        make_step,
        rank_batch,
    )
    from mlptui.runners.workloads.modules import mlp_flops

    device, dtype = spec["device"], DTYPES[spec["dtype"]]
    ddp = build_ddp(shape, dtype, device, local_rank)
    compiled = profiling.compiled(ddp, spec["mode"])
    x, target = rank_batch(shape, rank, dtype, device)
    start = time.perf_counter()
    loss_fn(compiled(x), target).backward()  # the first step compiles; its gradients are checked
    sync(device)
    compile_s = time.perf_counter() - start
    err = check_gradients(ddp, shape, world, dtype, device)
    if not err <= tolerance(spec["dtype"]):
        raise RuntimeError(f"rank {rank}: the averaged gradients are off the one-process gradients by {err:.3g}")
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    # forward, and backward's two GEMMs per layer (input and weight gradients)
    return {"fn": make_step(ddp, compiled, optimizer), "inputs": (x, target), "compile_s": compile_s,
            "flops": 3 * mlp_flops(shape), "checks": {"max_rel_err_vs_fp32": err}}


def _late(fn: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """`fn`, called after a sleep: this rank reaches every collective late and the others wait for it."""
    def late(*inputs: Any) -> Any:
        time.sleep(seconds)
        return fn(*inputs)

    return late


def run_rank(spec: dict[str, Any]) -> dict[str, Any]:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    device = spec["device"]
    if device == "cuda":
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group("gloo")
    shape = Shape(MLP_SHAPE.name, tuple(spec["shape"][f] for f in MLP_SHAPE.fields))
    part = _ddp(spec, shape, rank, world, local_rank) if spec["train"] else _tp(spec, shape, rank, world)
    delay = spec.get("delay")
    if delay and delay["rank"] == rank:
        part["fn"] = _late(part["fn"], delay["ms"] / 1e3)
    folder = Path(spec["folder"])
    name = f"{spec['stem']}-rank-{rank}{output.TRACE_SUFFIX}"
    tmp = output.temp_path(folder, name)
    meta = {"workload": spec["workload"], "mode": spec["mode"], "shape": spec["shape"], "dtype": spec["dtype"],
            "rank": rank, "world_size": world, "train": spec["train"], "host": socket.gethostname()}
    grad = torch.enable_grad() if spec["train"] else torch.no_grad()
    try:
        with grad:
            profiling.profile_to(tmp, part["fn"], part["inputs"], device=device, label=spec["label"],
                                 wait=spec["wait"], warmup=spec["warmup"], active=spec["active"],
                                 with_stack=spec["with_stack"], metadata=meta)
            timing = time_steps(part["fn"], part["inputs"], device)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    median_s = timing["median_us"] / 1e6
    return {"rank": rank, "local_rank": local_rank, "host": meta["host"], "world_size": world,
            "backend": dist.get_backend(),
            "nccl_version": nccl_version() if device == "cuda" else None, "tmp_trace": str(tmp), "trace": name,
            "device": device_info(device), "versions": versions(), "timing": timing,
            "compile_s": round(part["compile_s"], 4), "flops": part["flops"],
            "tflops": part["flops"] / median_s / 1e12 if median_s > 0 else 0.0, **part["checks"],
            "recorded_at": datetime.now().isoformat(timespec="seconds")}


def main(argv: list[str]) -> int:
    spec = orjson.loads(Path(argv[0]).read_bytes())
    results = Path(spec["results"])
    rank = int(os.environ.get("RANK", "0"))
    try:
        record = run_rank(spec)
        (results / f"rank-{rank}.json").write_bytes(orjson.dumps(record))
        return 0
    except Exception as exc:
        line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        (results / f"rank-{rank}.error").write_text(f"{type(exc).__name__}: {line}\n", encoding="utf-8")
        print(f"mlptui rank {rank}: {type(exc).__name__}: {line}", file=sys.stderr)
        return 1
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # The trace and the record are written and the process group is gone: leave without the interpreter's
    # teardown, where a native thread (the profiler's, gloo's) destroyed while still joinable can abort the
    # process after its work is done ("terminate called without an active exception").
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
