"""A big trace's event array decoded by several processes at once: a plain file, or bytes in memory.

The file is cut, without reading it whole, after an event's closing brace near every TASK_BYTES (the same
kind of cut as mlptui.trace.parse.decode.decode_in_pieces, found in a small window read at each offset).
Bytes in memory (a gunzipped file) are cut the same way, and shared with workers forked after them.
Each range is read, decoded and classified (mlptui.trace.parse.classify.Classifier) by whichever process
takes it first: the worker processes take ranges from the front, and this process, while they start,
takes ranges from the back. The parts are then joined in file order, so the result is the one the
sequential decode gives. Anything unusual (a cut that does not decode, a value of an unexpected type, bad
UTF-8, a truncated file, a range denser in objects than a trace) gives None, and the caller decodes the
file the sequential way, which repairs or refuses it with the reason.

Workers start by fork where this process runs no other thread (the cheaper start), else as
mlptui.trace.parse.process_pool starts them (the fork server, a process start of its own), and never
inside a worker process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec

from mlptui.base.progress import Progress
from mlptui.base.regular_file import identity, read_exactly
from mlptui.base.settings import whole_number
from mlptui.trace.parse.classify import Classifier
from mlptui.trace.parse.decode import (
    _AFTER_EVENT,
    _ARRAY,
    Decoded,
    NoPieces,
    array_start,
    last_piece,
    meta_around,
)
from mlptui.trace.parse.limits import count_objects, too_dense

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# multiprocessing is imported where workers are started or asked about, not with this module: the loader
# imports it, and `summary` of a small trace would pay that import for nothing.

# Below this size the sequential decode is done before workers would have started.
MIN_FILE_BYTES = 48 << 20
# Bytes per range: small enough that the processes share the work evenly, large enough that a range's
# own costs (a read, a result sent back) stay small.
TASK_BYTES = 2 << 20
_HEAD_BYTES = 1 << 20          # where the "traceEvents" key must start for this path
_WINDOW = 1 << 16              # first window read to find a cut; doubled up to _MAX_WINDOW
_MAX_WINDOW = 16 << 20
_DENSE_MIN_OBJECTS = 10_000    # a range with more '{' than this, one per < MIN_BYTES_PER_OBJECT bytes, is not decoded


def workers_for(size: int) -> int:
    """Worker processes for a file of `size` bytes: 0 (decode here, sequentially) when it is small, when
    this is itself a worker, or when MLPTUI_DECODE_WORKERS says 0; else MLPTUI_DECODE_WORKERS, or by
    default one less than the CPUs this process may use (this process decodes too) that no other process
    keeps busy right now; never more than one less than those CPUs. (On a busy machine a worker only adds
    its start and its copying to the CPU time, and saves no wall time.)"""
    if size < MIN_FILE_BYTES:
        return 0
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    setting = whole_number("MLPTUI_DECODE_WORKERS")
    wanted = min(cpus - 1, setting) if setting is not None else cpus - 1 - _busy_cpus()
    return max(0, min(wanted, size // TASK_BYTES - 1))


def _forkable() -> bool:
    """Whether workers may start by fork: only where this process runs no other thread (a thread may hold a
    lock that the forked copy could never take)."""
    import multiprocessing

    return threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()


def _busy_cpus() -> int:
    """How many other processes are running or ready to run, system-wide (Linux's `procs_running`, the
    least of three readings 1 ms apart, so that a passing process does not count); 0 where unknown."""
    seen = []
    for attempt in range(3):
        try:
            with open("/proc/stat", "rb") as f:
                running = next((line for line in f if line.startswith(b"procs_running ")), None)
            if running is None:
                return 0
            seen.append(max(0, int(running.split()[1]) - 1))     # this process is one of them
        except (OSError, ValueError, IndexError):
            return 0
        if attempt < 2:
            time.sleep(0.001)
    return min(seen)


@dataclass(frozen=True)
class _File:
    path: str
    same: tuple[int, ...]       # its identity when opened: a file replaced or written meanwhile is not read


# Where the ranges are read: a file, or bytes in memory that forked workers share with this process.
Source = _File | memoryview


@dataclass
class _Range:
    start: int          # first byte of the range's first event
    end: int            # just after its last event's '}'; for the last range, the file's size
    last: bool          # runs to the array's closing bracket (found while decoding)


@dataclass
class _Part:
    classified: Classifier | None       # None: this range cannot be decoded here (see the module's docstring)
    array_end: int = 0                  # last range: the offset just after the array's ']'
    objects: int = 0                    # '{' in the range (mlptui.trace.parse.limits.too_dense)


def decode_file_in_parallel(path: Path, st: os.stat_result, workers: int,
                            progress: Progress | None = None) -> Decoded | None:
    """The decoded trace at `path` (plain JSON, `st` its status when opened), its events already classified
    (`Decoded.classified`); None when the sequential decode must do it."""
    path = Path(os.path.abspath(path))          # workers started by the fork server run in another folder
    with open(path, "rb") as f:
        if identity(os.fstat(f.fileno())) != identity(st):
            return None

        def read(at: int, n: int) -> bytes:
            f.seek(at)
            return read_exactly(f, n)
        return _decode(read, st.st_size, _File(str(path), identity(st)), workers, progress)


def decode_bytes_in_parallel(data: bytes | bytearray | memoryview, workers: int) -> Decoded | None:
    """The same for a trace already in memory (a gunzipped file, bytes fetched from elsewhere). The workers
    must share the bytes: only where they start by fork (None otherwise)."""
    if not _forkable():
        return None
    view = memoryview(data)
    return _decode(lambda at, n: bytes(view[at:at + n]), len(view), view, workers, None)


def _decode(read: Callable[[int, int], bytes], size: int, source: Source, workers: int,
            progress: Progress | None) -> Decoded | None:
    head = read(0, min(size, _HEAD_BYTES))
    found = array_start(head)
    if found is None:
        return None
    start, bare = found
    ranges = _ranges(read, start, size)
    if ranges is None:
        return None
    parts = _run(source, ranges, workers, progress, size)
    if parts is None or too_dense(sum(p.objects for p in parts), size):
        return None
    end = parts[-1].array_end
    meta = meta_around(head[:start], read(end, size - end), bare)
    if meta is None:
        return None
    joined = Classifier()
    for part in parts:
        assert part.classified is not None
        joined.absorb(part.classified)
    return Decoded(events=[], meta=meta, n_events=joined.n_events, classified=joined)


def _ranges(read: Callable[[int, int], bytes], start: int, size: int) -> list[_Range] | None:
    """The ranges, cut after the first event end at or past every TASK_BYTES; the last one runs to the end of
    the file and is at least TASK_BYTES long (past the array, text may look like an event end)."""
    cuts = [start]
    target = start + TASK_BYTES
    while target + TASK_BYTES < size:
        cut = _cut_after(read, target, size)
        if cut is None:
            return None
        end, next_start = cut
        cuts.append(end)
        cuts.append(next_start)
        target = next_start + TASK_BYTES
    ranges = [_Range(cuts[i], cuts[i + 1], last=False) for i in range(0, len(cuts) - 1, 2)]
    ranges.append(_Range(cuts[-1], size, last=True))
    return ranges


def _cut_after(read: Callable[[int, int], bytes], target: int, size: int) -> tuple[int, int] | None:
    """(end of the first event that ends at or after `target`, start of the next one), from a window read
    there; None when no event end lies within _MAX_WINDOW."""
    window = _WINDOW
    while True:
        data = read(target, min(window, size - target))
        m = _AFTER_EVENT.search(data)
        if m is not None and m.end() < len(data):
            return target + m.start() + 1, target + m.end()
        if window >= _MAX_WINDOW or target + window >= size:
            return None
        window *= 2


def _run(source: Source, ranges: list[_Range], workers: int, progress: Progress | None,
         size: int) -> list[_Part] | None:
    """Every range's part, in order, or None as soon as one cannot be decoded here.

    Ranges are claimed through two shared counters, the workers taking the next one from the front. With
    one worker, this process takes the next one from the back until they meet, and the worker sends its
    parts back at the end (this process reads no pipe while it decodes). With more, this process only
    receives, each part as it is made, so no worker keeps its parts. (A pool's task queue would be fed by
    a thread of this process, which waits for the interpreter lock while this process decodes: the
    workers stood idle a third of the time.)"""
    import multiprocessing
    from multiprocessing.connection import Connection, wait

    from mlptui.trace.parse.process_pool import start_helpers, start_method

    method = "fork" if _forkable() else start_method()
    if method != "fork":
        start_helpers(method)
    context: Any = multiprocessing.get_context(method)      # typeshed's BaseContext lacks Process
    claims = context.Array("q", [0, len(ranges)])
    pipes = [context.Pipe(duplex=False) for _ in range(workers)]
    stream = workers > 1
    procs = [context.Process(target=_worker, args=(source, ranges, claims, sender, stream), daemon=True)
             for _, sender in pipes]
    parts: list[_Part | None] = [None] * len(ranges)
    done = 0

    def take(got: list[tuple[int, _Part]]) -> bool:
        nonlocal done
        for i, part in got:
            if part.classified is None:
                return False
            parts[i] = part
            done += ranges[i].end - ranges[i].start
        if progress is not None:
            progress(min(done, size), size)
        return True

    try:
        for proc in procs:
            proc.start()
        for _, sender in pipes:
            sender.close()            # the worker holds its own end; EOF here once it is gone
        while not stream and (i := _claim(claims, from_back=True)) is not None:
            if not take([(i, decode_range(source, ranges[i]))]):
                return None
        waiting: list[Connection] = [receiver for receiver, _ in pipes]
        while waiting:
            for ready in wait(waiting):
                receiver = cast(Connection, ready)
                try:
                    got: list[tuple[int, _Part]] | None = receiver.recv()
                except EOFError:      # the worker died before it said it was done
                    return None
                if got is None:
                    waiting.remove(receiver)
                elif not take(got):
                    return None
    finally:
        _stop(claims)                 # when this process gave up first: the workers take no more ranges
        for receiver, _ in pipes:
            receiver.close()          # a worker still sending gets a broken pipe and ends
        for proc in procs:
            if proc.pid is not None:
                proc.join(timeout=5)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
    if any(p is None for p in parts):
        return None
    return [p for p in parts if p is not None]


def _claim(claims: Any, from_back: bool) -> int | None:
    """The next range to decode, from the front or the back; None when none is left."""
    with claims.get_lock():
        front, back = claims[0], claims[1]
        if front >= back:
            return None
        if from_back:
            claims[1] = back - 1
            return int(back - 1)
        claims[0] = front + 1
        return int(front)


def _worker(source: Source, ranges: list[_Range], claims: Any, sender: Any, stream: bool) -> None:
    """Decode ranges from the front until none is left, and send their parts: each as soon as it is made
    (`stream`), or all at the end; then None to say it is done."""
    got: list[tuple[int, _Part]] = []
    try:
        try:
            while (i := _claim(claims, from_back=False)) is not None:
                got.append((i, decode_range(source, ranges[i])))
                if got[-1][1].classified is None:
                    break
                if stream:
                    sender.send(got)
                    got = []
        except Exception:                 # anything else unexpected: the sequential path meets it and says so
            got.append((-1, _Part(None)))
        if got and got[-1][1].classified is None:
            _stop(claims)                 # no use going on: the file is decoded the sequential way
        if got:
            sender.send(got)
        sender.send(None)
    except (BrokenPipeError, OSError):
        pass                              # this process gave up on the parts: nothing to send them to
    finally:
        sender.close()


def _stop(claims: Any) -> None:
    with claims.get_lock():
        claims[0] = claims[1]


def decode_range(source: Source, r: _Range) -> _Part:
    """Read, decode and classify one range (in a worker process, or in this one)."""
    n = r.end - r.start
    buffer = bytearray(n + 2)           # a byte before the range and one after, where brackets go
    if isinstance(source, memoryview):
        buffer[1:n + 1] = source[r.start:r.end]
    else:
        with open(source.path, "rb") as f:
            if identity(os.fstat(f.fileno())) != source.same:
                return _Part(None)
            f.seek(r.start)
            with memoryview(buffer) as view:
                got = f.readinto(view[1:n + 1]) if n else 0
            if got != n:
                return _Part(None)      # the file changed while read
    objects = count_objects(buffer)
    if too_dense(objects, n, _DENSE_MIN_OBJECTS):
        return _Part(None)              # refused, with the reason, by the sequential path, before decoding
    array_end = 0
    try:
        if r.last:                      # up to the array's own ']', found as the sequential path finds it
            events, end = last_piece(memoryview(buffer)[:n + 1], 1, bytearray())
            array_end = r.start - 1 + end
        else:
            buffer[0], buffer[n + 1] = ord("["), ord("]")
            events = _ARRAY.decode(buffer)
    except (NoPieces, msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
        return _Part(None)
    classified = Classifier()
    classified.add(events)
    return _Part(classified, array_end, objects)

