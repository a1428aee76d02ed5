"""The diff screen driven by keys (Pilot) and its look at 80×24 and 160×48 (snapshots)."""

from __future__ import annotations

import pytest
from diff_harness import DiffHarness
from diff_support import load, sample

from tui.screens.diff_screen import DiffHelp, DiffScreen, PairDetails
from tui.trace.diff import FUSED, SAME


def mlp_app() -> DiffHarness:
    return DiffHarness(load(sample("mlp", "eager")), load(sample("mlp", "compile")))


def liger_app() -> DiffHarness:
    return DiffHarness(load(sample("mlp", "eager")), load(sample("kernels-mlp", "eager")))


def _text(widget) -> str:
    return str(widget.render())


async def test_n_and_p_walk_the_differences() -> None:
    app = mlp_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        rows = screen.rows
        diffs = screen.diff.differences()
        assert [screen.diff.rows[i].status for i in diffs] == [FUSED]   # eager vs compile: only the fusion
        assert rows.cursor == 0 and rows.current_row.status == SAME
        await pilot.press("n")
        assert rows.current_row.status == FUSED and rows.row_at(rows.cursor) == diffs[0]
        fused_line = rows.cursor
        await pilot.press("n")               # nothing below: stays, says so
        assert rows.cursor == fused_line
        assert "no further difference below" in _text(screen.query_one("#diff-status"))
        await pilot.press("end", "p")
        assert rows.cursor == fused_line
        await pilot.press("p")
        assert rows.cursor == fused_line
        assert "no further difference above" in _text(screen.query_one("#diff-status"))
        await pilot.press("j")
        assert rows.cursor == fused_line + 1 and rows.row_at(rows.cursor) == diffs[0]  # its mul kernel
        assert "aten::mul" in _text(screen.query_one("#diff-status"))


async def test_enter_opens_both_chains_and_configs() -> None:
    app = mlp_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n", "enter")
        await pilot.pause()
        details = app.screen
        assert isinstance(details, PairDetails)
        text = "\n".join(details.lines)
        assert "aten::gelu → cudaLaunchKernel" in text and "aten::mul → cudaLaunchKernel" in text
        assert "triton_poi_fused__unsafe_view_gelu_mul_0 → cuLaunchKernel" in text
        assert "library=Triton" in text and "registers per thread" in text
        assert "occupancy: 100% theoretical" in text and "memory-bound" in text
        await pilot.press("escape")
        assert isinstance(app.screen, DiffScreen)


async def test_swap_raw_names_step_switch_and_help() -> None:
    app = liger_app()
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        header = _text(screen.query_one("#diff-header"))
        assert header.startswith("A mlp/eager") or "mlp-eager" in header.splitlines()[0]
        first_b = screen.diff.b.source
        await pilot.press("x")
        assert screen.diff.a.source == first_b
        assert "⊕1" in _text(screen.query_one("#diff-header"))
        await pilot.press("n")
        row = screen.rows.current_row
        assert row.status == FUSED and row.a[0].name == "_geglu_tanh_forward_kernel"
        # raw names: the fused row's A cell turns from the short name into the kernel symbol
        before = screen.rows.cells(screen.rows.cursor)[1][0]
        await pilot.press("r")
        after = screen.rows.cells(screen.rows.cursor)[1][0]
        assert after == "_geglu_tanh_forward_kernel" and (before != after or row.a[0].short == after)
        step_before = (screen.diff.a.step, screen.diff.b.step)
        await pilot.press("right_square_bracket")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (screen.diff.a.step, screen.diff.b.step) != step_before
        assert screen.diff.counts()["fused"] == 1
        await pilot.press("question_mark")
        assert isinstance(app.screen, DiffHelp)
        await pilot.press("escape")
        assert isinstance(app.screen, DiffScreen)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_mlp_eager_vs_compile(snap_compare, size) -> None:
    assert snap_compare(mlp_app(), press=["n"], terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_pair_details(snap_compare, size) -> None:
    assert snap_compare(liger_app(), press=["n", "enter"], terminal_size=size)


async def test_big_pair_aligns_in_a_worker_then_walks() -> None:
    from diff_support import corpus_pair

    from tui.screens.diff_screen import SYNC_LIMIT

    control, test = corpus_pair()
    a, b = load(control), load(test)
    assert len(a.gpu) + len(b.gpu) > SYNC_LIMIT
    app = DiffHarness(a, b)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.ready and not screen.query("#diff-loading")
        header = _text(screen.query_one("#diff-header"))
        assert "A100" in header and "V100" in header
        await pilot.press("n")
        assert screen.rows.current_row.status != SAME
        await pilot.press("end")
        assert screen.rows.cursor == screen.rows.row_count() - 1
