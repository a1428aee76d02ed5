"""What the API's methods return beside the core's typed reports: small frozen dataclasses over the figures
of `mlptui summary --json`, `mlptui diff --json` and `mlptui check`, never recomputed. A table keeps its
rows as `.rows`; `.to_pandas()` makes a DataFrame of them (the `pandas` extra)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from mlptui.api.frames import Rows
from mlptui.api.rows import (
    DispatchRow,
    MemoryOpRow,
    OutcomeRow,
    OverviewRow,
)
from mlptui.trace.reports.attention import AttentionFacts
from mlptui.trace.reports.profile import Recommendation

RowT = TypeVar("RowT")


@dataclass(frozen=True)
class Table(Rows, Generic[RowT]):
    """Rows of one shape over a scope: "steps" (every step), "ProfilerStep#N" (one), "trace" (a trace
    without steps)."""

    rows: list[RowT]
    scope: str

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class Overview:
    scope: str
    rows: list[OverviewRow]                  # each step of the scope
    total: OverviewRow                       # the scope as one
    devices: list[dict[str, Any]]
    main_device: int | None
    notes: dict[str, Any] = field(default_factory=dict)   # unlinked, outside_operators (null when none)


@dataclass(frozen=True)
class Memory(Rows):
    """`available` False: the trace has no allocator events; `why` says so and every table is empty."""

    available: bool
    why: str | None
    rows: list[MemoryOpRow]                  # per op
    devices: list[dict[str, Any]]            # peaks per device
    unfreed: list[dict[str, Any]]


@dataclass(frozen=True)
class Modules(Rows):
    available: bool
    why: str | None
    rows: list[dict[str, Any]]               # ModuleRow: path, calls, host_us, device_us


@dataclass(frozen=True)
class Dispatch(Rows):
    """The CPU dispatch subtree below an op, with the kernels each op launched."""

    op: list[str]                            # the op (or path) asked for
    contexts: list[list[str]]                # the paths above it, as the steps ran it
    rows: list[DispatchRow]                  # depth-first, children by first run
    cut_below: int | None                    # the depth asked for; deeper nodes are folded into gpu_us


@dataclass(frozen=True)
class Findings:
    lines: list[str]                         # the last step at a glance, as `summary` writes them
    recommendations: list[Recommendation]
    attention: AttentionFacts | None


@dataclass(frozen=True)
class Diff(Rows):
    """`mlptui diff --json`'s document; `rows` is its kernel table (A against B, row by row)."""

    doc: dict[str, Any]
    rows: list[dict[str, Any]]
    speedup: float | None


@dataclass(frozen=True)
class Check(Rows):
    ok: bool
    rows: list[OutcomeRow]


@dataclass(frozen=True)
class Ranks:
    """`mlptui summary RUN_DIR --json`'s `ranks` section, with the ranks' files and those left out."""

    report: dict[str, Any]
    sources: list[str]
    failed: list[str]
