"""The explorer driven by keys on the bundled real GPU traces (H200, torch 2.11, CUDA 13)."""

from __future__ import annotations

import pytest
from app_support import cursor_text, rows_text, wait_for_screen
from conftest import CORPUS, find_sample
from textual.widgets import Input, Static

from mlptui.app import make_app
from mlptui.screens.help_screen import HelpScreen
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.picker import PickerScreen, TraceList
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.launches import LaunchTable
from mlptui.widgets.op_tree import OpTree
from mlptui.widgets.steps import StepList
from mlptui.widgets.timeline import Timeline

SIZE = (100, 30)


def details_text(screen: TraceScreen) -> str:
    return screen.query_one(Details).text


async def open_trace(pilot, path) -> TraceScreen:
    return await wait_for_screen(pilot.app, pilot, TraceScreen)


async def test_picker_lists_the_samples_in_ladder_order_with_findings() -> None:
    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        table = screen.query_one(TraceList)
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = rows_text(table)
        assert len(rows) >= 7
        assert rows[0].split(" | ")[1].startswith("linear · eager")
        cells = {r.split(" | ")[1]: r.split(" | ") for r in rows}
        assert cells["linear · eager · bf16"][2:4] == ["1", "GEMM+bias"]
        assert cells["mlp · eager · bf16"][2:4] == ["5", "3 GEMM + mul + gelu"]
        compiled = cells["mlp · compile · bf16"]           # gelu·mul fused into one Triton kernel
        assert compiled[2:4] == ["4", "3 GEMM + triton_poi_fused__unsafe_view_gelu_mul_0"]
        assert int(compiled[5]) < int(cells["mlp · eager · bf16"][5])      # the CPU chain collapsed
        assert cells["kernels-mlp · eager · bf16"][3] == "3 GEMM + _geglu_tanh_forward_kernel"
        traces = [c for c in cells.values() if not c[3].startswith(("run of", "folder of"))]     # not the folders
        assert len(traces) == 9 and all(c[8] == "0" for c in traces)      # Hopper: no occupancy queries anywhere
        findings = str(screen.query_one("#picker-findings", Static).render())
        assert "aten::linear → aten::addmm ⇒" in findings and "bias" in findings
        assert "occupancy queries: none; launch calls: cuLaunchKernelEx" in findings
        liger = next(i for i, r in enumerate(rows) if r.split(" | ")[1].startswith("kernels-mlp"))
        await pilot.press(str(liger + 1))
        findings = str(screen.query_one("#picker-findings", Static).render())
        assert "_geglu_tanh_forward_kernel" in findings
        await pilot.press("enter")
        trace_screen = await wait_for_screen(app, pilot, TraceScreen)
        assert "kernels-mlp" in trace_screen.facts.trace.source
        await pilot.press("escape")
        assert isinstance(app.screen, PickerScreen)


async def test_tree_marks_aten_t_and_expands_by_keys() -> None:
    app = make_app([str(find_sample("linear", "eager", "bf16"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        tree = screen.query_one(OpTree)
        assert app.focused is tree
        rows = rows_text(tree)
        names = [r.split(" | ")[0].strip(" ▾▸") for r in rows]
        assert names[:5] == ["ProfilerStep#4", "linear_fwd", "aten::linear", "aten::t", "aten::transpose"]
        t_row = rows[3]
        assert "no GPU" in t_row and "[64, 32]" in t_row
        addmm = next(r for r in rows if "aten::addmm" in r)
        assert "no GPU" not in addmm and "µs" in addmm.split(" | ")[3]
        assert any("cuLaunchKernelEx" in r for r in rows)
        assert "aten::linear" in cursor_text(tree)      # the cursor starts on the first op
        await pilot.press("j")                           # on aten::t
        assert "aten::t" in cursor_text(tree)
        assert "launches nothing" in details_text(screen)
        count = tree.row_count()
        await pilot.press("left")                        # collapse aten::t
        assert tree.row_count() == count - 2
        await pilot.press("right")                       # one level back: aten::transpose, still closed
        assert tree.row_count() == count - 1
        await pilot.press("e")
        assert tree.row_count() == count
        await pilot.press("k", "k", "enter")             # collapse linear_fwd by enter
        assert "linear_fwd" in cursor_text(tree)
        assert tree.row_count() < count
        await pilot.press("e")                           # expand everything below again
        assert tree.row_count() == count


async def test_steps_scope_every_pane() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        kernels = screen.query_one(KernelTable)
        steps = screen.query_one(StepList)
        per_step = kernels.row_count()
        assert per_step == 7                             # 5 kernels + 2 memsets of ProfilerStep#4
        await pilot.press("right_square_bracket")        # wraps to "all steps"
        assert screen.scope.step is None and steps.cursor == 0
        assert kernels.row_count() == 3 * per_step
        assert "scope: all steps" in str(screen.query_one("#steps-pane").border_title)
        await pilot.press("right_square_bracket")
        assert screen.scope.step == 0 and kernels.row_count() == per_step
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert screen.scope.step == 2
        await pilot.press("1", "k")                      # moving in the step list scopes too
        assert screen.scope.step == 1
        assert screen.query_one(OpTree).cells(0)[0][0].strip(" ▾▸") == "ProfilerStep#3"


async def test_kernels_table_raw_names_sort_and_details() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await open_trace(pilot, None)
        await pilot.press("3")
        kernels = screen.query_one(KernelTable)
        assert app.focused is kernels
        rows = rows_text(kernels)
        gemms = [r for r in rows if " | gemm | " in r]
        assert len(gemms) == 3 and all("cuBLAS nvjet" in r for r in gemms)
        assert sum(" | pointwise | " in r for r in rows) == 2
        assert all("TFLOP/s" in r for r in gemms)
        await pilot.press("r")
        assert any("nvjet_sm90_tst_" in r for r in rows_text(kernels))
        await pilot.press("r", "s")                      # sort by kernel name
        names = [r.split(" | ")[1] for r in rows_text(kernels)]
        assert names == sorted(names)
        await pilot.press("s")                           # by time, longest first
        times = [kernels.trace.gpu[g].dur for g in kernels.rows]
        assert times == sorted(times, reverse=True)
        await pilot.press("a")                           # one row per kernel name
        grouped = rows_text(kernels)
        assert len(grouped) == 5                         # memset, 2 nvjet GEMMs, gelu, mul
        assert grouped[0].startswith("2 | cuBLAS nvjet GEMM 256x128")      # calls, then the largest total first
        await pilot.press("a")
        assert kernels.row_count() == 7
        assert "Memset" in details_text(screen)          # the details follow the cursor: first row
        await pilot.press("j")
        assert "nvjet" in kernels.trace.gpu[kernels.current()].name
        text = details_text(screen)
        assert "theoretical occupancy" in text and "launched by[/b]  cuLaunchKernelEx" in text


async def test_launch_pane_tells_the_hopper_story() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        summary = str(screen.query_one("#launch-summary", Static).render())
        assert "occupancy queries: none" in summary and "cuLaunchKernelEx ×3" in summary
        launches = screen.query_one(LaunchTable)
        rows = rows_text(launches)
        mm = [r for r in rows if r.startswith("aten::mm")]
        assert any("cudaMemsetAsync" in r and "→ cuLaunchKernelEx" in r for r in mm)
        assert any(r.startswith("aten::gelu") and "cudaLaunchKernel " in r for r in rows)
        await pilot.press("4", "j")
        assert app.focused is launches
        assert screen.selected[0] == "op"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="trace corpus not available")
async def test_launch_pane_shows_ampere_occupancy_queries() -> None:
    trace = CORPUS / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
    app = make_app([str(trace)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        summary = str(screen.query_one("#launch-summary", Static).render())
        assert "occupancy queries: cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags" in summary
        rows = rows_text(screen.query_one(LaunchTable))
        assert any("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags" in r and "cudaLaunchKernel" in r
                   for r in rows)


async def test_g_follows_op_launch_call_kernel_and_back() -> None:
    app = make_app([str(find_sample("linear", "eager", "bf16"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        tree = screen.query_one(OpTree)
        addmm = next(i for i, op in enumerate(tree.ids) if op >= 0 and tree.trace.ops[op].name == "aten::addmm")
        tree.move_cursor(addmm)
        await pilot.press("g")                           # op → its launch call
        assert "cuLaunchKernelEx" in cursor_text(tree)
        await pilot.press("g")                           # launch call → kernel
        kernels = screen.query_one(KernelTable)
        assert app.focused is kernels and "nvjet" in kernels.trace.gpu[kernels.current()].name
        assert screen.selected == ("gpu", kernels.current())
        await pilot.press("g")                           # kernel → the op that launched it
        assert app.focused is tree and "aten::addmm" in cursor_text(tree)


async def test_search_across_panes_with_next_and_previous() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"gelu", "enter")
        assert not screen.query_one("#search", Input).display
        panes = {pane for pane, _ in screen.matches}
        assert panes == {"tree", "kernels", "launches"}
        assert "aten::gelu" in cursor_text(screen.query_one(OpTree))
        tree_matches = sum(1 for pane, _ in screen.matches if pane == "tree")
        for _ in range(tree_matches):
            await pilot.press("n")
        assert app.focused is screen.query_one(KernelTable)
        assert "gelu" in cursor_text(screen.query_one(KernelTable))
        await pilot.press("N")
        assert app.focused is screen.query_one(OpTree)


async def test_timeline_zooms_pans_and_highlights_the_selection() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        timeline = screen.query_one(Timeline)
        labels = [lane.label for lane in timeline.lanes]
        assert labels[0].startswith("CPU") and labels[-1].startswith("GPU0 s7")
        tree = screen.query_one(OpTree)
        gelu = next(i for i, op in enumerate(tree.ids) if op >= 0 and tree.trace.ops[op].name == "aten::gelu")
        tree.move_cursor(gelu)
        await pilot.pause()
        assert len(timeline.cpu_marks) == 1 and len(timeline.gpu_marks) == 1
        await pilot.press("5")
        assert app.focused is timeline
        span = timeline.span
        await pilot.press("plus")
        assert timeline.span == pytest.approx(span / 2)
        start = timeline.start
        await pilot.press("l")
        assert timeline.start > start
        await pilot.press("minus", "0")
        assert timeline.span == pytest.approx(span)
        gpu_line = timeline.render_line(len(timeline.lanes)).text
        # busy GPU time (a shade, or the name of a slice wide enough to hold it) and idle time both visible
        assert ("█" in gpu_line or "cuBLAS nvjet" in gpu_line) and "·" in gpu_line


async def test_details_text_keeps_clear_of_the_launches_pane() -> None:
    app = make_app([str(find_sample("mlp", "compile"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        await pilot.press("j", "j", "j")
        details = screen.query_one(Details)
        launches = screen.query_one("#launches-pane")
        assert details.text
        # wrapped lines start one blank column to the right of the launches pane (and its scrollbar): the
        # pane starts after it and draws a blank margin before each line's text
        assert details.region.x >= launches.region.right
        lines = [details.render_line(y).text for y in range(details.size.height)]
        assert all(line[:Details.MARGIN] == " " * Details.MARGIN for line in lines)
        assert any(line[Details.MARGIN:].strip() for line in lines)


async def test_zoom_pane_help_and_quit() -> None:
    app = make_app([str(find_sample("linear", "compile"))])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_trace(pilot, None)
        await pilot.press("6")
        await pilot.press("z")
        assert screen.maximized is not None and screen.maximized.id == "details-pane"
        await pilot.press("z")
        assert screen.maximized is None
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("#help-text", Static).render())
        assert "raw-names" in help_text and "jump op → its launch call → its kernel" in help_text
        assert "group by kernel" in help_text
        for pane in (KernelTable, OpTree, LaunchTable, Timeline, StepList, TraceScreen):
            for binding in pane.BINDINGS:       # every key of the trace screen's panes is listed
                assert binding.id in help_text, binding.id
        assert "zoom the timeline in" in help_text and "zoom the timeline out" in help_text
        await pilot.press("escape")
        assert isinstance(app.screen, TraceScreen)
        await pilot.press("q")
    assert app.return_code == 0


async def test_remapped_key_from_environment(monkeypatch) -> None:
    monkeypatch.setenv("MLPTUI_KEYS", "raw-names=y")
    app = make_app([str(find_sample("linear", "eager", "bf16"))])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_trace(pilot, None)
        await pilot.press("y")
        assert screen.query_one(KernelTable).raw


async def test_bad_file_shows_a_clear_message(tmp_path) -> None:
    bad = tmp_path / "broken.pt.trace.json"
    bad.write_text('{"traceEvents": [ {"ph": ')
    app = make_app([str(bad)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, LoadingScreen)
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        message = str(screen.query_one("#loading-error", Static).render())
        assert message.startswith("mlptui: ") and "broken.pt.trace.json" in message


async def test_two_traces_open_the_diff_and_d_picks_a_partner() -> None:
    from mlptui.screens.diff_screen import DiffScreen

    eager, compiled = find_sample("mlp", "eager"), find_sample("mlp", "compile")
    app = make_app([str(eager), str(compiled)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, DiffScreen)
    app = make_app([str(eager)])
    async with app.run_test(size=SIZE) as pilot:
        await open_trace(pilot, None)
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        partner = app.screen.query_one(TraceList)
        target = next(i for i, s in enumerate(partner.specs) if s.endswith(compiled.name))
        partner.move_cursor(target)
        await pilot.press("enter")
        diff = await wait_for_screen(app, pilot, DiffScreen)
        assert diff is app.screen


async def test_picker_marks_two_traces_and_opens_their_diff() -> None:
    from mlptui.screens.diff_screen import DiffScreen

    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        table = screen.query_one(TraceList)
        names = [s.rsplit("/", 1)[-1] for s in table.specs]
        eager = next(i for i, n in enumerate(names) if n.startswith("mlp-eager-"))
        compiled = next(i for i, n in enumerate(names) if n.startswith("mlp-compile-"))
        await pilot.press(str(eager + 1), "m")
        assert any("[A] " in r for r in rows_text(table))
        await pilot.press(str(compiled + 1), "d")
        diff = await wait_for_screen(app, pilot, DiffScreen)
        assert diff is app.screen
        await pilot.press("escape")
        await wait_for_screen(app, pilot, PickerScreen)
        assert table.marked_spec is None and not any("[A] " in r for r in rows_text(table))


class CountingList:
    """A LineList over a million synthetic rows that counts how many rows it was asked to format."""

    @staticmethod
    def make():
        from mlptui.widgets.lines import Column, LineList

        class Counting(LineList):
            def __init__(self) -> None:
                super().__init__([Column("row", 0), Column("value", 10, ">")], id="counting")
                self.formatted = 0

            def row_count(self) -> int:
                return 1_000_000

            def row_cells(self, index: int) -> list:
                self.formatted += 1
                return [f"row {index}", str(index * 3)]

        return Counting()


async def test_a_million_rows_format_only_what_is_on_screen() -> None:
    from textual.app import App

    class One(App):
        def compose(self):
            yield CountingList.make()

    app = One()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one("#counting")
        pane.focus()
        pane.reset_rows(0)
        await pilot.pause()
        pane.formatted = 0
        await pilot.press("j", "j", "pagedown", "pagedown", "end", "k")
        assert pane.cursor == 999_998
        assert pane.formatted < 120          # a few screens' worth, never the million rows
        assert "row 999998" in pane.render_line(pane.cursor - round(pane.scroll_offset.y) + 1).text
