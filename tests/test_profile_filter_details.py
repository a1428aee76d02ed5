"""A filter in the operators view moves the cursor to the first row that holds the text; the details pane
follows it at once, not at the next cursor move (on the B200 serving trace `/all_reduce` put the cursor on
`vllm::all_reduce` while the pane still read `vllm::moe_forward 36 calls`). Call counts are computed here
from the raw events with json + gzip only."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest
from app_support import cursor_text, wait_for_screen
from conftest import ROOT
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.profile_tables import OperatorTable

B200 = ROOT.parent / "shared" / "corpus" / "real" / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"


def _calls() -> Counter[str]:
    if not B200.exists():
        pytest.skip("corpus not available")
    events = json.loads(gzip.decompress(B200.read_bytes()))["traceEvents"]
    return Counter(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op")


def _detail(screen: ProfileScreen) -> str:
    return str(screen.query_one("#operators-detail", Static).render())


async def _filter(app, pilot, text: str) -> None:
    await pilot.press("slash", *text, "enter")
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_the_details_follow_the_cursor_after_a_filter() -> None:
    calls = _calls()
    assert calls["vllm::all_reduce"] != calls["vllm::moe_forward"]
    app = make_app([str(B200)])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("p")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = screen.query_one(OperatorTable)
        first = table.current()
        assert first is not None and _detail(screen).startswith(f"{first.name}  ")
        await _filter(app, pilot, "all_reduce")
        assert cursor_text(table).startswith("vllm::all_reduce |")
        assert _detail(screen).startswith(f"vllm::all_reduce  {calls['vllm::all_reduce']} calls")
        await _filter(app, pilot, "no operator is named so")
        assert table.row_count() == 0 and _detail(screen) == ""
        await pilot.press("slash", *"moe_forward", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _detail(screen).startswith(f"vllm::moe_forward  {calls['vllm::moe_forward']} calls")
