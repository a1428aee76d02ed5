"""The process's garbage-collector policy while a trace is loaded, decided by the commands and the app
(the core never touches it): building millions of small objects with the cyclic collector running
costs more than the parse itself, and a loaded trace lives as long as the process, so its objects are
frozen out of every later collection."""

from __future__ import annotations

import gc
import threading
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
