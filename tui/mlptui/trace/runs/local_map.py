"""The map step on this machine: rank files -> digests, in this process or in worker processes.

    map_local(jobs, workers=None) -> Iterator[DigestResult]     jobs: (path, key or None); as each finishes

Small work stays in this process (starting workers costs more than indexing a few MB: docs/scale.md);
from PARALLEL_MIN_BYTES in one file, or POOL_MIN_BYTES in all, the files go to worker processes, in
batches so that a thousand small ranks are not a thousand round trips. The workers are shut down and
waited for before this returns (mlptui.trace.parse.process_pool).

A worker that dies (killed, or by the kernel when memory runs out) breaks its pool: every rank that was
not finished then is read again, each alone in a new worker process (as many at once as there were
workers), so a rank that kills its worker again costs only itself and is reported with why; so is a rank
whose reading ran out of memory twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from mlptui.trace.runs.rank_map import DigestResult, digest_file, failed_result

PARALLEL_MIN_BYTES = 8 << 20     # one file this big goes to a worker process (as in load_many)
POOL_MIN_BYTES = 64 << 20        # so do files this big together
Job = tuple[str, dict[str, Any] | None]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def digest_batch(jobs: Sequence[Job]) -> list[DigestResult]:
    """Several files in one task (a worker's unit of work)."""
    return [digest_file(path, key) for path, key in jobs]


def map_local(jobs: Sequence[Job], workers: int | None = None) -> Iterator[DigestResult]:
    sizes = [_size(path) for path, _ in jobs]
    big = any(s >= PARALLEL_MIN_BYTES for s in sizes) or sum(sizes) >= POOL_MIN_BYTES
    n = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    if n == 1 or not big:
        for path, key in jobs:
            try:
                yield digest_file(path, key)
            except MemoryError:
                yield failed_result(path, "ran out of memory reading it")
        return
    # largest first, so that one big rank does not start last; about four batches per worker
    order = sorted(range(len(jobs)), key=lambda i: -sizes[i])
    per = max(1, len(jobs) // (4 * n))
    batches = [[jobs[i] for i in order[k:k + per]] for k in range(0, len(order), per)]
    from mlptui.trace.parse.process_pool import worker_pool

    again: list[Job] = []
    with worker_pool(n) as pool:
        pending: dict[Future[list[DigestResult]], list[Job]] = {pool.submit(digest_batch, b): b for b in batches}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                batch = pending.pop(fut)
                try:
                    results = fut.result()
                except Exception:      # its worker died (the pool is broken) or the batch raised
                    again += batch
                    continue
                yield from results
    if again:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(n, len(again))) as threads:
            yield from threads.map(_alone, again)


def _alone(job: Job) -> DigestResult:
    """One rank read again in a worker process of its own: if it dies again, only this rank is lost."""
    from concurrent.futures.process import BrokenProcessPool

    from mlptui.trace.parse.process_pool import worker_pool

    path, _ = job
    try:
        with worker_pool(1) as pool:
            (result,) = pool.submit(digest_batch, [job]).result()
        return result
    except BrokenProcessPool:
        return failed_result(path, "the worker process reading it died, twice (killed, or out of memory)")
    except MemoryError:
        return failed_result(path, "ran out of memory reading it, twice")
    except Exception as exc:
        return failed_result(path, f"reading it failed, twice ({type(exc).__name__}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else 'no message'})")
