"""The map step: one rank file -> its digest, wherever the file is read.

    digest_file(path, key=None) -> DigestResult

Runs in this process, in a local worker process or in a Dask task: it imports nothing of the app, returns
only plain data (a small dict or a one-line error), and never raises for a bad file. The file is keyed
once (`key`, when the caller has keyed it already, is reused as long as the file is unchanged): the
digest cache and the index cache lookup both use that key. A digest in the cache is returned without
parsing; otherwise the trace is loaded (from its index cache entry when there is one, none is written) with the
garbage collector paused — building millions of small objects with it running costs more than the
parse — and dropped as soon as its digest is made.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from mlptui.base.errors import MlptuiError
from mlptui.trace.parse import index_cache
from mlptui.trace.runs import digest_cache


class DigestResult(NamedTuple):
    path: str
    digest: dict[str, Any] | None      # digest_to_dict's form; None when the file could not be read
    error: str | None                  # one line: the file and why
    cached: bool                       # read from the digest cache
    seconds: float                     # time spent on this file where it ran
    host: str                          # where it ran (a Dask worker's host, or this machine)


def _host() -> str:
    return os.uname().nodename if hasattr(os, "uname") else ""


def failed_result(path: str, why: str, seconds: float = 0.0) -> DigestResult:
    """A rank that could not be read, and why (one line, starting with the path)."""
    return DigestResult(path, None, why if why.startswith(path) else f"{path}: {why}", False, seconds, _host())


def digest_file(path: str, key: dict[str, Any] | None = None) -> DigestResult:
    """A bad file gives its one-line error; only running out of memory raises (MemoryError), so that the
    caller may try the rank again where more memory is free."""
    start = time.perf_counter()
    p = Path(path)
    known = {p: key} if key is not None else None
    # the digest is all a run needs again; an index entry per rank would cost more to write than it saves
    with index_cache.keys_remembered(known), index_cache.read_only():
        try:
            key = index_cache.file_key(p) if index_cache.enabled() else None
        except OSError:
            key = None          # load_trace says what is wrong with the file
        if key is not None:
            hit = digest_cache.lookup(p, key)
            if hit is not None:
                return DigestResult(path, hit, None, True, time.perf_counter() - start, _host())
        from mlptui.trace.analysis.critical_path.rank_path import step_path
        from mlptui.trace.analysis.ranks.rank_digest import digest_to_dict, rank_digest
        from mlptui.trace.analysis.ranks.ranks import rank_info
        from mlptui.trace.parse.load import load_trace

        was_enabled = gc.isenabled()
        gc.disable()
        try:
            trace = load_trace(p)
            info = rank_info(trace)
            if info.rank is None:
                return failed_result(path, "names no rank (no distributedInfo, no rank-N in its name)",
                                     time.perf_counter() - start)
            doc = digest_to_dict(rank_digest(info.rank, trace, world_size=info.world_size, backend=info.backend,
                                             path=step_path(trace)))
            del trace
        except MlptuiError as exc:
            return failed_result(path, str(exc), time.perf_counter() - start)
        finally:
            if was_enabled:
                gc.enable()
        if key is not None:
            digest_cache.store(p, key, doc)
    return DigestResult(path, doc, None, False, time.perf_counter() - start, _host())
