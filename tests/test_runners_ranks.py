"""`mlptui run tp-mlp --nproc 2` and `mlptui run mlp --train --nproc 2` end to end on the CPU with the
gloo backend, through torch.distributed.run, as CI runs them; and the one-line refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mlptui.cli import main
from mlptui.trace.analysis.ranks.ranks import rank_info, rank_run
from mlptui.trace.parse.load import load_trace

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--batch", "2", "--seq", "8", "--dim", "32", "--hidden", "64"]


def mlptui(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlptui.cli", *argv], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=280)


def one_run(out: Path) -> tuple[Path, dict]:
    (folder,) = list(out.iterdir())
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # no temp files left
    return folder, orjson.loads((folder / "manifest.json").read_bytes())


def test_tp_mlp_on_two_gloo_ranks(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    res = mlptui("run", "tp-mlp", "--device", "cpu", "--nproc", "2", "--dtype", "fp32", *TINY,
                 "--delay-rank", "1", "--delay-ms", "60", "--out", "runs", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    folder, manifest = one_run(tmp_path / "runs")
    assert folder.name.startswith("tp-mlp-eager-2x8x32x64-fp32-cpu-x2-")
    dist = manifest["distributed"]
    assert (dist["world_size"], dist["backend"], dist["nccl_version"]) == (2, "gloo", None)
    assert [r["rank"] for r in dist["ranks"]] == [0, 1] and all(r["step_us"] > 0 for r in dist["ranks"])
    for run in manifest["runs"]:
        assert run["max_rel_err_vs_fp32"] < 1e-5 and run["max_rel_err_vs_one_gpu"] < 1e-5
        assert run["flops"] == 3 * 2 * 16 * 32 * 64 // 2  # each rank does half the GEMM work
    traces = [load_trace(folder / r["trace"]) for r in dist["ranks"]]
    assert [(rank_info(t).rank, rank_info(t).world_size) for t in traces] == [(0, 2), (1, 2)]
    assert rank_run(traces) is not None
    for t in traces:
        names = [op.name for op in t.ops]
        assert names.count("tp_mlp_fwd") == 3 and names.count("gloo:all_reduce") == 3  # one per step
    # rank 1 slept 60 ms before each step: rank 0 waited for it in every all-reduce. The line between the two
    # is half the delay, so a loaded machine's slower steps (a 20 ms delay left too little room) cannot cross it
    assert dist["delay"] == {"rank": 1, "ms": 60.0} and "--delay-rank 1 --delay-ms 60" in dist["command"]
    waited = [op.dur for op in traces[0].ops if op.name == "gloo:all_reduce"]
    assert min(waited) > 30_000 > max(op.dur for op in traces[1].ops if op.name == "gloo:all_reduce")


def test_ddp_train_on_two_gloo_ranks(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    res = mlptui("run", "mlp", "--train", "--device", "cpu", "--nproc", "2", "--dtype", "fp32", *TINY,
                 "--out", "runs", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    folder, manifest = one_run(tmp_path / "runs")
    assert folder.name.startswith("mlp-train-eager-2x8x32x64-fp32-cpu-x2-")
    assert manifest["distributed"]["backend"] == "gloo"
    for run in manifest["runs"]:
        assert run["train"] and run["max_rel_err_vs_fp32"] < 1e-3  # averaged gradients vs one process
        trace = load_trace(folder / run["trace"])
        names = [op.name for op in trace.ops]
        assert names.count("ddp_train_step") == 3
        assert names.count("gloo:all_reduce") >= 3  # DDP's bucket all-reduces
        assert any(n.startswith("Optimizer.step#AdamW") for n in names)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tp-mlp", "--nproc", "0"], "--nproc must be at least 1 (got 0)"),
        (["mlp", "--nproc", "2"], "mlp --nproc N runs data-parallel training and needs --train "
                                  "(tp-mlp splits the forward pass)"),
        (["tp-mlp", "--train"], "tp-mlp records the tensor-parallel forward pass; --train is for `run mlp`"),
        (["linear", "--nproc", "2"], "--nproc runs tp-mlp or mlp --train, not linear"),
        (["tp-mlp", "--nproc", "3", "--hidden", "64", "--device", "cpu"],
         "--hidden 64 does not split evenly over 3 ranks"),
        (["tp-mlp", "--nproc", "2", "--delay-rank", "2"], "--delay-rank 2 is not one of the 2 ranks (0 to 1)"),
        (["tp-mlp", "--delay-rank", "1", "--delay-ms", "0"], "--delay-ms must be above 0 and at most 10000 (got 0.0)"),
        (["linear", "--delay-rank", "0"],
         "--delay-rank delays one rank of several: it needs --nproc (tp-mlp, mlp --train)"),
    ],
)
def test_refusals_are_one_line(argv: list[str], message: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *argv, "--out", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err == f"mlptui: {message}\n"
    assert not (tmp_path / "runs").exists()


def test_more_ranks_than_gpus_or_no_nccl(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    from mlptui.base.errors import MlptuiError
    from mlptui.runners.distributed.launch import check_devices

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
    with pytest.raises(MlptuiError, match=r"^--nproc 2 is more than the 1 CUDA GPU here \(one process per GPU; "
                                          r"try --device cpu \(gloo\)\)$"):
        check_devices("cuda", 2)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_devices("cuda", 2) == "nccl"
    with pytest.raises(MlptuiError, match=r"^--nproc 8 is more than the 2 CUDA GPUs here \(one process per GPU\)$"):
        check_devices("cuda", 8)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: False)
    with pytest.raises(MlptuiError, match="no NCCL backend, which --device cuda needs; try --device cpu"):
        check_devices("cuda", 2)


def test_no_cuda_is_a_clear_message(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["run", "tp-mlp", "--nproc", "2", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == "mlptui: CUDA is not available here; try --device cpu (gloo)\n"


def test_workers_keep_nvlink_multicast_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlptui.runners.distributed.launch import torchrun_command, worker_env

    for key in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        monkeypatch.delenv(key, raising=False)
    env = worker_env("cuda")
    assert (env["NCCL_NVLS_ENABLE"], env["TORCH_SYMM_MEM_DISABLE_MULTICAST"], env["NVSHMEM_DISABLE_NVLS"]) == \
        ("0", "1", "1")
    cmd = torchrun_command(2, Path("spec.json"))
    assert cmd[1:3] == ["-m", "torch.distributed.run"] and "--master-addr=127.0.0.1" in cmd
    assert "--nproc-per-node=2" in cmd and cmd[-3:] == ["--module", "mlptui.runners.distributed.rank_main", "spec.json"]



def test_a_rank_that_dies_after_writing_its_work_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """torch.distributed.run exits non-zero although every rank wrote its trace and its record (a rank aborted
    in torch's native teardown, as seen under load): the run is kept, and a warning says so and where the
    launcher's log is."""
    pytest.importorskip("torch")
    from mlptui.runners.distributed import launch

    real = launch.subprocess.call

    def dies_after(*args: object, **kwargs: object) -> int:
        assert real(*args, **kwargs) == 0  # type: ignore[arg-type]
        return -6  # as when a rank is aborted once its work is done

    monkeypatch.setattr(launch.subprocess, "call", dies_after)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "tp-mlp", "--device", "cpu", "--nproc", "2", "--dtype", "fp32", *TINY, "--out", "runs"])
    err = capsys.readouterr().err
    assert code == 0, err
    warning = next(line for line in err.splitlines() if "warning" in line)
    assert "exited with -6 after every rank had written its trace and results; the run is kept" in warning
    log = Path(warning.split("(log: ")[1].rstrip(")"))
    assert log.name == "torchrun.log" and log.is_file()  # the log is kept for the reader
    folder, manifest = one_run(tmp_path / "runs")
    assert [r["rank"] for r in manifest["distributed"]["ranks"]] == [0, 1]
    assert all((folder / r["trace"]).is_file() for r in manifest["distributed"]["ranks"])
    import shutil

    shutil.rmtree(log.parent)
