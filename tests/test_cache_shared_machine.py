"""The caches on a machine shared with other users: what they hold (a trace's op and kernel names) is
readable by no one else, whatever the umask, and the process umask is never touched to get there; a
cache folder that is a link, another user's, or writable by others is refused in one line and the
trace opened without it; nothing outside the cache is ever deleted. The second-user cases run as
`nobody` (a forked child that drops to its uid) where the tests run as root and the machine has one."""

from __future__ import annotations

import gzip
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import find_sample

from mlptui.base import files
from mlptui.sources import remote_cache
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.load import load_trace
from mlptui.trace.runs import digest_cache

MLPTUI = [sys.executable, "-m", "mlptui.cli"]


def _nobody() -> int | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


NOBODY = _nobody()
as_second_user = pytest.mark.skipif(NOBODY is None, reason="needs root to become a second user (nobody)")


def run_as_nobody(action: Callable[[], Any]) -> str:
    """Run `action` in a forked child as the user nobody; what it returned, or the error it raised, as text."""
    assert NOBODY is not None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:           # the child: drop to nobody, act, report, never return into pytest
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            out = f"ok {action()}"
        except BaseException as exc:            # noqa: BLE001 - reported to the parent
            out = f"error {type(exc).__name__}"
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read().decode()
    os.waitpid(pid, 0)
    return text


@pytest.fixture
def shared_base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache base every user can write, like /tmp (sticky, 1777): XDG_CACHE_HOME shared by mistake."""
    base = Path(tempfile.mkdtemp(prefix="shared-cache-", dir="/tmp"))
    base.chmod(0o1777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(base))
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    src = find_sample("mlp", "train")
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_entries_are_0600_and_folders_0700_under_a_loose_umask(cache_home: Path, trace_file: Path) -> None:
    old = os.umask(0o002)         # a common login umask: files 0664, folders 0775
    try:
        load_trace(trace_file)
        key = index_cache.file_key(trace_file)
        assert digest_cache.store(trace_file, key, {"rank": 0})
        writer = remote_cache.CacheWriter("box", "/t/a.json", 3, 100)
        writer.write(b"abc")
        writer.write_manifest(b"{}")
        copy = writer.commit()
    finally:
        os.umask(old)
    folder = index_cache.cache_dir()
    assert [_mode(p) for p in (folder.parent, folder, copy.parent.parent.parent, copy.parent.parent, copy.parent)] \
        == [0o700] * 5
    assert _mode(index_cache.entry_path(trace_file)) == 0o600
    assert _mode(digest_cache.entry_path(trace_file)) == 0o600
    assert _mode(copy) == 0o600 and _mode(copy.parent / "manifest.json") == 0o600


def test_the_process_umask_is_never_changed(cache_home: Path, trace_file: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting the umask to 0 for an instant (to read it) sets it for every thread: a folder another thread
    makes meanwhile comes out 0777."""
    calls: list[int] = []
    real = os.umask
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real(mask))
    old = real(0o027)
    try:
        load_trace(trace_file)
        made = files.temp_path(tmp_path, "x.csv")
        files.write_atomic(tmp_path / "y.json", b"{}")
    finally:
        real(old)
    assert index_cache.entry_path(trace_file).exists()
    assert calls == []
    assert _mode(made) == _mode(tmp_path / "y.json") == 0o640        # a normal file still takes the umask


def test_an_open_folder_of_ones_own_is_made_private(cache_home: Path, trace_file: Path) -> None:
    folder = index_cache.cache_dir()
    folder.mkdir(parents=True)
    for p in (folder.parent, folder):
        p.chmod(0o755)                 # as an earlier version made it
    load_trace(trace_file)
    assert _mode(folder.parent) == _mode(folder) == 0o700
    assert index_cache.lookup(trace_file, "x") is not None


def _summary(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MLPTUI, "summary", str(path)], capture_output=True, text=True, env=env, timeout=60)


def _big_trace(tmp_path: Path) -> Path:
    """The train sample as plain JSON padded past the cache's MIN_BYTES (whitespace after the document)."""
    data = gzip.decompress(find_sample("mlp", "train").read_bytes())
    path = tmp_path / "big.pt.trace.json"
    path.write_bytes(data + b" " * max(0, index_cache.MIN_BYTES + 1 - len(data)))
    return path


def test_a_folder_writable_by_others_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "xdg"
    folder = home / "mlptui" / "index"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    trace = _big_trace(tmp_path)
    env = {**os.environ, "XDG_CACHE_HOME": str(home)}
    env.pop("MLPTUI_NO_CACHE", None)
    out = _summary(trace, env)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stdout.splitlines() if "index cache not used" in line]
    assert warned == [f"warning: index cache not used: {folder} can be written by other users (mode 777); "
                      f"`chmod 700 {folder}` if only you did; working without it"]
    assert list(folder.iterdir()) == []                    # nothing written into it
    again = _summary(trace, env)                           # and the next run is the same, uncached
    assert again.stdout == out.stdout
    show = subprocess.run([*MLPTUI, "cache"], capture_output=True, text=True, env=env, timeout=60)
    assert show.returncode == 2 and show.stderr.count("\n") == 1 and "can be written by other users" in show.stderr


def test_group_write_counts_only_for_a_group_shared_with_others(cache_home: Path, trace_file: Path) -> None:
    """Under the user-private-group convention (a group named as the user, no other member, umask 002)
    group write is the user's own: such a folder is used and made 0700. Any other group is others."""
    import grp

    me = pwd.getpwuid(os.geteuid()).pw_name
    own = grp.getgrgid(os.getegid())
    folder = index_cache.cache_dir()
    folder.mkdir(parents=True)
    for p in (folder.parent, folder):
        p.chmod(0o775)
    if own.gr_name == me and set(own.gr_mem) <= {me}:
        assert not [w for w in load_trace(trace_file).warnings if "cache" in w]
        assert _mode(folder) == 0o700 and index_cache.lookup(trace_file, "x") is not None
    shared = next((g for g in grp.getgrall() if g.gr_name != me and g.gr_gid != os.getegid()), None)
    if shared is None or os.geteuid() != 0:
        return                      # only root may give its folder to another group
    folder.chmod(0o775)
    os.chown(folder, -1, shared.gr_gid)
    warnings = [w for w in load_trace(trace_file).warnings if "cache" in w]
    assert warnings == [f"index cache not used: {folder} can be written by other users (mode 775); "
                        f"`chmod 700 {folder}` if only you did; working without it"]


def _victims(folder: Path) -> list[Path]:
    """Files shaped like the cache's own (an hour-old temp file, entries) in a folder outside it."""
    folder.mkdir(parents=True, exist_ok=True)
    victims = [folder / ".tmp-report.csv", folder / ("0123456789abcdef" * 2 + ".npz"),
               folder / ("fedcba9876543210" * 2 + ".digest.json")]
    for v in victims:
        v.write_bytes(b"precious" * 1000)
        os.utime(v, (time.time() - 7200, time.time() - 7200))
    return victims


def test_a_symlinked_cache_folder_deletes_nothing_where_it_leads(tmp_path: Path, trace_file: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "xdg"
    (home / "mlptui").mkdir(parents=True)
    victims = _victims(tmp_path / "elsewhere")
    (home / "mlptui" / "index").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", "0")           # every entry but the newest must go
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    trace = load_trace(trace_file)
    assert all(v.exists() for v in victims)
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == sorted(v.name for v in victims)
    assert f"index cache not used: {home / 'mlptui' / 'index'} is a symbolic link; working without it" \
        in trace.warnings
    env = {**os.environ, "XDG_CACHE_HOME": str(home)}
    clear = subprocess.run([*MLPTUI, "cache", "clear"], capture_output=True, text=True, env=env, timeout=60)
    assert clear.returncode == 2 and clear.stderr.count("\n") == 1 and "is a symbolic link" in clear.stderr
    assert all(v.exists() for v in victims)


def _swapped_entry(a: Path, b: Path) -> bytes:
    """An entry that says it is trace a's (a's key) and holds trace b's columns: what someone who can write
    the folder would plant to show other figures for a."""
    load_trace(b)
    with np.load(index_cache.entry_path(b), allow_pickle=False) as npz:
        cols = {k: npz[k] for k in npz.files}
    index_cache.entry_path(b).unlink()
    cols["key"] = np.frombuffer(__import__("orjson").dumps(index_cache.file_key(a)), dtype=np.uint8)
    swapped = a.parent / "swapped.npz"
    with open(swapped, "wb") as f:
        np.savez(f, allow_pickle=False, **cols)
    return swapped.read_bytes()


@as_second_user
def test_another_users_folder_is_refused_and_its_entries_never_served(shared_base: Path, trace_file: Path,
                                                                      tmp_path: Path) -> None:
    other = tmp_path / "other.pt.trace.json.gz"
    shutil.copyfile(find_sample("linear", "eager"), other)
    fresh = load_trace(trace_file)
    index_cache.entry_path(trace_file).unlink()
    shutil.rmtree(shared_base / "mlptui")
    planted = _swapped_entry(trace_file, other)
    shutil.rmtree(shared_base / "mlptui")
    entry_name = index_cache.entry_path(trace_file).name

    def plant() -> str:
        folder = shared_base / "mlptui" / "index"
        folder.mkdir(parents=True)
        for p in (folder.parent, folder):
            p.chmod(0o755)
        (folder / entry_name).write_bytes(planted)
        return "planted"

    assert run_as_nobody(plant) == "ok planted"
    opened = load_trace(trace_file)
    assert [g.name for g in opened.gpu] == [g.name for g in fresh.gpu]          # its own figures, not the plant's
    folder = shared_base / "mlptui"
    assert f"index cache not used: {folder} belongs to user nobody ({NOBODY}), not to you; working without it" \
        in opened.warnings
    assert sorted(p.name for p in (folder / "index").iterdir()) == [entry_name]  # nothing written there


@as_second_user
def test_another_user_cannot_read_what_the_cache_holds(shared_base: Path, trace_file: Path) -> None:
    load_trace(trace_file)
    entry = index_cache.entry_path(trace_file)
    assert entry.exists()

    def peek() -> str:
        return str(len(entry.read_bytes()))

    def listing() -> str:
        return str(os.listdir(entry.parent))

    assert run_as_nobody(peek) == "error PermissionError"
    assert run_as_nobody(listing) == "error PermissionError"


@as_second_user
def test_another_users_symlink_deletes_nothing_of_yours(shared_base: Path, trace_file: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    victims = _victims(tmp_path / "mine")
    target = tmp_path / "mine"

    def plant() -> str:
        (shared_base / "mlptui").mkdir()
        (shared_base / "mlptui" / "index").symlink_to(target)
        return "planted"

    assert run_as_nobody(plant) == "ok planted"
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", "0")
    trace = load_trace(trace_file)
    assert all(v.exists() for v in victims) and len(list(target.iterdir())) == len(victims)
    assert any("index cache not used" in w and "belongs to user nobody" in w for w in trace.warnings)
