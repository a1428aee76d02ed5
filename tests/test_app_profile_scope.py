"""The profiler views in the app follow the trace screen's step, change it with `[` `]` (and hand it
back), show every device's memory curve (`v`), list a module's kernels, and show names holding markup
brackets literally (the synthetic trace of scoped_trace.py, in a file whose name has brackets too)."""

from __future__ import annotations

from app_support import rows_text, wait_for_screen
from scoped_trace import GEMM_US, ODD, write_scoped_trace
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.viewmodels import fmt
from mlptui.widgets.memory_plot import MemoryPlot
from mlptui.widgets.profile_tables import KernelStatsTable, MemoryOpTable, ModuleTable, OperatorTable

SIZE = (140, 40)


def text(screen: ProfileScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def settle(app, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_views_follow_the_step_and_hand_it_back(tmp_path) -> None:
    app = make_app([str(write_scoped_trace(tmp_path))])
    async with app.run_test(size=SIZE) as pilot:
        trace_screen = await wait_for_screen(app, pilot, TraceScreen)
        assert trace_screen.scope.step == 1                  # the trace screen opens on the last step
        await pilot.press("K")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        await settle(app, pilot)
        assert "scope: ProfilerStep#2" in text(screen, "#profile-header")
        assert "run[b]1.pt.trace.json" in text(screen, "#profile-header")      # markup in the file name
        kernels = rows_text(screen.query_one(KernelStatsTable))
        assert len(kernels) == 2 and any(fmt.us(GEMM_US[1]) in r for r in kernels)
        await pilot.press("right_square_bracket")       # after the last step: every step
        await settle(app, pilot)
        assert "scope: all 2 steps" in text(screen, "#profile-header")
        assert any(fmt.us(sum(GEMM_US)) in r for r in rows_text(screen.query_one(KernelStatsTable)))
        await pilot.press("right_square_bracket")       # then the first step
        await settle(app, pilot)
        assert "scope: ProfilerStep#1" in text(screen, "#profile-header")
        assert any(fmt.us(GEMM_US[0]) in r for r in rows_text(screen.query_one(KernelStatsTable)))
        await pilot.press("o")
        assert "ProfilerStep#1" in text(screen, "#overview-body")
        assert "ProfilerStep#2" not in text(screen, "#overview-body")
        await pilot.press("escape")
        assert app.screen is trace_screen and trace_screen.scope.step == 0


async def test_memory_shows_every_device_and_modules_their_kernels(tmp_path) -> None:
    app = make_app([str(write_scoped_trace(tmp_path))])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("left_square_bracket", "left_square_bracket")    # from the last step to every step
        await pilot.press("M")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        await settle(app, pilot)
        peaks = text(screen, "#memory-peaks").splitlines()
        assert peaks[0].startswith(f"cuda:0: peak {fmt.size_bytes(2000)}") and peaks[1].startswith(f"cuda:1: peak {fmt.size_bytes(1000)}")
        assert "(most from aten::mm)" in peaks[2] and len(peaks) == 3
        plot = screen.query_one(MemoryPlot)
        assert plot.shown is not None and plot.shown.label == "cuda:0"
        await pilot.press("v")
        assert plot.shown is not None and plot.shown.label == "cuda:1"
        await pilot.press("v")
        assert plot.shown is not None and plot.shown.label == "cuda:0"
        assert any(r.startswith(ODD) for r in rows_text(screen.query_one(MemoryOpTable)))
        await pilot.press("u")
        await pilot.pause()
        assert rows_text(screen.query_one(ModuleTable))[0].startswith("Net_0")
        detail = text(screen, "#modules-detail")
        assert "its kernels (2 distinct" in detail
        assert f"2× {ODD}" in detail                    # the op, brackets and all
        assert fmt.us(sum(GEMM_US)) in detail


async def test_names_with_brackets_render_literally(tmp_path) -> None:
    app = make_app([str(write_scoped_trace(tmp_path))])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("p")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        await settle(app, pilot)
        table = screen.query_one(OperatorTable)
        assert any(r.startswith(f"{ODD} |") for r in rows_text(table))
        table.move_cursor(next(i for i, r in enumerate(table.rows) if r.name == ODD))
        await pilot.pause()
        assert text(screen, "#operators-detail").startswith(f"{ODD}  1 calls")
        await pilot.press("M")
        await pilot.pause()
        assert f"in {ODD}" in text(screen, "#memory-peaks")
