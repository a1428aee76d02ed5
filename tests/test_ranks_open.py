"""Opening a folder of ranks in the explorer: ranks large enough for the worker pool open on a cold
cache (inside the app stderr has no file descriptor, which multiprocessing's helpers pass on); a rank that
cannot be read leaves the others open and is named with its reason; a folder that is not one run says
why it opens as a file list."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import wait_for_screen
from conftest import kineto_generator, trace_bytes, x
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.picker import PickerScreen
from mlptui.screens.ranks_screen import RanksScreen
from mlptui.trace.parse import index_cache
from mlptui.trace.parse import load_many as load_many_module


def _tiny_rank(rank: int, world: int) -> bytes:
    events = [x("ProfilerStep#1", "user_annotation", 0, 100), x("aten::mm", "cpu_op", 1, 5, **{"External id": 1}),
              x("cudaLaunchKernel", "cuda_runtime", 2, 2, correlation=7, **{"External id": 1}),
              x("gemm_kernel", "kernel", 4, 3, pid=0, tid=7, correlation=7, **{"External id": 1})]
    return trace_bytes(events, distributedInfo={"backend": "nccl", "rank": rank, "world_size": world})


async def test_two_12_mb_ranks_open_through_the_worker_pool_on_a_cold_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = kineto_generator()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    run = tmp_path / "run"
    run.mkdir()
    paths = [run / f"rank-{r}.pt.trace.json" for r in range(2)]
    for r, p in enumerate(paths):
        gen.generate(str(p), 12, seed=r, rank=r, world_size=2)
        assert p.stat().st_size >= load_many_module.PARALLEL_MIN_BYTES    # too big to index in the app
        assert not index_cache.has_entry(p)
    pools = []
    real_pool = load_many_module.worker_pool

    def counted(*args, **kwargs):
        pools.append(args)
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(load_many_module, "worker_pool", counted)
    app = make_app([str(run)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, RanksScreen, timeout=120)
        assert [rank for rank, _ in screen.run.ranks] == [0, 1]
        assert screen.run.failed == []
    assert len(pools) == 1 and pools[0][0] == 2          # two workers, one per rank
    assert all(index_cache.has_entry(p) for p in paths)   # written by the workers


async def test_an_unreadable_rank_leaves_the_others_open_and_is_named(tmp_path: Path) -> None:
    for r in range(3):
        (tmp_path / f"rank-{r}.pt.trace.json").write_bytes(_tiny_rank(r, 4))
    broken = tmp_path / "rank-3.pt.trace.json"
    broken.write_bytes(b'{"traceEvents": [ {"ph": "X", "name": ')
    app = make_app([str(tmp_path)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, RanksScreen)
        assert [rank for rank, _ in screen.run.ranks] == [0, 1, 2]
        (failed,) = screen.run.failed
        assert failed.startswith(str(broken)) and "\n" not in failed and len(failed) > len(str(broken)) + 5
        header = str(screen.query_one("#ranks-header", Static).render())
        assert "3 of 4 ranks" in header and "rank-3.pt.trace.json" in header and "could not be read" in header


@pytest.mark.parametrize(("worlds", "ranks", "why"), [
    ((2, 2), (0, 0), "rank 0 appears twice (rank-a.pt.trace.json and rank-b.pt.trace.json)"),
    ((2, 4), (0, 1), "the traces state different world sizes (2, 4)"),
])
async def test_a_folder_that_is_not_one_run_says_why(tmp_path: Path, worlds: tuple[int, int],
                                                     ranks: tuple[int, int], why: str) -> None:
    for name, world, rank in zip("ab", worlds, ranks, strict=True):
        (tmp_path / f"rank-{name}.pt.trace.json").write_bytes(_tiny_rank(rank, world))
    app = make_app([str(tmp_path)])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        title = str(screen.query_one("#picker-title", Static).render())
        assert f"not one run: {why}" in title
