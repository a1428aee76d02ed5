"""`--scheduler` never waits without bound: a scheduler without workers is one line after --worker-wait; a
worker lost mid-run, or a rank whose task never finishes, costs only the ranks not read, reported with
why like unreadable ranks; a malformed address is one line, with no traceback when Python exits."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from test_run_summary import tiny_rank

from mlptui.cli import main
from mlptui.trace.runs import dask_map

distributed = pytest.importorskip("distributed")


def _cluster(workers: int) -> distributed.LocalCluster:
    return distributed.LocalCluster(processes=False, n_workers=workers, threads_per_worker=1, protocol="tcp",
                                    host="127.0.0.1", dashboard_address=None)


def _run(folder: Path, ranks: int = 4) -> list[Path]:
    folder.mkdir()
    paths = [folder / f"rank-{r}.pt.trace.json" for r in range(ranks)]
    for r, p in enumerate(paths):
        p.write_bytes(tiny_rank(r, ranks))
    return paths


def test_a_scheduler_without_workers_is_one_line_after_the_wait(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path / "run")
    with _cluster(0) as cluster:
        start = time.monotonic()
        code = main(["summary", str(tmp_path / "run"), "--scheduler", cluster.scheduler_address,
                     "--worker-wait", "1"])
        took = time.monotonic() - start
    assert code == 2 and took < 10
    assert capsys.readouterr().err == (f"mlptui: no Dask worker joined the scheduler at {cluster.scheduler_address} "
                                       "within 1 s (--worker-wait)\n")


def test_a_malformed_address_is_one_line_and_no_traceback_at_exit(tmp_path: Path) -> None:
    _run(tmp_path / "run", 2)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mlptui.cli", "summary", str(tmp_path / "run"),
                           "--scheduler", "tcp://nonsense::x"], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 15         # the half-made client's close used to wait 20 s, then print
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("mlptui: --scheduler tcp://nonsense::x: not a Dask scheduler address (")
    assert done.stderr.count("\n") == 1


RELEASE = threading.Event()
READ_RANKS = dask_map._task


def stuck_on_rank_2(paths: list[str]) -> list:
    """A task as the workers run it (pickled by name), except that rank 2's waits until the test ends."""
    if any("rank-2." in p for p in paths):
        RELEASE.wait(60)
    return READ_RANKS(paths)


@pytest.fixture
def stuck_rank(monkeypatch: pytest.MonkeyPatch):
    RELEASE.clear()
    monkeypatch.setattr(dask_map, "_task", stuck_on_rank_2)
    yield
    RELEASE.set()


def test_a_rank_whose_task_never_finishes_is_reported_after_the_timeout(
        tmp_path: Path, stuck_rank: None, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _run(tmp_path / "run")
    with _cluster(2) as cluster:
        start = time.monotonic()
        assert main(["summary", str(tmp_path / "run"), "--json", "--scheduler", cluster.scheduler_address,
                     "--rank-timeout", "2"]) == 0
        assert time.monotonic() - start < 30
        RELEASE.set()           # before the cluster closes, which waits for its tasks
        captured = capsys.readouterr()
    doc = orjson.loads(captured.out)
    assert [r["rank"] for r in doc["ranks"]["ranks"]] == [0, 1, 3]
    why = f"{paths[2]}: not read within 2 s (--rank-timeout) by the Dask workers"
    assert doc["failed"] == [why]
    assert f"mlptui: rank left out: {why}\n" in captured.err


def test_the_only_worker_lost_mid_run_costs_the_ranks_not_read(tmp_path: Path, stuck_rank: None) -> None:
    from mlptui.trace.parse.rank_hint import rank_files
    from mlptui.trace.runs.run_summary import summarize_run

    paths = _run(tmp_path / "run")
    with _cluster(1) as cluster:
        (worker,) = cluster.scheduler.workers

        def lose_the_worker() -> None:
            time.sleep(1.5)             # the other ranks read by then (they take ms); rank 2 stuck
            cluster.sync(cluster.scheduler.remove_worker, address=worker, stimulus_id="test-lost-worker")

        threading.Thread(target=lose_the_worker, daemon=True).start()
        start = time.monotonic()
        run = summarize_run(rank_files(paths), scheduler=cluster.scheduler_address,
                            limits=dask_map.Limits(worker_wait_s=2, rank_timeout_s=600))
        assert time.monotonic() - start < 30
        RELEASE.set()
    assert run.report is not None
    read = [r.rank for r in run.report.ranks]
    why = "no Dask worker for 2 s (--worker-wait) before it was read"
    lost = [r for r in range(4) if r not in read]
    assert 2 in lost and run.failed == [f"{paths[r]}: {why}" for r in lost]      # each rank read or reported


def _worker_pid_after(client: distributed.Client, old: int, wait_s: float = 30.0) -> int:
    """The worker's pid once the scheduler reaches a live one: asking the dead worker (or one still being
    restarted) fails with a closed connection, which is no answer."""
    import os

    deadline = time.monotonic() + wait_s
    while True:
        try:
            pids = list(client.run(os.getpid).values())
        except (OSError, distributed.comm.core.CommClosedError):
            pids = []
        if (pids and pids[0] != old) or time.monotonic() > deadline:
            return pids[0] if pids else old
        time.sleep(0.2)


@pytest.mark.slow
def test_a_worker_killed_mid_run_and_restarted_by_its_nanny_reads_the_rest(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # worker processes under a nanny, as `dask worker` runs them; ranks of 20 MB so that the kill lands
    # while they are read. The tasks are placed by host: the restarted worker, at a new address, takes them.
    import os
    import signal

    from conftest import kineto_generator

    from mlptui.trace.parse.rank_hint import rank_files
    from mlptui.trace.runs.run_summary import summarize_run

    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    gen = kineto_generator()
    paths = [tmp_path / f"rank-{r}.pt.trace.json" for r in range(4)]
    for r, p in enumerate(paths):
        gen.generate(str(p), 20, seed=r, rank=r, world_size=4)
    with distributed.LocalCluster(processes=True, n_workers=1, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        (pid,) = client.run(os.getpid).values()
        killer = threading.Timer(1.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        start = time.monotonic()
        run = summarize_run(rank_files(paths), scheduler=cluster.scheduler_address, host="127.0.0.1",
                            limits=dask_map.Limits(worker_wait_s=60, rank_timeout_s=120))
        took = time.monotonic() - start
        killer.join()
        assert _worker_pid_after(client, pid) != pid      # the nanny made a new worker
    assert run.report is not None and not run.failed
    assert [r.rank for r in run.report.ranks] == [0, 1, 2, 3] and took < 120
