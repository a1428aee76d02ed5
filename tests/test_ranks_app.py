"""A folder of rank traces opens as one run: the ranks view, `enter` into a rank's panes, `<` `>`
between ranks, `esc` back; and its look at 80×24."""

from __future__ import annotations

from pathlib import Path

from app_support import rows_text, settle, wait_for_screen
from test_ranks_samples import delayed
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.rank_trace_screen import RankTraceScreen
from mlptui.screens.ranks_screen import RanksScreen
from mlptui.widgets.text_table import TextTable

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


def tp_run() -> str:
    """The tensor-parallel run recorded without a rank delayed on purpose."""
    return str(sorted(p for p in SAMPLES.glob("tp-mlp-eager-*-x2-*") if not delayed(p))[-1])


async def test_run_folder_opens_the_ranks_view_and_switches_ranks() -> None:
    app = make_app([tp_run()])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, RanksScreen)
        steps = rows_text(screen.query_one("#rank-steps", TextTable))
        assert [r.split(" | ")[0] for r in steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
        assert all(r.split(" | ")[3].startswith("rank ") for r in steps)  # a straggler on every step
        assert [r.split(" | ")[0] for r in rows_text(screen.query_one("#rank-list", TextTable))] == ["0", "1"]
        colls = rows_text(screen.query_one("#collectives", TextTable))
        assert len(colls) == 2 and all(" | allreduce | bf16 | 12.0 MiB | 2 | 3 | " in r for r in colls)
        assert "NVLink 4 450.0 GB/s" in str(screen.query_one("#collectives-pane").border_title)

        await pilot.press("greater_than_sign", "enter")        # select rank 1, open it
        one = await wait_for_screen(app, pilot, RankTraceScreen)
        assert one.position == 1 and one.facts.trace.source.endswith("rank-1.pt.trace.json.gz")
        assert one.sub_title == "rank 1 of 2"
        assert _header(one).startswith("rank 1 of 2 · ")         # named on screen, first line
        await pilot.press("greater_than_sign")                 # wraps to rank 0, in place
        await pilot.pause(0.2)
        assert isinstance(app.screen, RankTraceScreen) and app.screen.position == 0
        assert app.screen.facts.trace.source.endswith("rank-0.pt.trace.json.gz")
        assert _header(app.screen).startswith("rank 0 of 2 · ")
        await pilot.press("less_than_sign")
        await pilot.pause(0.2)
        assert app.screen.position == 1 and _header(app.screen).startswith("rank 1 of 2 · ")
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert isinstance(app.screen, RanksScreen)
        await pilot.press("o")                                 # `o` is the overview's key, not this view's
        await pilot.pause(0.2)
        assert isinstance(app.screen, RanksScreen)
        await pilot.press("l")                                 # l (or →) goes into the selected rank
        assert (await wait_for_screen(app, pilot, RankTraceScreen)).position == 1


def _header(screen: RankTraceScreen) -> str:
    return str(screen.query_one("#trace-header", Static).render()).splitlines()[0]


def test_snapshot_ranks_view(snap_compare) -> None:
    async def ready(pilot) -> None:
        await wait_for_screen(pilot.app, pilot, RanksScreen)
        await settle(pilot)

    assert snap_compare(make_app([tp_run()]), terminal_size=(80, 24), run_before=ready)
