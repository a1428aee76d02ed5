"""Turning `mlptui run`'s arguments into a mode and a shape, and checking the profiler schedule; shared
by the one-process run and the multi-rank launcher."""

from __future__ import annotations

import argparse

from mlptui.base.errors import MlptuiError
from mlptui.runners.workloads.registry import SHAPE_KINDS, Shape, Workload


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def resolve_mode(args: argparse.Namespace) -> str | None:
    """The mode asked for, or None when none was (a workload then runs eager, the ladder its own)."""
    if args.compile and args.mode not in (None, "compile"):
        raise MlptuiError(f"--compile and --mode {args.mode} disagree; give one of them")
    return "compile" if args.compile else args.mode


def resolve_shape(w: Workload, args: argparse.Namespace, *, strict: bool) -> Shape:
    """The workload's shape from its flags and the article's defaults. `strict` rejects flags of the
    other shape family (a single workload); the ladder passes each family its own."""
    kind = SHAPE_KINDS[w.shape_kind]
    if strict:
        for other in SHAPE_KINDS.values():
            for field in other.fields:
                if field not in kind.fields and getattr(args, field, None) is not None:
                    takes = ", ".join(flag_name(f) for f in kind.fields)
                    raise MlptuiError(f"{flag_name(field)} is not a shape flag of {w.name} (it takes {takes})")
    values = []
    for field, default in zip(kind.fields, kind.defaults, strict=True):
        raw = getattr(args, field, None)
        if raw is None:
            values.append(default)
            continue
        try:
            value = int(str(raw), 10)
        except ValueError:
            raise MlptuiError(f"{flag_name(field)} must be a positive integer (got {raw!r})") from None
        if value <= 0:
            raise MlptuiError(f"{flag_name(field)} must be a positive integer (got {value})")
        values.append(value)
    return Shape(kind.name, tuple(values))


def check_schedule(args: argparse.Namespace) -> None:
    if args.wait < 0 or args.warmup < 0 or args.active < 1:
        raise MlptuiError(
            f"profiler schedule needs --wait ≥ 0, --warmup ≥ 0, --active ≥ 1 "
            f"(got {args.wait}, {args.warmup}, {args.active})"
        )
