"""Copies of remote traces (`host:path`) are bounded and kept where the user can see and clear them:
under MLPTUI_REMOTE_CACHE_MAX_MB (least recently opened go first), a file over the cap or the free space
refused before a byte of it arrives, counted and cleared by `mlptui cache`, never in the current folder
under a relative XDG_CACHE_HOME, never through a link. Through the ssh stand-in (tests/fake_ssh.py runs
the remote script with sh, as sshd would)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import find_sample

from mlptui.base.errors import MlptuiError
from mlptui.sources import dispatch as sources
from mlptui.sources import remote_cache
from mlptui.sources import ssh as remote_ssh

FAKE = Path(__file__).resolve().parent / "fake_ssh.py"
MLPTUI = [sys.executable, "-m", "mlptui.cli"]


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The remote box's folder (the stand-in runs the remote side here) and a private local cache."""
    monkeypatch.setenv("MLPTUI_SSH", f"{sys.executable} {FAKE}")
    monkeypatch.setenv("FAKE_SSH_SHELL", "sh")
    monkeypatch.setenv("MLPTUI_SSH_TIMEOUT", "20")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    box = tmp_path / "box"
    box.mkdir()
    monkeypatch.setenv("FAKE_SSH_HOME", str(box))
    remote_ssh._LISTINGS.clear()
    return box


def _put(box: Path, name: str, size: int) -> Path:
    """A plain-JSON trace of exactly `size` bytes on the box (a small sample, padded with spaces)."""
    data = gzip.decompress(find_sample("linear", "eager").read_bytes())
    assert len(data) <= size
    path = box / name
    path.write_bytes(data + b" " * (size - len(data)))
    return path


def _copies() -> list[Path]:
    root = remote_cache.cache_root()
    return sorted(p for p in root.rglob("*.json") if p.name != "manifest.json") if root.exists() else []


def test_copies_stay_under_the_cap_least_recently_opened_first(remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_REMOTE_CACHE_MAX_MB", "1")
    for name in ("a", "b", "c"):
        _put(remote, f"{name}.json", 400_000)
    sources.open_trace(f"box:{remote}/a.json")
    sources.open_trace(f"box:{remote}/b.json")
    assert sorted(p.name for p in _copies()) == ["a.json", "b.json"]
    os.utime(next(p for p in _copies() if p.name == "b.json"), (1000, 1000))   # b opened long ago
    sources.open_trace(f"box:{remote}/a.json")                                 # a hit: a is the latest opened
    sources.open_trace(f"box:{remote}/c.json")                                 # 1.2 MB: b goes
    assert sorted(p.name for p in _copies()) == ["a.json", "c.json"]
    assert sum(p.stat().st_size for p in remote_cache.cache_root().rglob("*") if p.is_file()) <= 1 << 20


def test_a_file_over_the_cap_is_refused_before_it_is_received(remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_REMOTE_CACHE_MAX_MB", "1")
    _put(remote, "big.json", 1_500_000)
    with pytest.raises(MlptuiError) as err:
        sources.open_trace(f"box:{remote}/big.json")
    assert str(err.value) == (f"box:{remote}/big.json: the remote file is 1.4 MiB, more than the 1.0 MiB remote "
                              "copies may take (MLPTUI_REMOTE_CACHE_MAX_MB)")
    assert not [p for p in remote_cache.cache_root().rglob("*") if p.is_file()]     # not a byte written


def test_a_file_over_the_free_space_is_refused(remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _put(remote, "a.json", 300_000)
    real = os.statvfs

    class Full:
        f_bavail, f_frsize = 10, 4096          # 40 KiB free

    monkeypatch.setattr(remote_cache.os, "statvfs", lambda p: Full() if "remote" in str(p) else real(p))
    with pytest.raises(MlptuiError, match=r"a.json: the remote file is 293.0 KiB, more than the 40.0 KiB free in "):
        sources.open_trace(f"box:{remote}/a.json")


def test_the_cache_command_counts_and_clears_remote_copies(remote: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        _put(remote, f"{name}.json", 200_000)
        sources.open_trace(f"box:{remote}/{name}.json")
    root = remote_cache.cache_root()
    files = [p for p in root.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    show = subprocess.run([*MLPTUI, "cache"], capture_output=True, text=True, env=env, timeout=60)
    assert show.returncode == 0, show.stderr
    assert f"remote copies: {root}\n2 copy(ies), {len(files)} file(s), {total / 1024:.1f} KiB of a 10.0 GiB cap" \
        in show.stdout
    clear = subprocess.run([*MLPTUI, "cache", "clear"], capture_output=True, text=True, env=env, timeout=60)
    assert clear.returncode == 0
    assert f"removed {len(files)} file(s), {total / 1024:.1f} KiB, of remote copies from {root}" in clear.stdout
    assert not [p for p in root.rglob("*") if p.is_file()]


def test_a_relative_xdg_cache_home_never_writes_in_the_current_folder(remote: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("XDG_CACHE_HOME", "rel-cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _put(remote, "a.json", 100_000)
    sources.open_trace(f"box:{remote}/a.json")
    assert list(here.iterdir()) == []
    assert [p.name for p in (tmp_path / "home" / ".cache" / "mlptui" / "remote").rglob("a.json")] == ["a.json"]


def test_a_linked_remote_folder_is_not_used_and_says_so(remote: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache" / "mlptui").mkdir(parents=True)
    (tmp_path / "cache" / "mlptui" / "remote").symlink_to(elsewhere)
    _put(remote, "a.json", 100_000)
    trace = sources.open_trace(f"box:{remote}/a.json")
    assert list(elsewhere.iterdir()) == []
    assert [w for w in trace.warnings if "remote cache not used" in w] == [
        f"remote cache not used: {tmp_path / 'cache' / 'mlptui' / 'remote'} is a symbolic link; "
        "the copy is kept until mlptui exits"]
    assert len(trace.gpu) > 0
