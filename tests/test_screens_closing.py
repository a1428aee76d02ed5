"""The app quits (or a screen goes) between a screen's push and its mount: Textual then sends `Mount`
to a screen whose children were never mounted. Every screen must leave quietly, never with a traceback
(`run_test` re-raises an exception from any handler). Each case quits at the very moment the screen is
pushed, which a fast `q` after `enter` (or a load finishing as the user quits) can do."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import wait_for_screen
from conftest import find_sample, training_sample
from test_ranks_app import tp_run

from mlptui.app import make_app
from mlptui.screens.picker import PickerScreen
from mlptui.screens.trace_screen import TraceScreen

SIZE = (120, 40)


def quit_when_pushed(app: Any, name: str, pushed: list[str]) -> None:
    """Make `app` exit right after it pushes (or switches to) a screen of class `name`."""
    for method in ("push_screen", "switch_screen"):
        original = getattr(app, method)

        def push(screen: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            pushed.append(type(screen).__name__)
            result = _original(screen, *args, **kwargs)
            if type(screen).__name__ == name:
                app.exit()
            return result

        setattr(app, method, push)


CASES = {
    "picker at start": ([], "PickerScreen", None, []),
    "trace from the picker": ([], "TraceScreen", PickerScreen, ["enter"]),
    "trace after loading": (["training"], "TraceScreen", None, []),
    "views on their key": (["training"], "ProfileScreen", TraceScreen, ["o"]),
    "partner picker": (["training"], "PartnerScreen", TraceScreen, ["d"]),
    "help": ([], "HelpScreen", PickerScreen, ["question_mark"]),
    "diff of two traces": (["eager", "compile"], "DiffScreen", None, []),
    "ranks of a run": (["ranks"], "RanksScreen", None, []),
}


def _argv(names: list[str]) -> list[str]:
    paths = {"training": training_sample, "eager": lambda: str(find_sample("mlp", "eager")),
             "compile": lambda: str(find_sample("mlp", "compile")), "ranks": tp_run}
    return [str(paths[n]()) for n in names]


@pytest.mark.parametrize("case", list(CASES))
async def test_quitting_as_a_screen_is_pushed_leaves_quietly(case: str) -> None:
    names, screen_name, wait_on, keys = CASES[case]
    app = make_app(_argv(names))
    pushed: list[str] = []
    quit_when_pushed(app, screen_name, pushed)
    async with app.run_test(size=SIZE) as pilot:
        if wait_on is not None:
            await wait_for_screen(app, pilot, wait_on)
            await app.workers.wait_for_complete()
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.5)
    assert screen_name in pushed, f"{case}: {screen_name} was never pushed ({pushed})"
    assert app.return_code in (0, None)
