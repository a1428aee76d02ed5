"""The map step on a Dask cluster (`mlptui summary RUN_DIR --scheduler tcp://host:8786`): the same
per-rank digest as on this machine (mlptui.trace.runs.rank_map), one task per rank, results as they finish.

    map_dask(paths, scheduler, host=None, limits=Limits()) -> Iterator[DigestResult]
    list_run(scheduler, host, folder, limits=Limits()) -> (ranked paths | None, why not | None)

Tasks: one per rank on a big cluster; on a small one a few ranks per task (`batch_size`), so that the
scheduler's cost per task stays small beside the ranks' own. Where tasks run: the files must be readable
where the task runs. With `host` (a `host:path` folder) every
task, and the listing of the folder, is restricted to the scheduler's workers on that host — the files are
on its disk. Without it the folder is read from this machine's file system, which workers elsewhere reach
only through a shared one: tasks prefer workers on this machine and may run on any other. Each task
returns a digest of a few kB, so the client's memory does not grow with the size of the ranks.

Dask's `distributed` is an optional dependency (the `cluster` extra); without it, or when the
scheduler cannot be reached or its address is malformed, the command says so in one line.

Bounded waits (`Limits`): a worker must be there (on `host`, with one) within `worker_wait_s`, or the
command says so in one line; once the ranks are sent, each task must finish within `rank_timeout_s` per
rank it holds after the last one finished, and the scheduler may be without workers for at most
`worker_wait_s`: past either, the ranks not read are reported lost, with why, like unreadable ones. A
task whose worker died is run again by Dask itself (on another worker, or the one its nanny restarts),
and reported once Dask gives it up.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError
from mlptui.base.extras import install_hint
from mlptui.trace.runs.rank_map import DigestResult, digest_file, failed_result

CONNECT_TIMEOUT_S = 10
WORKER_WAIT_S = 60.0
RANK_TIMEOUT_S = 600.0
_POLL_S = 1.0        # how often the scheduler is asked about its workers
_TICK_S = 0.05       # how often finished tasks are looked for


@dataclass(frozen=True)
class Limits:
    worker_wait_s: float = WORKER_WAIT_S     # for a worker to be there, and longest time without any
    rank_timeout_s: float = RANK_TIMEOUT_S   # per rank of a task, after the last result


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no message'}"


def check_address(scheduler: str) -> None:
    """A one-line error for an address no Dask client could connect to, before a client is made (a
    client that fails on one is left half-made, and prints a traceback when Python collects it)."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import backends

    try:
        scheme, location = parse_address(scheduler)
        if scheme not in backends:
            raise ValueError(f"unknown protocol {scheme!r} (known: {', '.join(sorted(backends))})")
        if scheme in ("tcp", "tls", "ws", "wss"):
            _, port = parse_host_port(location)
            if not 0 < int(port) < 65536:
                raise ValueError(f"port {port} is outside 1-65535")
    except (ValueError, TypeError) as exc:
        raise MlptuiError(f"--scheduler {scheduler}: not a Dask scheduler address ({exc}); "
                          "give one like tcp://host:8786") from None


def _client(scheduler: str) -> Any:
    try:
        import distributed
    except ImportError:
        raise MlptuiError(f"--scheduler needs Dask's distributed scheduler; add it with: {install_hint('cluster')}") from None
    check_address(scheduler)
    try:
        dask: Any = distributed     # its API is untyped
        return dask.Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise MlptuiError(f"cannot reach the Dask scheduler at {scheduler} ({_first_line(exc)})") from None


def _workers(client: Any) -> dict[str, Any]:
    found: dict[str, Any] = client.scheduler_info(n_workers=-1)["workers"]
    return found


def wait_for_workers(client: Any, host: str | None, limits: Limits, scheduler: str) -> list[str]:
    """The workers to use (those on `host`, with one; else all), once the scheduler has any: a one-line
    error after `limits.worker_wait_s` without, or at once when none of them is on `host`."""
    deadline = time.monotonic() + limits.worker_wait_s
    while not _workers(client):
        if time.monotonic() >= deadline:
            raise MlptuiError(f"no Dask worker joined the scheduler at {scheduler} within "
                              f"{limits.worker_wait_s:g} s (--worker-wait)")
        time.sleep(min(_POLL_S, max(0.01, deadline - time.monotonic())))
    return workers_on(client, host) if host is not None else list(_workers(client))


def _addresses(host: str) -> set[str]:
    names = {host}
    try:
        names.add(socket.gethostbyname(host))
    except OSError:
        pass
    return names


def workers_on(client: Any, host: str) -> list[str]:
    """The scheduler's workers on `host` (by name or address); a one-line error when there are none."""
    workers = _workers(client)
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
    scheduler's cost per task (small on a quiet machine, many times more on a busy one) small beside the
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


def _hosts(client: Any, workers: list[str]) -> list[str]:
    """The hosts of these workers: a task restricted to hosts may still run on a worker that a nanny
    restarts there under a new address."""
    info = _workers(client)
    return sorted({str(info[w].get("host")) for w in workers if w in info and info[w].get("host")})


def list_run(scheduler: str, host: str, folder: str,
             limits: Limits = Limits()) -> tuple[list[tuple[int, Path]] | None, str | None]:
    """The ranks of `folder` on `host`, listed by a worker there."""
    client = _client(scheduler)
    try:
        where = _hosts(client, wait_for_workers(client, host, limits, scheduler))
        fut = client.submit(_list_task, folder, workers=where, allow_other_workers=False, pure=False)
        try:
            files, why = fut.result(timeout=limits.rank_timeout_s)
        except TimeoutError:
            raise MlptuiError(f"no Dask worker on {host} listed {folder} within {limits.rank_timeout_s:g} s "
                              "(--rank-timeout)") from None
    finally:
        _close(client)
    return (None, why) if files is None else ([(r, Path(p)) for r, p in files], None)


def _close(client: Any) -> None:
    try:
        client.close(timeout=CONNECT_TIMEOUT_S)
    except Exception:      # a scheduler gone already: nothing left to close
        pass


def map_dask(paths: Sequence[str], scheduler: str, host: str | None = None,
             limits: Limits = Limits()) -> Iterator[DigestResult]:
    client = _client(scheduler)
    try:
        workers = wait_for_workers(client, host, limits, scheduler)
        if host is not None:
            place: dict[str, Any] = {"workers": _hosts(client, workers), "allow_other_workers": False}
        else:
            here = _here(client)
            place = {"workers": _hosts(client, here), "allow_other_workers": True} if here else {}
        size = batch_size(len(paths), len(workers) or 1)
        batches = [list(paths[k:k + size]) for k in range(0, len(paths), size)]
        futures = {client.submit(_task, b, pure=False, **place): b for b in batches}
        yield from _gather(client, futures, size, limits)
    finally:
        _close(client)


def _gather(client: Any, futures: dict[Any, list[str]], size: int, limits: Limits) -> Iterator[DigestResult]:
    """Results as tasks finish, until every rank is read or reported lost. Futures are polled: waiting
    on them through Dask needs a default client, which this one is not."""
    pending = dict(futures)
    last_result = without_workers = checked = time.monotonic()
    while pending:
        done = [fut for fut in pending if fut.done()]
        now = time.monotonic()
        if done:
            last_result = now
        for fut in done:
            yield from _batch_results(fut, pending.pop(fut))
        if not pending or done:
            continue
        time.sleep(_TICK_S)
        if now - checked < _POLL_S:
            continue
        checked = now
        if _workers(client):
            without_workers = now
        why = None
        if now - without_workers >= limits.worker_wait_s:
            why = f"no Dask worker for {limits.worker_wait_s:g} s (--worker-wait) before it was read"
        elif now - last_result >= limits.rank_timeout_s * size:
            why = (f"not read within {limits.rank_timeout_s:g} s (--rank-timeout) by the Dask workers"
                   + (f", {size} ranks to a task" if size > 1 else ""))
        if why is not None:
            client.cancel(list(pending))
            for batch in pending.values():
                yield from (failed_result(p, why) for p in batch)
            return


def _batch_results(fut: Any, batch: list[str]) -> Iterator[DigestResult]:
    try:
        results: list[DigestResult] = fut.result()
    except Exception as exc:      # Dask gave the task up (its workers died) or it raised: those ranks fail
        why = f"the Dask task reading it failed ({_first_line(exc)})"
        results = [failed_result(p, why) for p in batch]
    for path, res in zip(batch, results, strict=True):
        yield res._replace(path=path)
