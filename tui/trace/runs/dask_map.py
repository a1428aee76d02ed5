"""The map step on a Dask cluster (`mlptui summary RUN_DIR --scheduler tcp://host:8786`): the same
per-rank digest as on this machine (mlptui.trace.runs.rank_map), one task per rank, results as they finish.

    map_dask(paths, scheduler, host=None) -> Iterator[DigestResult]
    list_run(scheduler, host, folder) -> (ranked paths | None, why not | None)

Tasks: one per rank on a big cluster; on a small one a few ranks per task (`batch_size`), so that the
scheduler's cost per task stays small beside the ranks' own. Where tasks run: the files must be readable
where the task runs. With `host` (a `host:path` folder) every
task, and the listing of the folder, is restricted to the scheduler's workers on that host — the files are
on its disk. Without it the folder is read from this machine's file system, which workers elsewhere reach
only through a shared one: tasks prefer workers on this machine and may run on any other. Each task
returns a digest of a few kB, so the client's memory does not grow with the size of the ranks.

Dask's `distributed` is an optional dependency (the `cluster` extra); without it, or when the
scheduler cannot be reached, the command says so in one line.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError
from mlptui.base.extras import install_hint
from mlptui.trace.runs.rank_map import DigestResult, digest_file

CONNECT_TIMEOUT_S = 10


def _client(scheduler: str) -> Any:
    try:
        import distributed
    except ImportError:
        raise MlptuiError(f"--scheduler needs Dask's distributed scheduler; add it with: {install_hint('cluster')}") from None
    try:
        dask: Any = distributed     # its API is untyped
        return dask.Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise MlptuiError(f"cannot reach the Dask scheduler at {scheduler} ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else 'no answer'})") from None


def _addresses(host: str) -> set[str]:
    names = {host}
    try:
        names.add(socket.gethostbyname(host))
    except OSError:
        pass
    return names


def workers_on(client: Any, host: str) -> list[str]:
    """The scheduler's workers on `host` (by name or address); a one-line error when there are none."""
    workers: dict[str, Any] = client.scheduler_info(n_workers=-1)["workers"]
    names = _addresses(host)
    found = [addr for addr, info in workers.items() if info.get("host") in names]
    if not found:
        seen = sorted({str(info.get("host")) for info in workers.values()}) or ["none"]
        raise MlptuiError(f"no Dask worker on {host}, where the files are (workers are on: {', '.join(seen)})")
    return found


def _here(client: Any) -> list[str]:
    """Workers on this machine, if any: the preferred place to read its files."""
    try:
        return workers_on(client, socket.gethostname()) + workers_on(client, "127.0.0.1")
    except MlptuiError:
        return []


def _task(paths: list[str]) -> list[DigestResult]:
    """A few ranks on a worker; each result says which worker ran it."""
    try:
        from distributed import get_worker

        where: str | None = str(get_worker().address)
    except (ImportError, ValueError):
        where = None
    return [r if where is None else r._replace(host=where) for r in map(digest_file, paths)]


def batch_size(ranks: int, workers: int) -> int:
    """Ranks per task: one each when there are few per worker; on a small cluster enough to keep the
    scheduler's cost per task (about 1 ms on a quiet machine, tens of ms on a busy one) small beside the
    ranks' own, while each worker still gets about eight tasks to balance with."""
    return max(1, min(32, ranks // max(1, 8 * workers)))


def _list_task(folder: str) -> tuple[list[tuple[int, str]] | None, str | None]:
    from mlptui.trace.parse.discover import find_traces
    from mlptui.trace.parse.rank_hint import rank_files_or_why

    found = find_traces(folder)
    if not found:
        return None, f"no traces (*.json, *.json.gz) in {folder}"
    files, why = rank_files_or_why(found)
    return (None, why or "the traces name no ranks") if files is None else ([(r, str(p)) for r, p in files], None)


def list_run(scheduler: str, host: str, folder: str) -> tuple[list[tuple[int, Path]] | None, str | None]:
    """The ranks of `folder` on `host`, listed by a worker there."""
    client = _client(scheduler)
    try:
        where = workers_on(client, host)
        files, why = client.submit(_list_task, folder, workers=where, allow_other_workers=False,
                                   pure=False).result()
    finally:
        client.close()
    return (None, why) if files is None else ([(r, Path(p)) for r, p in files], None)


def map_dask(paths: Sequence[str], scheduler: str, host: str | None = None) -> Iterator[DigestResult]:
    client = _client(scheduler)
    import distributed

    dask: Any = distributed
    try:
        if host is not None:
            place: dict[str, Any] = {"workers": workers_on(client, host), "allow_other_workers": False}
        else:
            here = _here(client)
            place = {"workers": here, "allow_other_workers": True} if here else {}
        n_workers = len(place.get("workers") or client.scheduler_info(n_workers=-1)["workers"]) or 1
        size = batch_size(len(paths), n_workers)
        batches = [list(paths[k:k + size]) for k in range(0, len(paths), size)]
        futures = {client.submit(_task, b, pure=False, **place): b for b in batches}
        for fut in dask.as_completed(futures, loop=client.loop):
            batch = futures[fut]
            try:
                results: list[DigestResult] = fut.result()
            except Exception as exc:      # a worker died or the task failed: those ranks fail, not the run
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                results = [DigestResult(p, None, f"{p}: the Dask task reading it failed ({why})", False, 0.0, "")
                           for p in batch]
            for path, res in zip(batch, results, strict=True):
                yield res._replace(path=path)
    finally:
        client.close()
