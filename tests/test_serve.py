"""`mlptui serve`: a real textual-serve process on 127.0.0.1; its page, and the guards that keep other
web pages, other host names and anyone without this run's token from driving the app; the app starts in
a tab when one connects, and no more tabs than the cap run at once."""

from __future__ import annotations

import asyncio
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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


def _printed_token(proc: subprocess.Popen, port: int) -> str:
    """The token of the URL `serve` printed on its first line."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    url = next(w for w in line.split() if w.startswith("http://"))
    assert url.startswith(f"http://127.0.0.1:{port}/?token=")
    return parse_qs(urlsplit(url).query)["token"][0]


def _serve(*extra: str):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", "serve", "--port", str(port), *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        token = _printed_token(proc, port)
        yield port, proc, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def served():
    yield from _serve()


@pytest.fixture
def served_one_session():
    yield from _serve("--max-sessions", "1")


async def _ws_status(port: int, origin: str | None, host: str | None = None, token: str | None = None,
                     cookie: str | None = None) -> tuple[int, bytes]:
    import aiohttp

    headers = {k: v for k, v in {"Origin": origin, "Host": host, "Cookie": cookie}.items() if v}
    query = f"&token={token}" if token else ""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(f"http://127.0.0.1:{port}/ws?width=100&height=30{query}",
                                          headers=headers, timeout=aiohttp.ClientWSTimeout(ws_close=5)) as ws:
                data = b""
                if (ROOT / "tui" / "mlptui" / "app.py").exists():
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


def test_page_and_guards(served: tuple[int, subprocess.Popen, str]) -> None:
    import urllib.error
    import urllib.request

    port, proc, token = served
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={token}", timeout=10).read().decode()
    assert f"ws://127.0.0.1:{port}/ws" in page
    req = urllib.request.Request(f"http://127.0.0.1:{port}/?token={token}",
                                 headers={"Host": f"rebound.example:{port}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 403
    own = f"http://127.0.0.1:{port}"
    assert asyncio.run(_ws_status(port, "https://evil.example", token=token))[0] == 403
    assert asyncio.run(_ws_status(port, None, token=token))[0] == 403
    assert asyncio.run(_ws_status(port, own, host=f"evil.example:{port}", token=token))[0] == 403
    status, screen = asyncio.run(_ws_status(port, own, token=token))
    assert status == 101
    if (ROOT / "tui" / "mlptui" / "app.py").exists():
        assert len(screen) >= 2000, screen[:200]


def test_listens_on_loopback_only(served: tuple[int, subprocess.Popen, str]) -> None:
    port, _, _ = served
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("ss is not available")
    locals_ = [line.split()[3] for line in out.stdout.splitlines() if line.strip()]
    assert locals_ == [f"127.0.0.1:{port}"]


def test_app_command_quotes_every_word() -> None:
    cmd = app_command(["gpu:~/t/a b.json", "$(touch x)", "-weird"])
    words = shlex.split(cmd)
    assert words[:4] == ["exec", sys.executable, "-m", "mlptui.cli"]      # the app replaces the shell
    assert words[4:] == ["view", "--", "gpu:~/t/a b.json", "$(touch x)", "-weird"]
    assert shlex.split(app_command([])) == ["exec", sys.executable, "-m", "mlptui.cli"]


def test_origins() -> None:
    assert allowed_origins("127.0.0.1", 8000, None) == {
        "http://127.0.0.1:8000", "http://localhost:8000"}
    assert "http://127.0.0.1:9000" in allowed_origins("127.0.0.1", 8000, "http://127.0.0.1:9000/")
    assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("0.0.0.0")


def test_static_route_is_guarded_and_lists_no_folders(served: tuple[int, subprocess.Popen, str]) -> None:
    import urllib.error
    import urllib.request

    port, _, token = served
    base = f"http://127.0.0.1:{port}"
    cookie = f"mlptui_token_{port}={token}"
    assert urllib.request.urlopen(urllib.request.Request(f"{base}/static/css/xterm.css",
                                                         headers={"Cookie": cookie}), timeout=10).status == 200

    def status(path: str, **headers: str) -> int:
        try:
            return urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=10).status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert status("/static/", Cookie=cookie) == 404 and status("/static/css/", Cookie=cookie) == 404
    assert status("/static", Cookie=cookie) == 404
    assert status("/static/css/xterm.css", Host=f"rebound.example:{port}", Cookie=cookie) == 403
    assert status("/static/css/xterm.css", Origin="https://evil.example", Cookie=cookie) == 403
    assert status("/download/x", Host=f"rebound.example:{port}", Cookie=cookie) == 403


def test_no_token_no_app(served: tuple[int, subprocess.Popen, str]) -> None:
    """Without this run's token every route is refused and no app process starts; the page opened with it
    sets the cookie its websocket then sends."""
    import urllib.error
    import urllib.request

    port, proc, token = served
    base = f"http://127.0.0.1:{port}"

    def status(path: str, **headers: str) -> int:
        try:
            return urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=10).status
        except urllib.error.HTTPError as exc:
            return exc.code

    for path in ("/", "/?token=", f"/?token={token[:-1]}", "/static/css/xterm.css", "/download/x"):
        assert status(path) == 403, path
    assert status("/", Cookie=f"mlptui_token_{port + 1}={token}") == 403          # another server's cookie
    own = f"http://127.0.0.1:{port}"
    assert asyncio.run(_ws_status(port, own)) == (403, b"")
    assert asyncio.run(_ws_status(port, own, token="wrong")) == (403, b"")
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert children == []                                                          # no app was started
    with urllib.request.urlopen(f"{base}/?token={token}", timeout=10) as page:
        set_cookie = page.headers["Set-Cookie"]
    assert f"mlptui_token_{port}={token}" in set_cookie and "HttpOnly" in set_cookie
    assert "SameSite=Strict" in set_cookie
    status_, _ = asyncio.run(_ws_status(port, own, cookie=f"mlptui_token_{port}={token}"))
    assert status_ == 101


def test_sessions_are_capped(served_one_session: tuple[int, subprocess.Popen, str]) -> None:
    import aiohttp

    port, _, token = served_one_session
    own = f"http://127.0.0.1:{port}"

    async def two() -> tuple[int, int]:
        async with aiohttp.ClientSession() as session:
            url = f"{own}/ws?width=80&height=24&token={token}"
            async with session.ws_connect(url, headers={"Origin": own}):
                try:
                    async with session.ws_connect(url, headers={"Origin": own}):
                        second = 101
                except aiohttp.WSServerHandshakeError as exc:
                    second = exc.status
            third, deadline = 0, time.monotonic() + 15
            while third != 101 and time.monotonic() < deadline:     # the first tab closed: room again
                await asyncio.sleep(0.2)
                try:
                    async with session.ws_connect(url, headers={"Origin": own}):
                        third = 101
                except aiohttp.WSServerHandshakeError as exc:
                    third = exc.status
            return second, third

    assert asyncio.run(two()) == (503, 101)
