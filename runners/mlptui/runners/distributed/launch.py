"""`mlptui run tp-mlp --nproc N` and `mlptui run mlp --train --nproc N`: one process per GPU (or per
CPU rank with gloo), started by PyTorch's own launcher, torch.distributed.run, on 127.0.0.1.

The run gets a fresh folder under --out. Each rank profiles into a temporary file there
(mlptui.runners.distributed.rank_main); only when every rank has finished are the traces given their names and
the manifest written, so a failed run leaves no half run behind. The manifest has one entry per rank
(its trace, unprofiled step time, checks) and a "distributed" block: world size, backend, NCCL version.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from mlptui.base.errors import MlptuiError
from mlptui.runners.workloads.registry import Builder, Shape, Workload, workload

# NVLink multicast (NVLS) stays off in every rank: on shared hosts a program that uses it can take the
# GPUs out of service. A user who sets these explicitly keeps their values.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
LABELS = {"tp-mlp": "tp_mlp_fwd", "mlp": "ddp_train_step"}


def _tp_mlp() -> Builder:
    """The module each rank builds its part of (rank_main.py builds it; nothing calls this to run)."""
    from mlptui.runners.distributed.tp_mlp import TensorParallelGeGLUMLP
    return TensorParallelGeGLUMLP


# Several processes only, so not in the single-process registry (nor the ladder); the MLP's shape flags.
TP_MLP = Workload("tp-mlp", LABELS["tp-mlp"], "mlp", _tp_mlp,
                  "the GeGLU MLP tensor-parallel over --nproc ranks: gate/up column-, down row-parallel, "
                  "one all-reduce of the output", ladder_modes=())


def is_distributed(args: argparse.Namespace) -> bool:
    return args.workload == "tp-mlp" or getattr(args, "nproc", None) is not None


def check_request(args: argparse.Namespace) -> tuple[Workload, int]:
    """The workload and rank count asked for, or a one-line error (before torch is imported)."""
    nproc = 2 if args.nproc is None else args.nproc
    if nproc < 1:
        raise MlptuiError(f"--nproc must be at least 1 (got {nproc})")
    if args.workload == "tp-mlp":
        if args.train:
            raise MlptuiError("tp-mlp records the tensor-parallel forward pass; --train is for `run mlp`")
    elif args.workload == "mlp":
        if not args.train:
            raise MlptuiError("mlp --nproc N runs data-parallel training and needs --train "
                              "(tp-mlp splits the forward pass)")
    else:
        raise MlptuiError(f"--nproc runs tp-mlp or mlp --train, not {args.workload}")
    delay = getattr(args, "delay_rank", None)
    if delay is not None and not 0 <= delay < nproc:
        raise MlptuiError(f"--delay-rank {delay} is not one of the {nproc} ranks (0 to {nproc - 1})")
    if delay is not None and not 0 < args.delay_ms <= 10_000:
        raise MlptuiError(f"--delay-ms must be above 0 and at most 10000 (got {args.delay_ms})")
    return (TP_MLP if args.workload == "tp-mlp" else workload(args.workload)), nproc


def check_devices(device: str, nproc: int) -> str:
    """The backend for `device`, once the machine can run `nproc` ranks of it; a one-line error if not."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise MlptuiError("this torch build has no torch.distributed")
    if device == "cpu":
        if not dist.is_gloo_available():
            raise MlptuiError("this torch build has no gloo backend, which --device cpu needs")
        return "gloo"
    if not torch.cuda.is_available():
        raise MlptuiError("CUDA is not available here; try --device cpu (gloo)")
    if not dist.is_nccl_available():
        raise MlptuiError("this torch build has no NCCL backend, which --device cuda needs; "
                          "try --device cpu (gloo)")
    gpus = torch.cuda.device_count()
    if nproc > gpus:
        raise MlptuiError(f"--nproc {nproc} is more than the {gpus} CUDA GPU{'s' if gpus != 1 else ''} here "
                          f"(one process per GPU{'; try --device cpu (gloo)' if gpus == 1 else ''})")
    return "nccl"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_env(device: str) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in NO_MULTICAST.items():
        env.setdefault(key, value)
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's own default, set here so it need not warn
    env["PYTHONUNBUFFERED"] = "1"
    return env


def new_run_folder(out: Path, stem: str) -> Path:
    """A folder that did not exist before: `stem`, or `stem-2`, `stem-3`, ... (never reused)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MlptuiError(f"cannot create {out}: {exc.strerror or exc}") from None
    for n in range(1, 1000):
        folder = out / (stem if n == 1 else f"{stem}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise MlptuiError(f"could not find a free run folder name for {stem} in {out}")


def _delay(args: argparse.Namespace) -> dict[str, float] | None:
    """The rank made to arrive late on purpose, and by how much (None: no rank is)."""
    rank = getattr(args, "delay_rank", None)
    return None if rank is None else {"rank": rank, "ms": float(args.delay_ms)}


def torchrun_command(nproc: int, spec_path: Path) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}",
            "--master-addr=127.0.0.1", f"--master-port={free_port()}", "--module", "mlptui.runners.distributed.rank_main",
            str(spec_path)]


def command_line(args: argparse.Namespace, w: Workload, mode: str, shape: Shape, nproc: int) -> str:
    parts = ["mlptui", "run", w.name, "--nproc", str(nproc), "--mode", mode]
    if args.train:
        parts.append("--train")
    for field, value in shape.as_dict().items():
        parts += ["--" + field, str(value)]
    parts += ["--dtype", args.dtype, "--device", args.device, "--wait", str(args.wait),
              "--warmup", str(args.warmup), "--active", str(args.active)]
    if getattr(args, "delay_rank", None) is not None:
        parts += ["--delay-rank", str(args.delay_rank), "--delay-ms", f"{args.delay_ms:g}"]
    return shlex.join(parts)


def _rank_results(results: Path, nproc: int) -> tuple[list[dict[str, Any]], list[str]]:
    records, errors = [], []
    for r in range(nproc):
        err = results / f"rank-{r}.error"
        if err.exists():
            errors.append(f"rank {r}: {err.read_text(encoding='utf-8').strip()}")
        elif (results / f"rank-{r}.json").exists():
            records.append(orjson.loads((results / f"rank-{r}.json").read_bytes()))
    return records, errors


def run_distributed(args: argparse.Namespace) -> int:
    from mlptui.runners.record.run_args import check_schedule, resolve_mode, resolve_shape

    w, nproc = check_request(args)
    mode = resolve_mode(args) or "eager"
    check_schedule(args)
    shape = resolve_shape(w, args, strict=True)
    if w.name == "tp-mlp" and shape.hidden % nproc:
        raise MlptuiError(f"--hidden {shape.hidden} does not split evenly over {nproc} ranks")
    backend = check_devices(args.device, nproc)

    from mlptui.runners.record import output
    from mlptui.runners.record.progress import RunProgress

    if args.device == "cuda":
        import torch

        slug = output.device_slug(torch.cuda.get_device_name(0))
    else:
        slug = "cpu"
    when = datetime.now()
    stem = f"{w.name}{'-train' if args.train else ''}-{mode}-{shape.slug}-{args.dtype}-{slug}"
    folder = new_run_folder(Path(args.out), f"{stem}-x{nproc}-{when:%Y%m%dT%H%M%S}")
    results = Path(tempfile.mkdtemp(prefix="mlptui-ranks-"))
    spec = {"workload": w.name, "train": bool(args.train), "mode": mode, "shape": shape.as_dict(),
            "dtype": args.dtype, "device": args.device, "wait": args.wait, "warmup": args.warmup,
            "active": args.active, "with_stack": args.with_stack, "folder": str(folder), "stem": stem,
            "label": LABELS[w.name], "results": str(results), "delay": _delay(args)}
    spec_path = results / "spec.json"
    spec_path.write_bytes(orjson.dumps(spec))
    log = results / "torchrun.log"
    progress = RunProgress()
    title = f"{stem} on {nproc} ranks ({backend})"
    with progress.stage(f"{title}: torch.distributed.run"), open(log, "wb") as sink:
        rc = subprocess.call(torchrun_command(nproc, spec_path), env=worker_env(args.device),
                             stdout=sink, stderr=subprocess.STDOUT)
    records, errors = _rank_results(results, nproc)
    if errors or len(records) != nproc:
        for rec in records:
            Path(rec["tmp_trace"]).unlink(missing_ok=True)
        _remove_if_empty(folder)
        why = errors[0] if errors else f"torch.distributed.run exited with {rc}"
        raise MlptuiError(f"{title} failed: {why} (log: {log})")
    if rc != 0:
        # every rank wrote its trace and its record, which it does only once its work is done: a process that
        # died after that (torch's native teardown can abort one) loses nothing, so the run is kept, and said
        print(f"mlptui: warning: torch.distributed.run exited with {rc} after every rank had written its trace "
              f"and results; the run is kept (log: {log})", file=sys.stderr)
    records.sort(key=lambda r: r["rank"])
    command = command_line(args, w, mode, shape, nproc)
    done = [_publish(rec, folder, w, mode, shape, args, command) for rec in records]
    first = records[0]
    output.set_distributed(folder, {
        "world_size": nproc, "backend": first["backend"], "nccl_version": first["nccl_version"],
        "launcher": "torch.distributed.run --nnodes=1 --master-addr=127.0.0.1",
        "nvls": {k: worker_env(args.device)[k] for k in NO_MULTICAST},
        "ranks": [{"rank": r["rank"], "trace": r["trace"], "step_us": r["timing"]["median_us"]} for r in done],
        "command": command,
        **({"delay": spec["delay"]} if spec["delay"] else {}),
    })
    if rc == 0:
        shutil.rmtree(results, ignore_errors=True)
    progress.results(done, str(folder))
    return 0


def _publish(rec: dict[str, Any], folder: Path, w: Workload, mode: str, shape: Shape,
             args: argparse.Namespace, command: str) -> dict[str, Any]:
    from mlptui.runners.record import output

    final = output.publish_trace(Path(rec.pop("tmp_trace")), folder, rec["trace"])
    record = {"trace": final.name, "workload": w.name, "mode": mode, "label": LABELS[w.name],
              "shape": shape.as_dict(), "dtype": args.dtype, "train": bool(args.train), "command": command,
              "kernel_source": "pytorch", "kernel_tried": [],
              "recorder": (f"torch.profiler on each rank, schedule wait={args.wait} warmup={args.warmup} "
                           f"active={args.active}, record_shapes=True, with_stack={args.with_stack}"),
              **{k: v for k, v in rec.items() if k != "trace"}}
    output.add_run(folder, record)
    return record


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
