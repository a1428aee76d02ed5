"""The profiler views in the app, driven by keys on the bundled training sample (memory and modules)
and on an inference sample (neither): each view opens within two presses of the first screen."""

from __future__ import annotations

from app_support import rows_text, wait_for_screen
from conftest import find_sample, training_sample
from textual.widgets import Static

from mlptui import keys
from mlptui.app import make_app
from mlptui.screens.help_screen import HelpScreen
from mlptui.screens.picker import PickerScreen
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.memory_plot import MemoryPlot
from mlptui.widgets.profile_tables import KernelStatsTable, MemoryOpTable, ModuleTable, OperatorTable

SIZE = (120, 40)



async def open_view(pilot, app, key: str) -> ProfileScreen:
    await pilot.press(key)
    screen = await wait_for_screen(app, pilot, ProfileScreen)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return screen


async def test_every_view_opens_within_two_presses_of_the_picker() -> None:
    for key, view in (("o", "overview"), ("p", "operators"), ("K", "kernels"), ("M", "memory"), ("u", "modules")):
        app = make_app([])
        async with app.run_test(size=SIZE) as pilot:
            picker = await wait_for_screen(app, pilot, PickerScreen)
            await app.workers.wait_for_complete()
            await pilot.press("enter")                      # press 1: the first trace
            await wait_for_screen(app, pilot, TraceScreen)
            screen = await open_view(pilot, app, key)       # press 2: the view
            assert screen.view == view and picker is not None


async def test_training_sample_views_show_memory_modules_and_tensor_cores() -> None:
    app = make_app([training_sample()])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        screen = await open_view(pilot, app, "o")
        body = str(screen.query_one("#overview-body", Static).render())
        assert "ProfilerStep#" in body and "K kernel" in body and "NVIDIA H200" in body
        assert "step-time breakdown" in body
        await pilot.press("p")
        ops = rows_text(screen.query_one(OperatorTable))
        mm = next(r for r in ops if r.startswith("aten::mm |"))
        assert mm.endswith("100%")                      # bf16 GEMMs on nvjet: all on Tensor Cores
        detail = str(screen.query_one("#operators-detail", Static).render())
        assert "called from" in detail and "MmBackward0" in detail and "nvjet" in detail
        await pilot.press("a")                          # by input shapes (computed in a worker)
        await app.workers.wait_for_complete()
        await pilot.pause()
        shaped = rows_text(screen.query_one(OperatorTable))
        assert any(r.startswith("aten::mm [[") for r in shaped)
        await pilot.press("s")                          # sort by the name column
        names = [r.split(" | ")[0] for r in rows_text(screen.query_one(OperatorTable))]
        assert names == sorted(names)
        await pilot.press("K")
        kernels = rows_text(screen.query_one(KernelStatsTable))
        assert any("nvjet" in r and "| TC |" in r for r in kernels)
        assert any("foreach" in r for r in kernels)      # AdamW's multi_tensor_apply kernels
        await pilot.press("M")
        peaks = str(screen.query_one("#memory-peaks", Static).render())
        assert peaks.startswith("cuda:0: peak") and "reserved peak" in peaks
        assert screen.query_one(MemoryPlot).plt is not None
        assert rows_text(screen.query_one(MemoryOpTable))
        await pilot.press("u")
        mods = rows_text(screen.query_one(ModuleTable))
        assert mods[0].startswith("SimpleGeGLUMLP_0") and any(r.strip().startswith("Linear_2") for r in mods)
        await pilot.press("escape")
        assert isinstance(app.screen, TraceScreen)
        await open_view(pilot, app, "u")                # back again: the figures were kept
        assert app.screen.view == "modules"


async def test_views_say_what_a_trace_lacks() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        screen = await open_view(pilot, app, "M")
        assert "no memory events" in str(screen.query_one("#memory-peaks", Static).render())
        await pilot.press("u")
        assert "no nn.Module frames" in str(screen.query_one("#modules-detail", Static).render())


async def test_help_lists_the_view_keys_with_ids() -> None:
    ids = {b.id for b in keys.TRACE_KEYS}
    assert {"view-overview", "view-operators", "view-kernels", "view-memory", "view-modules"} <= ids
    app = make_app([training_sample()])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("question_mark")
        await wait_for_screen(app, pilot, HelpScreen)
        text = str(app.screen.query_one("#help-text", Static).render())
        assert "view-memory" in text and "profile-group" in text


def _footer_device_key(screen: ProfileScreen) -> bool | None:
    """`v` in the footer: True shown, None dimmed, False left out."""
    binding = screen.active_bindings.get("v")
    return False if binding is None else (True if binding.enabled else None)


async def test_device_key_shows_on_the_memory_view_only() -> None:
    app = make_app([training_sample()])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        screen = await open_view(pilot, app, "o")
        shown = {}
        for key, view in (("o", "overview"), ("p", "operators"), ("K", "kernels"), ("M", "memory"),
                          ("u", "modules")):
            await pilot.press(key)
            await pilot.pause()
            shown[view] = _footer_device_key(screen)
        data = screen.data
        assert data is not None and data.memory is not None and len(data.memory.devices) > 1
        assert shown == {"overview": False, "operators": False, "kernels": False, "memory": True,
                         "modules": False}
        await pilot.press("M")
        await pilot.pause()
        footer = screen.query_one(KeyBar).render_line(0).text
        assert "Device" in footer
        assert "Group" not in footer  # `a` groups operators and kernels only
        await pilot.press("p")
        await pilot.pause()
        footer = screen.query_one(KeyBar).render_line(0).text
        assert "Device" not in footer and "Sort" in footer and "Group" in footer


async def test_device_key_is_dimmed_without_memory_events() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        screen = await open_view(pilot, app, "M")
        assert screen.data is not None and screen.data.memory is None
        assert _footer_device_key(screen) is None


async def test_kernels_view_reads_each_rows_launch_figures_once(monkeypatch) -> None:
    """`a` back and forth: each row's grid, block, registers and shared memory (read from its kernels'
    args) are worked out the first time the row is shown, and the rows read the same when they come back."""
    import mlptui.widgets.profile_tables as tables

    made: list[int] = []
    real = tables.group_launch

    def counted(trace, ids):      # type: ignore[no-untyped-def]
        made.append(len(ids))
        return real(trace, ids)

    monkeypatch.setattr(tables, "group_launch", counted)
    app = make_app([training_sample()])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        screen = await open_view(pilot, app, "K")
        table = screen.query_one(KernelStatsTable)
        shown = []
        for _ in range(2):                              # by kernel, then by kernel and launching op
            shown.append(rows_text(table))
            await pilot.press("a")
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert made and shown[0] != shown[1] and rows_text(table) == shown[0]
        first_round = len(made)
        for again in range(4):
            assert rows_text(table) == shown[again % 2]
            await pilot.press("a")
            await pilot.pause()
        assert len(made) == first_round, "launch figures were read again for rows shown before"
