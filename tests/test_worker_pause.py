"""Worker threads pause for key presses: a worker inside `pausing_for_input` stops at its next call while
input is being handled, for at most PAUSE_CAP_S, and runs on once the app says input is quiet."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from mlptui import worker_pause

# Under a coverage run or a debugger the worker keeps their trace function and does not pause.
traced_elsewhere = pytest.mark.skipif(sys.gettrace() is not None, reason="a trace function is already set")


def _step() -> None:
    """A Python call: where a worker giving way may pause."""


def _count_calls(stop: threading.Event, counts: list[int], ready: threading.Event) -> None:
    with worker_pause.pausing_for_input():
        ready.set()
        while not stop.is_set():
            _step()
            counts[0] += 1


def _calls_during(counts: list[int], seconds: float) -> int:
    before = counts[0]
    time.sleep(seconds)
    return counts[0] - before


@traced_elsewhere
def test_a_worker_pauses_while_input_is_handled_and_resumes_after() -> None:
    interval = sys.getswitchinterval()
    stop, ready, counts = threading.Event(), threading.Event(), [0]
    worker = threading.Thread(target=_count_calls, args=(stop, counts, ready))
    worker.start()
    try:
        assert ready.wait(5)
        assert sys.getswitchinterval() == min(interval, worker_pause.SWITCH_S)
        assert _calls_during(counts, 0.05) > 100                  # running freely
        generation = worker_pause.input_seen()
        time.sleep(0.01)                                         # it reaches its next call and stops there
        assert _calls_during(counts, 0.05) <= 1
        worker_pause.quiet(generation)
        assert _calls_during(counts, 0.05) > 100                  # input quiet: running again
    finally:
        worker_pause.quiet(worker_pause.input_seen())
        stop.set()
        worker.join(5)
    assert sys.getswitchinterval() == interval                  # restored with the last such worker


@traced_elsewhere
def test_a_pause_never_outlasts_its_cap() -> None:
    stop, ready, counts = threading.Event(), threading.Event(), [0]
    worker = threading.Thread(target=_count_calls, args=(stop, counts, ready))
    worker.start()
    try:
        assert ready.wait(5)
        worker_pause.input_seen()                                   # never followed by quiet
        time.sleep(worker_pause.PAUSE_CAP_S + 0.05)
        assert _calls_during(counts, 0.05) > 100                  # its pause for this key is used up
    finally:
        worker_pause.quiet(worker_pause.input_seen())
        stop.set()
        worker.join(5)


def _hold_while_computing(held: threading.Lock, holding: threading.Event, done: threading.Event) -> None:
    with worker_pause.pausing_for_input(), held:
        holding.set()
        for _ in range(20_000):                                 # a figure being computed: many calls
            _step()
    done.set()


@traced_elsewhere
def test_the_ui_thread_waiting_on_a_worker_is_not_left_waiting() -> None:
    """The UI thread asks for what a worker holds while a key is being handled (no quiet can come while
    it waits): the worker pauses once, up to the cap, then finishes."""
    held, holding, done = threading.Lock(), threading.Event(), threading.Event()
    worker = threading.Thread(target=_hold_while_computing, args=(held, holding, done))
    worker_pause.input_seen()
    try:
        worker.start()
        assert holding.wait(5)
        got = held.acquire(timeout=worker_pause.PAUSE_CAP_S + 1.0)   # as the UI thread would, blocked
        if got:
            held.release()
        assert got and done.wait(5)
    finally:
        worker_pause.quiet(worker_pause.input_seen())
        worker.join(5)


def test_an_older_quiet_does_not_end_a_newer_key() -> None:
    first = worker_pause.input_seen()
    second = worker_pause.input_seen()
    worker_pause.quiet(first)
    assert worker_pause._busy[0]
    worker_pause.quiet(second)
    assert not worker_pause._busy[0]
