"""Worker-side stand-ins for the rank map's unit of work, importable by worker processes (they are
pickled by name): one rank's worker dies, or runs out of memory, every time it reads that rank."""

from __future__ import annotations

import os
import signal

from mlptui.trace.runs.local_map import Job, digest_batch
from mlptui.trace.runs.rank_map import DigestResult

DOOMED = "rank-2."


def dies_on_doomed_rank(jobs: list[Job]) -> list[DigestResult]:
    if any(DOOMED in path for path, _ in jobs):
        os.kill(os.getpid(), signal.SIGKILL)
    return digest_batch(jobs)


def out_of_memory_on_doomed_rank(jobs: list[Job]) -> list[DigestResult]:
    if any(DOOMED in path for path, _ in jobs):
        raise MemoryError
    return digest_batch(jobs)


def index_dies_on_doomed_rank(name: str, key: dict | None = None) -> tuple[str, object]:
    """load_many's unit of work, whose worker dies on the doomed rank."""
    from mlptui.trace.parse.load_many import _index_one

    if DOOMED in name:
        os.kill(os.getpid(), signal.SIGKILL)
    return _index_one(name, key)
