"""Hostile names through a real sshd: remote file names with spaces, quotes, `$()`, backticks,
newlines, `;` and a leading `-` are listed and opened as plain names; hostile paths and hosts are
answered with one line or refused. Every case would create a marker file if any part of it ran as a
command; the test proves none exists afterwards (in the remote home, the trace folder, the local cwd)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sshd_fixture import Sshd, ssh_env_fixture, sshd_fixture  # noqa: F401

from mlptui.base.errors import MlptuiError
from mlptui.sources import dispatch as sources

pytestmark = pytest.mark.ssh

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
MARK = f"pwned{os.getpid()}"

HOSTILE_NAMES = [
    "two words.pt.trace.json.gz",
    "it's \"quoted\".pt.trace.json.gz",
    f"$(touch {MARK}-a).pt.trace.json.gz",
    f"`touch {MARK}-b`.pt.trace.json.gz",
    f"semi;touch {MARK}-c;.pt.trace.json.gz",
    f"new\nline;touch {MARK}-d.pt.trace.json.gz",
    "-rf --help.pt.trace.json.gz",
    f"glob*?[x] && touch {MARK}-e | cat.pt.trace.json.gz",
    "~tilde.pt.trace.json.gz",
    "ünïcode ✓.pt.trace.json.gz",
]


def _markers(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.is_dir() for p in folder.iterdir() if p.name.startswith(MARK)]


@pytest.fixture
def hostile_folder(ssh_env: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    src = sorted(SAMPLES.glob("linear-eager-*bf16*.pt.trace.json.gz"))
    if not src:
        pytest.skip("no linear-eager sample trace")
    folder = tmp_path / "remote traces"
    folder.mkdir()
    for name in HOSTILE_NAMES:
        shutil.copy(src[0], folder / name)
    monkeypatch.chdir(tmp_path)
    return folder


def test_hostile_names_list_and_open_as_plain_names(ssh_env: Sshd, hostile_folder: Path, tmp_path: Path) -> None:
    listed = sources.list_traces(f"testbox:{hostile_folder}/")
    assert listed == sorted(f"testbox:{hostile_folder}/{name}" for name in HOSTILE_NAMES)
    reference = sources.open_trace(str(hostile_folder / HOSTILE_NAMES[0]))
    for spec in listed:
        trace = sources.open_trace(spec)
        assert trace.source == spec
        assert len(trace.ops) == len(reference.ops) and len(trace.gpu) == len(reference.gpu)
    # The same names through ssh:// URLs.
    for name in HOSTILE_NAMES[:4]:
        assert sources.open_trace(f"ssh://testbox{hostile_folder}/{name}").gpu
    assert _markers(hostile_folder, tmp_path, ssh_env.home) == []


@pytest.mark.parametrize(
    "path",
    [
        "{d}/x$(touch {m})",
        "{d}/x;touch {m}",
        "{d}/x`touch {m}`",
        "{d}/x' ; touch {m} ; '",
        "{d}/x\" ; touch {m} ; \"",
        "{d}/x\ntouch {m}\n",
        "{d}/x && touch {m}",
        "{d}/x | touch {m}",
        "$(touch {m})",
        "~$(touch {m})/x",
        "~root;touch {m}/x",
        "~/$(touch {m})",
        "-exec touch {m} ;",
    ],
)
def test_hostile_paths_run_nothing(ssh_env: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   path: str) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / MARK
    spec = "testbox:" + path.format(d=tmp_path, m=marker)
    for call in (sources.open_trace, sources.list_traces):
        with pytest.raises(MlptuiError) as err:
            call(spec)
        assert "no such file or folder" in str(err.value)
    assert not marker.exists()
    assert _markers(tmp_path, ssh_env.home) == []


@pytest.mark.parametrize(
    "spec",
    [
        "-oProxyCommand=touch {m}:x",
        "-oProxyCommand=sh -c 'touch {m}':x",
        "ssh://-oProxyCommand=touch {m}/x",
        "ssh://-oProxyCommand=touch%20{m}@testbox/x",
        "-F{cfg}:x",
        "testbox -oProxyCommand=touch {m}:x",
        "-lroot@testbox:x",
    ],
)
def test_option_like_hosts_are_refused_and_run_nothing(ssh_env: Sshd, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.chdir(tmp_path)
    spec = spec.format(m=MARK, cfg=ssh_env.config)
    with pytest.raises(MlptuiError) as err:
        sources.open_trace(spec)
    message = str(err.value)
    assert "\n" not in message
    assert "refusing" in message or "no such file" in message   # refused, or read as a local file name
    assert _markers(tmp_path, ssh_env.home) == []
