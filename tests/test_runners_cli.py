"""`mlptui run` end to end on the CPU, as CI runs it: real torch, real profiler, real files; the traces
are read back with mlptui.trace. Plus the one-line errors a user sees before any work starts."""

from __future__ import annotations

import gzip
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mlptui.cli import main
from mlptui.trace.parse.load import load_trace

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"^(?P<w>[a-z-]+)-(?P<m>eager|compile|reduce-overhead|max-autotune)-(?P<s>[0-9x]+)-"
                  r"(?P<d>bf16|fp16|fp32)-(?P<dev>[a-z0-9.]+)-\d{8}T\d{6}\.pt\.trace\.json\.gz$")
SMALL_MLP = ["--batch", "2", "--seq", "8", "--dim", "32", "--hidden", "64"]


def mlptui(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mlptui.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def ancestors(trace, op_id: int) -> list[str]:
    names = []
    op = trace.ops[op_id]
    while op.parent >= 0:
        op = trace.ops[op.parent]
        names.append(op.name)
    return names


def only_run(folder: Path) -> tuple[Path, dict]:
    traces = sorted(folder.glob("*.pt.trace.json.gz"))
    assert len(traces) == 1, sorted(p.name for p in folder.iterdir())
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert manifest["mlptui_manifest"] == 1 and len(manifest["runs"]) == 1
    return traces[0], manifest["runs"][0]


def test_mlp_on_cpu_writes_a_trace_whose_dispatch_tree_has_aten_linear(tmp_path: Path) -> None:
    res = mlptui("run", "mlp", "--device", "cpu", *SMALL_MLP, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    trace_path, run = only_run(tmp_path / "traces")  # default --out is ./traces
    m = NAME.match(trace_path.name)
    assert m and m.group("w", "m", "s", "d", "dev") == ("mlp", "eager", "2x8x32x64", "bf16", "cpu")
    assert gzip.open(trace_path).read().lstrip().startswith(b"{")  # gzip, JSON inside

    trace = load_trace(trace_path)
    linears = [op for op in trace.ops if op.name == "aten::linear"]
    assert len(linears) == 3 * 3  # gate, up, down in each of the 3 active steps
    for op in linears:
        assert "mlp_fwd" in ancestors(trace, op.id)
        assert any(trace.ops[c].name in ("aten::matmul", "aten::mm") for c in op.children)
    assert [s.name for s in trace.steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    # headless dispatch of a CPU-only trace: every leaf path of the steps, none with kernels
    from mlptui.trace.analysis.report.summary import summarize

    dispatch = summarize(trace).dispatch
    assert dispatch and all(row.gpu_kernels == [] for row in dispatch)
    assert any(row.path[:2] == ["mlp_fwd", "aten::linear"] and row.count == 3 * 3 for row in dispatch)

    assert run["trace"] == trace_path.name and run["workload"] == "mlp" and run["mode"] == "eager"
    assert run["shape"] == {"batch": 2, "seq": 8, "dim": 32, "hidden": 64}
    assert run["args"]["device"] == "cpu" and run["args"]["active"] == 3
    assert run["device"]["slug"] == "cpu" and run["versions"]["torch"].startswith("2.")
    assert run["kernel_source"] == "pytorch"
    t = run["timing"]
    assert 0 < t["p10_us"] <= t["median_us"] <= t["p90_us"] and t["iters"] >= 5
    assert run["flops"] == 6 * 2 * 8 * 32 * 64 and run["tflops"] > 0
    assert 0 < run["max_rel_err_vs_fp32"] < 2e-2  # bf16 against the fp32 reference
    assert run["command"].startswith("mlptui run mlp --mode eager --batch 2")


def test_linear_compiled_on_cpu_records_the_compiled_region(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = mlptui("run", "linear", "--compile", "--device", "cpu", "--rows", "16", "--in_dim", "8",
                 "--out-dim", "4", "--dtype", "fp32", "--out", str(out), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    trace_path, run = only_run(out)
    assert NAME.match(trace_path.name).group("w", "m", "s", "d") == ("linear", "compile", "16x8x4", "fp32")
    trace = load_trace(trace_path)
    names = {op.name for op in trace.ops}
    assert "linear_fwd" in names
    assert any(n.startswith("Torch-Compiled Region") for n in names)
    assert run["compile_s"] > 0 and run["max_rel_err_vs_fp32"] < 1e-5


def test_second_run_merges_into_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "run"
    for _ in range(2):
        res = mlptui("run", "linear", "--device", "cpu", "--rows", "8", "--out", str(out), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    runs = orjson.loads((out / "manifest.json").read_bytes())["runs"]
    traces = sorted(p.name for p in out.glob("*.pt.trace.json.gz"))
    assert sorted(r["trace"] for r in runs) == traces and len(traces) == 2


def test_no_cuda_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "run"
    assert main(["run", "mlp", "--compile", "--out", str(out)]) == 2
    assert capsys.readouterr().err == "mlptui: CUDA is not available here; try --device cpu\n"
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["mlp", "--dim", "0"], "--dim must be a positive integer (got 0)"),
        (["mlp", "--hidden", "big"], "--hidden must be a positive integer (got 'big')"),
        (["linear", "--hidden", "64"], "--hidden is not a shape flag of linear (it takes --rows, --in-dim, --out-dim)"),
        (["mlp", "--in_dim", "8"], "--in-dim is not a shape flag of mlp (it takes --batch, --seq, --dim, --hidden)"),
        (["mlp", "--compile", "--mode", "eager"], "--compile and --mode eager disagree; give one of them"),
        (["ladder", "--compile"], "ladder records each workload in its own modes; drop --mode/--compile"),
        (["mlp", "--active", "0"], "profiler schedule needs --wait ≥ 0, --warmup ≥ 0, --active ≥ 1 (got 1, 1, 0)"),
        (["resnet"], "unknown workload 'resnet' (choose from "),
        (["kernels-mlp"], "kernels-mlp runs GPU-only kernels and needs --device cuda"),
    ],
)
def test_bad_arguments_are_one_line_errors(argv: list[str], message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", *argv, "--device", "cpu", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlptui: " + message) and err.count("\n") == 1
    assert not out.exists()


def test_help_lists_the_article_spellings_without_importing_torch() -> None:
    code = ("import sys, contextlib, io\nfrom mlptui.cli import main\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):\n"
            "    main(['run', '--help'])\n"
            "print('torch' in sys.modules, 'textual' in sys.modules)\nprint(buf.getvalue())")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    flags, text = res.stdout.split("\n", 1)
    assert flags == "False False"
    for spelling in ("--compile", "--mode", "--in_dim", "--in-dim", "--out_dim", "--rows", "--batch",
                     "--seq", "--dim", "--hidden", "--dtype", "--device", "--wait", "--warmup",
                     "--active", "--with-stack", "--out", "--open", "ladder", "kernels-mlp"):
        assert spelling in text


def test_ladder_plan_gives_each_shape_family_its_own_flags() -> None:
    import argparse

    from mlptui.runners.cli import run as cli_run
    from mlptui.runners.workloads.registry import WORKLOADS

    parser = argparse.ArgumentParser()
    cli_run.add_arguments(parser)
    planned = cli_run.plan(parser.parse_args(["ladder", "--rows", "8", "--dim", "32", "--hidden", "64"]))
    got = [(w.name, mode, shape.slug) for w, mode, shape in planned]
    assert got[:5] == [("linear", "eager", "8x32x64"), ("linear", "compile", "8x32x64"),
                       ("mlp", "eager", "64x128x32x64"), ("mlp", "compile", "64x128x32x64"),
                       ("kernels-mlp", "eager", "64x128x32x64")]
    assert {name for name, _, _ in got} == set(WORKLOADS)  # a newly registered workload joins the ladder


def test_open_hands_the_trace_to_the_viewer_in_its_own_process(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from mlptui.runners.cli import run as cli_run

    calls: list[list[str]] = []
    monkeypatch.setattr(cli_run.subprocess, "call", lambda argv: calls.append(argv) or 0)
    assert main(["run", "linear", "--device", "cpu", "--rows", "4", "--open", "--out", str(tmp_path)]) == 0
    trace = next(tmp_path.glob("*.pt.trace.json.gz"))
    assert calls == [[sys.executable, "-m", "mlptui.cli", "view", str(trace)]]


def test_run_without_torch_says_to_install_the_gpu_extra(tmp_path: Path) -> None:
    # A fresh interpreter where `import torch` fails, as after `pip install mlptui` without extras.
    code = ("import sys\nclass NoTorch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ModuleNotFoundError(\"No module named 'torch'\")\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "from mlptui.cli import main\n"
            f"sys.exit(main(['run', 'mlp', '--compile', '--out', {str(tmp_path / 'runs')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "add it with: " in res.stderr
    # no index serves mlptui: the hint installs the extra from the checkout, with this interpreter's pip
    python, m, pip, install, *editable, target = shlex.split(res.stderr.split("add it with: ", 1)[1])
    assert (python, m, pip, install) == (sys.executable, "-m", "pip", "install") and editable in ([], ["-e"])
    checkout, extra = target.removesuffix("]").split("[")
    project = (Path(checkout) / "pyproject.toml").read_text()
    assert extra == "gpu" and re.search(r'^name = "mlptui"$', project, re.M)
    assert re.search(r'^gpu = \[.*"torch[>=]', project, re.M)          # the extra that brings torch
