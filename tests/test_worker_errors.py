"""A background worker that raises is shown, not lost: the app's one handler puts the error on screen
(a toast) and the screen that waited says so in place instead of "aligning …" / "indexing …"."""

from __future__ import annotations

import pytest
from diff_support import sample

from mlptui.app import make_app
from mlptui.screens import diff_screen


async def test_a_failed_diff_alignment_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("alignment broke\nsecond line")

    monkeypatch.setattr(diff_screen, "SYNC_LIMIT", 0)          # align in the worker, as for big traces
    monkeypatch.setattr(diff_screen, "diff_traces", broken)
    app = make_app([str(sample("mlp", "eager")), str(sample("mlp", "compile"))])
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if isinstance(app.screen, diff_screen.DiffScreen) and app._notifications:
                break
        assert isinstance(app.screen, diff_screen.DiffScreen)
        status = str(app.screen.query_one("#diff-status").render())
        assert "failed: alignment broke" in status and "second line" not in status
        assert any("alignment broke" in n.message for n in app._notifications)


async def test_a_failed_load_is_shown_on_the_loading_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlptui.viewmodels import facts  # the loading screen imports build_facts after the first paint

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("no such column")    # not an MlptuiError: the screen must still say why

    monkeypatch.setattr(facts, "build_facts", broken)
    app = make_app([str(sample("mlp", "eager"))])
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            error = str(app.screen.query_one("#loading-error").render())
            if error:
                break
        assert "failed: 'no such column'" in error
        assert any("no such column" in n.message for n in app._notifications)
