"""As a person would: open two traces in a real terminal (tmux), walk the differences with n/p, quit."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest
from diff_support import ROOT, sample

pytestmark = pytest.mark.tmux


def _command(a: str, b: str) -> str:
    if (ROOT / "tui" / "app.py").exists() and (ROOT / "tui" / "commands" / "view.py").exists():
        args = [sys.executable, "-m", "tui.cli", "view", a, b]
    else:
        args = [sys.executable, str(ROOT / "tests" / "diff_harness.py"), a, b]
    return "cd " + shlex.quote(str(ROOT)) + " && " + shlex.join(args)


class Tmux:
    def __init__(self) -> None:
        self.socket = f"mlptui-diff-{os.getpid()}"
        self.name = "diff"

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=10).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def wait_for(self, predicate, timeout: float = 20.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        raise AssertionError("screen never matched; last screen:\n" + text)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", self.name],
                              capture_output=True).returncode == 0


def _cursor_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.startswith(">")), "")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_walk_differences_in_tmux() -> None:
    a, b = str(sample("mlp", "eager")), str(sample("mlp", "reduce-overhead"))
    t = Tmux()
    env = "TERM=xterm-256color NO_COLOR=1 "
    t.run("new-session", "-d", "-s", t.name, "-x", "100", "-y", "30", env + _command(a, b))
    try:
        text = t.wait_for(lambda s: "speed-up B vs A" in s and _cursor_line(s))
        assert "mlp/eager" in text and "mlp/reduce-overhead" in text
        # The first row is already a difference: the CUDA-graph input copy, only on B.
        assert _cursor_line(text).startswith(">+")
        t.run("send-keys", "-t", t.name, "n")
        text = t.wait_for(lambda s: _cursor_line(s).startswith(">⊕"))
        assert "gelu" in _cursor_line(text) and "Inductor" in _cursor_line(text)
        t.run("send-keys", "-t", t.name, "n")       # no further difference: stays put, says so
        text = t.wait_for(lambda s: "no further difference below" in s)
        assert _cursor_line(text).startswith(">⊕")
        t.run("send-keys", "-t", t.name, "p")
        t.wait_for(lambda s: _cursor_line(s).startswith(">+"))
        t.run("send-keys", "-t", t.name, "q")
        end = time.monotonic() + 10
        while t.alive() and time.monotonic() < end:
            time.sleep(0.1)
        assert not t.alive()
    finally:
        t.run("kill-server")
