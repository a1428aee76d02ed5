"""`mlptui summary RUN_DIR --scheduler tcp://…` on a Dask LocalCluster (threads, one process): the same
report as the local run; a `host:path` folder is listed and read only by that host's workers; a host
without workers, an unreachable scheduler and a missing `distributed` are one-line errors."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from test_run_summary import tiny_rank

from mlptui.cli import main
from mlptui.trace.parse.rank_hint import rank_files
from mlptui.trace.runs.run_summary import summarize_run

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as c:
        yield c


def _run(folder: Path, ranks: int = 6) -> list[Path]:
    folder.mkdir()
    paths = []
    for r in range(ranks):
        paths.append(folder / f"rank-{r}.pt.trace.json")
        paths[-1].write_bytes(tiny_rank(r, ranks, arrive=10.0 + 25.0 * (r == 4)))
    return paths


def test_the_cluster_gives_the_local_report(tmp_path: Path, cluster, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")          # both read every rank
    folder = tmp_path / "run"
    _run(folder)
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    assert main(["summary", str(folder), "--json"]) == 0
    local = capsys.readouterr().out
    assert main(["summary", str(folder), "--json", "--scheduler", cluster.scheduler_address]) == 0
    assert capsys.readouterr().out == local
    assert main(["summary", str(folder), "--scheduler", cluster.scheduler_address]) == 0
    text = capsys.readouterr().out
    assert main(["summary", str(folder)]) == 0
    assert capsys.readouterr().out == text
    assert [s["rank"] for s in orjson.loads(local)["ranks"]["stragglers"]] == [4]


def test_a_host_path_folder_is_read_by_that_hosts_workers(tmp_path: Path, cluster,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "run"
    paths = _run(folder)
    progress: list[int] = []
    run = summarize_run(rank_files(paths), scheduler=cluster.scheduler_address, host="127.0.0.1",
                        on_progress=lambda done, total, path: progress.append(done))
    assert progress == list(range(1, 7)) and not run.failed
    workers = set(cluster.scheduler_info["workers"])
    assert set(run.hosts) <= workers and sum(run.hosts.values()) == 6      # every rank ran on a worker there
    assert main(["summary", f"127.0.0.1:{folder}", "--json", "--scheduler", cluster.scheduler_address]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]["ranks"]] == list(range(6))


def test_errors_are_one_line(tmp_path: Path, cluster, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "run"
    _run(folder, 2)
    assert main(["summary", f"no-such-host.invalid:{folder}", "--scheduler", cluster.scheduler_address]) == 2
    assert capsys.readouterr().err == ("mlptui: no Dask worker on no-such-host.invalid, where the files are "
                                       "(workers are on: 127.0.0.1)\n")
    monkeypatch.setattr("mlptui.trace.runs.dask_map.CONNECT_TIMEOUT_S", 1)
    assert main(["summary", str(folder), "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlptui: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (") and err.count("\n") == 1
    assert main(["summary", str(folder / "rank-0.pt.trace.json"), "--scheduler", cluster.scheduler_address]) == 2
    assert "give a folder, not one trace" in capsys.readouterr().err
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)     # as if the extra were not installed
    assert main(["summary", str(folder), "--scheduler", cluster.scheduler_address]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlptui: --scheduler needs Dask's distributed scheduler; add it with: ")
    assert err.count("\n") == 1 and "-m pip install" in err and "[cluster]" in err


def test_ranks_per_task() -> None:
    from mlptui.trace.runs.dask_map import batch_size

    assert [batch_size(n, w) for n, w in ((6, 2), (1000, 2), (1000, 16), (1000, 64), (100_000, 8))] == \
        [1, 32, 7, 1, 32]
