"""The pane holding the focus is the one drawn lit, whatever moved the focus (a pane key, tab, the search box,
a screen pushed and popped), and a focus move restyles the two panes only, not what is inside them."""

from __future__ import annotations

from app_support import wait_for_screen
from conftest import find_sample

from mlptui.app import make_app
from mlptui.screens.trace_screen import TraceScreen

PANE_KEYS = {"1": "steps-pane", "2": "tree-pane", "3": "kernels-pane", "4": "launches-pane", "5": "timeline-pane",
             "6": "details-pane"}


def lit(screen: TraceScreen) -> list[str]:
    """The panes whose drawn title rule is the heavy one (read from their computed styles)."""
    return [str(p.id) for p in screen.query(".pane") if p.styles.border_top[0] == "heavy"]


def holding_focus(screen: TraceScreen) -> list[str]:
    focused = screen.focused
    assert focused is not None
    return [str(p.id) for p in screen.query(".pane") if p in focused.ancestors_with_self]


async def test_the_focused_pane_and_only_it_is_lit() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await pilot.pause()
        assert lit(screen) == holding_focus(screen) == ["tree-pane"]
        for key, pane in [*PANE_KEYS.items(), ("2", "tree-pane")]:
            await pilot.press(key)
            await pilot.pause()
            assert lit(screen) == holding_focus(screen) == [pane], key
        await pilot.press("tab")
        await pilot.pause()
        assert lit(screen) == holding_focus(screen) and lit(screen) != ["tree-pane"]
        await pilot.press("2", "slash")          # the search box sits in no pane: none is lit
        await pilot.pause()
        assert lit(screen) == [] and not any(p in screen.focused.ancestors_with_self for p in screen.query(".pane"))
        await pilot.press("escape")
        await pilot.pause()
        assert lit(screen) == holding_focus(screen) == ["tree-pane"]
        await pilot.press("question_mark")       # another screen over it, then back
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert lit(screen) == holding_focus(screen) == ["tree-pane"]


async def test_a_focus_move_restyles_the_two_panes_only() -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await pilot.pause()
        restyled: list[str] = []
        update_nodes = app.stylesheet.update_nodes

        def counting(nodes, animate=False):
            nodes = list(nodes)
            # this screen's nodes only: the views screen composed ahead in the background (not shown) takes
            # its own first focus when its timer fires, which on a busy machine lands inside this window
            restyled.extend(type(n).__name__ for n in nodes if n.screen is screen)
            return update_nodes(nodes, animate=animate)

        app.stylesheet.update_nodes = counting      # type: ignore[method-assign]
        await pilot.press("3")
        await pilot.pause()
        # the two panes, and the two lists (their own `:focus` cursor colour); nothing inside the panes
        assert sorted(restyled) == ["KernelTable", "OpTree", "Pane", "Pane"], restyled
