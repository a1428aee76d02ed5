"""`mlptui perfetto` serves on 127.0.0.1:9001, the one plain-HTTP origin ui.perfetto.dev's
Content-Security-Policy lets it fetch from; another port says so in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import find_sample

from mlptui.commands.perfetto import DEFAULT_PORT, port_note


def test_the_default_port_is_the_one_perfetto_fetches_from() -> None:
    assert DEFAULT_PORT == 9001 and port_note(9001) is None
    note = port_note(8123)
    assert note is not None and "\n" not in note
    assert "only from 127.0.0.1:9001" in note and "ssh -L 9001:127.0.0.1:8123" in note


def test_another_port_prints_the_note_once(tmp_path: Path) -> None:
    trace = find_sample("linear", "eager")
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", "perfetto", str(trace), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline()
        port = int(url.split("url=http://127.0.0.1:", 1)[1].split("/", 1)[0])
        line = proc.stderr.readline().strip()
        assert line == port_note(port)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
