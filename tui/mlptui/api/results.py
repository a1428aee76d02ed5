"""What the API's methods return beside the core's typed reports: small frozen dataclasses that hold the
core's typed rows (mlptui.trace.reports) over a scope, never recomputed. A table keeps its rows as `.rows`;
`.to_pandas()` makes a DataFrame of them (the `pandas` extra)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mlptui.api.frames import Rows
from mlptui.api.rows import DispatchRow
from mlptui.trace.reports.attention import AttentionFacts
from mlptui.trace.reports.check import Outcome
from mlptui.trace.reports.profile import (
    DevicePeak,
    ModuleStat,
    OpAllocations,
    OverviewDevice,
    OverviewRow,
    Recommendation,
    Unfreed,
    UsedDevice,
)
from mlptui.trace.reports.ranks import RanksReport

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
class Overview(Rows):
    scope: str
    rows: list[OverviewRow]                  # each step of the scope
    total: OverviewRow                       # the scope as one
    devices: list[UsedDevice | OverviewDevice]   # UsedDevice where the device ran kernels
    main_device: int | None
    notes: dict[str, str | None] = field(default_factory=dict)   # unlinked, outside_operators (None: none)


@dataclass(frozen=True)
class Memory(Rows):
    """`available` False: the trace has no allocator events; `why` says so and every table is empty."""

    available: bool
    why: str | None
    rows: list[OpAllocations]                # per op
    devices: list[DevicePeak]                # peaks per device
    unfreed: list[Unfreed]


@dataclass(frozen=True)
class Modules(Rows):
    available: bool
    why: str | None
    rows: list[ModuleStat]


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


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedOutcome(Outcome):
    """An expectation's outcome (`shown`: what the trace shows, as values) with `shows`, those values as
    `mlptui check` prints them."""

    shows: str


@dataclass(frozen=True)
class Check(Rows):
    ok: bool
    rows: list[CheckedOutcome]


@dataclass(frozen=True)
class Ranks:
    """`mlptui summary RUN_DIR --json`'s `ranks` section, with the ranks' files and those left out."""

    report: RanksReport
    sources: list[str]
    failed: list[str]
