"""mlptui.sources.dispatch without a network: spec parsing and validation, dispatch, the ssh argv we would
run, the remote-shell quoting, local files and folders, and the remote cache's atomic layout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mlptui.base.errors import MlptuiError
from mlptui.sources import dispatch as sources
from mlptui.sources import remote_cache
from mlptui.sources import ssh as remote_ssh
from mlptui.sources.ssh_spec import is_ssh_spec, parse_ssh_spec

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


def _sample(pattern: str) -> Path:
    found = sorted(SAMPLES.glob(pattern))
    if not found:
        pytest.skip(f"no sample trace matching {pattern}")
    return found[0]


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("gpu-box:~/traces/", "ssh"),
        ("me@gpu-box:/t/x.json.gz", "ssh"),
        ("ssh://me@gpu-box:2222/home/me/t/x.json", "ssh"),
        ("hf://datasets/me/traces/run-1/", "hf"),
        ("traces/x.pt.trace.json.gz", "local"),
        ("./a:b.json", "local"),
        ("/abs/a:b.json", "local"),
        ("x.json", "local"),
    ],
)
def test_source_kind(spec: str, kind: str) -> None:
    assert sources.source_kind(spec) == kind


def test_existing_local_file_with_colon_stays_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("box:name.json").write_text("[]")
    assert not is_ssh_spec("box:name.json")
    assert sources.source_kind("box:name.json") == "local"


@pytest.mark.parametrize(
    ("spec", "host", "user", "port", "path"),
    [
        ("gpu-box:~/traces/", "gpu-box", None, None, "~/traces/"),
        ("me@gpu-box:t/x.json", "gpu-box", "me", None, "t/x.json"),
        ("gpu-box:", "gpu-box", None, None, "."),
        ("ssh://me@gpu-box:2222/home/me/t/x.json", "gpu-box", "me", 2222, "/home/me/t/x.json"),
        ("ssh://gpu-box/~/t/x.json", "gpu-box", None, None, "~/t/x.json"),
        ("ssh://[::1]:22/x", "[::1]", None, 22, "/x"),
        ("gpu_1.lab.example:/a b/it's $(x).json", "gpu_1.lab.example", None, None, "/a b/it's $(x).json"),
    ],
)
def test_parse_ssh_spec(spec: str, host: str, user: str | None, port: int | None, path: str) -> None:
    s = parse_ssh_spec(spec)
    assert (s.host, s.user, s.port, s.path) == (host, user, port, path)


@pytest.mark.parametrize(
    "spec",
    [
        "-oProxyCommand=touch pwned:x",
        "ssh://-oProxyCommand=touch%20pwned/x",
        "-lroot:x",
        "host name:x",
        "a$(touch pwned):x",
        "a`id`:x",
        "h;id:x",
        "-@host:x",
        "us er@host:x",
        "ssh://u$(id)@host/x",
        "ssh://host:99999/x",
        "ssh://host:-1/x",
        "ssh://host",
        "ssh://:22/x",
    ],
)
def test_option_like_or_odd_hosts_are_refused(spec: str) -> None:
    with pytest.raises(MlptuiError) as err:
        parse_ssh_spec(spec)
    assert "\n" not in str(err.value)


def test_refused_host_never_reaches_ssh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **kw: calls.append(argv))
    for spec in ("-oProxyCommand=touch pwned:x", "ssh://-oProxyCommand=touch pwned/x"):
        with pytest.raises(MlptuiError, match="refusing host"):
            sources.open_trace(spec)
    assert calls == []
    assert not (tmp_path / "pwned").exists()


def test_spec_for_keeps_the_users_form() -> None:
    assert parse_ssh_spec("me@box:~/t/").spec_for("/home/me/t/a.json") == "me@box:/home/me/t/a.json"
    url = parse_ssh_spec("ssh://me@box:2222/home/me/t/")
    assert url.spec_for("/home/me/t/a.json") == "ssh://me@box:2222/home/me/t/a.json"


@pytest.mark.parametrize(
    ("path", "tilde", "rest"),
    [
        ("~", "h", ""),
        ("~/t/a b.json", "h", "/t/a b.json"),
        ("~bob/t;x", "ubob", "/t;x"),
        ("/a b/c", "-", "/a b/c"),
        ("~$(id)/x", "-", "~$(id)/x"),
        ("x\ntouch y\n", "-", "x\ntouch y\n"),
    ],
)
def test_remote_words_are_plain_words(path: str, tilde: str, rest: str) -> None:
    words = remote_ssh.remote_words(path, "open")
    assert all(re.fullmatch(r"[a-z0-9-]+", w) for w in words)
    mode, encoded, size, mtime, tilde_word = words
    assert (mode, size, mtime) == ("open", "-", "-")
    assert bytes(int(encoded[1 + i:4 + i], 8) for i in range(0, len(encoded) - 1, 3)).decode() == rest
    if tilde.startswith("u"):
        assert tilde_word == "u" + "".join(f"{b:03o}" for b in tilde[1:].encode())
    else:
        assert tilde_word == tilde


def test_argv_has_host_after_double_dash_and_user_options_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_SSH", "ssh -F '/tmp/my config' -o ConnectTimeout=3")
    argv = remote_ssh.build_argv(parse_ssh_spec("ssh://me@box:2222/a b/x.json"), "open")
    assert argv[:5] == ["ssh", "-F", "/tmp/my config", "-o", "ConnectTimeout=3"]
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "me"
    assert argv[-3:-1] == ["--", "box"]
    remote = argv[-1].split(" ")
    assert remote == ["sh", "-s", *remote_ssh.remote_words("/a b/x.json", "open")]


def test_default_ssh_and_bad_mlptui_ssh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLPTUI_SSH", raising=False)
    assert remote_ssh.ssh_command() == ["ssh"]
    monkeypatch.setenv("MLPTUI_SSH", "ssh -F 'unclosed")
    with pytest.raises(MlptuiError, match="MLPTUI_SSH"):
        remote_ssh.ssh_command()


def test_ssh_errors_become_one_line() -> None:
    cases = {
        "ssh: connect to host 10.0.0.1 port 22: Connection refused\n": "connection refused",
        "ssh: Could not resolve hostname nope: Name or service not known\n": "cannot resolve",
        "me@box: Permission denied (publickey).\n": "authentication failed",
        "ssh: connect to host box port 22: Connection timed out\n": "unreachable",
        "Host key verification failed.\n": "host key",
    }
    for stderr, needle in cases.items():
        msg = remote_ssh.explain_ssh_error(255, stderr, "no answer")
        assert needle in msg and "\n" not in msg


def test_local_open_and_list() -> None:
    pytest.importorskip("mlptui.trace.parse.discover")
    path = _sample("mlp-eager-*.pt.trace.json.gz")
    trace = sources.open_trace(str(path))
    assert trace.source == str(path)
    assert trace.ops and trace.gpu and trace.steps
    assert not sources.is_folder(str(path))
    assert sources.is_folder(str(SAMPLES))
    listed = sources.list_traces(str(SAMPLES))
    assert str(path) in listed
    assert all(not p.endswith("manifest.json") for p in listed)


def test_local_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(MlptuiError, match="no such file"):
        sources.open_trace(str(tmp_path / "missing.json"))
    with pytest.raises(MlptuiError, match="folder"):
        sources.open_trace(str(tmp_path))
    with pytest.raises(MlptuiError, match="not a folder"):
        sources.list_traces(str(tmp_path / "missing"))


def test_progress_is_reported_for_local_files() -> None:
    seen: list[tuple[int, int]] = []
    sources.open_trace(str(_sample("linear-eager-*.pt.trace.json.gz")), progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 0


def test_cache_writes_atomically_and_keeps_newest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert remote_cache.cache_root() == tmp_path / "mlptui" / "remote"
    assert remote_cache.lookup("box", "/t/a.json") is None
    w = remote_cache.CacheWriter("box", "/t/a.json", 5, 100)
    w.write(b"hello")
    assert remote_cache.lookup("box", "/t/a.json") is None  # nothing visible before the rename
    first = w.commit()
    assert first.name == "a.json" and first.read_bytes() == b"hello"
    assert remote_cache.lookup("box", "/t/a.json") == remote_cache.CachedCopy(5, 100, first)
    w2 = remote_cache.CacheWriter("box", "/t/a.json", 3, 200)
    w2.write(b"new")
    w2.write_manifest(b'{"mlptui_manifest": 1, "runs": []}')
    second = w2.commit()
    assert remote_cache.lookup("box", "/t/a.json") == remote_cache.CachedCopy(3, 200, second)
    assert not first.exists() and (second.parent / "manifest.json").exists()
    w3 = remote_cache.CacheWriter("box", "/t/a.json", 9, 300)
    w3.write(b"half")
    w3.abort()
    assert remote_cache.lookup("box", "/t/a.json").path == second
    assert [p.name for p in second.parent.parent.iterdir()] == ["3-200"]
    # Another host or path is another key.
    assert remote_cache.lookup("other", "/t/a.json") is None
