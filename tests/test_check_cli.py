"""`mlptui check`: each expectation kind holds on a recorded trace that has it and fails, exit 1 with a
one-line reason, on one that does not; a malformed expectation or expectations file is a one-line
error, exit 2; expect.toml beside the trace supplies the expectations when --expect is not given."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from attention_support import ATTENTION_SAMPLES, Raw, attention_sample

from mlptui.cli import main

CASES = [
    # expectation, a trace where it holds, a trace where it does not
    ("kernels per step == 1", "attention-sdpa-flash", "attention-sdpa-math"),
    ("kernels per step >= 20", "attention-sdpa-math", "attention-naive"),
    ("launches per step < 2", "attention-sdpa-cudnn", "attention-naive"),
    ("no memcpy", "attention-inplace", "attention-naive"),
    ("memcpy per step == 1", "attention-naive", "attention-inplace"),
    ("attention kernel: flash", "attention-sdpa-flash", "attention-sdpa-cudnn"),
    ("attention kernel: efficient", "attention-sdpa-efficient", "attention-sdpa-flash"),
    ("attention kernel: cudnn", "attention-sdpa-cudnn", "attention-sdpa-efficient"),
    ("attention kernel: none", "attention-sdpa-math", "attention-sdpa-flash"),
    ("tensor cores: all GEMMs", "attention-naive", "attention-sdpa-math"),
    ("tensor cores: no GEMMs", "attention-sdpa-math", "attention-inplace"),
    ("mask rebuilt", "attention-sdpa-math", "attention-inplace"),
    ("no mask rebuilt", "attention-naive", "attention-sdpa-math"),
]


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("expectation", "holds", "fails"), CASES)
def test_each_kind_holds_on_one_trace_and_fails_on_another(expectation, holds, fails, capsys) -> None:
    code, out, err = _check(capsys, str(attention_sample(holds)), "--expect", expectation)
    assert code == 0, out + err
    assert f"ok        {expectation}" in out and err == ""
    code, out, err = _check(capsys, str(attention_sample(fails)), "--expect", expectation)
    assert code == 1
    assert f"MISMATCH  {expectation}" in out
    assert err.count("\n") == 1 and err.startswith(f"mlptui: expected {expectation!r}, the trace shows ")


def test_what_the_trace_shows_is_counted_from_the_raw_events(capsys) -> None:
    path = attention_sample("attention-sdpa-math")
    raw = Raw(path)
    per_step = {len(raw.gpu_in_step(i)) for i in range(len(raw.steps))}
    assert len(per_step) == 1
    code, out, _ = _check(capsys, str(path), "--expect", "kernels per step == 1")
    assert code == 1 and f"kernels {per_step.pop()} in each of {len(raw.steps)} steps" in out


def test_the_issue_s_four_expectations_on_the_flash_trace(capsys) -> None:
    code, out, err = _check(capsys, str(attention_sample("attention-sdpa-flash")),
                            "--expect", "kernels per step == 1", "--expect", "no memcpy",
                            "--expect", "attention kernel: flash", "--expect", "tensor cores: all GEMMs")
    assert code == 0 and "4 of 4 expectations hold" in out and err == ""


@pytest.mark.parametrize("bad", ["kernels per stp == 1", "kernels per step = 1", "kernels per step == x",
                                 "attention kernel: warp-speed", "tensor cores: some GEMMs", ""])
def test_a_malformed_expectation_is_one_line_and_exit_2(bad, capsys) -> None:
    code, out, err = _check(capsys, str(attention_sample("attention-sdpa-flash")), "--expect", bad)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mlptui: malformed expectation")


def _beside(tmp_path: Path, workload: str, toml: str) -> Path:
    trace = shutil.copy(attention_sample(workload), tmp_path)
    (tmp_path / "expect.toml").write_text(toml)
    return Path(trace)


def test_expect_toml_beside_the_trace(tmp_path, capsys) -> None:
    trace = _beside(tmp_path, "attention-sdpa-cudnn",
                    'expect = ["no memcpy"]\n[[trace]]\nmatch = "attention-sdpa-cudnn-*"\n'
                    'expect = ["attention kernel: flash"]\n[[trace]]\nmatch = "other-*"\nexpect = ["mask rebuilt"]\n')
    code, out, err = _check(capsys, str(trace))
    assert code == 1 and "1 of 2 expectations hold" in out and "mask rebuilt" not in out
    assert "attention kernel: cudnn" in err


def test_the_committed_expectations_hold_except_the_auto_guess(capsys) -> None:
    assert (ATTENTION_SAMPLES / "expect.toml").is_file()
    for trace in sorted(ATTENTION_SAMPLES.glob("*.pt.trace.json.gz")):
        code, out, err = _check(capsys, str(trace))
        if trace.name.startswith("attention-sdpa-auto-"):
            # the H100 lets SDPA pick cuDNN where the article's A100 got FlashAttention-2
            assert code == 1 and "attention kernel: cudnn" in err
        else:
            assert code == 0, out + err


@pytest.mark.parametrize(("toml", "message"), [
    ("expect = [", "not valid TOML"),
    ('expect = "no memcpy"', "must be a list of strings"),
    ('[[trace]]\nexpect = ["no memcpy"]', "needs a `match` glob"),
    ('expect = ["kernels per step ~ 1"]', "malformed expectation"),
])
def test_a_bad_expectations_file_is_one_line_and_exit_2(toml, message, tmp_path, capsys) -> None:
    trace = _beside(tmp_path, "attention-sdpa-flash", toml)
    code, _, err = _check(capsys, str(trace))
    assert code == 2 and err.count("\n") == 1 and message in err


def test_without_tomllib_or_tomli_the_file_is_a_clear_error(tmp_path, capsys, monkeypatch) -> None:
    trace = _beside(tmp_path, "attention-sdpa-flash", 'expect = ["no memcpy"]')
    monkeypatch.setitem(sys.modules, "tomllib", None)     # as on Python 3.10 without tomli
    monkeypatch.setitem(sys.modules, "tomli", None)
    code, _, err = _check(capsys, str(trace))
    assert code == 2 and "needs Python 3.11+ or the tomli package" in err
    code, _, _ = _check(capsys, str(trace), "--expect", "no memcpy")   # --expect needs no TOML reader
    assert code == 0


def test_nothing_to_check_is_exit_2(tmp_path, capsys) -> None:
    trace = shutil.copy(attention_sample("attention-sdpa-flash"), tmp_path)
    code, _, err = _check(capsys, str(trace))
    assert code == 2 and "nothing to check" in err


async def test_the_explorer_shows_the_mismatch_first() -> None:
    from app_support import wait_for_screen
    from textual.widgets import Static

    from mlptui.app import make_app
    from mlptui.screens.trace_screen import TraceScreen

    app = make_app([str(attention_sample("attention-sdpa-auto"))])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        header = str(screen.query_one("#trace-header", Static).render()).splitlines()
        assert header[1].strip().startswith("✗ MISMATCH expected 'attention kernel: flash'; the trace shows "
                                            "attention kernel: cudnn")
    app = make_app([str(attention_sample("attention-sdpa-flash"))])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        assert "MISMATCH" not in str(screen.query_one("#trace-header", Static).render())


def test_a_bad_trace_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, out, err = _check(capsys, str(bad), "--expect", "no memcpy")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("mlptui: ")


def test_the_picker_says_why_a_broken_expectations_file_is_not_used(tmp_path) -> None:
    from mlptui.trace.parse.load import load_trace
    from mlptui.viewmodels.expect_lines import expectation_lines
    from mlptui.viewmodels.facts import build_facts

    trace = _beside(tmp_path, "attention-sdpa-flash", 'expect = ["kernels per step ~ 1"]')
    lines = expectation_lines(build_facts(load_trace(trace)))
    assert len(lines) == 1 and lines[0].plain.startswith("expect.toml: ") and "malformed expectation" in lines[0].plain
    (tmp_path / "expect.toml").write_text('expect = ["kernels per step == 2", "no memcpy"]')
    lines = [line.plain for line in expectation_lines(build_facts(load_trace(trace)))]
    assert "MISMATCH" in lines[0] and "kernels 1 in each of 3 steps" in lines[0]
    assert lines[-1].endswith("1 of 2 expectations of expect.toml hold")


def test_a_folder_checks_each_trace_against_its_expect_toml(capsys) -> None:
    code, out, err = _check(capsys, str(ATTENTION_SAMPLES))
    traces = sorted(ATTENTION_SAMPLES.glob("*.pt.trace.json.gz"))
    assert out.count("expectations hold") == len(traces)
    # one guess of the committed file does not hold (SDPA's own choice on the H100): exit 1, one line
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("mlptui: attention-sdpa-auto-") and "attention kernel: cudnn" in err
