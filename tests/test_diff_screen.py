"""The diff screen driven by keys (Pilot) and its look at 80×24 and 160×48 (snapshots)."""

from __future__ import annotations

import re

import pytest
from app_support import settle
from diff_harness import DiffHarness
from diff_support import load, sample

from mlptui.screens.diff_screen import DiffHelp, DiffScreen, PairDetails
from mlptui.trace.diff.trace_diff import FUSED, SAME
from mlptui.viewmodels.fmt import us


def mlp_app() -> DiffHarness:
    return DiffHarness(load(sample("mlp", "eager")), load(sample("mlp", "compile")))


def liger_app() -> DiffHarness:
    return DiffHarness(load(sample("mlp", "eager")), load(sample("kernels-mlp", "eager")))


def linear_app() -> DiffHarness:
    return DiffHarness(load(sample("linear", "eager")), load(sample("linear", "compile")))


def _text(widget) -> str:
    return str(widget.render())


def _visible(rows) -> list[str]:
    """The list pane's lines as they are on screen now (header first)."""
    return [rows.render_line(y).text for y in range(rows.scrollable_content_region.height)]


def _cpu_line(lines: list[str], marker: str, name: str) -> str:
    """The on-screen line with `marker` in the status column and `name` in one of the name cells."""
    found = [ln for ln in lines if ln[1:2] == marker and f" {name} " in ln]
    assert found, f"no {marker} {name} line on screen:\n" + "\n".join(lines)
    return found[0]


def _assert_cpu_section(screen: DiffScreen, lines: list[str]) -> None:
    """Every op of the diff's CPU half is on screen with its marker, its count, on its side."""
    cpu = screen.diff.report().cpu
    a_counts, b_counts = screen.diff.cpu.a_counts, screen.diff.cpu.b_counts
    b_column = lines[0].index(" B  ") + 1       # where the header puts B's names
    for name in cpu.removed_ops:
        line = _cpu_line(lines, "-", name)
        assert line.index(name) < b_column and line.split()[-1] == f"{a_counts[name]}×"   # A's column, A's count
    for name in cpu.added_ops:
        line = _cpu_line(lines, "+", name)
        assert line.index(name) >= b_column and line.split()[-1] == f"{b_counts[name]}×"
    for c in cpu.count_changes:
        line = _cpu_line(lines, "~", c.name)
        assert f"{c.a}×" in line and f"{c.b}×" in line
    title = next(ln for ln in lines if "── CPU side" in ln)
    assert "- only in A" in title and "+ only in B" in title
    for label, a, b in (("CPU time / step", us(screen.diff.a.aligned.cpu_us), us(screen.diff.b.aligned.cpu_us)),
                        ("launches / step", str(screen.diff.a.aligned.launches),
                         str(screen.diff.b.aligned.launches))):
        line = next(ln for ln in lines if label in ln)
        assert re.search(rf"\s{re.escape(a)}\s+{re.escape(b)}\s+\S", line)   # A's value, B's value, then B − A


async def test_cpu_section_linear_eager_vs_compile() -> None:
    app = linear_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        cpu = screen.diff.report().cpu
        assert cpu.removed_ops == ["aten::linear", "aten::t", "aten::transpose", "aten::as_strided"]
        assert cpu.added_ops[:4] == ["TorchDynamo Cache Lookup", "Torch-Compiled Region: 0/0",
                                        "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue"]
        assert cpu.added_ops[4] == "## Call CompiledFxGraph … ##"
        lines = _visible(screen.rows)      # no key pressed: the aten::t chain is on the first screen
        assert screen.rows.cursor == 0
        _assert_cpu_section(screen, lines)
        assert _cpu_line(lines, "-", "aten::t").split() == ["-", "aten::t", "1×"]
        # The cursor reaches the section by scrolling, and the status line says what a line means.
        t_line = screen.rows.cpu_start + next(i for i, ln in enumerate(screen.rows.cpu_lines) if ln.a == "aten::t")
        await pilot.press(*["j"] * t_line)
        await pilot.pause()
        assert "CPU op only in A: aten::t, 1× per step" in _text(screen.query_one("#diff-status"))
        assert screen.rows.current_row is None
        await pilot.press("enter")           # no pair to open on a CPU line
        assert app.screen is screen


async def test_cpu_section_mlp_eager_vs_compile_keys_and_swap() -> None:
    app = mlp_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        rows = screen.rows
        lines = _visible(rows)
        _assert_cpu_section(screen, lines)     # the whole CPU side fits under the kernel rows at 120×36
        for name in ("aten::linear", "aten::t", "aten::gelu", "aten::mul"):
            _cpu_line(lines, "-", name)
        for name in ("TorchDynamo Cache Lookup", "Pregraph bytecode", "## Call CompiledFxGraph … ##",
                     "triton_poi_fused__unsafe_view_gelu_mul_0"):
            _cpu_line(lines, "+", name)
        # eager launches gelu and mul with cudaLaunchKernel, compile its fused kernel with cuLaunchKernel
        assert _cpu_line(lines, "-", "cudaLaunchKernel").split() == ["-", "cudaLaunchKernel", "2×"]
        assert _cpu_line(lines, "+", "cuLaunchKernel").split() == ["+", "cuLaunchKernel", "1×"]
        # c jumps to the section, n/p still walk the kernel differences from there, c comes back.
        await pilot.press("c")
        assert rows.cursor == rows.cpu_start and rows.cpu_line(rows.cursor).kind == "title"
        status = _text(screen.query_one("#diff-status"))    # the ops on one side only, named first
        cpu = screen.diff.report().cpu
        assert status.startswith(f"CPU side: + {cpu.added_ops[0]}, + {cpu.added_ops[1]}, ")
        assert f"; - {cpu.removed_ops[0]}, - {cpu.removed_ops[1]}, " in status
        await pilot.press("n")
        assert rows.cursor == rows.cpu_start
        assert "no further difference below" in _text(screen.query_one("#diff-status"))
        await pilot.press("p")
        assert rows.current_row.status == FUSED
        await pilot.press("c", "c")
        assert rows.current_row.status == FUSED      # back where c was pressed
        # Swapping mirrors the section: eager's ops are now the ones only in B.
        await pilot.press("x")
        await pilot.pause()
        swapped = _visible(rows)
        assert _cpu_line(swapped, "+", "aten::t") and _cpu_line(swapped, "-", "TorchDynamo Cache Lookup")


async def test_cpu_section_scrolls_into_view_at_80x24() -> None:
    app = mlp_app()
    async with app.run_test(size=(80, 24)) as pilot:
        rows = app.screen.rows
        assert "triton_poi_fused__unsafe_view_gelu_mul_0" not in "\n".join(_visible(rows))
        await pilot.press("end")
        await pilot.pause()
        last = _visible(rows)[-1]
        assert last.startswith(">+") and "triton_poi_fused__un…" in last   # cut to its column at 80
        # The Δ column keeps its whole width once the scrollbar is there.
        assert all(not ln.rstrip().endswith("µ") for ln in _visible(rows))


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


def pressing(*keys: str):
    async def run_before(pilot) -> None:
        await pilot.press(*keys)
        await settle(pilot)
    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_mlp_eager_vs_compile(snap_compare, size) -> None:
    assert snap_compare(mlp_app(), terminal_size=size, run_before=pressing("n"))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_linear_cpu_side(snap_compare, size) -> None:
    assert snap_compare(linear_app(), terminal_size=size, run_before=pressing("c"))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_pair_details(snap_compare, size) -> None:
    assert snap_compare(liger_app(), terminal_size=size, run_before=pressing("n", "enter"))


async def test_big_pair_aligns_in_a_worker_then_walks() -> None:
    from diff_support import corpus_pair

    from mlptui.screens.diff_screen import SYNC_LIMIT

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
