"""`mlptui run --train --profile-memory --with-modules` on the CPU, and the training step on its own:
real torch, real profiler; the trace is read back with mlptui.trace's memory and modules views."""

from __future__ import annotations

import argparse

import pytest

torch = pytest.importorskip("torch", reason="runs a real training step (the gpu extra, or CPU torch)")
from test_runners_cli import SMALL_MLP, mlptui, only_run  # noqa: E402

from mlptui.runners.cli import run as cli_run  # noqa: E402
from mlptui.runners.workloads.training import make_optimizer, train_step  # noqa: E402
from mlptui.trace.analysis.memory.memory import memory_report  # noqa: E402
from mlptui.trace.analysis.operators.modules import module_tree  # noqa: E402
from mlptui.trace.analysis.operators.operators import operators  # noqa: E402
from mlptui.trace.parse.load import load_trace  # noqa: E402


def test_train_step_updates_every_weight_and_lowers_the_loss() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    x = torch.randn(32, 8)
    before = [p.detach().clone() for p in model.parameters()]
    opt = make_optimizer(model)
    first = train_step(model, (x,), opt)
    for _ in range(20):
        last = train_step(model, (x,), opt)
    assert all(not torch.equal(a, p) for a, p in zip(before, model.parameters(), strict=True))
    assert last.item() < first.item()
    assert all(p.grad is not None for p in model.parameters())


def test_optimizer_refuses_a_model_without_weights() -> None:
    with pytest.raises(ValueError, match="no trainable weights"):
        make_optimizer(torch.nn.GELU())


def test_train_run_on_cpu_records_memory_modules_and_backward(tmp_path) -> None:
    res = mlptui("run", "mlp", "--train", "--profile-memory", "--with-modules", "--device", "cpu", *SMALL_MLP,
                 "--active", "2", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    trace_path, run = only_run(tmp_path / "traces")
    assert trace_path.name.startswith("mlp-train-eager-2x8x32x64-bf16-cpu-")
    assert run["train"] is True and run["label"] == "mlp_train_step"
    assert run["command"].endswith("--profile-memory --with-modules --train")
    assert "profile_memory=True, with_modules=True" in run["recorder"]
    trace = load_trace(trace_path)
    assert len(trace.steps) == 2
    rep = memory_report(trace)
    assert rep is not None and rep.devices[0].kind == "cpu" and rep.devices[0].peak_allocated > 0
    modules = module_tree(trace)
    assert modules is not None and modules[0].path == ("SimpleGeGLUMLP_0",)
    assert {m.path for m in modules} >= {("SimpleGeGLUMLP_0", f"Linear_{i}") for i in range(3)}
    names = {o.name for o in operators(trace)}
    assert any(n.startswith("autograd::engine::evaluate_function: MmBackward") for n in names)
    assert any(n.startswith("aten::_foreach_") for n in names)          # AdamW(foreach=True)


def test_ladder_adds_one_training_step_with_memory_and_modules() -> None:
    parser = argparse.ArgumentParser()
    cli_run.add_arguments(parser)
    args = parser.parse_args(["ladder", "--dim", "32", "--hidden", "64"])
    w, mode, shape = cli_run.ladder_training_run(args)
    assert (w.name, mode, shape.dim, shape.hidden) == ("mlp", "eager", 32, 64)
    targs = cli_run.training_args(args)
    assert (targs.train, targs.profile_memory, targs.with_modules, targs.active) == (True, True, True, 1)
    assert not args.train                     # the ladder's other runs stay forward-only
