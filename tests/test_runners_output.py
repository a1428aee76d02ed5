"""Nothing is ever lost: trace names, no-clobber publishing, atomic manifest writes and merges, and no
partial files when a run is interrupted or its compile fails (real CPU runs, with one stage replaced)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from mlptui.base import files
from mlptui.base.errors import MlptuiError
from mlptui.cli import main
from mlptui.runners.record import output

SMALL = ["mlp", "--device", "cpu", "--batch", "2", "--seq", "4", "--dim", "16", "--hidden", "32"]
FIXED = datetime(2026, 11, 22, 3, 4, 5)
EXPECTED = "mlp-eager-2x4x16x32-bf16-cpu-20261122T030405.pt.trace.json.gz"


@pytest.mark.parametrize(
    ("name", "slug"),
    [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100"),
     ("NVIDIA GeForce RTX 4090", "rtx4090"), ("AMD Instinct MI300X", "mi300x"), ("Tesla T4", "t4"),
     ("cpu", "cpu"), ("NVIDIA", "gpu")],
)
def test_device_slug(name: str, slug: str) -> None:
    assert output.device_slug(name) == slug


def test_trace_name_follows_the_pattern() -> None:
    assert output.trace_name("mlp", "reduce-overhead", "64x128x768x3072", "bf16", "h100", FIXED) == (
        "mlp-reduce-overhead-64x128x768x3072-bf16-h100-20261122T030405.pt.trace.json.gz")


def test_publish_never_replaces_an_existing_trace(tmp_path: Path) -> None:
    existing = tmp_path / EXPECTED
    existing.write_bytes(b"first")
    for expected, body in ((EXPECTED.replace(".pt.trace", "-2.pt.trace"), b"second"),
                           (EXPECTED.replace(".pt.trace", "-3.pt.trace"), b"third")):
        tmp = output.temp_path(tmp_path, EXPECTED)
        tmp.write_bytes(body)
        final = output.publish_trace(tmp, tmp_path, EXPECTED)
        assert final.name == expected and final.read_bytes() == body
        assert not tmp.exists()
    assert existing.read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [EXPECTED, EXPECTED.replace(".pt.trace", "-2.pt.trace"), EXPECTED.replace(".pt.trace", "-3.pt.trace")])


def test_manifest_merges_and_replaces_the_same_trace(tmp_path: Path) -> None:
    output.add_run(tmp_path, {"trace": "a.pt.trace.json.gz", "median": 1})
    output.add_run(tmp_path, {"trace": "b.pt.trace.json.gz", "median": 2})
    output.add_run(tmp_path, {"trace": "a.pt.trace.json.gz", "median": 3})
    data = orjson.loads((tmp_path / "manifest.json").read_bytes())
    assert data == {"mlptui_manifest": 1, "runs": [{"trace": "b.pt.trace.json.gz", "median": 2},
                                                   {"trace": "a.pt.trace.json.gz", "median": 3}]}
    assert visible(tmp_path) == ["manifest.json"]


def test_a_failed_manifest_write_leaves_the_old_one_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output.add_run(tmp_path, {"trace": "a.pt.trace.json.gz"})
    before = (tmp_path / "manifest.json").read_bytes()

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(MlptuiError, match="No space left"):
        output.add_run(tmp_path, {"trace": "b.pt.trace.json.gz"})
    assert (tmp_path / "manifest.json").read_bytes() == before
    assert visible(tmp_path) == ["manifest.json"]  # no temp file left behind


def test_a_broken_manifest_stops_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mlptui: {tmp_path / 'manifest.json'} is not valid JSON") and err.count("\n") == 1
    assert visible(tmp_path) == ["manifest.json"]
    (tmp_path / "manifest.json").write_text("[]")
    with pytest.raises(MlptuiError, match="not an mlptui manifest"):
        output.read_manifest(tmp_path)


def visible(folder: Path) -> list[str]:
    """The folder's files, sorted (a run folder holds its traces and the manifest, nothing else)."""
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import mlptui.runners.cli.run as cli_run

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ANN001, ANN206
            return FIXED

    monkeypatch.setattr(cli_run, "datetime", Clock)


def test_existing_output_is_kept_and_the_new_run_gets_a_free_name(tmp_path: Path, fixed_clock: None) -> None:
    (tmp_path / EXPECTED).write_bytes(b"an earlier run")
    os.chmod(tmp_path / EXPECTED, 0o444)
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 0
    assert (tmp_path / EXPECTED).read_bytes() == b"an earlier run"
    new = EXPECTED.replace(".pt.trace", "-2.pt.trace")
    runs = orjson.loads((tmp_path / "manifest.json").read_bytes())["runs"]
    assert [r["trace"] for r in runs] == [new]
    assert (tmp_path / new).stat().st_size > 1000
    assert visible(tmp_path) == sorted([EXPECTED, new, "manifest.json"])


def test_ctrl_c_while_timing_leaves_no_partial_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from mlptui.runners.record import profiling

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(profiling, "time_calls", interrupted)  # the trace was already exported to a temp
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 130
    assert capsys.readouterr().err.endswith("mlptui: interrupted\n")
    assert list(tmp_path.iterdir()) == []


def test_compile_failure_says_why_and_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from mlptui.runners.record import profiling

    def broken_compile(module: object, mode: str):  # noqa: ANN202
        def call(*inputs: object) -> None:
            raise RuntimeError("backend='inductor' raised:\nCppCompileError: C++ compile error")
        return module if mode == "eager" else call

    monkeypatch.setattr(profiling, "compiled", broken_compile)
    assert main(["run", *SMALL, "--compile", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "mlptui: mlp compile 2x4x16x32 bf16 cpu: compile failed: backend='inductor' raised:"
    assert list(tmp_path.iterdir()) == []


def test_a_profiler_failure_is_one_line_and_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from mlptui.runners.record import profiling

    real = profiling.profile_to

    def export_then_fail(path: Path, *args: object, **kwargs: object) -> None:
        real(path, *args, **kwargs)  # the temp trace exists now
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED\nmore detail")

    monkeypatch.setattr(profiling, "profile_to", export_then_fail)
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "mlptui: mlp eager 2x4x16x32 bf16 cpu: profiling failed: CUPTI_ERROR_NOT_INITIALIZED")
    assert list(tmp_path.iterdir()) == []
