"""The scopes next to the one shown (ahead in the direction of travel, and behind; a step, or every step)
are prepared after each scope is shown: once the screen is idle their dispatch-tree rows, details text and launch rows are in the
panes' caches, showing one walks nothing, and what it shows is what the panes make with no step prepared
(rows, cursor, details lines compared with a fresh walk), going forward and back, on the bundled training
sample and on two real multi-step traces."""

from __future__ import annotations

from array import array

import pytest
from app_support import settle, wait_for_screen
from conftest import ROOT, training_sample

from mlptui.app import make_app
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.launches import LaunchTable
from mlptui.widgets.op_tree import OpTree

REAL = ROOT.parent / "shared" / "corpus" / "real"



def scope_key(screen: TraceScreen, step: int | None) -> tuple[object, ...]:
    tree = screen.query_one(OpTree)
    if step is None:        # every step
        return (None, -1, tree.hide_python)
    s = screen.facts.trace.steps[step]
    return ((s.ts, s.ts + s.dur), s.op, tree.hide_python)


def span(screen: TraceScreen, step: int | None) -> tuple[float | None, float | None, int]:
    if step is None:
        return None, None, -1
    s = screen.facts.trace.steps[step]
    return s.ts, s.ts + s.dur, s.op


def fresh_rows(tree: OpTree, screen: TraceScreen, step: int | None) -> tuple[list[int], list[int], set[int], int]:
    """The rows show_scope makes for a scope from nothing kept (the tree's caches put back after)."""
    kept, shown = tree._opened.copy(), (array("q", tree.ids), array("q", tree.depths), set(tree.expanded),
                                         tree.cursor, tree._scope)
    tree._opened.clear()
    try:
        tree.show_scope(*span(screen, step))
        return list(tree.ids), list(tree.depths), set(tree.expanded), tree.cursor
    finally:
        tree._opened = kept
        tree.ids, tree.depths, tree.expanded, tree.cursor, tree._scope = shown
        tree.reset_rows(shown[3])


async def walk_and_check(path: str, keys: list[str]) -> None:
    app = make_app([path])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        await app.workers.wait_for_complete()
        tree, details = screen.query_one(OpTree), screen.query_one(Details)
        walks: list[int] = []       # walks of a scope made while showing it (not those made ahead)
        showing: list[bool] = [False]
        open_scope, show_scope = tree._open_scope, tree.show_scope

        def counting(key, focus):
            if showing[0]:
                walks.append(1)
            return open_scope(key, focus)

        def shown(start, end, focus=-1):
            showing[0] = True
            try:
                return show_scope(start, end, focus)
            finally:
                showing[0] = False

        tree._open_scope = counting         # type: ignore[method-assign]
        tree.show_scope = shown             # type: ignore[method-assign]
        for key in keys:
            before = screen.scope
            ahead = before.moved(screen._ahead.direction)
            await settle(pilot)
            for near in (ahead, before.moved(-screen._ahead.direction)):     # ahead, and behind
                if near != before:
                    assert scope_key(screen, near.step) in tree._opened, f"step {near.step} not prepared"
            walks.clear()
            await pilot.press(key)
            await settle(pilot)
            step = screen.scope.step
            if screen.scope == ahead:
                assert not walks, "the prepared step was walked again"
            ids, depths, expanded, cursor = fresh_rows(tree, screen, step)
            assert (list(tree.ids), list(tree.depths), set(tree.expanded), tree.cursor) == \
                (ids, depths, expanded, cursor)
            # the details lines: those of a fresh parse and wrap of the same text
            shown = [s.text for s in details._lines]
            fresh_lines, _ = details._wrapped(details._parsed(details.text), details._room())
            assert shown == [s.text for s in fresh_lines]


async def test_the_next_step_is_prepared_and_shows_what_a_fresh_walk_shows() -> None:
    await walk_and_check(training_sample(), ["right_square_bracket", "right_square_bracket", "right_square_bracket",
                                             "left_square_bracket", "left_square_bracket", "left_square_bracket"])


@pytest.mark.parametrize("name", ["pytorch__kineto__worker0.1623143089861.pt.trace.json.gz",
                                  "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz"])
async def test_prepared_steps_on_real_traces(name: str) -> None:
    """Six steps of a CUDA training run and three of an AMD one (activation checkpointing)."""
    path = REAL / name
    if not path.exists():
        pytest.skip("real-trace corpus not available")
    await walk_and_check(str(path), ["left_square_bracket"] * 4 + ["right_square_bracket"] * 3)


async def test_prepared_launch_rows_are_the_rows_drawn() -> None:
    """Launch rows drawn ahead for a step are the lines shown when it comes (the same objects), and those
    lines are what a draw from empty caches makes."""
    app = make_app([training_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        await app.workers.wait_for_complete()
        await pilot.press("left_square_bracket")
        await settle(pilot)
        launches = screen.query_one(LaunchTable)
        step = screen.scope.moved(1).step
        assert step is not None and screen.facts.launches_by_step is not None
        launches._drop_lines()
        launches.prepare(screen.facts.launches_by_step[step], launches.size.height)
        prepared = {id(strip) for strip in launches._kept.values()}
        assert len(prepared) >= min(launches.size.height, len(screen.facts.launches_by_step[step])) > 0
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.scope.step == step and launches.row_count() > 0
        drawn = [s for (index, tone), s in launches._strips.items() if tone == "base"]
        assert drawn and all(id(s) in prepared for s in drawn)
        full = launches.region.size.region
        shown = [strip.text for strip in launches.render_lines(full)]
        launches._drop_lines()
        launches._cells.clear()
        assert [strip.text for strip in launches.render_lines(full)] == shown


async def test_a_step_too_large_is_left_to_its_own_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step with more kernels or dispatch-tree roots than the cap is not prepared (its walk would hold the
    keyboard between keys); it is still shown when its key comes."""
    from mlptui.screens import step_ahead

    app = make_app([training_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        await app.workers.wait_for_complete()
        tree = screen.query_one(OpTree)
        step = screen.scope.moved(-1).step
        assert step is not None
        s = screen.facts.trace.steps[step]
        assert tree.roots_in(s.ts, s.ts + s.dur) >= 1
        monkeypatch.setattr(step_ahead, "LARGEST_STEP", 0)
        tree._opened.clear()
        await pilot.press("right_square_bracket", "left_square_bracket")     # every step, then the last again
        await settle(pilot)
        assert scope_key(screen, step) not in tree._opened
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.scope.step == step and scope_key(screen, step) in tree._opened
