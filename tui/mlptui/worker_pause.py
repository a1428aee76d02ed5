"""Worker threads pause while the app handles a key press.

A worker thread computing a view's figures takes turns with the UI thread at the interpreter lock, each turn
as long as the interpreter's switch interval, so a key pressed meanwhile repaints late. Inside
`pausing_for_input()` a worker pauses at its next Python call while the app says input is being handled
(`busy`, cleared QUIET_S after the last key by the app), for at most PAUSE_CAP_S in all per key: should the UI
thread wait on something the worker holds (a figure it is computing), the worker goes on after that and pauses
no more for that key. The figures take longer to arrive (the check runs on every call the worker makes); the
keys keep their own speed.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

QUIET_S = 0.06          # input counts as handled this long after the last key (its repaints included)
PAUSE_CAP_S = 0.1       # the longest a worker waits at one call
SWITCH_S = 0.001        # the interpreter's switch interval while such workers run

_busy = [False]
_generation = [0]


def input_seen() -> int:
    """A key or click arrived (UI thread): workers pause. Returns the generation `quiet` must match."""
    _busy[0] = True
    _generation[0] += 1
    return _generation[0]


def quiet(generation: int) -> None:
    """QUIET_S after a key (UI thread): workers resume unless another key came since."""
    if generation == _generation[0]:
        _busy[0] = False


_thread = threading.local()      # per worker: the key whose pause it has used up


def _pause(frame: FrameType, event: str, arg: Any) -> None:
    if _busy[0]:
        generation = _generation[0]
        if getattr(_thread, "spent", -1) == generation:
            return None
        deadline = time.monotonic() + PAUSE_CAP_S
        while _busy[0] and _generation[0] == generation and time.monotonic() < deadline:
            time.sleep(0.002)
        if _busy[0] and _generation[0] == generation:
            # the UI thread may be waiting on something this worker holds: no more pauses for this key
            _thread.spent = generation
    return None


_lock = threading.Lock()
_running = 0            # workers inside pausing_for_input
_interval = 0.005       # the interpreter's switch interval before the first of them


@contextmanager
def pausing_for_input() -> Iterator[None]:
    """In a worker thread: pause at calls while input is handled. While such a worker runs, the UI thread
    waits at most SWITCH_S (not the interpreter's default interval) for the lock when a key arrives,
    before it can even say so. Nothing is traced where the thread already has a trace function (a debugger, a
    coverage run)."""
    global _running, _interval
    with _lock:
        if _running == 0:
            _interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_interval, SWITCH_S))
        _running += 1
    traced = sys.gettrace() is None
    if traced:
        sys.settrace(_pause)
    try:
        yield
    finally:
        if traced:
            sys.settrace(None)
        with _lock:
            _running -= 1
            if _running == 0:
                sys.setswitchinterval(_interval)
