"""Worker processes that start wherever the caller runs, and leave nothing behind.

    with worker_pool(workers, initializer, initargs) as pool: ...

Workers start by forkserver (never by fork: the caller may run threads, as the app does), or by spawn
where there is no forkserver. Starting the first one also starts multiprocessing's helpers (the resource
tracker, the fork server), and those hand the caller's `sys.stderr` file descriptor to the new process.
Inside a Textual app `sys.stderr` is a capture object whose fileno() is -1, which makes the start fail
with "bad value(s) in fds_to_keep"; so the helpers are started here first, with the process's real
stderr (or /dev/null) in place for that moment. A worker takes the caller's mlptui settings (MLPTUI_*,
XDG_*, HOME) as they are when the pool starts, not as they were when the fork server started. On leaving
the block the pool is shut down and waited for: no worker outlives the call.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TextIO


def start_method() -> str:
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _has_fd(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        return False


@contextmanager
def _stderr_with_fd() -> Iterator[None]:
    """`sys.stderr` backed by a real file descriptor for the duration of the block."""
    if _has_fd(sys.stderr):
        yield
        return
    saved = sys.stderr
    devnull = None
    if _has_fd(sys.__stderr__):
        sys.stderr = sys.__stderr__
    else:
        devnull = open(os.devnull, "w")  # noqa: SIM115 - closed below, after the helpers have started
        sys.stderr = devnull
    try:
        yield
    finally:
        sys.stderr = saved
        if devnull is not None:
            devnull.close()


def start_helpers(method: str) -> None:
    """Start multiprocessing's resource tracker (and fork server) now, with a usable stderr."""
    from multiprocessing import resource_tracker

    with _stderr_with_fd():
        resource_tracker.ensure_running()
        if method == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()


def _is_setting(name: str) -> bool:
    return name.startswith(("MLPTUI_", "XDG_")) or name == "HOME"


def settings() -> dict[str, str]:
    """The environment variables that say where mlptui's cache is and how it behaves."""
    return {k: v for k, v in os.environ.items() if _is_setting(k)}


def _start_worker(wanted: dict[str, str], initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    """A worker made by the fork server has the environment the server started with, which may be older
    than the caller's: take the caller's settings first."""
    for name in [k for k in os.environ if _is_setting(k) and k not in wanted]:
        del os.environ[name]
    os.environ.update(wanted)
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def worker_pool(workers: int, initializer: Callable[..., None] | None = None,
                initargs: tuple[Any, ...] = ()) -> Iterator[ProcessPoolExecutor]:
    method = start_method()
    start_helpers(method)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=_start_worker, initargs=(settings(), initializer, initargs))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
