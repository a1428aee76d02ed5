"""`mlptui run WORKLOAD`: profile one workload (or the whole ladder) and write gzipped Kineto traces
plus the folder's manifest.json. torch is imported only inside `run`, so `--help` stays fast."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError
from mlptui.base.extras import install_hint
from mlptui.runners.record.run_args import check_schedule, flag_name, resolve_mode, resolve_shape
from mlptui.runners.record.skipped import Skipped
from mlptui.runners.workloads.attention.cli_args import (
    add_attention_arguments,
    attention_command,
    attention_workload,
)
from mlptui.runners.workloads.registry import (
    DTYPES,
    MODES,
    SHAPE_KINDS,
    WORKLOADS,
    Shape,
    Workload,
    ladder,
    workload,
)

DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    names = ", ".join([*WORKLOADS, "attention (with --variant/--backend)", "tp-mlp (with --nproc)", "ladder"])
    parser.add_argument("workload", metavar="WORKLOAD", help=f"one of: {names} (ladder = all, in their modes)")
    parser.add_argument("--compile", action="store_true", help="same as --mode compile")
    parser.add_argument("--mode", choices=MODES, help="eager (default), compile, reduce-overhead, max-autotune")
    add_attention_arguments(parser)
    added: set[str] = set()
    for kind in SHAPE_KINDS.values():
        group = parser.add_argument_group(f"{kind.name} shape (defaults are the article's)")
        for field in kind.fields:
            if field in added:  # shared with an earlier family (--batch, --seq): one flag sets both
                continue
            added.add(field)
            spellings = [flag_name(field)] + ([f"--{field}"] if "_" in field else [])
            defaults = ", ".join(f"{d} {k.name}" for k in SHAPE_KINDS.values()
                                 for f, d in zip(k.fields, k.defaults, strict=True) if f == field)
            group.add_argument(*spellings, dest=field, metavar="N",
                               help=f"{kind.help.get(field, field)} (default {defaults})")
    parser.add_argument("--dtype", choices=DTYPES, default="bf16", help="default bf16")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="default cuda")
    sched = parser.add_argument_group("profiler schedule (steps of one call each)")
    sched.add_argument("--wait", type=int, default=1, metavar="N", help="default 1")
    sched.add_argument("--warmup", type=int, default=1, metavar="N", help="default 1")
    sched.add_argument("--active", type=int, default=3, metavar="N", help="default 3")
    parser.add_argument("--with-stack", action="store_true", help="record Python stacks (larger traces)")
    parser.add_argument("--profile-memory", action="store_true",
                        help="record every allocation and free ([memory] events: the memory view)")
    parser.add_argument("--with-modules", action="store_true",
                        help="record the nn.Module hierarchy (the modules view; turns on Python stacks)")
    parser.add_argument("--out", default="traces", metavar="DIR", help="run folder (default ./traces)")
    parser.add_argument("--open", action="store_true", help="open the result in the explorer afterwards")
    ranks = parser.add_argument_group("several ranks (torch.distributed.run on 127.0.0.1, one process per GPU)")
    ranks.add_argument("--nproc", type=int, metavar="N",
                       help="ranks to start: tp-mlp (default 2) or mlp --train (NCCL on CUDA, gloo on the CPU)")
    ranks.add_argument("--train", action="store_true",
                       help="profile training steps: forward, backward and an AdamW step (runners/mlptui/runners/workloads/training.py); "
                            "with mlp --nproc N a DDP step (bucketed gradient all-reduce)")
    ranks.add_argument("--delay-rank", type=int, metavar="R",
                       help="rank R sleeps before each of its steps: a straggler on purpose, the others wait "
                            "for it at every collective")
    ranks.add_argument("--delay-ms", type=float, default=2.0, metavar="MS", help="that sleep (default 2 ms)")


def plan(args: argparse.Namespace) -> list[tuple[Workload, str, Shape]]:
    """Every (workload, mode, shape) this command records, all checked before anything runs."""
    mode = resolve_mode(args)
    check_schedule(args)
    if args.workload == "ladder":
        if getattr(args, "variant", None) or getattr(args, "backend", None):
            raise MlptuiError("ladder records every attention variant and backend; drop --variant/--backend")
        if mode is not None:
            raise MlptuiError("ladder records each workload in its own modes; drop --mode/--compile")
        return [(w, m, resolve_shape(w, args, strict=False)) for w, m in ladder()]
    w = workload(attention_workload(args))
    if w.needs_cuda and args.device != "cuda":
        raise MlptuiError(needs_cuda_message(w))
    return [(w, mode or "eager", resolve_shape(w, args, strict=True))]


def ladder_training_run(args: argparse.Namespace) -> tuple[Workload, str, Shape]:
    """The ladder's training run: the MLP, eager, at the ladder's MLP shape."""
    w = workload("mlp")
    return w, "eager", resolve_shape(w, args, strict=False)


def training_args(args: argparse.Namespace) -> argparse.Namespace:
    """The ladder's training run records one active step, with memory and modules."""
    return argparse.Namespace(**{**vars(args), "train": True, "profile_memory": True, "with_modules": True,
                                 "wait": 1, "warmup": 1, "active": 1})


def needs_cuda_message(w: Workload) -> str:
    return f"{w.name} runs GPU-only kernels and needs --device cuda"


def command_line(args: argparse.Namespace, w: Workload, mode: str, shape: Shape) -> str:
    """The single-workload command that reproduces one run of this invocation."""
    parts = ["mlptui", "run", *attention_command(w.name), "--mode", mode]
    for field, value in shape.as_dict().items():
        parts += [flag_name(field), str(value)]
    parts += ["--dtype", args.dtype, "--device", args.device, "--wait", str(args.wait),
              "--warmup", str(args.warmup), "--active", str(args.active)]
    for flag in ("with_stack", "profile_memory", "with_modules", "train"):
        if getattr(args, flag, False):
            parts.append(flag_name(flag))
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    from mlptui.runners.distributed.launch import is_distributed, run_distributed

    if is_distributed(args):
        return run_distributed(args)
    if getattr(args, "delay_rank", None) is not None:
        raise MlptuiError("--delay-rank delays one rank of several: it needs --nproc (tp-mlp, mlp --train)")
    runs = plan(args)
    try:
        import torch  # only now: `mlptui run --help` and the plan's errors never pay for it
    except ImportError as exc:
        raise MlptuiError(f"run needs torch ({exc}); add it with: {install_hint('gpu')}") from None

    if args.device == "cuda" and not torch.cuda.is_available():
        raise MlptuiError("CUDA is not available here; try --device cpu")
    folder = Path(args.out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MlptuiError(f"cannot create the run folder {folder}: {exc.strerror or exc}") from None
    from mlptui.runners.record.output import check_writable, read_manifest
    from mlptui.runners.record.progress import RunProgress

    check_writable(folder)  # a read-only folder, or a broken manifest, stops the run before any work
    read_manifest(folder)
    progress = RunProgress()
    done: list[dict[str, Any]] = []
    failed: list[str] = []
    for w, mode, shape in runs:
        if w.needs_cuda and args.device != "cuda":  # only the ladder gets here (plan checks the rest)
            progress.note(f"[yellow]skipped[/] {w.name} {mode}: {needs_cuda_message(w)}")
            continue
        try:
            done.append(record_one(args, w, mode, shape, folder, progress))
        except Skipped as exc:  # a backend or kernel source this machine lacks: not a failure
            progress.note(f"[yellow]skipped[/] {w.name} {mode}: {exc}")
        except MlptuiError as exc:
            if args.workload != "ladder":
                raise
            failed.append(f"{w.name} {mode}")
            progress.note(f"[red]failed[/] {w.name} {mode}: {exc}")
    if args.workload == "ladder" and not args.train:
        w, mode, shape = ladder_training_run(args)
        try:
            done.append(record_one(training_args(args), w, mode, shape, folder, progress))
        except MlptuiError as exc:
            failed.append(f"{w.name} {mode} train")
            progress.note(f"[red]failed[/] {w.name} {mode} train: {exc}")
    progress.results(done, str(folder))
    if args.open and done:
        _open_viewer(folder if len(done) > 1 else folder / done[0]["trace"], progress)
    if failed:
        progress.note(f"mlptui: {len(failed)} run(s) failed: {', '.join(failed)}")
        return 1
    return 0


def record_one(args: argparse.Namespace, w: Workload, mode: str, shape: Shape, folder: Path,
               progress: Any) -> dict[str, Any]:
    """Build, compile, check, profile and time one workload; publish its trace and manifest entry.
    The trace is written under a temporary name and renamed only once everything succeeded."""
    import torch

    from mlptui.runners.record import output, profiling
    from mlptui.runners.record.environment import device_info, versions

    dtype = getattr(torch, DTYPE_NAMES[args.dtype])
    train = bool(getattr(args, "train", False))
    title = f"{w.name}{' train' if train else ''} {mode} {shape.slug} {args.dtype} {args.device}"
    when = datetime.now()
    dev = device_info(args.device)
    tmp: Path | None = None
    grad = torch.enable_grad() if train else contextlib.nullcontext()
    try:
        with torch.no_grad():
            with progress.stage(f"{title}: building"), _failing_as(title, "building"):
                built = w.build_function()(shape, dtype, args.device)
            fn = profiling.compiled(built.module, mode)
            first = "the first call" if mode == "eager" else "compile"
            with progress.stage(f"{title}: {'first call' if mode == 'eager' else 'compiling'}"), \
                    _failing_as(title, first):
                out, compile_s = profiling.first_calls(fn, built.inputs, args.device, mode)
            with _failing_as(title, "the fp32 reference"):
                ref = built.reference(*(x.float() for x in built.inputs))
                err = profiling.max_rel_err(out, ref)
                del out, ref
            if train:
                from mlptui.runners.workloads.training import step_function

                with _failing_as(title, "setting up training"):
                    fn = step_function(fn, built.module)
            name = output.trace_name(f"{w.name}-train" if train else w.name, mode, shape.slug, args.dtype,
                                     dev["slug"], when)
            tmp = output.temp_path(folder, name)
            meta = {"workload": w.name, "mode": mode, "shape": shape.as_dict(), "dtype": args.dtype,
                    "kernel_source": built.kernel_source, "train": train}
            with progress.stage(f"{title}: profiling"), _failing_as(title, "profiling"), grad:
                profiling.profile_to(
                    tmp, fn, built.inputs, device=args.device, label=_label(w, train), wait=args.wait,
                    warmup=args.warmup, active=args.active, with_stack=args.with_stack, metadata=meta,
                    profile_memory=bool(getattr(args, "profile_memory", False)),
                    with_modules=bool(getattr(args, "with_modules", False)),
                    on_step=lambda i, n: progress.update(f"{title}: profiling step {i}/{n}"),
                )
            with progress.stage(f"{title}: timing"), _failing_as(title, "timing"), grad:
                timing = profiling.time_calls(fn, built.inputs, args.device)
        final = output.publish_trace(tmp, folder, name)
        tmp = None
    finally:
        if tmp is not None and tmp.exists():
            tmp.unlink()
    median_s = timing["median_us"] / 1e6
    record = {
        "trace": final.name,
        "workload": w.name,
        "mode": mode,
        "label": _label(w, train),
        "train": train,
        "shape": shape.as_dict(),
        "dtype": args.dtype,
        "args": {**{k: v for k, v in vars(args).items() if not callable(v)}, **shape.as_dict(),
                 "workload": w.name, "mode": mode, "requested": args.workload},
        "command": command_line(args, w, mode, shape),
        "device": dev,
        "versions": versions(),
        "kernel_source": built.kernel_source,
        "kernel_tried": list(built.kernel_tried),
        "recorder": (f"torch.profiler, schedule wait={args.wait} warmup={args.warmup} active={args.active}, "
                     f"record_shapes=True, with_stack={args.with_stack}, "
                     f"profile_memory={bool(getattr(args, 'profile_memory', False))}, "
                     f"with_modules={bool(getattr(args, 'with_modules', False))}"
                     + (", each step forward + backward + AdamW step" if train else "")),
        "recorded_at": when.isoformat(timespec="seconds"),
        "compile_s": round(compile_s, 4),
        "timing": timing,
        # a training step does each GEMM three times: forward, and the two of its backward
        "flops": built.flops * (3 if train else 1),
        "tflops": built.flops * (3 if train else 1) / median_s / 1e12 if median_s > 0 else 0.0,
        "max_rel_err_vs_fp32": err,
        **built.extra,
    }
    try:
        output.add_run(folder, record)
    except MlptuiError as exc:
        # No trace without its manifest entry: the file we just published goes again.
        final.unlink(missing_ok=True)
        raise MlptuiError(f"{exc}; {final.name} was not kept") from None
    progress.note(f"  wrote {final}")
    return record


def _label(w: Workload, train: bool) -> str:
    """The record_function name around each profiled call: `mlp_fwd`, or `mlp_train_step` in training."""
    return w.label.removesuffix("_fwd") + "_train_step" if train else w.label


@contextlib.contextmanager
def _failing_as(title: str, what: str) -> Iterator[None]:
    """Any failure of a stage (compiler errors, CUDA errors, out of memory) becomes one line that
    names the run and the stage; Ctrl-C and our own errors pass through unchanged."""
    try:
        yield
    except (MlptuiError, KeyboardInterrupt):
        raise
    except Exception as exc:
        from mlptui.runners.workloads.hub_sources import one_line

        if type(exc).__name__ == "OutOfMemoryError":
            raise MlptuiError(f"{title}: out of GPU memory during {what}") from None
        raise MlptuiError(f"{title}: {what} failed: {one_line(exc)}") from None


def _open_viewer(target: Path, progress: Any) -> None:
    """The explorer runs in its own process, so this command never imports the UI."""
    subprocess.call([sys.executable, "-m", "mlptui.cli", "view", str(target)])
