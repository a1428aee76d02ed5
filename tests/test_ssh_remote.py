"""Remote traces through a real sshd on 127.0.0.1 (tests/sshd_fixture.py): what comes over ssh equals
what is read locally, folders list, the cache makes reopening cheap, errors are one line and quick."""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from sshd_fixture import Sshd, ssh_env_fixture, sshd_fixture  # noqa: F401

from mlptui.base.errors import MlptuiError
from mlptui.sources import dispatch as sources
from mlptui.sources import ssh as remote_ssh

pytestmark = pytest.mark.ssh

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"
MLPTUI = [sys.executable, "-m", "mlptui.cli"]


def _sample(pattern: str) -> Path:
    found = sorted(SAMPLES.glob(pattern))
    if not found:
        pytest.skip(f"no sample trace matching {pattern}")
    return found[0]


def fingerprint(trace) -> dict:
    """What a reader of the trace sees, minus where the bytes came from."""
    fp = {
        "ops": len(trace.ops),
        "gpu": len(trace.gpu),
        "op_names": Counter(op.name for op in trace.ops),
        "gpu_names": Counter(g.name for g in trace.gpu),
        "steps": [(s.name, round(s.dur, 3)) for s in trace.steps],
        "device": trace.device,
        "threads": len(trace.threads),
        "streams": len(trace.streams),
        "gpu_us": round(sum(g.dur for g in trace.gpu), 3),
    }
    try:
        from mlptui.trace.analysis.steps.steps import all_step_stats
    except ImportError:
        return fp
    fp["step_stats"] = [(s.name, round(s.gpu_busy_us, 3), s.kernels, s.launches) for s in all_step_stats(trace)]
    return fp


def test_remote_trace_equals_local(ssh_env: Sshd) -> None:
    path = _sample("mlp-eager-*.pt.trace.json.gz")
    local = sources.open_trace(str(path))
    seen: list[tuple[int, int]] = []
    remote = sources.open_trace(f"testbox:{path}", progress=lambda d, t: seen.append((d, t)))
    assert remote.source == f"testbox:{path}"
    assert fingerprint(remote) == fingerprint(local)
    assert remote.manifest == local.manifest
    assert seen and seen[0] == (0, path.stat().st_size)   # streaming progress, then the loader's own
    url = sources.open_trace(f"ssh://{ssh_env.user}@testbox:{ssh_env.port}{path}")
    assert fingerprint(url) == fingerprint(local)


def test_plain_json_is_compressed_on_the_wire_and_stored_as_is(ssh_env: Sshd, tmp_path: Path) -> None:
    src = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    plain = tmp_path / "remote" / "plain.pt.trace.json"
    plain.parent.mkdir()
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    copy = remote_ssh.fetch(f"testbox:{plain}")
    assert copy.read_bytes() == plain.read_bytes()
    assert fingerprint(sources.open_trace(f"testbox:{plain}")) == fingerprint(sources.open_trace(str(src)))


def test_cache_reuses_the_copy_and_notices_changes(ssh_env: Sshd, tmp_path: Path) -> None:
    src = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    remote = tmp_path / "r" / src.name
    remote.parent.mkdir()
    shutil.copy(src, remote)
    first = remote_ssh.fetch(f"testbox:{remote}")
    assert first.is_relative_to(tmp_path / "cache" / "mlptui" / "remote")
    inode = first.stat().st_ino       # not the mtime: a copy opened again is touched, its recency for the cap
    progress: list[tuple[int, int]] = []
    again = remote_ssh.fetch(f"testbox:{remote}", progress=lambda d, t: progress.append((d, t)))
    assert again == first and again.stat().st_ino == inode and progress == []   # nothing streamed, not rewritten
    # A new version of the remote file (other bytes, other mtime) is fetched and replaces the old copy.
    other = _sample("linear-compile-*.pt.trace.json.gz")
    shutil.copy(other, remote)
    os.utime(remote, (time.time() + 5, time.time() + 5))
    newer = remote_ssh.fetch(f"testbox:{remote}")
    assert newer.read_bytes() == other.read_bytes() and not first.exists()


def test_cached_copy_is_used_when_the_host_is_unreachable(ssh_env: Sshd, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    src = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    copy = remote_ssh.fetch(f"testbox:{src}")
    # Same endpoint name, but the port is now closed.
    cfg = tmp_path / "closed_config"
    cfg.write_text(ssh_env.config.read_text().replace(f"Port {ssh_env.port}", f"Port {_closed_port()}"))
    monkeypatch.setenv("MLPTUI_SSH", f"ssh -F {cfg}")
    assert remote_ssh.fetch(f"testbox:{src}") == copy
    trace = sources.open_trace(f"testbox:{src}")
    assert any(w.startswith("showing the cached copy") and "connection refused" in w for w in trace.warnings)
    with pytest.raises(MlptuiError, match="connection refused"):
        remote_ssh.fetch(f"testbox:{src}.other")


def test_remote_folder_listing(ssh_env: Sshd, tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    (folder / "sub").mkdir(parents=True)
    src = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    names = ["a.pt.trace.json.gz", "b c.pt.trace.json", "UPPER.JSON"]
    for name in names + ["sub/d.pt.trace.json.gz", ".hidden.pt.trace.json.gz"]:
        shutil.copy(src, folder / name)
    (folder / "linked.pt.trace.json.gz").symlink_to(folder / "a.pt.trace.json.gz")
    names.append("linked.pt.trace.json.gz")
    (folder / "notes.txt").write_text("not a trace")
    (folder / "manifest.json").write_text('{"mlptui_manifest": 1, "runs": []}')
    spec = f"testbox:{folder}"
    assert sources.is_folder(spec) and sources.is_folder(spec + "/")
    listed = sources.list_traces(spec + "/")
    assert listed == sorted(f"testbox:{folder}/{n}" for n in names)
    # The same files a local listing of that folder finds (directly inside it, by name).
    assert listed == sorted(f"testbox:{p}" for p in sources.list_traces(str(folder)))
    assert not sources.is_folder(listed[0])
    # The same folder through ssh://, answered in that form.
    url = f"ssh://testbox:{ssh_env.port}{folder}"
    assert sources.list_traces(url) == sorted(f"ssh://testbox:{ssh_env.port}{folder}/{n}" for n in names)
    with pytest.raises(MlptuiError, match="not a folder"):
        sources.list_traces(listed[0])
    with pytest.raises(MlptuiError, match="is a folder"):
        sources.open_trace(spec)


def test_tilde_and_relative_paths_expand_on_the_remote_side(ssh_env: Sshd) -> None:
    src = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    home_dir = Path(ssh_env.home)
    folder = Path(os.path.realpath(home_dir)) / f".mlptui-test-{os.getpid()}"
    folder.mkdir()
    try:
        shutil.copy(src, folder / "x y.pt.trace.json.gz")
        rel = f"{folder.name}/x y.pt.trace.json.gz"
        expected = fingerprint(sources.open_trace(str(src)))
        assert fingerprint(sources.open_trace(f"testbox:~/{rel}")) == expected
        assert fingerprint(sources.open_trace(f"testbox:{rel}")) == expected           # relative to home, as scp
        assert fingerprint(sources.open_trace(f"ssh://testbox/~/{rel}")) == expected   # as git's ssh URLs
        assert sources.list_traces(f"testbox:~/{folder.name}") == [f"testbox:{folder}/x y.pt.trace.json.gz"]
    finally:
        shutil.rmtree(folder)


def test_missing_file_and_folder_as_file(ssh_env: Sshd, tmp_path: Path) -> None:
    with pytest.raises(MlptuiError) as err:
        sources.open_trace(f"testbox:{tmp_path}/missing.pt.trace.json.gz")
    assert str(err.value) == f"testbox:{tmp_path}/missing.pt.trace.json.gz: no such file or folder"
    with pytest.raises(MlptuiError, match="no such file"):
        sources.list_traces(f"testbox:{tmp_path}/missing/")


def test_permission_denied_is_reported(ssh_env: Sshd) -> None:
    # A folder anyone may enter (pytest's tmp folders are private), holding a file no one may read.
    open_dir = Path(tempfile.mkdtemp(prefix="mlptui-perm-"))
    try:
        open_dir.chmod(0o755)
        secret = open_dir / "secret.pt.trace.json"
        secret.write_text("[]")
        secret.chmod(0)
        if os.geteuid() != 0:
            with pytest.raises(MlptuiError, match="permission denied"):
                sources.open_trace(f"testbox:{secret}")
            return
        # root reads everything, so run the same remote script as an unprivileged user to see its answer.
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root and setpriv is missing")
        out = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-s",
                              *remote_ssh.remote_words(str(secret), "open")],
                             input=remote_ssh.remote_script("abc"), capture_output=True, timeout=10, cwd="/")
        assert out.stdout == b"MLPTUI1 abc ERR perm\n"
        err = remote_ssh._error(remote_ssh.parse_ssh_spec(f"box:{secret}"), ["ERR", "perm"])
        assert str(err) == f"box:{secret}: permission denied"
    finally:
        shutil.rmtree(open_dir)


def test_auth_failure_is_one_line(sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    cfg = tmp_path / "cfg"
    # No shared connection here: the test's master connection is already authenticated.
    cfg.write_text(sshd.config.read_text().replace(str(sshd.key), str(stranger))
                   .replace("ControlMaster auto", "ControlMaster no").replace("ControlPath ", "ControlPath none #"))
    monkeypatch.setenv("MLPTUI_SSH", f"ssh -F {cfg}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(MlptuiError) as err:
        sources.open_trace("testbox:/x.json")
    assert "authentication failed" in str(err.value) and "\n" not in str(err.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wrong_port_exits_2_with_one_line(sshd: Sshd, tmp_path: Path) -> None:
    port = _closed_port()
    env = sshd.env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    start = time.monotonic()
    out = subprocess.run(MLPTUI + ["perfetto", f"ssh://127.0.0.1:{port}/x.pt.trace.json.gz"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert time.monotonic() - start < 15
    assert out.returncode == 2
    assert out.stderr == f"mlptui: ssh://127.0.0.1:{port}/x.pt.trace.json.gz: connection refused " \
                         "(is sshd running there, on that port?)\n"


def test_silent_server_hits_the_watchdog(sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A port that accepts connections and never says a word: ssh would wait; the watchdog must not.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True).start()
    monkeypatch.setenv("MLPTUI_SSH", f"ssh -F {sshd.config}")
    monkeypatch.setenv("MLPTUI_SSH_TIMEOUT", "2")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    start = time.monotonic()
    try:
        with pytest.raises(MlptuiError) as err:
            sources.open_trace(f"ssh://127.0.0.1:{server.getsockname()[1]}/x.json")
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert time.monotonic() - start < 6
    assert "\n" not in str(err.value)
    assert "timed out" in str(err.value) or "no answer" in str(err.value)


def _cli_json(args: list[str], env: dict[str, str]) -> dict:
    import json

    out = subprocess.run(MLPTUI + args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _without_where(value, where: set[str]):
    """The report with every mention of where the file was read from taken out."""
    if isinstance(value, dict):
        return {k: _without_where(v, where) for k, v in value.items() if k not in ("source", "path")}
    if isinstance(value, list):
        return [_without_where(v, where) for v in value]
    if isinstance(value, str) and value in where:
        return "<source>"
    return value


@pytest.mark.skipif(not (ROOT / "tui" / "mlptui" / "commands" / "summary.py").exists(), reason="mlptui summary not built")
def test_remote_summary_cli_equals_local(sshd: Sshd, tmp_path: Path) -> None:
    path = _sample("mlp-compile-*.pt.trace.json.gz")
    env = sshd.env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    local = _cli_json(["summary", str(path), "--json"], env)
    remote_spec = f"ssh://{sshd.user}@testbox:{sshd.port}{path}"
    remote = _cli_json(["summary", remote_spec, "--json"], env)
    assert remote["source"] == remote_spec
    where = {str(path), remote_spec}
    assert _without_where(remote, where) == _without_where(local, where)
    text = subprocess.run(MLPTUI + ["summary", f"testbox:{path}"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60).stdout
    assert text.replace(f"testbox:{path}", str(path)) == subprocess.run(
        MLPTUI + ["summary", str(path)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    listing = _cli_json(["summary", f"testbox:{path.parent}/", "--json"], env)
    assert f"testbox:{path}" in listing["traces"]


@pytest.mark.skipif(not (ROOT / "tui" / "mlptui" / "commands" / "diff.py").exists(), reason="mlptui diff not built")
def test_remote_diff_cli_equals_local(sshd: Sshd, tmp_path: Path) -> None:
    a = _sample("mlp-eager-*.pt.trace.json.gz")
    b = _sample("mlp-compile-*.pt.trace.json.gz")
    env = sshd.env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    local = _cli_json(["diff", str(a), str(b), "--json"], env)
    remote = _cli_json(["diff", f"testbox:{a}", f"testbox:{b}", "--json"], env)
    where = {str(a), str(b), f"testbox:{a}", f"testbox:{b}"}
    assert _without_where(remote, where) == _without_where(local, where)
    assert f"testbox:{a}" in str(remote)


def test_perfetto_serves_a_remote_trace(sshd: Sshd, tmp_path: Path) -> None:
    import urllib.request

    path = _sample("linear-compile-*.pt.trace.json.gz")
    env = sshd.env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.Popen(MLPTUI + ["perfetto", f"testbox:{path}", "--port", "0"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:"), proc.stderr.read()
        url = first.split("url=", 1)[1]
        got = urllib.request.urlopen(url, timeout=10)
        assert got.headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
        assert got.read() == path.read_bytes()
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()
