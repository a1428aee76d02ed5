"""The process's garbage-collector policy while a trace is loaded, decided by the commands and the app
(the core never touches it): building millions of small objects with the cyclic collector running
costs more than the parse itself, and a loaded trace lives as long as the process, so its objects are
frozen out of every later collection."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_active = 0          # loads in progress (the app may load in several workers at once)
_was_enabled = True


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the collector for the block; afterwards restore it and freeze what the block built."""
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                if _was_enabled:
                    gc.enable()
                gc.freeze()


class IdleCollector:
    """Full collections between key presses, not during them.

    With the trace frozen, a full collection still walks every object made since (the widgets, their
    caches), and with a trace of several GB spread over memory that walk is long enough to double a key's
    repaint when it falls inside one. While the app runs, the collector's own full collections are
    off; `tick` (called on a timer) runs one once input has been quiet for QUIET_S and younger
    collections have promoted something since the last. The younger generations collect as before.
    """

    QUIET_S = 1.0

    def __init__(self) -> None:
        self._last_input = time.monotonic()
        self._saved: tuple[int, int, int] | None = None

    def start(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            gc.set_threshold(self._saved[0], self._saved[1], 1 << 30)

    def stop(self) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def input_seen(self) -> None:
        self._last_input = time.monotonic()

    def tick(self) -> None:
        # not while a load pauses the collector (bulk_allocation), nor with nothing promoted since the last
        if gc.isenabled() and gc.get_count()[2] and time.monotonic() - self._last_input >= self.QUIET_S:
            gc.collect()
