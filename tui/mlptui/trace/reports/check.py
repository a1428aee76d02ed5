"""`mlptui check`: each expectation's outcome, with what the trace shows as values
(mlptui.trace.analysis.expectations.expectations judges them; mlptui.render.check_text says them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class CountsShown:
    """`kernels|launches|memcpy per step OP N`: the count in each profiled step (one: the whole trace)."""

    subject: str                    # kernels, launches, memcpy
    counts: list[int]


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionShown:
    """`attention kernel: WORD`: the fused attention kernels of the step, by implementation."""

    kernels: dict[str, str]         # implementation word -> its label, in the order first launched


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorCoresShown:
    """`tensor cores: all|no GEMMs`: the step's GEMM and attention kernels, and those without Tensor Cores."""

    kernels: int
    on: int
    without: list[str]              # short names, each once


@dataclass(frozen=True, slots=True, kw_only=True)
class ProblemCount:
    kind: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegrityShown:
    problems: list[ProblemCount]    # none: integrity ok


@dataclass(frozen=True, slots=True, kw_only=True)
class MaskShown:
    """`(no) mask rebuilt`: whether a causal mask is built inside the steps, in how many, by which ops."""

    rebuilt: bool
    mask_steps: int
    steps: int
    chain: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticalPathShown:
    """`critical_path.SHARE OP X`: the share of each step's critical path."""

    subject: str                    # gpu, or a kind of time (cpu, launch, ...)
    shares: list[float]


Shown = CountsShown | AttentionShown | TensorCoresShown | IntegrityShown | MaskShown | CriticalPathShown


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    expectation: str                # as written
    ok: bool
    shown: Shown                    # what the trace shows
