"""Load many trace files (the ranks of one run) in worker processes, each result as soon as it is ready.

    for path, result in load_many(paths, workers=None, on_progress=None):
        if isinstance(result, MlptuiError): ...        # that file's one-line error; the others go on
        else: ...                                      # an indexed Trace, usable now

- `paths`: trace files (str or PathLike); each is yielded once, as `str(path)`, in the order they finish.
- `workers`: processes to use (default: one per CPU, at most one per file); 1 loads in this process.
  Files with a usable index cache entry are read in this process first, without a worker.
- `on_progress(path, done_bytes, total_bytes)`: called in this process, from the thread iterating, while
  a worker reads a file and once more when it is indexed (done == total).
- Results: a `Trace`, or the `MlptuiError` that loading that file raised. A worker that dies (killed, or
  out of memory) breaks the pool: the files it left unfinished are loaded again, each by a worker process
  of its own, so only a file that kills its worker twice is lost, with an error that says so.

How the indexed trace comes back: a worker loads and indexes the file, which writes its index cache
entry (mlptui.trace.parse.index_cache); this process then opens the file again, a cache hit that reads
numpy columns. With the cache off (MLPTUI_NO_CACHE=1) or for a trace too small to cache, the worker
sends the same columns through the pipe instead. Workers start by forkserver, and start inside the app
too (mlptui.trace.parse.process_pool); none is left running once the iteration ends.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError, TraceError
from mlptui.contract.manifest import manifest_for
from mlptui.trace.model import Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.columns import trace_columns, trace_from_columns
from mlptui.trace.parse.load import load_trace
from mlptui.trace.parse.process_pool import start_helpers, start_method, worker_pool

OnProgress = Callable[[str, int, int], None]
_POLL_S = 0.05
PARALLEL_MIN_BYTES = 8 << 20     # files smaller than this are indexed in the calling process


def _size(name: str) -> int:
    try:
        return os.stat(name).st_size
    except OSError:
        return 0     # load_trace reports the problem

_progress_queue: Any = None       # in a worker: where progress messages go


def load_many(paths: Sequence[str | os.PathLike[str]], *, workers: int | None = None,
              on_progress: OnProgress | None = None) -> Iterator[tuple[str, Trace | MlptuiError]]:
    """Load and index `paths` in parallel; yield (path, Trace or MlptuiError) as each one finishes."""
    # Each file is keyed once (a stat): here, for the cache check; the key goes with the file to its worker.
    with index_cache.keys_remembered():
        yield from _load_many([str(p) for p in paths], workers, on_progress)


def _key(name: str) -> dict[str, Any] | None:
    try:
        return index_cache.file_key(Path(name)) if index_cache.enabled() else None
    except OSError:
        return None


def _load_many(names: list[str], workers: int | None,
               on_progress: OnProgress | None) -> Iterator[tuple[str, Trace | MlptuiError]]:
    # Ranks with a usable index cache entry are read here: cheaper than starting a worker for them.
    cached = [n for n in names if index_cache.has_entry(Path(n))]
    yield from _in_process(cached, on_progress)
    names = [n for n in names if n not in set(cached)]
    # Small ranks too: starting a worker process costs more than indexing a few MB (docs/scale.md).
    small = [n for n in names if _size(n) < PARALLEL_MIN_BYTES]
    yield from _in_process(small, on_progress)
    names = [n for n in names if n not in set(small)]
    if not names:
        return
    if workers is None:
        workers = os.cpu_count() or 1
    workers = max(1, min(workers, len(names)))
    if workers == 1:
        yield from _in_process(names, on_progress)
        return
    method = start_method()
    start_helpers(method)      # before the queue: its lock registers with the resource tracker
    progress_q = multiprocessing.get_context(method).Queue() if on_progress is not None else None
    again: list[str] = []
    with worker_pool(workers, _init_worker, (progress_q,)) as pool:
        pending: dict[Future[tuple[str, Any]], str] = {pool.submit(_index_one, name, _key(name)): name
                                                        for name in names}
        while pending:
            done, _ = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
            _drain(progress_q, on_progress)
            for fut in done:
                name = pending.pop(fut)
                if isinstance(fut.exception(), (BrokenProcessPool, MemoryError)):
                    again.append(name)
                else:
                    yield name, _result(name, fut)
    for name in again:
        yield name, _alone(name, progress_q, on_progress)


def _alone(name: str, progress_q: Any, on_progress: OnProgress | None) -> Trace | MlptuiError:
    """A file loaded again by a worker process of its own, after its first worker died."""
    with worker_pool(1, _init_worker, (progress_q,)) as pool:
        fut = pool.submit(_index_one, name, _key(name))
        while not fut.done():
            wait([fut], timeout=_POLL_S)
            _drain(progress_q, on_progress)
    return _result(name, fut, twice=True)


def _in_process(names: list[str], on_progress: OnProgress | None) -> Iterator[tuple[str, Trace | MlptuiError]]:
    for name in names:
        report = None if on_progress is None else (lambda d, t, n=name: on_progress(n, d, t))
        try:
            yield name, load_trace(name, progress=report)
        except MlptuiError as exc:
            yield name, exc


def _result(name: str, fut: Future[tuple[str, Any]], twice: bool = False) -> Trace | MlptuiError:
    again = ", twice" if twice else ""
    try:
        kind, payload = fut.result()
    except BrokenProcessPool:
        return TraceError(f"{name}: the worker process loading it died{again} (killed, or out of memory)")
    except MemoryError:
        return TraceError(f"{name}: ran out of memory loading it{again}")
    if kind == "error":
        return TraceError(payload)
    if kind == "columns":
        cols, facts, meta_path = payload
        trace = trace_from_columns(cols, name)
        if "eager" in facts:
            store = ArgsStore(len(facts["eager"]), eager=facts["eager"])
        else:
            store = ArgsStore(facts["events"], path=Path(name), stamp=facts["stamp"],
                              repair_utf8=facts["repair_utf8"], cut=facts["cut"],
                              suffix=facts["suffix"].encode("latin-1"))
        meta = dict(trace.meta)
        meta.setdefault("path", meta_path)
        return replace(trace, meta=meta, manifest=manifest_for(Path(name)), _args=store)
    try:             # "cached": the worker wrote the index cache entry; reading it back is cheap
        return load_trace(name)
    except MlptuiError as exc:
        return exc


def _drain(progress_q: Any, on_progress: OnProgress | None) -> None:
    if progress_q is None or on_progress is None:
        return
    while True:
        try:
            name, done, total = progress_q.get_nowait()
        except queue.Empty:
            return
        on_progress(name, done, total)


# ---------------------------------------------------------------- in the worker

def _init_worker(progress_q: Any) -> None:
    global _progress_queue
    _progress_queue = progress_q
    # A worker lives to build traces of millions of small objects and hand them back: the cyclic
    # collector would cost more than the parse and free nothing (the pool ends with the load).
    gc.disable()


def _index_one(name: str, key: dict[str, Any] | None = None) -> tuple[str, Any]:
    with index_cache.keys_remembered(None if key is None else {Path(name): key}):
        return _index(name)


def _index(name: str) -> tuple[str, Any]:
    q = _progress_queue
    report = None if q is None else (lambda d, t: q.put((name, d, t)))
    try:
        trace = load_trace(name, progress=report)
    except MlptuiError as exc:
        return "error", str(exc)
    path = Path(name)
    if index_cache.has_entry(path):
        return "cached", None
    store = trace._args
    facts = store.reread_facts() if isinstance(store, ArgsStore) else None
    if facts is None:     # args held in memory (a trace read by the tolerant decoder): send them along
        facts = {"eager": [trace.args(i) for i in range(trace.meta.get("events", 0))]}
    else:
        st = path.stat()
        facts["stamp"] = (st.st_size, st.st_mtime_ns)
    try:
        cols = trace_columns(trace)
    except ValueError as exc:
        return "error", f"{name}: cannot be sent from the loading process ({exc}); open it on its own"
    return "columns", (cols, facts, trace.meta.get("path", name))
