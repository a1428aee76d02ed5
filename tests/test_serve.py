"""`mlptui serve`: a real textual-serve process on 127.0.0.1; its page, and the guards that keep other
web pages and other host names from driving the app; the app starts in a tab when one connects."""

from __future__ import annotations

import asyncio
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlptui.commands.serve import allowed_origins, app_command, is_loopback

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("serve did not start listening")


@pytest.fixture
def served():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", "serve", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        yield port, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _ws_status(port: int, origin: str | None, host: str | None = None) -> tuple[int, bytes]:
    import aiohttp

    headers = {k: v for k, v in {"Origin": origin, "Host": host}.items() if v}
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(f"http://127.0.0.1:{port}/ws?width=100&height=30",
                                          headers=headers, timeout=aiohttp.ClientWSTimeout(ws_close=5)) as ws:
                data = b""
                if (ROOT / "tui" / "app.py").exists():
                    # The tab's app process renders; its screen arrives as binary packets.
                    deadline = time.monotonic() + 20
                    while time.monotonic() < deadline and len(data) < 2000:
                        msg = await ws.receive(timeout=deadline - time.monotonic())
                        if msg.type == aiohttp.WSMsgType.BINARY:
                            data += msg.data
                        elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                            break
                return 101, data
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status, b""


def test_page_and_guards(served: tuple[int, subprocess.Popen]) -> None:
    import urllib.error
    import urllib.request

    port, proc = served
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
    assert f"ws://127.0.0.1:{port}/ws" in page
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": f"rebound.example:{port}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 403
    assert asyncio.run(_ws_status(port, "https://evil.example"))[0] == 403
    assert asyncio.run(_ws_status(port, None))[0] == 403
    assert asyncio.run(_ws_status(port, f"http://127.0.0.1:{port}", host=f"evil.example:{port}"))[0] == 403
    status, screen = asyncio.run(_ws_status(port, f"http://127.0.0.1:{port}"))
    assert status == 101
    if (ROOT / "tui" / "app.py").exists():
        assert len(screen) >= 2000, screen[:200]


def test_listens_on_loopback_only(served: tuple[int, subprocess.Popen]) -> None:
    port, _ = served
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("ss is not available")
    locals_ = [line.split()[3] for line in out.stdout.splitlines() if line.strip()]
    assert locals_ == [f"127.0.0.1:{port}"]


def test_app_command_quotes_every_word() -> None:
    cmd = app_command(["gpu:~/t/a b.json", "$(touch x)", "-weird"])
    words = shlex.split(cmd)
    assert words[:3] == [sys.executable, "-m", "mlptui.cli"]
    assert words[3:] == ["view", "--", "gpu:~/t/a b.json", "$(touch x)", "-weird"]
    assert shlex.split(app_command([])) == [sys.executable, "-m", "mlptui.cli"]


def test_origins() -> None:
    assert allowed_origins("127.0.0.1", 8000, None) == {
        "http://127.0.0.1:8000", "http://localhost:8000"}
    assert "http://127.0.0.1:9000" in allowed_origins("127.0.0.1", 8000, "http://127.0.0.1:9000/")
    assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("0.0.0.0")


def test_static_route_is_guarded_and_lists_no_folders(served: tuple[int, subprocess.Popen]) -> None:
    import urllib.error
    import urllib.request

    port, _ = served
    base = f"http://127.0.0.1:{port}"
    assert urllib.request.urlopen(f"{base}/static/css/xterm.css", timeout=10).status == 200

    def status(path: str, **headers: str) -> int:
        try:
            return urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=10).status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert status("/static/") == 404 and status("/static/css/") == 404 and status("/static") == 404
    assert status("/static/css/xterm.css", Host=f"rebound.example:{port}") == 403
    assert status("/static/css/xterm.css", Origin="https://evil.example") == 403
    assert status("/download/x", Host=f"rebound.example:{port}") == 403
