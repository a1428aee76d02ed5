"""Small input lines that must be right: the unknown-workload line names every workload `run` takes, and
the text report of a run with hundreds of ranks stays readable in a terminal."""

from __future__ import annotations

import statistics

import pytest

from mlptui.base.errors import MlptuiError
from mlptui.render.ranks_text import render_ranks_text
from mlptui.trace.reports.ranks import RankClock, RankRow, RanksReport, RankStep


def test_the_unknown_workload_line_names_tp_mlp() -> None:
    from mlptui.runners.workloads.registry import workload

    with pytest.raises(MlptuiError) as info:
        workload("resnet")
    assert "tp-mlp" in str(info.value) and "ladder" in str(info.value)


def _rank(r: int, us: float) -> RankRow:
    return RankRow(rank=r, source=f"rank-{r}", steps=[RankStep(name="ProfilerStep#1", step_us=us)], compute_us=us,
                   comm_us=0.0, overlap_share=None, comm_wait_us=0.0, late_us=0.0, arrived_last=None)


def _report(ranks: list[RankRow]) -> RanksReport:
    return RanksReport(world_size=len(ranks), backend="nccl", ranks=ranks, stragglers=[], calls=[], collectives=[],
                       clock=RankClock(shared=True, arrival="start", why="one host", matched_by="order"))


def test_a_320_rank_report_is_not_3300_characters_wide() -> None:
    times = [1000.0 + (r * 37) % 320 for r in range(320)]
    text = render_ranks_text(_report([_rank(r, t) for r, t in enumerate(times)]), None)
    table = [line for line in text.splitlines() if line.startswith(("step", "ProfilerStep"))]
    assert max(len(line) for line in table) <= 120
    row = table[1].split()
    slowest = max(range(320), key=lambda r: times[r])
    ordered = sorted(times)
    assert row[1] == "320"
    assert float(row[2]) == pytest.approx(min(times) / 1000, abs=0.005)        # ms
    assert float(row[4]) == pytest.approx(ordered[160] / 1000, abs=0.005)
    assert f"(rank {slowest})" in table[1]
    assert statistics.median_high(times) == ordered[160]


def test_a_few_ranks_keep_a_column_each() -> None:
    header = render_ranks_text(_report([_rank(r, 1000.0 + r) for r in range(4)]), None).splitlines()[2]
    assert header.split()[:3] == ["step", "rank", "0"] and "rank 3" in header
