"""The attention rung's runners without a GPU: `run attention --variant/--backend` names, the one-line
errors, a CPU run whose manifest records the backend, shapes and timing, a backend the build lacks as a
one-line skip, and FlashAttention's source chain offline.

Offline method (no test reaches the network): the Hub step is made to fail the way an unreachable Hub
fails, by replacing `kernels.get_kernel` with one that raises httpx2.ConnectError (what huggingface_hub
raises when no connection can be made); the HF-cache step runs with HF_HUB_OFFLINE=1 against an empty
temporary HF_HOME; LOCAL_KERNELS points at a kernel build written to a temporary folder (a plain-torch
`flash_attn_func` stands in for the CUDA kernel), in a fresh interpreter because huggingface_hub reads
HF_HOME when imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mlptui.base.errors import MlptuiError
from mlptui.cli import main
from mlptui.runners.workloads.attention.cli_args import attention_command
from mlptui.runners.workloads.attention.registry import workload_for
from mlptui.runners.workloads.registry import WORKLOADS, ladder

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16"]


@pytest.mark.parametrize(("variant", "backend", "name"), [
    ("naive", None, "attention-naive"), ("inplace", None, "attention-inplace"), ("sdpa", None, "attention-sdpa-auto"),
    (None, None, "attention-sdpa-auto"), ("sdpa", "math", "attention-sdpa-math"), ("sdpa", "flash", "attention-sdpa-flash"),
    ("sdpa", "efficient", "attention-sdpa-efficient"), ("sdpa", "cudnn", "attention-sdpa-cudnn"),
])
def test_variant_and_backend_name_a_registry_entry(variant, backend, name) -> None:
    assert workload_for(variant, backend) == name and name in WORKLOADS
    spelled = attention_command(name)
    assert spelled[0] == "attention" and spelled[2] == (variant or "sdpa")


def test_the_ladder_records_every_attention_variant() -> None:
    names = {(w.name, mode) for w, mode in ladder()}
    assert {(n, "eager") for n in WORKLOADS if n.startswith("attention-")} <= names
    assert ("attention-sdpa-flash", "compile") in names


@pytest.mark.parametrize(("argv", "message"), [
    (["attention", "--variant", "naive", "--backend", "flash"], "--backend applies to --variant sdpa only"),
    (["mlp", "--variant", "naive"], "--variant/--backend apply to the attention workload only"),
    (["attention", "--dim", "8"], "--dim is not a shape flag of attention-sdpa-auto"),
    (["ladder", "--backend", "math"], "ladder records every attention variant and backend"),
    (["attention-kernels", "--device", "cpu"], "attention-kernels runs GPU-only kernels and needs --device cuda"),
])
def test_bad_attention_arguments_are_one_line_errors(argv, message, tmp_path, capsys) -> None:
    assert main(["run", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.slow   # torch on the CPU
def test_naive_attention_on_cpu_records_backend_shapes_and_timing(tmp_path, capsys) -> None:
    pytest.importorskip("torch")
    assert main(["run", "attention", "--variant", "naive", "--device", "cpu", *SMALL, "--active", "1",
                 "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    (trace,) = tmp_path.glob("attention-naive-eager-1x2x32x16-bf16-cpu-*.pt.trace.json.gz")
    run = orjson.loads((tmp_path / "manifest.json").read_bytes())["runs"][0]
    assert run["trace"] == trace.name and run["workload"] == "attention-naive"
    assert run["shape"] == {"batch": 1, "heads": 2, "seq": 32, "head_dim": 16}
    assert run["attention"] == {"variant": "naive", "backend": None, "layout": "BHSD", "causal": True,
                                "q_shape": [1, 2, 32, 16]}
    assert run["timing"]["median_us"] > 0 and run["timing"]["iters"] >= 5
    assert 0 < run["max_rel_err_vs_fp32"] < 2e-2          # bf16 against the fp32 reference
    assert run["command"].startswith("mlptui run attention --variant naive --mode eager --batch 1 --heads 2")
    assert run["flops"] == 2 * 2 * 1 * 2 * 32 * 32 * 16 // 2


@pytest.mark.slow   # torch on the CPU
def test_a_backend_the_build_lacks_is_a_one_line_skip(tmp_path, capsys) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("on a GPU the efficient backend may exist")
    code = main(["run", "attention", "--variant", "sdpa", "--backend", "efficient", "--device", "cpu", *SMALL,
                 "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0 and not list(tmp_path.glob("*.pt.trace.json.gz"))
    skipped = [line for line in (out + err).splitlines() if "skipped attention-sdpa-efficient" in line]
    assert len(skipped) == 1 and "SDPA backend efficient is not available on this GPU or torch build" in skipped[0]
    assert skipped[0].split("): ", 1)[1].strip()      # SDPA's own reason, on the same line


def test_an_unreachable_hub_is_one_clear_line(monkeypatch, tmp_path) -> None:
    kernels = pytest.importorskip("kernels")
    httpx = pytest.importorskip("httpx2")   # huggingface_hub's HTTP client
    from mlptui.runners.record.skipped import Skipped
    from mlptui.runners.workloads.attention import flash_source

    def unreachable(*_args, **_kwargs):
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(kernels, "get_kernel", unreachable)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("LOCAL_KERNELS", raising=False)
    monkeypatch.setitem(sys.modules, "flash_attn", None)       # the wheel is not installed here either
    with pytest.raises(Skipped) as info:
        flash_source.load_flash_attn_func()
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 0
    assert message.startswith("the Hugging Face Hub is unreachable and no other source of FlashAttention "
                              "(kernels-community/flash-attn2) is here; tried hub: the Hugging Face Hub is "
                              "unreachable (ConnectError); hf-cache: ")
    assert "LOCAL_KERNELS: LOCAL_KERNELS is not set" in message
    assert isinstance(info.value, MlptuiError)


FLASH_STANDIN = '''\
import torch


def flash_attn_func(q, k, v, causal=False):
    """Stand-in for the CUDA kernel: causal attention on [batch, seq, heads, head_dim], plain torch."""
    q, k, v = (t.transpose(1, 2).float() for t in (q, k, v))
    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(s, -1) @ v).transpose(1, 2).to(torch.bfloat16)
'''

PROBE = """
import json
from mlptui.runners.workloads.attention.modules import build_kernels_flash
from mlptui.runners.workloads.shapes import Shape
import torch
built = build_kernels_flash(Shape("attention", (1, 2, 16, 8)), torch.bfloat16, "cpu")
out = built.module(*built.inputs)
ref = built.reference(*(x.float() for x in built.inputs))
print(json.dumps({"source": built.kernel_source, "tried": list(built.kernel_tried),
                  "err": float((out.float() - ref).abs().max() / ref.abs().max()), "extra": built.extra}))
"""


@pytest.mark.slow   # a fresh interpreter with torch
def test_local_kernels_supplies_flash_attention_when_the_hub_and_cache_have_none(tmp_path) -> None:
    pytest.importorskip("kernels")
    pytest.importorskip("torch")
    variant = tmp_path / "flash-attn2" / "build" / "torch-universal"
    (variant / "flash_attn2").mkdir(parents=True)
    (variant / "metadata.json").write_text(json.dumps({
        "id": "flash_attn2_test_universal", "name": "flash-attn2", "version": 3, "license": "BSD-3-Clause",
        "python-depends": [], "backend": {"type": "cuda"}}))
    (variant / "flash_attn2" / "__init__.py").write_text(FLASH_STANDIN)
    env = {k: v for k, v in os.environ.items() if k not in ("KERNELS_CACHE", "HF_HUB_CACHE")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT),
               LOCAL_KERNELS=f"kernels-community/flash-attn2={tmp_path / 'flash-attn2'}")
    res = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["source"].startswith(f"LOCAL_KERNELS kernels-community/flash-attn2={tmp_path / 'flash-attn2'} (")
    assert got["tried"][0] == "hub: HF_HUB_OFFLINE is set" and got["tried"][1].startswith("hf-cache: ")
    assert got["err"] < 2e-2
    assert got["extra"]["attention"]["layout"] == "BSHD"
