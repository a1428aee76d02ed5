"""Whole-number settings (MLPTUI_CACHE_MAX_MB, MLPTUI_MAX_INPUT_MB, MLPTUI_DECODE_WORKERS): a value that
is not ASCII digits, or has more than nine of them, is refused with a warning line (each command on
stderr, the explorer as a notification) and the default is used; it was ignored in silence."""

from __future__ import annotations

import pytest
from conftest import find_sample

from mlptui.app import make_app
from mlptui.base.settings import setting_problems, whole_number
from mlptui.cli import main
from mlptui.trace.parse.cache_folder import DEFAULT_CAP_MB, cap_bytes


@pytest.mark.parametrize("raw", ["lots", "-5", "1.5", "1_000", "٣", "²", "9" * 401, "1e3"])
def test_a_value_that_is_not_a_whole_number_is_refused_and_said(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", raw)
    assert whole_number("MLPTUI_CACHE_MAX_MB") is None
    assert cap_bytes() == DEFAULT_CAP_MB << 20
    [problem] = setting_problems()
    assert problem.startswith("MLPTUI_CACHE_MAX_MB=") and "not a whole number" in problem
    assert "ignored, the default cap, 2048 MB" in problem and len(problem) < 160


@pytest.mark.parametrize(("raw", "mb"), [("100", 100), (" 7 ", 7), ("0", 0), ("", DEFAULT_CAP_MB)])
def test_a_whole_number_or_nothing_is_taken_without_a_word(raw: str, mb: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", raw)
    assert cap_bytes() == mb << 20
    assert setting_problems() == []


def test_every_command_warns_once_per_refused_setting(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", "2GB")
    monkeypatch.setenv("MLPTUI_DECODE_WORKERS", "all")
    assert main(["cache"]) == 0
    out, err = capsys.readouterr()
    assert "of a 2.0 GiB cap" in out
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith("mlptui: warning: ") for line in lines)
    assert "MLPTUI_CACHE_MAX_MB='2GB'" in lines[0] and "MLPTUI_DECODE_WORKERS='all'" in lines[1]


async def test_the_explorer_says_a_refused_setting_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", "[b]big")
    app = make_app([str(find_sample("linear", "eager"))])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert notes == ["MLPTUI_CACHE_MAX_MB='[b]big' is not a whole number of at most 9 digits: ignored, "
                         "the default cap, 2048 MB"]
        await pilot.press("q")
    assert app.return_code == 0
