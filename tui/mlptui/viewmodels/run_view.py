"""A multi-rank run as the viewer holds it: each rank's facts, the ranks report and the link's peak,
and the rows of the ranks view's three tables."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlptui.base import units
from mlptui.render.ranks_text import (
    RANK_HEADERS,
    collective_headers,
    collective_rows,
    rank_rows,
    step_matrix,
)
from mlptui.trace.analysis.comms.links import Link, link_for
from mlptui.trace.analysis.ranks.ranks import ranks_report
from mlptui.trace.reports.ranks import RanksReport
from mlptui.viewmodels.facts import TraceFacts


@dataclass
class RunView:
    folder: str
    ranks: list[tuple[int, TraceFacts]]     # in rank order
    report: RanksReport
    link: Link | None
    failed: list[str] = field(default_factory=list)    # one line per rank that could not be read

    @property
    def failures(self) -> str:
        """What could not be read, for the header: '' when every rank opened."""
        if not self.failed:
            return ""
        first = self.failed[0]
        more = f" (and {len(self.failed) - 1} more)" if len(self.failed) > 1 else ""
        return f"{len(self.failed)} rank(s) could not be read: {first}{more}"

    @property
    def title(self) -> str:
        device = self.ranks[0][1].trace.device_name if self.ranks else None
        return (f"{self.folder.rstrip('/').rsplit('/', 1)[-1]}  ·  {len(self.ranks)} of "
                f"{self.report.world_size} ranks  ·  {self.report.backend or units.MISSING}"
                + (f"  ·  {device}" if device else ""))

    def rank_label(self, position: int) -> str:
        rank, facts = self.ranks[position]
        return f"rank {rank} of {self.report.world_size}"

    @property
    def arrival(self) -> str:
        """How the straggler was found: start times on one host's clock, or the duration proxy."""
        if self.report.clock.shared:
            return "straggler: arrived last (start times, one host)"
        return "straggler: proxy, the shortest kernel (no shared clock)"

    def step_table(self) -> tuple[list[str], list[list[str]]]:
        return step_matrix(self.report)

    def rank_table(self) -> tuple[list[str], list[list[str]]]:
        return RANK_HEADERS, rank_rows(self.report)

    def collective_table(self) -> tuple[list[str], list[list[str]]]:
        return collective_headers(self.link), collective_rows(self.report, self.link)


def build_run_view(folder: str, ranked: list[tuple[int, TraceFacts]], failed: list[str] | None = None) -> RunView:
    report = ranks_report([(rank, facts.trace) for rank, facts in ranked])
    link = link_for(ranked[0][1].trace.device_name) if ranked else None
    return RunView(folder, ranked, report, link, list(failed or []))
