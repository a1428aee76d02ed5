"""Worker processes come from the fork server, which is started once per process: its environment is the
caller's at that moment. A pool's workers must see the caller's settings (the cache folder, MLPTUI_*) as
they are when the pool starts."""

from __future__ import annotations

import os

import pytest

from mlptui.trace.parse.process_pool import worker_pool


def _seen() -> tuple[str | None, str | None]:
    return os.environ.get("MLPTUI_NO_CACHE"), os.environ.get("XDG_CACHE_HOME")


def test_workers_see_the_settings_of_the_moment_not_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", "/first/cache")
    with worker_pool(1) as pool:            # starts the fork server, if nothing has yet
        first = pool.submit(_seen).result()
    monkeypatch.delenv("MLPTUI_NO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "/second/cache")
    with worker_pool(1) as pool:
        second = pool.submit(_seen).result()
    assert first == ("1", "/first/cache")
    assert second == (None, "/second/cache")
