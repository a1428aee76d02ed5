"""The `ranks` section of `mlptui summary RUN_DIR --json` (mlptui.trace.analysis.ranks.ranks builds it).

Fields are declared in the JSON's key order: the encoder writes a dataclass field by field, so the
document is these classes as they are. Times in µs rounded to 3 decimals; bandwidths in GB/s."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class RankClock:
    """How arrival at a collective is read."""

    shared: bool            # every rank recorded on one host's clock
    arrival: str            # "start" (start times) or "duration proxy" (kernel lengths)
    why: str
    matched_by: str         # "seq" (NCCL Seq numbers) or "order"


@dataclass(frozen=True, slots=True, kw_only=True)
class RankStep:
    name: str
    step_us: float | None   # profiled step window: start to the later of its end and its GPU work


@dataclass(frozen=True, slots=True, kw_only=True)
class RankRow:
    rank: int
    source: str
    steps: list[RankStep]
    compute_us: float | None        # union of non-communication kernels
    comm_us: float | None           # union of NCCL/RCCL kernels
    overlap_share: float | None     # share of comm_us during which compute kernels run (None: no comm)
    comm_wait_us: float | None      # time in collectives spent waiting for the last rank (None: one rank)
    late_us: float | None           # summed over calls: how long after the first rank it arrived
    arrived_last: int | None        # calls at which this rank arrived last (None: one rank)


@dataclass(frozen=True, slots=True, kw_only=True)
class Straggler:
    """Per step with collectives on ≥ 2 ranks: the rank whose collectives started last and the wait it
    caused; `rank` None when every rank arrived together."""

    step: str | None
    rank: int | None
    late_us: float
    last_at: int            # how many of the step's calls it was last at
    calls: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRow:
    """One collective call seen on ≥ 2 ranks."""

    step: str | None
    collective: str
    bytes: int | None
    group: str | None
    index: int              # the n-th call of its kind (from 0)
    seq: int | None
    last_rank: int | None
    late_us: float | None
    transfer_us: float | None
    late_by_rank: dict[str, float | None]   # rank (as text) -> µs after the first rank


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveRow:
    """Per rank and kind of collective: kernel time, the wait in it, and the transfer's bandwidth."""

    rank: int
    collective: str
    dtype: str | None
    bytes: int | None
    group_size: int | None
    count: int
    total_us: float | None
    wait_us: float | None           # None: no other rank made these calls
    transfer_us: float | None       # total_us − wait_us
    algbw_gbps: float | None
    busbw_gbps: float | None        # scaled by nccl-tests' factor for the collective


@dataclass(frozen=True, slots=True, kw_only=True)
class PathCollective:
    """A collective kernel on a rank's critical path."""

    collective: str
    bytes: int | None
    index: int              # the n-th call of its kind (from 0), as in `calls`
    seq: int | None
    dur_us: float           # its time on the path
    wait_us: float | None   # of it, before the last rank's matching kernel started (None: not measured)
    last_rank: int | None   # the rank that arrived last at the call (None: all together, or not measured)


@dataclass(frozen=True, slots=True, kw_only=True)
class RankPath:
    """One rank's critical path of its aligned step, its collectives' wait for the last rank counted apart."""

    rank: int
    step: str               # the step's name ("all" for a trace without steps)
    length_us: float        # equals window_us (figures.md#critical-path)
    window_us: float
    breakdown_us: dict[str, float]  # by kind; sync_wait holds the wait for other ranks, kernel the rest
    rank_wait_us: float | None      # on-path collective time spent waiting for the last rank (None: not measured)
    collectives: list[PathCollective]


@dataclass(frozen=True, slots=True, kw_only=True)
class RanksCriticalPath:
    """Every rank's critical path of one aligned step; `counting` says how on-path collectives count."""

    counting: str           # "last arrival" (shared clock) or "measured duration" (one rank's view)
    why: str
    ranks: list[RankPath]


@dataclass(frozen=True, slots=True)
class PathCall:
    """What a rank's digest carries of one collective kernel on its critical path (not in the JSON)."""

    call: int               # index of its CallRecord in the digest's calls
    ts: float               # start of its time on the path, µs on the rank's own clock (as CallRecord.ts)
    dur: float              # its time on the path, µs


@dataclass(frozen=True, slots=True)
class StepPath:
    """What a rank's digest carries of its aligned step's critical path (not in the JSON): the figures of
    mlptui.trace.analysis.critical_path, counting collectives as one rank sees them."""

    step: str
    window_us: float
    length_us: float
    breakdown_us: tuple[tuple[str, float], ...]   # (kind, µs), every kind in the path's order
    calls: tuple[PathCall, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RanksReport:
    world_size: int
    backend: str | None
    clock: RankClock
    ranks: list[RankRow]
    stragglers: list[Straggler]
    calls: list[CallRow]
    collectives: list[CollectiveRow]
    critical_path: RanksCriticalPath | None = None     # None: no rank carries its path
