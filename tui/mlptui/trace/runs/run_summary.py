"""A run of many ranks summarised from digests: map each rank file to its digest (here, in local worker
processes, or on a Dask cluster), reduce the digests to the run's report.

    summarize_run(files, scheduler=None, workers=None, on_progress=None) -> RunSummary

`files`: (rank, path) in rank order, as mlptui.trace.parse.rank_hint tells them from the files' headers. This
process never holds a rank's trace: it keeps one digest per rank (a few numbers per step and per collective),
so its memory does not grow with the size of the ranks. Locally every file is keyed once, here (a stat,
mlptui.trace.parse.index_cache.file_key): ranks whose digest is cached are read from the cache; only the
others go to the map, with their key. With a Dask scheduler the files may sit on other machines, so the
workers do all of it.
`on_progress(done, total, path)` is called in this process as each rank finishes.
`summarize_run(files, scheduler=..., host=H)` says the files are on host H's disk (a `H:path` folder).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlptui.trace.analysis.ranks.rank_digest import digest_from_dict
from mlptui.trace.analysis.ranks.ranks import reduce_digests
from mlptui.trace.parse import index_cache
from mlptui.trace.reports.ranks import RanksReport
from mlptui.trace.runs import digest_cache
from mlptui.trace.runs.local_map import map_local
from mlptui.trace.runs.rank_map import DigestResult

if TYPE_CHECKING:
    from mlptui.trace.runs.dask_map import Limits

OnProgress = Callable[[int, int, str], None]


@dataclass
class RunSummary:
    report: RanksReport | None           # the `ranks` section; None when no rank could be read
    sources: list[str]                   # the ranks' files, in rank order
    failed: list[str]                    # one line per rank that could not be read
    device: str | None
    cached: int = 0                      # ranks whose digest came from the cache
    seconds: float = 0.0                 # wall time of the map and the reduce
    hosts: dict[str, int] = field(default_factory=dict)   # ranks digested per host


def _probe(path: Path) -> tuple[DigestResult | None, tuple[str, dict[str, Any] | None]]:
    """The file's key (a stat of it) and its cached digest, if any."""
    start = time.perf_counter()
    try:
        key = index_cache.file_key(path) if index_cache.enabled() else None
    except OSError:
        key = None
    hit = digest_cache.lookup(path, key) if key is not None else None
    if hit is not None:
        return DigestResult(str(path), hit, None, True, time.perf_counter() - start, "here"), (str(path), key)
    return None, (str(path), key)


def _cached(files: Sequence[tuple[int, Path]]) -> tuple[list[DigestResult], list[tuple[str, dict[str, Any] | None]]]:
    """Ranks answered by the digest cache, and the rest as map jobs (path, key). Stats and reads release the
    GIL, so a few threads look files up side by side."""
    threads = max(1, min(4, os.cpu_count() or 1, len(files)))
    with ThreadPoolExecutor(threads) as pool:
        probed = list(pool.map(_probe, [p for _, p in files]))
    hits = [hit for hit, _ in probed if hit is not None]
    jobs = [job for hit, job in probed if hit is None]
    return hits, jobs


def _local(files: Sequence[tuple[int, Path]], workers: int | None) -> Iterator[DigestResult]:
    hits, jobs = _cached(files)
    yield from hits
    if jobs:
        yield from map_local(jobs, workers)


def summarize_run(files: Sequence[tuple[int, Path]], *, scheduler: str | None = None, workers: int | None = None,
                  on_progress: OnProgress | None = None, host: str | None = None,
                  limits: Limits | None = None) -> RunSummary:
    """`host`: with a scheduler, the machine whose disk holds the files (its workers read them);
    `limits`: how long to wait for the scheduler's workers and for each rank (mlptui.trace.runs.dask_map)."""
    start = time.perf_counter()
    if scheduler is None:
        results: Iterator[DigestResult] = _local(files, workers)
    else:
        from mlptui.trace.runs.dask_map import Limits, map_dask

        results = map_dask([str(p) for _, p in files], scheduler, host, limits or Limits())
    order = {str(p): i for i, (_, p) in enumerate(files)}
    digests = []
    failed: list[tuple[int, str]] = []
    hosts: Counter[str] = Counter()
    cached = 0
    for done, res in enumerate(results, 1):
        if res.digest is None:
            failed.append((order.get(res.path, len(order)), res.error or f"{res.path}: could not be read"))
        else:
            digests.append(replace(digest_from_dict(res.digest), source=res.path))
            cached += res.cached
            hosts[res.host or "?"] += 1
        if on_progress is not None:
            on_progress(done, len(files), res.path)
    digests.sort(key=lambda d: d.rank)
    report = reduce_digests(digests) if digests else None
    device = next((d.device for d in digests if d.device), None)
    return RunSummary(report, [d.source for d in digests], [text for _, text in sorted(failed)], device, cached,
                      time.perf_counter() - start, dict(hosts))
