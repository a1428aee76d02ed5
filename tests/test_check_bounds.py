"""`mlptui check` reads only what an expectations file can be: a regular file of at most 1 MiB, whose
counts have at most 9 digits. A named pipe hung the command, `/dev/zero` read until memory ran out, and a
100,000-digit count (in --expect, or an integer in the TOML) ended in "internal error"; each is now one
line and exit 2."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import find_sample

from mlptui.cli import main

TRACE = str(find_sample("linear", "eager", "bf16"))
HUGE = "9" * 100_000


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", TRACE, *argv])
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and len(err) < 400, err[:400]
    return code, err


def test_a_count_of_100k_digits_is_a_malformed_expectation(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _check(capsys, "--expect", f"kernels per step == {HUGE}")
    assert code == 2 and err.startswith("mlptui: malformed expectation 'kernels per step == 9999")
    assert "N is a whole number of at most 9 digits" in err


@pytest.mark.parametrize(("toml", "message"), [
    (f'expect = ["launches per step < {HUGE}"]', "N is a whole number of at most 9 digits"),
    (f"expect = {HUGE}", "not valid TOML: a number too long to read"),
    (f'expect = ["no memcpy"]\nbig = {HUGE}', "not valid TOML: a number too long to read"),
], ids=["count-in-a-string", "toml-integer", "toml-integer-beside"])
def test_a_huge_number_in_the_file_is_one_line(toml: str, message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "expect.toml"
    file.write_text(toml)
    code, err = _check(capsys, "--expectations", str(file))
    assert code == 2 and message in err


def test_a_file_over_1_mib_or_a_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.toml"
    big.write_text('expect = ["no memcpy"]\n' + "# padding\n" * 120_000)
    code, err = _check(capsys, "--expectations", str(big))
    assert code == 2 and "more than the 1048576 this file may have" in err
    code, err = _check(capsys, "--expectations", str(tmp_path))
    assert code == 2 and "is a folder, not an expectations file" in err


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))      # /dev/zero read whole fails, not the machine


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_named_pipe_or_a_device_is_refused_before_any_read(kind: str, tmp_path: Path) -> None:
    path = "/dev/zero"
    if kind == "fifo":
        path = str(tmp_path / "expect.toml")
        os.mkfifo(path)                 # nobody writes it: a read would wait forever
    out = subprocess.run([sys.executable, "-m", "mlptui.cli", "check", TRACE, "--expectations", path],
                         capture_output=True, text=True, timeout=60, preexec_fn=_limited)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr[-500:]
    assert "not a regular file; only regular files are read" in out.stderr
