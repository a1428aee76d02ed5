"""A real OpenSSH server on 127.0.0.1 for the tests, with throwaway keys in a temp folder.

`sshd` (session fixture) starts /usr/sbin/sshd on a free high port with its own host key, an
authorized user key and an sshd_config that touches nothing global (PidFile, keys and
AuthorizedKeysFile all in the temp folder, ListenAddress 127.0.0.1 only). Clients use the written
ssh config via `ssh -F <cfg>` (and `MLPTUI_SSH`), so ~/.ssh is never read or written. Tests skip
with the reason when sshd cannot start (not installed, no ssh-keygen, ...). Import the fixtures
into a test module with `from sshd_fixture import ssh_env_fixture, sshd_fixture  # noqa: F401`
(they register as `sshd` and `ssh_env`).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = os.environ.get("MLPTUI_TEST_SSHD", "/usr/sbin/sshd")
HOST_ALIAS = "testbox"  # the name tests use in specs: testbox:/path


@dataclass(frozen=True)
class Sshd:
    port: int
    user: str
    home: Path           # the login user's home (where `~` points on the "remote" side)
    config: Path         # ssh client config: Host testbox -> 127.0.0.1:port with our key
    key: Path
    dir: Path
    control: Path        # folder of the shared-connection socket

    @property
    def ssh_cmd(self) -> str:
        """The MLPTUI_SSH value that points ssh at our config and nothing else."""
        return f"ssh -F {self.config}"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, MLPTUI_SSH=self.ssh_cmd, MLPTUI_SSH_TIMEOUT="10")
        env.update(extra)
        return env

    def run(self, command: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        """Run `command` on the test host through plain ssh (used to check the remote side)."""
        return subprocess.run(["ssh", "-F", str(self.config), HOST_ALIAS, command],
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                if s.recv(4).startswith(b"SSH-"):
                    return True
        except OSError:
            time.sleep(0.05)
    return False


def _start(tmp: Path) -> tuple[Sshd, subprocess.Popen]:
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
        pytest.skip(f"needs OpenSSH ({SSHD}, ssh, ssh-keygen): install openssh-server openssh-client")
    tmp.chmod(0o700)
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        # sshd running as root insists on its privilege-separation folder (the service unit makes it).
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    host_key, user_key = tmp / "host_ed25519", tmp / "user_ed25519"
    for key in (host_key, user_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True,
                       stdin=subprocess.DEVNULL)
    (tmp / "authorized_keys").write_text(Path(f"{user_key}.pub").read_text())
    (tmp / "authorized_keys").chmod(0o600)
    port = _free_port()
    user = getpass.getuser()
    (tmp / "sshd_config").write_text(
        "\n".join([
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"PidFile {tmp / 'sshd.pid'}",
            f"AuthorizedKeysFile {tmp / 'authorized_keys'}",
            "StrictModes no",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            f"AllowUsers {user}",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "PrintMotd no",
            "PrintLastLog no",
            "AcceptEnv LANG LC_* TERM COLORTERM NO_COLOR ESCDELAY",
            "Subsystem sftp internal-sftp",
            "LogLevel ERROR",
            "",
        ])
    )
    (tmp / "known_hosts").write_text(f"[127.0.0.1]:{port} {Path(f'{host_key}.pub').read_text()}")
    config = tmp / "ssh_config"
    control = tempfile.mkdtemp(prefix="mlptui-cm-")
    config.write_text(
        "\n".join([
            f"Host {HOST_ALIAS} 127.0.0.1",
            "  HostName 127.0.0.1",
            f"  Port {port}",
            f"  User {user}",
            f"  IdentityFile {user_key}",
            "  IdentitiesOnly yes",
            "  IdentityAgent none",
            f"  UserKnownHostsFile {tmp / 'known_hosts'}",
            "  StrictHostKeyChecking yes",
            "  GlobalKnownHostsFile /dev/null",
            "  LogLevel ERROR",
            # One TCP connection shared by all the tests' ssh calls, as many users configure it;
            # the socket lives in a short folder (unix socket paths are limited to ~100 bytes).
            "  ControlMaster auto",
            f"  ControlPath {control}/%C",
            "  ControlPersist 60",
            "",
        ])
    )
    # sshd wants an absolute path; -D keeps it in the foreground (our child), -e logs to stderr.
    log = open(tmp / "sshd.log", "wb")  # noqa: SIM115 - closed at teardown with the process
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(tmp / "sshd_config")], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if not _wait_for_port(port, proc, 10):
        shutil.rmtree(control, ignore_errors=True)
        proc.kill()
        proc.wait()
        log.close()
        pytest.skip(f"sshd did not start: {(tmp / 'sshd.log').read_text(errors='replace')[-300:]!r}")
    home = Path(os.path.expanduser("~"))
    server = Sshd(port=port, user=user, home=home, config=config, key=user_key, dir=tmp, control=Path(control))
    probe = server.run("echo ok")
    if probe.stdout.strip() != "ok":
        proc.kill()
        proc.wait()
        log.close()
        shutil.rmtree(control, ignore_errors=True)
        pytest.skip(f"cannot log in to the test sshd: {probe.stderr.strip()[-300:]!r}")
    return server, proc


@pytest.fixture(scope="session", name="sshd")
def sshd_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server, proc = _start(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        subprocess.run(["ssh", "-F", str(server.config), "-O", "exit", HOST_ALIAS], capture_output=True,
                       timeout=10, stdin=subprocess.DEVNULL)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(server.control, ignore_errors=True)


@pytest.fixture(name="ssh_env")
def ssh_env_fixture(sshd: Sshd, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Sshd:
    """MLPTUI_SSH pointed at the test server and a private cache folder, for in-process calls."""
    monkeypatch.setenv("MLPTUI_SSH", sshd.ssh_cmd)
    monkeypatch.setenv("MLPTUI_SSH_TIMEOUT", "10")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return sshd
