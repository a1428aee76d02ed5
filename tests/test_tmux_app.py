"""As a person would: tmux runs `mlptui view <sample>` in a 100x30 window; keys are typed with
send-keys and the screen is read with capture-pane: move, search, change step, raw names, quit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import find_sample

pytestmark = [pytest.mark.tmux, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")]


class Tmux:
    """One window of a private tmux server (own socket, no user config)."""

    def __init__(self, folder: Path) -> None:
        conf = folder / "tmux.conf"
        conf.write_text("set -g default-size 100x30\nset -g status off\nset -g escape-time 10\n")
        self.base = ["tmux", "-S", str(folder / "tmux.sock"), "-f", str(conf)]

    def __call__(self, *args: str) -> str:
        done = subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def alive(self) -> bool:
        return subprocess.run([*self.base, "has-session"], capture_output=True).returncode == 0

    def screen(self) -> str:
        return self("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        for key in keys:
            self("send-keys", key)
            time.sleep(0.15)

    def wait_for(self, text: str, seconds: float = 20) -> str:
        deadline = time.monotonic() + seconds
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never showed; the screen was:\n{screen}")

    def cursor_line(self, marker: str, seconds: float = 5) -> str:
        """The screen line holding a list cursor `>` and `marker` (waits for it to show)."""
        deadline = time.monotonic() + seconds
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            found = [line for line in screen.splitlines() if ">" in line and marker in line]
            if found:
                return found[0]
            time.sleep(0.1)
        raise AssertionError(f"no cursor on {marker!r}; the screen was:\n{screen}")


def test_view_a_sample_in_tmux_move_search_step_and_quit(tmp_path) -> None:
    mlptui = Path(sys.executable).parent / "mlptui"
    command = f"{mlptui} view {find_sample('mlp', 'eager')}" if mlptui.exists() else \
        f"{sys.executable} -m mlptui.cli view {find_sample('mlp', 'eager')}"
    tmux = Tmux(tmp_path)
    tmux("new-session", "-d", "-x", "100", "-y", "30", "-e", "TERM=xterm-256color", command)
    try:
        screen = tmux.wait_for("GPU0 s7")                    # the last lane of the timeline
        assert "2 CPU dispatch" in screen and "3 GPU kernels" in screen and "occupancy queries: none" in screen
        tmux.cursor_line("aten::linear")                     # the cursor starts on the first op
        tmux.keys("j")
        tmux.wait_for("no GPU")
        tmux.cursor_line("aten::t ")
        tmux.keys("/", "g", "e", "l", "u", "Enter")
        tmux.wait_for("match 1 of")
        tmux.cursor_line("aten::gelu")
        tmux.keys("]")                                       # wraps to "all steps"
        tmux.wait_for("scope: all steps")
        tmux.keys("3", "r")
        screen = tmux.wait_for("nvjet_sm90_tst_")
        tmux.keys("q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and tmux.alive():
            time.sleep(0.1)
        quit_cleanly = not tmux.alive()     # the session ends with the program in its only pane
    finally:
        subprocess.run([*tmux.base, "kill-server"], capture_output=True)
    assert quit_cleanly, "mlptui did not quit on q"
