"""End to end as a person works on a GPU box: tmux runs `ssh -t` into the test sshd and starts
`mlptui view` there; the screen is read with capture-pane, keys are typed with send-keys (including
Escape, which must arrive through ssh and tmux), the window is resized, and `q` must end the session
cleanly. A second run checks a 16-colour terminal (TERM=xterm) with NO_COLOR: no 256/true colours
and no hues reach the screen."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sshd_fixture import HOST_ALIAS, Sshd, sshd_fixture  # noqa: F401

pytestmark = [pytest.mark.ssh, pytest.mark.tmux]

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"


def _mlptui_argv() -> list[str]:
    script = Path(sys.executable).parent / "mlptui"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlptui.cli"]


class Tmux:
    """A private tmux server (own socket and config) holding one window of the given size."""

    def __init__(self, folder: Path, term: str) -> None:
        self.socket = folder / "tmux.sock"
        self.conf = folder / "tmux.conf"
        self.conf.write_text(
            f"set -g default-terminal {term}\n"
            "set -g remain-on-exit on\n"     # keep the pane to read how the program ended
            "set -g escape-time 10\n"         # what docs/remote.md recommends for Escape over ssh
            "set -g status off\n"
        )

    def __call__(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-S", str(self.socket), "-f", str(self.conf), *args],
                             capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def screen(self, escapes: bool = False, history: bool = False) -> list[str]:
        extra = (["-e"] if escapes else []) + (["-S", "-100"] if history else [])
        return self("capture-pane", "-p", *extra).split("\n")[:-1]

    def wait_for(self, predicate, what: str, seconds: float = 20) -> list[str]:
        deadline = time.monotonic() + seconds
        lines: list[str] = []
        while time.monotonic() < deadline:
            lines = self.screen()
            if predicate(lines):
                return lines
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen:\n" + "\n".join(lines))

    def settled(self, seconds: float = 10) -> list[str]:
        """The screen once it stopped changing (two captures 0.3 s apart agree)."""
        deadline = time.monotonic() + seconds
        last = self.screen()
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.screen()
            if now == last:
                return now
            last = now
        raise AssertionError("the screen never settled:\n" + "\n".join(last))

    def exit_status(self, seconds: float = 15) -> str:
        """The app's exit status, as the remote shell printed it after the app left the screen,
        once ssh has ended too. (tmux 3.3 sometimes never reaps the ssh, so its own
        #{pane_dead_status} cannot be relied on.)"""
        # The line may have scrolled into the history when the window changed size.
        deadline = time.monotonic() + seconds
        while True:
            lines = self.screen(history=True)
            if any(_EXIT_MARK in line for line in lines):
                break
            assert time.monotonic() < deadline, "the app did not exit; screen:\n" + "\n".join(lines)
            time.sleep(0.1)
        status = next(line for line in lines if _EXIT_MARK in line).split(_EXIT_MARK, 1)[1].split()[0]
        deadline = time.monotonic() + seconds
        while self.pane("#{pane_dead}") != "1":
            assert time.monotonic() < deadline, "ssh did not end after the app exited"
            time.sleep(0.1)
        return status

    def pane(self, fmt: str) -> str:
        return self("display-message", "-p", fmt).strip()

    def kill(self) -> None:
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def sample() -> Path:
    if not (ROOT / "tui" / "mlptui" / "app.py").exists():
        pytest.skip("the explorer (tui/mlptui/app.py) is not built yet")
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux")
    found = sorted(SAMPLES.glob("mlp-eager-*.pt.trace.json.gz"))
    if not found:
        pytest.skip("no mlp-eager sample trace")
    return found[0]


_EXIT_MARK = "mlptui-exit-status="


def _start(tmp_path: Path, sshd: Sshd, term: str, remote: list[str], size: tuple[int, int]) -> Tmux:
    tmux = Tmux(tmp_path, term)
    line = f"{shlex.join(remote)}; echo {_EXIT_MARK}$?"   # run by the remote login shell
    # A plain interactive login of its own (not the tests' shared connection), as a person's first ssh.
    ssh = ["ssh", "-t", "-F", str(sshd.config), "-o", "ControlMaster=no", "-o", "ControlPath=none",
           "-p", str(sshd.port), f"{sshd.user}@127.0.0.1", line]
    tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), shlex.join(ssh))
    return tmux


def _header(lines: list[str]) -> bool:
    return bool(lines) and "mlp" in lines[0] and "eager" in lines[0] and any("ProfilerStep#" in ln for ln in lines)


def test_view_over_ssh_in_tmux_keys_and_resize(sshd: Sshd, sample: Path, tmp_path: Path) -> None:
    tmux = _start(tmp_path, sshd, "screen-256color", [*_mlptui_argv(), "view", str(sample)], (100, 30))
    try:
        tmux.wait_for(_header, "the explorer's first screen")
        first = tmux.settled()
        assert len(first) == 30 and all(len(line) <= 100 for line in first)
        assert any("GPU kernels" in line for line in first)
        # A cursor key moves the selection: the screen changes.
        tmux("send-keys", "j")
        tmux.wait_for(lambda s: s != first, "the cursor to move")
        moved = tmux.settled()
        # `/` opens the search prompt and Escape closes it again: Escape arrived intact.
        tmux("send-keys", "/")
        tmux.wait_for(lambda s: any("search" in line.lower() and line not in moved for line in s),
                      "the search prompt")
        tmux("send-keys", "Escape")
        tmux.wait_for(lambda s: s == moved, "Escape to close the search prompt")
        # Smaller window: the app lays itself out again for 80x24 (not a crop of the old screen).
        tmux("resize-window", "-x", "80", "-y", "24")
        assert tmux.pane("#{pane_width}x#{pane_height}") == "80x24"
        small = tmux.wait_for(lambda s: _header(s) and s != [ln[:80] for ln in moved[:24]] and s[-1].strip(),
                              "the app to redraw at 80x24")
        assert len(small) == 24 and all(len(line) <= 80 for line in small)
        # Larger again: the footer follows the new bottom row.
        tmux("resize-window", "-x", "120", "-y", "36")
        big = tmux.wait_for(lambda s: len(s) == 36 and _header(s) and s[-1].strip() and len(s[0]) > 80,
                            "the app to redraw at 120x36")
        assert big[-1].strip() == tmux.screen()[-1].strip()
        tmux("send-keys", "q")
        assert tmux.exit_status() == "0"
    finally:
        tmux.kill()


_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_HUES = set(range(31, 37)) | set(range(41, 47)) | set(range(91, 97)) | set(range(101, 107))


def _colours(lines: list[str]) -> tuple[set[int], int]:
    """(plain SGR colour codes used, count of 256-colour/true-colour codes)."""
    codes: set[int] = set()
    extended = 0
    for line in lines:
        for params in _SGR.findall(line):
            parts = [int(p) for p in re.split("[;:]", params) if p.isdigit()]
            i = 0
            while i < len(parts):
                if parts[i] in (38, 48, 58):
                    extended += 1
                    i += 3 if parts[i + 1:i + 2] == [5] else 5
                    continue
                codes.add(parts[i])
                i += 1
    return codes, extended


def test_sixteen_colour_terminal_and_no_color(sshd: Sshd, sample: Path, tmp_path: Path) -> None:
    remote = ["env", "NO_COLOR=1", *_mlptui_argv(), "view", str(sample)]
    tmux = _start(tmp_path, sshd, "xterm", remote, (100, 30))
    try:
        tmux.wait_for(_header, "the explorer's first screen")
        codes, extended = _colours(tmux.screen(escapes=True))
        assert extended == 0, "256-colour or true-colour codes on a 16-colour terminal"
        assert not codes & _HUES, f"colours despite NO_COLOR: {sorted(codes & _HUES)}"
        tmux("send-keys", "q")
        assert tmux.exit_status() == "0"
    finally:
        tmux.kill()


def _start_local(tmp_path: Path, sshd: Sshd, args: list[str], size: tuple[int, int] = (110, 30)) -> Tmux:
    """The laptop side: the app runs here in tmux and reads the box's traces through ssh."""
    tmux = Tmux(tmp_path, "xterm-256color")
    env = ["env", f"MLPTUI_SSH={sshd.ssh_cmd}", f"XDG_CACHE_HOME={tmp_path / 'cache'}"]
    tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]),
         f"{shlex.join([*env, *_mlptui_argv(), 'view', *args])}; echo {_EXIT_MARK}$?")
    return tmux


def test_laptop_view_of_a_remote_folder_and_a_remote_diff(sshd: Sshd, sample: Path, tmp_path: Path) -> None:
    folder = f"{HOST_ALIAS}:{sample.parent}/"
    (tmp_path / "folder").mkdir()
    tmux = _start_local(tmp_path / "folder", sshd, [folder])
    try:
        name = " " + sample.name[:16]    # the row of that file (names are cut to the column's width)
        listed = tmux.wait_for(lambda s: any(name in line for line in s), "the remote folder's list")
        assert folder in listed[0]
        row = next(i for i, line in enumerate(listed) if name in line)
        first_row = next(i for i, line in enumerate(listed) if line.startswith(">"))
        tmux("send-keys", *(["j"] * (row - first_row)), "Enter")
        tmux.wait_for(_header, "the chosen remote trace to open")
        tmux("send-keys", "Escape")
        tmux.wait_for(lambda s: folder in s[0], "Escape to go back to the list", 10)
        tmux("send-keys", "q")
        assert tmux.exit_status() == "0"
    finally:
        tmux.kill()
    compile_ = sorted(sample.parent.glob("mlp-compile-*.pt.trace.json.gz"))
    if not compile_:
        pytest.skip("no mlp-compile sample trace")
    (tmp_path / "diff").mkdir()
    tmux = _start_local(tmp_path / "diff", sshd, [f"{HOST_ALIAS}:{sample}", f"{HOST_ALIAS}:{compile_[0]}"])
    try:
        screen = tmux.wait_for(lambda s: any("A mlp" in ln for ln in s) and any("B mlp" in ln for ln in s),
                               "the diff of two remote traces")
        assert any("eager" in ln for ln in screen) and any("compile" in ln for ln in screen)
        tmux("send-keys", "q")
        assert tmux.exit_status() == "0"
    finally:
        tmux.kill()
