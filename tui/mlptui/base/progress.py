"""The progress callback that loaders and sources report through: `progress(done, total)` in bytes."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]
