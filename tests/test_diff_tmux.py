"""As a person would: open two traces in a real terminal (tmux), walk the differences with n/p, quit."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest
from diff_support import ROOT, load, sample

from mlptui.render.diff_text import MARKERS
from mlptui.trace.diff.trace_diff import SAME, diff_traces

pytestmark = pytest.mark.tmux


def _command(a: str, b: str) -> str:
    if (ROOT / "tui" / "mlptui" / "app.py").exists() and (ROOT / "tui" / "mlptui" / "commands" / "view.py").exists():
        args = [sys.executable, "-m", "mlptui.cli", "view", a, b]
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

    def settled(self, quiet: float = 0.4, timeout: float = 20.0) -> str:
        """The screen once it has stopped changing for `quiet` seconds (a repaint after the layout
        settles, e.g. when a scrollbar appears, must not be taken for the answer to the next key)."""
        end = time.monotonic() + timeout
        last, since = self.screen(), time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.1)
            now = self.screen()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return now
        return last

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", self.name],
                              capture_output=True).returncode == 0


def _cursor_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.startswith(">")), "")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_walk_differences_in_tmux() -> None:
    a, b = sample("mlp", "eager"), sample("mlp", "reduce-overhead")
    d = diff_traces(load(a), load(b))
    # What a person should meet, in order: the marker of every row that is not `same`.
    expected = [MARKERS[r.status] for r in d.rows if r.status != SAME]
    assert len(expected) >= 2 and "⊕" in expected     # the CUDA-graph copy and the fused gelu·mul at least
    t = Tmux()
    env = "TERM=xterm-256color NO_COLOR=1 "
    t.run("new-session", "-d", "-s", t.name, "-x", "100", "-y", "30", env + _command(str(a), str(b)))
    try:
        t.wait_for(lambda s: " │ B vs A: " in s and _cursor_line(s))
        text = t.settled()
        assert "mlp/eager" in text and "mlp/reduce-overhead" in text
        first_is_diff = d.rows[0].status != SAME
        seen = [_cursor_line(text)[1]] if first_is_diff else []
        for _ in range(len(expected) - len(seen)):
            before = _cursor_line(t.settled())
            t.run("send-keys", "-t", t.name, "n")
            # a screen caught mid-repaint has no cursor line at all: wait for the moved one
            text = t.wait_for(lambda s, before=before: _cursor_line(s) not in ("", before))
            seen.append(_cursor_line(text)[1])
        assert seen == expected
        fused = next(line for line in text.splitlines() if line[1:2] == "⊕")
        assert "gelu" in fused and "Inductor" in fused
        t.run("send-keys", "-t", t.name, "n")       # no further difference: stays put, says so
        text = t.wait_for(lambda s: "no further difference below" in s and _cursor_line(s))
        assert _cursor_line(text)[1] == expected[-1]
        t.run("send-keys", "-t", t.name, "p")
        t.wait_for(lambda s: _cursor_line(s)[1:2] == expected[-2])
        t.run("send-keys", "-t", t.name, "q")
        end = time.monotonic() + 10
        while t.alive() and time.monotonic() < end:
            time.sleep(0.1)
        assert not t.alive()
    finally:
        t.run("kill-server")
