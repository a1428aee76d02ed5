"""A screen's mount (or resume) handler that runs only when the screen's children were mounted.

Textual sends `Mount` even to a screen that began closing while it composed (the app quit, or the
screen was removed, between its push and its mount). Its children are then never mounted, so a
handler that looks for them, or starts work for them, would end the app with a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from textual.screen import Screen

S = TypeVar("S", bound=Screen[Any])


def closing(screen: Screen[Any]) -> bool:
    """The app stops or exits (new widgets are then never started), or the screen is gone from it or
    being removed (Textual's own flags)."""
    if not screen.app.is_running or not screen.is_attached:
        return True
    return bool(getattr(screen, "_closing", False) or getattr(screen, "_pruning", False))


def when_composed(handler: Callable[[S], None]) -> Callable[[S], None]:
    """`handler`, skipped on a screen that closes before its children are mounted."""

    @wraps(handler)
    def guarded(screen: S) -> None:
        if not closing(screen):
            handler(screen)

    return guarded
