"""The remote command under any login shell, and a remote that answers wrongly.

A fake `ssh` (tests/fake_ssh.py) runs the remote command line with `sh -c` or `tcsh -c`, as sshd does
with the user's login shell. Remote file names holding a newline, `!`, quotes, `$()` and backticks are
listed and opened as plain names, each the right file, and nothing runs (no marker file appears).
Then the fake answers like a broken or hostile remote: every answer ends in one line, never a
traceback, and nothing past the announced size reaches the cache.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from mlptui.base.errors import MlptuiError
from mlptui.sources import dispatch as sources
from mlptui.sources import ssh as remote_ssh

FAKE = Path(__file__).resolve().parent / "fake_ssh.py"
MARK = f"pwned{os.getpid()}"

HOSTILE_NAMES = [
    f"x\ntouch {MARK}-nl\n.json",
    f"bang!{MARK}!!.json",
    "it's \"quoted\".json",
    f"$(touch {MARK}-a).json",
    f"`touch {MARK}-b`.json",
    f"semi;touch {MARK}-c;.json",
    f"pct%s%n\\n{MARK}.json",
]


def _trace(kernel: str) -> bytes:
    """A minimal trace whose one kernel is named `kernel` (tells which file was opened)."""
    return json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": 1, "dur": 2,
         "args": {"correlation": 1}}]}).encode()


def _markers(*folders: Path) -> list[Path]:
    return [p for f in folders if f.is_dir() for p in f.rglob(f"{MARK}*")]


@pytest.fixture
def fake_ssh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("MLPTUI_SSH", f"{sys.executable} {FAKE}")
    monkeypatch.setenv("MLPTUI_SSH_TIMEOUT", "10")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("FAKE_SSH_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    remote_ssh._LISTINGS.clear()
    return home


@pytest.mark.parametrize("shell", ["sh", "bash", "tcsh", "csh", "zsh", "mksh", "fish"])
def test_hostile_names_run_nothing_and_open_the_right_file(
        fake_ssh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shell: str) -> None:
    if shutil.which(shell) is None:
        # sh and tcsh are always there in CI (.ci/run installs tcsh); the others are checked where present.
        assert not (os.environ.get("CI") and shell in ("sh", "tcsh")), f"{shell} is missing: .ci/run installs it"
        pytest.skip(f"{shell} is not installed here")
    monkeypatch.setenv("FAKE_SSH_SHELL", shell)
    folder = tmp_path / "remote traces"
    folder.mkdir()
    for i, name in enumerate(HOSTILE_NAMES):
        (folder / name).write_bytes(_trace(f"kernel_{i}"))
    listed = sources.list_traces(f"box:{folder}/")
    assert listed == sorted(f"box:{folder}/{name}" for name in HOSTILE_NAMES)
    for i, name in enumerate(HOSTILE_NAMES):
        trace = sources.open_trace(f"box:{folder}/{name}")
        assert [g.name for g in trace.gpu] == [f"kernel_{i}"]
    # Hostile paths that do not exist: one line, nothing runs.
    for path in [f"{folder}/y\ntouch {MARK}-p\n", f"{folder}/!{MARK}-q", f"~/$(touch {MARK}-r)",
                 f"~nosuchuser$(touch {MARK}-s)/x", f"{folder}/'\"`touch {MARK}-t`"]:
        with pytest.raises(MlptuiError, match="no such file or folder") as err:
            sources.open_trace(f"box:{path}")
        assert "\n" not in str(err.value)
    assert _markers(tmp_path, fake_ssh) == []


def test_tilde_expands_on_the_remote_side(fake_ssh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SSH_SHELL", "sh")
    monkeypatch.setenv("HOME", str(fake_ssh))
    (fake_ssh / "t").mkdir()
    (fake_ssh / "t" / "a b.json").write_bytes(_trace("home_kernel"))
    assert [g.name for g in sources.open_trace("box:~/t/a b.json").gpu] == ["home_kernel"]
    assert [g.name for g in sources.open_trace("box:t/a b.json").gpu] == ["home_kernel"]   # relative: home


def _answer(monkeypatch: pytest.MonkeyPatch, answer: bytes, stderr: str = "", exit_code: int = 0) -> None:
    monkeypatch.delenv("FAKE_SSH_SHELL", raising=False)
    path = Path(os.environ["FAKE_SSH_HOME"]).parent / "answer.bin"
    path.write_bytes(answer)
    monkeypatch.setenv("FAKE_SSH_ANSWER", str(path))
    monkeypatch.setenv("FAKE_SSH_STDERR", stderr)
    monkeypatch.setenv("FAKE_SSH_EXIT", str(exit_code))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"", "no answer"),
        (b"MLPTUI1 {nonce} \n", "malformed answer"),
        (b"MLPTUI1 {nonce} DATA\n", "malformed answer"),
        (b"MLPTUI1 {nonce} DATA x 1 0 raw\n", "malformed answer"),
        (b"MLPTUI1 {nonce} DATA 10 1 0 zstd\n", "malformed answer"),
        (b"MLPTUI1 {nonce} DATA -5 1 0 raw\n", "malformed answer"),
        (b"MLPTUI1 {nonce} DATA 1 1 99999999999 raw\n", "malformed answer"),
        (b"MLPTUI1 {nonce} SAME 1 1 0 raw\n", "malformed answer"),      # we offered no cached copy
        (b"MLPTUI1 {nonce} WHAT\n", "malformed answer"),
        (b"MLPTUI1 {nonce} ERR\n", "malformed answer"),
        (b"MLPTUI1 {nonce} ERR \x1b[31mred\n", "remote error"),
        # A login banner that imitates the protocol is skipped: it cannot know the nonce.
        (b"MLPTUI1 DATA 3 1 0 raw\nabc" + b"MLPTUI1 {nonce} ERR nofile\n", "no such file or folder"),
        (b"MLPTUI1 {nonce} DATA 5 1 0 raw\nab", "received 2 of 5 bytes"),
    ],
)
def test_malformed_answers_are_one_line(fake_ssh: Path, monkeypatch: pytest.MonkeyPatch, answer: bytes,
                                        message: str) -> None:
    _answer(monkeypatch, answer)
    with pytest.raises(MlptuiError, match=message) as err:
        sources.open_trace("box:/t/x.json")
    text = str(err.value)
    assert "\n" not in text and "\x1b" not in text


def _cache_files(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


@pytest.mark.parametrize("gzipped", [False, True])
def test_more_bytes_than_announced_are_never_written(fake_ssh: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, gzipped: bool) -> None:
    body = _trace("k") + b" " * (8 << 20)        # announced: the trace alone
    sent = gzip.compress(body) if gzipped else body
    header = f"MLPTUI1 {{nonce}} DATA {len(_trace('k'))} 1 0 {'gzip' if gzipped else 'raw'}\n".encode()
    _answer(monkeypatch, header + sent)
    with pytest.raises(MlptuiError, match="more than the .* bytes it announced"):
        sources.open_trace("box:/t/x.json")
    assert _cache_files(tmp_path) == []          # the partial copy is gone, nothing was committed


def test_exact_answer_is_accepted(fake_ssh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _trace("exact_kernel")
    _answer(monkeypatch, f"MLPTUI1 {{nonce}} DATA {len(data)} 1 0 gzip\n".encode() + gzip.compress(data))
    assert [g.name for g in sources.open_trace("box:/t/x.json").gpu] == ["exact_kernel"]


def test_ssh_error_text_is_one_printable_line(fake_ssh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _answer(monkeypatch, b"", stderr="first\n\x1b]0;owned\x07\x1b[2Jbad things\n", exit_code=255)
    with pytest.raises(MlptuiError) as err:
        sources.open_trace("box:/t/x.json")
    text = str(err.value)
    assert "\n" not in text and "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2Jbad things" in text


def test_an_endless_listing_is_refused(fake_ssh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_ssh, "LISTING_MAX", 1 << 20)
    _answer(monkeypatch, b"MLPTUI1 {nonce} DIR\n" + b"/t/x.json\0" * 200_000)
    with pytest.raises(MlptuiError, match="the folder listing is over 1 MB; refused"):
        sources.list_traces("box:/t/")


def test_an_unwritable_local_cache_is_one_line(fake_ssh: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    data = _trace("k")
    _answer(monkeypatch, f"MLPTUI1 {{nonce}} DATA {len(data)} 1 0 raw\n".encode() + data)
    with pytest.raises(MlptuiError, match="cannot write the local copy in .*: Not a directory"):
        sources.open_trace("box:/t/x.json")
