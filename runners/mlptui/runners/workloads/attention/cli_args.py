"""`mlptui run attention --variant naive|inplace|sdpa [--backend …]`: the flags, and which registry entry
they name (`attention-naive`, `attention-sdpa-flash`, …; those names work as workloads too)."""

from __future__ import annotations

import argparse

from mlptui.base.errors import MlptuiError
from mlptui.runners.workloads.attention.registry import BACKENDS, VARIANTS, workload_for


def add_attention_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("attention (WORKLOAD attention)")
    group.add_argument("--variant", choices=VARIANTS,
                       help="naive (masked_fill), inplace (masked_fill_), sdpa (F.scaled_dot_product_attention; "
                            "the default)")
    group.add_argument("--backend", choices=BACKENDS,
                       help="with --variant sdpa: pin SDPA to one backend (default auto: torch chooses)")


def attention_workload(args: argparse.Namespace) -> str:
    """The registry name this invocation runs: `attention` resolves through --variant/--backend."""
    variant, backend = getattr(args, "variant", None), getattr(args, "backend", None)
    if args.workload == "attention":
        return workload_for(variant, backend)
    if variant is not None or backend is not None:
        raise MlptuiError(f"--variant/--backend apply to the attention workload only (got {args.workload})")
    return str(args.workload)


def attention_command(name: str) -> list[str]:
    """How a command line spells a registry name: `attention --variant sdpa --backend flash` for
    attention-sdpa-flash, the name itself otherwise."""
    for variant in ("naive", "inplace"):
        if name == f"attention-{variant}":
            return ["attention", "--variant", variant]
    if name.startswith("attention-sdpa-"):
        return ["attention", "--variant", "sdpa", "--backend", name.removeprefix("attention-sdpa-")]
    return [name]
